"""VNG version 3, the columnar layout Zed's ``zq`` v1.4 to v1.12 read and write.

The reader is :mod:`csup_async.vng`; this mirrors it and Zed's writer.  A file
is ``[data][metadata][trailer]``: the metadata is a ZNG (BSUP version 0) stream
of Go structs marshalled under their type names (first the segmap of the root
column of type numbers, then one tree per top-level type, in order of first
appearance), the trailer a ZNG record ``zngio.Trailer{magic: "ZNG Trailer",
type: "vng", version: 3, sections: [data size, metadata size], meta}``.

The tree is Zed's: every record, array, set, map, union and primitive is wrapped
in ``Nulls`` (alternating runs of values and nulls, values first) when it holds
nulls; records hold ``Field``s, arrays ``Lengths`` (int64 per value), unions
``Tags``; everything else (errors and enums included) is a ``Primitive`` of
tagged bodies with Zed's ``Count``, ``Nulls`` and min/max; named types a
``Named``.  Each vector is one segment, LZ4-compressed when smaller, as Zed 1.12
writes it (its skew threshold is unlimited).  A primitive column of at most 256
distinct values is a dictionary, of one distinct value a ``Const``, as zq writes them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, BinaryIO

import lz4.block

from ...format.bsup import (
    StreamEncoder,
    append_tagged,
    decode_int,
    decode_uint,
    decode_value,
    encode_int,
    encode_value,
    iter_tagged,
    split_tagged,
)
from ...model.errors import EncodeError
from ...model.types import (
    INT32,
    INT64,
    STRING,
    TYPE,
    UINT8,
    UINT32,
    ArrayType,
    EnumType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ...model.values import UnionValue

__all__ = ["SEGMENT_THRESH", "VERSION", "write_vng3"]

VERSION = 3
#: Zed 1.12's defaults, recorded in the trailer (``zq -f vng``).
SEGMENT_THRESH = 5 << 20
SKEW_THRESH = (1 << 63) - 1

SEGMENT = NamedType("Segment", RecordType((
    Field("Offset", INT64), Field("Length", INT32), Field("MemLength", INT32),
    Field("CompressionFormat", UINT8), Field("Count", UINT32))))
SEGMAP = ArrayType(SEGMENT)
TRAILER = NamedType("zngio.Trailer", RecordType((
    Field("magic", STRING), Field("type", STRING), Field("version", INT64),
    Field("sections", ArrayType(INT64)),
    Field("meta", NamedType("vng.FileMeta", RecordType((
        Field("skew_thresh", INT64), Field("segment_thresh", INT64))))))))

_ORDERED = frozenset({"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                      "int64", "duration", "time", "float16", "float32", "float64", "bool",
                      "bytes", "string"})
_FLOATS = {"float16": "<e", "float32": "<f", "float64": "<d"}


def _rec(name: str, *fields: tuple[str, Type]) -> NamedType:
    return NamedType(name, RecordType(tuple(Field(n, t) for n, t in fields)))


def _list_of(parts: list[tuple[Type, Any]]) -> tuple[Type, Any]:
    """A Go slice of interface values as Zed marshals it: an array of the one element
    type, or of the union of the distinct ones."""
    distinct: list[Type] = []
    for t, _ in parts:
        if t not in distinct:
            distinct.append(t)
    if len(distinct) == 1:
        return ArrayType(distinct[0]), [v for _, v in parts]
    if not distinct:
        return ArrayType(STRING), []
    from .canon import sorted_union

    ut = sorted_union(distinct)  # zq interns a union sorted: its indices follow that order
    return ArrayType(ut), [UnionValue(ut.types.index(t), t, v) for t, v in parts]


class _Spiller:
    def __init__(self) -> None:
        self.data = bytearray()

    def segmap(self, raw: bytes, count: int) -> list[dict[str, int]] | None:
        if not raw:
            return None
        stored, fmt = raw, 0
        c = lz4.block.compress(raw, store_size=False)
        if len(c) < len(raw):
            stored, fmt = c, 1
        seg = {"Offset": len(self.data), "Length": len(stored), "MemLength": len(raw),
               "CompressionFormat": fmt, "Count": count}
        self.data += stored
        return [seg]


class _Ints:
    """Zed's Int64Writer: int64 values as tagged bodies."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.n = 0

    def write(self, v: int) -> None:
        append_tagged(self.buf, encode_int(v))
        self.n += 1

    def segmap(self, sp: _Spiller) -> list[dict[str, int]] | None:
        return sp.segmap(bytes(self.buf), self.n)


class _W:
    def write(self, body: bytes | None) -> None:
        raise NotImplementedError

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        raise NotImplementedError


