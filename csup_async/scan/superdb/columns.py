"""Projection over SuperDB vectors: which vectors a dotted path reads, and its values.

A path descends record vectors (through named and error wrappers) for as long as
they continue it; where something else stands (a union, an array, an optional
field whose values are spread among absences) the vector there is read whole
and the rest of the path is looked up in its decoded values.  A super type whose
records lack the path gives nulls, as the trailer layout does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...format.meta import COMPRESSION_LZ4, COMPRESSION_NONE, Segment
from ...format.superdb import intcomp
from ...format.superdb.bsup5 import columnar
from ...format.superdb.meta import Node, ObjectMeta, Seg, node_len, node_type
from ...model.errors import FormatError
from ...model.kinds import phys
from ...model.types import (
    NULL,
    ArrayType,
    ErrorType,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ...model.values import UnionValue, Value, strip_unions, unify
from .vectors import NONE, Decoder, spread


@dataclass(frozen=True, slots=True)
class Target:
    """Where a path's values are in one top-level vector: vector ``node`` (read whole),
    then ``rest`` looked up in its values; ``opt`` = (record vector, field index) when
    the vector is an optional field's (its values spread among absences)."""

    node: int
    rest: tuple[str, ...]
    opt: tuple[int, int] | None = None


def resolve(nodes: tuple[Node, ...], top: int, comps: tuple[str, ...]) -> Target | None:
    """Where ``comps`` is in top-level vector ``top`` (None: its records lack it); asked
    again by each step of a scan (paths checked, typed, planned, decoded), so answers are
    kept with vectors that keep them (:class:`~csup_async.format.superdb.meta.LazyNodes`)."""
    memo = getattr(nodes, "resolved", None)
    if memo is None:
        return _resolve(nodes, top, comps)
    key = (top, comps)
    got = memo.get(key, memo)
    if got is memo:
        got = memo[key] = _resolve(nodes, top, comps)
    return got


def _resolve(nodes: tuple[Node, ...], top: int, comps: tuple[str, ...]) -> Target | None:
    i, k = top, 0
    while k < len(comps):
        n = nodes[i]
        if n.kind in ("named", "error", "fusion"):  # fusion: into its supertype's values
            i = n.kids[0]
            continue
        if n.kind != "record":
            return Target(i, comps[k:])
        for j, ((name, opt), kid) in enumerate(zip(n.fields, n.kids, strict=True)):
            if name == comps[k]:
                if opt:
                    return Target(kid, comps[k + 1:], (i, j))
                i, k = kid, k + 1
                break
        else:
            return None
    return Target(i, ())


def type_at(t: Type, comps: tuple[str, ...]) -> Type | None:
    """The type at ``comps`` in values of ``t`` (None: no such field; NULL past a non-record;
    through a union, the union of the field's types in its record members, as
    :func:`resolve` and :func:`lookup` find the values there)."""
    for k, c in enumerate(comps):
        while isinstance(t, NamedType | ErrorType):
            t = t.inner
        if isinstance(t, UnionType):
            found = [u for m in t.types if (u := type_at(m, comps[k:])) is not None]
            return unify(found) if found else None
        if not isinstance(t, RecordType):
            return NULL
        f = t.field(c)
        if f is None:
            return None
        t = f.type
    return t


def _segs(nodes: tuple[Node, ...], i: int, seen: set[int]) -> Iterator[Seg]:
    if i in seen:
        return
    seen.add(i)
    n = nodes[i]
    for _, s in n.segs:
        yield s
    for k in n.kids:
        yield from _segs(nodes, k, seen)
    if n.kind == "fusion" and isinstance(n.value, int):  # v23: the values' subtypes
        yield from _segs(nodes, n.value, seen)


def file_segment(obj: ObjectMeta, s: Seg) -> Segment:
    return Segment(obj.data_offset + s.offset, s.size, s.mem,
                   COMPRESSION_LZ4 if s.lz4 else COMPRESSION_NONE)


