"""Super Binary (BSUP, formerly ZNG) version-0 streams: types, values, frames.

All CSUP metadata is BSUP, and BSUP/ZNG files are an input and output format
of the CLI, so this codec is exact for every type: decoding then encoding a
value gives back its bytes.  It is pure Python: metadata is small, and bulk
column data goes through the vectorised decoders instead.

Signed integers (int8 ... int64, time, duration) are sign-and-magnitude, as in
Zed's ``zcode/counted.go``: see :func:`encode_int`.

Union tags: Zed (v1.x) and SuperDB until 2026 wrote a union's member index as a
signed int (``BuildUnion``), later SuperDB as a plain uint.  For a tag t >= 0 the
signed form is the bytes of ``t << 1`` in sign-and-magnitude and in zig-zag alike,
so the tag encoding did not change when signed ints were fixed.  We read and
write the signed form, which is what the real files in this format's era hold;
see ``UNION_TAG_SIGNED``.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import itertools
import math
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

import lz4.block
import numpy as np

from .errors import (
    CsupError,
    EncodeError,
    FormatError,
    LimitError,
    TruncatedError,
    UnsupportedTypeError,
)
from .types import (
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
from .values import UnionValue, Value, numpy_ns

UNION_TAG_SIGNED = True

MAX_FRAME = 1 << 30  # bytes one frame may claim (compressed or not)
MAX_DEPTH = 100  # nesting of types and values a file may ask for
MAX_TYPES = 1 << 18  # typedefs one stream may define (~5 us and ~200 bytes each)
# Nodes of one type counted as a tree (a type may share a subtype many times,
# so a few bytes of typedefs can describe a type of 2**100 nodes, which every
# hash, comparison and print would walk), and of all the typedefs of a stream.
MAX_TYPE_SIZE = 1 << 16
MAX_TYPE_NODES = 1 << 22
# LZ4 turns n bytes into at most about 255 n: a claim beyond is a lie (or a bomb).
LZ4_MAX_RATIO = 256

ID_RECORD, ID_ARRAY, ID_SET, ID_MAP, ID_UNION, ID_ENUM, ID_ERROR, ID_NAMED = range(8)
TV_RECORD, TV_ARRAY, TV_SET, TV_MAP, TV_UNION, TV_ENUM, TV_ERROR, TV_NAMED_DEF, TV_NAMED_REF = (
    range(30, 39)
)
FIRST_TYPEDEF_ID = 30

# ---------------------------------------------------------------- varints ---


def read_uvarint(buf: bytes | memoryview, pos: int, end: int | None = None) -> tuple[int, int]:
    """Decode a uvarint at ``pos``; return (value, next position)."""
    if end is None:
        end = len(buf)
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise TruncatedError("uvarint runs past the end of the data")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise FormatError("uvarint longer than 10 bytes")


def uvarint(n: int) -> bytes:
    if n < 0:
        raise EncodeError(f"uvarint of negative {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def append_tagged(out: bytearray, body: bytes | None) -> None:
    """Append a tag-encoded value (None = null)."""
    if body is None:
        out.append(0)
    else:
        n = len(body) + 1
        if n < 0x80:
            out.append(n)
        else:
            out += uvarint(n)
        out += body


def iter_tagged(buf: bytes | memoryview, start: int, end: int) -> Iterator[memoryview | None]:
    """Yield the tag-encoded children in ``buf[start:end]`` (None for null)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    pos = start
    while pos < end:
        tag, pos = read_uvarint(mv, pos, end)
        if tag == 0:
            yield None
            continue
        n = tag - 1
        if pos + n > end:
            raise TruncatedError(f"value of {n} bytes runs past its container")
        yield mv[pos : pos + n]
        pos += n


