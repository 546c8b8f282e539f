"""Decoding segments in a thread pool as their bytes land, with an optional compiled loop.

Once the planner has cut the requests down, a large scan is bound by two
things: the serial tag walk of int and string streams (numpy manages ~15 M
values/s per core, see :mod:`csup_async.decode`) and the fact that
``Reader.scan`` starts decoding only after the last byte has arrived, in one
thread.  This module attacks both:

* :func:`decode_primitive` is :func:`csup_async.decode.decode_primitive` with
  numba loops for int and string streams (~0.5-1 GB/s per core, ``nogil``,
  so two streams decode on two cores).  numba is optional (``pip install
  'csup-async[fast]'``) and never on the path of a small query: the first
  stream of at least ``NUMBA_MIN_BYTES`` starts loading it in a background
  thread (its import and cached first dispatch cost ~1 s once per process)
  and is itself decoded with numpy; streams decoded after the load use the
  loops.  ``CSUP_ASYNC_NUMBA=0`` turns them off.  Whatever a loop refuses
  (corrupt data, a count mismatch) is decoded again by decode.py, whose
  errors are the reference.
* :func:`scan` is ``Reader.scan`` for flat projections (top-level fields of
  primitive types in a single-type file): it streams every planned request
  and, the moment a segment is complete, decompresses it in a thread pool
  and decodes it straight into the column's final buffers (segments of a
  column in order, columns in parallel), so decoding overlaps the transfer
  of the rest, uses every core, and no per-segment results are concatenated
  at the end.  ``Reader.scan`` (and ``Reader.execute``) call :func:`try_scan`
  first and take their own path for other projections; ``assemble`` and the
  batch cursors use :func:`decode_primitive` / :func:`decode_int32s`, so nested
  scans and ``iter_batches`` get the loops too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import numpy as np

import planner as P

from . import arrays as A
from . import decode as D
from .errors import CsupError, FormatError
from .meta import COMPRESSION_NONE, PrimitiveColumn, RecordColumn, Segment
from .types import INT32, PrimitiveType, RecordType

__all__ = ["NUMBA_MIN_BYTES", "decode_int32s", "decode_primitive", "numba_available",
           "prepare", "scan", "try_scan"]

#: A stream this large starts loading numba (in the background); smaller ones never do.
NUMBA_MIN_BYTES = 1 << 20
_LOADED_MIN_BYTES = 4096  # once numba is loaded, streams from this size use it too
_PAD = 32  # zero bytes after every stream copy: the loops load 8 or 16 bytes at any offset
_PREALLOC = 1 << 24  # values / data bytes allocated up front from metadata's claims


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    out = np.empty(n, a.dtype)
    out[: a.size] = a
    return out

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "time": 64, "duration": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_VARBIN = {"string", "bytes"}
_FAST = {*_INT_BITS, *_UINT_BITS, *_VARBIN, "float16", "float32", "float64", "bool"}
_MASKS = np.array([0] + [(1 << (8 * i)) - 1 for i in range(1, 8)] + [2**64 - 1], np.uint64)

# ------------------------------------------------------------ the loops ---

_kernels: Any = None  # None: not loaded (yet); False: unavailable; else (ints, varbin)
_loading: threading.Thread | None = None
_lock = threading.Lock()


def prepare(nbytes: int) -> bool:
    """Start loading the loops if a scan of ``nbytes`` (all files together) justifies
    them: for scans of many small files, whose streams are each too small to
    trigger the load.  Returns whether the loops are ready now."""
    if nbytes >= NUMBA_MIN_BYTES:
        _start_loading()
    return bool(_kernels)


def numba_available(wait: bool = True) -> bool:
    """Whether the loops are in use; with ``wait``, load them first (blocking)."""
    _start_loading()
    loader = _loading
    if wait and loader is not None:
        loader.join()
    return bool(_kernels)


def _start_loading() -> None:
    global _loading
    with _lock:
        if _loading is not None or _kernels is not None:
            return
        if os.environ.get("CSUP_ASYNC_NUMBA", "1") == "0":
            _set(False)
            return
        _loading = threading.Thread(target=_load, name="csup-numba-load", daemon=True)
        _loading.start()


def _set(value: Any) -> None:
    global _kernels
    _kernels = value


def _load() -> None:
    """Import, compile (or load from numba's cache) and run each loop once, so the
    first real stream does not pay for numba's first dispatch either."""
    try:
        kernels = _compile()
        ints, varbin = kernels
        probe = np.zeros(64, np.uint8)
        probe[:8] = 2
        ints(probe, _words(probe), 8, 8, True, np.empty(8, np.uint64), np.empty(8, np.bool_),
             _MASKS)
        data = np.empty(64, np.uint8)
        varbin(probe, _words(probe), 8, np.zeros(9, np.int64), data, _words(data),
               np.empty(8, np.bool_), 0)
        _set(kernels)
    except Exception:  # no numba, or an unsupported numba/numpy pair: numpy it is
        _set(False)


def _compile() -> Any:
    import numba  # noqa: F401  (lazy: see the module docstring)
    from numba import njit

    # Both loops read a value with one unaligned 8-byte load from a padded copy
    # (``words[p]`` is the little-endian word at byte p) masked to its length:
    # no per-byte loop, no branch on the length.  Strings are copied 16 bytes
    # at a time, longer ones 8 bytes at a time (the output has slack for the overrun).  Output
    # capacity is checked (numba does not bounds-check): -1 means "refused".

    @njit(cache=True, nogil=True)
    def tag_at(buf: Any, p: int, n: int) -> tuple[int, int]:
        """The uvarint tag at ``p`` and the position after it; tag -1 if it is cut off
        or longer than 63 bits (decode.py then names the fault)."""
        t = np.int64(buf[p])
        p += 1
        if t < 0x80:
            return t, p
        tag = t & 0x7F
        shift = 7
        while True:
            if p >= n or shift >= 63:
                return -1, p
            c = np.int64(buf[p])
            p += 1
            tag |= (c & 0x7F) << shift
            if c < 0x80:
                return tag, p
            shift += 7

    @njit(cache=True, nogil=True)
    def ints(buf: Any, words: Any, n: int, width: int, signed: bool, out: Any, valid: Any,
             masks: Any) -> int:
        p = 0
        i = 0
        cap = out.size
        one = np.uint64(1)
        # signed: sign and magnitude (Zed's), so a narrow type's minimum takes one
        # byte more than its width; out-of-range values go to the reference (-1)
        narrow = signed and width < 8
        most = width + 1 if narrow else width
        half = np.uint64(1) << np.uint64(8 * width - 1)
        while p < n:
            if i >= cap:
                return -1
            tag, p = tag_at(buf, p, n)
            if tag < 0:
                return -1
            if tag == 0:
                out[i] = 0
                valid[i] = False
                i += 1
                continue
            ln = tag - 1
            if ln > most or p + ln > n:
                return -1
            v = words[p] & masks[ln]
            p += ln
            if signed:
                m = v >> one
                if v & one:
                    if narrow and (m == 0 or m > half):
                        return -1
                    v = (one << np.uint64(63)) if m == 0 else np.uint64(0) - m
                else:
                    if narrow and m >= half:
                        return -1
                    v = m
            out[i] = v
            valid[i] = True
            i += 1
        return i

    @njit(cache=True, nogil=True)
    def varbin(buf: Any, words: Any, n: int, offsets: Any, data: Any, dwords: Any,
               valid: Any, base: int) -> int:
        p = 0
        i = 0
        d = 0
        cap = valid.size
        room = data.size - 16
        while p < n:
            if i >= cap:
                return -1
            tag, p = tag_at(buf, p, n)
            if tag < 0:
                return -1
            if tag == 0:
                valid[i] = False
            else:
                ln = tag - 1
                if p + ln > n or d + ln > room:
                    return -1
                if ln <= 16:
                    dwords[d] = words[p]
                    dwords[d + 8] = words[p + 8]
                elif ln <= 256:
                    for j in range(0, ln, 8):
                        dwords[d + j] = words[p + j]
                else:
                    data[d: d + ln] = buf[p: p + ln]
                d += ln
                p += ln
                valid[i] = True
            i += 1
            offsets[i] = base + d
        return i

    return ints, varbin


def _u8(stream: Any) -> np.ndarray:
    if isinstance(stream, np.ndarray):
        return stream.reshape(-1).view(np.uint8)
    mv = memoryview(stream)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return np.frombuffer(mv, np.uint8)


def _padded(stream: Any) -> np.ndarray:
    """A copy of the stream followed by ``_PAD`` zero bytes."""
    src = _u8(stream)
    out = np.empty(src.size + _PAD, np.uint8)
    out[: src.size] = src
    out[src.size:] = 0
    return out


def _words(a: np.ndarray) -> np.ndarray:
    """The unaligned little-endian uint64 at every byte offset of ``a`` (a view)."""
    return np.ndarray((max(a.size - 7, 0),), dtype="<u8", buffer=a, offset=0, strides=(1,))


def _kind(name: str) -> str:
    if name in _INT_BITS or name in _UINT_BITS:
        return "ints"
    if name in _VARBIN:
        return "varbin"
    return "other"


class _Out:
    """A column's final buffers, filled segment after segment (in order).

    ``cap`` bounds the values (the rows of the file); strings' data is bounded
    by the segments' decompressed sizes.  Kinds without a loop (floats,
    bools) keep decode.py's per-segment results and join them at the end.
    """

    def __init__(self, ptype: PrimitiveType, cap: int, data_cap: int) -> None:
        self.ptype = ptype
        self.name = ptype.name
        self.kind = _kind(self.name)
        self.cap = cap
        self.count = 0
        self.dpos = 0
        self.parts: list[D.Decoded] = []
        self.lock = threading.Lock()
        self.ready: dict[int, tuple[np.ndarray, int]] = {}
        self.next = 0
        self.utf8_ok = True  # every segment decoded so far held valid UTF-8
        # Sizes come from metadata a hostile file controls: allocate what the
        # claims imply only up to _PREALLOC, and grow from the bytes that really
        # arrive (a segment of n bytes holds at most n values and n bytes of data).
        n = min(cap, data_cap, _PREALLOC)
        if self.kind == "ints":
            self.values = np.empty(n, np.uint64)
            self.valid = np.empty(n, np.bool_)
        elif self.kind == "varbin":
            self.offsets = np.empty(n + 1, np.int64)
            self.offsets[0] = 0
            self.data = np.empty(min(data_cap, _PREALLOC) + _PAD, np.uint8)
            self.valid = np.empty(n, np.bool_)

    def _reserve(self, n: int) -> None:
        """Room for a segment of ``n`` bytes: up to ``n`` more values (never past the
        rows) and, for strings, ``n`` more data bytes."""
        want = min(self.cap, self.count + n)
        size = self.valid.size
        if want > size:
            new = min(self.cap, max(want, 2 * size))
            self.valid = _grown(self.valid, new)
            if self.kind == "ints":
                self.values = _grown(self.values, new)
            else:
                self.offsets = _grown(self.offsets, new + 1)
        if self.kind == "varbin" and self.dpos + n + _PAD > self.data.size:
            self.data = _grown(self.data, max(self.dpos + n, 2 * self.data.size) + _PAD)

    def add(self, index: int, buf: np.ndarray, n: int) -> None:
        """Segment ``index`` (padded, ``n`` bytes of values) has arrived: decode every
        segment that is now next in line (the others wait for their predecessors)."""
        with self.lock:
            self.ready[index] = (buf, n)
            while self.next in self.ready:
                b, m = self.ready.pop(self.next)
                self._decode(b, m)
                self.next += 1

    def _decode(self, buf: np.ndarray, n: int) -> None:
        c0, d0 = self.count, self.dpos
        self._decode_values(buf, n)
        if self.name == "string" and self.utf8_ok:
            # checked per segment, in the worker, while later bytes are still in
            # flight; a fault is reported by one check of the whole column at the
            # end, so the message (value index) is the reference's
            try:
                D.validate_utf8(self.offsets[c0: self.count + 1] - d0,
                                self.data[d0: self.dpos])
            except FormatError:
                self.utf8_ok = False

    def _decode_values(self, buf: np.ndarray, n: int) -> None:
        k = _kernels
        if self.kind != "other":
            self._reserve(n)
        if self.kind == "ints":
            if k and n >= _LOADED_MIN_BYTES:
                bits = _INT_BITS.get(self.name) or _UINT_BITS[self.name]
                got = k[0](buf, _words(buf), n, bits // 8, self.name in _INT_BITS,
                           self.values[self.count:], self.valid[self.count:], _MASKS)
                if got >= 0:
                    self.count += got
                    return
            dec = self._reference(buf, n)
            m = len(dec.values)
            self._room(m)
            self.values[self.count: self.count + m] = dec.values.view(np.uint64)
            self.valid[self.count: self.count + m] = (True if dec.validity is None
                                                      else dec.validity)
            self.count += m
        elif self.kind == "varbin":
            if k and n >= _LOADED_MIN_BYTES:
                data = self.data[self.dpos:]
                got = k[1](buf, _words(buf), n, self.offsets[self.count:], data, _words(data),
                           self.valid[self.count:], self.dpos)
                if got >= 0:
                    self.count += got
                    self.dpos = int(self.offsets[self.count])
                    return
            dec = self._reference(buf, n)
            assert dec.offsets is not None
            m = len(dec.offsets) - 1
            size = int(dec.offsets[-1])
            self._room(m)
            if self.dpos + size > self.data.size - _PAD:
                raise FormatError("string data exceeds the segments' sizes")
            self.offsets[self.count + 1: self.count + m + 1] = dec.offsets[1:] + self.dpos
            self.data[self.dpos: self.dpos + size] = dec.values[:size]
            self.valid[self.count: self.count + m] = (True if dec.validity is None
                                                      else dec.validity)
            self.count += m
            self.dpos += size
        else:
            dec = D.decode_primitive(self.ptype, memoryview(buf)[:n])
            self.count += len(dec.values)
            self.parts.append(dec)

    def _reference(self, buf: np.ndarray, n: int) -> D.Decoded:
        return D.decode_primitive(self.ptype, memoryview(buf)[:n])

    def _room(self, m: int) -> None:
        if self.count + m > self.cap:
            raise FormatError(f"a {self.name} column holds more values than the file has rows")

    def result(self) -> D.Decoded:
        c = self.count
        if self.kind == "ints":
            values = self.values[:c]
            if self.name in _INT_BITS:
                values = values.view(np.int64)
                if self.name == "time":
                    values = values.view("datetime64[ns]")
                elif self.name == "duration":
                    values = values.view("timedelta64[ns]")
            ok = self.valid[:c]
            return D.Decoded(values, None if ok.all() else ok)
        if self.kind == "varbin":
            offsets = self.offsets[: c + 1]
            data = self.data[: self.dpos]
            if self.name == "string" and not self.utf8_ok:
                D.validate_utf8(offsets, data)  # raises, naming the value
            ok = self.valid[:c]
            return D.Decoded(data, None if ok.all() else ok, offsets)
        if not self.parts:
            return D.decode_primitive(self.ptype, b"", 0)
        validity = None
        if any(p.validity is not None for p in self.parts):
            validity = np.concatenate([p.validity if p.validity is not None
                                       else np.ones(len(p.values), bool) for p in self.parts])
        return D.Decoded(np.concatenate([p.values for p in self.parts]), validity)


def decode_primitive(ptype: PrimitiveType, stream: Any, count: int | None = None) -> D.Decoded:
    """:func:`csup_async.decode.decode_primitive`, with the loops for int and string
    streams once they are loaded (a stream of ``NUMBA_MIN_BYTES`` starts the load)."""
    name = getattr(ptype, "name", "")
    kind = _kind(name)
    if kind != "other":
        size = memoryview(stream).nbytes
        if size >= NUMBA_MIN_BYTES and _kernels is None:
            _start_loading()
        if _kernels and size >= _LOADED_MIN_BYTES:
            cap = size if count is None else count
            out = _Out(ptype, cap, size)
            try:
                out.add(0, _padded(stream), size)
            except CsupError:
                out.count = -1
            if out.count >= 0 and (count is None or out.count == count):
                return out.result()
    return D.decode_primitive(ptype, stream, count)


def decode_int32s(stream: Any, count: int | None = None) -> np.ndarray:
    """:func:`csup_async.decode.decode_int32s` (presence runs, lengths), with the loop
    once it is loaded."""
    if _kernels and memoryview(stream).nbytes >= _LOADED_MIN_BYTES:
        got = decode_primitive(INT32, stream, count)
        if got.validity is None:
            return got.values.astype(np.int32)
    return D.decode_int32s(stream, count)


# ------------------------------------------------------------------ scan ---

def _flat_fields(reader: Any, paths: list[str]) -> list[tuple[str, PrimitiveType, Any]] | None:
    """(path, type, FieldColumn) per path when the projection is flat, else None."""
    meta = reader.meta
    if len(meta.super_types) != 1 or meta.row_count is None:
        return None
    t, col = meta.super_types[0], meta.columns[0]
    if not isinstance(t, RecordType) or not isinstance(col, RecordColumn):
        return None
    out = []
    for p in paths:
        comps = P.parse_path(p)  # a canonical path: `a.b` is the field "a.b", a.b is nested
        if len(comps) != 1:
            return None
        f = t.field(comps[0])
        fc = col.field(comps[0])
        if (f is None or fc is None or not isinstance(f.type, PrimitiveType)
                or f.type.name not in _FAST
                or not (fc.column is None or isinstance(fc.column, PrimitiveColumn))):
            return None
        out.append((p, f.type, fc))
    return out


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max(2, os.cpu_count() or 2),
                                   thread_name_prefix="csup-decode")
    return _POOL


