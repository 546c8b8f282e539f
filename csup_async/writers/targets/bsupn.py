"""Super Binary versions 1 and 2, written: what ``super`` v0.2.0 (1) and v0.3.0 (2) read.

The reader of these versions is :mod:`csup_async.superdb.bsup2`; this is its
mirror.  Against version 0 (:mod:`csup_async.bsup`, what Zed's ``zq`` reads) a
frame starts with a version byte (``0x80 | version``) before the same header, a
record typedef gives each field an optional flag byte, a union value's member
index is an unsigned integer, version 2 adds the ``none`` primitive (ID 30) so
typedef IDs and the codes of type values start at 31 instead of 30, and a type
value of a record carries a bitmap of its optional fields.  Everything else
(integers, floats, strings, nets, frames' LZ4 blocks) is version 0's, and the
primitives' bodies come from that codec.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import lz4.block

from ...format.bsup import (
    append_tagged,
    counted,
    encode_primitive,
    encode_uint,
    select_member,
    uvarint,
)
from ...format.bsup.typecodec import typedef_entry
from ...format.superdb.bsup2 import V1, V2, Dialect, FusionType, OptField
from ...model.errors import EncodeError
from ...model.types import (
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
from ...model.values import Value

__all__ = ["DIALECTS", "StreamEncoderN", "encode_body", "encode_type_value_n"]

#: BSUP version -> the facts of its dialect (shared with the reader).
DIALECTS: dict[int, Dialect] = {1: V1, 2: V2}
MAX_DEPTH = 200

# typedef codes (the same numbers in every version; fusion from version 2)
_REC, _ARR, _SET, _MAP, _UNION, _ENUM, _ERR, _NAMED, _FUSION = range(9)
_V1_CODES: dict[type, int] = {
    RecordType: _REC, ArrayType: _ARR, SetType: _SET, MapType: _MAP, UnionType: _UNION,
    EnumType: _ENUM, ErrorType: _ERR, NamedType: _NAMED,
}
_V2_CODES = {**_V1_CODES, FusionType: _FUSION}


def _opt_flag(f: Field) -> int:
    """A record typedef's flag after each field: 1 for an optional field."""
    return 1 if isinstance(f, OptField) else 0


def encode_type_value_n(t: Type, d: Dialect) -> bytes:
    """A type value in dialect ``d``: primitives by ID, complex types from
    ``d.type_value_base`` (record 0, array 1, ... named definition 7, reference 8,
    fusion 9); a record's optional fields as a bitmap after its field count."""
    out = bytearray()
    _tv(t, out, {}, d)
    return bytes(out)


def _tv(t: Type, out: bytearray, names: dict[str, Type], d: Dialect) -> None:
    base = d.type_value_base
    if isinstance(t, PrimitiveType):
        out.append(t.id)
    elif isinstance(t, RecordType):
        out.append(base + 0)
        n = len(t.fields)
        out += uvarint(n)
        bits = bytearray((n + 7) >> 3)
        for k, f in enumerate(t.fields):
            if isinstance(f, OptField):
                bits[k >> 3] |= 1 << (k & 7)
        out += bits
        for f in t.fields:
            out += counted(f.name)
            _tv(f.type, out, names, d)
    elif isinstance(t, (ArrayType, SetType)):
        out.append(base + (1 if isinstance(t, ArrayType) else 2))
        _tv(t.elem, out, names, d)
    elif isinstance(t, MapType):
        out.append(base + 3)
        _tv(t.key, out, names, d)
        _tv(t.value, out, names, d)
    elif isinstance(t, UnionType):
        out.append(base + 4)
        out += uvarint(len(t.types))
        for m in t.types:
            _tv(m, out, names, d)
    elif isinstance(t, EnumType):
        out.append(base + 5)
        out += uvarint(len(t.symbols))
        for s in t.symbols:
            out += counted(s)
    elif isinstance(t, ErrorType):
        out.append(base + 6)
        _tv(t.inner, out, names, d)
    elif isinstance(t, NamedType):
        if names.get(t.name) == t.inner:
            out.append(base + 8)
            out += counted(t.name)
        else:
            out.append(base + 7)
            out += counted(t.name)
            _tv(t.inner, out, names, d)
            names[t.name] = t.inner
    elif isinstance(t, FusionType) and d.version >= 2:
        out.append(base + 9)
        _tv(t.inner, out, names, d)
    else:
        raise EncodeError(f"type {t} has no form in BSUP version {d.version}")