def needed_segments(obj: ObjectMeta, targets: list[Target], tops: int) -> list[Segment]:
    """The file segments ``targets`` read in ``obj`` (and its row tags, with several
    top-level vectors); empty segments left out."""
    segs: list[Seg] = []
    root = obj.root
    if root.kind == "dynamic" and tops:
        s = root.seg("tags")
        if s is not None:
            segs.append(s)
    seen: set[int] = set()
    for t in targets:
        segs.extend(_segs(obj.nodes, t.node, seen))
        if t.opt is not None:
            s = obj.nodes[t.opt[0]].seg(f"nones:{t.opt[1]}")
            if s is not None:
                segs.append(s)
    return [file_segment(obj, s) for s in segs if s.size]


def lookup(v: Any, rest: tuple[str, ...], typed: bool = False) -> Any:
    """The value at ``rest`` in ``v``; ``typed``: ``v`` decoded with its types, and the
    value found is given as a :class:`Value` of its type where a union said it (the type
    a union member's field has is known only here)."""
    t: Type | None = None
    for c in rest:
        while isinstance(v, UnionValue | Value):  # values decoded with their types
            t, v = v.type, v.value
        if not isinstance(v, dict):
            return None
        rt = None if t is None else phys(t)
        f = rt.field(c) if isinstance(rt, RecordType) else None
        t = None if f is None else f.type
        v = v.get(c)
    if typed and t is not None and v is not None and not isinstance(v, UnionValue | Value):
        return Value(t, v)
    return v


def target_values(dec: Decoder, obj: ObjectMeta, t: Target, count: int) -> list[Any]:
    vals = dec.values(t.node)
    if t.opt is not None:
        rec = obj.nodes[t.opt[0]]
        runs = dec.seg(rec, f"nones:{t.opt[1]}") if rec.seg(f"nones:{t.opt[1]}") else b""
        vals = spread(vals, intcomp.uint32s(runs).tolist() if runs else [], rec.count)
    if t.opt is not None or any(v is NONE for v in vals):  # absent (v23: a none member)
        vals = [None if v is NONE else v for v in vals]
    if t.rest:
        vals = [lookup(v, t.rest, dec.typed) for v in vals]
    return vals


def as_members(vals: list[Any], t: Type | None, col: Type) -> list[Any]:
    """Values of type ``t`` (decoded with their types) as values of the column type
    ``col`` in the form ``from_pylist`` takes: each union value, at any depth, tagged
    with its member of the column's union (untagged, ``from_pylist`` would take the first
    member that holds the value: a float64 among float32s rounded to float32, an int64
    among int8s tagged int8).  v23's typed forms (a fusion's or an ``any``'s
    :class:`Value`) say their own type."""
    return [as_member(v, t, col) for v in vals]


def as_member(v: Any, t: Type | None, col: Type) -> Any:
    """One value of type ``t`` (None: not known) as a value of ``col`` (see
    :func:`as_members`)."""
    if v is None or v is NONE:
        return None
    if isinstance(v, Value):
        return as_member(v.value, v.type, col)
    c = phys(col)
    if isinstance(c, UnionType):
        members = c.types
        if isinstance(v, UnionValue):
            m = _columnar(v.type)
            if m in members:
                return UnionValue(members.index(m), m, as_member(v.value, v.type, m))
            return as_member(v.value, v.type, col)  # the null member, or a nested union
        if t is not None and (m := _columnar(t)) in members:
            return UnionValue(members.index(m), m, as_member(v, t, m))
        return plain(v)  # its member unknown: from_pylist picks one
    if isinstance(v, UnionValue):
        return as_member(v.value, v.type, col)
    pt = None if t is None else phys(t)
    if isinstance(c, RecordType) and isinstance(v, dict):
        out = {}
        for k, x in v.items():
            f = c.field(k)
            if f is None:
                out[k] = plain(x)
                continue
            ft = pt.field(k) if isinstance(pt, RecordType) else None
            out[k] = as_member(x, None if ft is None else ft.type, f.type)
        return out
    if isinstance(c, ArrayType | SetType) and isinstance(v, list | tuple | set | frozenset):
        et = pt.elem if isinstance(pt, ArrayType | SetType) else None
        return [as_member(x, et, c.elem) for x in v]
    if isinstance(c, MapType):
        kt, vt = (pt.key, pt.value) if isinstance(pt, MapType) else (None, None)
        if isinstance(v, dict) and not has_union(c.key):
            return {plain(k): as_member(x, vt, c.value) for k, x in v.items()}
        if isinstance(v, dict):  # union keys tagged too: as pairs
            v = list(v.items())
        if isinstance(v, list):
            return [(as_member(k, kt, c.key), as_member(x, vt, c.value)) for k, x in v]
    return plain(v)


