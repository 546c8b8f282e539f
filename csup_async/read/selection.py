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

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import planner as P
from planner.coalescing import plan_ranges
from planner.dnf import as_expr
from planner.filters import Expr, Truth, bind, columns_of
from planner.profiles import with_amplification
from planner.projection import path_type
from planner.selection import (
    FilterPlan,
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
)

from .. import arrays as A
from ..colvalue import segment_stats
from ..errors import FormatError
from ..meta import FileMeta
from ..types import PrimitiveType
from . import scan as S
from .fetch import Target
from .options import ReadOptions
from .result import ScanResult, ScanStats

__all__ = ["plan_filter", "plan_rows", "runs_of", "scan_filtered", "scan_rows"]


# ---------------------------------------------------------- row selection ---

def plan_rows(meta: FileMeta, plan: P.ScanPlan, ranges: RowRanges, *,
              verify_counts: bool = True) -> tuple[P.ScanPlan, dict[int, frozenset[int]]]:
    """``plan`` cut down to the segments ``ranges`` need, and the kept segments of each
    direct value stream (what the cursor tree reads; the rest it skips).

    ``verify_counts`` (``take``, ``rows=``, ``limit=``): a value stream keeps every
    segment up to the last one holding a selected row, so each ``count`` that places the
    rows is checked against its decoded values (``select_segments(prefix=True)``): a
    file whose counts shift between segments is a FormatError naming the column and
    segment, never another row.  Only segments past the last selected row are skipped
    unread.  Filtered scans trust counts as they trust ``min``/``max`` (False)."""
    selectable = selectable_segmaps(meta)
    streams = [(ref.role, ref.segmap) for refs in plan.streams for ref in refs]
    if plan.super_stream is not None:
        streams.append((plan.super_stream.role, plan.super_stream.segmap))
    segs, keep = select_segments(streams, selectable, ranges, prefix=verify_counts)
    rp = plan_ranges(segs, _selective(plan.profile), plan.available)
    kept = {id(segmap): tuple(segmap[i] for i in sorted(idx)) for segmap, idx in
            ((selectable[k][0], v) for k, v in keep.items())}
    streams_cut = tuple(tuple(dataclasses.replace(ref, segmap=kept.get(id(ref.segmap),
                                                                       ref.segmap))
                              for ref in refs if kept.get(id(ref.segmap), ref.segmap))
                        for refs in plan.streams)
    cut = dataclasses.replace(plan, streams=streams_cut, segments=rp.segments, requests=rp.requests,
                              bytes_needed=rp.bytes_needed, bytes_to_read=rp.bytes_to_read,
                              request_count=rp.request_count, request_cap=rp.request_cap)
    return cut, keep


#: A selection's segments lie apart; merging the gaps between them (which a whole-column
#: scan does freely) may add at most this fraction of the needed bytes.
SELECTION_GAP_BYTES = 0.25


def _selective(profile: P.Profile) -> P.Profile:
    bound = profile.max_amplification
    if bound is not None and bound <= SELECTION_GAP_BYTES:
        return profile
    return with_amplification(profile, SELECTION_GAP_BYTES)


def _skip(read: S.Read, n: int) -> int:
    """Pass over the next ``n`` rows; how many there were."""
    if read.ids is None:
        k = min(n, read.remaining or 0)
        read.remaining = (read.remaining or 0) - k
        for cs in read.cursors.values():
            for _, c in cs:
                c.skip(k)
        return k
    ids = read.ids.take(n, exact=False)
    if not ids.size:
        return 0
    if int(ids.min()) < 0 or int(ids.max()) >= read.n_types:
        raise FormatError(f"super column holds an ID outside 0..{read.n_types - 1}")
    counts = np.bincount(ids, minlength=read.n_types).tolist()
    for cs in read.cursors.values():
        for sid, c in cs:
            c.skip(counts[sid])
    return int(ids.size)


def _select(read: S.Read, ranges: RowRanges) -> tuple[dict[str, A.Array], int, int]:
    """In the read's thread: the rows of ``ranges`` (fewer when the file ends first), and
    the rows in the file."""
    parts: dict[str | None, list[A.Array]] = {p: [] for p in read.cursors}
    pos = rows = 0
    for a, b in ranges.pairs:
        if a > pos:
            pos += _skip(read, a - pos)
            if pos < a:
                break
        got = read.batch(b - a)
        if got is None:
            break
        cols, ids = got
        for p, arr in cols.items():
            parts[p].append(arr)
        rows += int(ids.size)
        pos += int(ids.size)
        if ids.size < b - a:
            break
    while True:  # the rest: every stream's end is still checked
        k = _skip(read, 1 << 30)
        if not k:
            break
        pos += k
    read.finish()
    out: dict[str, A.Array] = {}
    for p, lst in parts.items():
        if p is None:
            continue
        if not lst:
            empty = np.zeros(0, np.int32)
            lst = [read.column(read.cursors[p], empty, [0] * read.n_types)]
        out[p] = lst[0] if len(lst) == 1 else A.concat(lst)
    return out, rows, pos


async def scan_rows(target: Target, meta: FileMeta, plan: P.ScanPlan, paths: Sequence[str],
                    ranges: RowRanges, options: ReadOptions, *, verify_counts: bool = True
                    ) -> ScanResult:
    """The columns at ``paths`` for the rows of ``ranges``, in row order (``verify_counts``:
    see :func:`plan_rows`)."""
    t0 = time.perf_counter()
    cut, keep = plan_rows(meta, plan, ranges, verify_counts=verify_counts)
    read = S.start_read(target, meta, cut, options, paths, eager=True, keep=keep)
    worker = S.ReadThread()
    try:
        cols, rows, total = await S.run_step(read, worker, S.deadline_of(options), _select, read,
                                          ranges)
    finally:
        await S.close_read(read, worker)
    read.stats.wall = time.perf_counter() - t0
    return ScanResult(cols, rows, read.stats, cut, total_rows=total)


