"""SuperDB CSUP vectors to Python values, one list per vector, in the library's mapping.

Decoding walks the metadata tree from a top-level vector, asking ``load`` for
each segment it needs (the read path has fetched them already), so a projection
touches only the vectors under its fields.  Integers are intcomp-coded
(:mod:`csup_async.format.superdb.intcomp`), floats are float64 words, strings and bytes are
one byte run plus uint32 offsets, other primitives are tag-encoded BSUP bodies; a dict vector
is its entries plus one byte of index per value, a const one value and a count.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import lz4.block
import numpy as np

from ...decode import kernels
from ...format.bsup import iter_tagged
from ...format.superdb import intcomp
from ...format.superdb.bsup2 import V2, Dialect, decode_primitive2, decode_value
from ...format.superdb.bsup5 import NONE as _NONE
from ...format.superdb.meta import Node, Seg, node_len, node_type
from ...model.errors import FormatError, UnsupportedTypeError
from ...model.kinds import map_value
from ...model.types import EnumType, PrimitiveType, Type, underlying
from ...model.values import UnionValue, strip_unions


def _use_native_intcomp() -> None:
    intcomp.use_native(kernels.native_module())


_use_native_intcomp()
Load = Callable[[Seg], bytes]
NONE = _NONE  # an absent optional field (left out of its record's dict)
_EMPTY_COUNT = 0xFFFFFFFF  # a bytes vector of no values claims len(offsets) - 1 = -1


def segment_bytes(raw: bytes | memoryview, seg: Seg) -> bytes:
    """A segment's stored bytes made its in-memory bytes (LZ4 blocks decompressed)."""
    if len(raw) != seg.size:
        raise FormatError(f"segment at {seg.offset} is {len(raw)} bytes, not {seg.size}")
    if not seg.lz4:
        return bytes(raw)
    try:
        out = lz4.block.decompress(bytes(raw), uncompressed_size=seg.mem)
    except Exception as e:  # lz4 raises LZ4BlockError, ValueError, MemoryError
        raise FormatError(f"LZ4 segment at {seg.offset} is corrupt: {e}") from None
    if len(out) != seg.mem:
        raise FormatError(f"LZ4 segment at {seg.offset} gave {len(out)} bytes, not {seg.mem}")
    return out


def segment_view(raw: bytes | memoryview, seg: Seg) -> bytes | memoryview:
    """:func:`segment_bytes` without the copy of a segment stored as it is (the bytes
    held for the read, viewed): what an array keeps as its buffer, a string column's
    bytes, need not be copied a second time."""
    if seg.lz4 or len(raw) != seg.size:
        return segment_bytes(raw, seg)
    return raw


