"""Writing Super Binary version 5 (``super`` main): typedefs tables, type values, value
bodies and streams, for CSUP v23 metadata and types sections and for BSUP output
super main reads.

Types here are in super main's form (:func:`main_type`): an optional field is a
field whose type is a union with ``none``, unions are flat and their members in
super's order (:func:`.bsup5.sort_union`), so a union tag written here is the
tag super's reader looks up.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import lz4.block

from ...model.errors import EncodeError, UnsupportedTypeError
from ...model.types import (
    NULL,
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
from ...model.values import UnionValue, Value, infer_type
from ..bsup import append_tagged, encode_primitive, encode_uint, uvarint
from ..bsup.typecodec import typedef_entry
from ..bsup.valuecodec import select_member
from .bsup2 import FusionType, OptField
from .bsup5 import (
    ALL_T,
    FIRST_TYPEDEF,
    NONE,
    NONE_T,
    TD_ARRAY,
    TD_ENUM,
    TD_ERROR,
    TD_FUSION,
    TD_MAP,
    TD_NAMED,
    TD_RECORD,
    TD_SET,
    TD_UNION,
    TV_ARRAY,
    TV_ENUM,
    TV_ERROR,
    TV_FUSION,
    TV_MAP,
    TV_NAMEDEF,
    TV_NAMEREF,
    TV_RECORD,
    TV_SET,
    TV_UNION,
    RecRef,
    sort_union,
)

#: Primitives super main has vectors for (its CSUP writer panics on the others).
MAIN_PRIMITIVES = frozenset(
    "uint8 uint16 uint32 uint64 int8 int16 int32 int64 duration time float16 float32 "
    "float64 bool bytes string ip net type null none all".split())


def main_type(t: Type) -> Type:
    """``t`` in super main's form: optional fields as unions with none, unions flat and
    sorted.  Primitives super main cannot hold raise UnsupportedTypeError."""
    if isinstance(t, PrimitiveType):
        if t.name not in MAIN_PRIMITIVES:
            raise UnsupportedTypeError(f"super main has no vectors for {t.name} values")
        return t
    if isinstance(t, RecordType):
        return RecordType(tuple(
            Field(f.name, sort_union((main_type(f.type), NONE_T)) if isinstance(f, OptField)
                  else main_type(f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(main_type(t.elem))
    if isinstance(t, SetType):
        return SetType(main_type(t.elem))
    if isinstance(t, MapType):
        return MapType(main_type(t.key), main_type(t.value))
    if isinstance(t, UnionType):
        return sort_union(main_type(m) for m in t.types)
    if isinstance(t, ErrorType):
        return ErrorType(main_type(t.inner))
    if isinstance(t, NamedType):
        return NamedType(t.name, main_type(t.inner))
    if isinstance(t, FusionType):
        return FusionType(main_type(t.inner))
    if isinstance(t, EnumType | RecRef):
        return t
    raise UnsupportedTypeError(f"type {t} has no form in super main")


# ------------------------------------------------------------- typedefs ---
#: Version 5's typedef code of each kind of complex type (:func:`typedef_entry`).
_TYPEDEF_CODES: dict[type, int] = {
    RecordType: TD_RECORD, ArrayType: TD_ARRAY, SetType: TD_SET, MapType: TD_MAP,
    UnionType: TD_UNION, EnumType: TD_ENUM, ErrorType: TD_ERROR, NamedType: TD_NAMED,
    FusionType: TD_FUSION,
}


def _named_id(i: int) -> bytes:
    """A named typedef's inner ID: 4 bytes big-endian (it may point forward)."""
    return struct.pack(">I", i)


def _raw_name(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b)) + b


