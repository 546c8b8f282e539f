"""One object of a dataset, scanned with the verbs a Reader and a Dataset share.

A Fragment is an object (opened once, lazily, through its dataset's store and
pinned to the version its tail read saw), its Hive partition values, and the
columns a dataset's projection names that this object lacks.  Its verbs take a
dataset's view of columns and filters and hand the object's own part to its
Reader: partition columns are constants, paths no super type of the object has
are nulls, and the filter is specialised to the object
(:func:`planner.specialize.specialize`) before the Reader's filtered scan prunes
zones by statistics and evaluates it.  The residual filter is therefore
evaluated in one place, the Reader's, for one object or many.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import planner as P
from planner.filters import Expr, bind, columns_of
from planner.request import NO_BUDGET, ScanRequest
from planner.specialize import specialize

from .. import arrays as A
from ..model.errors import RowSelectionError
from ..model.options import DEFAULT_BATCH_ROWS
from ..model.progress import FileMeter, Planned, run_metered, tracking
from ..model.redact import redact_url
from ..readers.reader import Reader
from ..readers.wholeobject import WholeObjectReader
from ..scan.partitioning import constant_column
from ..scan.result import ScanResult, ScanStats

__all__ = ["DatasetScanPlan", "Fragment", "ScanVerbs", "ScannedFile", "absent_paths",
           "per_segment", "plans_scans", "run_metered"]

Opener = Callable[[str], Awaitable[Reader]]


def absent_paths(r: Reader, path: str) -> set[str]:
    """The spellings of ``path`` no super type of ``r``'s file has (empty: it is there)."""
    if isinstance(r, WholeObjectReader):  # BSUP, SuperDB: paths by their super types
        return set(r.missing_paths([path]))
    res = P.resolve_paths(r.meta, [path])
    return set(res.missing_paths)


def _null(n: int) -> A.Array:
    from ..model.types import NULL

    return A.null_array(NULL, n)


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """One object a dataset scan read, with the plan its Reader executed."""

    name: str
    plan: Any = field(repr=False)

    def __repr__(self) -> str:
        # a repr is a rendering: the one redaction, never a signed URL's query
        return f"ScannedFile(name={redact_url(self.name)!r})"


@dataclass(frozen=True, slots=True)
class DatasetScanPlan:
    """What a dataset scan did: the objects read (each with its executed plan) and the
    objects that needed no data request (``planner.PrunedFile``, with the reason)."""

    files: tuple[ScannedFile, ...]
    pruned: tuple[P.PrunedFile, ...]

    def explain(self) -> str:
        lines = [f"dataset scan: {len(self.files)} objects read, {len(self.pruned)} "
                 f"needed no data request"]
        lines += [f"  pruned {redact_url(p.name)}: {p.reason}" for p in self.pruned[:20]]
        return "\n".join(lines)


class ScanVerbs:
    """The verbs a Fragment and a Dataset both derive from their ``scan``: one
    definition, so the two answer them alike."""

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | str | None = None, limit: int | None = None,
                   **options: Any) -> ScanResult:
        raise NotImplementedError

    async def to_arrow(self, columns: Sequence[str] | str | None = None, *,
                       filter: Expr | str | None = None, limit: int | None = None,
                       max_requests: int | None = None, max_bytes: int | None = None,
                       on_progress: Callable[[Any], object] | None = None) -> Any:
        """The scan as one pyarrow Table (see :meth:`ScanResult.to_arrow`); budget and
        progress as for ``scan``."""
        return (await self.scan(columns, filter=filter, limit=limit,
                                max_requests=max_requests, max_bytes=max_bytes,
                                on_progress=on_progress)).to_arrow()

    async def head(self, n: int = 5, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | str | None = None) -> ScanResult:
        """The first ``n`` rows in file order (of those ``filter`` keeps)."""
        return await self.scan(columns, filter=filter, limit=n)


