"""One process-wide event loop in a thread of its own, for the synchronous face.

A script or a notebook cell wants ``csup_async.read(url)`` without an event loop
of its own, and a notebook already runs one in its thread, so ``asyncio.run``
cannot be used there.  As fsspec does for its filesystems, the async core runs
on one loop in a daemon thread made on first use: a call submits a coroutine to
it and waits, in the caller's thread, for the outcome.  One loop for the
process means one set of shared stores, so connection pools outlive a call.

Ctrl-C in the waiting thread cancels the coroutine's task and waits (a short,
bounded time) for it to unwind, so its requests are cancelled and their
connections released before KeyboardInterrupt reaches the caller.  An async
iteration (``iter_batches``) runs in one task from start to end (its prefetch
and deadline stay with it) and hands items over one at a time.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from ..model.errors import CsupError
from ..model.heap import keep_freed_memory

__all__ = ["AsyncIteration", "io_loop", "run", "stop_io_loop"]

T = TypeVar("T")

#: Seconds a cancelled call may take to unwind (its requests, its connections).
CANCEL_GRACE = 10.0

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid = 0


def io_loop() -> asyncio.AbstractEventLoop:
    """The I/O loop, started on first use (and again in a forked child)."""
    global _loop, _thread, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            # a daemon: the interpreter's exit does not wait for it; stop_io_loop
            # (at exit) closes its stores and stops it cleanly
            keep_freed_memory()  # before the thread allocates (see csup_async.model.heap)
            thread = threading.Thread(target=main, name="csup-io", daemon=True)
            thread.start()
            started.wait()
            _loop, _thread, _pid = loop, thread, os.getpid()
        return _loop


def _refuse_on_loop_thread() -> None:
    if _thread is not None and threading.current_thread() is _thread:
        raise CsupError("a synchronous csup_async call was made on the csup-async I/O "
                        "thread (it would wait for itself): await the async API there")


class _Call:
    """One coroutine run on the I/O loop, its outcome handed to the waiting thread."""

    def __init__(self, coro: Coroutine[Any, Any, Any], loop: asyncio.AbstractEventLoop) -> None:
        self.coro, self.loop = coro, loop
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False

    def start(self) -> None:
        self.loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        if self.cancelled:  # cancelled before it began: never run it
            self.coro.close()
            self.done.set()
            return
        self.task = self.loop.create_task(self._main())

    async def _main(self) -> None:
        try:
            self.value = await self.coro
        except BaseException as e:  # handed to the caller's thread, raised there
            self.error = e
        finally:
            self.done.set()

    def cancel(self) -> None:
        def cancel() -> None:
            self.cancelled = True
            if self.task is not None:
                self.task.cancel()

        self.loop.call_soon_threadsafe(cancel)

    def wait(self) -> Any:
        try:
            self.done.wait()
        except BaseException:  # Ctrl-C (or any exception) in the waiting thread
            self.cancel()
            self.done.wait(CANCEL_GRACE)
            raise
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.value


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the I/O loop and return its result in this thread.

    Works with or without an event loop running in this thread (a notebook).
    KeyboardInterrupt cancels it (its task unwinds before this returns).
    """
    try:
        _refuse_on_loop_thread()
        loop = io_loop()
    except BaseException:
        coro.close()
        raise
    call = _Call(coro, loop)
    call.start()
    result: T = call.wait()
    return result


class AsyncIteration(Iterator[T]):
    """A synchronous iterator over an async iterator, which runs in one task.

    The task starts with the first ``next`` and takes the next item only when
    asked (the async iterator's own read-ahead still works in the background);
    ``close`` (or the end of a ``with`` block, or garbage collection) cancels it
    and waits for it to unwind, closing the async iterator.
    """

    def __init__(self, make: Callable[[], AsyncIterator[T]]) -> None:
        self._make = make
        # queue.Queue: its blocking get is interrupted by Ctrl-C (it waits on a lock)
        self._out: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._want: asyncio.Queue[bool] | None = None
        self._call: _Call | None = None
        self._finished = False
        self._pid = os.getpid()  # the process whose I/O loop runs the task, once begun

    def _in_fork(self) -> bool:
        """Whether this is a forked child of the process that began the iteration: the
        task and its loop's thread stayed in the parent (a child has no such thread),
        so a ``next`` would wait for an item nothing will ever put."""
        return self._call is not None and self._pid != os.getpid()

    def _begin(self) -> _Call:
        _refuse_on_loop_thread()
        loop = io_loop()
        ready = threading.Event()

        async def pump() -> None:
            self._want = asyncio.Queue()
            ready.set()
            it = self._make()
            try:
                while await self._want.get():
                    try:
                        item = await anext(it)
                    except StopAsyncIteration:
                        self._out.put(("end", None))
                        return
                    except BaseException as e:  # raised in the consumer's thread
                        self._out.put(("error", e))
                        return
                    self._out.put(("item", item))
            finally:
                close = getattr(it, "aclose", None)
                if close is not None:
                    await close()

        call = _Call(pump(), loop)
        call.start()
        ready.wait()
        return call

    def __iter__(self) -> AsyncIteration[T]:
        return self

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        if self._in_fork():
            self._finished = True
            self._call = None  # the parent's: never cancelled or waited for from here
            raise CsupError(
                f"this batch stream was started in process {self._pid}; a forked child "
                "cannot continue it (its reads run on the parent's I/O thread): start a "
                "new one in the child, as read() and scan() do")
        if self._call is None:
            self._pid = os.getpid()
            self._call = self._begin()
        want = self._want
        assert want is not None
        self._call.loop.call_soon_threadsafe(want.put_nowait, True)
        try:
            kind, value = self._out.get()
        except BaseException:
            self._finished = True
            self._call.cancel()
            self._call.done.wait(CANCEL_GRACE)
            raise
        if kind == "item":
            item: T = value
            return item
        self._finished = True
        self._call.done.wait(CANCEL_GRACE)
        if kind == "error":
            raise value
        raise StopIteration

    def close(self) -> None:
        """Stop the iteration: its task is cancelled and waited for."""
        forked = self._in_fork()
        self._finished = True
        call, self._call = self._call, None
        if call is not None and not forked and not call.done.is_set():
            call.cancel()
            call.done.wait(CANCEL_GRACE)

    def __enter__(self) -> AsyncIteration[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self, _getpid: Any = os.getpid) -> None:
        # (getpid bound at definition: at interpreter exit the module's globals are gone)
        call = getattr(self, "_call", None)
        if getattr(self, "_pid", None) != _getpid():
            return  # a forked child's copy: the task is the parent's
        if call is not None and not call.done.is_set() and not call.loop.is_closed():
            call.cancel()  # no wait: the collector may run on any thread


@atexit.register
def stop_io_loop() -> None:
    """Close the I/O loop's shared stores, stop the loop and join its thread."""
    global _loop, _thread
    with _lock:
        loop, thread, pid = _loop, _thread, _pid
        _loop = _thread = None
    if loop is None or thread is None or pid != os.getpid() or loop.is_closed():
        return
    if threading.current_thread() is thread:
        return

    async def finish() -> None:
        from ..stores import close_stores

        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await close_stores()
        await loop.shutdown_asyncgens()

    # exiting: never fail the interpreter's exit over a pool
    with contextlib.suppress(BaseException):
        asyncio.run_coroutine_threadsafe(finish(), loop).result(CANCEL_GRACE)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(CANCEL_GRACE)
    if not thread.is_alive():
        loop.close()
