"""Row selection and filtered scans: read only the segments that hold the rows wanted.

:func:`scan_rows` reads the rows of a :class:`planner.selection.RowRanges`: direct
value streams and those below presence runs (``planner.selection.selectable_segmaps``)
fetch only the segments that may hold those rows, every other stream (presence,
lengths, tags, the super column, the values below them) is read whole so rows map
to values exactly;
the cursor tree then ``skip``s the rows between ranges (a skipped segment is a
placeholder of its ``count``, never fetched) and ``take``s the rest.

:func:`plan_filter` / :func:`scan_filtered` prune by statistics and materialize
late: zones of rows the filter's statistics prove false are never read; the
filter is evaluated exactly (``filtering.evaluate``) on the surviving rows; the
other projected columns are read either with the filter columns (one wave) or,
when the cost model says the avoided bytes pay for a round trip, afterwards and
only for the selected rows (two waves).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.coalescing import plan_ranges
from planner.dnf import as_expr
from planner.filters import Expr, Truth, bind, columns_of
from planner.literals import FilterError
from planner.profiles import with_amplification
from planner.projection import path_type
from planner.selection import (
    FilterPlan,
    RowMap,
    RowRanges,
    Zone,
    column_stats,
    late_saving,
    leaf_stream,
    plan_zones,
    prefer_two_waves,
    ranges_from_indices,
    select_segments,
    selectable_segmaps,
    type_view,
)

from .. import arrays as A
from ..format.colvalue import segment_stats
from ..format.meta import FileMeta
from ..model.errors import FormatError
from ..model.types import PrimitiveType
from . import scan as S
from .fetch import Target
from .options import ReadOptions
from .result import ScanResult, ScanStats

__all__ = ["iter_filtered", "next_piece", "plan_filter", "plan_rows", "runs_of",
           "scan_filtered", "scan_rows", "surviving_runs"]


# ---------------------------------------------------------- row selection ---

def plan_rows(meta: FileMeta, plan: P.ScanPlan, ranges: RowRanges, *,
              verify_counts: bool = True, rowmap: RowMap | None = None
              ) -> tuple[P.ScanPlan, dict[int, frozenset[int]]]:
    """``plan`` cut down to the segments ``ranges`` need, and the kept segments of each
    direct value stream (what the cursor tree reads; the rest it skips).

    ``verify_counts`` (``take``, ``rows=``, ``limit=``): a value stream keeps every
    segment up to the last one holding a selected row, so each ``count`` that places the
    rows is checked against its decoded values (``select_segments(prefix=True)``): a
    file whose counts shift between segments is a FormatError naming the column and
    segment, never another row.  Only segments past the last selected row are skipped
    unread.  Filtered scans trust counts as they trust ``min``/``max`` (False).

    A file of several super types needs ``rowmap`` (without one every stream is read
    whole): each super type's streams are selected by the indices within that type of
    the selected rows.  A row map of a prefix of the super column cuts the super
    stream to the segments it read (the read then ends there: :func:`scan_rows`)."""
    multi = len(meta.super_types) > 1
    if multi and rowmap is None:
        selectable: dict[int, tuple[Any, int]] = {}
    else:
        selectable = selectable_segmaps(meta, rowmap.type_rows if multi and rowmap else None)
    per_type = rowmap.local(ranges) if multi and rowmap is not None else None
    segs: list[Any] = []
    keep: dict[int, frozenset[int]] = {}
    for sid, refs in enumerate(plan.streams):
        got, k = select_segments([(ref.role, ref.segmap) for ref in refs], selectable,
                                 per_type[sid] if per_type is not None else ranges,
                                 prefix=verify_counts)
        segs.extend(got)
        keep.update(k)
    super_stream = plan.super_stream
    if multi and rowmap is not None:
        super_stream = None  # decoded once, while planning: the row map is its IDs
    elif super_stream is not None:
        segs.extend(super_stream.segmap)
    rp = plan_ranges(segs, _selective(plan.profile), plan.available)
    kept = {id(segmap): tuple(segmap[i] for i in sorted(idx)) for segmap, idx in
            ((selectable[k][0], v) for k, v in keep.items())}
    streams_cut = tuple(tuple(dataclasses.replace(ref, segmap=kept.get(id(ref.segmap),
                                                                       ref.segmap))
                              for ref in refs if kept.get(id(ref.segmap), ref.segmap))
                        for refs in plan.streams)
    cut = dataclasses.replace(plan, streams=streams_cut, segments=rp.segments, requests=rp.requests,
                              bytes_needed=rp.bytes_needed, bytes_to_read=rp.bytes_to_read,
                              request_count=rp.request_count, request_cap=rp.request_cap,
                              super_stream=super_stream)
    return cut, keep


def super_prefix(segmap: Any, rows: int) -> tuple[Any, ...]:
    """The first segments of the super column holding rows ``[0, rows)`` (by their
    ``count``; all of them when a count is missing)."""
    out = []
    seen = 0
    for seg in segmap:
        if seen >= rows and out:
            break
        if seg.count is None:
            return tuple(segmap)
        out.append(seg)
        seen += seg.count
    return tuple(out)


#: A selection's segments lie apart; merging the gaps between them (which a whole-column
#: scan does freely) may add at most this fraction of the needed bytes.
SELECTION_GAP_BYTES = 0.25


def _selective(profile: P.Profile) -> P.Profile:
    bound = profile.max_amplification
    if bound is not None and bound <= SELECTION_GAP_BYTES:
        return profile
    return with_amplification(profile, SELECTION_GAP_BYTES)


def _indices(ranges: RowRanges, n: int) -> np.ndarray:
    """The row numbers of ``ranges`` below ``n`` as one sorted int64 array."""
    starts = np.asarray(ranges.starts, np.int64)
    stops = np.minimum(np.asarray(ranges.stops, np.int64), n)
    keep = starts < stops
    return A.range_indices(starts[keep], stops[keep] - starts[keep])


def _select(read: S.Read, ranges: RowRanges) -> tuple[dict[str, A.Array], int, int]:
    """In the read's thread: the rows of ``ranges`` (fewer when the file ends first), and
    the rows in the file.  Each cursor passes over every row once and gathers the
    selected ones (:meth:`~.columns.Cursor.gather`): one vectorised step per node and
    per segment, however many runs the selection makes."""
    if read.ids is None:
        n = read.remaining or 0
        read.remaining = 0
        idx = _indices(ranges, n)
        ids = np.zeros(idx.size, np.int32)
        totals = [n]
        local = [idx]
    else:
        every = read.ids.take(1 << 62, exact=False)
        n = int(every.size)
        if n and (int(every.min()) < 0 or int(every.max()) >= read.n_types):
            raise FormatError(f"super column holds an ID outside 0..{read.n_types - 1}")
        idx = _indices(ranges, n)
        ids = every[idx]
        totals = np.bincount(every, minlength=read.n_types).tolist()
        ranks = A.group_ranks(every, read.n_types)[idx]
        local = [ranks[ids == sid] for sid in range(read.n_types)]
    counts = np.bincount(ids, minlength=read.n_types).tolist()
    out = {p: read.assemble(cs, ids, counts,
                            lambda sid, c: c.gather(totals[sid], local[sid]))
           for p, cs in read.cursors.items() if p is not None}
    read.finish()
    return out, int(idx.size), n


def _select_types(read: S.Read, rowmap: RowMap, ranges: RowRanges
                  ) -> tuple[dict[str, A.Array], int, int]:
    """In the read's thread, a file of several super types: each super type's cursors
    gather the selected rows of that type (its indices within its own rows, however
    the types interleave, found by one sort of the selected rows by type), then each
    column is merged in file order by the row map."""
    rows = _indices(ranges, len(rowmap.ids))
    ids = np.asarray(rowmap.ids[rows], np.int32)
    counts = np.bincount(ids, minlength=read.n_types).tolist()
    local = rowmap.local_indices(rows)
    type_rows = rowmap.type_rows

    def part(sid: int, c: Any) -> A.Array:
        li = local[sid]
        n = type_rows[sid]
        if n is None:  # a prefix of the rows: the read ends after the last one selected
            n = int(li[-1]) + 1 if li.size else 0
        return c.gather(n, li)

    out = {p: read.assemble(cs, ids, counts, part) for p, cs in read.cursors.items()
           if p is not None}
    read.finish()
    return out, int(rows.size), len(rowmap.ids)


async def scan_rows(target: Target, meta: FileMeta, plan: P.ScanPlan, paths: Sequence[str],
                    ranges: RowRanges, options: ReadOptions, *, verify_counts: bool = True,
                    rowmap: RowMap | None = None) -> ScanResult:
    """The columns at ``paths`` for the rows of ``ranges``, in row order (``verify_counts``
    and ``rowmap``: see :func:`plan_rows`)."""
    cut, keep = plan_rows(meta, plan, ranges, verify_counts=verify_counts, rowmap=rowmap)
    return await run_rows(target, meta, cut, keep, paths, ranges, options, rowmap)


async def run_rows(target: Target, meta: FileMeta, cut: P.ScanPlan,
                   keep: dict[int, frozenset[int]], paths: Sequence[str], ranges: RowRanges,
                   options: ReadOptions, rowmap: RowMap | None = None) -> ScanResult:
    """Run a :func:`plan_rows` plan: the rows of ``ranges``, in row order."""
    t0 = time.perf_counter()
    by_map = rowmap is not None and len(meta.super_types) > 1
    partial = by_map and rowmap is not None and not rowmap.complete
    if by_map:  # the row map holds the super column's IDs: the read does not fetch them
        meta = dataclasses.replace(meta, super_column=())
    read = S.start_read(target, meta, cut, options, paths, eager=True, keep=keep,
                        partial=partial)
    worker = S.ReadThread()
    try:
        if rowmap is not None and len(meta.super_types) > 1:
            cols, rows, total = await S.run_step(read, worker, S.deadline_of(options),
                                                 _select_types, read, rowmap, ranges)
        else:
            cols, rows, total = await S.run_step(read, worker, S.deadline_of(options),
                                                 _select, read, ranges)
    finally:
        await S.close_read(read, worker)
    read.stats.wall = time.perf_counter() - t0
    return ScanResult(cols, rows, read.stats, cut, total_rows=None if partial else total)


async def read_row_map(target: Target, meta: FileMeta, profile: P.Profile,
                       available: tuple[int, int] | None, options: ReadOptions,
                       rows: int | None = None) -> tuple[RowMap, ScanStats]:
    """The row map of a file of several super types: its super column decoded, whole or
    (``rows``, when its segments have ``count``) only the segments holding rows
    ``[0, rows)``; and what reading it cost."""
    segmap = meta.super_column if rows is None else super_prefix(meta.super_column, rows)
    complete = len(segmap) == len(meta.super_column)
    part = meta if complete else dataclasses.replace(meta, super_column=segmap)
    rp = plan_ranges(list(segmap), profile, available)
    read = S.start_read(target, part, rp, options, [], eager=True, ids_only=True)
    worker = S.ReadThread()
    try:
        _, ids = await S.run_step(read, worker, S.deadline_of(options), read.whole)
    finally:
        await S.close_read(read, worker)
    ids = np.asarray(ids, np.int64)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= len(meta.super_types)):
        raise FormatError(f"super column holds an ID outside 0..{len(meta.super_types) - 1}",
                          path=target.path)
    return RowMap(ids, len(meta.super_types), complete), read.stats


# ---------------------------------------------------------- filtered scans ---

@dataclasses.dataclass(frozen=True)
class _FilterWork:
    """What :func:`scan_filtered` needs beyond the :class:`FilterPlan` it explains."""

    expr: Expr
    wanted: tuple[str, ...]
    filter_paths: tuple[str, ...]  # filter columns read (some super type has them)
    surviving: RowRanges | None  # None: every row (nothing known to cut by)
    rowmap: RowMap | None = None  # several super types: rows to (type, index)
    # the first wave as planned (its plan and kept segments): run as is, not planned again
    first: tuple[P.ScanPlan, dict[int, frozenset[int]] | None] | None = None
    # the filter's and projected columns, and the filter's alone, every row: what a
    # ``limit`` cuts piece by piece (one wave, or the first of two)
    full: P.ScanPlan | None = None
    filter_plan: P.ScanPlan | None = None
    every_row: bool = False  # ``surviving`` is every row: ``first`` is read whole


def _type_names(meta: FileMeta, paths: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Primitive type names of filter paths, for binding before any read (one super type:
    the same names the decoded arrays will have)."""
    out: dict[tuple[str, ...], str] = {}
    if len(meta.super_types) != 1:
        return out
    for p in paths:
        t = path_type(meta.super_types[0], p)
        if isinstance(t, PrimitiveType):
            out[p] = t.name
    return out