def split_tagged(buf: bytes | memoryview) -> list[memoryview | None]:
    """``list(iter_tagged(buf, 0, len(buf)))``, with the same errors, in one tight loop.

    Metadata records and arrays are split this way tens of times per file; a
    one-byte tag (a child under 127 bytes, the usual case) is read inline.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    pos = 0
    out: list[memoryview | None] = []
    while pos < end:
        tag = mv[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_uvarint(mv, pos, end)
        if tag == 0:
            out.append(None)
            continue
        n = tag - 1
        if pos + n > end:
            raise TruncatedError(f"value of {n} bytes runs past its container")
        out.append(mv[pos : pos + n])
        pos += n
    return out


# --------------------------------------------------------------- integers ---


def encode_uint(v: int) -> bytes:
    return v.to_bytes((v.bit_length() + 7) // 8, "little")


def decode_uint(b: bytes | memoryview) -> int:
    return int.from_bytes(b, "little")


def encode_int(v: int, bits: int = 64) -> bytes:
    """A signed int as Zed writes it (``zcode.EncodeCountedVarint``): sign and magnitude.

    ``u = |v| << 1 | sign``, taken mod 2**bits as Go's uint64 does for 64 bits, then
    as a uint: -1 is ``03``, 1 is ``02``, -128 is ``01 01`` and int64's minimum wraps
    to ``01``.  This is *not* zig-zag (where -1 would be ``01``); the two agree only
    on non-negative values.
    """
    mask = (1 << bits) - 1
    if v >= 0:
        return encode_uint((v << 1) & mask)
    return encode_uint((((-v) << 1) | 1) & mask)


def decode_int(b: bytes | memoryview, bits: int = 64) -> int:
    """The inverse of :func:`encode_int`; ``u = 1`` ("minus zero") is the minimum of
    a ``bits``-wide int (int64's for everything up to 64 bits, as Zed decodes it)."""
    u = int.from_bytes(b, "little")
    if u & 1:
        return -(u >> 1) if u > 1 else -(1 << (bits - 1))
    return u >> 1


_INT_BITS = {
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "uint128": 128, "uint256": 256,
    "int8": 8, "int16": 16, "int32": 32, "int64": 64, "int128": 128, "int256": 256,
    "duration": 64, "time": 64,
}
_FLOAT_FORMATS = {"float16": "<e", "float32": "<f", "float64": "<d"}
_UNSUPPORTED = {"float128", "float256", "decimal32", "decimal64", "decimal128", "decimal256"}

# ------------------------------------------------------------ type values ---


def encode_type_value(t: Type) -> bytes:
    """The context-free encoding of a type (the body of a value of type ``type``)."""
    out = bytearray()
    _encode_tv(t, out, {})
    return bytes(out)


def _counted(s: str) -> bytes:
    try:
        b = s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise EncodeError(f"name {s!r} is not valid Unicode: {e.reason}") from None
    return uvarint(len(b)) + b


def _encode_tv(t: Type, out: bytearray, names: dict[str, Type]) -> None:
    if isinstance(t, PrimitiveType):
        out.append(t.id)
    elif isinstance(t, RecordType):
        out.append(TV_RECORD)
        out += uvarint(len(t.fields))
        for f in t.fields:
            out += _counted(f.name)
            _encode_tv(f.type, out, names)
    elif isinstance(t, ArrayType):
        out.append(TV_ARRAY)
        _encode_tv(t.elem, out, names)
    elif isinstance(t, SetType):
        out.append(TV_SET)
        _encode_tv(t.elem, out, names)
    elif isinstance(t, MapType):
        out.append(TV_MAP)
        _encode_tv(t.key, out, names)
        _encode_tv(t.value, out, names)
    elif isinstance(t, UnionType):
        out.append(TV_UNION)
        out += uvarint(len(t.types))
        for m in t.types:
            _encode_tv(m, out, names)
    elif isinstance(t, EnumType):
        out.append(TV_ENUM)
        out += uvarint(len(t.symbols))
        for s in t.symbols:
            out += _counted(s)
    elif isinstance(t, ErrorType):
        out.append(TV_ERROR)
        _encode_tv(t.inner, out, names)
    elif isinstance(t, NamedType):
        if names.get(t.name) == t.inner:
            out.append(TV_NAMED_REF)
            out += _counted(t.name)
        else:
            out.append(TV_NAMED_DEF)
            out += _counted(t.name)
            _encode_tv(t.inner, out, names)
            names[t.name] = t.inner
    else:
        raise EncodeError(f"not a type: {t!r}")


def decode_type_value(b: bytes | memoryview) -> Type:
    mv = memoryview(b) if not isinstance(b, memoryview) else b
    t, pos = _decode_tv(mv, 0, {}, 0, [MAX_TYPE_SIZE])
    if pos != len(mv):
        raise FormatError("type value has trailing bytes")
    return t


def _read_counted(mv: memoryview, pos: int, end: int | None = None) -> tuple[str, int]:
    end = len(mv) if end is None else end
    n, pos = read_uvarint(mv, pos, end)
    if pos + n > end:
        raise TruncatedError("name runs past the end of its frame")
    try:
        return bytes(mv[pos : pos + n]).decode("utf-8"), pos + n
    except UnicodeDecodeError as e:
        raise FormatError("name is not valid UTF-8") from e


def _spend(budget: list[int], n: int) -> None:
    """Count ``n`` nodes of a type value against what is left of MAX_TYPE_SIZE."""
    budget[0] -= n
    if budget[0] < 0:
        raise LimitError(f"type value has more than {MAX_TYPE_SIZE} nodes")


def _decode_tv(mv: memoryview, pos: int, names: dict[str, tuple[Type, int]], depth: int,
               budget: list[int]) -> tuple[Type, int]:
    if depth > MAX_DEPTH:
        raise LimitError(f"type value nested deeper than {MAX_DEPTH}")
    code, pos = read_uvarint(mv, pos)
    _spend(budget, 1)
    if code < FIRST_TYPEDEF_ID:
        if code >= len(PRIMITIVES):
            raise FormatError(f"unknown type value code {code}")
        return PRIMITIVES[code], pos
    d = depth + 1
    if code == TV_RECORD:
        n, pos = read_uvarint(mv, pos)
        _check_count(n, len(mv) - pos)
        fields = []
        for _ in range(n):
            name, pos = _read_counted(mv, pos)
            ft, pos = _decode_tv(mv, pos, names, d, budget)
            fields.append(Field(name, ft))
        return RecordType(tuple(fields)), pos
    if code in (TV_ARRAY, TV_SET, TV_ERROR):
        inner, pos = _decode_tv(mv, pos, names, d, budget)
        cls = {TV_ARRAY: ArrayType, TV_SET: SetType, TV_ERROR: ErrorType}[code]
        return cls(inner), pos
    if code == TV_MAP:
        k, pos = _decode_tv(mv, pos, names, d, budget)
        v, pos = _decode_tv(mv, pos, names, d, budget)
        return MapType(k, v), pos
    if code == TV_UNION:
        n, pos = read_uvarint(mv, pos)
        _check_count(n, len(mv) - pos)
        members = []
        for _ in range(n):
            m, pos = _decode_tv(mv, pos, names, d, budget)
            members.append(m)
        return UnionType(tuple(members)), pos
    if code == TV_ENUM:
        n, pos = read_uvarint(mv, pos)
        _check_count(n, len(mv) - pos)
        syms = []
        for _ in range(n):
            s, pos = _read_counted(mv, pos)
            syms.append(s)
        return EnumType(tuple(syms)), pos
    if code == TV_NAMED_DEF:
        name, pos = _read_counted(mv, pos)
        before = budget[0]
        inner, pos = _decode_tv(mv, pos, names, d, budget)
        names[name] = (inner, before - budget[0])
        return NamedType(name, inner), pos
    if code == TV_NAMED_REF:
        name, pos = _read_counted(mv, pos)
        if name not in names:
            raise FormatError(f"type value refers to undefined named type {name!r}")
        inner, size = names[name]
        _spend(budget, size)  # a reference repeats the whole named type
        return NamedType(name, inner), pos
    raise FormatError(f"unknown type value code {code}")


def type_limits(t: Type) -> tuple[int, int]:
    """(depth, tree size) of a type, in time linear in its distinct subtypes; stops
    counting once past the limits (MAX_DEPTH, MAX_TYPE_SIZE)."""
    memo: dict[int, tuple[int, int]] = {}
    keep: list[Type] = []  # keeps ids valid while the memo lives

    def walk(u: Type, level: int) -> tuple[int, int]:
        got = memo.get(id(u))
        if got is not None:
            return got
        if level > MAX_DEPTH + 1:
            return MAX_DEPTH + 2, 1
        if isinstance(u, RecordType):
            kids: list[Type] = [f.type for f in u.fields]
        elif isinstance(u, (ArrayType, SetType)):
            kids = [u.elem]
        elif isinstance(u, (ErrorType, NamedType)):
            kids = [u.inner]
        elif isinstance(u, MapType):
            kids = [u.key, u.value]
        elif isinstance(u, UnionType):
            kids = list(u.types)
        else:
            kids = []
        depth, size = 1, 1
        for k in kids:
            kd, ks = walk(k, level + 1)
            depth = max(depth, kd + 1)
            size = min(size + ks, MAX_TYPE_SIZE + 1)
        memo[id(u)] = (depth, size)
        keep.append(u)
        return depth, size

    return walk(t, 1)


def _check_names(names: list[str], what: str) -> None:
    """EncodeError for a name UTF-8 cannot hold (a lone surrogate from a bad decode)."""
    for name in names:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EncodeError(f"{what} {name!r} is not valid Unicode: {e.reason}") from None


def check_type(t: Type, what: str = "type") -> None:
    """EncodeError unless a reader of this library can read ``t`` back: depth, size,
    field names unique in each record, every name and symbol valid UTF-8."""
    depth, size = type_limits(t)
    if depth > MAX_DEPTH:
        raise EncodeError(f"{what} is nested deeper than {MAX_DEPTH} levels, more than a "
                          "reader accepts")
    if size > MAX_TYPE_SIZE:
        raise EncodeError(f"{what} has more than {MAX_TYPE_SIZE} nodes, more than a reader "
                          "accepts")
    _check_names_in(t, set())


def _check_names_in(t: Type, seen: set[int]) -> None:
    if id(t) in seen:
        return
    seen.add(id(t))
    if isinstance(t, RecordType):
        names = [f.name for f in t.fields]
        _check_names(names, "field name")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise EncodeError(f"record type has the field name {dup!r} twice")
        kids: list[Type] = [f.type for f in t.fields]
    elif isinstance(t, (ArrayType, SetType)):
        kids = [t.elem]
    elif isinstance(t, (ErrorType, NamedType)):
        if isinstance(t, NamedType):
            _check_names([t.name], "type name")
        kids = [t.inner]
    elif isinstance(t, MapType):
        kids = [t.key, t.value]
    elif isinstance(t, UnionType):
        kids = list(t.types)
    else:
        if isinstance(t, EnumType):
            _check_names(list(t.symbols), "enum symbol")
        kids = []
    for k in kids:
        _check_names_in(k, seen)


def _check_count(n: int, remaining: int) -> None:
    # Every element takes at least one byte, so a count beyond the bytes left is a lie.
    if n > remaining:
        raise FormatError(f"count {n} exceeds the {remaining} bytes that remain")


# --------------------------------------------------------- value decoding ---


def decode_primitive(t: PrimitiveType, b: bytes | memoryview) -> Any:
    """One primitive body to its Python value (the documented mapping)."""
    name = t.name
    bits = _INT_BITS.get(name)
    if bits is not None:
        if name[0] == "u":
            if len(b) > bits // 8:
                raise FormatError(f"{name} value of {len(b)} bytes")
            return decode_uint(b)
        # Sign and magnitude: a narrow type's minimum takes one byte more than its
        # width, so narrow types are read as int64 (Zed's own width) and range-checked.
        wide = max(bits, 64)
        if len(b) > wide // 8:
            raise FormatError(f"{name} value of {len(b)} bytes")
        v = decode_int(b, wide)
        if bits < 64 and not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
            raise FormatError(f"{name} value {v} out of range")
        if name == "time":
            return np.datetime64(v, "ns")
        if name == "duration":
            return np.timedelta64(v, "ns")
        return v
    fmt = _FLOAT_FORMATS.get(name)
    if fmt is not None:
        if len(b) != struct.calcsize(fmt):
            raise FormatError(f"{name} value of {len(b)} bytes")
        return struct.unpack(fmt, b)[0]
    if name == "string":
        try:
            return bytes(b).decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"string value is not valid UTF-8: {e.reason}") from e
    if name == "bytes":
        return bytes(b)
    if name == "bool":
        if len(b) != 1 or b[0] > 1:
            raise FormatError("bool value is not one byte 0 or 1")
        return bool(b[0])
    if name == "ip":
        if len(b) == 4:
            return ipaddress.IPv4Address(bytes(b))
        if len(b) == 16:
            return ipaddress.IPv6Address(bytes(b))
        raise FormatError(f"ip value of {len(b)} bytes")
    if name == "net":
        return _decode_net(bytes(b))
    if name == "type":
        return decode_type_value(b)
    if name == "null":
        raise FormatError("a null-type value must be null")
    raise UnsupportedTypeError(f"type {name} has no faithful Python form and is not supported")