def _unpack(raw: np.ndarray, seg: Segment, limit: int) -> tuple[np.ndarray, int]:
    """A segment's decompressed bytes, padded (raw is already a padded copy)."""
    n = seg.length
    out = D.decompress_segment(raw[:n], seg, max_mem_length=limit)
    if seg.compression == COMPRESSION_NONE:
        return raw, n
    return _padded(out), seg.mem_length


async def scan(reader: Any, columns: Sequence[str] | str | None = None, *,
               executor: Executor | None = None) -> Any:
    """``reader.scan(columns)``, decoding each segment in a thread pool as it lands.

    Same result and stats as ``Reader.scan``; projections that are not flat
    (nested paths, several super types, types without a vectorised decoder)
    are handed to ``Reader.scan`` unchanged.
    """
    got = await try_scan(reader, columns, executor=executor)
    return got if got is not None else await reader.scan(columns)


async def try_scan(reader: Any, columns: Sequence[str] | str | None = None, *,
                   executor: Executor | None = None, plan: Any = None) -> Any:
    """:func:`scan` for a flat projection, None for any other (nothing read then).

    The hook for ``Reader.scan``: ``got = await parallel.try_scan(self, columns)``
    first, its own path when that is None.  ``plan``: run this plan (made
    elsewhere, e.g. by a Spark driver) instead of planning here.
    """
    from .reader import ScanResult, ScanStats, _gather_or_cancel

    t0 = time.perf_counter()
    paths = reader._paths(columns)
    fields = _flat_fields(reader, paths)
    if fields is None:
        return None
    rows = int(reader.meta.row_count)
    from .assemble import DEFAULT_MAX_ROWS, DEFAULT_MAX_VALUES

    if (rows > (reader.max_rows or DEFAULT_MAX_ROWS)
            or 2 * rows * len(paths) > (reader.max_values or DEFAULT_MAX_VALUES)):
        return None  # over a cap: the reference path raises its LimitError
    if plan is None:
        plan = reader._plan(paths)
    pool = executor or _pool()
    loop = asyncio.get_running_loop()
    limit = reader.max_mem_length

    # what each needed segment feeds: (column output, its index) or presence runs
    feeds: dict[Segment, tuple[_Out, int] | None] = {}
    outs: dict[str, _Out] = {}
    for p, ptype, fc in fields:
        if fc.column is None:
            continue
        segmap = fc.column.segmap
        outs[p] = out = _Out(ptype, rows, sum(s.mem_length for s in segmap))
        for s in fc.presence:
            feeds[s] = None
        for i, s in enumerate(segmap):
            feeds[s] = (out, i)
    if sum(s.mem_length for s in feeds) >= NUMBA_MIN_BYTES:
        _start_loading()
    futures: dict[Segment, asyncio.Future[Any]] = {}

    def work(seg: Segment, raw: np.ndarray | list[memoryview]) -> Any:
        if isinstance(raw, list):  # pieces to join into one padded copy
            joined = np.empty(seg.length + _PAD, np.uint8)
            pos = 0
            for piece in raw:
                m = min(len(piece), seg.length - pos)
                joined[pos: pos + m] = np.frombuffer(piece, np.uint8, m)
                pos += m
            joined[pos:] = 0
            raw = joined
        buf, n = _unpack(raw, seg, limit)
        target = feeds[seg]
        if target is None:
            return decode_int32s(memoryview(buf)[:n])
        target[0].add(target[1], buf, n)
        return None

    pieces: dict[Segment, dict[int, memoryview]] = {}

    def landed(seg: Segment, start: int, chunk: memoryview,
               padded: np.ndarray | None = None) -> None:
        """Bytes ``[start, start+len(chunk))`` of ``seg`` are here (all of it, or a piece).

        ``padded``: the same bytes as a view into a buffer with at least ``_PAD``
        readable bytes after them (a request's buffer), handed on without a copy.
        """
        if seg in futures:
            return
        raw: np.ndarray | list[memoryview]
        if start == seg.offset and len(chunk) >= seg.length:
            raw = padded if padded is not None else [chunk[: seg.length]]
        else:
            # views, not copies: a request's buffer and the metadata reads are written
            # once, so the bytes stay put; the worker joins them (off the event loop)
            got = pieces.setdefault(seg, {})
            got[start] = chunk
            if sum(len(c) for c in got.values()) < seg.length:
                return
            raw = [got[k] for k in sorted(got)]
            del pieces[seg]
        futures[seg] = asyncio.wrap_future(pool.submit(work, seg, raw), loop=loop)

    # segments (or parts of them) already in the metadata reads: small files are all there
    extras = [(reader.tail.offset, memoryview(reader.tail.data))]
    extras += [(o, memoryview(d)) for o, d in reader._extra]
    for seg in feeds:
        for off, mv in extras:
            lo, hi = max(seg.offset, off), min(seg.end, off + len(mv))
            if lo < hi:
                landed(seg, lo, mv[lo - off: hi - off])

    stats = ScanStats()
    todo = [r for r in plan.requests if not getattr(r, "served", False)]
    sem = asyncio.Semaphore(reader.concurrency)

    async def one(r: Any) -> None:
        inside = sorted((s for s in r.segments if s in feeds and s not in futures),
                        key=lambda s: s.end)
        # _PAD readable bytes after the end: a segment inside the request is decoded
        # straight from this buffer (the loops read up to 16 bytes past a value)
        buf = np.empty(r.length + _PAD, np.uint8)
        buf[r.length:] = 0
        view = memoryview(buf)
        pos = 0
        k = 0
        async with sem:
            stream = getattr(reader.store, "stream_range", None)
            if stream is None:
                chunks: Any = _once(await reader.store.read_range(
                    reader.key, r.offset, r.length, reader.tail.info.version))
            else:
                chunks = stream(reader.key, r.offset, r.length, reader.tail.info.version)
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    if stats.ttfb is None:
                        stats.ttfb = time.perf_counter() - t0
                    m = len(chunk)
                    if pos + m > r.length:
                        raise FormatError(f"store returned more than the {r.length}-byte "
                                          "range", path=reader.path)
                    view[pos: pos + m] = chunk
                    pos += m
                    while k < len(inside) and min(inside[k].end, r.end) - r.offset <= pos:
                        s = inside[k]
                        k += 1
                        lo, hi = max(s.offset, r.offset), min(s.end, r.end)
                        a, b = lo - r.offset, hi - r.offset
                        landed(s, lo, view[a:b], buf[a: b + _PAD])
        if pos != r.length:
            raise FormatError(f"store returned {pos} bytes for a {r.length}-byte range",
                              path=reader.path)

    try:
        await _gather_or_cancel([one(r) for r in todo])
        missing = [s for s in feeds if s not in futures]
        if missing:
            raise FormatError(f"{len(missing)} planned segments were not read")
        runs = dict(zip(futures, await asyncio.gather(*futures.values()), strict=True))
    except CsupError as e:
        for f in futures.values():
            f.cancel()
        raise e.with_path(reader.path) from None
    except BaseException:
        for f in futures.values():
            f.cancel()
        raise
    stats.requests = len(todo)
    stats.bytes_read = sum(r.length for r in todo)
    stats.bytes_needed = plan.bytes_needed

    def build(p: str, ptype: PrimitiveType, fc: Any) -> A.Array:
        if fc.column is None:
            return A.null_array(ptype, rows)
        valid = None
        if fc.presence:
            valid = D.presence_to_validity(
                np.concatenate([runs[s] for s in fc.presence]), rows)
        want = rows if valid is None else int(np.count_nonzero(valid))
        dec = outs[p].result()
        got = len(dec.offsets) - 1 if dec.offsets is not None else len(dec.values)
        if got != want:
            raise FormatError(f"column {p!r} holds {got} values, expected {want}")
        if dec.offsets is not None:
            arr: A.Array = A.BinaryArray(ptype, dec.offsets, dec.values, dec.validity,
                                         utf8_checked=True)
        else:
            arr = A.PrimitiveArray(ptype, dec.values, dec.validity)
        # One super type: A.combine would hand the array back unchanged, so it is skipped.
        return arr.expand(valid) if valid is not None else arr

    # the columns' last steps (joins, masks, checks) in parallel; the first failure in
    # column order is the one reported, as a serial build would
    done = await asyncio.gather(*(loop.run_in_executor(pool, build, *f) for f in fields),
                                return_exceptions=True)
    for got in done:
        if isinstance(got, CsupError):
            raise got.with_path(reader.path) from None
        if isinstance(got, BaseException):
            raise got
    cols = {f[0]: got for f, got in zip(fields, done, strict=True)}
    stats.wall = time.perf_counter() - t0
    return ScanResult(cols, rows, stats, plan)


async def _once(data: bytes) -> Any:
    yield data