def _zones_one(meta: FileMeta, expr: Expr, fpaths: Sequence[tuple[str, ...]]
               ) -> tuple[tuple[Zone, ...], list[tuple[str, ...]]]:
    """The zones of a file of one super type (or a super type's view), and the filter
    columns whose statistics cut them."""
    n = meta.row_count
    if n is None:
        return (), []
    names = _type_names(meta, fpaths)
    try:
        bound = bind(expr, names)
    except FilterError:  # a super type's column the literal cannot compare with: the
        # rows are judged on the values, as the union the file's column is
        return (Zone(0, n, Truth.MAYBE),), []
    columns: dict[tuple[str, ...], tuple[list[int], list[Any]]] = {}
    fuzzy: dict[tuple[str, ...], tuple[list[int], list[Any], int]] = {}
    for p in fpaths:
        leaf = leaf_stream(meta, p)
        if leaf is None or p not in names:
            continue
        segmap, slack = leaf
        stats = [segment_stats(s) for s in segmap]
        counts = [s.count or 0 for s in segmap]
        per = [column_stats(st.count, st.nulls, st.min, st.max, st.nan, names[p])
               for st in stats]
        if slack:
            fuzzy[p] = (counts, per, slack)
        else:
            columns[p] = (counts, per)
    zones = (plan_zones(bound, n, columns, fuzzy) if columns or fuzzy
             else (Zone(0, n, Truth.MAYBE),))
    return zones, [*columns, *fuzzy]


