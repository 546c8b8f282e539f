"""The base of the readers whose object has no column index to plan reads by.

A BSUP stream (:mod:`csup_async.readers.bsup`) and a SuperDB header-layout file
(:mod:`csup_async.readers.superdb`) are read whole, or object by object: their
``take`` is a scan's rows, their ``execute`` is a scan, and a filter is bound to
the types their values have and evaluated on the decoded columns.  Those verbs
are the same for both, so they are written once here, between :class:`Reader`
and the two; each subclass says which types a path has (``super_types``) and
how its columns are decoded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.filters import bind, columns_of
from planner.request import ScanRequest

from .. import arrays as A
from ..arrays.filtering import evaluate
from ..model.errors import ColumnNotFoundError, CsupError, StoreTimeoutError
from ..model.progress import Planned, run_metered
from ..model.types import NULL, PrimitiveType, Type
from ..model.values import unify
from ..scan.result import ScanResult, rows_of_whole
from ..scan.superdb.columns import type_at
from .reader import Reader

__all__ = ["WholeObjectReader", "comps_of"]


def comps_of(path: str) -> tuple[str, ...]:
    """A dotted path's components (``""``: the whole value)."""
    return P.parse_path(path) if path else ()


class WholeObjectReader(Reader):
    """What a reader without a column index shares: paths checked and typed against its
    super types, filters bound and evaluated on decoded columns, ``take``/``execute``
    as scans, reads bounded by ``timeout``."""

    #: what the object holds, as a missing column's error names it
    holds = "super type"

    # --------------------------------------------------------------- paths ---
    def missing_paths(self, paths: list[str]) -> list[str]:
        """The paths no super type of the object has."""
        return [p for p in paths
                if all(type_at(t, comps_of(p)) is None for t in self.meta.super_types)]

    def _check_paths(self, paths: list[str]) -> None:
        missing = self.missing_paths(paths)
        if missing:
            raise ColumnNotFoundError(
                f"no {self.holds} has column {', '.join(map(repr, missing))}; "
                f"columns: {P.describe_paths(self.meta.super_types)}", path=self.path)

    def _types(self, paths: list[str]) -> dict[str, Type]:
        """Each path's type: the union of its types in the super types (null: none)."""
        out = {}
        for p in paths:
            comps = comps_of(p)
            ts = [t for st in self.meta.super_types if (t := type_at(st, comps)) is not None]
            out[p] = unify(ts) if ts else NULL
        return out

    # -------------------------------------------------------------- filter ---
    def _filter(self, filter: Any) -> Any:
        """The filter (an expression: the verb's request made it one, ``planner.request``) with
        its literals checked and coerced against the columns' types, or None;
        ColumnNotFoundError when it names a path no super type has, as our layout's
        reader says (:meth:`Planning._filter_expr`)."""
        if filter is None:
            return None

        expr = self._filter_expr(filter)
        try:
            paths = [P.format_path(p) for p in columns_of(expr)]
            types = self._types(paths)
            return bind(expr, {comps_of(p): t.name for p, t in types.items()
                               if isinstance(t, PrimitiveType)})
        except CsupError as e:
            raise e.with_path(self.path) from None

    def _filter_missing(self, paths: list[tuple[str, ...]]) -> list[str]:
        """The filter's paths no super type has, by this layout's types (see
        :meth:`missing_paths`)."""
        return self.missing_paths([P.format_path(p) for p in paths])

    def _filter_paths(self, expr: Any, paths: list[str]) -> list[str]:
        """``paths`` and the filter's present columns (read too, dropped after)."""
        if expr is None:
            return paths

        extra = [P.format_path(p) for p in columns_of(expr)]
        extra = [p for p in dict.fromkeys(extra) if p not in paths]
        return paths + [p for p in extra if p not in set(self.missing_paths(extra))]

    def _keep(self, expr: Any, cols: dict[str, A.Array], n: int, wanted: list[str]
              ) -> tuple[dict[str, A.Array], int]:
        """The rows of ``cols`` the filter keeps (SQL semantics), columns ``wanted``."""
        by_path = {comps_of(c): a for c, a in cols.items()}
        names = tuple(sorted((p, a.type.name) for p, a in by_path.items()
                             if isinstance(a.type, PrimitiveType)))
        try:
            keep = np.flatnonzero(evaluate(self._bound(expr, names), by_path, n))
        except CsupError as e:
            raise e.with_path(self.path) from None
        if keep.size == n:  # every row: nothing to gather
            return {c: cols[c] for c in wanted}, n
        return {c: cols[c].take(keep) for c in wanted}, int(keep.size)

    def _bound(self, expr: Any, names: tuple[tuple[tuple[str, ...], str], ...]) -> Any:
        """The filter bound for these columns' types: once per filter and typing (a
        verb's batches and objects decode alike), not once per batch."""
        memo: tuple[Any, dict[Any, Any]] | None = getattr(self, "_bound_memo", None)
        if memo is None or memo[0] is not expr:
            memo = self._bound_memo = (expr, {})
        typed = memo[1].get(names)
        if typed is None:
            typed = memo[1][names] = bind(expr, dict(names))
        return typed

    # ---------------------------------------------------------------- rows ---
    def _row_bounds(self, rows: slice | None, limit: int | None = None) -> tuple[int, int]:
        """The rows ``[lo, hi)`` a ``rows`` slice (step 1, checked where the verb was
        entered: ``planner.request``) and ``limit`` select."""
        n = self.meta.row_count
        lo, hi = 0, n
        if rows is not None:
            lo, hi, _ = rows.indices(n)
            hi = max(lo, hi)
        if limit is not None:
            hi = min(hi, lo + limit)
        return lo, hi

    async def _metered(self, request: ScanRequest,
                       prepare: Callable[[], Awaitable[Planned]]) -> Any:
        """Run a verb planned by ``prepare`` (its first wave's figures, and ``run()``)
        under the request's budget and progress, as :class:`Reader`'s verbs do:
        the figures checked and expected before any data request, the requests a read
        sends beyond them (a filtered read's next object) checked before they are
        sent, the file done last."""
        meter = request.budget.meter(self.path)
        if meter is None:
            return await (await prepare()).run()
        return await run_metered(meter.file(self.path), prepare)

    async def _timed(self, aw: Awaitable[Any]) -> Any:
        """``aw`` awaited within the reader's ``timeout``."""
        if self.timeout is None:
            return await aw
        try:
            return await asyncio.wait_for(aw, self.timeout)
        except TimeoutError:
            raise StoreTimeoutError(f"read took over {self.timeout} s", path=self.path) from None

    # --------------------------------------------------------------- verbs ---
    async def take_with(self, request: ScanRequest) -> ScanResult:
        """The rows at the request's indices (any order, repeats allowed): the object is
        read whole anyway, so this is its scan's rows (budget and progress: that scan's)."""
        idx = request.taken
        res = await self.scan_with(request.but(indices=None))
        return rows_of_whole(res, idx, self.path)

    async def execute(self, plan: Any, columns: Sequence[str] | str | None = None
                      ) -> ScanResult:
        """The scan of ``columns`` (such an object's plan is its scan)."""
        return await self.scan(columns)
