"""Hedged range reads against the aiohttp range server on 127.0.0.1.

A stall injected before one response's headers stands for a straggling server:
the hedge must answer in its place with the same bytes, within the budget,
and leave no connection or task behind.
"""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

import pytest

import csup_async
from csup_async.model.errors import CsupError
from csup_async.stores import HTTPStore
from csup_async.stores.hedge import HedgePolicy, HedgeState, hedged
from tests.support.servers import Fault

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


DATA = bytes(range(256)) * 400  # 102,400 bytes


def _big_csup() -> bytes:
    """A file of about 2 MB: its columns lie well outside the open's tail read."""
    out = io.BytesIO()
    csup_async.write(out, [{"a": i, "b": f"row {i * 7919 % 100_003}"} for i in range(100_000)])
    return out.getvalue()


QUICK = HedgePolicy(floor=0.05, cap=0.2, min_samples=3, budget=1.0, burst=1.0)


async def _warm(store: HTTPStore, url: str, n: int = 5) -> str:
    info = await store.info(url)
    for i in range(n):
        await store.read_range(url, i * 1000, 1000, info.version)
    return str(info.version)


def test_a_stalled_range_is_answered_by_its_hedge(range_server: Any) -> None:
    range_server.put("h/a.bin", DATA)
    url = range_server.url("h/a.bin")

    async def main() -> tuple[bytes, float, HedgeState | None, Any]:
        store = HTTPStore()
        store.hedge = QUICK
        try:
            version = await _warm(store, url)
            range_server.reset()
            range_server.inject("h/a.bin", Fault.stall(3.0))
            t0 = time.perf_counter()
            data = await store.read_range(url, 5000, 50_000, version)
            took = time.perf_counter() - t0
            await asyncio.sleep(0.05)
            return bytes(data), took, store.hedge_state, store.connector
        finally:
            await store.close()

    data, took, state, _ = asyncio.run(main())
    assert data == DATA[5000:55_000]
    assert took < 1.5, f"the hedge should have answered long before the 3 s stall ({took:.2f} s)"
    assert state is not None and (state.hedges, state.wins) == (1, 1)
    seen = range_server.seen("h/a.bin")
    assert len(seen) == 2
    assert {s.headers.get("Range") for s in seen} == {"bytes=5000-54999"}
    assert all(s.headers.get("If-Match") for s in seen), "both copies are pinned"


def test_without_hedging_the_stall_is_waited_out(range_server: Any) -> None:
    range_server.put("h/b.bin", DATA)
    url = range_server.url("h/b.bin")

    async def main() -> float:
        store = HTTPStore()
        store.hedge = None
        try:
            version = await _warm(store, url)
            range_server.reset()
            range_server.inject("h/b.bin", Fault.stall(0.6))
            t0 = time.perf_counter()
            assert await store.read_range(url, 0, 1000, version) == DATA[:1000]
            return time.perf_counter() - t0
        finally:
            await store.close()

    assert asyncio.run(main()) >= 0.6
    assert len(range_server.seen("h/b.bin")) == 1


def test_hedges_stay_within_the_budget_when_everything_is_slow(range_server: Any) -> None:
    """An outage (every request late) must not double the load: 5% extra at most."""
    range_server.put("h/c.bin", DATA)
    url = range_server.url("h/c.bin")

    async def main() -> HedgeState | None:
        store = HTTPStore(limit=128)
        store.hedge = HedgePolicy(floor=0.02, cap=0.05, min_samples=1)
        try:
            version = await _warm(store, url, 1)
            range_server.reset()
            range_server.inject("h/c.bin", *[Fault.stall(0.3)] * 200)
            got = await asyncio.gather(*(store.read_range(url, i * 100, 100, version)
                                         for i in range(60)))
            assert [bytes(g) for g in got] == [DATA[i * 100:i * 100 + 100] for i in range(60)]
            return store.hedge_state
        finally:
            await store.close()

    state = asyncio.run(main())
    assert state is not None and state.hedges <= 0.05 * 61
    assert len(range_server.seen("h/c.bin")) <= 60 + 0.05 * 61


