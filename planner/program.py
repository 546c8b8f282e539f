"""One scan program: what ``Reader.plan`` returns and ``Reader.execute`` runs unchanged.

A scan of one file is one of three kinds, each fully planned before any data byte is
read: every row (``all``: a :class:`planner.ScanPlan`), a row selection (``rows``:
the plan cut to the segments holding the rows of ``ranges``, and per value stream the
segments kept), or a filtered scan (``filter``: a
:class:`planner.selection.FilterPlan` with its zones, its one-or-two-waves decision
and the first wave's plan).  ``Reader.scan(...)`` is ``execute(plan(...))``: what
``explain()`` says is what runs, never a plan made again.

Planning reads nothing but, for a file of several super types with a row selection
or a filter, its super column (the row map, :class:`planner.selection.RowMap`); what
that read cost is carried here and counted in each execution's result.
A program holds the metadata it was planned from and runs in the process that made
it (a Spark driver ships a plain ``ScanPlan`` instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .selection import RowMap, RowRanges
from .waves import Wave

__all__ = ["ScanProgram"]

Kind = Literal["all", "rows", "filter"]


@dataclass(frozen=True)
class ScanProgram:
    """A whole scan of one file, planned: run it with ``Reader.execute(program)``."""

    kind: Kind
    columns: tuple[str, ...]
    """The output columns (dotted paths), in order."""
    plan: Any
    """``all``/``rows``: the (cut) ScanPlan; ``filter``: the FilterPlan."""
    ranges: RowRanges | None = None
    """The rows selected by ``rows=``/``limit=``/``take`` (None: every row)."""
    limit: int | None = None
    """A filtered scan keeps the first ``limit`` matches."""
    rowmap: RowMap | None = field(default=None, repr=False)
    keep: Any = field(default=None, repr=False)
    """``rows``: per value stream (by ``id`` of its segmap), the indices of the segments
    read; the others are skipped by their ``count``."""
    work: Any = field(default=None, repr=False)
    """``filter``: what running the filter needs beyond its FilterPlan."""
    verify_counts: bool = True
    setup: tuple[int, int, int] = (0, 0, 0)
    """Requests, bytes read and bytes needed while planning (the row map's read)."""

    @property
    def wave(self) -> Wave:
        """The one read that runs ``all`` or ``rows`` (a filtered scan's first one: its
        ``work.first``), planned whole."""
        if self.work is not None:
            return self.work.first
        return Wave(self.columns, self.plan, self.ranges, self.keep or {}, self.rowmap)

    def __getattr__(self, name: str) -> Any:
        # the inner plan's figures (bytes_needed, two_waves, segments_pruned...) read as
        # the program's own: plan() returned the inner plan before there was a program
        if name.startswith("_") or name in {"plan", "kind", "columns"}:
            raise AttributeError(name)
        return getattr(self.plan, name)

    def explain(self, limit: int = 20, prices: Any = None) -> str:
        """What the scan will do, before it reads a byte (after the row map, if any);
        ``prices`` (a ``planner.bill.Prices``) price a whole scan's requests and bytes."""
        head = [f"scan program: {self.kind}; columns: {', '.join(self.columns) or '(all)'}"]
        if self.ranges is not None:
            head.append(f"rows selected: {self.ranges.rows:,} in {len(self.ranges):,} "
                        f"range{'s' if len(self.ranges) != 1 else ''}"
                        + (f" (first [{self.ranges.starts[0]:,}, {self.ranges.stops[0]:,}))"
                           if len(self.ranges) else ""))
        if self.limit is not None:
            head.append(f"limit: the first {self.limit:,} matches (the surviving zones read "
                        "in file order, a piece at a time, until that many matched)")
        if self.rowmap is not None:
            req, nbytes, _ = self.setup
            head.append(f"row map: the super column's first {len(self.rowmap.ids):,} IDs "
                        f"({'whole' if self.rowmap.complete else 'a prefix'}; "
                        f"{req} request{'s' if req != 1 else ''}, {nbytes:,} bytes while "
                        "planning)")
        inner = (self.plan.explain(limit, prices=prices) if prices is not None
                 else self.plan.explain(limit))
        return "\n".join([*head, inner])
