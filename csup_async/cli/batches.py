"""Reading a source as batches of rows: what scan and cat print from.

Both drive the one scanner (:meth:`csup_async.Dataset.iter_batches`, one file
being a one-fragment dataset); this module only chooses how: a limit stops the
reads once its rows are out, large projections stream segment by segment, small
ones are read whole with the parallel decoder, and the next batch decodes while
this one prints."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..model.options import DEFAULT_BATCH_ROWS as BATCH_ROWS

CAT_BATCH_ROWS = 16384
#: Segment-sized requests read ahead of the batch being decoded when streaming: enough
#: to keep a remote store busy, few enough that memory stays near one segment a column.
STREAM_PREFETCH = 4
#: Projections of a file that decode to at most this many bytes are read whole with the
#: parallel decoder (faster), then printed in batches; larger ones stream batch by batch.
WHOLE_SCAN_BYTES = 64 << 20


async def scan_batches(scanner: Any, cols: list[str], limit: int | None, stats: Any,
                       batch_rows: int = BATCH_ROWS, where: Any = None,
                       **metering: Any) -> AsyncIterator[dict[str, Any]]:
    """Columns of ``cols`` in batches of rows, file by file, stopping once ``limit`` rows are
    out (the batch readers are closed then, so nothing further is fetched).

    Memory holds one batch and what decoding it needs, or a whole projection
    when it decodes to at most ``WHOLE_SCAN_BYTES``.  ``stats`` accumulates
    what every file's reads cost.  ``metering``: ``max_requests``, ``max_bytes`` and
    ``on_progress`` of :meth:`Dataset.iter_batches`.
    """
    from .. import arrays as A

    # a limit within one batch may stop early: fetch only what each batch needs
    early = limit is not None and limit <= BATCH_ROWS
    it = scanner.iter_batches(cols, batch_rows=batch_rows, filter=where, limit=limit,
                              prefetch=0 if early else STREAM_PREFETCH,
                              read_whole_below=WHOLE_SCAN_BYTES if limit is None else 0,
                              files_ahead=1, segment_requests=True, stats=stats,
                              **metering)
    async with contextlib.aclosing(it), contextlib.aclosing(one_ahead(it)) as ahead:
        async for batch in ahead:
            # [null] beside [string] and the like print as the one type, as to_arrow gives
            yield {c: A.fold_nulls(a) for c, a in batch.columns.items()}


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
