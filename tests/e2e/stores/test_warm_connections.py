"""A store reports the connections its pool holds open, and the reader plans with them.

A request on a new connection pays TCP's (and TLS's) round trips first; the
planner weighs that only if it knows how many connections are already open.
"""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import csup_async
import planner as P
from csup_async.stores.http import HTTPStore
from csup_async.stores.s3 import S3Store
from tests.support import servers

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import netsim

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


MiB = 1 << 20


def _file() -> bytes:
    """One int64 column of ~6.4 MB in 1 MiB segments: a scan a pool can spread."""
    out = io.BytesIO()
    vals = np.random.default_rng(3).integers(-(1 << 62), 1 << 62, 800_000)
    # at import (no fixture yet): our layout
    csup_async.write(out, {"x": vals}, segment_thresh=MiB, target="csup-async")
    return out.getvalue()


DATA = _file()


async def test_http_store_counts_open_connections(nginx_server):
    nginx_server.put("w.csup", DATA)
    store = HTTPStore()
    assert store.warm_connections() == 0  # nothing opened yet
    url = nginx_server.url("w.csup")
    async with csup_async.open(url, store=store) as r:
        assert store.warm_connections() == 1  # the tail read's connection
        plan = await r.plan(["x"])
        assert plan.warm == 1
        assert plan.plan == P.plan_scan(r.meta, ["x"], r.profile, warm=1,
                                        available=plan.available)  # the program's plan
        assert "connections: 1 warm" in plan.explain()
        await r.scan(["x"])
        assert 1 <= store.warm_connections() <= max(plan.request_count, 1)
    await store.close()
    assert store.warm_connections() == 0


async def test_a_cold_pool_reads_a_small_scan_on_the_open_connection(nginx_server):
    """On the s3 cost model (100 ms to open a connection), 6 MB after the tail read go
    on the one open connection; a pool with 16 open spreads them."""
    nginx_server.put("w.csup", DATA)
    url = nginx_server.url("w.csup")
    async with csup_async.open(url, profile="s3") as r:
        plan = await r.plan(["x"])
        assert (plan.warm, plan.request_count, plan.new_connections) == (1, 1, 0)
        res = await r.scan(["x"])
        assert res.stats.requests == 1
        spread = P.plan_scan(r.meta, ["x"], "s3", available=plan.available, warm=16)
        assert spread.request_count > 1 and spread.new_connections == 0


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[netsim.SimStore]:
    """nginx behind the benchmarks' delay proxy: a new connection costs 2 x 30 ms."""
    if servers.nginx_binary() is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    root = tmp_path_factory.mktemp("data")
    (root / "bkt").mkdir()
    (root / "bkt" / "w.csup").write_bytes(DATA)
    store = netsim.SimStore(root, tmp_path_factory.mktemp("sim"),
                            {"t": netsim.NetProfile("t", 0.03, 0.0, tls=1)}).start()
    yield store
    store.stop()


async def _cold_scan(sim: netsim.SimStore, **options: int) -> tuple[P.ScanPlan, int, int, int]:
    """A scan on a fresh S3 store: its plan, its data requests, and the requests and
    connections nginx saw (a connection counts once it carries a request)."""
    mark = netsim.log_mark(sim.log)
    store = S3Store(endpoint_url=sim.endpoint("t"), region="us-east-1", access_key_id="k",
                    secret_access_key="s", **options)
    try:
        async with csup_async.open("s3://bkt/w.csup", store=store, profile="s3") as r:
            plan = (await r.plan(["x"])).plan
            res = await r.scan(["x"])
            assert res.column("x").to_numpy().sum() == _expected_sum()
    finally:
        await store.close()
    seen = netsim.log_count(sim.log, mark)
    return plan, res.stats.requests, seen.requests, seen.connections


async def test_a_cold_s3_pool_opens_connections_beside_the_tail_read(sim) -> None:
    """The S3 store opens connections while its first tail read is in flight, so the
    data requests that follow go on warm connections: the planner counts them, spreads
    the scan over them, and no data request waits for a connection's setup."""
    plan, data_requests, requests, connections = await _cold_scan(sim)
    assert plan.warm == 1 + S3Store.default_preconnect
    assert plan.new_connections == 0 and 1 < plan.request_count <= plan.warm
    assert requests == 1 + data_requests == 1 + plan.request_count
    assert connections <= plan.warm
    # without it: one warm connection, and the planner keeps the scan on it
    plan0, data0, requests0, connections0 = await _cold_scan(sim, preconnect=0)
    assert plan0.warm == 1 and plan0.request_count == data0 == 1
    assert (requests0, connections0) == (2, 1)


async def test_a_warm_s3_pool_opens_no_more_connections(sim) -> None:
    """Later opens on the same store find the pool warm: nothing more is opened."""
    store = S3Store(endpoint_url=sim.endpoint("t"), region="us-east-1", access_key_id="k",
                    secret_access_key="s")
    try:
        opened = []
        for _ in range(3):
            async with csup_async.open("s3://bkt/w.csup", store=store, profile="s3") as r:
                await r.scan(["x"])
            opened.append(store.warm_connections())
        assert opened == [1 + S3Store.default_preconnect] * 3
    finally:
        await store.close()


async def test_an_open_cancelled_during_its_tail_read_leaves_no_connection_opening(sim) -> None:
    """Cancelled while the tail read (and the connections beside it) are in flight: no
    task is left behind, and the store still reads afterwards."""
    store = S3Store(endpoint_url=sim.endpoint("t"), region="us-east-1", access_key_id="k",
                    secret_access_key="s")
    try:
        async def opened() -> None:
            async with csup_async.open("s3://bkt/w.csup", store=store, profile="s3"):
                pass

        task = asyncio.ensure_future(opened())
        await asyncio.sleep(0.02)  # the tail's answer is 2 x 30 ms setup + 30 ms away
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.all_tasks() == {asyncio.current_task()}
        async with csup_async.open("s3://bkt/w.csup", store=store, profile="s3") as r:
            res = await r.scan(["x"])
        assert res.column("x").to_numpy().sum() == _expected_sum()
    finally:
        await store.close()


def _expected_sum() -> int:
    return int(np.random.default_rng(3).integers(-(1 << 62), 1 << 62, 800_000).sum())
