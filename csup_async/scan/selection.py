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
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.coalescing import plan_ranges
from planner.filters import bind
from planner.selection import (
    FilterPlan,
    RowMap,
    RowRanges,
)
from planner.waves import (
    FilterWork,
    next_piece,
    pieces_of,
    plan_filter,
    plan_next,
    plan_piece,
    plan_rows,
    rows_of,
    runs_of,
    super_prefix,
    surviving_runs,
)

from .. import arrays as A
from ..format.meta import FileMeta
from ..model.errors import FormatError
from ..model.types import PrimitiveType
from . import scan as S
from .jobs import Target
from .options import ReadOptions
from .result import ScanResult, ScanStats

__all__ = ["iter_filtered", "next_piece", "plan_filter", "plan_rows", "runs_of",
           "scan_filtered", "scan_rows", "surviving_runs"]


# ---------------------------------------------------------- row selection ---




def _indices(ranges: RowRanges, n: int) -> np.ndarray:
    """The row numbers of ``ranges`` below ``n`` as one sorted int64 array."""
    starts = np.asarray(ranges.starts, np.int64)
    stops = np.minimum(np.asarray(ranges.stops, np.int64), n)
    keep = starts < stops
    return A.range_indices(starts[keep], stops[keep] - starts[keep])


def _select(read: S.Read, ranges: RowRanges) -> tuple[dict[str, A.Array], int, int]:
    """In the read's thread: the rows of ``ranges`` (fewer when the file ends first), and
    the rows in the file.  Each cursor passes over every row once and gathers the
    selected ones (:meth:`~.cursors.Cursor.gather`): one vectorised step per node and
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


async def _planned(target: Target, meta: FileMeta, work: FilterWork, paths: list[str],
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


def _keep(work: FilterWork, res: ScanResult, limit: int | None) -> np.ndarray:
    from ..arrays.filtering import evaluate

    by_path = {P.parse_path(c): a for c, a in res.columns.items()}
    # bound before the scan by the file's one super type; several: by the arrays read
    typed = work.expr if work.typed else bind(
        work.expr, {p: a.type.name for p, a in by_path.items()
                    if isinstance(a.type, PrimitiveType)})
    keep = np.flatnonzero(evaluate(typed, by_path, res.num_rows))
    return keep if limit is None else keep[:limit]


async def scan_filtered(target: Target, meta: FileMeta, fplan: FilterPlan, work: FilterWork,
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
        assert work.rest is not None and tuple(others) == work.rest_paths
        nxt = plan_next(meta, work.rest, work.surviving, keep, work.rowmap)
        second = await run_rows(target, meta, nxt.plan, nxt.keep, others, nxt.ranges,
                                options, work.rowmap)
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


async def _scan_limited(target: Target, meta: FileMeta, fplan: FilterPlan, work: FilterWork,
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
        wave = plan_piece(meta, first_plan, runs, at, limit - found, cap, work.rowmap)
        piece, at = wave.ranges, wave.at
        cap *= LIMIT_GROWTH
        res = await run_rows(target, meta, wave.plan, wave.keep, first_paths, piece,
                             options, work.rowmap)
        _add(stats, res.stats)
        if res.num_rows != piece.rows:
            raise FormatError(f"read {res.num_rows} rows for the {piece.rows} of a piece")
        kept = _keep(work, res, limit - found)
        for c in parts:
            parts[c].append(_gather(res.columns[c], kept))
        rows.append(rows_of(piece, kept) if piece.rows else kept)
        found += int(kept.size)
        if found >= limit or at[0] >= len(runs):
            break
    cols = {c: lst[0] if len(lst) == 1 else A.concat(lst) for c, lst in parts.items()}
    if two:
        assert work.rest is not None and tuple(others) == work.rest_paths
        nxt = plan_next(meta, work.rest, None, np.concatenate(rows), work.rowmap)
        second = await run_rows(target, meta, nxt.plan, nxt.keep, others, nxt.ranges,
                                options, work.rowmap)
        _add(stats, second.stats)
        if second.num_rows != found:
            raise FormatError(f"the second wave read {second.num_rows} rows for "
                              f"{found} selected")
        cols.update(second.columns)
    stats.wall = time.perf_counter() - t0
    return ScanResult({c: cols[c] for c in wanted}, found, stats, fplan)


async def iter_filtered(target: Target, meta: FileMeta, fplan: FilterPlan, work: FilterWork,
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
    pieces = pieces_of(work.surviving, batch_rows)
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


