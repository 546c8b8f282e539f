"""The segment source: a plan's requests streamed in, segments decoded as their bytes land.

Every read (whole columns, batches, rows, a row count) asks this one source
for segments.  A consumer registers a *job* per segment it will read (the
segment and how to decode it); jobs are kept per consumer, never merged by
value, so two columns pointing at the same bytes each decode them their own
way, with their own errors.  The source

* serves bytes the tail read already holds without a request;
* streams the other requests under one semaphore (``concurrency``), eagerly
  (all at once, for whole columns) or on demand with a window ahead (batches,
  so memory stays bounded by about one segment per column plus the window);
* the moment a wanted job's last byte has arrived, decompresses and decodes
  it in a thread pool, off the event loop (numpy and LZ4 release the GIL, so
  columns decode on every core while later bytes are still in flight);
* drops a request's buffer once every job needing it has taken its bytes;
* enforces ``max_mem_length`` (in :func:`decode.decompress_segment`) in one place;
* checks each segment's ``crc32`` on its stored bytes before decompressing them
  (unless ``verify_checksums`` is off) and its ``count`` on the decoded values
  (:mod:`.checks`), in the pool too.

State changes happen on the event loop only.  An eager read's consumer never
waits in a thread: it awaits :meth:`SegmentSource.settled` on the loop (every
job decoded or failed) and only then walks its cursors, which find every
segment done.  A batch consumer (a step of ``iter_batches``, run in the
process's bounded step pool) waits for a job on the source's condition
variable; decode jobs never wait for anything, so steps waiting for them
cannot starve the decode pool.  :meth:`SegmentSource.close` cancels the
fetches (and waits for them, so no task keeps a pooled connection) and fails
every job not yet done, so a step waiting for one wakes up.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import decode as D
from ..format.meta import FileMeta, Segment
from ..model.errors import CsupError, FormatError
from ..model.progress import current_tracker
from ..stores.hedge import counting
from ..stores.local import LocalStore
from .checks import check_count, check_crc, count_problem, crc32, segment_error
from .jobs import INLINE_GROUP_BYTES, Decoder, GroupDecoder, GroupJob, Job, PlanLike, Target
from .memory import pages
from .options import ReadOptions
from .pool import POOL_THREADS, decode_pool
from .result import ScanStats

_BATCH_BYTES = 1 << 20  # segments handed to one pool task until they hold this much
#: a scan whose segments decode to fewer bytes than this is decoded on the loop: the
#: hand-off to the pool costs more than the work (Spark over small files)
INLINE_SCAN_BYTES = 16 << 10
#: Batches: requests are cut into pieces of this size, fetched a window ahead of at most
#: WINDOW_BYTES (or concurrency / 2 pieces), and segments are decoded ahead of their
#: consumer while those hold at most AHEAD_BYTES (stored size); so iter_batches holds about
#: one decoded segment per stream plus these, whatever the file size.
PIECE_BYTES = 2 << 20
WINDOW_BYTES = 16 << 20
AHEAD_BYTES = 16 << 20


def piece_figures(plan: PlanLike) -> tuple[int, int]:
    """``(requests, bytes)`` a batched read of ``plan`` sends: its requests cut in
    pieces of ``PIECE_BYTES`` (what a budget of ``iter_batches`` counts)."""
    reqs = [r for r in plan.requests if not r.served]
    return (sum(-(-r.length // PIECE_BYTES) for r in reqs), sum(r.length for r in reqs))


@dataclass(frozen=True, slots=True)
class _Range:
    offset: int
    length: int

    @property
    def end(self) -> int:
        return self.offset + self.length


class _Joined:
    """A segment's bytes in several pieces, copied into one buffer when decoded."""

    __slots__ = ("buffer", "length", "parts")

    def __init__(self, length: int, parts: list[tuple[int, np.ndarray]],
                 buffer: Callable[[int], np.ndarray]) -> None:
        self.length, self.parts, self.buffer = length, parts, buffer

    def join(self) -> np.ndarray:
        out = self.buffer(self.length)
        for at, data in self.parts:
            out[at: at + data.size] = data
        self.parts = []
        return out


