"""CSUP version 16, the header layout ``super`` v0.3.0 writes and reads.

The reader is :mod:`csup_async.superdb`; this mirrors it.  A file is a sequence
of objects (at most :data:`MAX_OBJECT_VALUES` values each, as ``super`` cuts
them): a 36-byte header (``CSUP``, version 16, metadata/type/data sizes, the
root vector's ID), the metadata (a BSUP version-2 stream of one value per
vector, children before parents; the value's named type is the vector kind:
``Int``, ``Uint``, ``Float``, ``Bytes``, ``Primitive``, ``Const``, ``Record``,
``Array``, ``Set``, ``Map``, ``Union``, ``Named``, ``Error``, ``Dynamic``), then
the data.  Integers (ints, uints, offsets, tags) are stored in the integer coding
of :mod:`.intcomp`; floats as float64 words, strings, bytes and type values as
one byte run plus offsets, other primitives as tagged bodies; runs of bytes are
LZ4-compressed when that is smaller.  Each vector keeps super's own min/max.

Values arrive in SuperDB's model (:mod:`.supermodel`: no typed nulls).  An
optional field's vector holds its present values, and its ``Nones`` segment the
runs of absent and present rows, as super writes them; a fusion vector the
supertype's values and each value's subtype as an ID into the object's types
section (a BSUP version-2 stream of type values).  Not written: dictionaries
(``super`` writes them; plain vectors read the same).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, BinaryIO

import lz4.block
import numpy as np

from ...format.bsup import append_tagged, decode_int, decode_uint, select_member
from ...format.superdb.bsup2 import V2, FusionType, OptField
from ...model.errors import EncodeError
from ...model.types import (
    BOOL,
    BYTES,
    FLOAT64,
    INT64,
    NULL,
    STRING,
    TYPE,
    UINT8,
    UINT32,
    UINT64,
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
from .bsupn import StreamEncoderN, encode_body, encode_type_value_n
from .intcomp import encode_int64s, encode_uint32s, encode_uint64s

__all__ = ["MAX_OBJECT_VALUES", "VERSION", "write_csup16"]

VERSION = 16
MAX_OBJECT_VALUES = 120_000

_SIGNED = frozenset({"int8", "int16", "int32", "int64", "duration", "time"})
_UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
_FLOATS = {"float16": "<e", "float32": "<f", "float64": "<d"}
_BYTES = frozenset({"bytes", "string", "type"})
_SCODE = frozenset({"bool", "ip", "net", "null"})

SEG = NamedType("Segment", RecordType((
    Field("Offset", UINT64), Field("Length", UINT64), Field("MemLength", UINT64),
    Field("CompressionFormat", UINT8))))
ID = NamedType("ID", UINT32)
_ZERO_SEG = {"Offset": 0, "Length": 0, "MemLength": 0, "CompressionFormat": 0}


def _rec(name: str, *fields: tuple[str, Type]) -> NamedType:
    return NamedType(name, RecordType(tuple(Field(n, t) for n, t in fields)))


FIELD = _rec("Field", ("Name", STRING), ("Values", ID), ("Opt", BOOL), ("Nones", SEG))
RECORD = _rec("Record", ("Length", UINT32), ("Fields", ArrayType(FIELD)))
ARRAY = _rec("Array", ("Length", UINT32), ("Lengths", SEG), ("Values", ID))
SET = _rec("Set", ("Length", UINT32), ("Lengths", SEG), ("Values", ID))
MAP = _rec("Map", ("Length", UINT32), ("Lengths", SEG), ("Keys", ID), ("Values", ID))
UNION = _rec("Union", ("Length", UINT32), ("Tags", SEG), ("Values", ArrayType(ID)))
NAMED = _rec("Named", ("Name", STRING), ("Values", ID))
ERROR = _rec("Error", ("Values", ID))
DYNAMIC = _rec("Dynamic", ("Tags", SEG), ("Values", ArrayType(ID)), ("Length", UINT32))
FUSION = _rec("Fusion", ("Values", ID), ("Subtypes", SEG))


class _Object:
    """One object being laid out: its data section and its metadata values by ID."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.metas: list[tuple[Type, Any]] = []
        #: the types section: fusion subtypes by their type values, IDs in first use
        self.subtypes: dict[bytes, tuple[int, Type]] = {}

    def subtype_id(self, t: Type) -> int:
        key = encode_type_value_n(t, V2)
        got = self.subtypes.get(key)
        if got is None:
            got = self.subtypes[key] = (len(self.subtypes), t)
        return got[0]

    def types_section(self) -> bytes:
        """A BSUP version-2 stream of the subtypes (values of type ``type``) by ID."""
        if not self.subtypes:
            return b""
        out = bytearray()
        enc = StreamEncoderN(out, 2)
        for _, t in sorted(self.subtypes.values(), key=lambda x: x[0]):
            enc.write(TYPE, t)
        enc.end_stream()
        return bytes(out)

    def enter(self, t: Type, v: Any) -> int:
        self.metas.append((t, v))
        return len(self.metas) - 1

    def raw(self, b: bytes) -> dict[str, int]:
        seg = {"Offset": len(self.data), "Length": len(b), "MemLength": len(b),
               "CompressionFormat": 0}
        self.data += b
        return seg

    def packed(self, b: bytes) -> dict[str, int]:
        """A byte run, LZ4 when that is smaller (``compressBuffer``)."""
        if not b:
            return {"Offset": len(self.data), "Length": 0, "MemLength": 0,
                    "CompressionFormat": 0}
        c = lz4.block.compress(b, store_size=False)
        if len(c) < len(b):
            seg = {"Offset": len(self.data), "Length": len(c), "MemLength": len(b),
                   "CompressionFormat": 1}
            self.data += c
            return seg
        return self.raw(b)

    def ints(self, encoded: bytes, count: int) -> dict[str, int]:
        """An integer vector's segment: ``super`` keeps the stored size in MemLength
        and count x word size in Length (its reader reads MemLength bytes)."""
        seg = {"Offset": len(self.data), "Length": count, "MemLength": len(encoded),
               "CompressionFormat": 0}
        self.data += encoded
        return seg

    def uint32s(self, vals: list[int]) -> dict[str, int]:
        return self.ints(encode_uint32s(vals), len(vals) * 4)