_TRUTHS = (Truth.FALSE, Truth.MAYBE, Truth.TRUE)


def _global_zones(rowmap: RowMap, per_type: Sequence[tuple[Zone, ...]]
                  ) -> tuple[tuple[Zone, ...], RowRanges, RowRanges]:
    """The zones of the super types, each judged by its own rows, as zones of the file:
    runs of rows of the same truth in file order; and the rows not proven false and
    those proven true (from the same array: the zones can be thousands)."""
    n = len(rowmap.ids)
    truth = np.full(n, 1, np.int8)
    for sid, zones in enumerate(per_type):
        pos = rowmap.positions(sid)
        for z in zones:
            truth[pos[z.start:z.stop]] = _TRUTHS.index(z.truth)
    if not n:
        return (), RowRanges(), RowRanges()
    cuts = np.flatnonzero(np.diff(truth)) + 1
    starts = np.concatenate([[0], cuts]).tolist()
    stops = [*starts[1:], n]
    kinds = truth[starts].tolist()
    zones_out = tuple(Zone(a, b, _TRUTHS[k]) for a, b, k in zip(starts, stops, kinds,
                                                                strict=True))
    return zones_out, _mask_runs(truth != 0), _mask_runs(truth == 2)


def _mask_runs(mask: np.ndarray) -> RowRanges:
    """The runs of True rows of ``mask`` as row ranges."""
    edges = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)
    return RowRanges(tuple(starts.tolist()), tuple(stops.tolist()))


