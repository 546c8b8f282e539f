"""Running coroutines together so that none outlives a failure, and to their end from
synchronous code.

``asyncio.gather`` leaves the other awaitables running when one fails; a reader that
did so would leave requests in flight (and connections busy) after raising.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


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


def run_to_end(fn: Callable[[], Awaitable[T]], thread_name: str = "csup-sync") -> T:
    """Run the coroutine ``fn()`` to its end from synchronous code: here with
    ``asyncio.run``, or in a thread of its own when this thread already runs an event
    loop (a synchronous verb called from async code, which may not nest loops)."""
    async def main() -> T:
        return await fn()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=thread_name) as pool:
        return pool.submit(lambda: asyncio.run(main())).result()