class TypeDefs:
    """A typedefs table being written: a type's ID, its dependencies defined first."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.lut: dict[bytes, int] = {}
        self.ids: dict[Type, int] = {}
        self.count = 0

    def _add(self, entry: bytes) -> int:
        tid = self.lut.get(entry)
        if tid is None:
            tid = FIRST_TYPEDEF + self.count
            self.count += 1
            self.lut[entry] = tid
            self.buf += entry
        return tid

    def lookup(self, t: Type) -> int:
        """The ID of ``t`` (a type in super main's form)."""
        if isinstance(t, PrimitiveType):
            return 30 if t == NONE_T else 31 if t == ALL_T else t.id
        tid = self.ids.get(t)
        if tid is not None:
            return tid
        e = typedef_entry(t, self.lookup, _TYPEDEF_CODES, named_id=_named_id,
                          name=_raw_name)
        if e is None:
            raise UnsupportedTypeError(f"type {t} cannot be written to a typedefs table")
        tid = self._add(bytes(e))
        self.ids[t] = tid
        return tid


def encode_type_value(t: Type) -> bytes:
    """A type value in super main's codes (``EncodeTypeValue``)."""
    out = bytearray()
    _tv(t, out, set())
    return bytes(out)


def _name(out: bytearray, s: str) -> None:
    b = s.encode()
    out += uvarint(len(b)) + b


def _tv(t: Type, out: bytearray, named: set[str]) -> None:
    if isinstance(t, PrimitiveType):
        out.append(30 if t == NONE_T else 31 if t == ALL_T else t.id)
    elif isinstance(t, NamedType | RecRef):
        if t.name in named or isinstance(t, RecRef):
            out.append(TV_NAMEREF)
            _name(out, t.name)
            return
        named.add(t.name)
        out.append(TV_NAMEDEF)
        _name(out, t.name)
        _tv(t.inner, out, named)
    elif isinstance(t, RecordType):
        out.append(TV_RECORD)
        out += uvarint(len(t.fields))
        for f in t.fields:
            _name(out, f.name)
            _tv(f.type, out, named)
    elif isinstance(t, UnionType):
        out.append(TV_UNION)
        out += uvarint(len(t.types))
        for m in t.types:
            _tv(m, out, named)
    elif isinstance(t, ArrayType | SetType):
        out.append(TV_ARRAY if isinstance(t, ArrayType) else TV_SET)
        _tv(t.elem, out, named)
    elif isinstance(t, MapType):
        out.append(TV_MAP)
        _tv(t.key, out, named)
        _tv(t.value, out, named)
    elif isinstance(t, EnumType):
        out.append(TV_ENUM)
        out += uvarint(len(t.symbols))
        for s in t.symbols:
            _name(out, s)
    elif isinstance(t, ErrorType):
        out.append(TV_ERROR)
        _tv(t.inner, out, named)
    elif isinstance(t, FusionType):
        out.append(TV_FUSION)
        _tv(t.inner, out, named)
    else:
        raise UnsupportedTypeError(f"type {t} has no type value in super main")


# --------------------------------------------------------------- values ---
def encode_value(t: Type, v: Any, depth: int = 0) -> bytes | None:
    """A Python value of ``t`` (in super main's form) to its body; None for null.  A
    union value may be a UnionValue of the original type: it is placed by its type.  A
    value of ``any`` (fusion of ``all``) is a Value or a plain value (its type inferred)."""
    if isinstance(t, FusionType) and t.inner == ALL_T:
        return _any(v, depth + 1)
    if isinstance(v, Value):
        v = v.value
    if v is None:
        return None
    if depth > 200:
        raise EncodeError("value nested deeper than 200")
    d = depth + 1
    if isinstance(t, PrimitiveType):
        if t.name == "type":
            if not isinstance(v, Type):
                raise EncodeError(f"type needs a csup_async Type, not {type(v).__name__}")
            return encode_type_value(main_type(v))
        if t == NONE_T:
            return None
        return encode_primitive(t, v)
    if isinstance(t, NamedType | ErrorType):
        return encode_value(t.inner, v, d)
    if isinstance(t, EnumType):
        if isinstance(v, str):
            if v not in t.symbols:
                raise EncodeError(f"{v!r} is not a symbol of {t}")
            return encode_uint(t.symbols.index(v))
        return encode_uint(int(v))
    out = bytearray()
    if isinstance(t, RecordType):
        if not isinstance(v, dict):
            raise EncodeError(f"record {t} needs a dict, not {type(v).__name__}")
        for f in t.fields:
            if f.name in v:
                append_tagged(out, encode_value(f.type, v[f.name], d))
            elif isinstance(f.type, UnionType) and NONE_T in f.type.types:
                append_tagged(out, _union(f.type, NONE, d))
            else:
                raise EncodeError(f"record {t} needs field {f.name!r}")
        return bytes(out)
    if isinstance(t, ArrayType | SetType):
        for x in v:
            append_tagged(out, encode_value(t.elem, x, d))
        return bytes(out)
    if isinstance(t, MapType):
        entries = []
        for k, x in (v.items() if isinstance(v, dict) else v):
            kb, vb = bytearray(), bytearray()
            append_tagged(kb, encode_value(t.key, k, d))
            append_tagged(vb, encode_value(t.value, x, d))
            entries.append((bytes(kb), bytes(vb)))
        for kb, vb in sorted(entries):
            out += kb + vb
        return bytes(out)
    if isinstance(t, UnionType):
        return _union(t, v, d)
    if isinstance(t, FusionType):
        raise UnsupportedTypeError("fusion values are not written")
    raise EncodeError(f"not a type: {t!r}")


def _any(v: Any, d: int) -> bytes:
    """A value of ``any`` as super main marshals a ``super.Value``: its body, then its
    type as a type value (a null is the null body and the type ``null``)."""
    if isinstance(v, Value):
        sub, inner = v.type, v.value
    else:
        sub, inner = (NULL, None) if v is None else (infer_type(v), v)
    mt = main_type(sub)
    out = bytearray()
    append_tagged(out, encode_value(mt, inner, d))
    append_tagged(out, encode_type_value(mt))
    return bytes(out)


def _union(t: UnionType, v: Any, d: int) -> bytes:
    if v is NONE:
        idx, member, inner = t.types.index(NONE_T), NONE_T, None
    elif isinstance(v, UnionValue):
        member, inner = main_type(v.type), v.value
        if member not in t.types:
            raise EncodeError(f"union member {v.type} is not in {t}")
        idx = t.types.index(member)
    else:
        idx, member, inner = select_member(t, v)
    out = bytearray()
    append_tagged(out, encode_uint(idx))
    append_tagged(out, encode_value(member, inner, d))
    return bytes(out)


class Stream:
    """One BSUP version-5 stream: ``add`` values, ``bytes()`` the frames and end of
    stream (uncompressed frames: super reads them as it reads its own)."""

    def __init__(self) -> None:
        self.types = TypeDefs()
        self.values = bytearray()

    def add(self, t: Type, body: bytes | None) -> None:
        self.values += uvarint(self.types.lookup(t))
        append_tagged(self.values, body)

    def bytes(self) -> bytes:
        out = bytearray()
        for kind, payload in ((0, bytes(self.types.buf)), (1, bytes(self.values))):
            if payload:
                n = len(payload)
                out += bytes((0x85, (kind << 4) | (n & 0xF))) + uvarint(n >> 4) + payload
        if out:
            out.append(0xFF)
        return bytes(out)


class StreamEncoder5:
    """Writes (type, value) pairs as BSUP version-5 streams into ``out`` (what a
    SuperDB database of super main holds: data objects, commit objects, journal
    entries), each frame LZ4-compressed when that makes it smaller, as super writes.
    Types are turned into super main's form; ``end_stream`` ends one stream (its own
    typedefs, then its values, then ``0xff``)."""

    def __init__(self, out: bytearray, *, compress: bool = True) -> None:
        self.out = out
        self.compress = compress
        self._stream = Stream()
        self._main: dict[Type, Type] = {}

    def _main_type(self, t: Type) -> Type:
        mt = self._main.get(t)
        if mt is None:
            mt = self._main[t] = main_type(t)
        return mt

    def write(self, t: Type, v: Any) -> None:
        mt = self._main_type(t)
        self._stream.add(mt, encode_value(mt, v))

    def end_stream(self) -> None:
        s, self._stream = self._stream, Stream()
        if not s.values:
            return
        for kind, payload in ((0, bytes(s.types.buf)), (1, bytes(s.values))):
            if payload:
                self.out += _frame(kind, payload, self.compress)
        self.out.append(0xFF)


def _frame(kind: int, payload: bytes, compress: bool) -> bytes:
    flag = 0
    if compress and len(payload) > 64:
        c = b"\x00" + uvarint(len(payload)) + lz4.block.compress(payload, store_size=False)
        if len(c) < len(payload):
            payload, flag = c, 0x40
    n = len(payload)
    return bytes((0x85, (kind << 4) | (n & 0xF) | flag)) + uvarint(n >> 4) + payload


def encode_bsup5(values: Iterable[Value]) -> bytes:
    """A BSUP version-5 stream of ``values`` (``Value(type, python value)``), as super
    main reads it; types turned into super main's form."""
    s = Stream()
    cache: dict[Type, Type] = {}
    for v in values:
        mt = cache.get(v.type)
        if mt is None:
            mt = cache[v.type] = main_type(v.type)
        s.add(mt, encode_value(mt, v.value))
    return s.bytes()