# ---------------------------------------------------------- filtered scans ---

@dataclasses.dataclass(frozen=True)
class _FilterWork:
    """What :func:`scan_filtered` needs beyond the :class:`FilterPlan` it explains."""

    expr: Expr
    wanted: tuple[str, ...]
    filter_paths: tuple[str, ...]  # filter columns read (some super type has them)
    surviving: RowRanges | None  # None: every row (nothing known to cut by)


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


def plan_filter(meta: FileMeta, filter: Any, wanted: Sequence[str], profile: P.Profile,
                available: tuple[int, int] | None, base: RowRanges | None = None
                ) -> tuple[FilterPlan, _FilterWork]:
    """Zones, pruning and the one-or-two-waves decision for a filtered scan (no I/O)."""
    expr = as_expr(filter)
    fpaths = list(dict.fromkeys(columns_of(expr)))
    names = _type_names(meta, fpaths)
    bound = bind(expr, names)
    spell = [P.format_path(p) for p in fpaths]
    absent = set(P.plan_scan(meta, spell, profile).missing_paths) if spell else set()
    read_f = tuple(p for p in spell if p not in absent)
    n = meta.row_count if len(meta.super_types) == 1 else None
    columns: dict[tuple[str, ...], tuple[list[int], list[Any]]] = {}
    fuzzy: dict[tuple[str, ...], tuple[list[int], list[Any], int]] = {}
    if n is not None:
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
    zones: tuple[Zone, ...] = ()
    surviving: RowRanges | None = None
    if n is not None:
        zones = (plan_zones(bound, n, columns, fuzzy) if columns or fuzzy
                 else (Zone(0, n, Truth.MAYBE),))
        surviving = RowRanges.of((z.start, z.stop) for z in zones if z.truth is not Truth.FALSE)
        if base is not None:
            surviving = _intersect(surviving, base)
    elif base is not None:
        surviving = base
    others = [p for p in wanted if p not in read_f]
    everything = list(dict.fromkeys([*wanted, *read_f]))
    full = P.plan_scan(meta, everything, profile, available=available)

    def cut(paths: list[str]) -> tuple[P.ScanPlan | None, int]:
        if not paths:
            return None, 0
        plan = P.plan_scan(meta, paths, profile, available=available)
        if surviving is None:
            return plan, plan.bytes_needed
        c, _ = plan_rows(meta, plan, surviving, verify_counts=False)
        return c, c.bytes_needed

    one, _ = cut(everything)
    wave1, bytes_wave1 = cut(list(read_f))
    _, bytes_rest = cut(others)
    saving = 0
    if others and read_f and surviving is not None:
        proven = RowRanges.of((z.start, z.stop) for z in zones if z.truth is Truth.TRUE)
        rest_plan = P.plan_scan(meta, others, profile)
        streams = [(ref.role, ref.segmap) for refs in rest_plan.streams for ref in refs]
        saving = late_saving(streams, selectable_segmaps(meta), surviving, proven)
    two = saving > 0 and prefer_two_waves(saving, profile)
    fplan = FilterPlan(
        filter=repr(expr), profile=profile, zones=zones, filter_columns=tuple(spell),
        pruned_columns=tuple(P.format_path(p) for p in [*columns, *fuzzy]),
        segments_total=len(full.segments),
        segments_pruned=len(full.segments) - (len(one.segments) if one else 0),
        bytes_all=full.bytes_needed, bytes_wave1=bytes_wave1, bytes_rest=bytes_rest,
        two_waves=two, late_saving=saving, wave1=wave1 if two else one)
    return fplan, _FilterWork(bound, tuple(wanted), read_f, surviving)


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
    return RowRanges(tuple(starts.tolist()), tuple(stops.tolist()))


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
                ranges: RowRanges | None, options: ReadOptions) -> ScanResult:
    plan = P.plan_scan(meta, paths, profile, available=available)
    if ranges is None:
        return await S.scan_columns(target, meta, plan, paths, options)
    return await scan_rows(target, meta, plan, paths, ranges, options, verify_counts=False)


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
    from ..filtering import evaluate

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
        res = await _read(target, meta, prof, available, wanted, RowRanges(), options)
        _add(stats, res.stats)
        stats.wall = time.perf_counter() - t0
        return ScanResult(res.columns, 0, stats, fplan)
    if not fplan.two_waves:
        every = list(dict.fromkeys([*wanted, *work.filter_paths]))
        res = await _read(target, meta, prof, available, every, work.surviving, options)
        _add(stats, res.stats)
        keep = _keep(work, res, limit)
        stats.wall = time.perf_counter() - t0
        return ScanResult({c: _gather(res.columns[c], keep) for c in wanted}, int(keep.size),
                          stats, fplan)
    first = await _read(target, meta, prof, available, list(work.filter_paths),
                        work.surviving, options)
    _add(stats, first.stats)
    keep = _keep(work, first, limit)
    others = [p for p in wanted if p not in first.columns]
    cols: dict[str, A.Array] = {}
    if others:
        rows = keep if work.surviving is None else _rows_of(work.surviving, keep)
        second = await _read(target, meta, prof, available, others,
                             runs_of(rows), options)
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