class _Enc:
    def write(self, v: Any) -> None:
        raise NotImplementedError

    def finish(self, o: _Object) -> int:
        raise NotImplementedError


def _encoder(t: Type) -> _Enc:
    if isinstance(t, NamedType):
        return _NamedEnc(t)
    if isinstance(t, ErrorType):
        return _ErrorEnc(t)
    if isinstance(t, RecordType):
        return _RecordEnc(t)
    if isinstance(t, (ArrayType, SetType)):
        return _ArrayEnc(t)
    if isinstance(t, MapType):
        return _MapEnc(t)
    if isinstance(t, UnionType):
        return _UnionEnc(t)
    if isinstance(t, FusionType):
        return _FusionEnc(t)
    if isinstance(t, EnumType):
        return _ScodeEnc(t)
    if isinstance(t, PrimitiveType):
        if t.name in _SIGNED or t.name in _UNSIGNED or t.name in _FLOATS:
            return _NumEnc(t)
        if t.name in _BYTES:
            return _BytesEnc(t)
        if t.name in _SCODE:
            return _ScodeEnc(t)
    raise EncodeError(f"type {t} has no vector in CSUP version 16 (super v0.3.0)")


class _NamedEnc(_Enc):
    def __init__(self, t: NamedType) -> None:
        self.t, self.inner = t, _encoder(t.inner)

    def write(self, v: Any) -> None:
        self.inner.write(v)

    def finish(self, o: _Object) -> int:
        return o.enter(NAMED, {"Name": self.t.name, "Values": self.inner.finish(o)})


class _ErrorEnc(_Enc):
    def __init__(self, t: ErrorType) -> None:
        self.inner = _encoder(t.inner)

    def write(self, v: Any) -> None:
        self.inner.write(v)

    def finish(self, o: _Object) -> int:
        return o.enter(ERROR, {"Values": self.inner.finish(o)})