def plan_filter(meta: FileMeta, filter: Any, wanted: Sequence[str], profile: P.Profile,
                available: tuple[int, int] | None, base: RowRanges | None = None,
                rowmap: RowMap | None = None, planned: P.ScanPlan | None = None
                ) -> tuple[FilterPlan, _FilterWork]:
    """Zones, pruning and the one-or-two-waves decision for a filtered scan (no I/O).

    A file of several super types is judged per super type with ``rowmap`` (the whole
    super column decoded): each type's zones by its own statistics, mapped to the rows
    of the file; without one nothing is pruned.  ``planned``: the plan of ``wanted``,
    made already (each projection is planned once)."""
    expr = as_expr(filter)
    fpaths = list(dict.fromkeys(columns_of(expr)))
    names = _type_names(meta, fpaths)
    bound = bind(expr, names)
    spell = [P.format_path(p) for p in fpaths]
    plans: dict[tuple[str, ...], P.ScanPlan] = {}
    if planned is not None:
        plans[tuple(wanted)] = planned

    def plan_of(paths: Sequence[str]) -> P.ScanPlan:
        """Each projection planned once (the filter's, the whole scan's, the rest's)."""
        key = tuple(paths)
        got = plans.get(key)
        if got is None:
            got = plans[key] = P.plan_scan(meta, list(paths), profile, available=available)
        return got

    first_all = list(dict.fromkeys([*wanted, *spell]))
    absent = set(plan_of(first_all).missing_paths) & set(spell)
    read_f = tuple(p for p in spell if p not in absent)
    multi = len(meta.super_types) > 1
    if multi and rowmap is not None and not rowmap.complete:
        rowmap = None
    zones: tuple[Zone, ...] = ()
    kept_rows = proven_rows = RowRanges()
    surviving: RowRanges | None = None
    pruned: list[tuple[str, ...]] = []
    type_zones: list[tuple[Zone, ...]] = []
    if not multi:
        zones, pruned = _zones_one(meta, expr, fpaths)
    elif rowmap is not None:
        for sid, n in enumerate(rowmap.type_rows):
            z, by = _zones_one(type_view(meta, sid, n), expr, fpaths)
            type_zones.append(z)
            pruned.extend(p for p in by if p not in pruned)
        zones, kept_rows, proven_rows = _global_zones(rowmap, type_zones)
    if zones:
        surviving = kept_rows if multi else RowRanges.of(
            (z.start, z.stop) for z in zones if z.truth is not Truth.FALSE)
        if base is not None:
            surviving = _intersect(surviving, base)
    elif base is not None:
        surviving = base
    others = [p for p in wanted if p not in read_f]
    everything = list(dict.fromkeys([*wanted, *read_f]))
    full = plan_of(everything)
    kept: dict[int, dict[int, frozenset[int]] | None] = {}
    # one super type, every row surviving (the statistics rule nothing out, as in most
    # small files of a dataset): the plans are read as they are, not cut to every row
    every_row = (not multi and surviving is not None and len(surviving) == 1
                 and surviving.starts[0] == 0 and surviving.stops[0] == meta.row_count)

    def cut(paths: list[str]) -> tuple[P.ScanPlan | None, int]:
        if not paths:
            return None, 0
        plan = plan_of(paths)
        if surviving is None or every_row:
            return plan, plan.bytes_needed
        c, k = plan_rows(meta, plan, surviving, verify_counts=False, rowmap=rowmap)
        kept[id(c)] = k
        return c, c.bytes_needed

    one, _ = cut(everything)
    wave1, bytes_wave1 = cut(list(read_f))
    _, bytes_rest = cut(others)
    saving = 0
    if others and read_f and surviving is not None:
        proven = proven_rows if multi else RowRanges.of(
            (z.start, z.stop) for z in zones if z.truth is Truth.TRUE)
        rest_plan = plan_of(others)
        if not multi:
            streams = [(ref.role, ref.segmap) for refs in rest_plan.streams for ref in refs]
            saving = late_saving(streams, selectable_segmaps(meta), surviving, proven)
        elif rowmap is not None:
            selectable = selectable_segmaps(meta, rowmap.type_rows)
            for sid, (surv, prov) in enumerate(zip(rowmap.local(surviving),
                                                   rowmap.local(proven), strict=True)):
                streams = [(ref.role, ref.segmap) for ref in rest_plan.streams[sid]]
                saving += late_saving(streams, selectable, surv, prov)
    two = saving > 0 and prefer_two_waves(saving, profile)
    fplan = FilterPlan(
        filter=repr(expr), profile=profile, zones=zones, filter_columns=tuple(spell),
        pruned_columns=tuple(P.format_path(p) for p in pruned),
        segments_total=len(full.segments),
        segments_pruned=len(full.segments) - (len(one.segments) if one else 0),
        bytes_all=full.bytes_needed, bytes_wave1=bytes_wave1, bytes_rest=bytes_rest,
        two_waves=two, late_saving=saving, wave1=wave1 if two else one,
        type_zones=tuple(type_zones))
    run = wave1 if two else one
    first = None if run is None else (run, kept.get(id(run)))
    return fplan, _FilterWork(bound, tuple(wanted), read_f, surviving, rowmap, first, full,
                              plan_of(list(read_f)) if two and read_f else None, every_row)


