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

from ..errors import FormatError

BLOCK32 = 128
BLOCK64 = 256


def _unpack(words: np.ndarray, bits: int, width: int, count: int) -> np.ndarray:
    """``count`` values of ``bits`` bits packed LSB first into ``words`` of ``width`` bits."""
    if bits == 0:
        return np.zeros(count, dtype=np.uint64)
    stream = np.unpackbits(words.astype(f"<u{width // 8}").view(np.uint8), bitorder="little")
    need = count * bits
    if stream.size < need:
        raise FormatError("a bit-packed integer group runs past its segment")
    grid = stream[:need].reshape(count, bits).astype(np.uint64)
    weights = np.left_shift(np.uint64(1), np.arange(bits, dtype=np.uint64))
    return (grid * weights).sum(axis=1, dtype=np.uint64)


def _zigzag(v: np.ndarray) -> np.ndarray:
    return (v >> np.uint64(1)) ^ (np.uint64(0) - (v & np.uint64(1)))


def _group(words: np.ndarray, pos: int, nwords: int, width: int, count: int, sign: int,
           ntz: int, init: np.uint64) -> tuple[np.ndarray, int]:
    if pos + nwords > words.size:
        raise FormatError("a bit-packed integer group runs past its segment")
    deltas = _unpack(words[pos:pos + nwords], nwords, width, count) if nwords else np.zeros(
        count, dtype=np.uint64)
    if sign:
        deltas = _zigzag(deltas)
    if ntz:
        deltas = deltas << np.uint64(ntz)
    out = np.cumsum(deltas, dtype=np.uint64) + init
    if width == 32:
        out &= np.uint64(0xFFFFFFFF)
    return out, pos + nwords


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
                    vals, p = _group(body, p, bits - ntz, width, group, sign, ntz, init)
                    parts.append(vals)
                    init = vals[-1]
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
