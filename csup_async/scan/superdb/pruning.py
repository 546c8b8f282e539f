"""Which SuperDB objects a filter may match, from the min/max their metadata keeps.

``super`` records, per integer, float and string vector, the smallest and largest
value (and a const vector is one value): each object is then a zone whose
statistics :func:`planner.filters.zone_truth` judges, as the trailer layout's
segments are.  Bounds are used only where they are sound: a float vector may
hide NaNs (``super`` skips them in min/max; one first in the vector poisons the
bound, which is then unknown), times and durations are left unknown, as is any
path that crosses an optional field, union or array.
"""

from __future__ import annotations

import math
from typing import Any

from planner.filters import ColumnStats

from ...format.superdb.meta import Node, ObjectMeta
from ...model.types import PrimitiveType, underlying
from . import columns as C

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
    while n.kind == "named":
        n = nodes[n.kids[0]]
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
