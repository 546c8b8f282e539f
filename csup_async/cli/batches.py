"""Reading a source as batches of rows, file by file: what scan and cat print from.
A limit stops the reads once its rows are out; large projections stream segment by
segment, small ones are read whole with the parallel decoder."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

BATCH_ROWS = 65536
CAT_BATCH_ROWS = 16384
#: Segment-sized requests read ahead of the batch being decoded when streaming: enough
#: to keep a remote store busy, few enough that memory stays near one segment a column.
STREAM_PREFETCH = 4


def readers_to_read(src: Any, where: Any) -> list[Any]:
    """The readers to read: a dataset's files its filter's statistics do not rule out."""
    if not hasattr(src, "readers"):
        return [src]
    if where is None:
        return list(src.readers)
    return src.prune_by_statistics(where)[0]


def column_list(src: Any, columns: str | None) -> list[str]:
    """The canonical paths to print: the ones asked for, or every file's top-level columns."""
    import planner as P

    parsed = P.parse_columns(columns)
    if parsed is not None:
        return [spelling for spelling, _ in parsed]
    readers = src.readers if hasattr(src, "readers") else [src]
    seen: dict[str, None] = {}
    for r in readers:
        seen.update(dict.fromkeys(r._paths(None)))
    return list(seen)


#: Projections of a file that decode to at most this many bytes are read whole with the
#: parallel decoder (faster), then printed in batches; larger ones stream batch by batch.
WHOLE_SCAN_BYTES = 64 << 20


async def scan_batches(src: Any, cols: list[str], limit: int | None, stats: Any,
                   batch_rows: int = BATCH_ROWS, where: Any = None
                   ) -> AsyncIterator[dict[str, Any]]:
    """Columns of ``cols`` in batches of rows, file by file, stopping once ``limit`` rows are
    out (the batch readers are closed then, so nothing further is fetched).

    Memory holds one batch and what decoding it needs, or a whole projection
    when it decodes to at most ``WHOLE_SCAN_BYTES``.  ``stats`` accumulates
    what every file's reads cost.
    """
    from .. import arrays as A
    from ..dataset import absent_paths
    from ..types import NULL

    readers = readers_to_read(src, where)
    left = limit
    rows = min(batch_rows, left) if left is not None else batch_rows
    for r in readers:
        if left is not None and left <= 0:
            return
        present = [c for c in cols if c not in absent_paths(r, c)]
        if not present and where is not None:  # the matching rows' count, as nulls
            from planner import format_path
            from planner.filters import columns_of

            needed = [p for p in dict.fromkeys(format_path(c) for c in columns_of(where))
                      if p not in absent_paths(r, p)] or r._paths(None)
            async for _, n in _file_batches(r, needed, rows, left, stats, where):
                yield {c: A.null_array(NULL, n) for c in cols}
                if left is not None:
                    left -= n
            continue
        if not present:  # nothing of this file is printed but its row count, as nulls
            n = r.num_rows if r.num_rows is not None else await r.count_rows()
            n = n if left is None else min(n, left)
            for lo in range(0, n, rows):
                k = min(rows, n - lo)
                yield {c: A.null_array(NULL, k) for c in cols}
            if left is not None:
                left -= n
            continue
        async for got, n in _file_batches(r, present, rows, left, stats, where):
            # [null] beside [string] and the like print as the one type, as to_arrow gives
            yield {c: A.fold_nulls(got[c]) if c in got else A.null_array(NULL, n)
                   for c in cols}
            if left is not None:
                left -= n


async def _file_batches(r: Any, paths: list[str], rows: int, left: int | None, stats: Any,
                        where: Any = None) -> AsyncIterator[tuple[dict[str, Any], int]]:
    """One file's batches: (columns, rows), at most ``left`` rows in all (of the rows
    ``where`` keeps, when given)."""
    from planner.program import ScanProgram
    from planner.selection import FilterPlan

    plan = await r.plan(paths, filter=where)
    if isinstance(plan, ScanProgram):  # a CSUP reader's: its ScanPlan or FilterPlan
        plan = plan.plan
    last = None
    size = (plan.bytes_all if isinstance(plan, FilterPlan)
            else sum(s.mem_length for s in plan.segments))
    whole = left is None and size <= WHOLE_SCAN_BYTES
    if not whole:
        plan_per_segment(r)
    if whole or (left is not None and left <= BATCH_ROWS):  # only the first rows' segments
        res = await r.scan(paths, filter=where, limit=left)
        last = res.stats
        for lo in range(0, res.num_rows, rows):
            hi = min(lo + rows, res.num_rows)
            yield {c: a.slice(lo, hi) for c, a in res.columns.items()}, hi - lo
    else:
        # a limit within one batch may stop early: fetch only what each batch needs
        prefetch = 0 if left is not None and left <= BATCH_ROWS else STREAM_PREFETCH
        it = r.iter_batches(paths, batch_rows=rows, prefetch=prefetch, filter=where)
        async with contextlib.aclosing(it), contextlib.aclosing(one_ahead(it)) as ahead:
            async for batch in ahead:
                last = batch.stats
                got, n = batch.columns, batch.num_rows
                if left is not None and n >= left:
                    yield {c: a.slice(0, left) for c, a in got.items()}, left
                    break
                yield got, n
                if left is not None:
                    left -= n
    if last is not None:
        stats.requests += last.requests
        stats.bytes_read += last.bytes_read
        stats.bytes_needed += last.bytes_needed
        if stats.ttfb is None:
            stats.ttfb = last.ttfb


def plan_per_segment(r: Any) -> None:
    """Plan this reader's reads in requests of at most one segment's size, merging no
    gaps, for reading in batches: a read that stops after its first rows fetches
    little beyond the segments they lie in, and the read-ahead window (``concurrency``
    requests) holds that many segments, not that many merged tens of megabytes that
    stay until their last segment is decoded.

    Adjacent small segments may still share a request (up to the largest segment's
    size); no segment is split."""
    import dataclasses

    import planner as P

    cap = max((s.length for c in r.meta.columns for s in _segments(c)), default=1) or 1
    r.profile = dataclasses.replace(P.get_profile(r.profile), max_gap=0, max_request=cap,
                                    split_size=cap, min_part=0)


def _segments(col: Any) -> Any:
    from ..meta import iter_segmaps

    for segmap in iter_segmaps(col):
        yield from segmap


async def one_ahead(it: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``it``'s items, decoding the next while the caller prints this one (in a thread)."""
    nxt: asyncio.Future[Any] = asyncio.ensure_future(it.__anext__())
    try:
        while True:
            try:
                item = await nxt
            except StopAsyncIteration:
                return
            nxt = asyncio.ensure_future(it.__anext__())
            yield item
    finally:
        if not nxt.done():
            nxt.cancel()
        with contextlib.suppress(BaseException):
            await nxt
