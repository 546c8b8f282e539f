"""Row selection and segment pruning as plain data: which segments hold which rows.

A *selection* is a sorted set of half-open row ranges of one file.  A value
stream below only records, named types and presence runs of a file of one super
type maps rows to segments by the running sum of the segments' ``count``
statistics: row ``r``'s value index is ``r`` (a *direct* stream), or lies in
``[r - slack, r]`` when presence runs leave ``slack`` rows without a value; only
the segments that may hold selected rows are read.  Every other stream (the
presence runs themselves, array lengths, union tags, the super column, the values
below them, and any stream without ``count``) is read whole: decoding it maps rows
to values exactly, which the read pipeline does anyway.

For filters, the rows of a file are cut into *zones* at every segment boundary
of the filter's direct columns; in each zone every such column lies inside one
segment, whose statistics (as :class:`planner.filters.ColumnStats`) let
:func:`planner.filters.zone_truth` prove the filter false, true or neither.
Rows of false zones are never read.

Pure: integers, segments and statistics in, frozen dataclasses out; no I/O.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from csup_async.format.meta import (
    FileMeta,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    Segment,
)
from csup_async.model.errors import RowSelectionError
from csup_async.model.types import EnumType, ErrorType, NamedType, PrimitiveType, RecordType

from .bounds import fold, segment_zone
from .explain import human
from .filters import ColumnStats, Expr, Truth, zone_truth
from .profiles import Profile

__all__ = [
    "FilterPlan", "RowRanges", "RowSelectionError", "Zone", "check_rows", "column_stats",
    "direct_leaf",
    "direct_segmaps", "late_saving", "leaf_stream", "plan_zones", "prefer_two_waves",
    "ranges_from_indices", "ranges_from_slice", "RowMap", "rows_to_ranges",
    "segments_for_ranges", "segments_for_spans", "select_segments", "selectable_segmaps",
    "type_view", "value_starts",
]


# ---------------------------------------------------------------- ranges ---

@dataclass(frozen=True, slots=True)
class RowRanges:
    """Sorted, disjoint, non-empty, non-adjacent half-open row ranges."""

    starts: tuple[int, ...] = ()
    stops: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.starts) != len(self.stops):
            raise RowSelectionError("row ranges need as many starts as stops")
        prev: int | None = None
        for a, b in zip(self.starts, self.stops, strict=True):
            if a < 0 or a >= b or (prev is not None and a <= prev):
                raise RowSelectionError(f"row ranges must be sorted, disjoint, non-adjacent "
                                        f"and non-empty: [{a}, {b}) after {prev}")
            prev = b

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]]) -> RowRanges:
        """Any half-open ranges (overlapping, unsorted, empty ones) as a normal selection."""
        out_s: list[int] = []
        out_e: list[int] = []
        for a, b in sorted((int(a), int(b)) for a, b in pairs if b > a):
            if out_e and a <= out_e[-1]:
                out_e[-1] = max(out_e[-1], b)
            else:
                out_s.append(a)
                out_e.append(b)
        return cls(tuple(out_s), tuple(out_e))

    @classmethod
    def from_arrays(cls, starts: Any, stops: Any) -> RowRanges:
        """Ranges from int arrays already sorted, disjoint, non-adjacent and non-empty
        (checked here in numpy, not range by range: a filter's matches make thousands)."""
        a = np.asarray(starts, np.int64)
        b = np.asarray(stops, np.int64)
        if a.shape != b.shape or a.ndim != 1:
            raise RowSelectionError("row ranges need as many starts as stops")
        if a.size and (int(a[0]) < 0 or bool((a >= b).any()) or bool((a[1:] <= b[:-1]).any())):
            return cls(tuple(a.tolist()), tuple(b.tolist()))  # refuses it, saying why
        out = object.__new__(cls)
        object.__setattr__(out, "starts", tuple(a.tolist()))
        object.__setattr__(out, "stops", tuple(b.tolist()))
        return out

    @property
    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.stops, strict=True))

    @property
    def rows(self) -> int:
        return sum(b - a for a, b in zip(self.starts, self.stops, strict=True))

    @property
    def end(self) -> int:
        return self.stops[-1] if self.stops else 0

    def clip(self, n: int) -> RowRanges:
        """The part below row ``n``."""
        return RowRanges.of((a, min(b, n)) for a, b in self.pairs)

    def first(self, n: int) -> RowRanges:
        """The first ``n`` selected rows."""
        out = []
        for a, b in self.pairs:
            if n <= 0:
                break
            out.append((a, min(b, a + n)))
            n -= b - a
        return RowRanges.of(out)

    def __len__(self) -> int:
        return len(self.starts)