def _writer(t: Type) -> _W:
    if isinstance(t, NamedType):
        return _Named(t)
    if isinstance(t, RecordType):
        return _Nulls(_Record(t))
    if isinstance(t, (ArrayType, SetType)):
        return _Nulls(_Array(t))
    if isinstance(t, MapType):
        return _Nulls(_Map(t))
    if isinstance(t, UnionType):
        return _Nulls(_Union(t))
    if isinstance(t, (PrimitiveType, EnumType, ErrorType)):
        return _Nulls(_Primitive(t))
    raise EncodeError(f"type {t} has no form in VNG (Zed 1.12)")


class _Named(_W):
    def __init__(self, t: NamedType) -> None:
        self.t, self.inner = t, _writer(t.inner)

    def write(self, body: bytes | None) -> None:
        self.inner.write(body)

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        it, iv = self.inner.meta(sp)
        return _rec("Named", ("Name", STRING), ("Values", it)), {"Name": self.t.name,
                                                                   "Values": iv}


class _Nulls(_W):
    """Runs of values and nulls (values first), kept only when a null was seen."""

    def __init__(self, values: _W) -> None:
        self.values = values
        self.runs = _Ints()
        self.run = 0
        self.null = False
        self.dirty = False

    def write(self, body: bytes | None) -> None:
        if body is not None:
            if self.null:
                self.runs.write(self.run)
                self.run, self.null = 0, False
            self.run += 1
            self.values.write(body)
            return
        self.dirty = True
        if not self.null:
            self.runs.write(self.run)
            self.run, self.null = 0, True
        self.run += 1

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        if self.dirty:
            self.runs.write(self.run)
            runs = self.runs.segmap(sp)
        vt, vv = self.values.meta(sp)
        if not self.dirty:
            return vt, vv
        return _rec("Nulls", ("Runs", SEGMAP), ("Values", vt)), {"Runs": runs, "Values": vv}


class _Record(_W):
    def __init__(self, t: RecordType) -> None:
        self.t = t
        self.fields = [_writer(f.type) for f in t.fields]

    def write(self, body: bytes | None) -> None:
        assert body is not None
        parts = split_tagged(body)
        if len(parts) != len(self.fields):
            raise EncodeError(f"record value does not match {self.t}")
        for w, p in zip(self.fields, parts, strict=True):
            w.write(None if p is None else bytes(p))

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        parts = []
        for f, w in zip(self.t.fields, self.fields, strict=True):
            vt, vv = w.meta(sp)
            parts.append((_rec("Field", ("Name", STRING), ("Values", vt)),
                          {"Name": f.name, "Values": vv}))
        lt, lv = _list_of(parts)
        return _rec("Record", ("Fields", lt)), {"Fields": lv}


class _Array(_W):
    def __init__(self, t: ArrayType | SetType) -> None:
        self.name = "Array" if isinstance(t, ArrayType) else "Set"
        self.values = _writer(t.elem)
        self.lengths = _Ints()

    def write(self, body: bytes | None) -> None:
        assert body is not None
        n = 0
        for p in iter_tagged(body, 0, len(body)):
            self.values.write(None if p is None else bytes(p))
            n += 1
        self.lengths.write(n)

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        lens = self.lengths.segmap(sp)
        vt, vv = self.values.meta(sp)
        return (_rec(self.name, ("Lengths", SEGMAP), ("Values", vt)),
                {"Lengths": lens, "Values": vv})


