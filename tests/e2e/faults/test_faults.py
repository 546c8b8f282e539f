"""Faults: whole scans through a fault-injecting proxy in front of real servers.

Every case runs the full path a user runs: ``csup_async.open(url)`` (the tail
read), ``scan()`` of every column, and ``iter_batches()`` of every column, with
the proxy (tests/support/fault_proxy.py) misbehaving on cue in front of nginx (the
HTTP store) or moto (the S3 store).  Each case either returns exactly the
rows written, after bounded retries, or raises the typed error it names, in
bounded time; and afterwards no asyncio task is left, the proxy has no open
connection (both sides), and the traced memory peak stayed under its bound.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import random
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import quote

import pytest
import pytest_asyncio

import csup_async
import planner as P
from bench.net import free_port
from csup_async import CsupError, ObjectChangedError, StoreError, StoreTimeoutError
from csup_async.readers.reader import ScanResult
from csup_async.stores import HTTPStore, RetryPolicy, Store, store_for
from tests.support import servers
from tests.support.fault_proxy import Fault, FaultProxy, Request

RETRY = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05, total_timeout=8)
READ_TIMEOUT = 0.4  # seconds of silence before a read gives up (then retries)
CASE_BOUND = 20.0  # wall seconds any one case may take, retries included (noisy CI)
BATCH_ROWS = 1500
# Traced memory (tracemalloc, every thread: the scan, the proxy and, for S3,
# moto's server in-process) under faults may peak at most this much above the
# same scan's peak without faults: retries must not pile up buffers.
MEMORY_SLACK = 2.5  # a resumed body can briefly hold a second buffer: bounded, not 1:1
MEMORY_EXTRA = 1 << 20
# (tracing costs ~6x: every scan is traced; iter_batches for the faults that hit bodies)
TRACE_BATCHES = {"reset-mid-body", "truncated-body", "stall-beyond-timeout"}


def _rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"id": i, "name": f"user-{rng.getrandbits(48):012x}", "score": rng.random(),
             "tags": [rng.getrandbits(16) for _ in range(i % 4)],
             "note": None if i % 7 else f"n{i}"} for i in range(n)]


ROWS = _rows(6_000, seed=7)


def _encode(rows: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    # our layout (made at import, before any fixture): its reads resume a broken body
    csup_async.write(out, rows, segment_thresh=16 << 10, target="csup-async")
    return out.getvalue()


DATA = _encode(ROWS)
# The same object, changed and of the same size: what a replacement between the
# tail read and the data reads looks like at its most dangerous.
_OTHER = [dict(r, id=r["id"] + 1) if r["id"] == 5 else r for r in ROWS]
OTHER = _encode(_OTHER)
# Small tail and requests, so a scan makes several data requests after open.
PROFILE = dataclasses.replace(P.get_profile("http"), tail_min=4096, tail_max=16384,
                              max_gap=16384, split_size=48 << 10, max_request=48 << 10)
OPTIONS: dict[str, Any] = {"profile": PROFILE, "retry": RETRY, "read_timeout": READ_TIMEOUT,
                           "connect_timeout": 2.0}


class Backend:
    """One real server behind a FaultProxy, and how to address an object through it."""

    def __init__(self, kind: str, proxy: FaultProxy, server: Any) -> None:
        self.kind, self.proxy, self.server = kind, proxy, server
        self.shared = self.store()
        # These cases test retries and timeouts: a hedge (tests/unit/stores/test_hedge.py)
        # would answer a stalled request before its timeout once the store is warm.
        self.shared.hedge = None

    def put(self, name: str, data: bytes) -> None:
        self.server.put(name, data)

    def url(self, name: str) -> str:
        if self.kind == "http":
            return self.proxy.url(name)
        return f"s3://{servers.MotoS3.BUCKET}/{name}"

    def store_options(self) -> dict[str, Any]:
        opts = {k: v for k, v in OPTIONS.items() if k != "profile"}
        if self.kind == "http":
            return opts
        return {**opts, **self.server.store_options(), "endpoint_url": self.proxy.endpoint}

    def options(self) -> dict[str, Any]:
        return {"profile": PROFILE, **self.store_options()}

    def store(self) -> Store:
        return store_for(self.url("x"), **self.store_options())[0]


# One event loop for the module, so each backend's store (its client, its pool)
# is made once: botocore takes ~0.5 s to build an S3 client.
pytestmark = [pytest.mark.usefixtures("own_layout"), pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["http", "s3"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "http":
        server = request.getfixturevalue("nginx_server")
        port = server.port
    else:
        server = request.getfixturevalue("moto_s3")
        port = int(server.endpoint.rsplit(":", 1)[1])
    proxy = FaultProxy(port).start()
    b = Backend(request.param, proxy, server)
    try:
        async with b.shared:
            yield b
        await _assert_clean(proxy)  # closing the store closed every connection
    finally:
        proxy.stop()


@pytest.fixture
def obj(backend: Backend) -> str:
    """A fresh object holding DATA, and a proxy with no faults or log left over."""
    name = f"faults-{uuid.uuid4().hex[:10]}.csup"
    backend.put(name, DATA)
    backend.proxy.reset()
    return name


async def _scan(url: str, **opts: Any) -> list[dict[str, Any]]:
    async with csup_async.open(url, **opts) as r:
        return (await r.scan()).to_pylist()


async def _scan_checked(url: str, **opts: Any) -> None:
    async with csup_async.open(url, **opts) as r:
        result = await r.scan()
    assert result.num_rows == len(ROWS)
    for i in range(0, len(ROWS), BATCH_ROWS):  # compare piecewise: no second copy held
        sub = {p: a.slice(i, i + BATCH_ROWS) for p, a in result.columns.items()}
        got = ScanResult(sub, min(BATCH_ROWS, len(ROWS) - i)).to_pylist()
        assert got == ROWS[i : i + BATCH_ROWS], "wrong data"


async def _batches_checked(url: str, **opts: Any) -> None:
    pos = 0
    async with csup_async.open(url, **opts) as r:
        async for batch in r.iter_batches(batch_rows=BATCH_ROWS):
            assert batch.to_pylist() == ROWS[pos : pos + batch.num_rows], "wrong data"
            pos += batch.num_rows
    assert pos == len(ROWS)


MODES: dict[str, Callable[..., Awaitable[None]]] = {
    "scan": _scan_checked, "iter_batches": _batches_checked}
TIMINGS: dict[str, float] = {}  # case -> slowest wall seconds (printed by the summary test)
PEAKS: dict[str, int] = {}  # case -> largest traced memory peak
CLEAN_PEAKS: dict[tuple[str, str], int] = {}  # (backend, mode) -> peak without faults


async def _assert_clean(proxy: FaultProxy | None, since: int | None = None) -> None:
    """No task, no connection left behind (with ``since``: none opened after that mark).

    Readers opened without a store share the loop's store: its pool may keep idle
    connections, but none may still be checked out; closing the shared stores
    must then leave nothing open.
    """
    assert asyncio.all_tasks() == {asyncio.current_task()}, asyncio.all_tasks()
    from csup_async.stores.shared import shared_stores

    for store in shared_stores():
        connector = getattr(store, "connector", None)
        assert connector is None or not connector._acquired, "a connection still in use"
    await csup_async.close_stores()
    if proxy is not None:
        ok = await asyncio.to_thread(proxy.wait_idle, 5.0, since)
        assert ok, (f"{proxy.open_connections} client / {proxy.upstream_connections} "
                    "upstream connections still open at the proxy")


def _for(key: str, kind: str | None) -> Callable[[Request], bool]:
    """Match the requests of one object (of one kind: tail, data) and no other."""
    path = "/" + quote(key)
    return lambda r: r.target.split("?")[0].endswith(path) and kind in (None, r.kind)


def _no_checked_out_connections(store: Store) -> None:
    connector = getattr(store, "connector", None)
    if connector is not None:  # the aiohttp stores: the pool has nothing checked out
        assert not connector._acquired, connector._acquired


async def _run_case(backend: Backend, name: str, case: str, faults: list[Fault],
                    match: str | None, expect: type[CsupError] | None,
                    setup: Callable[[str], None] | None = None,
                    check_memory: bool = True) -> dict[str, float]:
    """Both modes under the same faults, through the backend's shared store; wall
    seconds per mode.  The store's connections stay pooled (the module's teardown
    checks that closing it closes them all); tests below open their own stores
    from URLs and check that every connection closes."""
    walls = {}
    store = backend.shared
    for mode, fn in MODES.items():
        # Each mode reads its own object and its faults only hit that object's
        # requests: a request the previous mode cancelled may still reach the proxy.
        key = f"{name}.{mode}"
        backend.put(key, DATA)
        url = backend.url(key)
        await store.info(url)  # the store is made and warm before memory is traced
        clean = CLEAN_PEAKS.get((backend.kind, mode), 0)
        if not clean and check_memory and (mode == "scan" or case in TRACE_BATCHES):
            tracemalloc.start()
            await fn(url, store=store, profile=PROFILE)
            clean = CLEAN_PEAKS[(backend.kind, mode)] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        if setup is not None:
            setup(key)
        backend.proxy.reset()
        backend.proxy.inject(*faults, match=_for(key, match))
        trace = check_memory and (mode == "scan" or case in TRACE_BATCHES)
        if trace:
            tracemalloc.start()
        t0 = time.perf_counter()
        try:
            coro = fn(url, store=store, profile=PROFILE)
            if expect is None:
                await asyncio.wait_for(coro, CASE_BOUND)
            else:
                with pytest.raises(expect) as info:
                    await asyncio.wait_for(coro, CASE_BOUND)
                msg = str(info.value)
                assert key in msg, msg  # the error names the object ...
                assert "\n" not in msg and len(msg) < 600  # ... in one clear line
        finally:
            wall = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1]
            if trace:
                tracemalloc.stop()
        if trace:
            assert peak <= clean * MEMORY_SLACK + MEMORY_EXTRA, (
                f"{case}/{mode}: traced peak {peak:,} bytes, {clean:,} without faults")
        fired = backend.proxy.fired
        assert sum(fired.values()) >= 1, f"{case}/{mode}: no fault fired {backend.proxy.requests()}"
        assert asyncio.all_tasks() == {asyncio.current_task()}, asyncio.all_tasks()
        _no_checked_out_connections(store)
        walls[mode] = wall
        label = f"{backend.kind}:{case}"
        TIMINGS[label] = max(TIMINGS.get(label, 0.0), wall)
        if trace:
            PEAKS[label] = max(PEAKS.get(label, 0), peak)
    return walls


SURVIVED = [
    # (case id, faults, which requests they hit)
    ("reset-mid-body", [Fault.reset(20_000)], "data"),
    ("reset-tail-read", [Fault.reset(100)], "tail"),
    ("truncated-body", [Fault.truncate(30_000)], "data"),
    ("503-retry-after", [Fault.error(503, retry_after="0.2")], "data"),
    ("503-no-retry-after", [Fault.error(503), Fault.error(503)], "data"),
    ("500-tail", [Fault.error(500)], "tail"),
    ("429-retry-after", [Fault.error(429, retry_after="0")], "data"),
    ("stall-beyond-timeout", [Fault.stall(30, after_bytes=5000)], "data"),
    ("stall-before-headers", [Fault.delay(30)], "data"),
    ("wrong-content-range", [Fault.wrong_range()], "data"),
    ("refused-request", [Fault.refuse()], "data"),
    ("slow-but-within-timeout", [Fault.delay(0.2)], "data"),
]


@pytest.mark.parametrize(("case", "faults", "match"), SURVIVED, ids=[c[0] for c in SURVIVED])
async def test_scan_survives_transient_faults(backend: Backend, obj: str, case: str,
                                              faults: list[Fault], match: str | None) -> None:
    walls = await _run_case(backend, obj, case, faults, match, None)
    if case == "503-retry-after":
        # the retry waited as the server asked (the policy alone waits <= 50 ms)
        reqs = _requests(backend, obj)
        hit = next(r for r in reqs if r.fault == "status")
        again = [r for r in reqs if r.range == hit.range and r is not hit]
        assert again and again[0].time - hit.time >= 0.2
    if case.startswith("stall"):
        assert min(walls.values()) >= READ_TIMEOUT  # it really waited for the timeout
    if case == "reset-mid-body":
        # the broken body resumed from the byte it reached, not from the start
        reqs = _requests(backend, obj)
        hit = next(r for r in reqs if r.fault == "reset")
        resumed = _start(hit) + 20_000
        assert [r for r in reqs if _start(r) == resumed and r.time > hit.time]


def _requests(backend: Backend, name: str, kind: str | None = "data") -> list[Request]:
    """The requests the last mode of a case (iter_batches) made for its object."""
    match = _for(f"{name}.iter_batches", kind)
    return [r for r in backend.proxy.requests() if match(r)]


def _start(req: Any) -> int:
    return int(req.range.split("=")[1].split("-")[0])


FAILED = [
    ("503-persistent", [Fault.error(503)] * 40, "data", StoreError),
    ("500-persistent-tail", [Fault.error(500)] * 40, "tail", StoreError),
    ("reset-persistent", [Fault.reset(5000)] * 40, "data", StoreError),
    ("stall-persistent", [Fault.stall(30, after_bytes=1000)] * 40, "data", StoreTimeoutError),
    ("wrong-range-persistent", [Fault.wrong_range()] * 40, "data", StoreError),
    ("retry-after-beyond-budget", [Fault.error(503, retry_after="3600")], "data", StoreError),
]


@pytest.mark.parametrize(("case", "faults", "match", "error"), FAILED,
                         ids=[c[0] for c in FAILED])
async def test_scan_fails_typed_and_bounded(backend: Backend, obj: str, case: str,
                                            faults: list[Fault], match: str | None,
                                            error: type[CsupError]) -> None:
    walls = await _run_case(backend, obj, case, faults, match, error)
    # bounded: attempts x (read_timeout or a short backoff), well under the case bound
    assert max(walls.values()) < RETRY.attempts * (READ_TIMEOUT + 0.1) + 3.0
    if case != "retry-after-beyond-budget":
        n = len(_requests(backend, obj, match))
        assert n <= RETRY.attempts * 8  # retries are bounded per request, not endless


async def test_object_replaced_between_tail_and_data_reads(backend: Backend, obj: str) -> None:
    """A same-size replacement after open must be ObjectChangedError, never mixed data."""
    replaced: list[str] = []

    def setup(key: str) -> None:
        replaced.append(key)

    def replace() -> None:
        backend.put(replaced[-1], OTHER)

    assert len(OTHER) == len(DATA) and OTHER != DATA
    # (no memory bound here: the replacement itself, a boto3 upload to moto, runs in
    # this process while memory is traced)
    await _run_case(backend, obj, "replaced", [Fault.call(replace)], "data",
                    ObjectChangedError, setup=setup, check_memory=False)
    # and a reader opened afterwards (its own store) reads the new version, whole
    mark = backend.proxy.mark()
    rows = await _scan(backend.url(replaced[-1]), **backend.options())
    assert rows == _OTHER
    await _assert_clean(backend.proxy, since=mark)


async def test_refused_connections_are_retried(backend: Backend, obj: str) -> None:
    mark = backend.proxy.mark()
    backend.proxy.refuse_connections(2)
    rows = await _scan(backend.url(obj), **backend.options())
    assert rows == ROWS
    assert backend.proxy.fired["refuse_connection"] == 2
    await _assert_clean(backend.proxy, since=mark)


async def test_cancelled_scan_leaves_nothing_behind(backend: Backend, obj: str) -> None:
    """A caller's own timeout (cancellation) mid-scan frees every task and connection."""
    mark = backend.proxy.mark()
    backend.proxy.inject(*[Fault.stall(30, after_bytes=2000)] * 6, match=_for(obj, "data"))
    opts = {**backend.options(), "read_timeout": 60.0}
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(_scan(backend.url(obj), **opts), 1.0)
    assert time.perf_counter() - t0 < 5
    assert backend.proxy.fired["stall"] >= 1  # it was stuck in a stalled body
    await _assert_clean(backend.proxy, since=mark)