def check_rows(sel: Any) -> slice:
    """``sel`` if it is a slice of integer bounds and step 1, else a RowSelectionError
    saying what is wrong: the one check of ``rows=`` (a verb's request makes it,
    :mod:`planner.request`)."""
    if not isinstance(sel, slice):
        raise RowSelectionError(f"rows must be a slice, not {type(sel).__name__}")
    for v in (sel.start, sel.stop, sel.step):
        if v is not None and (isinstance(v, bool) or not _is_int(v)):
            raise RowSelectionError(f"slice bounds must be integers, not {v!r}")
    if sel.step not in (None, 1):
        raise RowSelectionError(f"rows=slice(...) supports step 1 only, not {sel.step}")
    return sel


def ranges_from_slice(sel: slice, num_rows: int) -> RowRanges:
    """A Python slice of ``num_rows`` rows (negative bounds count from the end; step 1,
    checked by :func:`check_rows`)."""
    a, b, _ = check_rows(sel).indices(num_rows)
    return RowRanges.of([(a, b)])


def _is_int(v: Any) -> bool:
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def ranges_from_indices(indices: Sequence[int]) -> RowRanges:
    """Sorted distinct row indices as ranges (consecutive ones merged)."""
    starts: list[int] = []
    stops: list[int] = []
    for i in indices:
        if stops and i == stops[-1]:
            stops[-1] = i + 1
        elif stops and i < stops[-1]:
            raise RowSelectionError("row indices must be sorted and distinct")
        else:
            starts.append(i)
            stops.append(i + 1)
    return RowRanges(tuple(starts), tuple(stops))


# -------------------------------------------------------------- segments ---

def value_starts(counts: Sequence[int]) -> tuple[int, ...]:
    """The first value index of each segment, then the total (the running sum)."""
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return tuple(out)


def segments_for_ranges(counts: Sequence[int], ranges: RowRanges) -> tuple[int, ...]:
    """Indices of the segments (``counts`` values each) holding any value in ``ranges``."""
    return segments_for_spans(counts, ranges.starts, ranges.stops)


def segments_for_spans(counts: Sequence[int], lo: Any, hi: Any) -> tuple[int, ...]:
    """Indices of the segments (``counts`` values each) holding any value of the spans
    ``[lo[i], hi[i])`` (in any order, overlapping or empty): vectorised, as a filter on
    a file of several super types has thousands of spans."""
    c = np.asarray(counts, np.int64)
    n = c.size
    lo_a, hi_a = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    if not n or not lo_a.size:
        return ()
    starts = np.concatenate([[0], np.cumsum(c)])
    hi_a = np.minimum(hi_a, starts[-1])
    ok = (hi_a > lo_a) & (lo_a < starts[-1])
    lo_a, hi_a = np.maximum(lo_a[ok], 0), hi_a[ok]
    if not lo_a.size:
        return ()
    first = np.searchsorted(starts, lo_a, "right") - 1  # the segment holding lo
    last = np.searchsorted(starts, hi_a - 1, "right") - 1  # ... and hi - 1
    mark = np.zeros(n + 1, np.int64)
    np.add.at(mark, first, 1)
    np.add.at(mark, last + 1, -1)
    hit = (np.cumsum(mark)[:n] > 0) & (c > 0)
    return tuple(np.flatnonzero(hit).tolist())


