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

The cursor tree runs in a thread of its own (it blocks on decode futures;
the default executor is left to the stores, which may need it to make
progress).  Whatever ends a read (its end, an error, a cancellation, the
``timeout`` option) closes the source, which cancels and awaits the fetches
and wakes that thread, and then waits for the thread: nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import numpy as np

import planner as P

from .. import arrays as A
from ..errors import CsupError, FormatError, LimitError, StoreTimeoutError
from ..meta import FileMeta
from ..types import NULL, ErrorType, NamedType, RecordType
from .columns import POOL_MIN_VALUES, Build, Cursor, Int32Cursor, cursor_for, path_cursor
from .fetch import PlanLike, SegmentSource, Target
from .memory import trim
from .options import ReadOptions
from .result import ScanResult, ScanStats

T = TypeVar("T")


class Read:
    """One read's source and cursor tree (built on the event loop, without reading)."""

    def __init__(self, target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions,
                 paths: Sequence[str] | None, *, eager: bool, ids_only: bool = False,
                 prefetch: int | None = None,
                 keep: dict[int, frozenset[int]] | None = None, partial: bool = False) -> None:
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
        # per output column, the super types that have it and their cursors (a path
        # is walked only where it can be: work follows the metadata, not types x paths)
        self.cursors: dict[str | None, list[tuple[int, Cursor]]] = {}
        if ids_only:
            pass
        elif paths is None:
            self.cursors[None] = [(sid, cursor_for(b, t, c)) for sid, (t, c)
                                  in enumerate(zip(types, meta.columns, strict=True))]
        else:
            having = _types_by_field(types)
            for p in paths:
                comps = P.parse_path(p)
                sids = range(self.n_types) if not comps else having.get(comps[0], ())
                row = [(sid, path_cursor(b, types[sid], meta.columns[sid], comps))
                       for sid in sids]
                self.cursors[p] = [(sid, c) for sid, c in row if c is not None]
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
        return {p: self.column(cs, ids, counts) for p, cs in self.cursors.items()}, ids

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

    def whole(self) -> tuple[dict[str | None, A.Array], np.ndarray]:
        """Every row at once, then the end-of-data checks."""
        rows = self.remaining if self.ids is None else 1 << 62
        got = self.batch(rows) if rows else None
        if got is None:
            ids = np.zeros(0, np.int32)
            got = ({p: self.column(cs, ids, [0] * self.n_types)
                    for p, cs in self.cursors.items()}, ids)
        self.finish()
        return got

    def next_or_finish(self, n: int) -> tuple[dict[str | None, A.Array], np.ndarray] | None:
        trim()  # what the last batch freed goes back to the system (see .memory)
        got = self.batch(n)
        if got is None:
            self.finish()
        return got


def _types_by_field(types: Sequence[Any]) -> dict[str, list[int]]:
    """Which super types have each top-level field: a path is walked only where it can be."""
    out: dict[str, list[int]] = {}
    for sid, t in enumerate(types):
        while isinstance(t, (NamedType, ErrorType)):
            t = t.inner
        if isinstance(t, RecordType):
            for f in t.fields:
                out.setdefault(f.name, []).append(sid)
    return out


class ReadThread:
    """Runs the cursor tree's steps in one thread of its own, one step at a time."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()

        def settle(value: Any, exc: BaseException | None) -> None:
            if not fut.done():
                if exc is not None:
                    fut.set_exception(exc)
                else:
                    fut.set_result(value)

        def body() -> None:
            try:
                value, exc = fn(*args), None
            except BaseException as e:
                value, exc = None, e
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, value, exc)

        self.thread = threading.Thread(target=body, name="csup-read", daemon=True)
        self.thread.start()
        return await fut

    async def join(self) -> None:
        t = self.thread
        while t is not None and t.is_alive():
            await asyncio.sleep(0.001)


def deadline_of(options: ReadOptions) -> float | None:
    if options.timeout is None:
        return None
    return asyncio.get_running_loop().time() + options.timeout


async def run_step(read: Read, worker: ReadThread, deadline: float | None,
                fn: Callable[..., T], *args: Any) -> T:
    try:
        async with asyncio.timeout_at(deadline):
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


async def close_read(read: Read, worker: ReadThread) -> None:
    await read.source.close()
    await asyncio.shield(worker.join())


def start_read(target: Target, meta: FileMeta, plan: PlanLike, options: ReadOptions,
           paths: Sequence[str] | None, *, eager: bool, ids_only: bool = False,
           prefetch: int | None = None,
           keep: dict[int, frozenset[int]] | None = None, partial: bool = False) -> Read:
    try:
        return Read(target, meta, plan, options, paths, eager=eager, ids_only=ids_only,
                     prefetch=prefetch, keep=keep, partial=partial)
    except CsupError as e:
        raise e.with_path(target.path) from None


async def _whole(read: Read, options: ReadOptions
                 ) -> tuple[dict[str | None, A.Array], np.ndarray]:
    worker = ReadThread()
    try:
        return await run_step(read, worker, deadline_of(options), read.whole)
    finally:
        await close_read(read, worker)


async def scan_columns(target: Target, meta: FileMeta, plan: PlanLike, paths: Sequence[str],
                       options: ReadOptions) -> ScanResult:
    """The columns at ``paths`` for every row: all requests at once, decoded as they land."""
    t0 = time.perf_counter()
    read = start_read(target, meta, plan, options, paths, eager=True)
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
    worker = ReadThread()
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
