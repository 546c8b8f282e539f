"""The process's decode thread pool (one thread per core, made again in a forked child) and
the hand-off of CPU work off the event loop; every read's decoding runs here."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Callable
from typing import Any, TypeVar

from ..model.heap import keep_freed_memory

T = TypeVar("T")


_POOL: concurrent.futures.ThreadPoolExecutor | None = None


#: The decode pool's threads: one per core, two at least.
POOL_THREADS = max(2, os.cpu_count() or 2)


def decode_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's decode threads (one per core): jobs never block in them."""
    global _POOL
    if _POOL is None:
        keep_freed_memory()  # before the threads allocate (see csup_async.model.heap)
        _POOL = concurrent.futures.ThreadPoolExecutor(POOL_THREADS,
                                                      thread_name_prefix="csup-decode")
    return _POOL


def _forget_pool() -> None:
    """A forked child (a pre-forking server's worker) has none of its parent's threads:
    the parent's pool would take jobs no thread ever runs, so the child makes its own."""
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):  # POSIX: where processes fork
    os.register_at_fork(after_in_child=_forget_pool)


#: CPU work of this many bytes and more (a metadata section to parse: ~0.15 us a byte) goes
#: to the pool, off the event loop; less is done in place, cheaper than the hand-off.
OFF_LOOP_BYTES = 16 << 10


async def off_loop(nbytes: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, in the decode pool when it works on ``nbytes`` >= OFF_LOOP_BYTES
    (it must wait for nothing there), else here."""
    if nbytes < OFF_LOOP_BYTES:
        return fn(*args)
    return await asyncio.wrap_future(decode_pool().submit(fn, *args))
