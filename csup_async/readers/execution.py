"""A reader's execution: scans, ``take``, batches, row counts and whole reads, each run
through the read pipeline (:mod:`csup_async.scan`) under its budget and progress."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.coalescing import plan_ranges
from planner.filters import bind
from planner.program import ScanProgram
from planner.request import NO_BUDGET, Budget, ScanRequest
from planner.waves import Wave, plan_rows, runs_of

from .. import arrays as A
from .. import scan as R
from ..arrays.filtering import evaluate
from ..model.errors import (
    ArgumentError,
    CsupError,
    FormatError,
    RowSelectionError,
)
from ..model.options import DEFAULT_BATCH_ROWS
from ..model.progress import Meter, Planned, tracking
from ..model.types import PrimitiveType
from ..model.values import Value
from ..scan.fetch import piece_figures
from ..scan.jobs import Target
from ..scan.options import (
    Limits,
    ReadOptions,
)
from ..scan.result import ScanResult, ScanStats
from ..scan.selection import iter_filtered, run_program, run_wave


class Execution:
    """What :class:`~.reader.Reader` runs (a mixin: the state it reads is the Reader's)."""

    async def count_rows(self, *, max_requests: int | None = None,
                         max_bytes: int | None = None,
                         on_progress: Callable[[Any], object] | None = None) -> int:
        """Rows in the object: from metadata, or by reading only the super column
        (budget and progress as for :meth:`scan`: a count from metadata reads nothing)."""
        return await self.count_with(Budget.parse(max_requests, max_bytes, on_progress))

    async def count_with(self, budget: Budget) -> int:
        """:meth:`count_rows` under a budget checked where the verb was entered."""
        meter = budget.meter(self.path)
        n = self.num_rows
        if n is not None:
            if meter is not None:
                fm = meter.file(self.path)
                fm.expect(0, 0)
                fm.done()
            return n
        plan = plan_ranges(list(self.meta.super_column), self.profile, self.held_span())
        with self._metering(meter, plan.request_count, plan.bytes_to_read):
            self._counted_rows = await R.count_rows(self.target(), self.meta, plan,
                                                    self.read_options)
        return self._counted_rows

    @contextlib.contextmanager
    def _metering(self, meter: Meter | None, requests: int, nbytes: int) -> Iterator[None]:
        """Run one planned read under ``meter``: its figures checked and expected first
        (a BudgetError before any request), the file done after."""
        if meter is None:
            yield
            return
        fm = meter.file(self.path)
        fm.expect(requests, nbytes)
        with tracking(fm):
            yield
        fm.done()

    async def type_counts(self) -> list[int]:
        """Rows of each super type, in ``meta.super_types`` order (one super type: from
        metadata; several: the super column is read)."""
        if len(self.meta.super_types) <= 1:
            return [await self.count_with(NO_BUDGET)] if self.meta.super_types else []
        plan = plan_ranges(list(self.meta.super_column), self.profile, self.held_span())
        counts = await R.type_counts(self.target(), self.meta, plan, self.read_options)
        self._counted_rows = int(counts.sum())
        return [int(c) for c in counts]

    # ---------------------------------------------------------------- scan ---
    @property
    def read_options(self) -> ReadOptions:
        """How this reader's reads run (concurrency, caps, deadline)."""
        return ReadOptions(self._in_flight(), Limits.of(self.max_rows, self.max_values,
                                                       self.max_mem_length), self.timeout,
                           self.verify_checksums)

    def _in_flight(self) -> int:
        """Requests a scan keeps in flight: ``concurrency`` when given; else the default,
        or the profile's connections when it plans more (a calibrated profile of slow
        connections cuts a scan into more parts, to run them in one wave)."""
        if self._concurrency_given:
            return self.concurrency
        return max(self.concurrency, self.profile.concurrency)

    def target(self) -> Target:
        """What a read of this object needs: the store, the key, the version the open saw
        (every read is pinned to it) and the bytes held."""
        held = ((self.tail.offset, self.tail.data), *self._extra)
        return Target(self.store, self.key, self.tail.info.version, self.path, held)

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Any = None, rows: slice | None = None,
                   limit: int | None = None, filters: Any = None,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """Read the columns at these dotted paths (all top-level columns when None).

        Every planned request is streamed at once (``concurrency`` in flight);
        each segment is decompressed and decoded in a thread pool the moment its
        bytes land, so decoding overlaps the transfer and uses every core.

        ``filter`` (a ``planner.filters`` expression such as ``col("id") == 7``, or
        its text form ``"id = 7"``) keeps the rows it is true for, in file order,
        with SQL's semantics (a null or absent field matches nothing).  Zones of rows
        whose segment statistics prove the filter false are not read; the filter is
        evaluated exactly on the rest; the other columns are read with the filter's
        (one round trip) or, when the avoided bytes pay for a round trip, afterwards
        for the selected rows only (``plan(columns, filter=...).explain()`` says which).

        ``rows=slice(a, b)`` (step 1, negative bounds from the end) reads only those
        rows, ``limit=n`` the first ``n`` (of ``rows``, or of the filter's matches);
        only the segments holding them are fetched.

        ``filters=`` takes pyarrow's list form (``[("a", ">", 3)]``, a list of lists
        for OR; :mod:`planner.dnf`), as ``filter=`` does.

        ``max_requests`` / ``max_bytes`` refuse, with a BudgetError, a scan whose plan
        needs more requests or bytes than that.  What is planned before anything is
        read (every scan's first wave) is refused before any data request; a filtered
        scan's second wave, planned from the first wave's matches, is refused before
        any of its requests is sent; a file of several super types with ``rows=`` or a
        filter reads its super column first (the row map), refused before it is sent
        when it alone is over.

        ``on_progress(Progress)`` is called with the bytes read against the bytes
        planned as they land: first at 0, monotonic, the total growing only when a
        wave is planned (a second wave, a row map), last exactly at the total.
        """
        return await self.scan_with(ScanRequest.parse(
            columns, filter=filter, filters=filters, rows=rows, limit=limit,
            max_requests=max_requests, max_bytes=max_bytes, on_progress=on_progress,
            path=self.path))  # the edge: every argument checked once, in its one form

    async def scan_with(self, request: ScanRequest) -> ScanResult:
        """:meth:`scan` of a request (``planner.request``: checked where the verb was
        entered, by this reader or by a Fragment, a Dataset or a sync face above it)."""
        meter = request.budget.meter(self.path)
        if meter is None:
            return await self.execute(await self.plan_with(request))
        fm = meter.file(self.path)
        with tracking(fm):  # the row map's read, while planning, is claimed as a wave
            program = await self.plan_with(request)
            fm.expect(*self.first_wave(program))
            result = await self.execute(program)
        fm.done()  # the last event: every byte and the one file done
        return result

    async def execute(self, plan: ScanProgram | P.ScanPlan,
                      columns: Sequence[str] | str | None = None) -> ScanResult:
        """Run a program from :meth:`plan` as planned, or a ScanPlan made elsewhere (a
        Spark driver) for these columns: no re-planning either way."""
        if not isinstance(plan, ScanProgram):
            return await R.scan_columns(self.target(), self.meta, plan,
                                        self._paths(columns), self.read_options)
        if columns is not None and plan.kind == "all":  # the plan's streams, these columns
            return await self.execute(plan.plan, columns)
        if columns is not None and self._paths(columns) != list(plan.columns):
            raise ArgumentError(f"this scan program reads {list(plan.columns)}, not "
                                f"{self._paths(columns)}: plan those columns", path=self.path)
        res = await self._run(plan)
        res.plan = plan  # what ran is what was planned: the program itself
        return res

    async def _run(self, plan: ScanProgram) -> ScanResult:
        cost = ScanStats(requests=plan.setup[0], bytes_read=plan.setup[1],
                         bytes_needed=plan.setup[2])
        try:
            res = await run_program(self.target(), self.meta, plan, self.read_options)
        except CsupError as e:  # a filter that cannot apply, statistics that lie
            raise e.with_path(self.path) from None
        return _charged(res, cost)

    async def take(self, indices: Any, columns: Sequence[str] | str | None = None, *,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """The rows at ``indices`` (any order, repeats allowed), in the order given.

        Only the segments holding them are read (each once, however often a row
        is asked for).  Indices are row numbers from 0; a negative one, one past the
        end, or a non-integer is a :class:`RowSelectionError`.  Budget and progress as
        for :meth:`scan` with ``rows=``.
        """
        return await self.take_with(ScanRequest.parse(
            columns, indices=indices, max_requests=max_requests, max_bytes=max_bytes,
            on_progress=on_progress, path=self.path))

    async def take_with(self, request: ScanRequest) -> ScanResult:
        """:meth:`take` of a request (its ``indices`` checked where the verb was entered)."""
        meter = request.budget.meter(self.path)
        if meter is None:
            return await (await self.prepare_take(request)).run()
        fm = meter.file(self.path)
        with tracking(fm):  # the row map's read, while planning, is claimed as a wave
            planned = await self.prepare_take(request)
            fm.expect(*planned.figures)
            res = await planned.run()
        fm.done()
        return res

    async def prepare_take(self, request: ScanRequest) -> Planned:
        """:meth:`take`, planned (a file of several super types may read its row map):
        the ``(requests, bytes)`` it reads and ``run()``."""
        idx = request.taken
        paths = self.paths_of(request)
        plan = self._plan(paths)
        n = self.num_rows  # None (several super types): known once the read has ended

        def out_of_range(n: int) -> RowSelectionError:
            bad = int(idx[idx >= n][0])
            return RowSelectionError(f"row index {bad} is out of range for {n} rows",
                                     path=self.path)

        if n is not None and idx.size and int(idx.max()) >= n:
            raise out_of_range(n)
        uniq, where = np.unique(idx, return_inverse=True)
        ranges = runs_of(uniq)
        rowmap, cost = await self._row_map(ranges)
        cut, keep = plan_rows(self.meta, plan, ranges, verify_counts=self.verify_counts,
                              rowmap=rowmap)

        async def run() -> ScanResult:
            try:
                got = await run_wave(self.target(), self.meta,
                                     Wave(tuple(paths), cut, ranges, keep, rowmap),
                                     self.read_options)
            except CsupError as e:
                raise e.with_path(self.path) from None
            res = _charged(got, cost)
            if res.num_rows != uniq.size:
                if n is None and res.total_rows is not None:
                    self._counted_rows = res.total_rows
                    raise out_of_range(res.total_rows)
                raise FormatError(f"read {res.num_rows} rows for {uniq.size} indices",
                                  path=self.path)
            same = (uniq.size == idx.size and bool((np.diff(idx) > 0).all())
                    if idx.size else True)
            cols = res.columns if same else {c: a.take(where) for c, a in res.columns.items()}
            return ScanResult(cols, int(idx.size), res.stats, res.plan)

        return Planned((cut.request_count, cut.bytes_to_read), run)

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           batch_rows: int = DEFAULT_BATCH_ROWS, prefetch: int | None = None,
                           filter: Any = None, filters: Any = None,
                           max_requests: int | None = None, max_bytes: int | None = None,
                           on_progress: Callable[[Any], object] | None = None
                           ) -> AsyncIterator[ScanResult]:
        """Scan in batches of ``batch_rows`` rows with bounded memory.

        The plan is fetched in 2 MiB pieces as the batches need them, ``prefetch``
        pieces ahead in file order (default: a 16 MiB window), and dropped once
        decoded; each column keeps its current segment's stream bytes and decodes
        only each batch's rows of it, so memory holds one segment's bytes per column,
        the window and one batch; not the result.  ``prefetch=0`` reads only what each batch
        needs and decodes nothing ahead (a caller that may stop after the first rows).

        ``filter`` (as for :meth:`scan`) is evaluated exactly on each batch: a batch
        holds only the rows it keeps, in file order (at most ``batch_rows``; a batch
        that keeps none is not yielded), and its columns are read even when not
        projected, then dropped.

        ``max_requests`` / ``max_bytes`` / ``on_progress`` as for :meth:`scan`, counting
        the requests this reads with (the plan's, cut in pieces of 2 MiB): the whole
        plan is checked before the first batch's request; a caller that stops early
        has read less than planned.  With a filter they read the streamed way (every
        zone, the filter evaluated per batch): the pruned read plans its pieces as it
        goes, so it could not be checked up front.
        """
        request = ScanRequest.parse(
            columns, filter=filter, filters=filters, batch_rows=batch_rows, prefetch=prefetch,
            max_requests=max_requests, max_bytes=max_bytes, on_progress=on_progress,
            path=self.path)
        batches = self.batches_with(request)
        async with contextlib.aclosing(batches):
            async for batch in batches:
                yield batch

    async def batches_with(self, request: ScanRequest) -> AsyncIterator[ScanResult]:
        """:meth:`iter_batches` of a request (checked where the verb was entered)."""
        meter = request.budget.meter(self.path)
        filter, batch_rows, prefetch = request.filter, request.batch_rows, request.prefetch
        paths = self.paths_of(request)
        expr, read = None, paths
        try:  # a filter that cannot parse or apply names the file, as scan's does
            if filter is not None:
                # Pruned batches are planned piece by piece as they are read, so a budget
                # could not be checked (nor progress totalled) before the first request:
                # with a meter, the streamed read below serves, its plan checked whole.
                pruned = (None if meter is not None else
                          await self._pruned_batches(request))
                if pruned is not None:
                    async with contextlib.aclosing(pruned):
                        async for batch in pruned:
                            yield batch
                    return
                expr, paths, read = self._filter_columns(paths, filter)
            plan = self._plan(read)
            fm = None
            if meter is not None:
                fm = meter.file(self.path)
                fm.expect(*piece_figures(plan))
            batches = R.iter_batches(self.target(), self.meta, plan, read,
                                     self.read_options, batch_rows, prefetch=prefetch)
            matching = None if expr is None else _Matching(expr, paths)
            async with contextlib.aclosing(batches):
                while True:
                    # (the read starts at the first step; without a meter of its own,
                    # a caller's, a dataset's, stays current)
                    with tracking(fm) if fm is not None else contextlib.nullcontext():
                        batch = await anext(batches, None)
                    if batch is None:
                        break
                    if matching is None:
                        yield batch
                        continue
                    kept = matching(batch)
                    if kept.num_rows:
                        yield kept
            if fm is not None:
                fm.done()
        except CsupError as e:
            raise e.with_path(self.path) from None

    async def _pruned_batches(self, request: ScanRequest
                              ) -> AsyncIterator[ScanResult] | None:
        """Filtered batches that skip the zones the statistics rule out (each super type's
        by its own), as ``scan(filter=)`` does; None when they rule out nothing (the
        streamed read then serves, and the filter is evaluated on each batch)."""
        program = await self.plan_with(request)
        work = program.work
        if work is None or work.surviving is None or not program.plan.rows_pruned:
            return None
        setup = program.setup
        inner = iter_filtered(self.target(), self.meta, program.plan, work, self.read_options,
                              request.batch_rows, request.prefetch != 0)

        async def charged() -> AsyncIterator[ScanResult]:
            async with contextlib.aclosing(inner):
                async for batch in inner:
                    batch.stats.requests += setup[0]  # the row map read while planning
                    batch.stats.bytes_read += setup[1]
                    batch.stats.bytes_needed += setup[2]
                    batch.plan = program
                    yield batch

        return charged()

    async def _all(self) -> tuple[A.Array, np.ndarray]:
        plan = P.plan_scan(self.meta, None, self.profile, available=self.held_span())
        return await R.read_rows(self.target(), self.meta, plan, self.read_options)

    async def read_rows(self) -> list[Any]:
        """Every value of the file in order, in the documented Python mapping."""
        arr, _ = await self._all()
        return arr.to_pylist()

    async def read_values(self) -> list[Value]:
        """Every value with its exact super type (unions inside as UnionValue)."""
        arr, ids = await self._all()
        types = self.meta.super_types
        typed = arr.to_pylist(typed=True)
        if len(types) == 1:
            return [Value(types[0], v) for v in typed]
        # several super types: combine() put rows in a union of the super types
        return [Value(types[i], v.value if isinstance(v, A.UnionValue) else v)
                for i, v in zip(ids.tolist(), typed, strict=True)]


def _charged(res: ScanResult, cost: ScanStats | None) -> ScanResult:
    """``res`` with the requests and bytes of reading its row map counted in."""
    if cost is not None:
        res.stats.requests += cost.requests
        res.stats.bytes_read += cost.bytes_read
        res.stats.bytes_needed += cost.bytes_needed
    return res


class _Matching:
    """The rows of a file's batches the filter keeps (exact, SQL semantics), columns
    ``wanted``.  The filter is bound for the types the batches' columns decode as, once
    per file: the batches of a file have the same types (a file of several super types
    may decode a column of one batch narrower than of another: that typing is bound
    once too), and each batch's column spellings are parsed once."""

    def __init__(self, expr: Any, wanted: list[str]) -> None:
        self.expr = expr
        self.wanted = wanted
        self.bound: dict[tuple[tuple[tuple[str, ...], str], ...], Any] = {}
        self.paths: dict[str, tuple[str, ...]] = {}

    def __call__(self, res: ScanResult) -> ScanResult:
        by_path = {self._path(c): a for c, a in res.columns.items()}
        names = tuple((p, a.type.name) for p, a in by_path.items()  # (in column order:
                      if isinstance(a.type, PrimitiveType))  # the same for each batch)
        typed = self.bound.get(names)
        if typed is None:
            typed = self.bound[names] = bind(self.expr, dict(names))
        keep = np.flatnonzero(evaluate(typed, by_path, res.num_rows))
        return ScanResult({c: res.columns[c].take(keep) for c in self.wanted},
                          int(keep.size), res.stats, res.plan)

    def _path(self, spelling: str) -> tuple[str, ...]:
        p = self.paths.get(spelling)
        if p is None:
            p = self.paths[spelling] = P.parse_path(spelling)
        return p