def _arrays(ranges: RowRanges) -> tuple[np.ndarray, np.ndarray]:
    """A selection's starts and stops as arrays (spans of values: ``segments_for_spans``)."""
    return np.asarray(ranges.starts, np.int64), np.asarray(ranges.stops, np.int64)


def _counts(segmap: Segmap) -> list[int] | None:
    counts = [s.count for s in segmap]
    return None if any(c is None for c in counts) else counts  # type: ignore[misc]


def _bare(t: Any) -> Any:
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    return t


#: The slack of a value stream of a super type whose row count is not known yet (a row
#: map read from a prefix of the super column): any earlier value may be a row's.
UNKNOWN_SLACK = 1 << 62


@dataclass(frozen=True, eq=False)
class RowMap:
    """Rows of a file of several super types as (super type, index within it).

    ``ids`` is the decoded super column, whole (``complete``) or the prefix of it a
    selection that starts at row 0 needs.  Each super type is then a file of one
    type of its own (:func:`type_view`): its streams' segments are selected, and its
    zones judged, by its own row indices.
    """

    ids: np.ndarray
    n_types: int
    complete: bool

    @functools.cached_property
    def _order(self) -> tuple[np.ndarray, np.ndarray]:
        """Global rows sorted by super type (stable), and where each type starts there."""
        ids = np.asarray(self.ids, np.int64)
        order = np.argsort(ids, kind="stable")
        counts = np.bincount(ids, minlength=self.n_types)
        starts = np.concatenate([[0], np.cumsum(counts)])
        return order, starts

    @functools.cached_property
    def ranks(self) -> np.ndarray:
        """Each row's index within its super type (one pass over the sorted rows)."""
        order, starts = self._order
        counts = np.diff(starts)
        out = np.empty(order.size, np.int64)
        out[order] = np.arange(order.size, dtype=np.int64) - np.repeat(starts[:-1], counts)
        return out

    def local_indices(self, rows: np.ndarray) -> list[np.ndarray]:
        """Per super type, the indices within it of the global ``rows`` (sorted, distinct)
        it has: one stable sort of the rows by type, not a search per type."""
        ids = np.asarray(self.ids, np.int64)[rows]
        order = np.argsort(ids, kind="stable")
        ends = np.cumsum(np.bincount(ids, minlength=self.n_types))
        local = self.ranks[rows][order]
        return np.split(local, ends[:-1])

    @property
    def type_rows(self) -> tuple[int | None, ...]:
        """Rows of each super type (None for each while only a prefix is known)."""
        if not self.complete:
            return (None,) * self.n_types
        _, starts = self._order
        return tuple(int(b - a) for a, b in itertools.pairwise(starts.tolist()))

    def positions(self, sid: int) -> np.ndarray:
        """The global rows of super type ``sid``, in order."""
        order, starts = self._order
        return order[starts[sid]: starts[sid + 1]]

    def local(self, ranges: RowRanges) -> tuple[RowRanges, ...]:
        """Per super type, the indices within it of the rows of ``ranges`` it has."""
        return tuple(_runs(li) for li in self.local_indices(_rows_in(ranges, len(self.ids))))

    def to_global(self, sid: int, local: RowRanges) -> np.ndarray:
        """The global rows of super type ``sid``'s rows ``local``."""
        pos = self.positions(sid)
        return pos[_rows_in(local, pos.size)]


def _rows_in(ranges: RowRanges, n: int) -> np.ndarray:
    """The row numbers of ``ranges`` below ``n``, as one sorted array."""
    starts = np.asarray(ranges.starts, np.int64)
    stops = np.minimum(np.asarray(ranges.stops, np.int64), n)
    keep = starts < stops
    starts, stops = starts[keep], stops[keep]
    lens = stops - starts
    if not lens.size:
        return np.zeros(0, np.int64)
    # one arange, shifted per range: row k of range j is starts[j] + (k - its offset)
    offsets = np.cumsum(lens) - lens
    return np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(starts - offsets, lens)