class _RecordEnc(_Enc):
    """A record vector; an optional field (``x?:T``) keeps only its present values,
    and its ``Nones`` the runs of absent and present rows (:func:`none_runs`)."""

    def __init__(self, t: RecordType) -> None:
        self.t = t
        self.fields = [_encoder(f.type) for f in t.fields]
        #: for each optional field, the rows where it is present
        self.present: dict[int, list[int]] = {
            i: [] for i, f in enumerate(t.fields) if isinstance(f, OptField)}
        self.n = 0

    def write(self, v: Any) -> None:
        for i, (f, e) in enumerate(zip(self.t.fields, self.fields, strict=True)):
            rows = self.present.get(i)
            if rows is not None:
                if f.name not in v:
                    continue
                rows.append(self.n)
            e.write(v[f.name])
        self.n += 1

    def finish(self, o: _Object) -> int:
        fields = []
        for i, (f, e) in enumerate(zip(self.t.fields, self.fields, strict=True)):
            rows = self.present.get(i)
            nones = dict(_ZERO_SEG)
            if rows is not None:  # (super lays the runs out before the values)
                nones = o.uint32s(none_runs(rows, self.n))
            fields.append({"Name": f.name, "Values": e.finish(o), "Opt": rows is not None,
                           "Nones": nones})
        return o.enter(RECORD, {"Length": self.n, "Fields": fields})


def none_runs(present: list[int], n: int) -> list[int]:
    """The runs of an optional field over ``n`` rows, as super v0.3.0 keeps them
    (``vector.RLE``): absent, present, absent, ... starting with absent (that first
    run may be 0), each other run non-zero; none at all when every row has the field."""
    runs: list[int] = []
    at = 0  # the next row not yet in a run
    start = 0  # the first row of the present run being counted
    counting = False
    for r in present:
        if counting and r == at:
            at += 1
            continue
        if counting:
            runs.append(at - start)  # the present run that ended
        runs.append(r - at)  # the absent run before this row
        start, at, counting = r, r + 1, True
    if not counting:
        return [n]  # every row absent
    runs.append(at - start)
    if at < n:
        runs.append(n - at)
    elif runs == [0, n]:
        return []
    return runs


class _FusionEnc(_Enc):
    """A fusion vector: the supertype's values, and each value's subtype as an ID
    into the object's types section (:meth:`_Object.subtype_id`), as super writes."""

    def __init__(self, t: FusionType) -> None:
        self.t = t
        self.values = _encoder(t.inner)
        self.subtypes: list[Type] = []

    def write(self, v: Any) -> None:
        from .fusion import fusion_parts

        sub, sv = fusion_parts(self.t, v)
        self.subtypes.append(sub)
        self.values.write(sv)

    def finish(self, o: _Object) -> int:
        vid = self.values.finish(o)
        subs = o.uint32s([o.subtype_id(s) for s in self.subtypes])
        return o.enter(FUSION, {"Values": vid, "Subtypes": subs})


class _ArrayEnc(_Enc):
    def __init__(self, t: ArrayType | SetType) -> None:
        self.kind = ARRAY if isinstance(t, ArrayType) else SET
        self.values = _encoder(t.elem)
        self.offsets = [0]

    def write(self, v: Any) -> None:
        for x in v:
            self.values.write(x)
        self.offsets.append(self.offsets[-1] + len(v))

    def finish(self, o: _Object) -> int:
        lens = o.uint32s(self.offsets)
        vid = self.values.finish(o)
        return o.enter(self.kind, {"Length": len(self.offsets) - 1, "Lengths": lens,
                                   "Values": vid})


class _MapEnc(_Enc):
    def __init__(self, t: MapType) -> None:
        self.keys, self.values = _encoder(t.key), _encoder(t.value)
        self.offsets = [0]

    def write(self, v: Any) -> None:
        items = list(v.items()) if isinstance(v, dict) else list(v)
        for k, x in items:
            self.keys.write(k)
            self.values.write(x)
        self.offsets.append(self.offsets[-1] + len(items))

    def finish(self, o: _Object) -> int:
        lens = o.uint32s(self.offsets)
        kid = self.keys.finish(o)
        vid = self.values.finish(o)
        return o.enter(MAP, {"Length": len(self.offsets) - 1, "Lengths": lens,
                             "Keys": kid, "Values": vid})


