"""A reader's planning calls: a projection, a filter, rows or a limit turned into the
``ScanProgram`` that execution runs, by the pure planner (plans kept per metadata)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import planner as P
from planner.filters import columns_of
from planner.program import ScanProgram
from planner.pruning import type_has_path
from planner.request import NO_BUDGET, ScanRequest
from planner.selection import RowRanges
from planner.waves import plan_filter, plan_row_map, plan_rows

from ..model.errors import (
    ColumnNotFoundError,
    CsupError,
    RowSelectionError,
)
from ..scan.fetch import piece_figures
from ..scan.result import ScanStats
from ..scan.selection import read_row_map
from ..stores.capabilities import abilities

_PLANS_KEPT = 32  # plans remembered per metadata (projections x profiles x warm counts)
#: A reader keeps the row map of a file of several super types (its decoded super
#: column, 8 bytes a row) up to this many rows; a larger one is read for each selection.
ROW_MAP_HELD = 1 << 22


class Planning:
    """What :class:`~.reader.Reader` plans (a mixin: the state it reads is the Reader's);
    nothing here reads data, except a file of several super types' row map."""

    def _paths(self, columns: Sequence[str | tuple[str, ...]] | str | None) -> list[str]:
        """The canonical spellings of ``columns`` (``planner.parse_columns``, the one
        column-list parser); None or [] = every top-level column (``""`` for the
        rows of a super type that is not a record).  For a plan's columns given loose
        (:meth:`execute`); a verb's request has them parsed (:meth:`paths_of`)."""
        parsed = P.parse_columns(columns)
        if parsed is not None:
            return [spelling for spelling, _ in parsed]
        return P.top_level_paths(self.meta.super_types)

    def paths_of(self, request: ScanRequest) -> list[str]:
        """The paths a request reads: its columns, or every top-level column."""
        if request.columns is not None:
            return list(request.columns)
        return P.top_level_paths(self.meta.super_types)

    # ---------------------------------------------------------------- plan ---
    async def plan(self, columns: Sequence[str] | str | None = None, *, filter: Any = None,
                   rows: slice | None = None, limit: int | None = None,
                   filters: Any = None) -> ScanProgram:
        """The scan ``scan(columns, ...)`` with the same arguments runs, planned: a
        ``planner.program.ScanProgram`` that ``explain()``s itself and that
        :meth:`execute` runs unchanged.  Nothing is read, except for a file of several
        super types with a row selection or a filter: its super column (the row map).
        ``filters=``: pyarrow's list form, as for :meth:`scan`."""
        return await self.plan_with(ScanRequest.parse(
            columns, filter=filter, filters=filters, rows=rows, limit=limit, path=self.path))

    async def plan_with(self, request: ScanRequest) -> ScanProgram:
        """:meth:`plan` of a request (its arguments checked and in their one form where
        the verb was entered: ``planner.request``)."""
        paths = self.paths_of(request)
        filter, rows, limit = request.filter, request.rows, request.limit
        base = self._plan(paths)  # ColumnNotFoundError for a projected path no type has
        if filter is None and rows is None and limit is None:
            return ScanProgram("all", tuple(paths), base)
        ranges = await self._ranges(rows, None if filter is not None else limit)
        expr = self._filter_expr(filter) if filter is not None else None
        rowmap, cost = await self._row_map(ranges, expr is not None)
        setup = (0, 0, 0) if cost is None else (cost.requests, cost.bytes_read,
                                                cost.bytes_needed)
        if expr is None:
            cut, keep = plan_rows(self.meta, base, ranges, verify_counts=self.verify_counts,
                                  rowmap=rowmap)
            return ScanProgram("rows", tuple(paths), cut, ranges, rowmap=rowmap, keep=keep,
                               verify_counts=self.verify_counts, setup=setup)
        wanted = paths or self.paths_of(ScanRequest())
        try:
            fplan, work = plan_filter(self.meta, expr, wanted, self.profile,
                                      self.held_span(), ranges, rowmap,
                                      base if wanted == paths else None, limit)
        except CsupError as e:  # a filter that cannot apply, statistics that lie
            raise e.with_path(self.path) from None
        return ScanProgram("filter", tuple(wanted), fplan, ranges, limit, rowmap=rowmap,
                           work=work, setup=setup)

    async def _ranges(self, rows: slice | None, limit: int | None) -> Any:
        """The row ranges ``rows=`` and ``limit=`` select (None: every row)."""
        if rows is None and limit is None:
            return None
        try:
            if rows is not None:
                # the row count is needed only to resolve bounds from the end (a file of
                # several super types would read its super column for it): a read
                # stops at the end anyway
                n = self.num_rows
                if n is None and all(
                        v is None or (isinstance(v, int) and v >= 0)
                        for v in (rows.start, rows.stop)):
                    n = 1 << 62
                if n is None:
                    n = await self.count_with(NO_BUDGET)
                a, b, _ = rows.indices(n)  # a slice of step 1: the request checked it
                got = RowRanges.of([(a, b)])
            else:
                n = self.num_rows
                got = RowRanges.of([(0, limit if n is None else min(limit, n))])
            return got if limit is None else got.first(limit)
        except RowSelectionError as e:
            raise e.with_path(self.path) from None

    async def _row_map(self, ranges: Any, whole: bool = False) -> tuple[Any, ScanStats | None]:
        """A file of several super types: which super type and index each selected row
        is (``planner.selection.RowMap``), and what reading it cost (None when held
        already); ``(None, None)`` with one super type or nothing selected.

        The super column is read whole, or only the segments holding rows ``[0, n)``
        when the selection is that prefix (``limit``) and its segments have ``count``.
        """
        if len(self.meta.super_types) <= 1 or (ranges is None and not whole):
            return None, None
        upto = None
        if not whole and ranges is not None and len(ranges) <= 1 and (
                not len(ranges) or ranges.starts[0] == 0):
            upto = ranges.end
        held = self._rowmap
        if held is not None and (held.complete or (upto is not None and len(held.ids) >= upto)):
            return held, None
        try:
            got, stats = await read_row_map(
                self.target(), plan_row_map(self.meta, self.profile, self.held_span(), upto),
                self.read_options)
        except CsupError as e:
            raise e.with_path(self.path) from None
        if len(got.ids) <= ROW_MAP_HELD:
            self._rowmap = got
        if got.complete:
            self._counted_rows = len(got.ids)
        return got, stats

    def _warm(self) -> int:
        """Connections the store holds open: a request beyond them pays a connection's
        setup, which the planner weighs (0 for a store that does not say)."""
        n = (self.store.warm_connections()  # type: ignore[attr-defined]
             if abilities(self.store).pooled else 0)
        return n if isinstance(n, int) and n > 0 else 0

    def _plan(self, paths: list[str]) -> P.ScanPlan:
        # A plan is a pure function of the metadata and these: a service scanning the
        # same projection of one object (a long-lived reader, or open() per request with
        # the metadata cache) plans it once, not on the event loop of every request.
        key = (tuple(paths), self.profile, (self.tail.offset, len(self.tail.data)),
               self._warm())
        plan = self._plans.get(key)
        if plan is None:
            plan = P.plan_scan(self.meta, paths or None, key[1], available=key[2],
                               warm=key[3])
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            self._plans[key] = plan
        calibration = self.calibration()
        if calibration is not None:  # what explain() reports; the plan itself is the same
            told = self._plans.get((key, "calibration"))
            if told is not None and told[0] == calibration:
                plan = told[1]  # a replace() per scan was a tenth of a small scan's planning
            else:
                plan = dataclasses.replace(plan, calibration=calibration)
                self._plans[(key, "calibration")] = (calibration, plan)
        missing = [p for p in paths if p in set(plan.missing_paths)]
        if missing:
            raise ColumnNotFoundError(
                f"no super type has column {', '.join(map(repr, missing))}; "
                f"columns: {P.describe_paths(self.meta.super_types)}", path=self.path)
        return plan

    def held_span(self) -> tuple[int, int]:
        """``(offset, length)`` of the object's bytes the open already holds: the planner
        serves requests inside it without a request."""
        return (self.tail.offset, len(self.tail.data))

    def first_wave(self, program: ScanProgram | P.ScanPlan) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`execute` sends first for ``program``, exactly
        (a filtered scan's second wave is planned from the first one's matches)."""
        if not isinstance(program, ScanProgram):
            return program.request_count, program.bytes_to_read
        if program.work is not None and program.work.pieces is not None:
            # read piece by piece until enough rows matched (scan.selection): each
            # piece is a wave of its own, checked (and totalled) before it is sent
            return 0, 0
        plan = program.wave.plan
        return plan.request_count, plan.bytes_to_read

    def _filter_expr(self, filter: Any) -> Any:
        """The filter as an expression; ColumnNotFoundError when it names a path no super
        type of the file has (a misspelling would otherwise match nothing, silently: a
        path some super types have keeps SQL's semantics, no match where absent)."""
        expr = filter  # in its one form: the verb's request made it (planner.request)
        try:
            columns_of(expr)  # FilterError for what is no filter
        except CsupError as e:
            raise e.with_path(self.path) from None
        missing = self._filter_missing(list(dict.fromkeys(columns_of(expr))))
        if missing:
            raise ColumnNotFoundError(
                f"the filter names {', '.join(map(repr, missing))}, which no super type "
                f"has; columns: {P.describe_paths(self.meta.super_types)}", path=self.path)
        return expr

    def _filter_missing(self, paths: list[tuple[str, ...]]) -> list[str]:
        """The filter's paths (components) no super type of the file can hold, spelled
        (a reader of another layout says it by its own types)."""
        return [P.format_path(p) for p in paths
                if not any(type_has_path(t, p) for t in self.meta.super_types)]

    def _filter_columns(self, paths: list[str], filter: Any) -> tuple[Any, list[str], list[str]]:
        """``(expression, output paths, paths to read)``: the filter's columns are read
        with the projection (a path no super type has is null everywhere: not read)."""
        expr = self._filter_expr(filter)
        wanted = paths or self.paths_of(ScanRequest())
        extra = [P.format_path(p) for p in columns_of(expr)]
        extra = [p for p in dict.fromkeys(extra) if p not in wanted]
        if extra:
            absent = set(P.plan_scan(self.meta, extra, self.profile).missing_paths)
            extra = [p for p in extra if p not in absent]
        return expr, wanted, wanted + extra

    def batch_figures(self, request: ScanRequest) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`iter_batches` sends for this request (its plan's
        requests in pieces of 2 MiB), from metadata."""
        paths = self.paths_of(request)
        if request.filter is not None:
            _, _, paths = self._filter_columns(paths, request.filter)
        return piece_figures(self._plan(paths))

    def whole_figures(self) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`read_rows` and :meth:`read_values` send."""
        plan = P.plan_scan(self.meta, None, self.profile, available=self.held_span())
        return plan.request_count, plan.bytes_to_read
