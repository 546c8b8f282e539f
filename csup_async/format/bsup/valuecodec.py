"""BSUP value bodies to Python values and back (the documented mapping), exact for
every supported type: decoding then encoding a body gives back its bytes.

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
import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from ...model.errors import (
    CsupError,
    EncodeError,
    FormatError,
    LimitError,
    UnsupportedTypeError,
)
from ...model.types import (
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
from ...model.values import UnionValue, Value, infer_type, numpy_ns
from .limits import MAX_DEPTH
from .tags import append_tagged, decode_int, decode_uint, encode_int, encode_uint, iter_tagged
from .typecodec import check_type, decode_type_value, encode_type_value

UNION_TAG_SIGNED = True

_INT_BITS = {
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "uint128": 128, "uint256": 256,
    "int8": 8, "int16": 16, "int32": 32, "int64": 64, "int128": 128, "int256": 256,
    "duration": 64, "time": 64,
}
_FLOAT_FORMATS = {"float16": "<e", "float32": "<f", "float64": "<d"}

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
        # Zed's error body is its wrapped value's body, not a one-element container
        return decode_value(t.inner, body, typed=typed, depth=d)
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
        v = _parsed(v, ipaddress.ip_address)
        if not isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            raise EncodeError(f"ip needs an ipaddress address, not {type(v).__name__}")
        return v.packed
    if name == "net":
        v = _parsed(v, ipaddress.ip_network)
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


def _parsed(v: Any, parse: Callable[[str], Any]) -> Any:
    """``v`` parsed if it is text (an address or network written out), else as given."""
    if not isinstance(v, str):
        return v
    try:
        return parse(v)
    except ValueError as e:
        raise EncodeError(str(e)) from e


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def as_int(name: str, v: Any) -> int:
    """``v`` as the integer a ``name`` (an integer, time or duration type) holds."""
    return _as_int(name, v)


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
    if isinstance(t, ErrorType):
        return encode_value(t.inner, v, d)
    out = bytearray()
    if isinstance(t, RecordType):
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


