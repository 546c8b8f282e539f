"""Row selection and filtered scans, run as the planner planned them: read only the
segments that hold the rows wanted.

A :class:`planner.waves.Wave` is one read, planned whole: :func:`run_wave` reads its
plan as it is (every row) or the rows of its ranges: direct value streams and those
below presence runs fetch only the segments that may hold those rows, every other
stream (presence, lengths, tags, the super column, the values below them) is read
whole so rows map to values exactly; the cursor tree then ``skip``s the rows between
ranges (a skipped segment is a placeholder of its ``count``, never fetched) and
``take``s the rest.

:func:`run_program` runs a :class:`planner.program.ScanProgram`.  A filtered one
(``planner.waves.plan_filter``) has its zones pruned and its first wave planned
before any I/O; the filter is evaluated exactly (``arrays.filtering.evaluate``) on
the rows read; the other projected columns were read with the filter's (one wave)
or are read afterwards for the matched rows only (two waves: one planner call,
``plan_next``, cuts the second wave to them).  A ``limit`` reads piece by piece, each
piece one planner call (``plan_piece``).  Nothing here plans a read.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np

from planner.program import ScanProgram
from planner.selection import FilterPlan, RowMap, RowRanges
from planner.waves import (
    FilterWork,
    RowMapRead,
    Wave,
    batch_pieces,
    plan_batch,
    plan_next,
    plan_piece,
)

from .. import arrays as A
from ..arrays.filtering import evaluate, take_sorted
from ..format.meta import FileMeta
from ..model.errors import FormatError
from ..model.types import PrimitiveType
from . import scan as S
from .jobs import Target
from .options import ReadOptions
from .result import ScanResult, ScanStats

__all__ = ["iter_filtered", "read_row_map", "run_program", "run_wave"]


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


async def run_wave(target: Target, meta: FileMeta, wave: Wave, options: ReadOptions
                   ) -> ScanResult:
    """Read ``wave`` as planned: its plan as it is, or the rows of its ranges in row order."""
    if wave.ranges is None:
        return await S.scan_columns(target, meta, wave.plan, list(wave.paths), options)
    t0 = time.perf_counter()
    rowmap = wave.rowmap
    by_map = rowmap is not None and len(meta.super_types) > 1
    partial = by_map and rowmap is not None and not rowmap.complete
    if by_map:  # the row map holds the super column's IDs: the read does not fetch them
        meta = dataclasses.replace(meta, super_column=())
    read = S.start_read(target, meta, wave.plan, options, list(wave.paths), eager=True,
                        keep=wave.keep, partial=partial)
    worker = S.ReadThread()
    try:
        if rowmap is not None and by_map:
            cols, rows, total = await S.run_step(read, worker, S.deadline_of(options),
                                                 _select_types, read, rowmap, wave.ranges)
        else:
            cols, rows, total = await S.run_step(read, worker, S.deadline_of(options),
                                                 _select, read, wave.ranges)
    finally:
        await S.close_read(read, worker)
    read.stats.wall = time.perf_counter() - t0
    return ScanResult(cols, rows, read.stats, wave.plan,
                      total_rows=None if partial else total)


async def read_row_map(target: Target, planned: RowMapRead, options: ReadOptions
                       ) -> tuple[RowMap, ScanStats]:
    """The row map of a file of several super types (``planner.waves.plan_row_map``: its
    super column decoded, whole or a prefix), and what reading it cost."""
    part = planned.meta
    n_types = len(part.super_types)
    read = S.start_read(target, part, planned.ranges, options, [], eager=True, ids_only=True)
    worker = S.ReadThread()
    try:
        _, ids = await S.run_step(read, worker, S.deadline_of(options), read.whole)
    finally:
        await S.close_read(read, worker)
    ids = np.asarray(ids, np.int64)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n_types):
        raise FormatError(f"super column holds an ID outside 0..{n_types - 1}",
                          path=target.path)
    return RowMap(ids, n_types, planned.complete), read.stats


# ---------------------------------------------------------- filtered scans ---

async def run_program(target: Target, meta: FileMeta, program: ScanProgram,
                      options: ReadOptions) -> ScanResult:
    """Run ``program`` as planned: a whole scan or a row selection is one wave; a
    filtered scan its first wave (or pieces), then the second one if it has one."""
    work = program.work
    if work is None:
        return await run_wave(target, meta, program.wave, options)
    return await _filtered(target, meta, program.plan, work, options, program.limit)


def _keep(work: FilterWork, res: ScanResult, limit: int | None) -> np.ndarray:
    """The positions of the rows of ``res`` the filter keeps (the first ``limit``)."""
    if not res.num_rows:
        return np.zeros(0, np.int64)
    by_path = {p: res.columns[c] for c, p in work.judged if c in res.columns}
    names = tuple((p, a.type.name) for p, a in by_path.items()
                  if isinstance(a.type, PrimitiveType) and a.type.name != "null")
    if sorted(names) != sorted(work.names):  # the filter was bound for other types
        raise FormatError(f"the filter's columns decoded as {dict(names)}, not as the "
                          f"file's super types say ({dict(work.names)})")
    keep = np.flatnonzero(evaluate(work.expr, by_path, res.num_rows))
    return keep if limit is None else keep[:limit]


async def _filtered(target: Target, meta: FileMeta, fplan: FilterPlan, work: FilterWork,
                    options: ReadOptions, limit: int | None) -> ScanResult:
    """The rows the filter is true for, in file order (the first ``limit``): the first
    wave read and judged, then each wave the planner plans from the matches so far (a
    limit's next piece; ``plan_piece``), then the second wave (if any) for the rows
    kept (``plan_next``).  A limit's pieces read the surviving zones in file order
    until enough rows matched; the rest of the file is never read."""
    t0 = time.perf_counter()
    stats = ScanStats()
    parts: dict[str, list[A.Array]] = {c: [] for c in work.first_columns}
    matched: list[tuple[RowRanges | None, np.ndarray]] = []
    found = 0
    wave: Wave | None = work.first
    while wave is not None:
        res = await run_wave(target, meta, wave, options)
        stats.add(res.stats)
        if work.pieces is not None and wave.ranges is not None and (
                res.num_rows != wave.ranges.rows):
            raise FormatError(f"read {res.num_rows} rows for the {wave.ranges.rows} of a "
                              "piece")
        kept = _keep(work, res, None if limit is None else limit - found)
        for c in parts:
            parts[c].append(take_sorted(res.columns[c], kept))
        matched.append((wave.ranges, kept))
        found += int(kept.size)
        wave = plan_piece(meta, work, wave, None if limit is None else limit - found)
    cols = {c: lst[0] if len(lst) == 1 else A.concat(lst) for c, lst in parts.items()}
    if work.rest is not None:
        last = plan_next(meta, work, matched)
        second = await run_wave(target, meta, last, options)
        stats.add(second.stats)
        if second.num_rows != found:
            raise FormatError(f"the second wave read {second.num_rows} rows for "
                              f"{found} selected")
        cols.update(second.columns)
    stats.wall = time.perf_counter() - t0
    return ScanResult({c: cols[c] for c in work.wanted}, found, stats, fplan)


async def iter_filtered(target: Target, meta: FileMeta, fplan: FilterPlan, work: FilterWork,
                        options: ReadOptions, batch_rows: int, prefetch: bool = True
                        ) -> AsyncIterator[ScanResult]:
    """``iter_batches(filter=)`` on a file whose statistics rule zones out: the surviving
    rows in file order, in pieces of ``batch_rows`` rows, each read (the filter's and
    projected columns of the segments holding it; ruled-out zones never) and filtered;
    a piece's matches are one batch (not yielded when none).  Memory holds a piece and,
    with ``prefetch``, the next one, whose read starts before the batch is handed on."""
    pieces = batch_pieces(work, batch_rows)
    stats = ScanStats()
    t0 = time.perf_counter()

    async def read(piece: RowRanges) -> ScanResult:
        return await run_wave(target, meta, plan_batch(meta, work, piece), options)

    pending: asyncio.Task[ScanResult] | None = None
    try:
        for i, piece in enumerate(pieces):
            res = await pending if pending is not None else await read(piece)
            pending = None
            if prefetch and i + 1 < len(pieces):
                pending = asyncio.ensure_future(read(pieces[i + 1]))
            if res.num_rows != piece.rows:
                raise FormatError(f"read {res.num_rows} rows for the {piece.rows} of a piece")
            stats.add(res.stats)
            kept = _keep(work, res, None)
            if not kept.size:
                continue
            stats.wall = time.perf_counter() - t0
            yield ScanResult({c: take_sorted(res.columns[c], kept) for c in work.wanted},
                             int(kept.size), dataclasses.replace(stats), fplan)
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
