"""What a read verb asks for, parsed once where the verb is entered: a :class:`ScanRequest`.

``scan``, ``take``, ``iter_batches``, ``count_rows`` and ``plan`` of a Reader, a
Fragment, a Dataset and their synchronous twins take the same loose keywords
(``columns``, ``filter``/``filters``, ``rows``, ``limit``, row indices, ``batch_rows``,
``prefetch`` and the budget ``max_requests``/``max_bytes``/``on_progress``).  Each
public verb turns them into one request with :meth:`ScanRequest.parse`, where every
check is made, once, with the error a user sees (the same class and message whichever
verb, object or layout), and hands that one object down: Dataset → Fragment → Reader →
execution, and the readers of other layouts.  Below the edge nothing is checked or
normalised again: a layer that narrows the request (a dataset's file: its own rows,
columns and specialised filter) derives one with :meth:`ScanRequest.but`, which checks
nothing (tests/unit/planner/test_request.py keeps it so).

It lives in the planner because its normal forms are the planner's: the filter's
(:func:`planner.dnf.as_expr`), the column list's (:func:`planner.paths.parse_columns`)
and the row slice's (:func:`planner.selection.check_rows`).  Plain data, no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from csup_async.model.budget import check_limits
from csup_async.model.errors import ArgumentError, CsupError
from csup_async.model.options import DEFAULT_BATCH_ROWS
from csup_async.model.progress import Meter
from csup_async.model.selection import check_count, check_limit, row_indices

from .dnf import as_expr
from .paths import parse_columns
from .selection import check_rows

__all__ = ["NO_BUDGET", "Budget", "ScanRequest"]

Progress = Callable[[Any], object]


@dataclass(frozen=True, slots=True)
class Budget:
    """A call's ceiling on requests and bytes, and its progress callback (checked by
    :meth:`parse`; a :class:`~csup_async.model.progress.Meter` of them by :meth:`meter`)."""

    max_requests: int | None = None
    max_bytes: int | None = None
    on_progress: Progress | None = None

    @staticmethod
    def parse(max_requests: Any = None, max_bytes: Any = None,
              on_progress: Any = None) -> Budget:
        """The budget of these keywords: ArgumentError for a limit that is not None or an
        integer >= 0, or a callback that is not callable."""
        if on_progress is not None and not callable(on_progress):
            raise ArgumentError(f"on_progress must be callable, not "
                                f"{type(on_progress).__name__}")
        check_limits(max_requests, max_bytes)
        if max_requests is None and max_bytes is None and on_progress is None:
            return NO_BUDGET
        return Budget(max_requests, max_bytes, on_progress)

    @property
    def given(self) -> bool:
        """Whether any of the three was given (a verb without runs unmetered)."""
        return not (self.max_requests is None and self.max_bytes is None
                    and self.on_progress is None)

    def keywords(self) -> dict[str, Any]:
        """The keywords given, by name (for a verb that still takes them loose)."""
        given = {"max_requests": self.max_requests, "max_bytes": self.max_bytes,
                 "on_progress": self.on_progress}
        return {k: v for k, v in given.items() if v is not None}

    def meter(self, path: str | None = None) -> Meter | None:
        """One call's meter (``path``: the object a BudgetError names; None for many),
        or None without a budget or a callback."""
        if not self.given:
            return None
        return Meter(self.on_progress, max_requests=self.max_requests,
                     max_bytes=self.max_bytes, path=path)


NO_BUDGET = Budget()


@dataclass(frozen=True, slots=True, eq=False)
class ScanRequest:
    """One read verb's arguments, checked and in their one form.

    ``columns``: canonical spellings, deduplicated (None: every top-level column);
    ``filter``: a ``planner.filters`` expression or None (the text form and pyarrow's
    list form already turned into one); ``rows``: a slice of step 1 or None; ``limit``:
    an int >= 0 or None; ``indices``: ``take``'s row numbers as int64 (None for other
    verbs); ``batch_rows`` >= 1 and ``prefetch`` (None or >= 0) for ``iter_batches``;
    ``budget``: the call's :class:`Budget`."""

    columns: tuple[str, ...] | None = None
    filter: Any = None
    rows: slice | None = None
    limit: int | None = None
    indices: np.ndarray | None = None
    batch_rows: int = DEFAULT_BATCH_ROWS
    prefetch: int | None = None
    budget: Budget = NO_BUDGET

    @classmethod
    def parse(cls, columns: Any = None, *, filter: Any = None, filters: Any = None,
              rows: Any = None, limit: Any = None, indices: Any = None,
              batch_rows: Any = DEFAULT_BATCH_ROWS, prefetch: Any = None,
              max_requests: Any = None, max_bytes: Any = None, on_progress: Any = None,
              path: str | None = None) -> ScanRequest:
        """The request of a verb's keywords, each checked here and nowhere else; the
        error names ``path`` (the object; None for a dataset).  ``indices`` is given
        by ``take`` only (None otherwise)."""
        expr = as_expr(filter, filters, path=path)
        check_limit(limit, path)
        try:
            parsed = parse_columns(columns)
            if rows is not None:
                check_rows(rows)
        except CsupError as e:
            raise e.with_path(path) from None
        idx = None if indices is None else row_indices(indices, path)
        if prefetch is not None:
            prefetch = check_count("prefetch", prefetch, 0, path)
        batch_rows = check_count("batch_rows", batch_rows, 1, path)
        return cls(None if parsed is None else tuple(s for s, _ in parsed), expr, rows,
                   limit, idx, batch_rows, prefetch,
                   Budget.parse(max_requests, max_bytes, on_progress))

    def but(self, **changes: Any) -> ScanRequest:
        """This request with ``changes`` (fields, in their one form already: nothing is
        checked again), as a layer below the edge narrows it."""
        return dataclasses.replace(self, **changes)

    @property
    def taken(self) -> np.ndarray:
        """``take``'s row numbers (a request made by another verb has none: an
        ArgumentError, never a read of no rows)."""
        if self.indices is None:
            raise ArgumentError("take() needs row indices; this request has none")
        return self.indices

    @property
    def plain(self) -> bool:
        """Whether it reads every row: no filter, rows or limit."""
        return self.filter is None and self.rows is None and self.limit is None
