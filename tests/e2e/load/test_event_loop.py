"""A service's event loop under concurrent scans: it never blocks, and threads stay put.

A service runs ``async with csup_async.open(url) as r: await r.scan(cols)`` for
many clients at once on one loop.  Here 200 such scans run concurrently in
asyncio's debug mode with ``slow_callback_duration = 0.01``, on a local file and
through the HTTP server fixture.  What fails the test cannot flake on a busy
machine: a thread started from the loop, a blocking call made on the loop thread
(a file read or open, ``time.sleep``, I/O on a blocking socket), and work that is
the library's on every request, not noise: callbacks that spent 10 ms of the loop
thread's CPU (a metadata parse, a decode, a cursor walk) counted, failing when a
tenth of the scans had one, or one callback spent 100 ms.  The 10 ms figure itself
is the benchmark's (``bench/bench_service.py``), not a test's: a shared machine
once made two callbacks of a healthy run cross it (issue #39 item 17).  And the
process's thread count, sampled while 100 and then 200 scans run, must not grow
with them (the pools are bounded; no read starts a thread).
"""

from __future__ import annotations

import asyncio
import builtins
import gc
import io
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import csup_async
from tests.support import servers

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

ROWS = 20_000
COLUMNS = ["id", "s"]


def _object() -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "s": f"row {i:06d}", "x": i * 0.5} for i in range(ROWS)],
                     segment_thresh=1 << 15)
    return out.getvalue()


@pytest.fixture(scope="module")
def data() -> bytes:
    return _object()


@pytest.fixture
def http_server(request: pytest.FixtureRequest) -> Any:
    if servers.nginx_binary() is not None:
        return request.getfixturevalue("nginx_server")
    return request.getfixturevalue("range_server")


@pytest.fixture(params=["local", "http"])
def url(request: pytest.FixtureRequest, data: bytes, tmp_path: Path) -> str:
    if request.param == "local":
        p = tmp_path / "svc.csup"
        p.write_bytes(data)
        return str(p)
    server = request.getfixturevalue("http_server")
    put = server.put("loop/svc.csup", data)
    return put if put.startswith("http") else server.url(put)


async def _scans(url: str, n: int, sample: Callable[[], None] | None = None) -> None:
    """``n`` concurrent open+scan requests, each checked for its rows."""
    done = asyncio.Event()

    async def one(i: int) -> None:
        async with csup_async.open(url) as r:
            got = await r.scan(COLUMNS)
        assert got.num_rows == ROWS
        k = i % ROWS
        assert got.column("id").slice(k, k + 1).to_pylist() == [k]

    async def sampler() -> None:
        while not done.is_set() and sample is not None:
            sample()
            await asyncio.sleep(0.002)

    watch = asyncio.ensure_future(sampler())
    try:
        tasks = []
        for i in range(n):  # requests arrive one at a time, as a server accepts them
            tasks.append(asyncio.ensure_future(one(i * 97)))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
    finally:
        done.set()
        await watch


