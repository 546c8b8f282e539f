"""Super Binary version 2, as SuperDB (``super`` v0.1-v0.3) writes it: what a
header-layout CSUP object's metadata and type sections are made of.

Version 2 differs from the version-0 streams of :mod:`csup_async.format.bsup` in ways
that make the two incompatible: each frame starts with a version byte
(``0x82``), primitive IDs run to 30 (``none``, the absent value of an optional
record field), typedefs start at 31 with a ninth kind (fusion), record fields
carry an optional flag (a record value then starts with a bitmap of its absent
optional fields), and a union value's member index is unsigned.  Only reading is
needed here (metadata is small): values become the library's Python mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import lz4.block

from ...model.errors import FormatError, TruncatedError, UnsupportedTypeError
from ...model.kinds import map_value
from ...model.types import (
    PRIMITIVES,
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
from ...model.values import UnionValue, Value
from ..bsup import decode_primitive, iter_tagged, read_uvarint

MAX_FRAME = 100 << 20


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between BSUP version 1 (``super`` v0.2.0) and version 2 (v0.3.0):
    version 2 added the ``none`` primitive (ID 30), so typedef IDs and the codes of
    complex type values start one later, and the fusion type."""

    version: int
    first_typedef: int
    none_id: int | None

    @property
    def type_value_base(self) -> int:
        return self.first_typedef


V1 = Dialect(1, 30, None)
V2 = Dialect(2, 31, 30)


@dataclass(frozen=True, slots=True)
class OptField(Field):
    """A record field that may be absent (``none``): SuperDB's ``name?:type``.  Absent
    fields are left out of the row's dict, as ``super`` leaves them out of JSON."""

    def __str__(self) -> str:
        return f"{self.name}?:{self.type}"


@dataclass(frozen=True, slots=True)
class FusionType(Type):
    """SuperDB's fusion type (``fuse``: values of several record types under one
    supertype of optional fields).  Read as the supertype's values, absent fields
    left out, which is each value's own record."""

    inner: Type

    @property
    def kind(self) -> str:
        return "fusion"

    def __str__(self) -> str:
        return f"fusion({self.inner})"


def frames(buf: bytes | memoryview, dialect: Dialect = V2
           ) -> Iterator[tuple[int, memoryview | None]]:
    """``(kind, payload)`` per frame; kind -1 (payload None) at each end of stream."""
    mv = memoryview(buf)
    pos, end = 0, len(mv)
    while pos < end:
        v = mv[pos]
        if v == 0xFF:
            pos += 1
            yield -1, None
            continue
        if v != 0x80 | dialect.version:
            raise FormatError(f"BSUP frame version byte 0x{v:02x}, expected "
                              f"0x{0x80 | dialect.version:02x} (version {dialect.version})")
        if pos + 1 >= end:
            raise TruncatedError("BSUP frame header runs past its section")
        code = mv[pos + 1]
        rest, p = read_uvarint(mv, pos + 2, end)
        length = (rest << 4) | (code & 0x0F)
        if length > MAX_FRAME or p + length > end:
            raise TruncatedError(f"BSUP frame of {length} bytes runs past its section")
        payload = mv[p:p + length]
        if code & 0x40:
            payload = _decompress(payload)
        kind = (code >> 4) & 3
        if kind == 3:
            raise FormatError("BSUP frame of unknown kind 3")
        yield kind, payload
        pos = p + length


def _decompress(payload: memoryview) -> memoryview:
    if len(payload) < 2 or payload[0] != 0:
        raise FormatError("compressed BSUP frame has an unknown format")
    size, p = read_uvarint(payload, 1)
    if size > MAX_FRAME:
        raise FormatError(f"compressed BSUP frame claims {size} bytes")
    try:
        out = lz4.block.decompress(bytes(payload[p:]), uncompressed_size=size)
    except Exception as e:  # lz4 raises LZ4BlockError, ValueError, MemoryError
        raise FormatError(f"compressed BSUP frame is corrupt: {e}") from None
    return memoryview(out)