class SegmentSource:
    """Jobs in, decoded segments out; see the module docstring.

    Make it, register every job (:meth:`job`, on the event loop), then
    :meth:`start`; consumers call :meth:`want` (thread-safe) and
    :meth:`Job.take`.  Always :meth:`close` it.
    """

    def __init__(self, target: Target, plan: PlanLike, options: ReadOptions,
                 stats: ScanStats, *, eager: bool, prefetch: int | None = None,
                 meta: FileMeta | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.target = target
        self.meta = meta  # names the column of a segment that fails a check
        self.options = options
        self.verify = options.verify_checksums
        self.limit = options.limits.max_mem_length
        self.stats = stats
        self.watch = current_tracker()  # budget and progress: claimed here, chunks reported
        self.eager = eager
        self.window = options.concurrency
        reqs: list[Any] = [r for r in plan.requests if not r.served]
        if not eager:  # batches: pieces small enough that the window bounds memory
            reqs = [_Range(off, min(PIECE_BYTES, r.end - off))
                    for r in reqs for off in range(r.offset, r.end, PIECE_BYTES)]
        self.reqs = reqs
        if self.watch is not None:  # a budget refuses a wave here, before its first request
            self.watch.claim(len(reqs), sum(r.length for r in reqs))
        self.starts = [r.offset for r in self.reqs]
        self.avail = [(int(off), np.frombuffer(data, np.uint8))
                      for off, data in target.available if len(data)]
        n = len(self.reqs)
        self.state = [0] * n  # 0 idle, 1 streaming, 2 complete
        self.progress = [0] * n
        self.bufs: dict[int, np.ndarray] = {}
        self.by_req: list[list[Job]] = [[] for _ in range(n)]
        self.ptr = [0] * n
        self.pending = [0] * n  # jobs needing the request that have not taken their bytes
        self.held = 0  # bytes of requests started and not released (the batch window)
        self.window = (max(WINDOW_BYTES, options.concurrency * PIECE_BYTES // 2)
                       if prefetch is None else max(prefetch, 0) * PIECE_BYTES)
        self.ahead = 0  # bytes of segments decoded ahead of their consumer (batches)
        self.jobs: list[Job] = []
        self.groups: list[GroupJob] = []
        self.by_req_groups: list[list[GroupJob]] = [[] for _ in range(n)]
        self.ready_groups: list[tuple[GroupJob, dict[int, memoryview], dict[int, Any]]] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.sem = asyncio.Semaphore(options.concurrency)
        self.error: BaseException | None = None
        self.closed = False
        self.t0 = time.perf_counter()
        self.pool = decode_pool()
        self.cond = threading.Condition()
        self.batch: list[tuple[Job, Any]] = []  # dispatched jobs not yet handed to the pool
        self.batch_bytes = 0
        self.unsettled = 0  # jobs neither decoded nor failed (under cond)
        self.mem_total = 0  # decoded bytes of every job's segment
        self.complete = 0  # requests whose bytes have all arrived
        self.waiter: asyncio.Future[None] | None = None  # settled()'s, while awaited

    # ------------------------------------------------------------ jobs ---
    def job(self, seg: Segment, decode: Decoder) -> Job:
        """Register one read of ``seg`` (call before :meth:`start`)."""
        job = Job(self, seg, decode)
        self.jobs.append(job)
        with self.cond:
            self.unsettled += 1
        self.mem_total += seg.mem_length
        if seg.length == 0:  # no bytes: decoded at once (an LZ4 claim is still checked)
            job.sent = True
            self._work([(job, b"")])
            return job
        i = bisect.bisect_right(self.starts, seg.offset) - 1
        i = max(i, 0)
        reqs = []
        while i < len(self.reqs) and self.reqs[i].offset < seg.end:
            if self.reqs[i].end > seg.offset:
                reqs.append(i)
            i += 1
        job.reqs = tuple(reqs)
        for k in reqs:
            self.by_req[k].append(job)
            self.pending[k] += 1
        return job

    def _reqs_of(self, seg: Segment) -> list[int]:
        """The requests holding bytes of ``seg``."""
        i = max(bisect.bisect_right(self.starts, seg.offset) - 1, 0)
        reqs = []
        while i < len(self.reqs) and self.reqs[i].offset < seg.end:
            if self.reqs[i].end > seg.offset:
                reqs.append(i)
            i += 1
        return reqs

    def _held(self, off: int, length: int) -> int:
        """The index of the held piece (``avail``) holding these bytes whole, or -1."""
        for h, (at, data) in enumerate(self.avail):
            if at <= off and off + length <= at + data.size:
                return h
        return -1

    def group(self, segs: list[Segment], decode: GroupDecoder) -> GroupJob:
        """Register one read of all of ``segs`` at once (an eager read's; call before
        :meth:`start`): decoded together by ``decode`` once every request holding them is
        complete, each segment's CRC and count checked as a job's are."""
        if not self.eager:
            raise RuntimeError("segment groups are for eager reads")
        g = GroupJob(segs, decode)
        self.groups.append(g)
        with self.cond:
            self.unsettled += 1
        reqs: set[int] = set()
        starts, rs = self.starts, self.reqs
        nbytes = mem = 0
        # per segment: (request, start, end) in its buffer, its crc32 (-1: none), whether
        # it is stored plain; and its count (-1: none)
        where: list[tuple[int, int, int, int, bool]] = []
        expect: list[int] = []
        for seg in segs:
            off, length, m = seg.offset, seg.length, seg.mem_length
            nbytes += length
            mem += m
            crc = seg.crc32
            count = seg.count
            expect.append(-1 if count is None else count)
            i = bisect.bisect_right(starts, off) - 1
            if length and i >= 0 and off + length <= rs[i].end:  # in one request (common)
                reqs.add(i)
                lo = off - rs[i].offset
                where.append((i, lo, lo + length, -1 if crc is None else crc,
                              not seg.compression and m == length))
            else:
                h = self._held(off, length) if length else -1
                if h >= 0:  # in bytes already held (the tail read): buffer -2 - h
                    lo = off - self.avail[h][0]
                    where.append((-2 - h, lo, lo + length, -1 if crc is None else crc,
                                  not seg.compression and m == length))
                else:  # empty, or cut across requests: found at dispatch
                    reqs.update(self._reqs_of(seg) if length else ())
                    where.append((-1, 0, 0, -1, False))
        g.expect = np.asarray(expect, np.int64)
        self.mem_total += mem
        g.nbytes = nbytes
        g.where = where
        g.reqs = tuple(sorted(reqs))
        g.waiting = len(g.reqs)
        for k in g.reqs:
            self.by_req_groups[k].append(g)
            self.pending[k] += 1
        return g

    def start(self) -> None:
        """Jobs are registered: serve what needs no request, and (eagerly) fetch the rest."""
        for lst, r in zip(self.by_req, self.reqs, strict=True):
            end = r.end
            lst.sort(key=lambda j, end=end: min(j.seg.end, end))
        for job in self.jobs:
            if not job.reqs and not job.sent:
                # in the bytes already held, or nowhere: either way, settled now
                job.sent = True
                try:
                    self._queue(job, self._raw(job))
                except CsupError as e:
                    self._settle(job, error=e)
        for g in self.groups:
            if not g.waiting:
                self._dispatch_group(g)
        self._flush_groups()
        self._flush()
        if self.eager:
            for job in self.jobs:
                job.wanted = True
            for k in range(len(self.reqs)):
                if self.pending[k]:
                    self._fetch(k)

    async def settled(self) -> None:
        """Wait, on the loop and without a thread, until every job is decoded or failed
        (an eager read's consumer then walks its cursors without waiting)."""
        with self.cond:
            if not self.unsettled:
                return
            waiter = self.waiter
            if waiter is None or waiter.done():
                waiter = self.waiter = self.loop.create_future()
        await waiter

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    def want(self, job: Job, ahead: Sequence[Job] = ()) -> None:
        """A consumer takes ``job`` now and ``ahead`` later (from any thread): ``ahead`` is
        decoded early while the segments so decoded stay under ``AHEAD_BYTES``."""
        if not self.closed and (not job.wanted or any(not j.wanted for j in ahead)):
            with contextlib.suppress(RuntimeError):  # the loop is closed: so is the source
                self.loop.call_soon_threadsafe(self._want, job, ahead)

    def taken(self, job: Job) -> None:
        if job.ahead:
            with self.cond:
                self.ahead -= job.seg.mem_length

    def _want(self, first: Job, ahead: Sequence[Job]) -> None:
        if self.closed:
            return
        last = -1
        jobs = [first]
        for job in ahead:
            if not job.wanted and self.ahead + job.seg.mem_length <= AHEAD_BYTES:
                with self.cond:
                    self.ahead += job.seg.mem_length
                job.ahead = True
                jobs.append(job)
        for job in jobs:
            if job.wanted:
                continue
            job.wanted = True
            if self._ready(job):
                self._dispatch(job)
                continue
            for k in job.reqs:
                if self.state[k] == 0:
                    self._fetch(k)
                last = max(last, k)
        # the window ahead, in file order
        k = last + 1
        while last >= 0 and self.held < self.window and k < len(self.reqs):
            if self.state[k] == 0 and self.pending[k]:
                self._fetch(k)
            k += 1
        self._flush()

    # ----------------------------------------------------------- bytes ---
    def _pieces(self, job: Job) -> list[tuple[int, np.ndarray]]:
        """(offset, bytes) of what is here of the job's segment: held bytes, then requests."""
        return self._pieces_of(job.seg, job.reqs)

    def _pieces_of(self, seg: Segment, reqs: Sequence[int]) -> list[tuple[int, np.ndarray]]:
        out = [(off, data) for off, data in self.avail
               if off < seg.end and off + data.size > seg.offset]
        for k in reqs:
            buf = self.bufs.get(k)
            if buf is not None and self.progress[k]:
                out.append((self.reqs[k].offset, buf[: self.progress[k]]))
        return out

    def _ready(self, job: Job) -> bool:
        if job.sent:
            return False
        seg = job.seg
        reach = seg.offset
        for off, data in sorted(self._pieces(job), key=lambda p: p[0]):
            if off > reach:
                break
            reach = max(reach, off + data.size)
            if reach >= seg.end:
                return True
        return reach >= seg.end

    def _raw(self, job: Job) -> Any:
        """The segment's stored bytes: a view when one piece holds them, else a
        :class:`_Joined` that copies the pieces together in the pool (a copy of a
        segment is work the loop need not do)."""
        return self._raw_of(job.seg, job.reqs)

    def _raw_of(self, seg: Segment, reqs: Sequence[int]) -> Any:
        pieces = self._pieces_of(seg, reqs)
        for off, data in pieces:
            if off <= seg.offset and off + data.size >= seg.end:
                return data[seg.offset - off: seg.end - off]
        parts = []
        covered = 0
        for off, data in pieces:
            lo, hi = max(off, seg.offset), min(off + data.size, seg.end)
            if lo < hi:
                parts.append((lo - seg.offset, data[lo - off: hi - off]))
                covered += hi - lo
        if covered < seg.length:
            raise FormatError(f"segment at offset {seg.offset} is in no planned request")
        return _Joined(seg.length, parts, self._buffer)

    def _buffer(self, n: int) -> np.ndarray:
        """Room for ``n`` stored bytes: for batches, memory of its own that goes back to the
        system when dropped (see .memory); for whole columns, plain numpy (reused by malloc
        from one scan to the next)."""
        return np.empty(n, np.uint8) if self.eager else pages(n)

    def _dispatch(self, job: Job, raw: Any = None) -> None:
        job.sent = True
        if raw is None:
            raw = self._raw(job)
        for k in job.reqs:
            self.pending[k] -= 1
            self._release(k)
        self._queue(job, raw)

    def _queue(self, job: Job, raw: Any) -> None:
        """Hand the job to the pool, small ones together (a pool task costs ~50 us).  Even
        a tiny segment goes there: decoded on the loop instead, a 132-super-type scan of
        921 segments took twice the wall time (the loop stops following the transfer;
        bench/results/shapes.md)."""
        self.batch.append((job, raw))
        self.batch_bytes += job.seg.mem_length
        if self.batch_bytes >= _BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self.batch:
            if self.mem_total < INLINE_SCAN_BYTES:  # a tiny scan (a small file's): decoding
                self._work(self.batch)  # it here costs less than one hand-off to the pool
            else:
                self.pool.submit(self._work, self.batch)
            self.batch, self.batch_bytes = [], 0

    def _work(self, jobs: list[tuple[Job, Any]]) -> None:
        for job, raw in jobs:
            if self.closed:
                return
            if job.done:
                continue
            seg = job.seg
            try:
                if isinstance(raw, _Joined):
                    raw = raw.join()
                problem = check_crc(raw, seg) if self.verify else None
                if problem is None:
                    out = job.decode(D.decompress_segment(raw, seg, max_mem_length=self.limit))
                    problem = check_count(out, seg)
                if problem is not None:
                    raise segment_error(problem, seg, self.meta, self.target.path)
            except BaseException as e:  # the consumer gets it, whatever it is
                self._settle(job, error=e)
            else:
                self._settle(job, out)

    def _settle(self, job: Job | GroupJob, value: Any = None,
                error: BaseException | None = None) -> None:
        with self.cond:
            if job.done:
                return
            job.value, job.error, job.done = value, error, True
            self.unsettled -= 1
            last = not self.unsettled and self.waiter is not None
            self.cond.notify_all()
        if last:  # from a pool thread or the loop: the waiter is woken on the loop
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                self.loop.call_soon_threadsafe(self._wake)

    def _dispatch_group(self, g: GroupJob) -> None:
        """Every request of the group is complete: hand it to the pool with the requests'
        buffers (the segments are cut from them there), or check and decode it here when
        it is small."""
        g.sent = True
        bufs = {k: memoryview(self.bufs[k]) for k in g.reqs if k in self.bufs}
        for h, (_, data) in enumerate(self.avail):
            bufs[-2 - h] = memoryview(data)
        odd: dict[int, Any] = {}
        try:
            for j, w in enumerate(g.where):
                k = w[0]
                if k == -1:  # cut across requests, or no bytes
                    seg = g.segs[j]
                    odd[j] = self._raw_of(seg, self._reqs_of(seg)) if seg.length else b""
        except CsupError as e:
            self._settle(g, error=e)
        for k in g.reqs:
            self.pending[k] -= 1
            self._release(k)
        if g.done:
            return
        if g.nbytes < INLINE_GROUP_BYTES:
            self._work_group(g, bufs, odd)
        else:
            self.ready_groups.append((g, bufs, odd))

    def _flush_groups(self) -> None:
        """Hand the groups made ready together to the pool as one task per thread (a
        task each would cost a hand-off each), split by their bytes."""
        ready, self.ready_groups = self.ready_groups, []
        if not ready:
            return
        n = min(len(ready), POOL_THREADS)
        tasks: list[list[tuple[GroupJob, dict[int, memoryview], dict[int, Any]]]] = [
            [] for _ in range(n)]
        load = [0] * n
        for item in sorted(ready, key=lambda r: -r[0].nbytes):
            i = load.index(min(load))
            tasks[i].append(item)
            load[i] += item[0].nbytes
        for task in tasks:
            self.pool.submit(self._work_groups, task)

    def _work_groups(self, items: list[tuple[GroupJob, dict[int, memoryview],
                                             dict[int, Any]]]) -> None:
        for g, bufs, odd in items:
            self._work_group(g, bufs, odd)

    def _work_group(self, g: GroupJob, bufs: dict[int, memoryview], odd: dict[int, Any]
                    ) -> None:
        """Check each segment's CRC, decompress it, lay them all end to end and decode
        them in one call; then check each segment's count."""
        if self.closed or g.done:
            return
        verify, limit = self.verify, self.limit
        try:
            pieces: list[Any] = []
            segs = g.segs
            for j, (k, lo, hi, crc, plain) in enumerate(g.where):
                if k != -1:  # in one request's buffer, or in bytes held
                    raw = bufs[k][lo:hi]
                    if verify and crc >= 0 and crc32(raw) != crc:
                        raise self._bad_crc(raw, segs[j])
                    if not plain:
                        raw = D.decompress_segment(raw, segs[j], max_mem_length=limit)
                else:  # cut across requests, or empty: checked as a job's
                    seg = segs[j]
                    raw = odd[j]
                    if isinstance(raw, _Joined):
                        raw = raw.join()
                    if verify and seg.crc32 is not None and crc32(raw) != seg.crc32:
                        raise self._bad_crc(raw, seg)
                    raw = D.decompress_segment(raw, seg, max_mem_length=limit)
                pieces.append(raw)
            ends = np.cumsum(np.fromiter(map(len, pieces), np.int64, len(pieces)))
            joined = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            value, counts = g.decode(joined, ends)
            bad = np.flatnonzero((counts != g.expect) & (g.expect >= 0))
            if bad.size:
                seg = segs[int(bad[0])]
                raise segment_error(count_problem(int(counts[bad[0]]), seg) or "bad count", seg,
                                    self.meta, self.target.path)
        except BaseException as e:  # the consumer gets it, whatever it is
            self._settle(g, error=e)
        else:
            self._settle(g, (value, counts))

    def _bad_crc(self, raw: Any, seg: Segment) -> FormatError:
        return segment_error(check_crc(raw, seg) or "checksum mismatch", seg, self.meta,
                             self.target.path)

    def _release(self, k: int) -> None:
        if self.pending[k] <= 0 and self.state[k] == 2 and k in self.bufs:
            del self.bufs[k]
            self.held -= self.reqs[k].length

    def _advance(self, k: int) -> None:
        """Request ``k`` has more bytes: dispatch the wanted jobs they complete."""
        lst, r, pos = self.by_req[k], self.reqs[k], self.progress[k]
        i = self.ptr[k]
        while i < len(lst) and min(lst[i].seg.end, r.end) - r.offset <= pos:
            job = lst[i]
            i += 1
            if not job.wanted or job.sent:
                continue
            seg = job.seg
            if job.reqs == (k,) and seg.offset >= r.offset and seg.end <= r.end:
                # wholly in this request (the common case): its bytes are a view of the
                # buffer, with no search of the other pieces (a file of many super types
                # has thousands of small segments per request)
                buf = self.bufs[k]
                self._dispatch(job, buf[seg.offset - r.offset: seg.end - r.offset])
            elif self._ready(job):
                self._dispatch(job)
        self.ptr[k] = i
        self._flush()

    # ----------------------------------------------------------- fetch ---
    def _fetch(self, k: int) -> None:
        self.state[k] = 1
        self.held += self.reqs[k].length
        self.bufs[k] = self._buffer(self.reqs[k].length)
        task = self.loop.create_task(self._run(k))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, k: int) -> None:
        counting(self.stats)  # this task's hedged requests count in the scan's stats
        try:
            await self._stream(k)
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            self._fail(e)

    async def _stream(self, k: int) -> None:
        r, t = self.reqs[k], self.target
        view = memoryview(self.bufs[k])
        async with self.sem:
            if type(t.store) is LocalStore and hasattr(os, "preadv"):
                # straight into the buffer: no chunk objects, fewer thread hand-offs
                pos = await self._fill(k, t.store.fill_range(t.key, r.offset, view,
                                                             t.version))
            else:
                pos = await self._copy(k, view, t.store.stream_range(t.key, r.offset,
                                                                     r.length, t.version))
        if pos != r.length:
            raise FormatError(f"store returned {pos} bytes for a {r.length}-byte range")
        self.state[k] = 2
        self.complete += 1
        self.stats.requests += 1
        self.stats.bytes_read += r.length
        for job in self.by_req[k]:  # jobs spanning into requests that finished earlier
            if job.wanted and not job.sent and self._ready(job):
                self._dispatch(job)
        for g in self.by_req_groups[k]:
            g.waiting -= 1
            if not g.waiting and not g.sent:
                self._dispatch_group(g)
        self._flush_groups()
        if self.complete == len(self.reqs):
            self._unreachable()
        self._flush()
        self._release(k)

    def _unreachable(self) -> None:
        """Every request is in: a wanted job still unsent has bytes no request holds (a
        plan that disagrees with its cursors); it fails rather than waits forever."""
        for job in self.jobs:
            if job.wanted and not job.sent:
                if self._ready(job):
                    self._dispatch(job)
                    continue
                job.sent = True
                self._settle(job, error=FormatError(f"segment at offset {job.seg.offset} "
                                                    "is in no planned request"))

    async def _copy(self, k: int, view: memoryview, chunks: AsyncIterator[bytes]) -> int:
        """Copy a store's chunks into request ``k``'s buffer as they arrive."""
        pos, length = 0, len(view)
        async with contextlib.aclosing(chunks):  # type: ignore[type-var]
            async for chunk in chunks:
                if self.stats.ttfb is None:
                    self.stats.ttfb = time.perf_counter() - self.t0
                m = len(chunk)
                if pos + m > length:
                    raise FormatError(f"store returned more than the {length}-byte range")
                view[pos: pos + m] = chunk
                pos += m
                if self.watch is not None:
                    self.watch.add(m)
                self.progress[k] = pos
                self._advance(k)
        return pos

    async def _fill(self, k: int, filled: AsyncIterator[int]) -> int:
        """Follow a local read that fills request ``k``'s buffer in place."""
        pos = 0
        async with contextlib.aclosing(filled):  # type: ignore[type-var]
            async for pos in filled:
                if self.stats.ttfb is None:
                    self.stats.ttfb = time.perf_counter() - self.t0
                if self.watch is not None:
                    self.watch.add(pos - self.progress[k])
                self.progress[k] = pos
                self._advance(k)
        return pos

    def _fail(self, e: BaseException) -> None:
        if self.error is None:
            self.error = e
        for job in [*self.jobs, *self.groups]:
            self._settle(job, error=e)
        for task in list(self.tasks):
            if task is not asyncio.current_task():
                task.cancel()

    async def close(self) -> None:
        """Cancel and wait for every fetch; wake every consumer still waiting."""
        self.closed = True
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for job in [*self.jobs, *self.groups]:
            self._settle(job, error=concurrent.futures.CancelledError())
        self.bufs.clear()
