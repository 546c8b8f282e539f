"""The executor: one read = a segment source, a cursor tree, and a sink.

The sinks differ only in how many rows each step takes and what they keep:

* :func:`scan_columns` (``Reader.scan``, ``Reader.execute``, datasets, Spark):
  every request at once, every segment decoded in the pool as it lands, one
  ``take`` of all rows per column;
* :func:`iter_batches`: requests on demand with a window ahead, primitive
  segments kept as stream bytes and decoded a batch's slice at a time (a
  batch's columns at once, in the pool), so memory holds one segment's bytes
  per stream plus the window and the batch;
* :func:`read_rows`: whole rows (every column of every super type);
* :func:`count_rows`: the super column alone.

No read starts a thread.  An eager read (whole columns, rows, counts) awaits
its source's :meth:`~.fetch.SegmentSource.settled` on the event loop while
its segments are fetched and decoded in the pool, and then walks its cursor
tree, which finds every segment done: on the loop when the read is small
(cheaper than a hand-off), else as one task in the decode pool (it waits for
nothing there, so it cannot hold up the decode jobs).  A batch step of
:func:`iter_batches` may wait for its segments, so it runs in the process's
bounded step pool (:func:`step_pool`), apart from the decode pool whose jobs
it waits for (and which never wait for a step); the default executor is left
to the stores.  Whatever ends a read (its end, an error, a cancellation, the
``timeout`` option) closes the source, which cancels and awaits the fetches
and wakes a waiting step, and then awaits the step's future (no polling):
nothing is left behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import numpy as np

import planner as P

from .. import arrays as A
from ..format.meta import FileMeta
from ..model.errors import CsupError, FormatError, LimitError, StoreTimeoutError
from ..model.heap import keep_freed_memory
from ..model.types import NULL
from .columns import cursor_for, leg_cursor
from .cursors import POOL_MIN_VALUES, Cursor, Int32Cursor, PrimCursor
from .fetch import SegmentSource
from .grouped import ColumnGroup
from .jobs import PlanLike, Target
from .memory import trim
from .options import ReadOptions
from .pool import decode_pool
from .result import ScanResult, ScanStats
from .streams import Build

T = TypeVar("T")


class Read:
    """One read's source and cursor tree (built on the event loop, without reading)."""

    def __init__(self, target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions,
                 paths: Sequence[str] | None, *, eager: bool, ids_only: bool = False,
                 prefetch: int | None = None,
                 keep: dict[int, frozenset[int]] | None = None, partial: bool = False,
                 grouped: bool = False) -> None:
        self.meta = meta
        # a row selection that reads only a prefix of the super column (``limit``):
        # the read ends with it, the streams' later values unread and unchecked
        self.partial = partial
        self.path = target.path
        self.stats = ScanStats(bytes_needed=plan.bytes_needed)
        self.source = SegmentSource(target, plan, options, self.stats, eager=eager,
                                    prefetch=prefetch, meta=meta)
        b = Build(self.source, options.limits, ahead=0 if eager or prefetch == 0 else 1,
                  lazy=not eager, keep=keep)
        types = meta.super_types
        self.n_types = len(types)
        self.remaining = meta.row_count if self.n_types == 1 else None
        if self.remaining is not None and self.remaining > options.limits.max_rows:
            raise LimitError(f"the file claims {self.remaining} rows, over "
                             f"max_rows={options.limits.max_rows}")
        self.ids = (Int32Cursor(b, meta.super_column, "the super column")
                    if self.n_types > 1 else None)
        # per output column, the super types that have it and their cursors, built from
        # the plan's legs (the projection was walked once, by the planner)
        self.cursors: dict[str | None, list[tuple[int, Cursor]]] = {}
        # an eager whole read of several super types: columns whose every type holds
        # plain primitive values are read as one group (one job, one combine)
        self.groups: dict[str, ColumnGroup] = {}
        if ids_only:
            pass
        elif paths is None:
            self.cursors[None] = [(sid, cursor_for(b, t, c)) for sid, (t, c)
                                  in enumerate(zip(types, meta.columns, strict=True))]
        elif paths:
            for p, legs in zip(paths, legs_of(meta, plan, paths), strict=True):
                group = (ColumnGroup.of(b, legs) if grouped and self.n_types > 1 else None)
                if group is not None:
                    self.groups[p] = group
                    self.cursors[p] = []
                else:
                    self.cursors[p] = [(leg.sid, leg_cursor(b, leg)) for leg in legs]
        self.nulls: dict[tuple[int, int], A.Array] = {}
        self.source.start()

    # ------------------------------------------------ in the read's thread ---
    def batch(self, n: int) -> tuple[dict[str | None, A.Array], np.ndarray] | None:
        """The next ``n`` rows (fewer at the end), or None when there are none."""
        if self.ids is None:
            if not self.remaining:
                return None
            k = min(n, self.remaining)
            self.remaining -= k
            ids = np.zeros(k, np.int32)
            counts = [k]
        else:
            ids = self.ids.take(n, exact=False)
            if not ids.size:
                return None
            if int(ids.min()) < 0 or int(ids.max()) >= self.n_types:
                raise FormatError(f"super column holds an ID outside 0..{self.n_types - 1}")
            counts = np.bincount(ids, minlength=self.n_types).tolist()
        if int(ids.size) >= POOL_MIN_VALUES:
            # the columns' segments are asked for together, then decoded at once in the
            # pool (parts of fewer values decode faster in this thread, at their take)
            big = {sid for sid, k in enumerate(counts) if k >= POOL_MIN_VALUES}
            planned = [(c, counts[sid]) for cs in self.cursors.values() for sid, c in cs
                       if sid in big]
            for c, k in planned:
                c.plan(k)
            for c, _ in planned:
                c.launch()
        return {p: (self.groups[p].column(ids, counts) if p in self.groups
                    else self.column(cs, ids, counts))
                for p, cs in self.cursors.items()}, ids

    def column(self, cs: list[tuple[int, Cursor]], ids: np.ndarray, counts: list[int]
                ) -> A.Array:
        """One column of the batch: the values of the super types that have it, in row
        order (nulls in the rows of the others)."""
        return self.assemble(cs, ids, counts, lambda sid, c: c.take(counts[sid]))

    def assemble(self, cs: list[tuple[int, Cursor]], ids: np.ndarray, counts: list[int],
                 part_of: Callable[[int, Cursor], A.Array]) -> A.Array:
        """One column of rows ``ids`` from each super type's part (``part_of``: its
        ``counts[sid]`` values, in order), nulls in the rows of the types without it."""
        n = int(ids.size)
        if len(cs) == 1 and self.n_types > 1:  # one type has the path: a mask, no gather
            sid, c = cs[0]
            if not counts[sid]:  # not in this batch: all null (arrays are read-only: shared)
                key = (id(c), n)
                got = self.nulls.get(key)
                if got is None:
                    empty = c.take(0)
                    got = self.nulls[key] = (A.NullArray(n) if empty.type == NULL
                                             else A.null_array(empty.type, n))
                part_of(sid, c)  # the part of no rows: the cursor moves as asked
                return got
            part = part_of(sid, c)
            return A.NullArray(n) if part.type == NULL else part.expand(ids == sid)
        parts: list[A.Array | None] = [None] * self.n_types
        for sid, c in cs:
            parts[sid] = part_of(sid, c)
        return A.combine(parts, ids)

    def finish(self) -> None:
        """FormatError unless every stream read has been used up exactly."""
        if self.ids is not None:
            self.ids.finish()
        if self.partial:
            return
        for cs in self.cursors.values():
            for _, c in cs:
                c.finish()

    def apart(self) -> tuple[np.ndarray, list[tuple[str | None, Callable[[], A.Array]]]] | None:
        """An eager read's :meth:`whole` as one task per column, when its columns are
        apart: one super type, each column a leaf cursor on streams of its own (so
        they share nothing but the caps, which lock) and enough bytes to be worth a
        task each; None otherwise.  The caller runs the tasks, then :meth:`finish`."""
        if (self.ids is not None or self.groups or len(self.cursors) < 2
                or not self.remaining or not self.source.eager
                or self.source.mem_total < APART_BYTES
                or not all(len(cs) == 1 and isinstance(cs[0][1], PrimCursor)
                           for cs in self.cursors.values())):
            return None
        k, self.remaining = self.remaining, 0
        ids = np.zeros(k, np.int32)
        counts = [k]
        return ids, [(p, functools.partial(self.column, cs, ids, counts))
                     for p, cs in self.cursors.items()]

    def whole(self) -> tuple[dict[str | None, A.Array], np.ndarray]:
        """Every row at once, then the end-of-data checks."""
        rows = self.remaining if self.ids is None else 1 << 62
        got = self.batch(rows) if rows else None
        if got is None:
            ids = np.zeros(0, np.int32)
            counts = [0] * self.n_types
            got = ({p: (self.groups[p].column(ids, counts) if p in self.groups
                        else self.column(cs, ids, counts))
                    for p, cs in self.cursors.items()}, ids)
        self.finish()
        return got

    def next_or_finish(self, n: int) -> tuple[dict[str | None, A.Array], np.ndarray] | None:
        trim()  # what the last batch freed goes back to the system (see .memory)
        got = self.batch(n)
        if got is None:
            self.finish()
        return got


