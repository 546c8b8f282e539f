"""Which SuperDB objects a filter may match, from the min/max their metadata keeps.

``super`` records, per integer, float and string vector, the smallest and largest
value (and a const vector is one value): each object is then a zone whose
statistics :func:`planner.filters.zone_truth` judges, as the trailer layout's
segments are.  Bounds are used only where they are sound: a float vector may
hide NaNs (``super`` skips them in min/max; one first in the vector poisons the
bound, which is then unknown), times and durations are left unknown, as is any
path that crosses an optional field, union or array; a union of one type and null
(a nullable column: ``int64|null``) has that type's bounds and the null member's
count as nulls.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from planner.filters import ColumnStats, Expr, FilterError, Truth, bind, columns_of, zone_truth

from ...format.superdb.bsup5 import columnar
from ...format.superdb.meta import Node, ObjectMeta, SuperDBMeta
from ...model.types import PrimitiveType, Type, UnionType, underlying
from ...model.values import unify
from . import columns as C

__all__ = ["file_truth", "object_stats", "object_truths", "typed_filter"]

_PLAIN = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "string", "bytes", "bool"}


def _bound(n: Node, v: Any) -> Any:
    t = underlying(n.type) if n.type is not None else None
    if not isinstance(t, PrimitiveType) or t.name not in _PLAIN:
        return _UNKNOWN
    if isinstance(v, float) and math.isnan(v):
        return _UNKNOWN
    if t.name == "string" and isinstance(v, bytes | bytearray):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return _UNKNOWN
    return v


_UNKNOWN = object()


def _leaf(nodes: tuple[Node, ...], i: int) -> tuple[Any, Any, int, bool] | None:
    """``(lo, hi, nulls, may_nan)`` of a leaf vector's values, None when unknown."""
    n = nodes[i]
    while n.kind in ("named", "fusion"):  # a fusion vector: its supertype's values
        n = nodes[n.kids[0]]
    if n.kind == "union":  # T|null (a nullable column): T's bounds, the nulls counted
        vals = [k for k in n.kids if nodes[k].kind != "null"]
        got = _leaf(nodes, vals[0]) if len(vals) == 1 else None
        if got is None:
            return None
        nulls = sum(nodes[k].count for k in n.kids if nodes[k].kind == "null")
        return got[0], got[1], got[2] + nulls, got[3]
    if n.kind == "dict":
        n = nodes[n.kids[0]]
    if n.kind == "const":
        if n.value is None:
            return None, None, n.count, False
        v = _bound(n, n.value)
        return None if v is _UNKNOWN else (v, v, 0, False)
    if n.kind in ("int", "uint", "float", "bytes", "primitive"):
        if n.min is None or n.max is None:
            return None
        lo, hi = _bound(n, n.min), _bound(n, n.max)
        if lo is _UNKNOWN or hi is _UNKNOWN:
            return None
        return lo, hi, 0, n.kind == "float"
    return None


def object_stats(obj: ObjectMeta, path: tuple[str, ...]) -> ColumnStats | None:
    """What ``obj``'s metadata proves of ``path`` over its rows (None: nothing)."""
    lo = hi = None
    nulls, nan = 0, False
    for top in C.tops_of(obj):
        count = C.node_len_of(obj, top)
        t = C.resolve(obj.nodes, top, path)
        if t is None:  # this super type lacks the path: null in its rows
            nulls += count
            continue
        if t.rest or t.opt is not None:
            return None
        got = _leaf(obj.nodes, t.node)
        if got is None:
            return None
        a, b, n, may_nan = got
        nulls += n
        nan = nan or may_nan
        if a is None:
            continue
        try:
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
        except TypeError:  # bounds of different kinds across super types
            return None
    return ColumnStats(obj.length, nulls, lo, hi, nan)


def type_names(super_types: Sequence[Type], paths: Collection[tuple[str, ...]], version: int
               ) -> dict[tuple[str, ...], str]:
    """Each path's primitive type name over the file's super types (the one a reader's
    filter is bound with: the union of its types there, v23's ``none`` as null); paths
    of other types are left out."""
    out: dict[tuple[str, ...], str] = {}
    for p in paths:
        ts = [t for st in super_types if (t := C.type_at(st, p)) is not None]
        if not ts:
            continue
        t = unify(ts)
        if version >= 23:
            t = columnar(t)
        if isinstance(t, UnionType):  # T|null: T's (its values are T's, or null)
            rest = [m for m in t.types if not (isinstance(m, PrimitiveType)
                                               and m.name == "null")]
            t = rest[0] if len(rest) == 1 else t
        if isinstance(t, PrimitiveType):
            out[p] = t.name
    return out


def typed_filter(meta: SuperDBMeta, expr: Expr,
                 unknown: Collection[tuple[str, ...]] = ()) -> Expr | None:
    """``expr`` with its literals typed for the file's columns, as its reader binds it;
    None when it cannot be (the scan reports why; nothing is proved)."""
    paths = [p for p in dict.fromkeys(columns_of(expr)) if p not in unknown]
    try:
        return bind(expr, type_names(meta.super_types, paths, meta.version))
    except FilterError:
        return None


def object_truths(objects: Sequence[ObjectMeta], typed: Expr) -> list[Truth]:
    """What each object's min/max prove of the typed filter (``planner.filters.zone_truth``,
    the rule our layout's zones and files are judged by)."""
    return [zone_truth(typed, lambda p, o=o: object_stats(o, p)) for o in objects]


def file_truth(meta: SuperDBMeta, expr: Expr,
               unknown: Collection[tuple[str, ...]] = ()) -> Truth:
    """What the objects' min/max prove of ``expr`` over the whole file, with no request:
    FALSE when every object is ruled out (a file of no objects too), TRUE when it holds
    on every row of every object.  Paths in ``unknown`` (a dataset's partition columns)
    get no statistics."""
    typed = typed_filter(meta, expr, unknown)
    if typed is None:
        return Truth.MAYBE
    got = [zone_truth(typed, lambda p, o=o: None if p in unknown else object_stats(o, p))
           for o in meta.objects]
    if all(t is Truth.FALSE for t in got):
        return Truth.FALSE
    if all(t is Truth.TRUE for t in got):
        return Truth.TRUE
    return Truth.MAYBE
