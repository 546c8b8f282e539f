"""Column decoders in numpy: from a primitive column stream (or its compressed
segment) to numpy arrays, and the helpers that turn presence runs and lengths
into masks and offsets.

These are the fallback where the C kernels are not built, and the reference
everywhere: the public functions (:mod:`.kernels`) call them whenever a kernel
refuses an input, so every error message comes from here."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import lz4.block
import numpy as np

from ..format.meta import COMPRESSION_LZ4, COMPRESSION_NONE, Segment
from ..model.errors import FormatError, LimitError, TruncatedError, UnsupportedTypeError
from ..model.options import DEFAULT_MAX_MEM_LENGTH as _DEFAULT_MAX_MEM_LENGTH
from ..model.types import PrimitiveType
from .scan import SERIAL_BELOW, scan_tags, scan_values
from .tags import (
    ANY_PROFILE,
    BOOL_PROFILE,
    FLOAT_PROFILES,
    INT32_PROFILE,
    INT_PROFILES,
    SINT_PROFILES,
    Buffer,
    TagIndex,
    as_u8,
    check_count,
    count_error,
    padded,
)

#: Largest decompressed segment accepted by default (256 MiB, defined with the other
#: options in csup_async.model.options).  A segment's ``mem_length`` is read from the
#: file, so without a cap a few bytes of LZ4 could ask for gigabytes.
DEFAULT_MAX_MEM_LENGTH = _DEFAULT_MAX_MEM_LENGTH


def decompress_segment(raw: Buffer, segment: Segment, *,
                       max_mem_length: int = DEFAULT_MAX_MEM_LENGTH) -> Buffer:
    """The decompressed bytes of one segment (``raw`` itself when stored uncompressed).

    ``max_mem_length`` caps ``segment.mem_length`` (LimitError beyond it), so a
    corrupt or hostile file cannot make us allocate more than that.
    """
    try:
        nbytes = memoryview(raw).nbytes
    except TypeError:
        raise FormatError(f"segment data of type {type(raw).__name__} is not bytes") from None
    length, mem = segment.length, segment.mem_length
    where = f"segment at offset {segment.offset}"
    if length < 0 or mem < 0:
        raise FormatError(f"{where} has a negative length ({length}) or mem_length ({mem})")
    if nbytes < length:
        raise TruncatedError(f"{where}: got {nbytes} bytes, its length is {length}")
    if nbytes > length:
        raise FormatError(f"{where}: got {nbytes} bytes, its length is {length}")
    if mem > max_mem_length:
        raise LimitError(f"{where} decompresses to {mem} bytes, over "
                         f"max_mem_length={max_mem_length}")
    if segment.compression == COMPRESSION_NONE:
        if mem != length:
            raise FormatError(f"{where} is uncompressed but its mem_length {mem} "
                              f"differs from its length {length}")
        return raw
    if segment.compression != COMPRESSION_LZ4:
        raise FormatError(f"{where} has unknown compression format {segment.compression}")
    # LZ4 expands by at most ~255:1; refuse an impossible claim before allocating it.
    if mem > 256 * length + 64:
        raise FormatError(f"{where}: {length} bytes of LZ4 cannot decompress to {mem} bytes")
    try:
        out = lz4.block.decompress(raw, uncompressed_size=mem)
    except Exception as e:  # LZ4BlockError, ValueError, MemoryError: all mean "corrupt"
        raise FormatError(f"{where}: corrupt LZ4 block ({e})") from None
    if len(out) != mem:
        raise FormatError(f"{where}: LZ4 block decompressed to {len(out)} bytes, "
                          f"mem_length says {mem}")
    return out


# ---------------------------------------------------------- decoders ---

# keeps the low (code - 1) bytes of a word, code being a value's length + 1 (0: null)
_MASK_BY_CODE = np.array([0, 0] + [(1 << (8 * i)) - 1 for i in range(1, 9)], np.uint64)
_ONE = np.uint64(1)


def _stride(buf: np.ndarray, count: int | None, tag: int) -> int | None:
    """The number of values if every one is the single-byte tag ``tag`` (no nulls)."""
    n = buf.size
    size = max(tag, 1)
    if n == 0 or n % size or (count is not None and count * size != n):
        return None
    if buf[0] != tag or (buf[: 64 * size: size] != tag).any():
        return None
    if (buf[::size] != tag).any():
        return None
    return n // size


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _validity(code: np.ndarray) -> np.ndarray | None:
    valid = code != 0
    return None if valid.all() else valid


def _gather_words(bpad: np.ndarray, at: np.ndarray, size: int, skip: int = 0) -> np.ndarray:
    """The ``size``-byte little-endian word at each offset + ``skip`` (unaligned, padded)."""
    dt = np.dtype(f"<u{size}")
    view = np.ndarray((bpad.size - size + 1 - skip,), dtype=dt, buffer=bpad, offset=skip,
                      strides=(1,))
    return view[at]


def _codes(res: TagIndex) -> tuple[np.ndarray, np.ndarray, int]:
    """(length + 1 of each value, 0 for null; offsets; skip from offset to body)."""
    if res.v is not None:
        return res.v, res.tags, 1
    return res.lengths + 1, res.starts, 0


def _length_error(what: str, res: TagIndex, bad: np.ndarray) -> FormatError:
    i = _first_bad(bad)
    return FormatError(f"{what} value of {res.lengths[i]} bytes at stream offset {res.tags[i]}")


def decode_ints(stream: Buffer, count: int | None = None, *, signed: bool,
                bits: int = 64) -> tuple[np.ndarray, np.ndarray | None]:
    """(int64 or uint64 values, validity or None when no value is null); nulls hold 0.

    Values are little-endian with high zero bytes dropped.  Signed ones are
    sign-and-magnitude first (Zed's ``zcode.EncodeCountedVarint``: ``|v| << 1``
    with the sign in bit 0, so -1 is ``03``), and ``u = 1`` ("minus zero") is
    int64's minimum, as Zed decodes it.  A body longer than the type can need,
    or a signed value outside a narrow type's range, is a FormatError.
    """
    name = f"{'int' if signed else 'uint'}{bits}"
    if bits not in (8, 16, 32, 64):
        raise UnsupportedTypeError(f"{name} has no fast decoder")
    width = bits // 8
    most = min(width + 1, 8) if signed else width  # body bytes a value may take
    buf = as_u8(stream)
    bpad = padded(buf)
    res = scan_values(buf, bpad, count, (SINT_PROFILES if signed else INT_PROFILES)[width])
    code, at, skip = _codes(res)
    over = code > most + 1
    if over.any():
        raise _length_error(name, res, over)
    words = _gather_words(bpad, at, 8, skip)
    words &= np.take(_MASK_BY_CODE, code.astype(np.intp))
    validity = _validity(code)
    if not signed:
        return words, validity
    values = sign_magnitude_to_int64(words)
    if bits < 64:
        lim = 1 << (bits - 1)
        bad = (values < -lim) | (values >= lim)
        if bad.any():
            i = _first_bad(bad)
            raise FormatError(f"{name} value {int(values[i])} out of range at stream "
                              f"offset {res.tags[i]}")
    return values, validity


def sign_magnitude_to_int64(words: np.ndarray) -> np.ndarray:
    """Zed's signed encoding, undone in place on uint64 words: int64 values.

    ``(m ^ -s) + s`` negates the magnitude ``m`` where the sign ``s`` is set
    (two's complement); "minus zero" (``u = 1``) then has its top bit set, which
    makes it int64's minimum.
    """
    sign = words & _ONE
    words >>= _ONE
    minus_zero = (words == 0) & (sign == _ONE)
    words ^= np.negative(sign)
    words += sign
    words[minus_zero] = np.uint64(1 << 63)
    return words.view(np.int64)


def decode_int32s(stream: Buffer, count: int | None = None) -> np.ndarray:
    """int32 values of a lengths, union-tag, super-ID or presence stream (no nulls)."""
    buf = as_u8(stream)
    bpad = padded(buf)
    res = scan_values(buf, bpad, count, INT32_PROFILE)
    code, at, skip = _codes(res)
    null = code == 0
    if null.any():
        raise FormatError(f"a null at stream offset {res.tags[_first_bad(null)]} of an "
                          f"int32 stream")
    over = code > 6  # sign and magnitude: int32's minimum takes 5 bytes
    if over.any():
        raise _length_error("int32", res, over)
    if not (code == 6).any():
        # the usual case: every value fits 4 bytes, so 32-bit words suffice
        words = _gather_words(bpad, at, 4, skip)
        words &= np.take(_MASK_BY_CODE, code.astype(np.intp)).astype(np.uint32)
        sign = words & np.uint32(1)
        words >>= np.uint32(1)
        minus_zero = (words == 0) & (sign == 1)  # u = 1: int64's minimum, Zed says
        if minus_zero.any():
            raise FormatError(f"int32 value {-(1 << 63)} out of range at stream offset "
                              f"{res.tags[_first_bad(minus_zero)]}")
        words ^= np.negative(sign)
        words += sign
        return words.view(np.int32)
    wide = _gather_words(bpad, at, 8, skip)
    wide &= np.take(_MASK_BY_CODE, code.astype(np.intp))
    values = sign_magnitude_to_int64(wide)
    bad = (values < -(1 << 31)) | (values >= 1 << 31)
    if bad.any():
        i = _first_bad(bad)
        raise FormatError(f"int32 value {int(values[i])} out of range at stream offset "
                          f"{res.tags[i]}")
    return values.astype(np.int32)


FLOAT_DTYPES = {2: np.dtype("<f2"), 4: np.dtype("<f4"), 8: np.dtype("<f8")}


def decode_floats(stream: Buffer, count: int | None = None, *,
                  width: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(float16/32/64 values, validity or None); every value is exactly ``width`` bytes."""
    if width not in FLOAT_DTYPES:
        raise UnsupportedTypeError(f"float{8 * width} has no fast decoder")
    dt = FLOAT_DTYPES[width]
    buf = as_u8(stream)
    m = _stride(buf, count, width + 1)
    if m is not None:
        view = np.ndarray((m,), dtype=dt, buffer=buf, offset=1, strides=(width + 1,))
        return np.ascontiguousarray(view), None
    bpad = padded(buf)
    res = scan_values(buf, bpad, count, FLOAT_PROFILES[width])
    code, at, skip = _codes(res)
    bad = (code != width + 1) & (code != 0)
    if bad.any():
        raise _length_error(f"float{8 * width}", res, bad)
    values = _gather_words(bpad, at, width, skip).view(dt)
    validity = _validity(code)
    if validity is not None:
        values[~validity] = 0
    return values, validity


def decode_bools(stream: Buffer, count: int | None = None) -> tuple[np.ndarray,
                                                                    np.ndarray | None]:
    """(bool values, validity or None); a body other than one byte 0 or 1 is an error."""
    buf = as_u8(stream)
    m = _stride(buf, count, 2)
    if m is not None:
        body = buf[1::2]
        if (body > 1).any():
            i = _first_bad(body > 1)
            raise FormatError(f"bool value {body[i]} at stream offset {2 * i}")
        return body.astype(bool), None
    bpad = padded(buf)
    res = scan_values(buf, bpad, count, BOOL_PROFILE)
    code, at, skip = _codes(res)
    bad = (code != 2) & (code != 0)
    if bad.any():
        raise _length_error("bool", res, bad)
    validity = _validity(code)
    body = bpad[at + skip]
    if validity is not None:
        body[~validity] = 0
    if (body > 1).any():
        i = _first_bad(body > 1)
        raise FormatError(f"bool value {body[i]} at stream offset {res.tags[i]}")
    return body.view(bool), validity


def decode_varbinary(stream: Buffer, count: int | None = None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None]:
    """(int64 offsets of n+1, compact uint8 data, validity or None) for strings and bytes.

    Strings are not checked here: :func:`validate_utf8` does it in one pass.
    """
    buf = as_u8(stream)
    bpad = padded(buf) if buf.size >= SERIAL_BELOW else None
    res = scan_values(buf, bpad, count, ANY_PROFILE)
    code = res.v if res.v is not None else res.lengths + 1
    offsets = np.empty(code.size + 1, np.int64)
    if res.v is not None:  # the data is the stream less one tag byte per value
        np.subtract(res.tags, np.arange(code.size), out=offsets[:-1])
        offsets[-1] = buf.size - code.size
    else:
        offsets[0] = 0
        np.cumsum(np.maximum(res.lengths, 0), out=offsets[1:])
    body = np.ones(buf.size, bool)
    body[res.tags] = False
    if res.v is None:  # tags of more than one byte
        extra = res.starts - res.tags
        for j in range(1, int(extra.max())):
            body[res.tags[extra > j] + j] = False
    return offsets, buf[body], _validity(code)


def validate_utf8(offsets: np.ndarray, data: np.ndarray) -> None:
    """FormatError unless every value ``data[offsets[i]:offsets[i+1]]`` is valid UTF-8.

    The whole buffer is decoded once (C speed); a value boundary inside a
    character would still pass that, so we also require that no non-empty value
    starts with a continuation byte.  Only on failure do we look for the culprit.
    """
    data = np.ascontiguousarray(data, dtype=np.uint8)
    offsets = np.asarray(offsets)
    try:
        text, _ = codecs.utf_8_decode(memoryview(data), "strict", True)
    except UnicodeDecodeError as e:
        i = max(int(np.searchsorted(offsets, e.start, side="right")) - 1, 0)
        start = int(offsets[i]) if offsets.size else 0
        raise FormatError(f"string value {i} is not valid UTF-8 ({e.reason} at byte "
                          f"{e.start - start} of the value)") from None
    if offsets.size > 1 and len(text) != data.size:  # not all ASCII
        first = offsets[:-1]
        nonempty = offsets[1:] > first
        outside = nonempty & ((first < 0) | (first >= data.size))
        if outside.any():  # offsets not from the decoders (an Arrow array handed in)
            i = _first_bad(outside)
            raise FormatError(f"string value {i} starts outside the {data.size} bytes of "
                              f"string data (offset {int(first[i])})")
        lead = data[np.minimum(first, data.size - 1)]
        bad = nonempty & ((lead & 0xC0) == 0x80)
        if bad.any():
            i = _first_bad(bad)
            raise FormatError(f"string value {i} is not valid UTF-8 (it starts inside a "
                              f"character)")


# ---------------------------------------------------- structure helpers ---


def scatter_offsets(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The offsets (from 0, one more than ``mask``) of the values ``offsets`` delimits
    placed at the rows ``mask`` marks, empty elsewhere.  The mask must mark as many rows
    as there are values."""
    offsets = np.asarray(offsets, dtype=np.int64)
    mask = np.asarray(mask, dtype=bool)
    m = offsets.size - 1
    if int(np.count_nonzero(mask)) != m:
        raise FormatError(f"a mask of {int(np.count_nonzero(mask))} rows for {m} values")
    lengths = np.zeros(mask.size, np.int64)
    lengths[mask] = np.diff(offsets)
    out = np.zeros(mask.size + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def fill_runs(runs: np.ndarray, first: int, second: int, n: int) -> np.ndarray:
    """``n`` int32: runs alternately of ``first`` and of ``second`` (from ``first``), the
    rest ``second``: a v23 two-member union's tags from its run lengths."""
    r = np.asarray(runs, dtype=np.int64)
    total = int(r.sum()) if r.size else 0
    if (r < 0).any() or total > n:
        raise FormatError(f"union run lengths cover {total} values of {n}")
    out = np.full(n, second, np.int32)
    firsts = np.repeat((np.arange(r.size) % 2 == 0), r)
    out[:total][firsts] = first
    return out


def map_tags(tags: np.ndarray, to: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(to[tags] as int32, rows per tag)``; a tag outside ``0..len(to)-1`` is a
    FormatError."""
    tags = np.asarray(tags, dtype=np.int64)
    to = np.asarray(to, dtype=np.int32)
    k = to.size
    if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
        raise FormatError(f"union tag out of range 0..{k - 1}")
    counts = np.bincount(tags, minlength=k) if tags.size else np.zeros(k, np.int64)
    return to[tags], counts.astype(np.int64)


def presence_to_validity(runs: np.ndarray, total: int) -> np.ndarray:
    """Expand presence runs (present, absent, present, ...) into a bool validity mask."""
    runs = np.asarray(runs)
    if runs.ndim != 1:
        raise FormatError("presence runs must be one-dimensional")
    if runs.size and runs.min() < 0:
        i = _first_bad(runs < 0)
        raise FormatError(f"presence run {i} is negative ({runs[i]})")
    got = int(runs.sum(dtype=np.int64))
    if got != total:
        raise FormatError(f"presence runs sum to {got}, expected {total}")
    pattern = (np.arange(runs.size) & 1) == 0
    return np.repeat(pattern, runs.astype(np.int64))


def lengths_to_offsets(lengths: np.ndarray, *, max_total: int | None = None) -> np.ndarray:
    """int64 offsets (n+1, starting at 0) of non-negative int32 lengths."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise FormatError("lengths must be one-dimensional")
    if lengths.size:
        if lengths.dtype.kind not in "iu":
            raise FormatError(f"lengths must be integers, not {lengths.dtype}")
        bad = (lengths < 0) | (lengths > np.iinfo(np.int32).max)
        if bad.any():
            i = _first_bad(bad)
            raise FormatError(f"length {i} is {lengths[i]}, outside 0..2**31-1")
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, dtype=np.int64, out=offsets[1:])
    if max_total is not None and offsets[-1] > max_total:
        raise LimitError(f"lengths add up to {offsets[-1]}, over the limit of {max_total}")
    return offsets


def copy_ranges(src: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``src[s:s + n]`` for each (s, n) of ``starts``, ``lengths``, back to back (uint8).

    The bytes of a take of strings or bytes.  A range outside ``src`` is a
    FormatError (never a wrapped negative index or a short copy).
    """
    src = np.asarray(src)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if src.ndim != 1 or starts.ndim != 1 or starts.shape != lengths.shape:
        raise FormatError("byte ranges need one-dimensional sources, starts and lengths "
                          "of one size")
    if starts.size:
        bad = (starts < 0) | (lengths < 0) | (starts > src.size - lengths)
        if bad.any():
            i = _first_bad(bad)
            raise FormatError(f"byte range {i} ({starts[i]}, length {lengths[i]}) lies outside "
                              f"the {src.size} bytes")
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.uint8)
    dest = np.cumsum(lengths) - lengths
    idx = np.arange(total, dtype=np.int64) + np.repeat(starts - dest, lengths)
    return src.view(np.uint8)[idx]


def count_ranges(stream: Buffer, ends: np.ndarray) -> np.ndarray:
    """The values in each byte range ``[ends[j - 1], ends[j])`` of ``stream`` (the first
    from 0; the last must end the stream): the segments of one column laid end to end,
    counted each.  A range that does not hold whole values is a FormatError naming it."""
    mv = memoryview(stream).cast("B")
    ends = np.asarray(ends, dtype=np.int64)
    if ends.ndim != 1 or (ends.size and int(ends[-1]) != mv.nbytes) or (
            not ends.size and mv.nbytes):
        raise FormatError(f"byte ranges ending at {ends.tolist()[-3:]} do not cover the "
                          f"{mv.nbytes} bytes of the stream")
    out = np.zeros(ends.size, np.int64)
    start = 0
    for j, end in enumerate(ends.tolist()):
        if end < start:
            raise FormatError(f"byte range {j} ends at {end}, before it starts at {start}")
        try:
            out[j] = len(scan_tags(mv[start:end], None)[1])
        except FormatError as e:
            raise FormatError(f"byte range {j} [{start}, {end}): {e}") from None
        start = end
    return out


def route(ids: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Where each row's value sits in per-ID parts laid end to end: ``base[ids[r]]`` plus
    the number of earlier rows with ID ``ids[r]``; -1 where ``base[ids[r]]`` < 0.

    An ID outside ``0..len(base)-1`` is a FormatError.
    """
    ids = np.asarray(ids)
    base = np.asarray(base, dtype=np.int64)
    k = base.size
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise FormatError("IDs must be a one-dimensional integer array")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= k):
        raise FormatError(f"ID out of range 0..{k - 1}")
    ids = ids.astype(np.int64, copy=False)
    order = np.argsort(ids, kind="stable")
    counts = np.bincount(ids, minlength=k)
    firsts = np.cumsum(counts) - counts
    ranks = np.empty(ids.size, np.int64)
    ranks[order] = np.arange(ids.size, dtype=np.int64) - np.repeat(firsts, counts)
    b = base[ids]
    return np.where(b >= 0, b + ranks, -1)


def take_binary(offsets: np.ndarray, data: np.ndarray, idx: np.ndarray,
                validity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of the strings or bytes ``idx`` (-1: an empty value, for a null)
    of the values ``data[offsets[i]:offsets[i + 1]]``; a value not valid is taken
    empty.  An index or range out of bounds is a FormatError."""
    offsets = np.asarray(offsets, dtype=np.int64)
    idx = np.asarray(idx, dtype=np.int64)
    m = offsets.size - 1
    if idx.size and (int(idx.min()) < -1 or int(idx.max()) >= m):
        raise FormatError(f"index out of range -1..{m - 1}")
    live = idx >= 0
    if m <= 0:  # nothing to take from: every index is -1
        starts = lengths = np.zeros(idx.size, np.int64)
    else:
        safe = np.maximum(idx, 0)
        starts = offsets[safe]
        lengths = offsets[safe + 1] - starts
        if validity is not None:
            live &= np.asarray(validity, dtype=bool)[safe]
    lengths = np.where(live, lengths, 0)
    starts = np.where(live, starts, 0)
    out = np.zeros(idx.size + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out, copy_ranges(data, starts, lengths)


def compare_bytes(offsets: np.ndarray, data: np.ndarray, literal: bytes) -> np.ndarray:
    """Each value ``data[offsets[i]:offsets[i + 1]]`` compared with ``literal`` in byte
    order, as int8 -1 / 0 / 1 (a proper prefix is the lesser; UTF-8 byte order is code
    point order).  Vectorised: one gather per byte of the literal over the values still
    equal so far.  Offsets out of bounds or descending are a FormatError."""
    offsets = np.asarray(offsets, dtype=np.int64)
    data = np.asarray(data, dtype=np.uint8)
    n = offsets.size - 1
    if n < 0:
        raise FormatError("compare: offsets must hold at least one entry")
    starts, ends = offsets[:-1], offsets[1:]
    if n and (int(starts.min()) < 0 or bool((ends < starts).any())
              or int(ends.max()) > data.size):
        raise FormatError(f"compare: offsets out of range 0..{data.size}")
    lengths = ends - starts
    out = np.zeros(n, np.int8)
    live = np.arange(n, dtype=np.int64)  # equal to the literal so far
    for j, byte in enumerate(literal):
        if not live.size:
            break
        short = lengths[live] <= j  # ended before byte j: a proper prefix
        out[live[short]] = -1
        live = live[~short]
        got = data[starts[live] + j]
        out[live[got < byte]] = -1
        out[live[got > byte]] = 1
        live = live[got == byte]
    out[live[lengths[live] > len(literal)]] = 1
    return out


# ---------------------------------------------------------- dispatch ---


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded primitive column: values (for strings/bytes the data buffer), the
    validity mask or None when nothing is null, and offsets for strings/bytes."""

    values: np.ndarray
    validity: np.ndarray | None
    offsets: np.ndarray | None = None


#: The one dispatch table of primitive types to decoders, shared by both implementations
#: (this module's reference and the C kernels of :mod:`.kernels`): type name -> width.
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
FLOAT_WIDTH = {"float16": 2, "float32": 4, "float64": 8}

Validity = np.ndarray | None


class PrimitiveDecoders(NamedTuple):
    """One implementation of the decoders :func:`decode_primitive_with` dispatches to."""

    ints: Callable[..., tuple[np.ndarray, Validity]]  # (stream, count, *, signed, bits)
    floats: Callable[..., tuple[np.ndarray, Validity]]  # (stream, count, *, width)
    bools: Callable[[Buffer, int | None], tuple[np.ndarray, Validity]]
    #: (stream, count, utf8) -> (offsets, data, validity), UTF-8 checked when ``utf8``
    varbinary: Callable[[Buffer, int | None, bool], tuple[np.ndarray, np.ndarray, Validity]]


def decode_primitive_with(impl: PrimitiveDecoders, ptype: PrimitiveType, stream: Buffer,
                          count: int | None = None) -> Decoded:
    """Decode a column of a primitive type with a numpy form, with ``impl``'s decoders.

    Enum columns are decoded as UINT64; types without a numpy form (128/256-bit
    ints, ip, net, type, decimals, float128/256) are an UnsupportedTypeError,
    for the caller's slow path.  A null-type column is all nulls: its values
    are zero bytes and its validity all False.
    """
    name = getattr(ptype, "name", str(ptype))
    if name in INT_BITS:
        v, ok = impl.ints(stream, count, signed=True, bits=INT_BITS[name])
        return Decoded(v, ok)
    if name in UINT_BITS:
        v, ok = impl.ints(stream, count, signed=False, bits=UINT_BITS[name])
        return Decoded(v, ok)
    if name in ("time", "duration"):
        v, ok = impl.ints(stream, count, signed=True, bits=64)
        return Decoded(v.view("datetime64[ns]" if name == "time" else "timedelta64[ns]"), ok)
    if name in FLOAT_WIDTH:
        v, ok = impl.floats(stream, count, width=FLOAT_WIDTH[name])
        return Decoded(v, ok)
    if name == "bool":
        v, ok = impl.bools(stream, count)
        return Decoded(v, ok)
    if name in ("string", "bytes"):
        offsets, data, ok = impl.varbinary(stream, count, name == "string")
        return Decoded(data, ok, offsets)
    if name == "null":  # every tag is 0, so every byte is
        buf = as_u8(stream)
        if buf.any():
            raise FormatError(f"a null-type column holds a non-null value at stream "
                              f"offset {_first_bad(buf != 0)}")
        m = buf.size
        check_count(count)
        if count is not None and count != m:
            raise count_error(count, m)
        return Decoded(np.zeros(m, np.uint8), np.zeros(m, bool) if m else None)
    raise UnsupportedTypeError(f"no vectorised decoder for type {name}")


def _checked_varbinary(stream: Buffer, count: int | None,
                       utf8: bool) -> tuple[np.ndarray, np.ndarray, Validity]:
    offsets, data, ok = decode_varbinary(stream, count)
    if utf8:
        validate_utf8(offsets, data)
    return offsets, data, ok


#: The numpy decoders: the reference for the C kernels' answers and errors.
REFERENCE = PrimitiveDecoders(decode_ints, decode_floats, decode_bools, _checked_varbinary)


def decode_primitive(ptype: PrimitiveType, stream: Buffer, count: int | None = None) -> Decoded:
    """:func:`decode_primitive_with` the numpy reference decoders."""
    return decode_primitive_with(REFERENCE, ptype, stream, count)