def _runs(rows: np.ndarray) -> RowRanges:
    """Sorted distinct row numbers as ranges."""
    if not rows.size:
        return RowRanges()
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = rows[np.concatenate([[0], cuts])]
    stops = rows[np.concatenate([cuts - 1, [rows.size - 1]])] + 1
    return RowRanges.from_arrays(starts, stops)


def rows_to_ranges(rows: np.ndarray) -> RowRanges:
    """Any row numbers (unsorted, repeated) as the ranges of the distinct ones."""
    return _runs(np.unique(np.asarray(rows, np.int64)))


def type_view(meta: FileMeta, sid: int, rows: int | None) -> FileMeta:
    """Super type ``sid`` of ``meta`` as a file of that one type of ``rows`` rows (its
    segmaps are the same objects: what is selected in the view is selected in the file).
    ``rows`` None (not known): the view's row count is the most the file could hold."""
    n = rows if rows is not None else UNKNOWN_SLACK
    fake = (Segment(0, 0, n, count=n),)
    return dataclasses.replace(meta, super_types=(meta.super_types[sid],),
                               columns=(meta.columns[sid],), super_column=fake)


def selectable_segmaps(meta: FileMeta, type_rows: Sequence[int | None] | None = None
                       ) -> dict[int, tuple[Segmap, int]]:
    """:func:`selectable_segmaps_one` of a file of one super type, or with several the
    union over the super types seen as files of their own (``type_rows``: the rows of
    each, from a :class:`RowMap`; none given, nothing is selectable)."""
    if len(meta.super_types) == 1:
        return selectable_segmaps_one(meta)
    out: dict[int, tuple[Segmap, int]] = {}
    if type_rows is None:
        return out
    for sid, n in enumerate(type_rows):
        got = selectable_segmaps_one(type_view(meta, sid, n), exact=n is not None)
        if n is None:
            got = {k: (segmap, UNKNOWN_SLACK) for k, (segmap, _) in got.items()}
        out.update(got)
    return out


def selectable_segmaps_one(meta: FileMeta, exact: bool = True
                           ) -> dict[int, tuple[Segmap, int]]:
    """Value streams whose rows map to value indices without decoding anything, by ``id``
    of their segmap, with their *slack*.

    Below records and presence runs only (no lengths, tags or several super types),
    each row holds at most one value, in order: the value index of row ``r`` lies in
    ``[r - slack, r]`` where ``slack`` is the rows without a value (rows less values).
    A stream without presence, or whose presence leaves no row out, has slack 0: its
    value index is the row index (a *direct* stream).  Every segment must have
    ``count``; anything else is read whole.  A stream below no presence runs must count
    exactly the rows (``exact``; False while the rows are not known): the first check
    against counts that lie, which costs no read.
    """
    out: dict[int, tuple[Segmap, int]] = {}
    if len(meta.super_types) != 1 or meta.row_count is None:
        return out
    n = meta.row_count

    def walk(t: Any, col: Any, nullable: bool) -> None:
        if col is None:
            return
        if isinstance(col, NullsColumn):
            walk(t, col.values, True)
            return
        u = _bare(t)
        if isinstance(u, (PrimitiveType, EnumType)) and isinstance(col, PrimitiveColumn):
            counts = _counts(col.segmap)
            # below no presence runs every row has its value: counts that do not add up
            # to the rows lie (read whole, the decode says where); below them, at most
            if counts is not None and (sum(counts) == n if exact and not nullable
                                       else sum(counts) <= n):
                out[id(col.segmap)] = (col.segmap, n - sum(counts))
        elif isinstance(u, RecordType) and isinstance(col, RecordColumn):
            for f in u.fields:
                fc = col.field(f.name)
                if fc is not None:
                    walk(f.type, fc.column, nullable)

    walk(meta.super_types[0], meta.columns[0], False)
    return out


def direct_segmaps(meta: FileMeta) -> dict[int, Segmap]:
    """The selectable value streams whose value index is the row index (slack 0)."""
    return {k: segmap for k, (segmap, slack) in selectable_segmaps(meta).items()
            if slack == 0}


