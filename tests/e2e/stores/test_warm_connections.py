"""A store reports the connections its pool holds open, and the reader plans with them.

A request on a new connection pays TCP's (and TLS's) round trips first; the
planner weighs that only if it knows how many connections are already open.
"""

from __future__ import annotations

import io

import numpy as np

import csup_async
import planner as P
from csup_async.stores.http import HTTPStore

MiB = 1 << 20


def _file() -> bytes:
    """One int64 column of ~6.4 MB in 1 MiB segments: a scan a pool can spread."""
    out = io.BytesIO()
    vals = np.random.default_rng(3).integers(-(1 << 62), 1 << 62, 800_000)
    csup_async.write(out, {"x": vals}, segment_thresh=MiB)
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