def _intersect(a: RowRanges, b: RowRanges) -> RowRanges:
    out = []
    i = j = 0
    ap, bp = a.pairs, b.pairs
    while i < len(ap) and j < len(bp):
        lo, hi = max(ap[i][0], bp[j][0]), min(ap[i][1], bp[j][1])
        if lo < hi:
            out.append((lo, hi))
        if ap[i][1] < bp[j][1]:
            i += 1
        else:
            j += 1
    return RowRanges.of(out)


def runs_of(rows: np.ndarray) -> RowRanges:
    """Sorted distinct row numbers as ranges (vectorised ``ranges_from_indices``)."""
    rows = np.asarray(rows, np.int64)
    if not rows.size:
        return RowRanges()
    if rows.size > 1 and not bool((np.diff(rows) > 0).all()):
        return ranges_from_indices(rows.tolist())  # refuses it, saying why
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = rows[np.concatenate([[0], cuts])]
    stops = rows[np.concatenate([cuts - 1, [rows.size - 1]])] + 1
    return RowRanges.from_arrays(starts, stops)


def _rows_of(ranges: RowRanges, positions: np.ndarray) -> np.ndarray:
    """Absolute row numbers of ``positions`` within the rows of ``ranges`` (in order)."""
    if len(ranges) == 1:
        return positions + ranges.starts[0]
    starts = np.asarray(ranges.starts, np.int64)
    lens = np.asarray(ranges.stops, np.int64) - starts
    ends = np.cumsum(lens)
    k = np.searchsorted(ends, positions, "right")
    return starts[k] + positions - (ends[k] - lens[k])