def legs_of(meta: FileMeta, plan: PlanLike, paths: Sequence[str]
            ) -> list[tuple[P.Leg, ...]]:
    """Per path, the legs the plan resolved (the plan of these very columns), else those
    of one planner walk of ``paths`` (a plan made for other columns, or a RangePlan)."""
    legs = getattr(plan, "legs", ())
    if legs and tuple(getattr(plan, "columns", None) or ()) == tuple(paths):
        return list(legs)
    res = P.resolve_paths(meta, list(paths))
    by = dict(zip(res.columns or (), res.legs, strict=True))
    return [by[p] if p in by else by[P.format_path(P.parse_path(p))] for p in paths]


#: An eager read whose decoded segments hold at most this many bytes walks its cursors
#: on the loop (a pool hand-off costs more than the walk); a larger one, in the pool.
INLINE_BYTES = 64 << 10
#: ... and one of several independent columns holding at least this many bytes, a column
#: a pool task (Read.apart): a column's assembly (the concatenation of its segments) was
#: one serial task after the last byte, 12-17 ms of CPU on the wide table's 6 columns
APART_BYTES = 4 << 20

_STEPS: concurrent.futures.ThreadPoolExecutor | None = None
_STEPS_LOCK = threading.Lock()
_running = 0  # steps in the step pool now (under _STEPS_LOCK)


