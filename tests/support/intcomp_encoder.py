"""A plain encoder of the intcomp layout (as ``super`` writes integer vectors), for
property tests of :mod:`csup_async.format.superdb.intcomp`: written from the layout's
description, slow and simple, with a choice of the trailing-zero shift the
decoder must honour for 64-bit signed groups."""

from __future__ import annotations

import struct


def _mask(width: int) -> int:
    return (1 << width) - 1


def _signed(v: int, width: int) -> int:
    v &= _mask(width)
    return v - (1 << width) if v >> (width - 1) else v


def _zz(d: int, width: int) -> int:
    return ((d << 1) ^ (d >> (width - 1))) & _mask(width)


def _pack(vals: list[int], bits: int, width: int) -> list[int]:
    acc = 0
    for i, v in enumerate(vals):
        acc |= v << (i * bits)
    return [(acc >> (width * k)) & _mask(width) for k in range(bits)]


def _group(prev: int, group: list[int], width: int, use_ntz: bool) -> tuple[int, int, int,
                                                                           list[int]]:
    deltas = []
    for v in group:
        deltas.append(_signed(v - prev, width))
        prev = v
    sign = int(any(d < 0 for d in deltas))
    ntz = 0
    if use_ntz and any(deltas):
        ntz = min((d & -d).bit_length() - 1 for d in deltas if d)
    shifted = [d >> ntz for d in deltas]
    stored = [_zz(d, width) if sign else d & _mask(width) for d in shifted]
    bits = max((s.bit_length() for s in stored), default=0)
    return sign, ntz, bits + ntz, _pack(stored, bits, width)


def _varbyte(vals: list[int], width: int) -> list[int]:
    out = bytearray()
    prev = 0
    for v in vals:
        d = (v - prev) & _mask(width)
        prev = v
        while d >= 0x80:
            out.append(0x80 | (d & 0x7F))
            d >>= 7
        out.append(d)
    size = width // 8
    while len(out) % size:
        out.append(0x80)
    return [int.from_bytes(out[i:i + size], "big") for i in range(0, len(out), size)]


def encode(values: list[int], width: int, signed: bool, use_ntz: bool = False) -> bytes:
    """``values`` (taken modulo 2**width) in intcomp's layout, as little-endian words."""
    vals = [v & _mask(width) for v in values]
    block = 128 if width == 32 else 256
    group = block // 4
    words: list[int] = []
    last = 0
    n_full = len(vals) // block * block
    if n_full:
        start = len(words)
        body: list[int] = []
        prev = vals[0]
        for b in range(0, n_full, block):
            head, packed = 0, []
            for k in range(4):
                g = vals[b + k * group:b + (k + 1) * group]
                sign, ntz, bits, p = _group(prev, g, width, use_ntz and signed and width == 64)
                prev = g[-1]
                shift = 24 - 8 * k
                head |= (sign << (shift + 7)) | (bits << shift)
                if width == 64:
                    head |= ntz << (56 - 8 * k)
                packed += p
            body += [head, *packed]
        header = [n_full, 0, vals[0]] if width == 32 else [0, vals[0]]
        words += header + body
        length = len(words) - start
        if width == 32:
            words[start + 1] = length
        else:
            words[start] = n_full | (length << 32)
        last = length
    rest = vals[n_full:]
    if rest:
        data = _varbyte(rest, width)
        header = [len(rest), 0] if width == 32 else [0]
        length = len(header) + len(data)
        if width == 32:
            header[1] = length
        else:
            header[0] = len(rest) | (length << 32)
        words += header + data
        last = length
    if not vals:
        return b""
    words.append(last)
    return struct.pack(f"<{len(words)}{'I' if width == 32 else 'Q'}", *words)