def _decode_net(b: bytes) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if len(b) not in (8, 32):
        raise FormatError(f"net value of {len(b)} bytes")
    half = len(b) // 2
    addr, mask = b[:half], b[half:]
    m = int.from_bytes(mask, "big")
    prefix = bin(m).count("1")
    full = (1 << (half * 8)) - 1
    if m != (full ^ (full >> prefix)):
        raise FormatError("net value has a non-contiguous mask")
    cls = ipaddress.IPv4Network if half == 4 else ipaddress.IPv6Network
    try:
        return cls((addr, prefix), strict=True)
    except ValueError as e:
        raise FormatError(f"net value has host bits set: {e}") from e


def decode_value(t: Type, body: bytes | memoryview | None, *, typed: bool = False,
                 depth: int = 0) -> Any:
    """A BSUP body to Python (``typed``: unions as UnionValue)."""
    if body is None:
        return None
    if depth > MAX_DEPTH:
        raise LimitError(f"value nested deeper than {MAX_DEPTH}")
    if isinstance(t, PrimitiveType):
        return decode_primitive(t, body)
    d = depth + 1
    if isinstance(t, NamedType):
        return decode_value(t.inner, body, typed=typed, depth=d)
    if isinstance(t, ErrorType):
        return decode_value(t.inner, _single(body, "error"), typed=typed, depth=d)
    if isinstance(t, RecordType):
        out = {}
        it = iter_tagged(body, 0, len(body))
        for f in t.fields:
            try:
                child = next(it)
            except StopIteration:
                raise FormatError(f"record value has too few fields for {t}") from None
            out[f.name] = decode_value(f.type, child, typed=typed, depth=d)
        if next(it, _END) is not _END:
            raise FormatError(f"record value has too many fields for {t}")
        return out
    if isinstance(t, (ArrayType, SetType)):
        return [decode_value(t.elem, c, typed=typed, depth=d)
                for c in iter_tagged(body, 0, len(body))]
    if isinstance(t, MapType):
        items = list(iter_tagged(body, 0, len(body)))
        if len(items) % 2:
            raise FormatError("map value has a key without a value")
        keys = [decode_value(t.key, k, typed=typed, depth=d) for k in items[0::2]]
        vals = [decode_value(t.value, v, typed=typed, depth=d) for v in items[1::2]]
        try:
            out_map = dict(zip(keys, vals, strict=True))
            if len(out_map) == len(keys):
                return out_map
        except TypeError:
            pass
        return list(zip(keys, vals, strict=True))
    if isinstance(t, UnionType):
        parts = list(iter_tagged(body, 0, len(body)))
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a tag and a value")
        idx = decode_int(parts[0]) if UNION_TAG_SIGNED else decode_uint(parts[0])
        if not 0 <= idx < len(t.types):
            raise FormatError(f"union tag {idx} out of range for {t}")
        member = t.types[idx]
        v = decode_value(member, parts[1], typed=typed, depth=d)
        return UnionValue(idx, member, v) if typed else v
    if isinstance(t, EnumType):
        idx = decode_uint(body)
        if idx >= len(t.symbols):
            raise FormatError(f"enum position {idx} out of range for {t}")
        return t.symbols[idx]
    raise FormatError(f"unknown type {t!r}")