class Fragment(ScanVerbs):
    """One CSUP object of a dataset (or on its own): the scan verbs over its rows.

    ``scan``/``to_arrow``/``head``/``iter_batches``/``take``/``count_rows`` take
    ``columns`` (dotted paths; a Hive partition name; a path the object lacks, read
    as nulls) and ``filter`` (an expression or its text form) as a Reader's do.
    """

    def __init__(self, url: str, *, reader: Reader | None = None, opener: Opener | None = None,
                 partition: Mapping[str, Any] | None = None,
                 partition_types: Mapping[str, str] | None = None,
                 plan: Any = None, plan_columns: Sequence[str] | None = None,
                 unread: bool = False) -> None:
        if reader is None and opener is None:
            raise ValueError("a Fragment needs a reader or an opener")
        self.url = url
        self._reader = reader
        self._opener = opener
        self._lock = asyncio.Lock()
        #: Hive partition values of this object, by column name (None: null)
        self.partition_values: dict[str, Any] = dict(partition or {})
        self._types: dict[str, str] = dict(partition_types or {})
        # a plan made elsewhere (a Spark driver) for ``scan(plan_columns)``: run as made;
        # ``unread``: that planner found nothing to read (its rows are nulls)
        self._plan, self._unread = plan, unread
        self._plan_columns = list(plan_columns) if plan_columns is not None else None

    def __repr__(self) -> str:
        return f"<Fragment {redact_url(self.url)}>"

    # -------------------------------------------------------------- object ---
    @property
    def reader(self) -> Reader | None:
        """The open Reader, or None until a verb (or :meth:`open`) opened the object."""
        return self._reader

    @property
    def path(self) -> str:
        return redact_url(self.url)

    async def open(self) -> Reader:
        """The object's Reader, opened (one tail read) on first use."""
        if self._reader is None:
            async with self._lock:
                if self._reader is None:
                    assert self._opener is not None
                    self._reader = await self._opener(self.url)
        return self._reader

    @property
    def num_rows(self) -> int | None:
        """Rows of the object when known from metadata (None before it is opened)."""
        return self._reader.num_rows if self._reader is not None else None

    async def column_names(self) -> list[str]:
        """The object's top-level columns, then its partition columns."""
        r = await self.open()
        own = P.top_level_paths(r.meta.super_types)
        return [c for c in own if c not in self.partition_values] + list(self.partition_values)

    # -------------------------------------------------------------- filter ---
    def partition_filter(self, filter: Expr | None) -> Expr | bool | None:
        """``filter`` with the partition columns replaced by this object's values (no
        request): False when no row can match, True when every row does."""
        if filter is None or not self.partition_values:
            return filter
        names = {(n,): n for n in self.partition_values}
        if not any(p in names for p in columns_of(filter)):
            return filter
        bound = bind(filter, {(n,): t for n, t in self._types.items() if t != "null"})
        return specialize(bound, {p: self.partition_values[n] for p, n in names.items()})

    async def file_filter(self, filter: Expr | None) -> Expr | bool | None:
        """``filter`` specialised to this object: partition values and paths no super
        type of it has (null on every row) replaced; opens the object unless the
        partition values alone decide it."""
        spec = self.partition_filter(filter)
        if spec is None or isinstance(spec, bool):
            return spec
        r = await self.open()
        from planner.pruning import type_has_path

        absent = {p: None for p in columns_of(spec)
                  if not any(type_has_path(t, p) for t in r.meta.super_types)}
        return specialize(spec, absent) if absent else spec

    async def may_match(self, filter: Expr | str | None) -> bool:
        """False when the partition values or the segment statistics (metadata, no data
        request) prove ``filter`` false for every row of the object."""
        return await self.may_match_with(ScanRequest.parse(filter=filter))

    async def may_match_with(self, request: ScanRequest) -> bool:
        """:meth:`may_match` of a request's filter (in its one form already)."""
        spec = await self.file_filter(request.filter)
        if spec is None or spec is True:
            return True
        if spec is False:
            return False
        from planner.pruning import prune_files

        from ..format.colvalue import segment_stats

        r = await self.open()
        if getattr(r, "bsup", False):  # a BSUP stream: no statistics, nothing proved
            return True
        return not prune_files([r.meta], spec, segment_stats).pruned

    # ------------------------------------------------------------ columns ---
    async def _layout(self, request: ScanRequest) -> tuple[list[str], list[str], Reader]:
        """(the output columns, the ones this object's Reader reads, the Reader)."""
        r = await self.open()
        cols = (list(request.columns) if request.columns is not None
                else await self.column_names())
        data = [c for c in cols if c not in self.partition_values and not absent_paths(r, c)]
        return cols, data, r

    def _complete(self, got: Mapping[str, A.Array], n: int, cols: list[str]
                  ) -> dict[str, A.Array]:
        out: dict[str, A.Array] = {}
        for c in cols:
            if c in self.partition_values:
                out[c] = constant_column(self._types.get(c, "null"), self.partition_values[c], n)
            else:
                out[c] = got[c] if c in got else _null(n)
        return out

    def empty_columns(self, cols: Sequence[str]) -> dict[str, A.Array] | None:
        """Zero-row columns of the types this object's scan of ``cols`` gives (a path it
        lacks: null; a partition column: its constant's type), from metadata; None
        while the object is not open.  A dataset combines every file's, so the types
        of its result do not depend on which files a filter or limit left unread."""
        r = self._reader
        if r is None:
            return None
        from ..arrays.arrowschema import empty_column

        out: dict[str, A.Array] = {}
        for c in cols:
            if c in self.partition_values:
                out[c] = constant_column(self._types.get(c, "null"), None, 0)
                continue
            if isinstance(r, WholeObjectReader):
                got = (None if r.missing_paths([c])
                       else A.null_array(r._types([c])[c], 0))
            else:
                got = empty_column(r.meta.super_types, P.parse_path(c) if c else ())
            out[c] = got if got is not None else _null(0)
        return out

    @staticmethod
    def filter_paths(spec: Expr, r: Reader) -> list[str]:
        """The paths a filter reads that the object has (the others are null there)."""
        paths = [P.format_path(p) for p in columns_of(spec)]
        return [p for p in dict.fromkeys(paths) if not absent_paths(r, p)]

    # --------------------------------------------------------------- verbs ---
    def _own(self, request: ScanRequest, read: Sequence[str], filter: Any) -> ScanRequest:
        """The request this object's Reader runs: its own columns and filter, no budget
        (the fragment meters the read itself)."""
        return request.but(columns=tuple(read) or None, filter=filter, budget=NO_BUDGET)

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | str | None = None, rows: slice | None = None,
                   limit: int | None = None, max_requests: int | None = None,
                   max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None,
                   filters: Any = None) -> ScanResult:
        """The object's rows (those ``filter`` keeps, of ``rows``, the first ``limit``);
        budget and progress as for :meth:`Reader.scan` (``filters=``: pyarrow's list)."""
        return await self.scan_with(ScanRequest.parse(
            columns, filter=filter, filters=filters, rows=rows, limit=limit,
            max_requests=max_requests, max_bytes=max_bytes, on_progress=on_progress,
            path=self.path))

    async def scan_with(self, request: ScanRequest) -> ScanResult:
        """:meth:`scan` of a request (checked where the verb was entered)."""
        meter = request.budget.meter(self.path)
        if meter is None:
            return await (await self.prepare(request)).run()
        return await run_metered(meter.file(self.path), lambda: self.prepare(request))

    async def prepare(self, request: ScanRequest) -> Planned:
        """:meth:`scan`, planned: what it reads first (``figures``) and ``run()``."""
        spec = await self.file_filter(request.filter)
        cols, data, r = await self._layout(request)
        if spec is False:
            return Planned.done(ScanResult(self._complete({}, 0, cols), 0, ScanStats()))
        if spec is None and request.rows is None and request.limit is None:
            own = [c for c in cols if c not in self.partition_values]
            if self._unread:
                n = await r.count_with(NO_BUDGET)
                return Planned.done(ScanResult(self._complete({}, n, cols), n, ScanStats()))
            if self._plan is not None and own == self._plan_columns:
                plan = self._plan

                async def run_plan() -> ScanResult:
                    res = await r.execute(plan, own)
                    return ScanResult(self._complete(res.columns, res.num_rows, cols),
                                      res.num_rows, res.stats, res.plan)

                return Planned(r.first_wave(plan), run_plan)
        expr = None if spec is True else spec
        if data or expr is not None:
            inner = self._own(request, data or self.filter_paths(expr, r), expr)  # type: ignore[arg-type]
            if not plans_scans(r):  # a BSUP or SuperDB object: its own scan, unplanned
                async def run_own() -> ScanResult:
                    res = await r.scan_with(inner)
                    return ScanResult(self._complete(res.columns if data else {},
                                                     res.num_rows, cols),
                                      res.num_rows, res.stats, res.plan, res.total_rows)

                return Planned((0, 0), run_own)
            program = await r.plan_with(inner)

            async def run() -> ScanResult:
                res = await r.execute(program)
                return ScanResult(self._complete(res.columns if data else {}, res.num_rows,
                                                 cols),
                                  res.num_rows, res.stats, res.plan, res.total_rows)

            return Planned(r.first_wave(program), run)
        n = await self._selected(r, request.rows, request.limit)
        return Planned.done(ScanResult(self._complete({}, n, cols), n, ScanStats()))

    async def _selected(self, r: Reader, rows: slice | None, limit: int | None) -> int:
        """How many rows ``rows`` and ``limit`` (a request's: checked) select, with no
        column to read."""
        n = r.num_rows if r.num_rows is not None else await r.count_with(NO_BUDGET)
        if rows is not None:
            n = len(range(n)[rows])
        return n if limit is None else min(n, limit)

    async def count_rows(self, filter: Expr | str | None = None) -> int:
        """Rows of the object (that ``filter`` keeps): from metadata where it can be."""
        return await self.count_with(ScanRequest.parse(filter=filter, path=self.path))

    async def count_with(self, request: ScanRequest) -> int:
        """:meth:`count_rows` of a request (its filter; its budget, for the count)."""
        spec = await self.file_filter(request.filter)
        if spec is False:
            return 0
        r = await self.open()
        if spec is None or spec is True:
            return await r.count_with(request.budget)
        own = ScanRequest(tuple(self.filter_paths(spec, r)) or None, spec,
                          budget=request.budget)
        return (await r.scan_with(own)).num_rows

    async def take(self, indices: Any, columns: Sequence[str] | str | None = None, *,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """The rows at ``indices`` (row numbers of this object, any order, repeats);
        budget and progress as for :meth:`Reader.take`."""
        return await self.take_with(ScanRequest.parse(
            columns, indices=indices, max_requests=max_requests, max_bytes=max_bytes,
            on_progress=on_progress, path=self.path))

    async def take_with(self, request: ScanRequest) -> ScanResult:
        """:meth:`take` of a request (its indices checked where the verb was entered)."""
        meter = request.budget.meter(self.path)
        if meter is None:
            return await (await self.prepare_take(request)).run()
        return await run_metered(meter.file(self.path), lambda: self.prepare_take(request))

    async def prepare_take(self, request: ScanRequest) -> Planned:
        """:meth:`take`, planned: what it reads (``figures``) and ``run()``."""
        cols, data, r = await self._layout(request)
        inner = self._own(request, data, None)
        if data and not plans_scans(r):  # a BSUP or SuperDB object: its own take
            async def run_own() -> ScanResult:
                res = await r.take_with(inner)
                return ScanResult(self._complete(res.columns, res.num_rows, cols),
                                  res.num_rows, res.stats, res.plan)

            return Planned((0, 0), run_own)
        if data:
            taken = await r.prepare_take(inner)

            async def run() -> ScanResult:
                res = await taken.run()
                return ScanResult(self._complete(res.columns, res.num_rows, cols),
                                  res.num_rows, res.stats, res.plan)

            return Planned(taken.figures, run)
        idx = request.taken
        n = await r.count_with(NO_BUDGET)
        if idx.size and int(idx.max()) >= n:
            bad = int(idx[idx >= n][0])
            raise RowSelectionError(f"row index {bad} is out of range for {n} rows",
                                    path=self.path)
        return Planned.done(ScanResult(self._complete({}, int(idx.size), cols),
                                       int(idx.size), ScanStats()))

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           batch_rows: int = DEFAULT_BATCH_ROWS, prefetch: int | None = None,
                           filter: Expr | str | None = None, limit: int | None = None,
                           segment_requests: bool = False, max_requests: int | None = None,
                           max_bytes: int | None = None,
                           on_progress: Callable[[Any], object] | None = None
                           ) -> AsyncIterator[ScanResult]:
        """Batches of at most ``batch_rows`` rows in object order (of those ``filter``
        keeps; the first ``limit``), with the bounded memory of Reader.iter_batches.

        ``segment_requests`` plans requests of at most one segment, merging no gaps:
        for a reader that may stop early, the read-ahead then holds segments, not
        merged tens of megabytes.  Budget and progress as for
        :meth:`Reader.iter_batches`."""
        request = ScanRequest.parse(
            columns, filter=filter, limit=limit, batch_rows=batch_rows, prefetch=prefetch,
            max_requests=max_requests, max_bytes=max_bytes, on_progress=on_progress,
            path=self.path)
        batches = self.batches_with(request, segment_requests)
        async with contextlib.aclosing(batches):
            async for b in batches:
                yield b

    async def batches_with(self, request: ScanRequest, segment_requests: bool = False
                           ) -> AsyncIterator[ScanResult]:
        """:meth:`iter_batches` of a request (checked where the verb was entered)."""
        spec = await self.file_filter(request.filter)
        cols, data, r = await self._layout(request)
        limit, batch_rows = request.limit, request.batch_rows
        if spec is False or limit == 0:
            return
        expr = None if spec is True else spec
        if not data and expr is None:
            n = await self._selected(r, None, limit)
            for lo in range(0, n, batch_rows):
                k = min(batch_rows, n - lo)
                yield ScanResult(self._complete({}, k, cols), k, ScanStats())
            return
        if segment_requests:
            per_segment(r)
        inner = self._own(request, data or self.filter_paths(expr, r), expr).but(  # type: ignore[arg-type]
            limit=None)
        left = limit
        fm: FileMeter | None = None
        meter = request.budget.meter(self.path)
        if meter is not None and plans_scans(r):
            inner = inner.but(budget=request.budget)
        elif meter is not None:  # a BSUP or SuperDB object: reads claimed as they start
            fm = meter.file(self.path)
        it = r.batches_with(inner)
        async with contextlib.aclosing(it):
            while True:
                with tracking(fm) if fm is not None else contextlib.nullcontext():
                    b = await anext(it, None)
                if b is None:
                    if fm is not None:
                        fm.done()
                    break
                n = b.num_rows if left is None else min(b.num_rows, left)
                got = {c: a.slice(0, n) for c, a in b.columns.items()} if data else {}
                yield ScanResult(self._complete(got, n, cols), n, b.stats, b.plan)
                if left is not None:
                    left -= n
                    if left <= 0:
                        return

    async def batch_figures(self, request: ScanRequest, segment_requests: bool = False
                            ) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`iter_batches` sends (every batch read)."""
        spec = await self.file_filter(request.filter)
        _, data, r = await self._layout(request)
        if spec is False:
            return 0, 0
        expr = None if spec is True else spec
        if not data and expr is None:
            return 0, 0
        if not plans_scans(r):
            return 0, 0  # a BSUP or SuperDB object: its reads are claimed as they start
        if segment_requests:
            per_segment(r)
        return r.batch_figures(self._own(request, data or self.filter_paths(expr, r), expr))  # type: ignore[arg-type]

    async def plan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | str | None = None) -> Any:
        """The plan the Reader executes for this object's part of the scan (None when
        nothing of it is read: no column of it projected, or a filter it cannot match)."""
        return await self.plan_with(ScanRequest.parse(columns, filter=filter, path=self.path))

    async def plan_with(self, request: ScanRequest) -> Any:
        """:meth:`plan` of a request (its columns and filter)."""
        spec = await self.file_filter(request.filter)
        _, data, r = await self._layout(request)
        if spec is False:
            return None
        expr = None if spec is True else spec
        if not data and expr is None:
            return None
        return await r.plan_with(ScanRequest(  # its columns and filter only, as before
            tuple(data or self.filter_paths(expr, r)) or None, expr))  # type: ignore[arg-type]

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()


def plans_scans(r: Reader) -> bool:
    """Whether ``r`` scans by the CSUP program (``plan`` then ``execute``); a BSUP or
    SuperDB reader has scans of its own, whose reads are claimed as they start."""
    t = type(r)
    return t.scan_with is Reader.scan_with and t.take_with is Reader.take_with


def per_segment(r: Reader) -> None:
    """Plan ``r``'s reads in requests of at most one segment's size, merging no gaps
    (adjacent small segments may still share a request, up to the largest segment's
    size; no segment is split): a read that stops after its first rows fetches little
    beyond the segments they lie in, and the read-ahead window holds that many
    segments, not merged tens of megabytes kept until their last segment is decoded."""
    from ..format.meta import iter_segmaps

    cap = max((s.length for c in r.meta.columns for segmap in iter_segmaps(c)
               for s in segmap), default=1) or 1
    r.profile = dataclasses.replace(P.get_profile(r.profile), max_gap=0, max_request=cap,
                                    split_size=cap, min_part=0)