class _LoopWatch:
    """What held the event loop's thread: callbacks that spent 10 ms of its CPU time
    (asyncio's debug mode reports wall time, which on a shared machine is mostly the
    wait for a core or for the GIL that pool threads hold; the garbage collector's
    passes, which land in whichever callback allocates at the time, are not counted),
    and threads started from it (``Thread.start`` waits until the new thread runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.loop_thread = threading.get_ident()
        self.heavy: list[str] = []
        self.starts: list[str] = []
        self.blocking: list[str] = []
        self.slow_wall = 0
        self.gc_cpu = self.gc_start = 0.0  # the collector's CPU on the loop thread
        run, start = asyncio.events.Handle._run, threading.Thread.start
        watch = self

        def timed(handle: asyncio.Handle) -> None:
            if not watch.on:
                return run(handle)
            cpu, wall, gc0 = time.thread_time(), time.perf_counter(), watch.gc_cpu
            try:
                return run(handle)
            finally:
                if time.perf_counter() - wall >= LIMIT:
                    watch.slow_wall += 1
                used = time.thread_time() - cpu - (watch.gc_cpu - gc0)
                if used >= LIMIT:
                    watch.heavy.append(f"{used * 1e3:.1f} ms of CPU: {handle!r}"[:400])

        def collecting(phase: str, info: dict[str, Any]) -> None:
            if threading.get_ident() != watch.loop_thread:
                return
            if phase == "start":
                watch.gc_start = time.thread_time()
            else:
                watch.gc_cpu += time.thread_time() - watch.gc_start

        def counted(thread: threading.Thread) -> None:
            if watch.on and threading.get_ident() == watch.loop_thread:
                watch.starts.append(thread.name)
            start(thread)

        monkeypatch.setattr(asyncio.events.Handle, "_run", timed)
        monkeypatch.setattr(threading.Thread, "start", counted)
        monkeypatch.setattr(gc, "callbacks", [*gc.callbacks, collecting])
        for owner, name in _BLOCKING:
            monkeypatch.setattr(owner, name, self._guard(owner, name))

    def _guard(self, owner: Any, name: str) -> Callable[..., Any]:
        """``owner.name`` recording each call made on the loop thread while watched (a
        socket call only on a blocking socket: the loop's own are non-blocking)."""
        real = getattr(owner, name)
        watch = self

        def guarded(*args: Any, **kwargs: Any) -> Any:
            if watch.on and threading.get_ident() == watch.loop_thread and not (
                    isinstance(owner, type) and issubclass(owner, socket.socket)
                    and not args[0].getblocking()):
                watch.blocking.append(f"{getattr(owner, '__name__', owner)}.{name}")
            return real(*args, **kwargs)

        return guarded

    def failures(self, scans: int) -> list[str]:
        """What fails a watched run of ``scans`` requests (see the module's docstring)."""
        out = [f"thread started on the loop: {n}" for n in self.starts[:5]]
        out += [f"blocking call on the loop: {b}" for b in sorted(set(self.blocking))]
        if len(self.heavy) * 10 >= scans:
            out += [f"{len(self.heavy)} callbacks of {LIMIT * 1e3:.0f} ms CPU", *self.heavy[:10]]
        out += [h for h in self.heavy if float(h.split(" ms")[0]) >= HEAVY * 1e3]
        return out


#: Calls that block the thread that makes them (the loop must leave them to threads);
#: not ``os.stat``, which debug mode itself calls on the loop (linecache, for the
#: traceback of each task it creates).
_BLOCKING: list[tuple[Any, str]] = [
    (os, "pread"), (os, "preadv"), (os, "read"), (os, "open"), (time, "sleep"),
    (builtins, "open"), (io, "open"), (socket.socket, "connect"), (socket.socket, "recv"),
    (socket.socket, "recv_into"), (socket.socket, "send"), (socket.socket, "sendall"),
]


LIMIT = 0.01  # seconds: asyncio's slow_callback_duration in this test
HEAVY = 0.1  # seconds of the loop thread's CPU in one callback: never noise


def _in_debug_loop(main: Callable[[], Awaitable[None]], watch: _LoopWatch) -> None:
    """Run ``main`` twice in one loop in asyncio's debug mode: the first time to warm up
    (imports, the loop's executor and the pools start their threads, once in a
    service's life), the second watched, with ``slow_callback_duration = 0.01``.

    Between the two, ``gc.freeze()``, as a service does once it has started (see
    docs/performance.md): a full collection walks every object the process holds
    (pytest's too, 50 ms here), a pause that is the heap's, not a request's."""

    async def run() -> None:
        loop = asyncio.get_running_loop()
        loop.slow_callback_duration = 10.0
        await main()
        # the loop's default executor (a local store's file reads) grows a thread at a
        # time when a burst finds none idle, up to its bound: at full size, as it is soon
        # after a service starts
        await asyncio.gather(*(asyncio.to_thread(time.sleep, 0.05) for _ in range(64)))
        gc.collect()
        gc.freeze()
        loop.slow_callback_duration = LIMIT
        watch.on = True
        try:
            await main()
        finally:
            watch.on = False
            gc.unfreeze()

    asyncio.run(run(), debug=True)


def test_200_concurrent_scans_never_block_the_loop(url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    watch = _LoopWatch(monkeypatch)
    _in_debug_loop(lambda: _scans(url, 200), watch)
    assert not watch.failures(200), "\n".join(watch.failures(200))


def test_threads_do_not_grow_with_concurrent_scans(url: str) -> None:
    names: set[str] = set()
    peak = {"n": 0}

    def sample() -> None:
        peak["n"] = max(peak["n"], threading.active_count())
        names.update(t.name for t in threading.enumerate())

    async def main() -> tuple[int, int]:
        await _scans(url, 100)  # the bounded pools (and the loop's executor) fill up
        await _scans(url, 100, sample)
        at_100, peak["n"] = peak["n"], 0
        await _scans(url, 200, sample)
        return at_100, peak["n"]

    at_100, at_200 = asyncio.run(main())
    assert not [n for n in names if n.startswith("csup-read")]
    assert at_200 <= at_100, sorted(names)


def _busy(seconds: float) -> None:
    """Work the loop thread's CPU for ``seconds`` (thread time, not wall time)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_watch_fails_a_callback_that_works_10_ms_on_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is only as good as its watch: a callback that spends 10 ms of
    the loop thread's CPU is caught; one that only waits 20 ms (a blocking sleep:
    wall time, no CPU) is not counted as work, nor is a 5 ms callback."""
    watch = _LoopWatch(monkeypatch)

    async def main() -> None:
        await asyncio.sleep(0)
        _busy(1.2 * LIMIT)  # one callback: from the resumption to the next await
        await asyncio.sleep(0)
        time.sleep(2 * LIMIT)
        await asyncio.sleep(0)
        _busy(LIMIT / 2)
        await asyncio.sleep(0)

    _in_debug_loop(main, watch)
    assert len(watch.heavy) == 1, watch.heavy
    assert float(watch.heavy[0].split(" ms")[0]) >= LIMIT * 1e3
    assert watch.slow_wall >= 2  # the sleep held the loop in wall time, not in CPU
    assert watch.blocking == ["time.sleep"]  # and it is a blocking call on the loop
    assert watch.failures(200) == ["blocking call on the loop: time.sleep"]
    assert "1 callbacks of 10 ms CPU" in watch.failures(10)  # a tenth of the requests


def test_the_watch_fails_one_callback_of_100_ms_and_blocking_reads(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    watch = _LoopWatch(monkeypatch)
    (tmp_path / "f").write_bytes(b"x" * 10)

    async def main() -> None:
        await asyncio.sleep(0)
        _busy(1.2 * HEAVY)
        await asyncio.sleep(0)
        with open(tmp_path / "f", "rb") as f:  # what the watch must see
            f.read()
        fd = os.open(tmp_path / "f", os.O_RDONLY)
        os.pread(fd, 4, 0)
        os.close(fd)
        await asyncio.to_thread(os.pread, os.open(tmp_path / "f", os.O_RDONLY), 4, 0)

    _in_debug_loop(main, watch)
    failures = watch.failures(10_000)
    assert [f for f in failures if f.startswith("blocking")] == [
        "blocking call on the loop: builtins.open", "blocking call on the loop: os.open",
        "blocking call on the loop: os.pread"], failures
    assert any(f.endswith("ms of CPU") is False and " ms of CPU: " in f for f in failures)


def test_the_watch_sees_a_thread_started_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    watch = _LoopWatch(monkeypatch)

    async def main() -> None:
        t = threading.Thread(target=lambda: None, name="started-on-the-loop")
        t.start()
        t.join()

    _in_debug_loop(main, watch)
    assert watch.starts == ["started-on-the-loop"]