def _add(into: ScanStats, more: ScanStats) -> None:
    into.requests += more.requests
    into.bytes_read += more.bytes_read
    into.bytes_needed += more.bytes_needed
    if into.ttfb is None:
        into.ttfb = more.ttfb


async def _read(target: Target, meta: FileMeta, profile: P.Profile,
                available: tuple[int, int] | None, paths: list[str],
                ranges: RowRanges | None, options: ReadOptions,
                rowmap: RowMap | None = None) -> ScanResult:
    plan = P.plan_scan(meta, paths, profile, available=available)
    if ranges is None:
        return await S.scan_columns(target, meta, plan, paths, options)
    return await scan_rows(target, meta, plan, paths, ranges, options, verify_counts=False,
                           rowmap=rowmap)


async def _planned(target: Target, meta: FileMeta, work: _FilterWork, paths: list[str],
                   options: ReadOptions, profile: P.Profile,
                   available: tuple[int, int] | None) -> ScanResult:
    """The first wave as :func:`plan_filter` planned it (no second planning)."""
    if work.first is None:  # nothing to read but rows (no columns)
        return await _read(target, meta, profile, available, paths, work.surviving, options,
                           work.rowmap)
    plan, keep = work.first
    if work.surviving is None or work.every_row:
        return await S.scan_columns(target, meta, plan, paths, options)
    return await run_rows(target, meta, plan, keep or {}, paths, work.surviving, options,
                          work.rowmap)


def _gather(arr: A.Array, keep: np.ndarray) -> A.Array:
    """``arr.take(keep)`` for sorted ``keep``; runs of consecutive rows (a clustered
    filter's matches) as slices, which copy nothing."""
    if keep.size == len(arr):
        return arr
    if not keep.size:
        return arr.take(keep)
    cuts = np.flatnonzero(np.diff(keep) != 1) + 1
    if cuts.size > 64:
        return arr.take(keep)
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [keep.size]])
    parts = [arr.slice(int(keep[a]), int(keep[b - 1]) + 1) for a, b in zip(starts, stops,
                                                                             strict=True)]
    return parts[0] if len(parts) == 1 else A.concat(parts)


def _keep(work: _FilterWork, res: ScanResult, limit: int | None) -> np.ndarray:
    from ..arrays.filtering import evaluate

    by_path = {P.parse_path(c): a for c, a in res.columns.items()}
    typed = bind(work.expr, {p: a.type.name for p, a in by_path.items()
                             if isinstance(a.type, PrimitiveType)})
    keep = np.flatnonzero(evaluate(typed, by_path, res.num_rows))
    return keep if limit is None else keep[:limit]