_END = object()


def _single(body: bytes | memoryview, what: str) -> memoryview | None:
    parts = list(iter_tagged(body, 0, len(body)))
    if len(parts) != 1:
        raise FormatError(f"{what} value does not hold exactly one element")
    return parts[0]


# --------------------------------------------------------- value encoding ---


def encode_primitive(t: PrimitiveType, v: Any) -> bytes:
    """A Python value to the body of a primitive of type ``t`` (exact or EncodeError)."""
    name = t.name
    bits = _INT_BITS.get(name)
    if bits is not None:
        n = _as_int(name, v)
        if name[0] == "u":
            if not 0 <= n < (1 << bits):
                raise EncodeError(f"{n} does not fit in {name}")
            return encode_uint(n)
        lim = 1 << (bits - 1)
        if not -lim <= n < lim:
            raise EncodeError(f"{n} does not fit in {name}")
        return encode_int(n, max(bits, 64))
    fmt = _FLOAT_FORMATS.get(name)
    if fmt is not None:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise EncodeError(f"{name} needs a number, not {type(v).__name__}")
        f = float(v)
        try:
            b = struct.pack(fmt, f)
        except (OverflowError, struct.error) as e:
            raise EncodeError(f"{v!r} does not fit in {name}") from e
        back = struct.unpack(fmt, b)[0]
        if back != f and not (math.isnan(back) and math.isnan(f)):
            raise EncodeError(f"{v!r} is not exactly representable as {name}")
        if isinstance(v, int) and int(back) != v:
            raise EncodeError(f"{v!r} is not exactly representable as {name}")
        return b
    if name == "string":
        if not isinstance(v, str):
            raise EncodeError(f"string needs a str, not {type(v).__name__}")
        try:
            return v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EncodeError(f"string is not encodable as UTF-8: {e.reason}") from e
    if name == "bytes":
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise EncodeError(f"bytes needs bytes, not {type(v).__name__}")
        return bytes(v)
    if name == "bool":
        if not isinstance(v, (bool, np.bool_)):
            raise EncodeError(f"bool needs a bool, not {type(v).__name__}")
        return b"\x01" if v else b"\x00"
    if name == "ip":
        if isinstance(v, str):
            try:
                v = ipaddress.ip_address(v)
            except ValueError as e:
                raise EncodeError(str(e)) from e
        if not isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            raise EncodeError(f"ip needs an ipaddress address, not {type(v).__name__}")
        return v.packed
    if name == "net":
        if isinstance(v, str):
            try:
                v = ipaddress.ip_network(v)
            except ValueError as e:
                raise EncodeError(str(e)) from e
        if not isinstance(v, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
            raise EncodeError(f"net needs an ipaddress network, not {type(v).__name__}")
        return v.network_address.packed + v.netmask.packed
    if name == "type":
        if not isinstance(v, Type):
            raise EncodeError(f"type needs a csup_async Type, not {type(v).__name__}")
        check_type(v, "type value")
        return encode_type_value(v)
    if name == "null":
        raise EncodeError("a value of type null can only be None")
    raise UnsupportedTypeError(f"type {name} has no faithful Python form and is not supported")


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _as_int(name: str, v: Any) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise EncodeError(f"{name} needs an integer, not bool")
    if isinstance(v, (int, np.integer)) and not isinstance(v, np.timedelta64):
        return int(v)
    if name == "time":
        if isinstance(v, np.datetime64):
            # NaT is int64's minimum, itself a valid time: it round-trips exactly
            return int(numpy_ns(np.array(v), "time")[()])
        if isinstance(v, _dt.datetime):
            if v.tzinfo is None:
                v = v.replace(tzinfo=_dt.UTC)
            d = v - _EPOCH
            return (d.days * 86400 + d.seconds) * 1_000_000_000 + d.microseconds * 1000
    if name == "duration":
        if isinstance(v, np.timedelta64):
            return int(numpy_ns(np.array(v), "duration")[()])
        if isinstance(v, _dt.timedelta):
            return (v.days * 86400 + v.seconds) * 1_000_000_000 + v.microseconds * 1000
    raise EncodeError(f"{name} cannot hold a {type(v).__name__}")


def encode_value(t: Type, v: Any, depth: int = 0) -> bytes | None:
    """A Python value (plain or typed form) to its BSUP body; None for null."""
    if isinstance(v, Value):
        if v.type != t:
            raise EncodeError(f"a value of type {v.type} where {t} is required")
        v = v.value
    if v is None:
        return None
    if depth > MAX_DEPTH:
        raise EncodeError(f"value nested deeper than {MAX_DEPTH}")
    d = depth + 1
    if isinstance(t, PrimitiveType):
        if isinstance(v, UnionValue):
            raise EncodeError(f"a union value where {t} is required")
        return encode_primitive(t, v)
    if isinstance(t, NamedType):
        return encode_value(t.inner, v, d)
    out = bytearray()
    if isinstance(t, ErrorType):
        append_tagged(out, encode_value(t.inner, v, d))
    elif isinstance(t, RecordType):
        if not isinstance(v, dict):
            raise EncodeError(f"record {t} needs a dict, not {type(v).__name__}")
        if len(v) != len(t.fields) or any(f.name not in v for f in t.fields):
            raise EncodeError(f"dict keys {list(v)} do not match record {t}")
        for f in t.fields:
            append_tagged(out, encode_value(f.type, v[f.name], d))
    elif isinstance(t, ArrayType):
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"array {t} needs a list, not {type(v).__name__}")
        for x in v:
            append_tagged(out, encode_value(t.elem, x, d))
    elif isinstance(t, SetType):
        if not isinstance(v, (list, tuple, set, frozenset)):
            raise EncodeError(f"set {t} needs a set or list, not {type(v).__name__}")
        bodies = []
        for x in v:
            one = bytearray()
            append_tagged(one, encode_value(t.elem, x, d))
            bodies.append(bytes(one))
        for b in sorted(set(bodies)):
            out += b
    elif isinstance(t, MapType):
        # normalized as BSUP requires: entries sorted by their keys' encodings, keys unique
        items = v.items() if isinstance(v, dict) else v
        entries = []
        for pair in items:
            try:
                k, x = pair
            except (TypeError, ValueError):
                raise EncodeError("map needs a dict or (key, value) pairs") from None
            kb = bytearray()
            append_tagged(kb, encode_value(t.key, k, d))
            vb = bytearray()
            append_tagged(vb, encode_value(t.value, x, d))
            entries.append((bytes(kb), bytes(vb)))
        entries.sort(key=lambda e: e[0])
        for i, (kb, vb) in enumerate(entries):
            if i and kb == entries[i - 1][0]:
                raise EncodeError(f"map {t} has a duplicate key")
            out += kb
            out += vb
    elif isinstance(t, UnionType):
        idx, member, inner = select_member(t, v)
        append_tagged(out, encode_int(idx) if UNION_TAG_SIGNED else encode_uint(idx))
        append_tagged(out, encode_value(member, inner, d))
    elif isinstance(t, EnumType):
        if isinstance(v, str):
            try:
                idx = t.symbols.index(v)
            except ValueError:
                raise EncodeError(f"{v!r} is not a symbol of {t}") from None
        elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(t.symbols):
            idx = v
        else:
            raise EncodeError(f"{v!r} is not a symbol of {t}")
        return encode_uint(idx)
    else:
        raise EncodeError(f"not a type: {t!r}")
    return bytes(out)