def direct_leaf(meta: FileMeta, path: tuple[str, ...]) -> Segmap | None:
    """The direct value stream at ``path`` when its type is a plain primitive (what a
    filter compares), else None."""
    got = leaf_stream(meta, path)
    return got[0] if got is not None and got[1] == 0 else None


def leaf_stream(meta: FileMeta, path: tuple[str, ...]) -> tuple[Segmap, int] | None:
    """The selectable value stream at ``path`` and its slack, when its type is a plain
    primitive (what a filter compares), else None."""
    selectable = selectable_segmaps(meta)
    if not selectable:
        return None
    t: Any = meta.super_types[0]
    col: Any = meta.columns[0]
    for name in path:
        while isinstance(col, NullsColumn):
            col = col.values
        u = _bare(t)
        if not isinstance(u, RecordType) or not isinstance(col, RecordColumn):
            return None
        ft, fc = u.field(name), col.field(name)
        if ft is None or fc is None:
            return None
        t, col = ft.type, fc.column
    while isinstance(col, NullsColumn):
        col = col.values
    if not isinstance(t, PrimitiveType) or not isinstance(col, PrimitiveColumn):
        return None
    return selectable.get(id(col.segmap))


def select_segments(streams: Iterable[tuple[str, Segmap]],
                    selectable: Mapping[int, tuple[Segmap, int]], ranges: RowRanges,
                    *, prefix: bool = False
                    ) -> tuple[list[Segment], dict[int, frozenset[int]]]:
    """The segments to read for ``ranges`` of ``streams`` ((role, segmap) pairs), and per
    selectable value stream (by ``id`` of its segmap) the indices of its segments kept:
    those that may hold the value of a selected row (``[r - slack, r]``, see
    :func:`selectable_segmaps`).  Every other stream is read whole.

    ``prefix``: keep every segment before the last one kept as well.  Where a kept
    segment's values start is the sum of the ``count`` of the segments before it; counts
    that shift between two earlier segments (``[10, 10, 10]`` said as ``[11, 10, 9]``)
    move that start while every total still agrees, and only decoding those segments
    can show it.  Kept, each is checked against its decoded values like any read."""
    segs: list[Segment] = []
    keep: dict[int, frozenset[int]] = {}
    for role, segmap in streams:
        if role == "values" and id(segmap) in selectable:
            _, slack = selectable[id(segmap)]
            counts = [s.count or 0 for s in segmap]
            lo, hi = _arrays(ranges)
            idx = frozenset(segments_for_spans(counts, lo - slack, hi)) | keep.get(
                id(segmap), frozenset())
            if prefix and idx:
                idx = frozenset(range(max(idx) + 1))
            keep[id(segmap)] = idx
            segs.extend(segmap[i] for i in sorted(idx))
        else:
            segs.extend(segmap)
    return segs, keep


def late_saving(streams: Iterable[tuple[str, Segmap]],
                selectable: Mapping[int, tuple[Segmap, int]], surviving: RowRanges,
                proven: RowRanges) -> int:
    """Bytes a second wave can avoid at most: per selectable value stream, the segments
    that may hold values of surviving rows less those holding rows proven to match (read
    either way; under presence runs none is sure), less one segment when no row is
    proven (a filter worth running matches something).  Streams read whole (presence,
    lengths, ...) save nothing."""
    saved = 0
    for role, segmap in streams:
        if role != "values" or id(segmap) not in selectable:
            continue
        _, slack = selectable[id(segmap)]
        counts = [s.count or 0 for s in segmap]
        lo, hi = _arrays(surviving)
        maybe = set(segments_for_spans(counts, lo - slack, hi))
        must = (set(segments_for_ranges(counts, proven)) if proven.rows and not slack
                else set())
        rest = [segmap[i].length for i in maybe - must]
        if rest and not must:
            rest.remove(max(rest))
        saved += sum(rest)
    return saved


# ------------------------------------------------------------ statistics ---