async def scan_filtered(target: Target, meta: FileMeta, fplan: FilterPlan, work: _FilterWork,
                        options: ReadOptions, available: tuple[int, int] | None,
                        limit: int | None = None) -> ScanResult:
    """Run a :func:`plan_filter` plan: the rows the filter is true for, in file order."""
    t0 = time.perf_counter()
    stats = ScanStats()
    wanted = list(work.wanted)
    prof = fplan.profile
    if work.surviving is not None and not work.surviving.rows:
        res = await _read(target, meta, prof, available, wanted, RowRanges(), options,
                          work.rowmap)
        _add(stats, res.stats)
        stats.wall = time.perf_counter() - t0
        return ScanResult(res.columns, 0, stats, fplan)
    if limit is not None and work.surviving is not None and work.full is not None:
        return await _scan_limited(target, meta, fplan, work, options, limit, stats, t0,
                                   available)
    if not fplan.two_waves:
        every = list(dict.fromkeys([*wanted, *work.filter_paths]))
        res = await _planned(target, meta, work, every, options, prof, available)
        _add(stats, res.stats)
        keep = _keep(work, res, limit)
        stats.wall = time.perf_counter() - t0
        return ScanResult({c: _gather(res.columns[c], keep) for c in wanted}, int(keep.size),
                          stats, fplan)
    first = await _planned(target, meta, work, list(work.filter_paths), options, prof,
                           available)
    _add(stats, first.stats)
    keep = _keep(work, first, limit)
    others = [p for p in wanted if p not in first.columns]
    cols: dict[str, A.Array] = {}
    if others:
        rows = keep if work.surviving is None else _rows_of(work.surviving, keep)
        second = await _read(target, meta, prof, available, others,
                             runs_of(rows), options, work.rowmap)
        _add(stats, second.stats)
        if second.num_rows != keep.size:
            raise FormatError(f"the second wave read {second.num_rows} rows for "
                              f"{keep.size} selected")
        cols.update(second.columns)
    for c in wanted:
        if c in first.columns:
            cols[c] = _gather(first.columns[c], keep)
    stats.wall = time.perf_counter() - t0
    return ScanResult({c: cols[c] for c in wanted}, int(keep.size), stats, fplan)


#: A filtered scan with ``limit`` reads its surviving rows in pieces of at most this
#: many rows of zones the statistics cannot judge (a piece costs a round trip; fewer
#: rows would still read whole segments),
LIMIT_PIECE_ROWS = 4096
#: each piece this many times the one before (a filter matching few of the rows it
#: cannot rule out pays a few round trips, never one per piece of a long file).
LIMIT_GROWTH = 4


def surviving_runs(surviving: RowRanges, zones: Sequence[Zone]
                   ) -> list[tuple[int, int, bool]]:
    """The surviving rows in file order as ``(start, stop, proven)`` runs: ``proven``
    where the statistics prove the filter true (no zones: nothing proven)."""
    true = RowRanges.of((z.start, z.stop) for z in zones if z.truth is Truth.TRUE)
    edges = sorted({*true.starts, *true.stops})
    out: list[tuple[int, int, bool]] = []
    for a, b in surviving.pairs:
        inner = edges[bisect.bisect_right(edges, a):bisect.bisect_left(edges, b)]
        for lo, hi in itertools.pairwise([a, *inner, b]):
            k = bisect.bisect_right(true.starts, lo) - 1
            sure = k >= 0 and true.stops[k] > lo
            if out and out[-1][1] == lo and out[-1][2] == sure:
                out[-1] = (out[-1][0], hi, sure)
            else:
                out.append((lo, hi, sure))
    return out


def next_piece(runs: Sequence[tuple[int, int, bool]], at: tuple[int, int], need: int,
               cap: int) -> tuple[RowRanges, tuple[int, int]]:
    """The next piece of a filtered scan with ``limit``: from position ``at`` (run index,
    row) in ``runs`` (:func:`surviving_runs`), rows in file order until the proven rows
    reach ``need`` or the unproven ones ``cap``; and the position after it."""
    i, row = at
    pairs: list[tuple[int, int]] = []
    proven = unproven = 0
    while i < len(runs) and proven < need and unproven < cap:
        a, b, sure = runs[i]
        a = max(a, row)
        take = min(b - a, need - proven if sure else cap - unproven)
        pairs.append((a, a + take))
        if sure:
            proven += take
        else:
            unproven += take
        if a + take < b:
            row = a + take
            break
        i, row = i + 1, 0
    return RowRanges.of(pairs), (i, row)


