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


def _words(buf: bytes | memoryview, width: int) -> np.ndarray:
    size = width // 8
    if len(buf) % size:
        raise FormatError(f"integer segment of {len(buf)} bytes is not whole {width}-bit words")
    return np.frombuffer(buf, dtype=f"<u{size}").astype(np.uint64)


def uint32s(buf: bytes | memoryview) -> np.ndarray:
    """The uint32 values (offsets, tags, counts, runs) of a segment, as int64."""
    return _decode(_words(buf, 32), 32, False).astype(np.int64)


def uint64s(buf: bytes | memoryview) -> np.ndarray:
    return _decode(_words(buf, 64), 64, False)


def int64s(buf: bytes | memoryview) -> np.ndarray:
    return _decode(_words(buf, 64), 64, True).view(np.int64)