def select_member(t: UnionType, v: Any) -> tuple[int, Type, Any]:
    """Which member of union ``t`` holds ``v``: explicit (UnionValue/Value) or inferred."""
    from .values import infer_type

    if isinstance(v, UnionValue):
        if not 0 <= v.index < len(t.types) or t.types[v.index] != v.type:
            raise EncodeError(f"union member {v.index}:{v.type} is not in {t}")
        return v.index, v.type, v.value
    if isinstance(v, Value):
        if v.type in t.types:
            return t.types.index(v.type), v.type, v.value
        raise EncodeError(f"{v.type} is not a member of {t}")
    vt = infer_type(v)
    if vt in t.types:
        return t.types.index(vt), vt, v
    for i, m in enumerate(t.types):  # a member the value can be written as exactly
        try:
            encode_value(m, v)
        except CsupError:
            continue
        return i, m, v
    raise EncodeError(f"{v!r} fits no member of {t}")


# ---------------------------------------------------------------- streams ---

FRAME_TYPES, FRAME_VALUES, FRAME_CONTROL = 0, 1, 2


# Types frames seen before, by (context state, payload bytes) -> (new state, the types,
# depths and sizes they define, nodes they add).  A context's state is the sequence of
# frames parsed since it was fresh, so a hit defines exactly what parsing would, limits
# included (a frame that fails a limit raises and is never stored).  Files from one
# writer repeat the same metadata types frames, so a driver opening 1,000 of them
# parses each distinct frame once and shares the (immutable) types.  Small frames
# only, and a bounded number: a big data stream's types are not worth keeping.
_TYPEDEF_MEMO: dict[tuple[int, bytes], tuple[int, tuple[Type, ...], tuple[int, ...],
                                             tuple[int, ...], int]] = {}