class Decoder:
    """Decodes the vectors of one object (``nodes``) through ``load``."""

    def __init__(self, nodes: tuple[Node, ...], load: Load, typed: bool = False,
                 dialect: Dialect = V2, types: Callable[[], Any] | None = None,
                 view_load: Callable[[Seg], bytes | memoryview] | None = None) -> None:
        self.nodes, self.load, self.typed, self.dialect = nodes, load, typed, dialect
        self.types = types  # v23: the object's typedefs table, on demand
        self.view_load = view_load  # a segment as held, when stored uncompressed

    def expect(self, i: int, want: int, what: str) -> None:
        """Refuse a child vector whose length disagrees with its parent's before decoding
        it (a damaged count must not allocate what it claims)."""
        got = node_len(self.nodes, i)
        if got != want and not (got == _EMPTY_COUNT and want == 0):
            raise FormatError(f"{what} vector holds {got} values where {want} belong")

    def seg(self, n: Node, role: str) -> bytes:
        s = n.seg(role)
        if s is None:
            raise FormatError(f"{n.kind} vector lacks its {role} segment")
        return self.load(s) if s.size else b""

    def view(self, n: Node, role: str) -> bytes | memoryview:
        """:meth:`seg`, as a view of the held bytes where it is stored uncompressed (when
        the reader gave a ``view`` loader): for a buffer an array keeps as it is."""
        load = self.view_load
        if load is None:
            return self.seg(n, role)
        s = n.seg(role)
        if s is None:
            raise FormatError(f"{n.kind} vector lacks its {role} segment")
        return load(s) if s.size else b""

    def values(self, i: int, depth: int = 0) -> list[Any]:
        if depth > 200:
            raise FormatError("CSUP vectors nested too deeply")
        n = self.nodes[i]
        k = n.kind
        d = depth + 1
        out: list[Any]
        if k in ("int", "uint"):
            raw = self.seg(n, "values")
            arr = intcomp.int64s(raw) if k == "int" else intcomp.uint64s(raw)
            out = [_prim(n.type, v) for v in arr.tolist()]
        elif k == "float":
            raw = self.seg(n, "values")
            out = np.frombuffer(raw, dtype="<f8").tolist() if raw else []
        elif k == "bytes":
            out = self._bytes(n)
        elif k == "primitive":
            raw = self.seg(n, "values")
            t = n.type
            out = [None if b is None else _body(t, b, self.dialect)
                   for b in iter_tagged(raw, 0, len(raw))]
        elif k == "const":
            out = [n.value if self.typed else strip_unions(n.value)] * n.count
        elif k == "dict":
            entries = self.values(n.kids[0], d)
            index = np.frombuffer(self.seg(n, "index"), dtype=np.uint8)
            if index.size != n.count or (index.size and int(index.max()) >= len(entries)):
                raise FormatError("dict vector's index does not fit its entries")
            out = [entries[j] for j in index.tolist()]
        elif k == "record":
            out = self._record(n, d)
        elif k in ("array", "set", "map"):
            offs = intcomp.uint32s(self.seg(n, "lengths")).tolist()
            if n.count and len(offs) != n.count + 1:
                raise FormatError(f"{k} vector of {n.count} values has {len(offs)} offsets")
            if offs and (offs[0] != 0 or any(b < a for a, b in pairwise(offs))):
                raise FormatError(f"{k} vector's offsets are not ascending from 0")
            total = offs[-1] if offs else 0
            for kid in n.kids:
                self.expect(kid, total, f"{k} element")
            if k == "map":
                keys, vals = self.values(n.kids[0], d), self.values(n.kids[1], d)
                kt = node_type(self.nodes, n.kids[0])
                out = [map_value(kt, list(zip(keys[a:b], vals[a:b], strict=True)))
                       for a, b in pairwise(offs)]
            else:
                elems = self.values(n.kids[0], d)
                out = [elems[a:b] for a, b in pairwise(offs)]
        elif k in ("union", "dynamic"):
            out = self._union(n, d)
        elif k == "fusion" and self.typed and self.types is not None:  # as its subtype
            from . import vectors23

            out = vectors23.fusion_values(self, n, d)
        elif k in ("named", "error", "fusion"):  # fusion: the supertype's values
            out = self.values(n.kids[0], d)
        elif k in V23_KINDS:
            from . import vectors23

            out = vectors23.values(self, n, d)
        else:
            raise UnsupportedTypeError(f"vectors of kind {k} are not supported")
        want = len(out) if k in ("named", "error", "fusion", "enum", "any") or (
            k == "bytes" and n.count == _EMPTY_COUNT) else n.count
        if len(out) != want:
            raise FormatError(f"{k} vector holds {len(out)} values, its metadata says {want}")
        return out

    def _bytes(self, n: Node) -> list[Any]:
        if n.count in (0, _EMPTY_COUNT):
            return []
        data = self.seg(n, "bytes")
        offs = intcomp.uint32s(self.seg(n, "offsets")).tolist()
        if len(offs) != n.count + 1 or (offs and offs[-1] > len(data)):
            raise FormatError("bytes vector's offsets do not fit its bytes")
        t = n.type
        return [_body(t, data[a:b], self.dialect) for a, b in pairwise(offs)]

    def _record(self, n: Node, d: int) -> list[Any]:
        cols = []
        for j, ((name, opt), kid) in enumerate(zip(n.fields, n.kids, strict=True)):
            if not opt:
                self.expect(kid, n.count, f"field {name!r}")
            elif node_len(self.nodes, kid) not in (_EMPTY_COUNT,) and (
                    node_len(self.nodes, kid) > n.count):
                # (a field absent from every record is an empty bytes vector, whose
                # count super writes as len(offsets) - 1 = 0xFFFFFFFF)
                raise FormatError(f"optional field {name!r} holds more values than records")
            vals = self.values(kid, d)
            if opt:
                vals = spread(vals, intcomp.uint32s(self.seg(n, f"nones:{j}")).tolist(),
                               n.count)
            elif len(vals) != n.count:
                raise FormatError(f"field {name!r} holds {len(vals)} values for "
                                  f"{n.count} records")
            cols.append((name, vals))
        return [{name: vals[r] for name, vals in cols if vals[r] is not NONE}
                for r in range(n.count)]

    def union_tags(self, n: Node) -> list[int]:
        return self.union_tag_array(n).tolist()

    def union_tag_array(self, n: Node) -> np.ndarray:
        """A union's (or the root's) tag per value (int64); v23 stores the tags of a
        two-member union as run lengths (see :func:`.vectors23.rle_tags`)."""
        raw = self.seg(n, "tags")
        if self.dialect.version >= 5 and n.kind == "union" and len(n.kids) == 2:
            from .vectors23 import rle_tags

            return rle_tags(intcomp.uint32s(raw) if raw else [], n.count)
        return intcomp.uint32s(raw) if raw else np.zeros(0, dtype=np.int64)

    def _union(self, n: Node, d: int) -> list[Any]:
        tags = self.union_tags(n)
        if len(tags) != n.count:
            raise FormatError(f"{n.kind} vector of {n.count} values has {len(tags)} tags")
        if tags and max(tags) >= len(n.kids):
            raise FormatError(f"{n.kind} tag {max(tags)} has no vector")
        per = np.bincount(np.asarray(tags, dtype=np.int64), minlength=len(n.kids)) if tags else (
            np.zeros(len(n.kids), dtype=np.int64))
        for k, want in zip(n.kids, per.tolist(), strict=True):
            self.expect(k, want, f"{n.kind} member")
        members = [self.values(k, d) for k in n.kids]
        pos = [0] * len(members)
        names = () if self.dialect.version >= 5 else None  # recursive types: v23 only
        types = [node_type(self.nodes, k, names=names) for k in n.kids] if (
            self.typed and n.kind == "union") else None
        out = []
        for t in tags:
            if t >= len(members) or pos[t] >= len(members[t]):
                raise FormatError(f"{n.kind} tag {t} has no value")
            v = members[t][pos[t]]
            pos[t] += 1
            out.append(UnionValue(t, types[t], v) if types is not None and v is not NONE
                       else v)
        return out