class Types:
    """The typedefs of one stream: IDs 31, 32, ... in order of definition."""

    def __init__(self, dialect: Dialect = V2) -> None:
        self.defs: list[Type] = []
        self.dialect = dialect

    def lookup(self, tid: int) -> Type:
        d = self.dialect
        if tid < d.first_typedef:
            if tid == d.none_id:
                raise FormatError("the none type used outside an optional field")
            return PRIMITIVES[tid]
        i = tid - d.first_typedef
        if i >= len(self.defs):
            raise FormatError(f"BSUP type ID {tid} is not defined")
        return self.defs[i]

    def parse(self, mv: memoryview) -> None:
        pos, end = 0, len(mv)

        def uv() -> int:
            nonlocal pos
            v, pos = read_uvarint(mv, pos, end)
            return v

        def name() -> str:
            nonlocal pos
            n = uv()
            if pos + n > end:
                raise TruncatedError("BSUP name runs past its frame")
            s = bytes(mv[pos:pos + n]).decode("utf-8", "replace")
            pos += n
            return s

        while pos < end:
            code = mv[pos]
            pos += 1
            t: Type
            if code == 0:
                fields = []
                for _ in range(uv()):
                    fname = name()
                    ftype = self.lookup(uv())
                    if pos >= end:
                        raise TruncatedError("BSUP record typedef runs past its frame")
                    opt = mv[pos]
                    pos += 1
                    fields.append(OptField(fname, ftype) if opt else Field(fname, ftype))
                t = RecordType(tuple(fields))
            elif code in (1, 2):
                inner = self.lookup(uv())
                t = ArrayType(inner) if code == 1 else SetType(inner)
            elif code == 3:
                k = self.lookup(uv())
                t = MapType(k, self.lookup(uv()))
            elif code == 4:
                t = UnionType(tuple(self.lookup(uv()) for _ in range(uv())))
            elif code == 5:
                t = EnumType(tuple(name() for _ in range(uv())))
            elif code == 6:
                t = ErrorType(self.lookup(uv()))
            elif code == 7:
                n = name()
                t = NamedType(n, self.lookup(uv()))
            elif code == 8 and self.dialect.version >= 2:
                t = FusionType(self.lookup(uv()))
            else:
                raise FormatError(f"unknown BSUP typedef code {code}")
            self.defs.append(t)


def read_values(buf: bytes | memoryview, dialect: Dialect = V2
                ) -> list[tuple[Type, memoryview | None]]:
    """Every ``(type, body)`` of a section of one or more streams."""
    out: list[tuple[Type, memoryview | None]] = []
    types = Types(dialect)
    for kind, payload in frames(buf, dialect):
        if kind == -1:
            types = Types(dialect)
            continue
        assert payload is not None
        if kind == 0:
            types.parse(payload)
        elif kind == 1:
            out.extend(frame_values(payload, types.lookup))
    return out


def frame_values(payload: memoryview, lookup: Callable[[int], Type]
                 ) -> Iterator[tuple[Type, memoryview | None]]:
    """Each ``(type, body)`` of one values frame, its type IDs resolved by ``lookup``
    (the same layout in every BSUP version; only the typedefs differ)."""
    pos, end = 0, len(payload)
    while pos < end:  # one-byte uvarints (nearly all) read inline
        tid = payload[pos]
        if tid < 0x80:
            pos += 1
        else:
            tid, pos = read_uvarint(payload, pos, end)
        t = lookup(tid)
        if pos < end and payload[pos] < 0x80:
            tag = payload[pos]
            pos += 1
        else:
            tag, pos = read_uvarint(payload, pos, end)
        body = None
        if tag:
            if pos + tag - 1 > end:
                raise TruncatedError("BSUP value runs past its frame")
            body = payload[pos:pos + tag - 1]
            pos += tag - 1
        yield t, body


def decode_type_value(b: bytes | memoryview, dialect: Dialect = V2) -> Type:
    """A type value (as ``type`` values and CSUP metadata hold them)."""
    mv = memoryview(b)
    t, pos = _type_value(mv, 0, {}, 0, dialect)
    if pos != len(mv):
        raise FormatError("type value has trailing bytes")
    return t


def _type_value(mv: memoryview, pos: int, names: dict[str, Type], depth: int,
                dialect: Dialect) -> tuple[Type, int]:
    if depth > 100:
        raise FormatError("type value nested too deeply")
    if pos >= len(mv):
        raise TruncatedError("type value runs past its body")
    code = mv[pos]
    pos += 1

    def name(pos: int) -> tuple[str, int]:
        n, pos = read_uvarint(mv, pos)
        if pos + n > len(mv):
            raise TruncatedError("type value name runs past its body")
        return bytes(mv[pos:pos + n]).decode("utf-8", "replace"), pos + n

    if code < dialect.first_typedef:
        if code == dialect.none_id:
            raise FormatError("type value of the none type")
        return PRIMITIVES[code], pos
    code -= dialect.type_value_base  # record 0, array 1, ... fusion 9
    if code == 9 and dialect.version < 2:
        raise FormatError("fusion type value in BSUP version 1")
    if code == 0:
        n, pos = read_uvarint(mv, pos)
        nb = (n + 7) >> 3
        opts = bytes(mv[pos:pos + nb])
        pos += nb
        fields = []
        for k in range(n):
            fname, pos = name(pos)
            ft, pos = _type_value(mv, pos, names, depth + 1, dialect)
            opt = opts[k >> 3] >> (k & 7) & 1 if k >> 3 < len(opts) else 0
            fields.append(OptField(fname, ft) if opt else Field(fname, ft))
        return RecordType(tuple(fields)), pos
    if code in (1, 2, 6, 9):
        inner, pos = _type_value(mv, pos, names, depth + 1, dialect)
        return {1: ArrayType, 2: SetType, 6: ErrorType, 9: FusionType}[code](inner), pos
    if code == 3:
        k, pos = _type_value(mv, pos, names, depth + 1, dialect)
        v, pos = _type_value(mv, pos, names, depth + 1, dialect)
        return MapType(k, v), pos
    if code == 4:
        n, pos = read_uvarint(mv, pos)
        members = []
        for _ in range(n):
            m, pos = _type_value(mv, pos, names, depth + 1, dialect)
            members.append(m)
        return UnionType(tuple(members)), pos
    if code == 5:
        n, pos = read_uvarint(mv, pos)
        syms = []
        for _ in range(n):
            s, pos = name(pos)
            syms.append(s)
        return EnumType(tuple(syms)), pos
    if code == 7:
        nm, pos = name(pos)
        inner, pos = _type_value(mv, pos, names, depth + 1, dialect)
        names[nm] = inner
        return NamedType(nm, inner), pos
    if code == 8:
        nm, pos = name(pos)
        if nm not in names:
            raise FormatError(f"type value refers to undefined name {nm!r}")
        return NamedType(nm, names[nm]), pos
    raise FormatError(f"unknown type value code {code + dialect.type_value_base}")