_MEMO_MAX_ENTRIES = 512
_MEMO_MAX_PAYLOAD = 8 << 10  # so at most 4 MiB of keys
_memo_ids = itertools.count(1)


class TypeContext:
    """The type IDs of one BSUP stream: primitives, then typedefs in order.

    Each typedef's depth and tree size are computed from its children's (kept
    per type ID), so checking them costs O(1) per reference however much the
    typedefs share, and a stream cannot describe types deeper than MAX_DEPTH,
    larger than MAX_TYPE_SIZE nodes, or more than MAX_TYPE_NODES in total.
    """

    def __init__(self) -> None:
        self.types: list[Type] = list(PRIMITIVES)
        self._depth: list[int] = [1] * len(PRIMITIVES)
        self._size: list[int] = [1] * len(PRIMITIVES)
        self._nodes = 0
        # Which sequence of types frames built this context: 0 = none yet, else
        # the id of the memo entry that produced it, -1 = not memoisable.
        self._state = 0

    def lookup(self, tid: int) -> Type:
        if tid >= len(self.types):
            raise FormatError(f"type ID {tid} is not defined")
        return self.types[tid]

    def _referrer(self, kids: list[int]) -> Callable[[int], Type]:
        """``lookup`` that also records the type IDs a typedef refers to."""
        def ref(tid: int) -> Type:
            t = self.lookup(tid)
            kids.append(tid)
            return t

        return ref

    def parse_typedefs(self, mv: memoryview) -> None:
        """Define the types of one types frame, memoised (see ``_TYPEDEF_MEMO``)."""
        state = self._state
        if state < 0 or len(mv) > _MEMO_MAX_PAYLOAD:
            self._state = -1
            self._parse_typedefs(mv)
            return
        key = (state, bytes(mv))
        hit = _TYPEDEF_MEMO.get(key)
        if hit is not None:
            self._state, types, depths, sizes, nodes = hit
            self.types.extend(types)
            self._depth.extend(depths)
            self._size.extend(sizes)
            self._nodes += nodes
            return
        n0, nodes0 = len(self.types), self._nodes
        self._state = -1  # until parsed: a failed parse leaves a half-built context
        self._parse_typedefs(mv)
        if len(_TYPEDEF_MEMO) >= _MEMO_MAX_ENTRIES:
            _TYPEDEF_MEMO.clear()
        self._state = next(_memo_ids)
        _TYPEDEF_MEMO[key] = (self._state, tuple(self.types[n0:]), tuple(self._depth[n0:]),
                              tuple(self._size[n0:]), self._nodes - nodes0)

    def _parse_typedefs(self, mv: memoryview) -> None:
        pos, end = 0, len(mv)
        while pos < end:
            if len(self.types) > MAX_TYPES:
                raise LimitError(f"stream defines more than {MAX_TYPES} types")
            code, pos = read_uvarint(mv, pos, end)
            kids: list[int] = []
            ref = self._referrer(kids)
            if code == ID_RECORD:
                n, pos = read_uvarint(mv, pos, end)
                _check_count(n, end - pos)
                fields = []
                for _ in range(n):
                    name, pos = _read_counted(mv, pos, end)
                    tid, pos = read_uvarint(mv, pos, end)
                    fields.append(Field(name, ref(tid)))
                t: Type = RecordType(tuple(fields))
            elif code in (ID_ARRAY, ID_SET, ID_ERROR):
                tid, pos = read_uvarint(mv, pos, end)
                inner = ref(tid)
                t = {ID_ARRAY: ArrayType, ID_SET: SetType, ID_ERROR: ErrorType}[code](inner)
            elif code == ID_MAP:
                k, pos = read_uvarint(mv, pos, end)
                v, pos = read_uvarint(mv, pos, end)
                t = MapType(ref(k), ref(v))
            elif code == ID_UNION:
                n, pos = read_uvarint(mv, pos, end)
                _check_count(n, end - pos)
                members = []
                for _ in range(n):
                    tid, pos = read_uvarint(mv, pos, end)
                    members.append(ref(tid))
                t = UnionType(tuple(members))
            elif code == ID_ENUM:
                n, pos = read_uvarint(mv, pos, end)
                _check_count(n, end - pos)
                syms = []
                for _ in range(n):
                    s, pos = _read_counted(mv, pos, end)
                    syms.append(s)
                t = EnumType(tuple(syms))
            elif code == ID_NAMED:
                name, pos = _read_counted(mv, pos, end)
                tid, pos = read_uvarint(mv, pos, end)
                t = NamedType(name, ref(tid))
            else:
                raise FormatError(f"unknown typedef code {code}")
            depth = 1 + max((self._depth[k] for k in kids), default=0)
            size = 1 + sum(self._size[k] for k in kids)
            if depth > MAX_DEPTH:
                raise LimitError(f"type nested deeper than {MAX_DEPTH}")
            if size > MAX_TYPE_SIZE:
                raise LimitError(f"type of more than {MAX_TYPE_SIZE} nodes")
            self._nodes += size
            if self._nodes > MAX_TYPE_NODES:
                raise LimitError(f"stream's types have more than {MAX_TYPE_NODES} nodes")
            self.types.append(t)
            self._depth.append(depth)
            self._size.append(size)