V23_KINDS = frozenset(("bool", "ip", "net", "typevalue", "null", "none", "empty", "enum",
                       "any"))


def spread(vals: list[Any], runs: list[int], count: int) -> list[Any]:
    """An optional field's values placed among its absences: ``runs`` alternate absent
    and present lengths, starting with absent ones (no runs: every value present)."""
    if not runs:
        if len(vals) != count:
            raise FormatError("optional field's values do not match its record count")
        return vals
    # the runs' sums are checked before any list is made: a damaged run length
    # (one changed byte) must not allocate the billions of slots it claims
    absent, present = sum(runs[0::2]), sum(runs[1::2])
    if absent + present > count or present > len(vals) or absent + len(vals) != count:
        raise FormatError("optional field's none runs do not match its values")
    out: list[Any] = []
    it = 0
    for j, r in enumerate(runs):
        if j % 2 == 0:
            out.extend([NONE] * r)
        else:
            out.extend(vals[it:it + r])
            it += r
    if len(out) < count and it < len(vals):  # a final run of values the runs leave implicit
        out.extend(vals[it:it + count - len(out)])
        it = len(vals)
    if len(out) != count or it != len(vals):
        raise FormatError("optional field's none runs do not match its values")
    return out


def _prim(t: Type | None, v: int) -> Any:
    if t is None:
        return v
    name = underlying(t).name if isinstance(underlying(t), PrimitiveType) else ""
    if name == "time":
        return np.datetime64(v, "ns")
    if name == "duration":
        return np.timedelta64(v, "ns")
    return v


def _body(t: Type | None, b: bytes | memoryview, dialect: Dialect) -> Any:
    u = underlying(t) if t is not None else None
    if isinstance(u, PrimitiveType):
        return decode_primitive2(u, b, dialect)
    if isinstance(u, EnumType):
        return decode_value(u, b, dialect=dialect)
    raise UnsupportedTypeError(f"primitive vector of type {t}")