def decode_primitive2(t: PrimitiveType, body: bytes | memoryview, dialect: Dialect = V2
                      ) -> Any:
    """A primitive body: as version 0, except type values (this dialect's codes) and an
    empty body of type null, which is null: super v0.2.0 writes ``error(null)`` as an
    error whose inner null value has an empty body (v0.3.0 writes a null error)."""
    if t.name == "type":
        return decode_type_value(body, dialect)
    if t.name == "null" and len(body) == 0:
        return None
    return decode_primitive(t, body)


def decode_value(t: Type, body: bytes | memoryview | None, *, typed: bool = False,
                 depth: int = 0, dialect: Dialect = V2, fused: bool = False) -> Any:
    """A version-2 body to Python (the library's mapping; absent optional fields
    left out of their record's dict).  ``fused``: a fusion value with its
    subtype, ``Value(subtype, the supertype's value)`` (:mod:`.defuse` makes it the
    subtype's value, as super prints it); else its supertype's value, as a column of the
    supertype holds it."""
    if body is None:
        return None
    if depth > 200:
        raise FormatError("value nested too deeply")
    d = depth + 1
    if isinstance(t, PrimitiveType):
        return decode_primitive2(t, body, dialect)
    if isinstance(t, NamedType | ErrorType):
        return decode_value(t.inner, body, typed=typed, fused=fused, depth=d, dialect=dialect)
    if isinstance(t, EnumType):
        i = int.from_bytes(bytes(body), "little")
        if i >= len(t.symbols):
            raise FormatError(f"enum value {i} has no symbol")
        return t.symbols[i]
    parts = list(iter_tagged(body, 0, len(body)))
    if isinstance(t, FusionType):  # the supertype's value, then the subtype (a type value)
        if len(parts) != 2:
            raise FormatError("fusion value is not a value and a type")
        v = decode_value(t.inner, parts[0], typed=typed, fused=fused, depth=d, dialect=dialect)
        if not fused or parts[1] is None:
            return v
        # the subtype kept: .defuse makes its value
        return Value(decode_type_value(parts[1], dialect), v)
    if isinstance(t, RecordType):
        nopt = sum(isinstance(f, OptField) for f in t.fields)
        nones = b""
        if nopt:
            if not parts:
                raise FormatError("record value lacks its none bitmap")
            nones = bytes(parts.pop(0) or b"")
        out: dict[str, Any] = {}
        k = i = 0
        for f in t.fields:
            if isinstance(f, OptField):
                absent = k >> 3 < len(nones) and nones[k >> 3] >> (k & 7) & 1
                k += 1
                if absent:
                    continue
            if i >= len(parts):
                raise FormatError("record value has fewer fields than its type")
            out[f.name] = decode_value(f.type, parts[i], typed=typed, fused=fused, depth=d,
                                       dialect=dialect)
            i += 1
        if i != len(parts):
            raise FormatError("record value has more fields than its type")
        return out
    if isinstance(t, ArrayType | SetType):
        return [decode_value(t.elem, p, typed=typed, fused=fused, depth=d, dialect=dialect)
                for p in parts]
    if isinstance(t, MapType):
        if len(parts) % 2:
            raise FormatError("map value has a key without a value")
        items = [(decode_value(t.key, parts[j], typed=typed, fused=fused, depth=d, dialect=dialect),
                  decode_value(t.value, parts[j + 1], typed=typed, fused=fused, depth=d,
                               dialect=dialect))
                 for j in range(0, len(parts), 2)]
        return map_value(t.key, items)
    if isinstance(t, UnionType):
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a member index and a value")
        idx = int.from_bytes(bytes(parts[0]), "little")
        if idx >= len(t.types):
            raise FormatError(f"union member {idx} of a {len(t.types)}-member union")
        v = decode_value(t.types[idx], parts[1], typed=typed, fused=fused, depth=d, dialect=dialect)
        return UnionValue(idx, t.types[idx], v) if typed else v
    raise UnsupportedTypeError(f"values of {t} are not supported")