def column_stats(count: int | None, nulls: int | None, lo: Any, hi: Any, nan: bool | None,
                 type_name: str) -> ColumnStats | None:
    """One segment's statistics in the bound filter's domain, or None when unknown.

    Bounds arrive in the column's Python form (``bsup.decode_value``): ints, floats,
    strings, bytes, ``datetime64[ns]`` for times, ``timedelta64[ns]`` for durations,
    which are the forms :func:`planner.filters.bind` gives literals.  What is trusted
    is :func:`planner.bounds.segment_zone`'s rule (a cut string bound is still a
    bound: the writer rounds a cut ``max`` up or leaves it out).
    """
    return segment_zone(count, nulls, lo, hi, nan, type_name)


@dataclass(frozen=True, slots=True)
class Zone:
    """Rows ``[start, stop)`` and what the statistics prove about the filter there."""

    start: int
    stop: int
    truth: Truth


def plan_zones(expr: Expr, num_rows: int,
               columns: Mapping[tuple[str, ...], tuple[Sequence[int],
                                                        Sequence[ColumnStats | None]]],
               fuzzy: Mapping[tuple[str, ...], tuple[Sequence[int],
                                                      Sequence[ColumnStats | None], int]]
               | None = None) -> tuple[Zone, ...]:
    """Cut ``num_rows`` rows at every segment boundary of ``columns`` (path -> per segment
    counts and statistics) and judge each zone; neighbours with the same truth merge.

    ``fuzzy`` columns (path -> counts, statistics, slack) lie below presence runs: the
    values of rows ``[a, b)`` are among values ``[a - slack, b)``, so a zone's statistics
    are those of every segment holding such values, with nulls possible."""
    fuzzy = fuzzy or {}
    bounds = {0, num_rows}
    starts: dict[tuple[str, ...], tuple[int, ...]] = {}
    for path, (counts, _) in columns.items():
        s = value_starts(counts)
        if s[-1] != num_rows:
            raise RowSelectionError(f"column {path} counts {s[-1]} values for {num_rows} rows")
        starts[path] = s
        bounds.update(s)
    for path, (counts, _, _) in fuzzy.items():
        s = value_starts(counts)
        if s[-1] > num_rows:
            raise RowSelectionError(f"column {path} counts {s[-1]} values for {num_rows} rows")
        starts[path] = s
        bounds.update(s)
    cuts = sorted(b for b in bounds if 0 <= b <= num_rows)
    zones: list[Zone] = []
    for a, b in itertools.pairwise(cuts):
        if a == b:
            continue
        got: dict[tuple[str, ...], ColumnStats] = {}
        for path, (_, stats) in columns.items():
            i = bisect.bisect_right(starts[path], a) - 1
            st = stats[i]
            if st is not None:
                got[path] = st
        for path, (counts, stats, slack) in fuzzy.items():
            merged = _merged(counts, stats, slack, starts[path], a, b)
            if merged is not None:
                got[path] = merged
        truth = zone_truth(expr, got)
        if zones and zones[-1].truth == truth and zones[-1].stop == a:
            zones[-1] = Zone(zones[-1].start, b, truth)
        else:
            zones.append(Zone(a, b, truth))
    return tuple(zones)


def _merged(counts: Sequence[int], stats: Sequence[ColumnStats | None], slack: int,
            starts: Sequence[int], a: int, b: int) -> ColumnStats | None:
    """Statistics of rows ``[a, b)`` of a column below presence runs (see plan_zones):
    None when unknown."""
    lo_v, hi_v = max(0, a - slack), min(b, starts[-1])
    segs = segments_for_ranges(counts, RowRanges.of([(lo_v, hi_v)]))
    parts = [stats[i] for i in segs]
    if any(p is None for p in parts):
        return None
    together = fold(parts)
    rows = b - a
    if together is None:
        return None
    if not together.values:  # every row of the zone is null
        return ColumnStats(count=rows, nulls=rows)
    if rows < 2:  # "null or a value" needs two rows to say
        return None
    return ColumnStats(count=rows, nulls=1, lo=together.lo, hi=together.hi,
                       nan=together.nan)