class _UnionEnc(_Enc):
    def __init__(self, t: UnionType) -> None:
        self.t = t
        self.members = [_encoder(m) for m in t.types]
        self.tags: list[int] = []

    def write(self, v: Any) -> None:
        idx, _, inner = select_member(self.t, v)
        self.tags.append(idx)
        self.members[idx].write(inner)

    def finish(self, o: _Object) -> int:
        tags = o.uint32s(self.tags)
        ids = [m.finish(o) for m in self.members]
        return o.enter(UNION, {"Length": len(self.tags), "Tags": tags, "Values": ids})


class _NumEnc(_Enc):
    """Int, Uint and Float vectors (with super's min/max)."""

    def __init__(self, t: PrimitiveType) -> None:
        self.t = t
        self.vals: list[Any] = []

    def write(self, v: Any) -> None:
        body = encode_body(self.t, v, V2)
        if body is None:
            raise EncodeError(f"a null {self.t} in a vector (convert values first)")
        name = self.t.name
        if name in _SIGNED:
            self.vals.append(decode_int(body))
        elif name in _UNSIGNED:
            self.vals.append(decode_uint(body))
        else:
            self.vals.append(float(struct.unpack(_FLOATS[name], body)[0]))

    def finish(self, o: _Object) -> int:
        name, vals = self.t.name, self.vals
        lo = hi = vals[0] if vals else 0
        for x in vals:  # sequential, as super's loop (a NaN first stays the bound)
            if x < lo:
                lo = x
            if x > hi:
                hi = x
        if name in _FLOATS:
            data = np.array(vals, dtype="<f8").tobytes()
            loc = o.packed(data)
            t = _rec("Float", ("Type", TYPE), ("Location", SEG), ("Min", FLOAT64),
                     ("Max", FLOAT64), ("Count", UINT32))
            return o.enter(t, {"Type": self.t, "Location": loc, "Min": float(lo),
                               "Max": float(hi), "Count": len(vals)})
        if name in _SIGNED:
            loc = o.ints(encode_int64s(vals), len(vals) * 8)
            t = _rec("Int", ("Type", TYPE), ("Location", SEG), ("Min", INT64),
                     ("Max", INT64), ("Count", UINT32))
        else:
            loc = o.ints(encode_uint64s(vals), len(vals) * 8)
            t = _rec("Uint", ("Type", TYPE), ("Location", SEG), ("Min", UINT64),
                     ("Max", UINT64), ("Count", UINT32))
        return o.enter(t, {"Type": self.t, "Location": loc, "Min": lo, "Max": hi,
                           "Count": len(vals)})


class _BytesEnc(_Enc):
    def __init__(self, t: PrimitiveType) -> None:
        self.t = t
        self.buf = bytearray()
        self.offsets = [0]
        self.lo: bytes | None = None
        self.hi: bytes | None = None

    def write(self, v: Any) -> None:
        body = encode_body(self.t, v, V2)
        if body is None:
            raise EncodeError(f"a null {self.t} in a vector (convert values first)")
        if self.lo is None or body < self.lo:
            self.lo = body
        if self.hi is None or body > self.hi:
            self.hi = body
        self.buf += body
        self.offsets.append(len(self.buf))

    def finish(self, o: _Object) -> int:
        seg = o.packed(bytes(self.buf))
        offs = o.uint32s(self.offsets)
        mt = BYTES if self.lo is not None else NULL
        t = _rec("Bytes", ("Type", TYPE), ("Bytes", SEG), ("Offsets", SEG), ("Min", mt),
                 ("Max", mt), ("Count", UINT32))
        return o.enter(t, {"Type": self.t, "Bytes": seg, "Offsets": offs, "Min": self.lo,
                           "Max": self.hi, "Count": len(self.offsets) - 1})


def _order_key(t: Type, body: bytes) -> Any:
    """super's order of values of one scode type, for min/max (None: not kept)."""
    if isinstance(t, EnumType) or t.name == "bool":
        return decode_uint(body)
    if t.name == "ip":
        return (len(body), body)
    if t.name == "net":
        half = len(body) // 2
        return (half, body[:half], body[half:])
    return None