def _type_depth(t: Type, limit: int = MAX_DEPTH + 1) -> int:
    """Depth of a type (linear in its distinct subtypes, however they are shared)."""
    return type_limits(t)[0]


def read_frames(buf: bytes | memoryview, pos: int = 0, *, max_frame: int = MAX_FRAME,
                max_total: int | None = None
                ) -> Iterator[tuple[int, memoryview | None, int]]:
    """Yield (frame kind, payload, position after) for each frame; kind -1 = end of stream.

    Compressed payloads are decompressed here; the payload is None for an
    end-of-stream marker.  ``max_frame`` caps one frame's (decompressed) size,
    ``max_total`` all of them together (LimitError beyond either).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    total = 0
    while pos < end:
        hdr = mv[pos]
        if hdr == 0xFF:
            pos += 1
            yield -1, None, pos
            continue
        if hdr & 0x80:
            raise FormatError(f"frame header 0x{hdr:02x} has an unknown version")
        kind = (hdr >> 4) & 3
        if kind == 3:
            raise FormatError(f"frame header 0x{hdr:02x} has an unknown frame type")
        rest, pos = read_uvarint(mv, pos + 1, end)
        length = (rest << 4) | (hdr & 0x0F)
        if length > max_frame:
            raise LimitError(f"frame of {length} bytes exceeds the {max_frame}-byte limit")
        if pos + length > end:
            raise TruncatedError(f"frame of {length} bytes runs past the end of the data")
        payload = mv[pos : pos + length]
        pos += length
        if hdr & 0x40:
            budget = max_frame if max_total is None else min(max_frame, max_total - total)
            payload = _decompress_frame(payload, budget)
        total += len(payload)
        if max_total is not None and total > max_total:
            raise LimitError(f"frames hold more than {max_total} bytes")
        yield kind, payload, pos


def _decompress_frame(payload: memoryview, max_frame: int) -> memoryview:
    if len(payload) < 2:
        raise TruncatedError("compressed frame too short")
    fmt = payload[0]
    if fmt != 0:
        raise FormatError(f"compressed frame has unknown format {fmt}")
    size, pos = read_uvarint(payload, 1)
    if size > max_frame:
        raise LimitError(f"compressed frame claims {size} bytes, over the {max_frame} limit")
    if size > LZ4_MAX_RATIO * (len(payload) - pos) + 64:
        raise FormatError(f"compressed frame of {len(payload)} bytes cannot hold {size} bytes")
    try:
        out = lz4.block.decompress(bytes(payload[pos:]), uncompressed_size=size)
    except Exception as e:  # lz4 raises LZ4BlockError, ValueError, MemoryError
        raise FormatError(f"compressed frame is corrupt: {e}") from None
    if len(out) != size:
        raise FormatError(f"compressed frame decompressed to {len(out)} bytes, not {size}")
    return memoryview(out)


def iter_raw_values(buf: bytes | memoryview, pos: int = 0, *, end_at_eos: bool = False,
                    max_total: int | None = None
                    ) -> Iterator[tuple[Type, memoryview | None]]:
    """Yield (type, body) of every value in the streams from ``pos``.

    With ``end_at_eos`` reading stops after the first stream's end marker;
    ``max_total`` caps the frames' decompressed bytes (see ``read_frames``).
    """
    ctx = TypeContext()
    for kind, payload, _ in read_frames(buf, pos, max_total=max_total):
        if kind == -1:
            if end_at_eos:
                return
            ctx = TypeContext()
        elif kind == FRAME_TYPES:
            assert payload is not None
            ctx.parse_typedefs(payload)
        elif kind == FRAME_VALUES:
            assert payload is not None
            p, end = 0, len(payload)
            while p < end:
                tid, p = read_uvarint(payload, p, end)
                t = ctx.lookup(tid)
                tag, p = read_uvarint(payload, p, end)
                if tag == 0:
                    yield t, None
                    continue
                n = tag - 1
                if p + n > end:
                    raise TruncatedError(f"value of {n} bytes runs past its frame")
                yield t, payload[p : p + n]
                p += n


def read_values(buf: bytes | memoryview, *, typed: bool = True) -> list[Value]:
    """Every value of a BSUP byte string, as typed ``Value``s."""
    return [Value(t, decode_value(t, b, typed=typed)) for t, b in iter_raw_values(buf)]


class StreamEncoder:
    """Writes values as BSUP: one types frame per batch of new types, LZ4 frames when smaller.

    ``frame_size`` bounds a values frame (and so memory); ``compress``
    compresses a frame when that makes it smaller.
    """

    def __init__(self, out: BinaryIO | bytearray, *, compress: bool = True,
                 frame_size: int = 1 << 20) -> None:
        self.out = out
        self.compress = compress
        self.frame_size = frame_size
        self._ids: dict[Type, int] = {}
        self._next_id = FIRST_TYPEDEF_ID
        self._typedefs = bytearray()
        self._values = bytearray()

    def _write(self, b: bytes | bytearray) -> None:
        if isinstance(self.out, bytearray):
            self.out += b
        else:
            self.out.write(b)

    def type_id(self, t: Type) -> int:
        if isinstance(t, PrimitiveType):
            return t.id
        tid = self._ids.get(t)
        if tid is not None:
            return tid
        td = self._typedefs
        if isinstance(t, RecordType):
            ids = [self.type_id(f.type) for f in t.fields]
            td.append(ID_RECORD)
            td += uvarint(len(t.fields))
            for f, i in zip(t.fields, ids, strict=True):
                td += _counted(f.name)
                td += uvarint(i)
        elif isinstance(t, (ArrayType, SetType, ErrorType)):
            inner = t.inner if isinstance(t, ErrorType) else t.elem
            i = self.type_id(inner)
            td.append({ArrayType: ID_ARRAY, SetType: ID_SET, ErrorType: ID_ERROR}[type(t)])
            td += uvarint(i)
        elif isinstance(t, MapType):
            k, v = self.type_id(t.key), self.type_id(t.value)
            td.append(ID_MAP)
            td += uvarint(k) + uvarint(v)
        elif isinstance(t, UnionType):
            ids = [self.type_id(m) for m in t.types]
            td.append(ID_UNION)
            td += uvarint(len(ids))
            for i in ids:
                td += uvarint(i)
        elif isinstance(t, EnumType):
            td.append(ID_ENUM)
            td += uvarint(len(t.symbols))
            for s in t.symbols:
                td += _counted(s)
        elif isinstance(t, NamedType):
            i = self.type_id(t.inner)
            td.append(ID_NAMED)
            td += _counted(t.name) + uvarint(i)
        else:
            raise EncodeError(f"not a type: {t!r}")
        tid = self._next_id
        self._next_id += 1
        self._ids[t] = tid
        return tid

    def write_body(self, t: Type, body: bytes | None) -> None:
        """Append one value given its BSUP body."""
        tid = self.type_id(t)
        if self._typedefs:
            # a values frame may only use types already defined: flush values first
            if self._values:
                self._flush_values()
            self._emit(FRAME_TYPES, self._typedefs)
            self._typedefs = bytearray()
        self._values += uvarint(tid)
        append_tagged(self._values, body)
        if len(self._values) >= self.frame_size:
            self._flush_values()

    def write(self, t: Type, v: Any) -> None:
        self.write_body(t, encode_value(t, v))

    def _flush_values(self) -> None:
        if self._values:
            self._emit(FRAME_VALUES, self._values)
            self._values = bytearray()

    def _emit(self, kind: int, payload: bytes | bytearray) -> None:
        body = bytes(payload)
        compressed = False
        if self.compress and len(body) > 64:
            c = lz4.block.compress(body, store_size=False)
            framed = b"\x00" + uvarint(len(body)) + c
            if len(framed) < len(body):
                body, compressed = framed, True
        n = len(body)
        hdr = (kind << 4) | (n & 0x0F) | (0x40 if compressed else 0)
        self._write(bytes([hdr]) + uvarint(n >> 4) + body)

    def end_stream(self) -> None:
        """Flush and write the end-of-stream marker; the next value starts a new context."""
        self._flush_values()
        if self._typedefs:
            self._emit(FRAME_TYPES, self._typedefs)
            self._typedefs = bytearray()
        self._write(b"\xff")
        self._ids.clear()
        self._next_id = FIRST_TYPEDEF_ID


def encode_stream(values: Iterable[tuple[Type, Any]], *, compress: bool = True) -> bytes:
    """A whole BSUP stream (ended with 0xff) of (type, Python value) pairs."""
    out = bytearray()
    enc = StreamEncoder(out, compress=compress)
    for t, v in values:
        enc.write(t, v)
    enc.end_stream()
    return bytes(out)