@functools.lru_cache(maxsize=1024)
def _columnar(t: Type) -> Type:
    """A decoded value's type as the scan's column types say it (v23's ``none`` as null)."""
    return columnar(t)


def plain(v: Any) -> Any:
    """A typed-form value as its plain value (union and typed wrappers dropped)."""
    if isinstance(v, Value):
        return plain(v.value)
    if isinstance(v, UnionValue):
        return plain(v.value)
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, dict):
        return strip_unions({k: plain(x) for k, x in v.items()})
    return v


def has_union(t: Type, depth: int = 0) -> bool:
    """Whether values of ``t`` can hold a union value anywhere (their column is then
    built from values decoded with their types)."""
    p = phys(t)
    if depth > 100 or isinstance(p, UnionType):
        return True
    if isinstance(p, RecordType):
        return any(has_union(f.type, depth + 1) for f in p.fields)
    if isinstance(p, ArrayType | SetType):
        return has_union(p.elem, depth + 1)
    if isinstance(p, MapType):
        return has_union(p.key, depth + 1) or has_union(p.value, depth + 1)
    return False


def tops_of(obj: ObjectMeta) -> tuple[int, ...]:
    root = obj.root
    return root.kids if root.kind == "dynamic" else (obj.header.root,)


def row_tags(dec: Decoder, obj: ObjectMeta) -> np.ndarray:
    """Which top-level vector each row of ``obj`` is in (int64), checked against the
    top-level vectors' lengths."""
    root = obj.root
    if root.kind != "dynamic" or len(root.kids) == 1:  # one top-level vector: no tags read
        return np.zeros(obj.length, dtype=np.int64)
    tags = intcomp.uint32s(dec.seg(root, "tags")) if root.count else np.zeros(0, np.int64)
    if tags.size != root.count:
        raise FormatError(f"the object at byte {obj.offset} has {root.count} rows but "
                          f"{tags.size} row tags")
    if tags.size and int(tags.max()) >= len(root.kids):
        raise FormatError(f"row tag {int(tags.max())} has no vector")
    counts = np.bincount(tags, minlength=len(root.kids)).tolist()
    for k, want in zip(root.kids, counts, strict=True):
        dec.expect(k, want, "top-level")
    return tags


def interleave(tags: np.ndarray, parts: list[list[Any]]) -> list[Any]:
    pos = [0] * len(parts)
    out = []
    for t in tags.tolist():
        if t >= len(parts) or pos[t] >= len(parts[t]):
            raise FormatError(f"row tag {t} has no value")
        out.append(parts[t][pos[t]])
        pos[t] += 1
    return out


def node_len_of(obj: ObjectMeta, top: int) -> int:
    return node_len(obj.nodes, top)


def node_len_of_nodes(nodes: tuple[Node, ...], i: int) -> int:
    return node_len(nodes, i)


def top_types(obj: ObjectMeta) -> list[Type]:
    return [node_type(obj.nodes, k) for k in tops_of(obj)]