def prefer_two_waves(bytes_saved: int, profile: Profile) -> bool:
    """Whether a second round trip pays: it costs one first-byte latency, in which the
    store would have delivered ``latency x bandwidth x concurrency`` bytes on all
    connections; a second wave is planned only when it avoids more bytes than that."""
    return bytes_saved > profile.latency * profile.bandwidth * profile.concurrency


# ------------------------------------------------------------------ plans ---

@dataclass(frozen=True, slots=True)
class FilterPlan:
    """What a filtered scan of one file will do, and why (``explain()``)."""

    filter: str
    profile: Profile
    zones: tuple[Zone, ...]
    filter_columns: tuple[str, ...]
    pruned_columns: tuple[str, ...]
    """Filter columns whose statistics cut zones (direct, with statistics)."""
    segments_total: int
    segments_pruned: int
    bytes_all: int
    """Bytes a scan without pruning reads (filter and projected columns, every row)."""
    bytes_wave1: int
    bytes_rest: int
    """Bytes of the other projected columns in zones not proven false."""
    two_waves: bool
    late_saving: int = 0
    """Bytes a second wave could avoid at most (:func:`late_saving`)."""
    wave1: Any = field(repr=False, default=None)
    #: Always empty: a projected path no super type has is refused before filter planning.
    missing_paths: tuple[str, ...] = ()
    type_zones: tuple[tuple[Zone, ...], ...] = field(repr=False, default=())
    """Several super types: each one's zones, by its own row indices (``zones`` are the
    rows of the file they make)."""

    @property
    def rows_total(self) -> int:
        return self.zones[-1].stop if self.zones else 0

    @property
    def rows_pruned(self) -> int:
        return sum(z.stop - z.start for z in self.zones if z.truth is Truth.FALSE)

    @property
    def bytes_one_wave(self) -> int:
        return self.bytes_wave1 + self.bytes_rest

    def explain(self, limit: int = 20) -> str:
        p = self.profile
        n_zones = len(self.zones)
        by = {t: sum(1 for z in self.zones if z.truth is t) for t in Truth}
        decision = ("two waves: filter columns first, then only the segments of the other "
                    "columns that hold selected rows" if self.two_waves else
                    "one wave: filter and projected columns of the surviving zones together")
        out = [
            f"filtered scan: {self.filter}",
            f"filter columns: {', '.join(self.filter_columns) or '(none)'}; pruning by "
            f"statistics of: {', '.join(self.pruned_columns) or '(none)'}",
            f"zones: {n_zones} ({by[Truth.FALSE]} false, {by[Truth.MAYBE]} maybe, "
            f"{by[Truth.TRUE]} true); rows pruned {self.rows_pruned:,} of "
            f"{self.rows_total:,}",
            f"segments pruned: {self.segments_pruned:,} of {self.segments_total:,}",
            f"bytes: {human(self.bytes_one_wave)} in one wave vs {human(self.bytes_all)} "
            f"without pruning (saved {human(self.bytes_all - self.bytes_one_wave)}); "
            f"filter columns {human(self.bytes_wave1)}, other columns in surviving zones "
            f"{human(self.bytes_rest)}",
            f"decision: {decision} (a second wave could avoid up to "
            f"{human(self.late_saving)}; a round trip pays above "
            f"{human(p.latency * p.bandwidth * p.concurrency)}, profile {p.name})",
        ]
        for sid, tz in enumerate(self.type_zones):
            rows = tz[-1].stop if tz else 0
            gone = sum(z.stop - z.start for z in tz if z.truth is Truth.FALSE)
            out.append(f"  super type {sid}: {len(tz)} zones by its own rows, rows pruned "
                       f"{gone:,} of {rows:,}")
        for z in self.zones[:limit]:
            out.append(f"    rows [{z.start:,}, {z.stop:,})  {z.truth.value}")
        if n_zones > limit:
            out.append(f"    ... and {n_zones - limit} more zones")
        if self.wave1 is not None:
            out.append("wave 1:")
            out.extend("  " + line for line in self.wave1.explain(limit).splitlines())
        return "\n".join(out)