class _Map(_W):
    def __init__(self, t: MapType) -> None:
        self.keys, self.values = _writer(t.key), _writer(t.value)
        self.lengths = _Ints()

    def write(self, body: bytes | None) -> None:
        assert body is not None
        parts = split_tagged(body)
        for i in range(0, len(parts) - 1, 2):
            k, v = parts[i], parts[i + 1]
            self.keys.write(None if k is None else bytes(k))
            self.values.write(None if v is None else bytes(v))
        self.lengths.write(len(parts) // 2)

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        lens = self.lengths.segmap(sp)
        kt, kv = self.keys.meta(sp)
        vt, vv = self.values.meta(sp)
        return (_rec("Map", ("Lengths", SEGMAP), ("Keys", kt), ("Values", vt)),
                {"Lengths": lens, "Keys": kv, "Values": vv})


class _Union(_W):
    def __init__(self, t: UnionType) -> None:
        self.members = [_writer(m) for m in t.types]
        self.tags = _Ints()

    def write(self, body: bytes | None) -> None:
        assert body is not None
        parts = split_tagged(body)
        if len(parts) != 2 or parts[0] is None:
            raise EncodeError("union value is not a tag and a value")
        idx = decode_int(parts[0])
        if not 0 <= idx < len(self.members):
            raise EncodeError(f"union tag {idx} out of range")
        self.tags.write(idx)
        self.members[idx].write(None if parts[1] is None else bytes(parts[1]))

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        tags = self.tags.segmap(sp)
        lt, lv = _list_of([m.meta(sp) for m in self.members])
        return _rec("Union", ("Tags", SEGMAP), ("Values", lt)), {"Tags": tags, "Values": lv}


def _key(t: Type, body: bytes) -> Any:
    name = getattr(t, "name", "")
    if name.startswith("uint") or name == "bool":
        return decode_uint(body)
    if name.startswith("int") or name in ("duration", "time"):
        return decode_int(body)
    if name in _FLOATS:
        f = struct.unpack(_FLOATS[name], body)[0]
        return None if f != f else f
    return body  # bytes, string: byte order


#: Zed's ``vector.MaxDictSize``: a column of more distinct values has no dictionary.
MAX_DICT_SIZE = 256


class _Primitive(_W):
    """Zed's PrimitiveWriter: tagged bodies; for a primitive or enum type of at most
    :data:`MAX_DICT_SIZE` distinct values a dictionary instead (the segment holds one
    byte per value, its entry's index; entries in value order, each with its count),
    and for one distinct value a ``Const`` (the value and the count), as zq writes."""

    def __init__(self, t: Type) -> None:
        self.t = t
        self.buf = bytearray()
        self.n = 0
        self.ordered = isinstance(t, PrimitiveType) and t.name in _ORDERED
        self.lo: tuple[Any, bytes] | None = None
        self.hi: tuple[Any, bytes] | None = None
        #: distinct bodies and their counts (Zed keeps one per primitive column)
        self.dict: dict[bytes, int] | None = ({} if isinstance(t, PrimitiveType | EnumType)
                                              else None)

    def write(self, body: bytes | None) -> None:
        assert body is not None
        append_tagged(self.buf, body)
        self.n += 1
        if self.dict is not None:
            self.dict[body] = self.dict.get(body, 0) + 1
            if len(self.dict) > MAX_DICT_SIZE:
                self.dict = None
        if self.ordered:
            k = _key(self.t, body)
            if k is None:
                return
            if self.lo is None or k < self.lo[0]:
                self.lo = (k, body)
            if self.hi is None or k > self.hi[0]:
                self.hi = (k, body)

    def meta(self, sp: _Spiller) -> tuple[Type, Any]:
        if self.dict is not None and len(self.dict) == 1:
            [(body, count)] = self.dict.items()
            return (_rec("Const", ("Value", self.t), ("Count", UINT32)),
                    {"Value": decode_value(self.t, body, typed=True), "Count": count})
        entries = None
        raw = bytes(self.buf)
        if self.dict:
            keys = sorted(self.dict, key=lambda b: self._order(b))
            index = {b: i for i, b in enumerate(keys)}
            raw = bytes(index[b] for b in split_tagged(raw))  # (bodies, none null)
            entries = [{"Value": decode_value(self.t, b, typed=True), "Count": self.dict[b]}
                       for b in keys]
        segmap = sp.segmap(raw, self.n)
        entry = _rec("DictEntry", ("Value", self.t), ("Count", UINT32))
        t = _rec("Primitive", ("Type", TYPE), ("Segmap", SEGMAP), ("Dict", ArrayType(entry)),
                 ("Min", self.t), ("Max", self.t), ("Count", UINT32), ("Nulls", UINT32))
        lo = decode_value(self.t, self.lo[1], typed=True) if self.lo else None
        hi = decode_value(self.t, self.hi[1], typed=True) if self.hi else None
        return t, {"Type": self.t, "Segmap": segmap, "Dict": entries, "Min": lo, "Max": hi,
                   "Count": self.n, "Nulls": 0}

    def _order(self, body: bytes) -> tuple[int, Any]:
        """A dictionary's order: Zed sorts its entries by value (numbers as numbers,
        strings and bytes by their bytes; a NaN last); other types by their bodies."""
        k = _key(self.t, body) if self.ordered else body
        return (1, body) if k is None else (0, k)


def write_vng3(out: BinaryIO, values: Iterable[tuple[Type, Any]]) -> int:
    """Write ``(type, value)`` pairs (this library's model, as ``read_values`` gives
    them) as one VNG version-3 object; return the number of values."""
    order: dict[Type, int] = {}
    writers: list[_W] = []
    types: list[Type] = []
    root = _Ints()
    n = 0
    for t, v in values:
        tag = order.get(t)
        if tag is None:
            tag = order[t] = len(writers)
            writers.append(_writer(t))
            types.append(t)
        root.write(tag)
        writers[tag].write(encode_value(t, v))
        n += 1
    sp = _Spiller()
    root_map = root.segmap(sp)
    metas = [w.meta(sp) for w in writers]
    meta = bytearray()
    enc = StreamEncoder(meta)
    enc.write(SEGMAP, root_map)
    for mt, mv in metas:
        enc.write(mt, mv)
    enc.end_stream()
    trailer = bytearray()
    tenc = StreamEncoder(trailer, compress=False)
    tenc.write(TRAILER, {"magic": "ZNG Trailer", "type": "vng", "version": VERSION,
                         "sections": [len(sp.data), len(meta)],
                         "meta": {"skew_thresh": SKEW_THRESH,
                                  "segment_thresh": SEGMENT_THRESH}})
    tenc.end_stream()
    out.write(bytes(sp.data))
    out.write(bytes(meta))
    out.write(bytes(trailer))
    return n