def step_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's threads for batch steps (bounded: more concurrent readers queue
    for a step, they never add threads).  Steps wait for decode jobs, never the other
    way round, so the two pools cannot deadlock."""
    global _STEPS
    with _STEPS_LOCK:
        if _STEPS is None:
            keep_freed_memory()  # before the threads allocate (see csup_async.model.heap)
            _STEPS = concurrent.futures.ThreadPoolExecutor(
                max(4, 4 * (os.cpu_count() or 2)), thread_name_prefix="csup-step")
        return _STEPS


def _forget_steps() -> None:
    """A forked child has none of its parent's threads (nor its lock holders): the step
    pool, its lock and its count start afresh there."""
    global _STEPS, _STEPS_LOCK, _running
    _STEPS, _STEPS_LOCK, _running = None, threading.Lock(), 0


if hasattr(os, "register_at_fork"):  # POSIX: where processes fork
    os.register_at_fork(after_in_child=_forget_steps)


def steps_running() -> int:
    """Batch steps running in the step pool now (0 once every read is closed)."""
    return _running


def _counted(fn: Callable[..., T], *args: Any) -> T:
    global _running
    with _STEPS_LOCK:
        _running += 1
    try:
        return fn(*args)
    finally:
        with _STEPS_LOCK:
            _running -= 1


class Stepper:
    """Runs one read's cursor steps, one at a time, and knows the one in flight."""

    def __init__(self) -> None:
        self.future: concurrent.futures.Future[Any] | None = None
        self.futures: list[concurrent.futures.Future[Any]] = []  # run_all's

    async def run(self, fn: Callable[..., T], *args: Any, waits: bool = True,
                  inline: bool = False) -> T:
        """``fn(*args)``: here (``inline``), in the decode pool (``waits=False``: it
        finds every segment it takes done), or in the step pool (it may wait)."""
        if inline:
            return fn(*args)
        if waits:
            self.future = step_pool().submit(_counted, fn, *args)
        else:
            self.future = decode_pool().submit(fn, *args)
        return await asyncio.wrap_future(self.future)

    async def run_all(self, fns: Sequence[Callable[[], T]]) -> list[T]:
        """Each of ``fns`` as its own task in the decode pool (they find every segment
        done, so wait for nothing there), at once; their results in order."""
        self.futures = [decode_pool().submit(fn) for fn in fns]
        return list(await asyncio.gather(*(asyncio.wrap_future(f) for f in self.futures)))

    async def join(self) -> None:
        """Wait for the steps in flight, if any (after the source is closed, they end)."""
        for f in (self.future, *self.futures):
            if f is not None and not f.done():
                with contextlib.suppress(BaseException):
                    await asyncio.wrap_future(f)


ReadThread = Stepper  # the name callers outside this module knew


def deadline_of(options: ReadOptions) -> float | None:
    if options.timeout is None:
        return None
    return asyncio.get_running_loop().time() + options.timeout


