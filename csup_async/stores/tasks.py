"""Running coroutines together so that none outlives a failure.

``asyncio.gather`` leaves the other awaitables running when one fails; a reader that
did so would leave requests in flight (and connections busy) after raising.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def gather_or_cancel(coros: Iterable[Any]) -> list[Any]:
    """All results in order; on the first failure cancel the rest and wait for them
    (no task left behind), then raise that failure."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
