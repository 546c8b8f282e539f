"""How ``Dataset.iter_batches`` reads its files: small ones whole (a few ahead), large
ones streamed, and, under a budget or progress callback, every file planned first.

Kept apart from :mod:`.dataset` (the verbs) because this is the one verb with its own
read-ahead machinery; the verb itself, and its arguments, stay on ``Dataset``.  Each file
is read with its part of the dataset's request (:func:`each_file`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from planner.filters import Expr
from planner.request import NO_BUDGET, ScanRequest

from ..model.progress import Meter, Planned, tracking
from ..readers.reader import ScanResult, ScanStats
from .fragment import Fragment, per_segment
from .results import sliced

__all__ = ["FILES_AHEAD", "READ_WHOLE_BELOW", "SMALL_OBJECT", "decodes_small", "each_file",
           "iter_metered"]

#: Files whose projection decodes to at most this many bytes are read whole by
#: ``iter_batches`` (the parallel decoder, a few files ahead) and cut into batches.
READ_WHOLE_BELOW = 8 << 20
#: Files ``iter_batches`` reads ahead of the one whose batches are being yielded.
FILES_AHEAD = 4
SMALL_OBJECT = 1 << 20  # read whole without planning first: it cannot decode to much


def each_file(cols: Sequence[str], expr: Expr | None, **more: Any) -> ScanRequest:
    """A file's part of a dataset's request: its columns and filter, in their one form
    already (the dataset's edge made them), no budget (the dataset meters every file)."""
    return ScanRequest(tuple(cols) or None, expr, budget=NO_BUDGET, **more)


async def iter_metered(frags: list[Fragment], each: ScanRequest, limit: int | None,
                       read_whole_below: int, files_ahead: int, segment_requests: bool,
                       small: Callable[[Fragment], bool], stats: ScanStats | None,
                       meter: Meter) -> AsyncIterator[ScanResult]:
    """``Dataset.iter_batches`` with a budget or progress: every file planned (read
    whole, or streamed) before the first request, then read as planned.  ``each``: a
    file's request (the dataset's columns, filter, batch_rows and prefetch)."""
    expr, batch_rows = each.filter, each.batch_rows
    if expr is None and limit is not None:  # the first files' row counts cover it
        upto, seen = len(frags), 0
        for k, f in enumerate(frags):
            if seen >= limit:
                upto = k
                break
            seen += f.num_rows or 0  # unknown: it may hold none of them
        frags = frags[:upto]
    meters = [meter.file(f.path) for f in frags]
    whole: list[Planned | None] = []
    figures: list[tuple[int, int]] = []
    first_rows = limit is not None and limit <= batch_rows
    with tracking(meter.file(counted=False)):
        for f, fm in zip(frags, meters, strict=True):
            with tracking(fm):
                if first_rows and segment_requests and f.reader is not None:
                    per_segment(f.reader)
                if small(f) or first_rows or await decodes_small(
                        f, each, read_whole_below):
                    p = await f.prepare(each.but(limit=limit))
                    whole.append(p)
                    figures.append(p.figures)
                else:
                    whole.append(None)
                    figures.append(await f.batch_figures(
                        each, segment_requests))
    meter.expect([(fm, *fig) for fm, fig in zip(meters, figures, strict=True)])

    async def run(j: int) -> ScanResult:
        p = whole[j]
        assert p is not None
        with tracking(meters[j]):
            res = await p.run()
        meters[j].done()
        return res  # type: ignore[no-any-return]

    left = limit
    ahead: dict[int, asyncio.Task[ScanResult]] = {}
    try:
        for i, f in enumerate(frags):
            if left is not None and left <= 0:
                break
            for j in range(i, min(i + 1 + files_ahead, len(frags))):
                if j not in ahead and whole[j] is not None:
                    ahead[j] = asyncio.ensure_future(run(j))
            task = ahead.pop(i, None)
            if task is not None:
                res = await task
                n = res.num_rows if left is None else min(res.num_rows, left)
                for batch in sliced(res, n, batch_rows, stats):
                    yield batch
                if left is not None:
                    left -= n
                continue
            last: ScanStats | None = None
            it = f.batches_with(each.but(limit=left), segment_requests)
            async with contextlib.aclosing(it):
                while True:
                    with tracking(meters[i]):  # the read starts at the first step
                        b = await anext(it, None)
                    if b is None:
                        break
                    last = b.stats
                    yield b
                    if left is not None:
                        left -= b.num_rows
            meters[i].done()
            if stats is not None and last is not None:
                stats.add(last)
        meter.finish()
    finally:
        for t in ahead.values():
            t.cancel()
        if ahead:
            await asyncio.gather(*ahead.values(), return_exceptions=True)

async def decodes_small(f: Fragment, each: ScanRequest, below: int) -> bool:
    """Whether ``f``'s part of a dataset's request decodes to at most ``below`` bytes
    (read whole then, by the parallel decoder)."""
    if below <= 0:
        return False
    from planner.program import ScanProgram
    from planner.selection import FilterPlan

    plan = await f.plan_with(each)
    if plan is None:
        return True
    if isinstance(plan, ScanProgram):  # a CSUP file's: the plan it runs
        plan = plan.plan
    size = (plan.bytes_all if isinstance(plan, FilterPlan)
            else sum(s.mem_length for s in plan.segments))
    return bool(size <= below)