async def run_step(read: Read, worker: Stepper, deadline: float | None,
                fn: Callable[..., T], *args: Any) -> T:
    """One step of ``read``: an eager read's after every segment is settled (it then
    waits for nothing); a batch step in the step pool."""
    try:
        async with asyncio.timeout_at(deadline):
            source = read.source
            if source.eager:
                await source.settled()
                apart = read.apart() if fn == read.whole and not args else None
                if apart is not None:  # a column a task: the assembly on every core
                    ids, takes = apart
                    cols = await worker.run_all([take for _, take in takes])
                    read.finish()
                    return ({p: c for (p, _), c in zip(takes, cols, strict=True)},  # type: ignore[return-value]
                            ids)
                return await worker.run(fn, *args, waits=False,
                                        inline=source.mem_total <= INLINE_BYTES)
            return await worker.run(fn, *args)
    except TimeoutError:
        raise StoreTimeoutError("the read did not finish within its timeout",
                                path=read.path) from None
    except CsupError as e:
        raise e.with_path(read.path) from None
    except BaseException:
        if read.source.error is not None and isinstance(read.source.error, CsupError):
            raise read.source.error.with_path(read.path) from None
        raise


async def close_read(read: Read, worker: Stepper) -> None:
    await read.source.close()
    await asyncio.shield(worker.join())


def start_read(target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions,
           paths: Sequence[str] | None, *, eager: bool, ids_only: bool = False,
           prefetch: int | None = None,
           keep: dict[int, frozenset[int]] | None = None, partial: bool = False,
           grouped: bool = False) -> Read:
    try:
        return Read(target, meta, plan, options, paths, eager=eager, ids_only=ids_only,
                    prefetch=prefetch, keep=keep, partial=partial, grouped=grouped)
    except CsupError as e:
        raise e.with_path(target.path) from None


async def _whole(read: Read, options: ReadOptions
                 ) -> tuple[dict[str | None, A.Array], np.ndarray]:
    worker = Stepper()
    try:
        return await run_step(read, worker, deadline_of(options), read.whole)
    finally:
        await close_read(read, worker)


async def scan_columns(target: Target, meta: FileMeta, plan: PlanLike, paths: Sequence[str],
                       options: ReadOptions) -> ScanResult:
    """The columns at ``paths`` for every row: all requests at once, decoded as they land."""
    t0 = time.perf_counter()
    read = start_read(target, meta, plan, options, paths, eager=True, grouped=True)
    cols, ids = await _whole(read, options)
    read.stats.wall = time.perf_counter() - t0
    return ScanResult({p: a for p, a in cols.items() if p is not None}, int(ids.size),
                      read.stats, plan)


async def read_rows(target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions
                    ) -> tuple[A.Array, np.ndarray]:
    """Every row whole (one array over the super types) and each row's super ID."""
    read = start_read(target, meta, plan, options, None, eager=True)
    cols, ids = await _whole(read, options)
    return cols[None], ids


async def count_rows(target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions
                     ) -> int:
    """Rows of a file whose metadata does not say: the super column read and checked."""
    return int((await type_counts(target, meta, plan, options)).sum())


async def type_counts(target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions
                      ) -> np.ndarray:
    """Rows of each super type: the super column read and checked."""
    read = start_read(target, meta, plan, options, [], eager=True, ids_only=True)
    _, ids = await _whole(read, options)
    return np.bincount(np.asarray(ids, np.int64), minlength=len(meta.super_types))


async def iter_batches(target: Target, meta: FileMeta, plan: PlanLike, paths: Sequence[str],
                       options: ReadOptions, batch_rows: int, *, prefetch: int | None = None
                       ) -> AsyncIterator[ScanResult]:
    """The columns at ``paths`` in batches of ``batch_rows`` rows, with bounded memory
    (``prefetch``: pieces fetched ahead; 0 for none, and no segment decoded ahead)."""
    if batch_rows < 1:
        raise CsupError("batch_rows must be at least 1")
    t0 = time.perf_counter()
    deadline = deadline_of(options)
    read = start_read(target, meta, plan, options, paths, eager=False, prefetch=prefetch)
    worker = Stepper()
    try:
        while True:
            got = await run_step(read, worker, deadline, read.next_or_finish, batch_rows)
            if got is None:
                break
            cols, ids = got
            read.stats.wall = time.perf_counter() - t0
            yield ScanResult({p: a for p, a in cols.items() if p is not None}, int(ids.size),
                             read.stats, plan)
    finally:
        await close_read(read, worker)