async def test_shared_store_returns_its_connections(nginx_server: servers.Nginx) -> None:
    """Many scans through one HTTPStore under faults: the aiohttp pool ends with nothing
    checked out, and closing the store closes every connection."""
    name = f"shared-{uuid.uuid4().hex[:8]}.csup"
    nginx_server.put(name, DATA)
    with FaultProxy(nginx_server.port) as proxy:
        proxy.inject(Fault.reset(10_000), Fault.truncate(50_000), Fault.error(503),
                     Fault.stall(30, 100), match="data")
        store = HTTPStore(retry=RETRY, read_timeout=READ_TIMEOUT, limit=8)
        async with store:
            results = await asyncio.gather(*[
                _scan(proxy.url(name), store=store, profile=PROFILE) for _ in range(6)])
            assert all(r == ROWS for r in results)
            assert proxy.pending == 0
            connector = store.connector
            assert connector is not None and not connector._acquired
            assert proxy.open_connections > 0  # kept alive in the pool, not leaked
        await _assert_clean(proxy)


@pytest.mark.parametrize("kind", ["http", "s3"])
async def test_closed_port_is_a_typed_error_in_bounded_time(kind: str) -> None:
    port = free_port()  # nothing listens once its socket is closed
    t0 = time.perf_counter()
    if kind == "http":
        url, opts = f"http://127.0.0.1:{port}/x.csup", dict(OPTIONS)
    else:
        url = "s3://bucket/x.csup"
        opts = {**OPTIONS, "endpoint_url": f"http://127.0.0.1:{port}",
                "access_key_id": "k", "secret_access_key": "s", "region": "us-east-1"}
    with pytest.raises(StoreError) as info:
        await _scan(url, **opts)
    assert time.perf_counter() - t0 < 5
    assert "connection failed" in str(info.value) and "x.csup" in str(info.value)
    assert f"gave up after {RETRY.attempts} tries" in str(info.value)
    await _assert_clean(None)


async def test_fault_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Print the slowest wall time per case (for the README's figures)."""
    if not TIMINGS:
        pytest.skip("no fault case ran")
    with capsys.disabled():
        slowest = sorted(TIMINGS.items(), key=lambda kv: -kv[1])
        print(f"\nfault cases: {len(TIMINGS)}; slowest: "
              + ", ".join(f"{k} {v:.2f}s" for k, v in slowest[:4]))
        print("traced peaks without faults: " + ", ".join(
            f"{k}/{m} {v / 2**20:.1f} MiB" for (k, m), v in sorted(CLEAN_PEAKS.items()))
            + f"; worst under faults: {max(PEAKS.values()) / 2**20:.1f} MiB "
            + f"(object {len(DATA) / 2**10:.0f} KiB, {len(ROWS):,} rows)")