class _ScodeEnc(_Enc):
    """Tagged bodies (bool, ip, net, enum, null): super's ``Primitive`` vector; a
    vector of nulls is a ``Const`` of null, as super writes it."""

    def __init__(self, t: Type) -> None:
        self.t = t
        self.buf = bytearray()
        self.n = 0
        self.lo: tuple[Any, Any] | None = None
        self.hi: tuple[Any, Any] | None = None

    def write(self, v: Any) -> None:
        body = None if self.t == NULL else encode_body(self.t, v, V2)
        self.n += 1
        append_tagged(self.buf, body)
        if body is not None:
            k = _order_key(self.t, body)
            if k is not None:
                if self.lo is None or k < self.lo[0]:
                    self.lo = (k, v)
                if self.hi is None or k > self.hi[0]:
                    self.hi = (k, v)

    def finish(self, o: _Object) -> int:
        if self.t == NULL and self.n:
            return o.enter(_rec("Const", ("Value", NULL), ("Count", UINT32)),
                           {"Value": None, "Count": self.n})
        seg = o.packed(bytes(self.buf))
        mt = self.t if self.lo is not None else NULL
        t = _rec("Primitive", ("Type", TYPE), ("Location", SEG), ("Min", mt), ("Max", mt),
                 ("Count", UINT32))
        return o.enter(t, {"Type": self.t, "Location": seg,
                           "Min": self.lo[1] if self.lo else None,
                           "Max": self.hi[1] if self.hi else None, "Count": self.n})


def _check_names(t: Type, seen: dict[str, Type], depth: int = 0) -> None:
    """EncodeError when one name is bound to two types in one object (nulls that became
    ``null`` can do that): super reads a name as one type, so the values would change."""
    if depth > 200:
        return
    if isinstance(t, NamedType):
        if seen.setdefault(t.name, t.inner) != t.inner:
            raise EncodeError(f"named type {t.name!r} would be bound to two types in one "
                              f"CSUP object ({seen[t.name]} and {t.inner})")
        _check_names(t.inner, seen, depth + 1)
        return
    for f in getattr(t, "fields", ()):
        _check_names(f.type, seen, depth + 1)
    for attr in ("inner", "elem", "key", "value"):
        c = getattr(t, attr, None)
        if isinstance(c, Type):
            _check_names(c, seen, depth + 1)
    for m in getattr(t, "types", ()):
        _check_names(m, seen, depth + 1)


def _write_object(out: BinaryIO, values: list[tuple[Type, Any]]) -> int:
    order: dict[Type, int] = {}
    encs: list[_Enc] = []
    tags: list[int] = []
    names: dict[str, Type] = {}
    for t, v in values:
        tag = order.get(t)
        if tag is None:
            _check_names(t, names)
            tag = order[t] = len(encs)
            encs.append(_encoder(t))
        tags.append(tag)
        encs[tag].write(v)
    o = _Object()
    if len(encs) == 1:
        root = encs[0].finish(o)
    else:
        tseg = o.uint32s(tags)
        ids = [e.finish(o) for e in encs]
        root = o.enter(DYNAMIC, {"Tags": tseg, "Values": ids, "Length": len(tags)})
    meta = bytearray()
    enc = StreamEncoderN(meta, 2)
    for t, v in o.metas:
        enc.write(t, v)
    enc.end_stream()
    types = o.types_section()
    header = b"CSUP" + struct.pack("<IQQQI", VERSION, len(meta), len(types), len(o.data),
                                   root)
    out.write(header)
    out.write(bytes(meta))
    out.write(types)
    out.write(bytes(o.data))
    return len(header) + len(meta) + len(types) + len(o.data)


def write_csup16(out: BinaryIO, values: Iterable[tuple[Type, Any]]) -> int:
    """Write ``(type, value)`` pairs (SuperDB's model: see :mod:`.supermodel`) as CSUP
    version 16; return the number of values.  No values: an empty file, as super."""
    n = 0
    batch: list[tuple[Type, Any]] = []
    for tv in values:
        batch.append(tv)
        n += 1
        if len(batch) >= MAX_OBJECT_VALUES:
            _write_object(out, batch)
            batch = []
    if batch:
        _write_object(out, batch)
    return n