def test_a_cancelled_hedged_read_leaves_no_connection(range_server: Any) -> None:
    range_server.put("h/d.bin", DATA)
    url = range_server.url("h/d.bin")

    async def main() -> None:
        store = HTTPStore()
        store.hedge = QUICK
        try:
            version = await _warm(store, url)
            range_server.reset()
            range_server.inject("h/d.bin", Fault.stall(2.0), Fault.stall(2.0))
            task = asyncio.ensure_future(store.read_range(url, 0, 1000, version))
            await asyncio.sleep(0.4)  # the hedge is out too
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.05)
            assert store.connector is not None and not store.connector._acquired
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            assert not left
        finally:
            await store.close()

    asyncio.run(main())
    assert len(range_server.seen("h/d.bin")) == 2


def test_a_scan_counts_its_hedges_and_returns_the_same_columns(range_server: Any) -> None:
    range_server.put("h/g.csup", _big_csup())
    url = range_server.url("h/g.csup")

    async def scan(stall: bool) -> Any:
        store = HTTPStore()
        store.hedge = QUICK
        try:
            version = await _warm(store, url)
            async with csup_async.open(url, store=store) as r:
                if stall:
                    range_server.inject("h/g.csup", Fault.stall(3.0))
                t0 = time.perf_counter()
                result = await r.scan()
                result.stats.wall = time.perf_counter() - t0
                assert version
                return result, len(range_server.seen("h/g.csup"))
        finally:
            await store.close()

    plain, _ = asyncio.run(scan(False))
    range_server.reset()
    hedged_scan, requests = asyncio.run(scan(True))
    assert plain.stats.requests >= 1, "the scan must read ranges, not only the tail"
    assert requests == 6 + 1 + hedged_scan.stats.requests + 1  # warm-up, tail, reads, hedge
    assert hedged_scan.stats.wall < 1.5
    assert (hedged_scan.stats.hedges, hedged_scan.stats.hedge_wins) == (1, 1)
    assert (plain.stats.hedges, plain.stats.hedge_wins) == (0, 0)
    assert hedged_scan.to_arrow().equals(plain.to_arrow())


def test_when_both_copies_fail_the_first_error_is_raised() -> None:
    async def main() -> None:
        state = HedgeState(HedgePolicy(floor=0.01, cap=0.01, min_samples=1, budget=1.0,
                                       burst=1.0))
        state.observe(0.001)
        calls = 0

        async def send() -> bytes:
            nonlocal calls
            calls += 1
            n = calls
            await asyncio.sleep(0.05 if n == 1 else 0.01)
            raise CsupError(f"copy {n} failed")

        with pytest.raises(CsupError, match="copy 1 failed"):
            await hedged(state, send, lambda _reply: None)
        assert calls == 2

    asyncio.run(main())


def test_policy_refuses_nonsense() -> None:
    with pytest.raises(CsupError, match="floor"):
        HedgePolicy(floor=1.0, cap=0.5)
    with pytest.raises(CsupError, match="quantile"):
        HedgePolicy(quantile=1.0)


def test_when_both_copies_answer_at_once_the_loser_is_released() -> None:
    async def main() -> tuple[str, list[str | None]]:
        state = HedgeState(HedgePolicy(floor=0.01, cap=0.01, min_samples=1, budget=1.0,
                                       burst=1.0))
        state.observe(0.001)
        gate = asyncio.Event()
        released: list[str | None] = []
        calls = 0

        async def send() -> str:
            nonlocal calls
            calls += 1
            n = calls
            await gate.wait()  # both answer in the same loop iteration
            return f"reply {n}"

        async def open_gate() -> None:
            await asyncio.sleep(0.05)
            gate.set()

        opener = asyncio.ensure_future(open_gate())
        got = await hedged(state, send, released.append)
        await opener
        return got, released

    got, released = asyncio.run(main())
    assert got == "reply 1" and released == ["reply 2"]


def test_ranged_reads_are_measured_for_calibration(range_server: Any) -> None:
    """Each ranged read the store finishes becomes a sample; five give a measured profile."""
    from planner.profiles import PROFILES

    range_server.put("h/m.bin", DATA)
    url = range_server.url("h/m.bin")

    async def main() -> Any:
        store = HTTPStore()
        try:
            await _warm(store, url, n=6)
            return store.measurements
        finally:
            await store.close()

    m = asyncio.run(main())
    assert len(m.samples) >= 6
    assert all(s.nbytes in (1000, len(DATA)) or s.nbytes > 0 for s in m.samples)
    assert sum(1 for s in m.samples if s.nbytes == 1000) == 6
    static = PROFILES["http"]
    measured = m.profile(static)
    assert measured is not static and measured.name == "http (measured)"
    assert 0 < measured.latency < static.latency * 10
    assert m.profile(static, calibrate=False) is static
