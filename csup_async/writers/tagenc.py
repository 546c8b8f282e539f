"""Tag-encoded column values built with numpy, many at a time.

A CSUP column stream is a run of tag-encoded values: ``uvarint(len + 1)`` then
the body, ``0`` for a null.  The per-value encoder (:mod:`csup_async.format.bsup`)
writes one at a time; these functions build the same bytes for a whole array
at once, so the vectorised writers (:mod:`csup_async.shred`) never loop in
Python per value.  Each returns an :class:`Encoded`: the bytes and the end
offset of every value, which is what a stream needs to cut segments after the
right value.

Signed ints are sign and magnitude (``|v| << 1 | sign``) exactly as
:func:`csup_async.format.bsup.encode_int` and Zed write them, never zig-zag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Encoded", "encode_uints", "encode_ints", "encode_fixed", "encode_varbinary",
           "encode_constant", "with_nulls"]


@dataclass(frozen=True, slots=True)
class Encoded:
    """Tag-encoded values: ``data`` (uint8) and ``ends`` (int64, end of each value)."""

    data: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return int(self.ends.size)

    @property
    def nbytes(self) -> int:
        return int(self.data.size)


def _int_bytes(u: np.ndarray) -> np.ndarray:
    """Bytes each uint64 needs with high zero bytes dropped (0 for zero)."""
    n = np.zeros(u.size, np.int64)
    for j in range(8):
        n += u >= (np.uint64(1) << np.uint64(8 * j)) if j else u > 0
    return n


def encode_uints(u: np.ndarray) -> Encoded:
    """Tag-encoded uint64s.

    Each value is laid out as a 9-byte row (tag, 8 little-endian bytes) and a
    row-major boolean mask keeps the tag and the value's significant bytes:
    one gather for the whole column.
    """
    u = np.ascontiguousarray(u, dtype="<u8")
    nb = _int_bytes(u)
    rows = np.empty((u.size, 9), np.uint8)
    rows[:, 0] = nb + 1
    rows[:, 1:] = u.view(np.uint8).reshape(-1, 8)
    keep = np.arange(9) <= nb[:, None]
    return Encoded(rows[keep], np.cumsum(nb + 1))


def encode_ints(v: np.ndarray) -> Encoded:
    """Tag-encoded signed ints: sign and magnitude (``|v| << 1 | sign``, Zed's
    ``EncodeCountedVarint``; int64's minimum wraps to 1), then as uints."""
    v = np.asarray(v, dtype=np.int64)
    sign = (v >> 63).view(np.uint64)  # all ones where negative
    magnitude = (v.view(np.uint64) ^ sign) - sign  # |v|, 2**63 for the minimum
    return encode_uints((magnitude << np.uint64(1)) | (sign & np.uint64(1)))


def encode_fixed(v: np.ndarray, width: int) -> Encoded:
    """Tag-encoded fixed-width bodies (floats, bools): a constant tag per value."""
    raw = np.ascontiguousarray(v).view(np.uint8).reshape(-1, width)
    rows = np.empty((raw.shape[0], width + 1), np.uint8)
    rows[:, 0] = width + 1
    rows[:, 1:] = raw
    return Encoded(rows.reshape(-1),
                   np.arange(1, raw.shape[0] + 1, dtype=np.int64) * (width + 1))


def encode_constant(body: bytes | None, n: int) -> Encoded:
    """``n`` copies of one body (None: ``n`` nulls)."""
    one = np.frombuffer(b"\x00" if body is None else bytes([len(body) + 1]) + body, np.uint8)
    if body is not None and len(body) + 1 >= 0x80:
        raise ValueError("encode_constant takes bodies under 127 bytes")
    return Encoded(np.tile(one, n), np.arange(1, n + 1, dtype=np.int64) * one.size)


def encode_varbinary(offsets: np.ndarray, data: np.ndarray) -> Encoded:
    """Tag-encoded strings/bytes: uvarint(length + 1), then the bytes."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    code = (lengths + 1).astype(np.uint64)
    tb = np.ones(lengths.size, np.int64)
    for j in range(1, 10):
        more = code >= (np.uint64(1) << np.uint64(7 * j))
        if not more.any():
            break
        tb += more
    sizes = tb + lengths
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if ends.size else 0
    out = np.empty(total, np.uint8)
    starts = ends - sizes
    body = np.ones(total, bool)
    if (tb == 1).all():
        out[starts] = code.astype(np.uint8)
        body[starts] = False
    else:
        for j in range(int(tb.max())):
            sel = tb > j
            b = (code[sel] >> np.uint64(7 * j)) & np.uint64(0x7F)
            more = tb[sel] > j + 1
            out[starts[sel] + j] = (b | np.where(more, np.uint64(0x80), np.uint64(0))
                                    ).astype(np.uint8)
            body[starts[sel] + j] = False
    out[body] = data[offsets[0]: offsets[-1]] if offsets.size else data[:0]
    return Encoded(out, ends)


def with_nulls(enc: Encoded, valid: np.ndarray | None) -> Encoded:
    """``enc`` (the non-null values) with a null tag at every slot ``valid`` is False."""
    if valid is None or valid.all():
        return enc
    n = valid.size
    sizes = np.ones(n, np.int64)
    sizes[valid] = np.diff(enc.ends, prepend=0)
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if n else 0
    out = np.zeros(total, np.uint8)
    keep = np.ones(total, bool)
    keep[ends[~valid] - 1] = False
    out[keep] = enc.data
    return Encoded(out, ends)
