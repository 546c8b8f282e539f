"""The public decoders: C loops when the extension is built, numpy otherwise.

The serial tag walk is the hot loop of every read.  ``_kernels`` (built from
``_kernels.c`` at install when a C compiler is present) walks it at memory
speed, with the GIL released, so two columns decode on two cores.  Without
it, or with ``CSUP_ASYNC_NATIVE=0`` in the environment, every function here
is exactly its numpy reference in :mod:`.columns`.

The kernels only ever answer "here are the values" or "no": on "no" (bad
data, a count mismatch, an input they do not take, such as a non-contiguous
buffer) the reference decodes the same bytes again and raises its exact
error, so messages have one source and the two implementations can be
compared on any input (tests/unit/decode/test_native.py does).  Arrays are allocated here
with numpy and filled in place by the kernels, which need no numpy headers.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import NamedTuple

import numpy as np

from ..model.types import PrimitiveType
from . import columns as ref
from .columns import FLOAT_DTYPES, Decoded, PrimitiveDecoders, decode_primitive_with
from .scan import scan_tags as _ref_scan_tags
from .tags import Buffer

ENV_VAR = "CSUP_ASYNC_NATIVE"


def _load() -> ModuleType | None:
    if os.environ.get(ENV_VAR, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        from . import _kernels
    except ImportError:
        return None
    return _kernels


#: The C module, or None when the numpy decoders are in use (tests swap it).
_K = _load()


def native_module() -> ModuleType | None:
    """The C module in use (None: the numpy decoders), for the decoders of other formats
    (SuperDB's intcomp) to hand it down."""
    return _K


def set_native(module: ModuleType | None) -> ModuleType | None:
    """Use the C module ``module`` (None: the numpy decoders) from now on; returns the one
    in use before.  The decoders' agreement tests run every input through both."""
    global _K
    previous, _K = _K, module
    return previous


def native_available() -> bool:
    """Whether the C decoders are in use (built, and not turned off by the env var)."""
    return _K is not None


#: Without a count, streams up to this size are decoded into arrays sized for the most
#: values they could hold (one per byte; the untouched pages cost nothing) and then
#: trimmed; larger ones are counted first (a second walk) to bound the allocation.
OVERALLOCATE_BELOW = 64 << 20


class _Size(NamedTuple):
    cap: int  # values to allocate for
    exact: bool  # the stream must hold exactly ``cap`` values (else at most)
    nbytes: int


def _size(stream: Buffer, count: int | None) -> _Size | None:
    """How many values to allocate for; None sends the call to the reference (a bad
    count or stream, an object that is not a buffer)."""
    try:
        nbytes = memoryview(stream).nbytes
    except TypeError:
        return None
    if count is None:
        if nbytes <= OVERALLOCATE_BELOW:
            return _Size(nbytes, False, nbytes)
        assert _K is not None
        m = _K.count(stream)
        return None if m is None else _Size(m, True, nbytes)
    if not isinstance(count, (int, np.integer)) or count < 0:
        return None
    count = int(count)
    # every value takes a byte at least
    return _Size(count, True, nbytes) if count <= nbytes else None


def _got(size: _Size, n: int | None) -> bool:
    return n is not None and (n == size.cap or (not size.exact and 0 <= n <= size.cap))


def _trim(a: np.ndarray, n: int) -> np.ndarray:
    """``a[:n]``, giving the rest of its memory back (it owns it: fresh from np.empty)."""
    if a.size != n:
        a.resize(n, refcheck=False)
    return a


def _values_and_validity(size: _Size, got: tuple[int, int] | None, out: np.ndarray,
                         valid: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
    if got is None or not _got(size, got[0]):
        return None
    n, nulls = got
    return _trim(out, n), (_trim(valid, n) if nulls else None)


def decode_ints(stream: Buffer, count: int | None = None, *, signed: bool,
                bits: int = 64) -> tuple[np.ndarray, np.ndarray | None]:
    """(int64 or uint64 values, validity or None when no value is null): the
    reference's answer and errors (:func:`.columns.decode_ints`), in C."""
    if _K is not None and bits in (8, 16, 32, 64):
        size = _size(stream, count)
        if size is not None:
            out = np.empty(size.cap, np.int64 if signed else np.uint64)
            valid = np.empty(size.cap, np.bool_)
            res = _values_and_validity(
                size, _K.ints(stream, out, valid, bits // 8, bool(signed)), out, valid)
            if res is not None:
                return res
    return ref.decode_ints(stream, count, signed=signed, bits=bits)


def decode_int32s(stream: Buffer, count: int | None = None) -> np.ndarray:
    """int32 values of a lengths, union-tag, super-ID or presence stream (no nulls)."""
    if _K is not None:
        size = _size(stream, count)
        if size is not None:
            out = np.empty(size.cap, np.int32)
            n = _K.int32s(stream, out)
            if _got(size, n):
                return _trim(out, n)
    return ref.decode_int32s(stream, count)


def decode_floats(stream: Buffer, count: int | None = None, *,
                  width: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(float16/32/64 values, validity or None); every value is exactly ``width`` bytes."""
    if _K is not None and width in FLOAT_DTYPES:
        size = _size(stream, count)
        if size is not None:
            out = np.empty(size.cap, FLOAT_DTYPES[width])
            valid = np.empty(size.cap, np.bool_)
            res = _values_and_validity(size, _K.floats(stream, out, valid, width), out, valid)
            if res is not None:
                return res
    return ref.decode_floats(stream, count, width=width)


def decode_bools(stream: Buffer, count: int | None = None) -> tuple[np.ndarray,
                                                                    np.ndarray | None]:
    """(bool values, validity or None); a body other than one byte 0 or 1 is an error."""
    if _K is not None:
        size = _size(stream, count)
        if size is not None:
            out = np.empty(size.cap, np.bool_)
            valid = np.empty(size.cap, np.bool_)
            res = _values_and_validity(size, _K.bools(stream, out, valid), out, valid)
            if res is not None:
                return res
    return ref.decode_bools(stream, count)


def decode_varbinary(stream: Buffer, count: int | None = None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None]:
    """(int64 offsets of n+1, compact uint8 data, validity or None) for strings and bytes.

    Strings are not checked here: :func:`validate_utf8` does it in one pass.
    """
    got = _varbinary(stream, count)
    if got is None:
        return ref.decode_varbinary(stream, count)
    return got[:3]


def _varbinary(stream: Buffer, count: int | None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None, bool] | None:
    """decode_varbinary's C path, plus whether every byte was ASCII (then the values
    are valid UTF-8 as they are); None where the reference has to decide."""
    if _K is None:
        return None
    size = _size(stream, count)
    if size is None:
        return None
    offsets = np.empty(size.cap + 1, np.int64)
    # n values take n tag bytes at least: the data is at most the rest
    data = np.empty(size.nbytes - size.cap if size.exact else size.nbytes, np.uint8)
    valid = np.empty(size.cap, np.bool_)
    got = _K.varbinary(stream, offsets, data, valid)
    if got is None or not _got(size, got[0]):
        return None
    n, nulls, nbytes, ascii_only = got
    return (_trim(offsets, n + 1), _trim(data, nbytes), _trim(valid, n) if nulls else None,
            ascii_only)


def validate_utf8(offsets: np.ndarray, data: np.ndarray) -> None:
    """FormatError unless every value ``data[offsets[i]:offsets[i+1]]`` is valid UTF-8."""
    if (_K is not None and isinstance(data, np.ndarray) and isinstance(offsets, np.ndarray)
            and data.dtype == np.uint8 and offsets.dtype == np.int64
            and data.ndim == 1 and offsets.ndim == 1
            and data.flags.c_contiguous and offsets.flags.c_contiguous
            and _K.utf8(data, offsets)):
        return
    ref.validate_utf8(offsets, data)


def scan_tags(stream: Buffer, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start offset of each value's body, its length or -1 for null), both int64.

    With ``count``, the stream must hold exactly that many values and end with
    the last; without, it must end exactly after a whole value.
    """
    if _K is not None:
        size = _size(stream, count)
        if size is not None:
            starts = np.empty(size.cap, np.int64)
            lengths = np.empty(size.cap, np.int64)
            n = _K.scan(stream, starts, lengths)
            if _got(size, n):
                return _trim(starts, n), _trim(lengths, n)
    return _ref_scan_tags(stream, count)


def _plain_int32(a: object) -> bool:
    return (isinstance(a, np.ndarray) and a.dtype == np.int32 and a.ndim == 1
            and a.flags.c_contiguous)


def presence_to_validity(runs: np.ndarray, total: int) -> np.ndarray:
    """Expand presence runs (present, absent, present, ...) into a bool validity mask."""
    if _K is not None and _plain_int32(runs) and isinstance(total, (int, np.integer)):
        got = _K.runs_sum(runs)
        if got is not None and got == total:  # checked before allocating ``total``
            out = np.empty(int(total), np.bool_)
            if _K.presence(runs, out):
                return out
    return ref.presence_to_validity(runs, total)


def lengths_to_offsets(lengths: np.ndarray, *, max_total: int | None = None) -> np.ndarray:
    """int64 offsets (n+1, starting at 0) of non-negative int32 lengths."""
    if _K is not None and _plain_int32(lengths):
        out = np.empty(lengths.size + 1, np.int64)
        total = _K.offsets(lengths, out)
        if total is not None and (max_total is None or total <= max_total):
            return out
    return ref.lengths_to_offsets(lengths, max_total=max_total)


def _strings(stream: Buffer, count: int | None,
             utf8: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Strings and bytes; an all-ASCII stream (the kernel says so) needs no UTF-8 check."""
    got = _varbinary(stream, count)
    if got is None:
        offsets, data, ok = ref.decode_varbinary(stream, count)
        ascii_only = False
    else:
        offsets, data, ok, ascii_only = got
    if utf8 and not ascii_only:
        validate_utf8(offsets, data)
    return offsets, data, ok


def _plain(a: object, dtype: type) -> bool:
    return (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == 1
            and a.flags.c_contiguous)


def copy_ranges(src: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``src[s:s + n]`` for each (s, n) of ``starts``, ``lengths``, back to back (uint8):
    the bytes of a take of strings or bytes, one ``memcpy`` a value instead of an
    8-byte index a byte.  A range outside ``src`` is a FormatError."""
    if (_K is not None and _plain(src, np.uint8) and _plain(starts, np.int64)
            and _plain(lengths, np.int64) and starts.size == lengths.size):
        total = int(lengths.sum()) if lengths.size else 0
        if total >= 0:
            out = np.empty(total, np.uint8)
            if _K.copy_ranges(src, starts, lengths, out):
                return out
    return ref.copy_ranges(src, starts, lengths)


def count_ranges(stream: Buffer, ends: np.ndarray) -> np.ndarray:
    """The values in each byte range ``[ends[j - 1], ends[j])`` of ``stream``, in one C
    walk (the reference counts range by range and names a bad one)."""
    if _K is not None and _plain(ends, np.int64):
        out = np.empty(ends.size, np.int64)
        if _K.count_ranges(stream, ends, out):
            return out
    return ref.count_ranges(stream, ends)


def route(ids: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Where each row's value sits in per-ID parts laid end to end (part ``s`` from
    ``base[s]``; -1 where that is negative): ``base[ids[r]]`` plus the rows before
    ``r`` with the same ID, in one pass.  An ID outside ``0..len(base)-1`` is a
    FormatError."""
    if _K is not None and _plain_int32(ids):
        nxt = np.array(base, dtype=np.int64)  # a fresh copy: the kernel advances it
        out = np.empty(ids.size, np.int64)
        if nxt.ndim == 1 and _K.route(ids, nxt, out):
            return out
    return ref.route(ids, base)


def scatter_offsets(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The offsets (int64 from 0, ``mask.size + 1``) of the values ``offsets`` delimits
    placed at the rows ``mask`` marks, empty elsewhere, in one pass in C.  A mask that
    does not mark one row per value is a FormatError."""
    if _K is not None and _plain(offsets, np.int64) and _plain(mask, np.bool_):
        out = np.empty(mask.size + 1, np.int64)
        if _K.scatter_offsets(offsets, mask, out):
            return out
    return ref.scatter_offsets(offsets, mask)


def fill_runs(runs: np.ndarray, first: int, second: int, n: int) -> np.ndarray:
    """``n`` int32 values: runs alternately of ``first`` and of ``second`` (from
    ``first``), the rest ``second`` (a v23 two-member union's tags from its run
    lengths, or those tags mapped to a column's members).  A negative run, or runs
    past ``n``, is a FormatError."""
    if _K is not None and _plain(runs, np.int64):
        out = np.empty(n, np.int32)
        if _K.fill_runs(runs, np.int32(first).tobytes(), np.int32(second).tobytes(), out):
            return out
    return ref.fill_runs(runs, first, second, n)


def map_tags(tags: np.ndarray, to: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(to[tags]`` as int32, the rows of each tag``)`` in one pass in C; a tag outside
    ``0..len(to)-1`` is a FormatError."""
    if _K is not None and _plain(tags, np.int64) and _plain(to, np.int32):
        out = np.empty(tags.size, np.int32)
        counts = np.empty(to.size, np.int64)
        if _K.map_tags(tags, to, out, counts):
            return out, counts
    return ref.map_tags(tags, to)


def take_binary(offsets: np.ndarray, data: np.ndarray, idx: np.ndarray,
                validity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of the strings or bytes at ``idx`` (-1: empty, for a null row) of
    ``data[offsets[i]:offsets[i + 1]]``; values not valid are taken empty.  Two passes
    in C (lengths, then a memcpy per value); an index or range out of bounds is a
    FormatError."""
    if (_K is not None and _plain(offsets, np.int64) and _plain(data, np.uint8)
            and _plain(idx, np.int64)
            and (validity is None or (_plain(validity, np.bool_)
                                      and validity.size == offsets.size - 1))):
        out_offsets = np.empty(idx.size + 1, np.int64)
        valid = validity if validity is not None else b""
        total = _K.take_lengths(offsets, idx, valid, out_offsets)
        if total is not None:
            out = np.empty(total, np.uint8)
            if _K.take_bytes(offsets, data, idx, out_offsets, out):
                return out_offsets, out
    return ref.take_binary(offsets, data, idx, validity)


def compare_bytes(offsets: np.ndarray, data: np.ndarray, literal: bytes) -> np.ndarray:
    """Each value ``data[offsets[i]:offsets[i + 1]]`` compared with ``literal`` in byte
    order, int8 -1 / 0 / 1: an ordered filter on strings (``ts >= '2026-11-18'``) at
    memory speed, one memcmp per value in C (the reference: a gather per literal byte)."""
    if _K is not None and _plain(offsets, np.int64) and _plain(data, np.uint8):
        out = np.empty(max(offsets.size - 1, 0), np.int8)
        if _K.compare_bytes(offsets, data, literal, out):
            return out
    return ref.compare_bytes(offsets, data, literal)


class ValueSlicer:
    """The values of one decompressed segment stream, handed out a slice at a time.

    A batch read keeps a segment's stream bytes (not its decoded values, which
    are larger) and decodes just the next ``k`` values when it needs them, so
    memory holds one segment's bytes per column and one batch.  Making one
    counts the values (the C walk, or the reference scanner, which raises the
    exact error for a bad stream); :meth:`next` answers where the next ``k``
    lie (the C ``skip`` walk, or every value's end found once by the reference).
    """

    __slots__ = ("count", "ends", "index", "marks", "pos", "stream")

    #: The C walk records where every this-many-th value starts, so finding a slice
    #: walks at most this many values (not the whole slice again).
    MARK_EVERY = 256

    def __init__(self, stream: Buffer) -> None:
        self.stream = stream
        self.pos = 0  # byte where the next value starts
        self.index = 0  # values handed out
        self.ends: np.ndarray | None = None  # fallback: the end of every value
        self.marks: np.ndarray | None = None
        n = None
        if _K is not None:
            try:
                nbytes = memoryview(stream).nbytes
            except TypeError:
                nbytes = -1
            if nbytes >= 0:
                marks = np.empty(nbytes // self.MARK_EVERY + 1, np.int64)
                n = _K.marks(stream, marks, self.MARK_EVERY)
                self.marks = marks
        if n is None:  # no C walk, or it refused: the reference decides (and may raise)
            self._find_ends()
            assert self.ends is not None
            n = int(self.ends.size)
        self.count: int = n

    def _find_ends(self) -> None:
        starts, lengths = _ref_scan_tags(self.stream)
        self.ends = (starts + np.maximum(lengths, 0))[self.index:]

    @property
    def left(self) -> int:
        return self.count - self.index

    def next(self, k: int) -> tuple[int, int, int]:
        """(lo, hi, got): the next ``got = min(k, left)`` values are ``stream[lo:hi]``."""
        lo = self.pos
        k = max(0, min(k, self.left))
        if self.ends is None:
            assert _K is not None and self.marks is not None
            target = self.index + k
            mark = target // self.MARK_EVERY
            start, walk = lo, k
            if self.index < mark * self.MARK_EVERY < self.count:  # a mark past here
                start, walk = int(self.marks[mark]), target - mark * self.MARK_EVERY
            got = _K.skip(self.stream, start, walk) if walk else (start, 0)
            if got is not None and got[1] == walk:
                self.pos = got[0]
                self.index = target
                return lo, self.pos, k
            self._find_ends()  # counted, so never reached for a whole stream
        assert self.ends is not None
        if k:
            self.pos = int(self.ends[k - 1])
            self.ends = self.ends[k:]
        self.index += k
        return lo, self.pos, k


#: The C decoders (each falls back to the reference on its own), for the shared dispatch.
NATIVE = PrimitiveDecoders(decode_ints, decode_floats, decode_bools, _strings)


def decode_primitive(ptype: PrimitiveType, stream: Buffer, count: int | None = None) -> Decoded:
    """Decode a column of a primitive type with a numpy form (see
    :func:`.columns.decode_primitive_with`, the one dispatch table)."""
    return decode_primitive_with(NATIVE, ptype, stream, count)