async def _scan_limited(target: Target, meta: FileMeta, fplan: FilterPlan, work: _FilterWork,
                        options: ReadOptions, limit: int, stats: ScanStats, t0: float,
                        available: tuple[int, int] | None) -> ScanResult:
    """The first ``limit`` matches: the surviving zones read in file order, piece by piece
    (:func:`next_piece`), until enough rows matched; the rest of the file is never
    read.  With two waves, each piece reads the filter's columns, and the other columns
    are read once at the end for the rows kept."""
    assert work.surviving is not None and work.full is not None
    wanted = list(work.wanted)
    others = [p for p in wanted if p not in work.filter_paths]
    two = fplan.two_waves and bool(others) and work.filter_plan is not None
    first_paths = (list(work.filter_paths) if two
                   else list(dict.fromkeys([*wanted, *work.filter_paths])))
    first_plan = work.filter_plan if two else work.full
    assert first_plan is not None
    parts: dict[str, list[A.Array]] = {c: [] for c in wanted if c in first_paths}
    rows: list[np.ndarray] = []
    found = 0
    runs = surviving_runs(work.surviving, fplan.zones) if limit else []
    at, cap = (0, 0), max(limit, LIMIT_PIECE_ROWS)
    while True:
        piece, at = next_piece(runs, at, limit - found, cap)
        cap *= LIMIT_GROWTH
        cut, keep = plan_rows(meta, first_plan, piece, verify_counts=False,
                              rowmap=work.rowmap)
        res = await run_rows(target, meta, cut, keep, first_paths, piece, options,
                             work.rowmap)
        _add(stats, res.stats)
        if res.num_rows != piece.rows:
            raise FormatError(f"read {res.num_rows} rows for the {piece.rows} of a piece")
        kept = _keep(work, res, limit - found)
        for c in parts:
            parts[c].append(_gather(res.columns[c], kept))
        rows.append(_rows_of(piece, kept) if piece.rows else kept)
        found += int(kept.size)
        if found >= limit or at[0] >= len(runs):
            break
    cols = {c: lst[0] if len(lst) == 1 else A.concat(lst) for c, lst in parts.items()}
    if two:
        second = await _read(target, meta, fplan.profile, available, others,
                             runs_of(np.concatenate(rows)), options, work.rowmap)
        _add(stats, second.stats)
        if second.num_rows != found:
            raise FormatError(f"the second wave read {second.num_rows} rows for "
                              f"{found} selected")
        cols.update(second.columns)
    stats.wall = time.perf_counter() - t0
    return ScanResult({c: cols[c] for c in wanted}, found, stats, fplan)


async def iter_filtered(target: Target, meta: FileMeta, fplan: FilterPlan, work: _FilterWork,
                        options: ReadOptions, batch_rows: int, prefetch: bool = True
                        ) -> AsyncIterator[ScanResult]:
    """``iter_batches(filter=)`` on a file whose statistics rule zones out: the surviving
    rows in file order, in pieces of ``batch_rows`` rows, each read (the filter's and
    projected columns of the segments holding it; ruled-out zones never) and filtered;
    a piece's matches are one batch (not yielded when none).  Memory holds a piece and,
    with ``prefetch``, the next one, whose read starts before the batch is handed on."""
    assert work.surviving is not None and work.full is not None
    wanted = list(work.wanted)
    every = list(dict.fromkeys([*wanted, *work.filter_paths]))
    pieces = _pieces_of(work.surviving, batch_rows)
    stats = ScanStats()
    t0 = time.perf_counter()

    async def read(piece: RowRanges) -> ScanResult:
        assert work.full is not None
        cut, keep = plan_rows(meta, work.full, piece, verify_counts=False, rowmap=work.rowmap)
        return await run_rows(target, meta, cut, keep, every, piece, options, work.rowmap)

    pending: asyncio.Task[ScanResult] | None = None
    try:
        for i, piece in enumerate(pieces):
            res = await pending if pending is not None else await read(piece)
            pending = None
            if prefetch and i + 1 < len(pieces):
                pending = asyncio.ensure_future(read(pieces[i + 1]))
            if res.num_rows != piece.rows:
                raise FormatError(f"read {res.num_rows} rows for the {piece.rows} of a piece")
            _add(stats, res.stats)
            kept = _keep(work, res, None)
            if not kept.size:
                continue
            stats.wall = time.perf_counter() - t0
            yield ScanResult({c: _gather(res.columns[c], kept) for c in wanted},
                             int(kept.size), dataclasses.replace(stats), fplan)
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending


def _pieces_of(rows: RowRanges, n: int) -> list[RowRanges]:
    """``rows`` in file order, cut into pieces of ``n`` rows (the last fewer)."""
    out: list[RowRanges] = []
    cur: list[tuple[int, int]] = []
    have = 0
    for a, b in rows.pairs:
        while a < b:
            k = min(b - a, n - have)
            cur.append((a, a + k))
            have += k
            a += k
            if have == n:
                out.append(RowRanges.of(cur))
                cur, have = [], 0
    if cur:
        out.append(RowRanges.of(cur))
    return out
