"""Encoding integers as SuperDB's CSUP v16 stores them (``ronanh/intcomp``'s framing).

The reader is :mod:`csup_async.superdb.intcomp`.  The format is a run of blocks,
each either delta bit-packing of whole 128 (32-bit) or 256 (64-bit) value groups
or, below that size, delta variable-byte coding; a final word holds the length of
the last block.  A decoder picks the kind of each block by its value count, so a
sequence of variable-byte blocks of at most 127 (255) values is a valid stream:
that is what is written here (simple and exact; ``super``'s own files are
smaller, bit-packed).  Variable-byte: each delta (wrapping at the word width) in
7-bit groups, least significant first, the high bit set on all but the last,
packed into words most significant byte first, the last word padded with 0x80.
"""

from __future__ import annotations

import numpy as np

__all__ = ["encode_int64s", "encode_uint32s", "encode_uint64s"]


def _varbyte_blocks(vals: np.ndarray, width: int) -> bytes:
    n = int(vals.size)
    if n == 0:
        return b""
    block = 127 if width == 32 else 255
    mask = (1 << width) - 1
    nbytes = width // 8
    header_words = 2 if width == 32 else 1
    words: list[int] = []
    last_len = 0
    seq = [int(x) & mask for x in vals.tolist()]
    for start in range(0, n, block):
        chunk = seq[start:start + block]
        stream = bytearray()
        prev = 0
        for x in chunk:
            delta = (x - prev) & mask
            prev = x
            while delta >= 0x80:
                stream.append((delta & 0x7F) | 0x80)
                delta >>= 7
            stream.append(delta)
        while len(stream) % nbytes:
            stream.append(0x80)
        body = [int.from_bytes(stream[i:i + nbytes], "big")
                for i in range(0, len(stream), nbytes)]
        length = header_words + len(body)
        if width == 32:
            words += [len(chunk), length]
        else:
            words.append(len(chunk) | (length << 32))
        words += body
        last_len = length
    words.append(last_len)
    return np.array(words, dtype=f"<u{nbytes}").tobytes()


def encode_uint32s(vals: np.ndarray | list[int]) -> bytes:
    """Offsets, tags, counts and runs (uint32) as ``CompressUint32`` frames them."""
    return _varbyte_blocks(np.asarray(vals, dtype=np.uint64), 32)


def encode_uint64s(vals: np.ndarray | list[int]) -> bytes:
    return _varbyte_blocks(np.asarray(vals, dtype=np.uint64), 64)


def encode_int64s(vals: np.ndarray | list[int]) -> bytes:
    """Signed values: the same bytes as their two's-complement words (deltas wrap)."""
    return _varbyte_blocks(np.asarray(vals, dtype=np.int64).view(np.uint64), 64)
