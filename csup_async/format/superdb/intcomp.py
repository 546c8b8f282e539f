"""Decoding the integer compression SuperDB's CSUP writes every integer vector with.

``super`` (v0.1-v0.3) stores ints, uints, offsets, tags and run lengths with the
Go package ``ronanh/intcomp``: a sequence of blocks, each either delta bit-packing
of whole 128 x 32-bit (or 256 x 64-bit) groups or, for the remainder, delta
variable-byte coding, ending with one word that holds the last block's length.
Only the format's facts are followed here (block headers, LSB-first packing of
32 (64) values per group into ``bitlen`` words, zig-zag when a group has a
negative delta, a trailing-zero shift for 64-bit signed groups); the packing is
undone with numpy one group at a time, so a 120,000-value vector costs about
a thousand small array operations, not a Python loop per value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...model.errors import FormatError

BLOCK32 = 128
BLOCK64 = 256


def _groups(words: np.ndarray, metas: list[tuple[int, int, int, int]], width: int,
            count: int) -> np.ndarray:
    """The deltas of bit-packed groups, in order: ``metas`` holds (word offset, packed
    bits, zig-zag, trailing-zero shift) per group of ``count`` values.  Groups of one
    bit width are unpacked together (one numpy pass per width, not per group)."""
    g = len(metas)
    at = np.fromiter((m[0] for m in metas), dtype=np.int64, count=g)
    bits = np.fromiter((m[1] for m in metas), dtype=np.int64, count=g)
    out = np.zeros((g, count), dtype=np.uint64)
    if ((at + bits) > words.size).any():
        raise FormatError("a bit-packed integer group runs past its segment")
    for b in np.unique(bits).tolist():
        if b == 0:
            continue
        rows = np.flatnonzero(bits == b)
        raw = words[at[rows, None] + np.arange(b, dtype=np.int64)]  # (groups, b) words
        # value j holds bits [j*b, j*b + b) of the group's words, least significant first
        pos = np.arange(count, dtype=np.int64) * b
        w, sh = pos // width, (pos % width).astype(np.uint64)
        vals = raw[:, w] >> sh
        spill = (pos % width) + b > width  # runs into the next word
        if spill.any():
            nxt = np.minimum(w + 1, b - 1)
            up = np.where(spill, np.uint64(width) - sh, np.uint64(0))
            vals |= (raw[:, nxt] << up) * spill.astype(np.uint64)
        if b < 64:
            vals &= np.uint64((1 << b) - 1)
        out[rows] = vals
    sign = np.fromiter((m[2] for m in metas), dtype=bool, count=g)
    if sign.any():
        z = out[sign]
        out[sign] = (z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))
    ntz = np.fromiter((m[3] for m in metas), dtype=np.uint64, count=g)
    if ntz.any():
        out <<= ntz[:, None]
    return out.reshape(-1)


def _varbyte(words: np.ndarray, width: int, count: int) -> np.ndarray:
    """Delta variable-byte values: each word's bytes most significant first, 7 bits a
    byte, high bit set on continuation bytes; deltas wrap at the word width."""
    be = words.astype(f">u{width // 8}").view(np.uint8).tolist()
    mask = (1 << width) - 1
    out: list[int] = []
    acc = shift = prev = 0
    for c in be:
        acc |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            prev = (prev + acc) & mask
            out.append(prev)
            acc = shift = 0
            if len(out) == count:
                break
    if len(out) != count:
        raise FormatError(f"variable-byte integer block holds {len(out)} values, "
                          f"its header says {count}")
    return np.array(out, dtype=np.uint64)


def _decode(words: np.ndarray, width: int, signed: bool) -> np.ndarray:
    if words.size == 0:
        return np.zeros(0, dtype=np.uint64)
    words = words[:-1]  # the last block's length, for appending: not needed to read
    parts: list[np.ndarray] = []
    pos = 0
    block = BLOCK32 if width == 32 else BLOCK64
    group = block // 4
    while pos < words.size:
        head = int(words[pos])
        if width == 32:
            if pos + 1 >= words.size:
                raise FormatError("integer block header runs past its segment")
            count, length = head, int(words[pos + 1])
        else:
            count, length = head & 0xFFFFFFFF, head >> 32
        if length < 1 or pos + length > words.size:
            raise FormatError(f"integer block of {length} words runs past its segment")
        body = words[pos:pos + length]
        if count < block:
            parts.append(_varbyte(body[2 if width == 32 else 1:], width, count))
        else:
            if count % block:
                raise FormatError(f"bit-packed integer block of {count} values")
            p = 3 if width == 32 else 2
            if p > body.size:
                raise FormatError("integer block header runs past its segment")
            init = np.uint64(int(body[p - 1]))
            metas = []
            for _ in range(count // block):
                if p >= body.size:
                    raise FormatError("bit-packed integer block runs past its segment")
                h = int(body[p])
                p += 1
                for k in range(4):
                    shift = 24 - 8 * k
                    bits = (h >> shift) & 0x7F
                    sign = (h >> (shift + 7)) & 1
                    ntz = (h >> (56 - 8 * k)) & 0xFF if width == 64 and signed else 0
                    if bits > width or ntz > bits:
                        raise FormatError(f"bit-packed group of {bits} bits in {width}-bit words")
                    metas.append((p, bits - ntz, sign, ntz))
                    p += bits - ntz
            if p > body.size:
                raise FormatError("a bit-packed integer group runs past its segment")
            vals = np.cumsum(_groups(body, metas, width, group), dtype=np.uint64) + init
            if width == 32:
                vals &= np.uint64(0xFFFFFFFF)
            parts.append(vals)
        pos += length
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


#: The C kernels (csup_async.decode._kernels), when the decode layer has handed them
#: over (:func:`use_native`): this module sits below it and never imports it.
_NATIVE: Any = None


def use_native(kernels: Any) -> None:
    """Decode with ``kernels.intcomp`` (None: numpy only)."""
    global _NATIVE
    _NATIVE = kernels if kernels is not None and hasattr(kernels, "intcomp") else None


def _native(buf: bytes | memoryview, width: int, signed: bool) -> np.ndarray | None:
    """The values by the C kernel (csup_async.decode._kernels.intcomp), or None (no
    kernel, or bytes it refuses: the numpy path below then says what is wrong)."""
    k = _NATIVE
    if k is None:
        return None
    wb = width // 8
    if len(buf) % wb or not len(buf):
        return None
    total = k.intcomp(buf, width, signed, None)  # the block headers' claims, checked
    if total is None:
        return None
    out = np.empty(total, dtype=np.uint64)
    got = k.intcomp(buf, width, signed, out)
    return out if got == total else None


def _words(buf: bytes | memoryview, width: int) -> np.ndarray:
    size = width // 8
    if len(buf) % size:
        raise FormatError(f"integer segment of {len(buf)} bytes is not whole {width}-bit words")
    return np.frombuffer(buf, dtype=f"<u{size}").astype(np.uint64)


def uint32s(buf: bytes | memoryview) -> np.ndarray:
    """The uint32 values (offsets, tags, counts, runs) of a segment, as int64."""
    got = _native(buf, 32, False)
    if got is not None:
        return got.view(np.int64)
    return _decode(_words(buf, 32), 32, False).astype(np.int64)


def uint64s(buf: bytes | memoryview) -> np.ndarray:
    got = _native(buf, 64, False)
    if got is not None:
        return got
    return _decode(_words(buf, 64), 64, False)


def int64s(buf: bytes | memoryview) -> np.ndarray:
    got = _native(buf, 64, True)
    if got is not None:
        return got.view(np.int64)
    return _decode(_words(buf, 64), 64, True).view(np.int64)


# ---------------------------------------------------------------- writing ---
def _groups7(d: np.ndarray) -> np.ndarray:
    """How many 7-bit bytes each (unsigned) value takes in variable-byte coding."""
    nb = np.ones(d.size, dtype=np.int64)
    for g in range(1, 10):
        nb += (d >> np.uint64(7 * g)) != 0
    return nb


def encode(values: np.ndarray | list[int], width: int) -> bytes:
    """Values in intcomp's layout as delta variable-byte blocks (``super``'s decoder reads
    any sequence of blocks; blocks of fewer than 128 (256) values are variable-byte
    coded, each delta from the previous value of its block, the first from 0), ending
    with the last block's length in words.  Signed values are passed as their
    two's-complement bits (deltas wrap at the word width, as the decoder's do)."""
    vals = np.asarray(values)
    if vals.dtype.kind == "i":
        vals = vals.astype(np.int64).view(np.uint64)
    vals = vals.astype(np.uint64)
    n = vals.size
    if n == 0:
        return b""
    wb = width // 8
    block = 127 if width == 32 else 255
    head = 2 if width == 32 else 1
    mask = np.uint64((1 << width) - 1)
    prev = np.zeros(n, dtype=np.uint64)
    prev[1:] = vals[:-1]
    first = np.arange(0, n, block)
    prev[first] = 0
    d = (vals - prev) & mask
    nb = _groups7(d)
    counts = np.diff(np.append(first, n))
    bblock = np.add.reduceat(nb, first)  # bytes of each block's values
    words = (bblock + wb - 1) // wb
    lengths = head + words
    # the data bytes, each block's starting on a word of its own, padded with 0x80
    dstart = np.cumsum(words) - words
    stream = np.full(int(words.sum()) * wb, 0x80, dtype=np.uint8)
    blk = np.repeat(np.arange(first.size), counts)
    within = np.cumsum(nb) - nb - np.repeat(np.cumsum(bblock) - bblock, counts)
    pos = dstart[blk] * wb + within
    for g in range(10):
        m = nb > g
        if not m.any():
            break
        byte = ((d[m] >> np.uint64(7 * g)) & np.uint64(0x7F)).astype(np.uint8)
        byte |= np.where(nb[m] - 1 > g, 0x80, 0).astype(np.uint8)
        stream[pos[m] + g] = byte
    data = stream.view(f">u{wb}").astype(np.uint64)
    out = np.zeros(int(lengths.sum()) + 1, dtype=np.uint64)
    hp = np.cumsum(lengths) - lengths
    if width == 32:
        out[hp] = counts
        out[hp + 1] = lengths
    else:
        out[hp] = counts.astype(np.uint64) | (lengths.astype(np.uint64) << np.uint64(32))
    if data.size:
        idx = np.repeat(hp + head - dstart, words) + np.arange(data.size)
        out[idx] = data
    out[-1] = lengths[-1]
    return out.astype(f"<u{wb}").tobytes()


def encode_uint32s(values: np.ndarray | list[int]) -> bytes:
    return encode(values, 32)


def encode_int64s(values: np.ndarray | list[int]) -> bytes:
    return encode(np.asarray(values, dtype=np.int64), 64)


def encode_uint64s(values: np.ndarray | list[int]) -> bytes:
    return encode(np.asarray(values, dtype=np.uint64), 64)