def encode_body(t: Type, v: Any, d: Dialect, depth: int = 0) -> bytes | None:
    """A Python value (plain or typed, as ``read_values`` gives) to its body in
    dialect ``d``; None for null.  A record with optional fields leads with the
    bitmap of those absent (left out of the dict)."""
    if isinstance(t, FusionType) and v is not None:
        return _fusion_body(t, v, d, depth + 1)
    if isinstance(v, Value):
        v = v.value
    if v is None:
        return None
    if depth > MAX_DEPTH:
        raise EncodeError(f"value nested deeper than {MAX_DEPTH}")
    dd = depth + 1
    if isinstance(t, PrimitiveType):
        if t.name == "type":
            if not isinstance(v, Type):
                raise EncodeError(f"type needs a csup_async Type, not {type(v).__name__}")
            return encode_type_value_n(v, d)
        return encode_primitive(t, v)
    if isinstance(t, (NamedType, ErrorType)):
        return encode_body(t.inner, v, d, dd)
    if isinstance(t, EnumType):
        idx = t.symbols.index(v) if isinstance(v, str) and v in t.symbols else v
        if not isinstance(idx, int) or not 0 <= idx < len(t.symbols):
            raise EncodeError(f"{v!r} is not a symbol of {t}")
        return encode_uint(idx)
    out = bytearray()
    if isinstance(t, RecordType):
        if not isinstance(v, dict):
            raise EncodeError(f"record {t} needs a dict, not {type(v).__name__}")
        opts = [f for f in t.fields if isinstance(f, OptField)]
        if opts:
            if d.version < 2:
                raise EncodeError(f"optional fields of {t} have no form in BSUP version "
                                  f"{d.version}")
            bits = bytearray((len(opts) + 7) >> 3)
            for k, f in enumerate(opts):
                if f.name not in v:
                    bits[k >> 3] |= 1 << (k & 7)
            append_tagged(out, bytes(bits))
        for f in t.fields:
            if f.name not in v:
                if isinstance(f, OptField):
                    continue
                raise EncodeError(f"record {t} lacks its field {f.name!r}")
            append_tagged(out, encode_body(f.type, v[f.name], d, dd))
    elif isinstance(t, (ArrayType, SetType)):
        for x in v:
            append_tagged(out, encode_body(t.elem, x, d, dd))
    elif isinstance(t, MapType):
        items = v.items() if isinstance(v, dict) else v
        for k, x in items:
            append_tagged(out, encode_body(t.key, k, d, dd))
            append_tagged(out, encode_body(t.value, x, d, dd))
    elif isinstance(t, UnionType):
        idx, member, inner = select_member(t, v)
        append_tagged(out, encode_uint(idx))
        append_tagged(out, encode_body(member, inner, d, dd))
    else:
        raise EncodeError(f"values of {t} have no form in BSUP version {d.version}")
    return bytes(out)


def _fusion_body(t: FusionType, v: Any, d: Dialect, depth: int) -> bytes:
    """A fusion value: the supertype's value, then the subtype as a type value
    (:func:`.supermodel.fusion_parts`)."""
    from .fusion import fusion_parts

    if d.version < 2:
        raise EncodeError("fusion values have no form in BSUP version 1")
    sub, sv = fusion_parts(t, v)
    out = bytearray()
    append_tagged(out, encode_body(t.inner, sv, d, depth))
    append_tagged(out, encode_type_value_n(sub, d))
    return bytes(out)


class StreamEncoderN:
    """Writes (type, value) pairs as one BSUP stream of version 1 or 2: a types frame
    for each batch of new types, a values frame per ``frame_size`` bytes, each
    frame LZ4-compressed when that makes it smaller, ``0xff`` at each stream end."""

    def __init__(self, out: BinaryIO | bytearray, version: int, *, compress: bool = True,
                 frame_size: int = 512 << 10) -> None:
        if version not in DIALECTS:
            raise EncodeError(f"BSUP version {version} is not written here")
        self.out = out
        self.d = DIALECTS[version]
        self.compress = compress
        self.frame_size = frame_size
        self._ids: dict[Type, int] = {}
        self._pending = bytearray()
        self._values = bytearray()
        self._dirty = False
        self.position = 0

    def _write(self, b: bytes | bytearray) -> None:
        if isinstance(self.out, bytearray):
            self.out += b
        else:
            self.out.write(b)
        self.position += len(b)
        self._dirty = True

    def type_id(self, t: Type) -> int:
        if isinstance(t, PrimitiveType):
            if t.id >= self.d.first_typedef:
                raise EncodeError(f"primitive {t} has no ID in BSUP version {self.d.version}")
            return t.id
        tid = self._ids.get(t)
        if tid is not None:
            return tid
        td = typedef_entry(t, self.type_id, _V2_CODES if self.d.version >= 2 else _V1_CODES,
                           field_flag=_opt_flag)
        if td is None:
            if isinstance(t, FusionType):
                raise EncodeError("fusion types have no form in BSUP version 1")
            raise EncodeError(f"not a type: {t!r}")
        self._pending += td
        tid = self.d.first_typedef + len(self._ids)
        self._ids[t] = tid
        return tid

    def write(self, t: Type, v: Any) -> None:
        self.write_body(t, encode_body(t, v, self.d))

    def write_body(self, t: Type, body: bytes | None) -> None:
        tid = self.type_id(t)
        if self._pending:
            self._flush_values()
            self._emit(0, self._pending)
            self._pending = bytearray()
        self._values += uvarint(tid)
        append_tagged(self._values, body)
        if len(self._values) >= self.frame_size:
            self._flush_values()

    def _flush_values(self) -> None:
        if self._values:
            self._emit(1, self._values)
            self._values = bytearray()

    def _emit(self, kind: int, payload: bytes | bytearray) -> None:
        body = bytes(payload)
        flag = 0
        if self.compress and len(body) > 64:
            c = lz4.block.compress(body, store_size=False)
            framed = b"\x00" + uvarint(len(body)) + c
            if len(c) < len(body):
                body, flag = framed, 0x40
        n = len(body)
        self._write(bytes([0x80 | self.d.version, (kind << 4) | (n & 0x0F) | flag])
                    + uvarint(n >> 4) + body)

    def end_stream(self) -> None:
        """Flush, then the end-of-stream byte (only after something was written, as
        ``super`` does); the next value starts a new type context."""
        self._flush_values()
        if self._pending:
            self._emit(0, self._pending)
            self._pending = bytearray()
        if self._dirty:
            self._write(b"\xff")
            self._dirty = False
        self._ids.clear()
