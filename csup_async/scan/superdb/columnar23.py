"""CSUP version 23 vectors straight into the array model, a column at a time.

The general path (:mod:`.vectors` then ``arrays.from_pylist``) builds a Python value
per row; super main's files put unions everywhere (a nullable value is a union with
``null``, an optional field a union with ``none``, a fused column a fusion vector), so
for them that path was the whole cost of a scan.  Here every vector becomes an array
of the column's type directly: records as struct arrays of their fields' arrays,
arrays/sets/maps as offsets over one child array, unions as their members' arrays
put in row order by the tags (one pass in C: ``arrays.combine``) or as a union
array with the members mapped by type, primitives through :mod:`.fastcols`' numpy
leaves (intcomp in C, dict entries by index, consts, string bytes as they are).

The result is the array the general path gives for the same rows, type for type
(tests/unit/scan/superdb/test_columnar23.py checks it against that path for every
super main file of the conformance corpus).  Whatever this module does not know
raises :class:`Unsupported` and the caller takes the general path for that column
of that object: ``any``, ``ip``/``net``, type values, recursive types, a vector whose
type is not the column's (or a member of the column's union), and a damaged object
(so its error is the general path's).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import numpy as np

from ... import arrays as A
from ...decode.kernels import fill_runs, map_tags
from ...format.meta import Segment
from ...format.superdb import intcomp
from ...format.superdb.bsup5 import TD_NAMED, TD_UNION, RecRef, columnar
from ...format.superdb.meta import ObjectMeta, node_len, node_type
from ...model.errors import CsupError
from ...model.kinds import phys
from ...model.types import (
    NULL,
    ArrayType,
    EnumType,
    ErrorType,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from . import columns as C
from . import fastcols
from .vectors import Decoder

_EMPTY_COUNT = 0xFFFFFFFF
_LEAF_KINDS = ("int", "uint", "float", "bytes", "bool", "const", "dict")


class Unsupported(Exception):
    """A vector this module does not build: take the general path."""


def column(dec: Decoder, obj: ObjectMeta, comps: tuple[str, ...], t: Type,
           tags: np.ndarray | None) -> A.Array | None:
    """The column at ``comps`` (type ``t``) over ``obj``'s rows, or None: the general
    path must build it (see the module docstring)."""
    try:
        return _column(dec, obj, comps, t, tags)
    except (Unsupported, CsupError, RecursionError, TypeError, ValueError, OverflowError):
        return None  # the general path builds it, or says what is wrong with the object


def _column(dec: Decoder, obj: ObjectMeta, comps: tuple[str, ...], t: Type,
            tags: np.ndarray | None) -> A.Array:
    b = _Builder(dec, getattr(obj, "memo", None))
    tops = C.tops_of(obj)
    parts: list[A.Array | None] = []
    for top in tops:
        n = node_len(dec.nodes, top)
        got = b.path(top, comps, t, n, 0)
        parts.append(got)
    if len(parts) == 1:
        return parts[0] if parts[0] is not None else A.null_array(t, obj.length)
    which = tags if tags is not None else C.row_tags(dec, obj)
    return _combine(parts, which, t)


def _combine(parts: list[A.Array | None], which: np.ndarray, t: Type) -> A.Array:
    """Rows in order from per-tag parts of type ``t`` (None: null rows)."""
    if all(p is None for p in parts):
        return A.null_array(t, int(which.size))
    live = [j for j, p in enumerate(parts) if p is not None]
    if len(live) == 1:  # one member with values, the others null (T|null, T|none)
        arr = parts[live[0]]
        assert arr is not None
        if arr.type == t:
            return arr.expand(which == live[0])  # a scatter, not a concat and a take
    got = A.combine(parts, which)
    if got.type != t:  # (the null type's parts): not the column's form
        raise Unsupported(f"combined {got.type} for {t}")
    return got


def passed_subtypes(obj: ObjectMeta, tops: tuple[int, ...],
                    paths: list[tuple[str, ...]]) -> list[Segment]:
    """The file segments of the subtype vectors of the fusion vectors ``paths`` pass on
    their way down records (what :func:`.columns.resolve` walks; below where it stops, the
    read takes the whole subtree, subtypes included): a column holding a union needs
    them to tell a union value from a plain one (see :meth:`_Builder._plain_subtypes`)."""
    nodes, out, seen = obj.nodes, [], set()
    for top in tops:
        for comps in paths:
            i, k = top, 0
            while k <= len(comps):
                n = nodes[i]
                if n.kind == "fusion" and isinstance(n.value, int) and n.value not in seen:
                    seen.add(n.value)
                    out.extend(C.file_segment(obj, s) for _, s in nodes[n.value].segs
                               if s.size)
                if n.kind in ("named", "error", "fusion"):
                    i = n.kids[0]
                    continue
                if n.kind != "record" or k == len(comps):
                    break
                for (name, _), kid in zip(n.fields, n.kids, strict=True):
                    if name == comps[k]:
                        i, k = kid, k + 1
                        break
                else:
                    break
    return out


class _Builder:
    def __init__(self, dec: Decoder, memo: dict[Any, Any] | None = None) -> None:
        self.dec = dec
        self.nodes = dec.nodes
        #: what is learnt of the object and kept with it (v23.ObjectMeta5.memo)
        self.memo: dict[Any, Any] = {} if memo is None else memo
        #: how many fusion vectors the vector being built is inside: their values are
        #: their subtypes' (the general path defuses them), where a union's ``null``
        #: member is a plain null (a null row), not the union's null member
        self.fused = 0

    def _all_null(self, i: int) -> bool:
        """Whether every value of vector ``i`` is null (a null vector, named or an error)."""
        n = self.nodes[i]
        while n.kind in ("named", "error"):
            n = self.nodes[n.kids[0]]
        return n.kind == "null" or (n.kind == "const" and n.value is None)

    def _plain_subtypes(self, n: Any) -> None:
        """Refuse a fusion vector some of whose values have a subtype holding a union
        (their null members would keep their tags: only the general path knows)."""
        if not isinstance(n.value, int) or self.dec.types is None:
            raise Unsupported("a fusion vector without its subtypes")
        # the answer per subtypes vector: kept with this read's decoder for every column,
        # and with the object, by the digest of the vector's bytes, for later scans
        known: dict[int, bool] = getattr(self.dec, "plain_subtypes", None) or {}
        self.dec.plain_subtypes = known  # type: ignore[attr-defined]
        if n.value not in known:
            known[n.value] = self._subtypes_plain(n.value)
        if not known[n.value]:
            raise Unsupported("a fusion subtype holding a union")

    def _subtypes_plain(self, i: int) -> bool:
        sub = self.nodes[i]
        if sub.kind != "typevalue":
            raise Unsupported("fusion subtypes")
        table = self.dec.types()
        unions = self.memo.get("union_typedefs")
        if unions is None:
            unions = self.memo["union_typedefs"] = any(
                code in (TD_UNION, TD_NAMED) for code, _ in table.entries)
        if not unions:
            return True  # no union typedef at all (JSON's subtypes): none holds one
        raw = self.dec.seg(sub, "values") if sub.count else b""
        # the data bytes are this read's: an answer is reused only for the same bytes
        key = ("plain_subtypes", i, hashlib.blake2b(raw, digest_size=16).digest())
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = self._plain_ids(raw, table)
        return bool(got)

    @staticmethod
    def _plain_ids(raw: bytes, table: Any) -> bool:
        """Whether no subtype ID in ``raw`` (an intcomp uint32 vector) holds a union."""
        ids = intcomp.uint32s(raw) if raw else np.zeros(0, np.int64)
        if ids.size:
            lo, hi = int(ids.min()), int(ids.max())
            ids = (np.flatnonzero(np.bincount(ids - lo)) + lo if hi - lo < 1 << 20
                   else np.unique(ids))
        return not any(_holds_union(table.lookup(j)) for j in ids.tolist())

    def _len(self, i: int) -> int:
        n = node_len(self.nodes, i)
        return 0 if n == _EMPTY_COUNT else n

    def _check(self, i: int, want: int) -> None:
        if self._len(i) != want:
            raise Unsupported(f"vector {i} holds {self._len(i)} values, {want} belong")

    # ---------------------------------------------------------------- paths ---
    def path(self, i: int, comps: tuple[str, ...], t: Type, count: int, d: int
             ) -> A.Array | None:
        """The values at ``comps`` of vector ``i``'s ``count`` values, typed ``t``
        (None: null in every row, the path is not there)."""
        if d > 200:
            raise Unsupported("nested too deeply")
        if not comps:
            return self.values(i, t, count, d)
        n = self.nodes[i]
        k = n.kind
        if k == "fusion":
            if _holds_union(t):  # a union member's tag may depend on the subtypes
                self._plain_subtypes(n)
            self.fused += 1
            try:
                return self.path(n.kids[0], comps, t, count, d + 1)
            finally:
                self.fused -= 1
        if k in ("named", "error"):
            return self.path(n.kids[0], comps, t, count, d + 1)
        if k == "record":
            self._check(i, count)
            for (name, _), kid in zip(n.fields, n.kids, strict=True):
                if name == comps[0]:
                    self._check(kid, count)
                    return self.path(kid, comps[1:], t, count, d + 1)
            return None
        if k == "union":
            self._check(i, count)
            tags = self._tags(n, count)
            members = [None if self.nodes[kid].kind in ("null", "none") else
                       self.path(kid, comps, t, self._len(kid), d + 1) for kid in n.kids]
            if all(m is None for m in members):
                return None
            return _combine(members, tags, t)
        if k in ("int", "uint", "float", "bytes", "bool", "const", "dict", "null", "none",
                 "array", "set", "map", "enum", "ip", "net", "typevalue", "empty"):
            return None  # a field looked up in a value that is not a record: null
        raise Unsupported(f"a path through a {k} vector")

    def _tags(self, n: Any, count: int) -> np.ndarray:
        return self._tagged(n, count, None)[0]

    def _tagged(self, n: Any, count: int, to: np.ndarray | None
                ) -> tuple[np.ndarray, list[int]]:
        """The union ``n``'s tags (mapped through ``to``, int32, when given) and its rows
        per member, each member checked to hold that many values.  A v23 two-member
        union stores run lengths: its tags are filled from them and its counts summed
        from them (decode.kernels.fill_runs), others are counted and mapped in one pass
        (decode.kernels.map_tags)."""
        k = len(n.kids)
        raw = self.dec.seg(n, "tags")
        if k == 2:  # v23: runs of tag 1 and tag 0, from tag 1 (see vectors23.rle_tags)
            runs = intcomp.uint32s(raw) if raw else np.zeros(0, np.int64)
            first, second = (1, 0) if to is None else (int(to[1]), int(to[0]))
            tags = fill_runs(runs, first, second, count)
            ones = int(runs[0::2].sum()) if runs.size else 0
            per = [count - ones, ones]
        else:
            raw_tags = intcomp.uint32s(raw) if raw else np.zeros(0, np.int64)
            if raw_tags.size != count:
                raise Unsupported("union tags do not match its count")
            ident = np.arange(k, dtype=np.int32) if to is None else to
            tags, counts = map_tags(raw_tags, ident)
            per = counts.tolist()
        for kid, want in zip(n.kids, per, strict=True):
            self._check(kid, want)
        return tags, per

    # --------------------------------------------------------------- values ---
    def values(self, i: int, t: Type, count: int, d: int) -> A.Array:
        """The ``count`` values of vector ``i`` as an array of type ``t``."""
        if d > 200:
            raise Unsupported("nested too deeply")
        n = self.nodes[i]
        k = n.kind
        if k == "fusion":  # values of the supertype
            if _holds_union(t):  # a union member's tag may depend on the subtypes
                self._plain_subtypes(n)
            self.fused += 1
            try:
                return self.values(n.kids[0], t, count, d + 1)
            finally:
                self.fused -= 1
        if k in ("null", "none"):
            return A.null_array(t, count)
        p = phys(t)
        if k == "union":
            if isinstance(p, UnionType):
                return self._union_as_union(i, t, p, count, d)
            self._check(i, count)
            tags = self._tags(n, count)
            members = [None if self.nodes[kid].kind in ("null", "none") else
                       self.values(kid, t, self._len(kid), d + 1) for kid in n.kids]
            return _combine(members, tags, t)
        if isinstance(p, UnionType):  # one member of the column's union
            return self._as_member(i, t, p, count, d)
        if k in ("named", "error"):
            return self._wrapped(i, t, count, d)
        if isinstance(t, NamedType | ErrorType):
            raise Unsupported(f"{k} vector for {t}")
        if k == "record":
            return self._record(i, t, count, d)
        if k in ("array", "set", "map"):
            return self._list(i, t, count, d)
        if k == "enum":
            return self._enum(i, t, count, d)
        if k in _LEAF_KINDS:
            return self._leaf(i, t, count)
        if k in ("ip", "net", "typevalue"):
            return self._objects(i, t, count, d)
        raise Unsupported(f"{k} vectors")

    def _objects(self, i: int, t: Type, count: int, d: int) -> A.Array:
        """ip, net and type values: Python objects in an object array, as the array
        model keeps them."""
        from . import vectors23

        if self._own_type(i) != t:
            raise Unsupported(f"{self.nodes[i].kind} vector for {t}")
        vals = vectors23.values(self.dec, self.nodes[i], d)
        if len(vals) != count:
            raise Unsupported(f"{self.nodes[i].kind} count")
        objs = np.empty(count, dtype=object)
        objs[:] = vals
        return A.PrimitiveArray(t, objs)

    def _wrapped(self, i: int, t: Type, count: int, d: int) -> A.Array:
        n = self.nodes[i]
        if n.kind == "named" and isinstance(t, NamedType) and t.name == n.name:
            return self.values(n.kids[0], t.inner, count, d + 1).with_type(t)
        if n.kind == "error" and isinstance(t, ErrorType):
            return self.values(n.kids[0], t.inner, count, d + 1).with_type(t)
        raise Unsupported(f"{n.kind} vector for {t}")

    def _own_type(self, i: int) -> Type:
        try:
            return columnar(node_type(self.nodes, i, names=()))
        except CsupError as e:
            raise Unsupported(str(e)) from None

    def _as_member(self, i: int, t: Type, u: UnionType, count: int, d: int) -> A.Array:
        """Vector ``i`` (not a union) as values of the column's union ``t``: its own
        type must be one of the members."""
        if self._all_null(i):  # plain nulls: null rows, whatever their type
            return A.null_array(t, count)
        own = self._own_type(i)
        if own not in u.types:
            raise Unsupported(f"{own} is not a member of {u}")
        j = u.types.index(own)
        arr = self.values(i, own, count, d + 1)
        if len(arr) != count:
            raise Unsupported(f"{len(arr)} values of a member for {count} rows")
        kids = [arr if m == j else A.null_array(mt, 0) for m, mt in enumerate(u.types)]
        return A.UnionArray.known(t, np.full(count, j, np.int32), kids, False)

    def _union_as_union(self, i: int, t: Type, u: UnionType, count: int, d: int
                        ) -> A.Array:
        """A union vector as the column's union: each member mapped to the column's
        member of its type (a ``none`` member: null rows)."""
        n = self.nodes[i]
        self._check(i, count)
        to = np.full(len(n.kids), -1, np.int32)
        for m, kid in enumerate(n.kids):
            own = self._own_type(kid)
            if self.nodes[kid].kind == "none" or (own == NULL and NULL not in u.types) or (
                    self.fused and self._all_null(kid)):
                continue  # a null row (as the general path: no member of the column)
            if own not in u.types:
                raise Unsupported(f"member {own} is not in {u}")
            j = u.types.index(own)
            if j in to:
                raise Unsupported("two members of one column member")
            to[m] = j
        tags, per = self._tagged(n, count, to)  # counts checked before any member is built
        out = [A.null_array(mt, 0) for mt in u.types]
        for m, (kid, j) in enumerate(zip(n.kids, to.tolist(), strict=True)):
            if j >= 0:
                out[j] = self.values(kid, u.types[j], per[m], d + 1)
                if len(out[j]) != per[m]:
                    raise Unsupported(f"member {m} built {len(out[j])} of {per[m]} values")
        # each column member holds its union member's values, one per row tagged so:
        # the union needs no second count
        nulls = any(c and j < 0 for c, j in zip(per, to.tolist(), strict=True))
        return A.UnionArray.known(t, tags, out, nulls)

    def _record(self, i: int, t: Type, count: int, d: int) -> A.Array:
        n = self.nodes[i]
        p = phys(t)
        if not isinstance(p, RecordType) or [f.name for f in p.fields] != [
                name for name, _ in n.fields]:
            raise Unsupported(f"record vector for {t}")
        self._check(i, count)
        fields = []
        for f, kid in zip(p.fields, n.kids, strict=True):
            self._check(kid, count)
            fields.append(self.values(kid, f.type, count, d + 1))
        return A.StructArray(t, count, fields)

    def _list(self, i: int, t: Type, count: int, d: int) -> A.Array:
        n = self.nodes[i]
        p = phys(t)
        kind_ok = (n.kind == "array" and isinstance(p, ArrayType)) or (
            n.kind == "set" and isinstance(p, SetType)) or (
            n.kind == "map" and isinstance(p, MapType))
        if not kind_ok:
            raise Unsupported(f"{n.kind} vector for {t}")
        self._check(i, count)
        raw = self.dec.seg(n, "lengths")
        offs = intcomp.uint32s(raw).astype(np.int64) if raw else np.zeros(0, np.int64)
        if not offs.size and count == 0:
            offs = np.zeros(1, np.int64)
        if offs.size != count + 1 or offs[0] != 0 or (np.diff(offs) < 0).any():
            raise Unsupported(f"{n.kind} offsets")
        total = int(offs[-1])
        for kid in n.kids:
            self._check(kid, total)
        if isinstance(p, MapType):
            keys = self.values(n.kids[0], p.key, total, d + 1)
            vals = self.values(n.kids[1], p.value, total, d + 1)
            return A.MapArray(t, offs, keys, vals)
        return A.ListArray(t, offs, self.values(n.kids[0], p.elem, total, d + 1))

    def _enum(self, i: int, t: Type, count: int, d: int) -> A.Array:
        n = self.nodes[i]
        if not isinstance(t, EnumType) or n.type != t:
            raise Unsupported(f"enum vector for {t}")
        idx = fastcols.leaf(self.dec, n.kids[0], "uint64", count)
        if not idx or len(idx[0]) != count:
            raise Unsupported("enum indexes")
        return A.PrimitiveArray(t, idx[0])

    def _leaf(self, i: int, t: Type, count: int) -> A.Array:
        if not isinstance(t, PrimitiveType) or t == NULL:
            raise Unsupported(f"leaf vector for {t}")
        own = self._own_type(i)
        if own != t:
            raise Unsupported(f"{own} vector for {t}")
        name = t.name
        strings = name in ("string", "bytes")
        if name in ("time", "duration") and self.nodes[i].kind in ("int", "dict"):
            name = "int64"  # nanoseconds (PrimitiveArray views them as its dtype)
        if not strings and name not in fastcols.NUMERIC:
            raise Unsupported(f"{name} leaves")
        got = fastcols.leaf(self.dec, i, name, count)
        if got is None:
            raise Unsupported(f"{name} leaf")
        if got == ():
            return A.null_array(t, count)
        if strings:
            offs, data = got
            if len(offs) != count + 1:
                raise Unsupported("string count")
            return A.BinaryArray(t, offs, data)
        if len(got[0]) != count:
            raise Unsupported("leaf count")
        return A.PrimitiveArray(t, got[0])


@functools.lru_cache(maxsize=4096)
def _holds_union(t: Type, d: int = 0) -> bool:
    """Whether values of ``t`` can hold a union value (a recursive reference: yes)."""
    if d > 100 or isinstance(t, UnionType | RecRef):
        return True
    if isinstance(t, NamedType | ErrorType):
        return _holds_union(t.inner, d + 1)
    if isinstance(t, RecordType):
        return any(_holds_union(f.type, d + 1) for f in t.fields)
    if isinstance(t, ArrayType | SetType):
        return _holds_union(t.elem, d + 1)
    if isinstance(t, MapType):
        return _holds_union(t.key, d + 1) or _holds_union(t.value, d + 1)
    return False
