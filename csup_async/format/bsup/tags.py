"""Varints, tagged bodies and the integer encodings every BSUP body is built of.

A tag is a uvarint: 0 for null, else 1 + the length of the body that follows.
Signed ints are sign-and-magnitude (Zed's ``zcode/counted.go``), not zig-zag:
see :func:`encode_int`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...model.errors import EncodeError, FormatError, TruncatedError


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



# ------------------------------------------------------------- counted ---


def counted(s: str) -> bytes:
    """A name as BSUP writes it: its UTF-8 length as a uvarint, then the bytes."""
    try:
        b = s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise EncodeError(f"name {s!r} is not valid Unicode: {e.reason}") from None
    return uvarint(len(b)) + b


def read_counted(mv: memoryview, pos: int, end: int | None = None) -> tuple[str, int]:
    """Inverse of :func:`counted`: (the name, the position after it)."""
    end = len(mv) if end is None else end
    n, pos = read_uvarint(mv, pos, end)
    if pos + n > end:
        raise TruncatedError("name runs past the end of its frame")
    try:
        return bytes(mv[pos : pos + n]).decode("utf-8"), pos + n
    except UnicodeDecodeError as e:
        raise FormatError("name is not valid UTF-8") from e


def check_count(n: int, remaining: int) -> None:
    """FormatError for a count of elements beyond the bytes left (each takes one at least)."""
    if n > remaining:
        raise FormatError(f"count {n} exceeds the {remaining} bytes that remain")
