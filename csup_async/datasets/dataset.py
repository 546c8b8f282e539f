"""Many CSUP objects scanned as one: one Fragment per object, the Reader's verbs across them.

Metadata of every file is fetched concurrently (one tail request per file in
the common case) through one shared store (a Hive-partitioned dataset opens a
file when a scan first needs it).  Every verb runs on :class:`Fragment`s: the
files a filter's partition part or segment statistics rule out are dropped
whole, and each kept file runs its own filtered scan, which prunes zones inside
it and evaluates the filter (the one residual evaluation, the Reader's).  Rows
come out in file order (files sorted by name when listed from a prefix or
glob); a file that lacks a projected column gives nulls for it, so row counts
never depend on the projection.

``open_dataset`` (the opening: options, store, listing) is in :mod:`.opening`;
``iter_batches``' read-ahead machinery in :mod:`.batches`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.filters import Expr, columns_of
from planner.partitions import Partitions
from planner.request import ScanRequest

from .. import arrays as A
from ..model.errors import ColumnNotFoundError, RowSelectionError
from ..model.options import DEFAULT_BATCH_ROWS, DEFAULT_FILE_CONCURRENCY
from ..model.progress import Meter, Planned, tracking
from ..readers.reader import Reader, ScanResult, ScanStats
from ..stores import Store
from ..stores.listing import list_sources
from ..stores.tasks import gather_or_cancel
from .batches import (
    FILES_AHEAD,
    READ_WHOLE_BELOW,
    SMALL_OBJECT,
    decodes_small,
    each_file,
    iter_metered,
)
from .fragment import (
    DatasetScanPlan,
    Fragment,
    ScannedFile,
    ScanVerbs,
    absent_paths,
    per_segment,
)
from .results import joined, null_column, sliced, summed_stats

__all__ = ["DEFAULT_FILE_CONCURRENCY", "FILES_AHEAD", "READ_WHOLE_BELOW", "Dataset", "Fragment",
           "absent_paths", "list_sources"]


class Dataset(ScanVerbs):
    """Open CSUP objects, one :class:`Fragment` each: the scan verbs across all of them.

    ``scan``/``to_arrow``/``head``/``iter_batches``/``take``/``count_rows`` take the
    arguments a Reader's do; ``get_fragments(filter=)`` gives the objects a filter
    may match (the others are ruled out by partition values or segment statistics,
    with no data request)."""

    def __init__(self, fragments: Sequence[Fragment], store: Store, *,
                 owns_store: bool = False, file_concurrency: int = DEFAULT_FILE_CONCURRENCY,
                 profile: Any = "local", partitions: Partitions | None = None,
                 missing_ok: bool = False) -> None:
        self.fragments = list(fragments)
        #: a column no file has is nulls, not a ColumnNotFoundError (a Spark task reads
        #: some files of a dataset whose other files may have it)
        self.missing_ok = missing_ok
        self.store = store
        self._owns_store = owns_store
        self.file_concurrency = file_concurrency
        self.profile = P.get_profile(profile)
        #: objects a directory or prefix listed but ``match`` left out (not read)
        self.skipped: list[str] = []
        #: Hive-style partition columns (``partitioning="hive"``), one row per file of ``files``
        self.partitions = partitions

    @classmethod
    def of_readers(cls, readers: Sequence[Reader], store: Store | None = None,
                   **options: Any) -> Dataset:
        """A dataset over Readers already open (one Reader: a one-fragment dataset);
        closing it closes them."""
        if store is None:
            store = readers[0].store if readers else None
        options.setdefault("profile", readers[0].profile if readers else "local")
        return cls([Fragment(r.key, reader=r) for r in readers], store,  # type: ignore[arg-type]
                   **options)

    @property
    def files(self) -> list[str]:
        return [f.url for f in self.fragments]

    @property
    def metadata_requests(self) -> int:
        """Requests the objects opened so far made for their metadata."""
        return sum(r.open_stats.requests for r in self.readers)

    async def column_names(self, columns: Sequence[str] | str | None = None) -> list[str]:
        """The columns ``scan(columns)`` gives: those asked for in their canonical
        spelling, or (None) every file's top-level columns, then the partition columns;
        ColumnNotFoundError for one no file has.  Opens every file."""
        return await self.columns_of(ScanRequest.parse(columns))

    async def columns_of(self, request: ScanRequest) -> list[str]:
        """:meth:`column_names` of a request's columns (parsed where it was made)."""
        await self._open(self.fragments)
        return await self._columns(request.columns, self.fragments)

    @property
    def readers(self) -> list[Reader]:
        """The Readers of the objects opened so far, in file order."""
        return [f.reader for f in self.fragments if f.reader is not None]

    # ------------------------------------------------------------ fragments ---
    async def _open(self, fragments: Sequence[Fragment]) -> None:
        need = [f for f in fragments if f.reader is None]
        if need:
            await gather_or_cancel([f.open() for f in need])

    def _by_partition(self, expr: Expr | None) -> list[Fragment]:
        if expr is None or self.partitions is None:
            return list(self.fragments)
        return [self.fragments[i] for i in self.partitions.select(expr)]

    async def _may_match(self, fragments: Sequence[Fragment], expr: Expr | None
                         ) -> list[bool]:
        if expr is None:
            return [True] * len(fragments)
        each = ScanRequest(filter=expr)
        return list(await gather_or_cancel([f.may_match_with(each) for f in fragments]))

    async def get_fragments(self, filter: Expr | str | None = None) -> list[Fragment]:
        """The objects ``filter`` may match, in file order: those its partition part or
        the objects' segment statistics rule out are left out (metadata only: the
        kept objects are opened, the others of a partitioned dataset are not)."""
        return await self._fragments(ScanRequest.parse(filter=filter).filter)

    async def _fragments(self, expr: Expr | None) -> list[Fragment]:
        cands = self._by_partition(expr)
        await self._open(cands)
        self._check_filter_paths(expr)
        keep = await self._may_match(cands, expr)
        return [f for f, k in zip(cands, keep, strict=True) if k]

    def _partition_names(self) -> tuple[str, ...]:
        return self.partitions.names if self.partitions is not None else ()

    async def _columns(self, columns: tuple[str, ...] | None,
                       cands: Sequence[Fragment]) -> list[str]:
        """The output columns (every top-level column of the open candidates, then the
        partition columns, when None); ColumnNotFoundError for one no object has."""
        names = self._partition_names()
        if columns is None:
            seen: dict[str, None] = {}
            for f in cands:
                if f.reader is not None:
                    seen.update(dict.fromkeys(P.top_level_paths(f.reader.meta.super_types)))
            return [c for c in seen if c not in names] + list(names)
        cols = list(columns)

        def missing() -> list[str]:
            return [c for c in cols if c not in names and all(
                absent_paths(f.reader, c) for f in cands if f.reader is not None)]

        gone = missing()
        if gone and any(f.reader is None for f in cands):  # maybe in a file not yet open
            await self._open(cands)
            gone = missing()
        if gone and not self.missing_ok and (cands or self.partitions is None):
            # (no file left: nothing to say)
            raise self.missing_error(gone)
        return cols

    # ----------------------------------------------------------------- plan ---
    async def plan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | None = None,
                   target_task_bytes: int = P.multi.DEFAULT_TARGET_TASK_BYTES,
                   filters: Any = None) -> P.MultiPlan:
        """Which files contribute, what each must read, and tasks of about the target size.

        With ``filter`` (an expression or its text form), files its partition part
        rules out are left out before any is opened (partition columns themselves
        need no reads), and files whose segment statistics (a SuperDB file: its
        objects' min/max) prove it false for every row are listed in ``pruned`` with
        the reason ``planner.pruning.STATISTICS``; a SuperDB file's objects they rule
        out are counted in ``objects_pruned``."""
        request = ScanRequest.parse(columns, filter=filter, filters=filters)
        expr = request.filter
        cands = self._by_partition(expr)
        await self._open(cands)
        self._check_filter_paths(expr)
        keep = await self._may_match(cands, expr)
        kept = [f.reader for f, k in zip(cands, keep, strict=True) if k]
        pruned = [f.reader for f, k in zip(cands, keep, strict=True) if not k]
        own = [f for f, k in zip(cands, keep, strict=True)
               if k and getattr(f.reader, "header_layout", False)]
        names = set(self._partition_names())
        cols = ([c for c in request.columns if c not in names]
                if request.columns is not None else None)
        extra: list[str] = []
        if cols is not None and expr is not None:  # a scan reads the filter's columns too
            extra = [c for c in dict.fromkeys(P.format_path(p) for p in columns_of(expr))
                     if c not in names and c not in cols]
            cols += extra
        # a SuperDB file is planned by its reader (objects its min/max rule out left out)
        planned = dict(zip([f.url for f in own], await gather_or_cancel(
            [f.plan_with(dataclasses.replace(request, columns=None if cols is None else
                                             tuple(cols))) for f in own]), strict=True))
        plan = P.plan_files(_entries(kept), cols, self.profile,  # type: ignore[arg-type]
                            target_task_bytes=target_task_bytes, planned=planned)
        if extra:  # a filter's column no file has is null: not missing
            plan = dataclasses.replace(plan, missing_paths=tuple(
                p for p in plan.missing_paths if p not in extra))
        if pruned:
            from planner.pruning import STATISTICS

            found = {p for r in pruned for p in plan.missing_paths
                     if p not in absent_paths(r, p)}  # type: ignore[arg-type]
            plan = dataclasses.replace(plan, missing_paths=tuple(
                p for p in plan.missing_paths if p not in found), pruned=plan.pruned + tuple(
                P.multi.PrunedFile(r.key, STATISTICS, r.meta.row_count)  # type: ignore[union-attr]
                for r in pruned))
        return plan

    # ----------------------------------------------------------------- scan ---
    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | str | None = None, rows: slice | None = None,
                   limit: int | None = None, filters: Any = None,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """Rows of every file in file order (those ``filter`` keeps, of the dataset's
        rows ``rows``, the first ``limit``).

        Files the filter's partition part rules out are never opened; files whose
        segment statistics prove it false for every row get no data request; every
        other file runs its own filtered scan, which skips the zones its statistics
        rule out and evaluates the filter exactly on the rest.  With ``limit``, files
        are read in file order only until their rows cover it (``file_concurrency``
        at a time; without a filter, the row counts in the metadata say which).

        ``max_requests``/``max_bytes`` hold for the whole scan: every kept file is
        planned first and the sum of their first waves is checked before any file's
        data request (with ``limit``, the files of each round of ``file_concurrency``);
        a later wave (a filtered scan's second, the next round of files) is checked
        before any of its requests.  ``on_progress`` gets bytes and files done against
        planned over every file (see :meth:`Reader.scan`).
        """
        request = ScanRequest.parse(  # the edge: every argument checked once, one form
            columns, filter=filter, filters=filters, rows=rows, limit=limit,
            max_requests=max_requests, max_bytes=max_bytes, on_progress=on_progress)
        return await self.scan_with(request)

    async def scan_with(self, request: ScanRequest) -> ScanResult:
        """:meth:`scan` of a request (checked where the verb was entered)."""
        meter = request.budget.meter()
        if meter is None:
            return await self._scan(request, None)
        with tracking(meter.file(counted=False)):  # any read outside a file's plan
            res = await self._scan(request, meter)
        meter.finish()
        return res

    async def _scan(self, request: ScanRequest, meter: Meter | None) -> ScanResult:
        t0 = time.perf_counter()
        columns, expr, rows, limit = (request.columns, request.filter, request.rows,
                                      request.limit)
        if rows is not None:
            work = await self._row_slices(rows, expr)
        else:
            work = [(f, None) for f in self._by_partition(expr)]
        cands = self._by_partition(expr)  # the files whose columns the scan may name
        sem = asyncio.Semaphore(self.file_concurrency)
        results: list[tuple[Fragment, ScanResult]] = []
        pruned: list[P.PrunedFile] = []
        cols: list[str] | None = None
        left = limit
        wave = len(work) if limit is None else self.file_concurrency
        i = 0
        while cols is None or (i < len(work) and (left is None or left > 0)):
            chunk = work[i: i + wave]
            i += wave
            await self._open([f for f, _ in chunk])
            if cols is None:
                self._check_filter_paths(expr)
                cols = await self._columns(columns, cands)
            keep = await self._may_match([f for f, _ in chunk], expr)
            todo: list[tuple[Fragment, slice | None, int | None]] = []
            for (f, local), k in zip(chunk, keep, strict=True):
                if not k:
                    from planner.pruning import STATISTICS

                    pruned.append(P.PrunedFile(f.url, STATISTICS, f.num_rows))
                    continue
                if left is not None and left <= 0:
                    break
                todo.append((f, local, left))
                if expr is None and left is not None:  # the rows it gives are known
                    n = await f.count_with(ScanRequest())
                    left -= min(left, n if local is None else local.stop - local.start)

            async def one(f: Fragment, local: slice | None, lim: int | None,
                          cols: list[str]) -> ScanResult:
                async with sem:
                    return await f.scan_with(each_file(cols, expr, rows=local, limit=lim))

            if meter is None:
                got = await gather_or_cancel([one(*t, cols) for t in todo])
            else:
                got = await self._metered([functools.partial(
                    f.prepare, each_file(cols, expr, rows=local, limit=lim))
                    for f, local, lim in todo], [f for f, _, _ in todo], meter)
            results += [(t[0], r) for t, r in zip(todo, got, strict=True)]
            if expr is not None and left is not None:
                left -= sum(r.num_rows for r in got)
        assert cols is not None
        out = joined(_with_unread(cands, results, cols), cols)
        if limit is not None and out.num_rows > limit:
            out = ScanResult({c: a.slice(0, limit) for c, a in out.columns.items()}, limit,
                             out.stats)
        out.stats.wall = time.perf_counter() - t0
        out.stats.metadata_requests = self.metadata_requests
        out.plan = DatasetScanPlan(
            tuple(ScannedFile(f.url, r.plan) for f, r in results if r.plan is not None),
            tuple(P.PrunedFile(f.url, P.NO_REQUESTED_PATH, r.num_rows)
                  for f, r in results if r.plan is None) + tuple(pruned))
        return out

    async def _metered(self, prepare: Sequence[Callable[[], Awaitable[Planned]]],
                       frags: Sequence[Fragment], meter: Meter) -> list[ScanResult]:
        """Plan every file (``file_concurrency`` at a time), check the sum of their
        first waves against the budget, then read them: no file's data request is
        sent before every file is planned and the sum is within the budget."""
        sem = asyncio.Semaphore(self.file_concurrency)
        meters = [meter.file(f.path) for f in frags]

        async def plan(i: int) -> Planned:
            async with sem:
                with tracking(meters[i]):  # a row map read while planning: a wave
                    return await prepare[i]()

        planned = await gather_or_cancel([plan(i) for i in range(len(frags))])
        meter.expect([(fm, *p.figures) for fm, p in zip(meters, planned, strict=True)])

        async def run(i: int) -> ScanResult:
            async with sem:
                with tracking(meters[i]):
                    res = await planned[i].run()
                meters[i].done()
                return res  # type: ignore[no-any-return]

        return list(await gather_or_cancel([run(i) for i in range(len(frags))]))

    async def _row_slices(self, rows: slice, expr: Expr | None
                          ) -> list[tuple[Fragment, slice | None]]:
        """The files holding the dataset's rows ``rows`` (numbered over every file in
        file order), each with its own row slice, that the filter's partition part keeps."""
        await self._open(self.fragments)
        counts = await gather_or_cancel([f.count_with(ScanRequest()) for f in self.fragments])
        sel = range(int(sum(counts)))[rows]
        lo, hi = sel.start, max(sel.start, sel.stop)
        keep = set(map(id, self._by_partition(expr)))
        out: list[tuple[Fragment, slice | None]] = []
        off = 0
        for f, n in zip(self.fragments, counts, strict=True):
            a, b = max(lo - off, 0), min(hi - off, n)
            if a < b and id(f) in keep:
                out.append((f, slice(a, b)))
            off += n
        return out

    async def count_rows(self, filter: Expr | str | None = None) -> int:
        """Rows of the dataset (that ``filter`` keeps): from metadata where it can be;
        a filter reads only its own columns, of the zones and files it may match."""
        return await self.count_with(ScanRequest.parse(filter=filter))

    async def count_with(self, request: ScanRequest) -> int:
        """:meth:`count_rows` of a request (its filter)."""
        frags = await self._fragments(request.filter)
        sem = asyncio.Semaphore(self.file_concurrency)
        each = each_file([], request.filter)

        async def one(f: Fragment) -> int:
            async with sem:
                return await f.count_with(each)

        return int(sum(await gather_or_cancel([one(f) for f in frags])))

    async def take(self, indices: Any, columns: Sequence[str] | str | None = None, *,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """The rows at ``indices`` (row numbers over every file in file order; any
        order, repeats allowed), in the order given: only the files holding them are
        read, and of each only the segments holding them.  Budget and progress as
        for :meth:`scan`: every file holding rows is planned before any is read."""
        return await self.take_with(ScanRequest.parse(
            columns, indices=indices, max_requests=max_requests, max_bytes=max_bytes,
            on_progress=on_progress))

    async def take_with(self, request: ScanRequest) -> ScanResult:
        """:meth:`take` of a request (its indices checked where the verb was entered)."""
        meter = request.budget.meter()
        if meter is None:
            return await self._take(request, None)
        with tracking(meter.file(counted=False)):
            res = await self._take(request, meter)
        meter.finish()
        return res

    async def _take(self, request: ScanRequest, meter: Meter | None) -> ScanResult:
        idx = request.taken
        await self._open(self.fragments)
        counts = await gather_or_cancel([f.count_with(ScanRequest()) for f in self.fragments])
        offsets = np.cumsum([0, *counts], dtype=np.int64)
        if idx.size and int(idx.max()) >= int(offsets[-1]):
            raise RowSelectionError(f"row index {int(idx.max())} is out of range for "
                                    f"{int(offsets[-1])} rows")
        cols = await self._columns(request.columns, self.fragments)
        which = np.searchsorted(offsets, idx, side="right") - 1
        files = [int(k) for k in np.unique(which)]
        sem = asyncio.Semaphore(self.file_concurrency)

        async def one(k: int) -> ScanResult:
            async with sem:
                return await self.fragments[k].take_with(
                    each_file(cols, None, indices=idx[which == k] - offsets[k]))

        if meter is None:
            parts = await gather_or_cancel([one(k) for k in files])
        else:
            parts = await self._metered(
                [functools.partial(self.fragments[k].prepare_take, each_file(
                    cols, None, indices=idx[which == k] - offsets[k])) for k in files],
                [self.fragments[k] for k in files], meter)
        ids = np.searchsorted(np.asarray(files, dtype=np.int64), which).astype(np.int32)
        stats = summed_stats(parts)
        out = {c: (A.combine([p.columns[c] for p in parts], ids) if parts else null_column(0))
               for c in cols}
        return ScanResult(out, int(idx.size), stats)

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           batch_rows: int = DEFAULT_BATCH_ROWS, prefetch: int | None = None,
                           filter: Expr | str | None = None, limit: int | None = None,
                           read_whole_below: int = READ_WHOLE_BELOW,
                           files_ahead: int = FILES_AHEAD, segment_requests: bool = False,
                           whole_files: bool = False, stats: ScanStats | None = None,
                           filters: Any = None, max_requests: int | None = None,
                           max_bytes: int | None = None,
                           on_progress: Callable[[Any], object] | None = None
                           ) -> AsyncIterator[ScanResult]:
        """Batches of at most ``batch_rows`` rows in file order, with bounded memory:
        the rows ``filter`` keeps (files and zones it rules out unread), the first
        ``limit``.  A batch holds rows of one file and every requested column (nulls
        where the file lacks it).

        A file whose projection decodes to at most ``read_whole_below`` bytes is
        read with one scan (the parallel decoder), ``files_ahead`` such files ahead
        of the one being yielded; a larger one streams through its Reader's
        ``iter_batches`` (``prefetch``, ``segment_requests`` as for a Fragment).
        Memory holds those files, one batch and the stream's window; not the result.
        ``whole_files`` reads every file with one scan (a caller that converts whole
        files anyway, as a Spark task does).
        ``stats``, when given, has every read's cost added to it.  ``filters`` (pyarrow's
        list form) as ``filter``.

        ``max_requests``/``max_bytes``/``on_progress``: every kept file is planned
        before the first batch (as :meth:`scan` does; a file streamed in batches counts
        its requests in pieces of 2 MiB), the sum checked before any data request.
        With ``limit`` and no filter, only the files whose row counts cover the limit
        are planned; with a filter, every kept file is, and a caller that stops early
        (or a limit reached before the last file) leaves the rest of the plan unread:
        the last event then falls short of the total by what was not needed.
        """
        request = ScanRequest.parse(
            columns, filter=filter, filters=filters, limit=limit, batch_rows=batch_rows,
            prefetch=prefetch, max_requests=max_requests, max_bytes=max_bytes,
            on_progress=on_progress)
        batches = self.batches_with(request, read_whole_below, files_ahead, segment_requests,
                                    whole_files, stats)
        async with contextlib.aclosing(batches):
            async for b in batches:
                yield b

    async def batches_with(self, request: ScanRequest, read_whole_below: int = READ_WHOLE_BELOW,
                           files_ahead: int = FILES_AHEAD, segment_requests: bool = False,
                           whole_files: bool = False, stats: ScanStats | None = None
                           ) -> AsyncIterator[ScanResult]:
        """:meth:`iter_batches` of a request (checked where the verb was entered)."""
        meter = request.budget.meter()
        expr, limit, batch_rows = request.filter, request.limit, request.batch_rows
        each = each_file(request.columns or (), expr, batch_rows=batch_rows,
                         prefetch=request.prefetch)  # a file's request: its columns below
        frags = await self._fragments(expr)
        cols = await self._columns(request.columns, self._by_partition(expr))
        each = each.but(columns=tuple(cols) or None)
        left = limit
        ahead: dict[int, asyncio.Task[ScanResult]] = {}

        def small(f: Fragment) -> bool:
            r = f.reader
            return whole_files or (r is not None and r.meta.object_size
                                   <= min(SMALL_OBJECT, read_whole_below))

        if meter is not None:
            metered_batches = iter_metered(frags, each, limit, read_whole_below, files_ahead,
                                           segment_requests, small, stats, meter)
            async with contextlib.aclosing(metered_batches):
                async for b in metered_batches:
                    yield b
            return

        def schedule(start: int) -> None:
            for j in range(start, min(start + 1 + files_ahead, len(frags))):
                if j not in ahead and small(frags[j]):
                    ahead[j] = asyncio.ensure_future(frags[j].scan_with(each.but(limit=left)))

        try:
            for i, f in enumerate(frags):
                if left is not None and left <= 0:
                    return
                schedule(i)
                task = ahead.pop(i, None)
                res: ScanResult | None = None
                if task is not None:
                    res = await task
                elif left is not None and left <= batch_rows:  # the first rows' segments
                    if segment_requests and f.reader is not None:
                        per_segment(f.reader)
                    res = await f.scan_with(each.but(limit=left))
                elif await decodes_small(f, each, read_whole_below):
                    res = await f.scan_with(each.but(limit=left))
                if res is not None:
                    n = res.num_rows if left is None else min(res.num_rows, left)
                    for batch in sliced(res, n, batch_rows, stats):
                        yield batch
                    if left is not None:
                        left -= n
                    continue
                last: ScanStats | None = None
                it = f.batches_with(each.but(limit=left), segment_requests)
                async with contextlib.aclosing(it):
                    async for b in it:
                        last = b.stats
                        yield b
                        if left is not None:
                            left -= b.num_rows
                if stats is not None and last is not None:
                    stats.add(last)
        finally:
            for t in ahead.values():
                t.cancel()
            if ahead:
                await asyncio.gather(*ahead.values(), return_exceptions=True)

    # ---------------------------------------------------------------- checks ---
    def prune_by_statistics(self, filter: Expr | str) -> tuple[list[Reader], list[Reader]]:
        """``(kept, pruned)``: the open files whose segment statistics (a SuperDB file:
        its objects' min/max) do not, and do, prove ``filter`` false for every row (no
        request: the metadata is loaded)."""
        from planner.filters import Truth
        from planner.pruning import file_truth

        from ..format.colvalue import segment_stats

        expr = ScanRequest.parse(filter=filter).filter
        unknown = {(n,) for n in self._partition_names()}
        kept: list[Reader] = []
        pruned: list[Reader] = []
        for r in self.readers:
            if getattr(r, "header_layout", False):
                truth = r.filter_truth(expr, unknown)  # type: ignore[attr-defined]
            elif getattr(r, "bsup", False):
                truth = Truth.MAYBE
            else:
                truth = file_truth(r.meta, expr, segment_stats,  # type: ignore[arg-type]
                                   unknown=unknown)
            (pruned if truth is Truth.FALSE else kept).append(r)
        return kept, pruned

    def _check_filter_paths(self, filter: Expr | None) -> None:
        """ColumnNotFoundError when the filter names a data path no file of the dataset
        has (a misspelling would match nothing, silently).  Only said when every file is
        open: a file a partition filter kept closed may have it."""
        if filter is None or any(f.reader is None for f in self.fragments):
            return
        names = set(self._partition_names())
        from planner.pruning import type_has_path

        paths = [p for p in dict.fromkeys(columns_of(filter)) if P.format_path(p) not in names]
        missing = [P.format_path(p) for p in paths
                   if not any(type_has_path(t, p) for r in self.readers
                              for t in r.meta.super_types)]
        if missing:
            types = [t for r in self.readers for t in r.meta.super_types]
            raise ColumnNotFoundError(
                f"the filter names {', '.join(map(repr, missing))}, which no file has; "
                f"columns: {P.describe_paths(types)}")

    def missing_error(self, missing: Sequence[str]) -> ColumnNotFoundError:
        """The error for paths no file has, listing the paths the files do have."""
        types = [t for r in self.readers for t in r.meta.super_types]
        return ColumnNotFoundError(f"no file has column {', '.join(map(repr, missing))}; "
                                   f"columns: {P.describe_paths(types)}")

    async def close(self) -> None:
        await asyncio.gather(*(f.close() for f in self.fragments), return_exceptions=True)
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> Dataset:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _entries(readers: Sequence[Reader]) -> list[tuple[str, Any, tuple[int, int]]]:
    return [(r.key, r.meta, (r.tail.offset, len(r.tail.data))) for r in readers]


def _with_unread(cands: Sequence[Fragment], results: list[tuple[Fragment, ScanResult]],
                 cols: list[str]) -> list[ScanResult]:
    """The results in file order, with a zero-row result of every other open candidate
    in its place: a column's type is then the combination of every file's types (the
    dataset's schema), whichever files a filter, a limit or ``limit=0`` left unread."""
    read = {id(f): r for f, r in results}
    out: list[ScanResult] = []
    for f in cands:
        if id(f) in read:
            out.append(read.pop(id(f)))
        elif (empty := f.empty_columns(cols)) is not None:
            out.append(ScanResult(empty, 0))
    out += read.values()  # (a file read that is not a candidate: none today)
    return out
