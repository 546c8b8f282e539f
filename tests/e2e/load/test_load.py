"""Load: many concurrent whole scans through one shared store, in CI size.

The full run is ``python bench/bench_load.py`` (1,000 scans, 64 in flight);
this runs the same ``run_load`` at 240 scans, 32 in flight, against nginx (the
aiohttp range server when nginx is not installed), and checks that every scan
returned exactly its rows, that none starved, that memory stayed bounded, and
that the shared store ends with no connection checked out and no task left.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from typing import Any

import pytest

from csup_async.stores import HTTPStore, RetryPolicy
from tests.support import servers
from tests.support.paths import ROOT

SCANS, CONCURRENCY, FILES, ROWS = 240, 32, 16, 400
LATENCY_BOUND = 30.0  # seconds any one scan may take (it waits for up to 31 others)
RSS_BOUND = 256 << 20  # growth of the process's resident memory over the run


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_load", ROOT / "bench" / "bench_load.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_load"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Any:
    if servers.nginx_binary() is not None:
        return request.getfixturevalue("nginx_server")
    return request.getfixturevalue("range_server")


async def test_many_concurrent_scans_through_one_store(server: Any,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    bench = _bench()
    files = bench.make_files(FILES, ROWS)
    urls = []
    for i, (data, _) in enumerate(files):
        put = server.put(f"load/f{i}.csup", data)
        urls.append(put if put.startswith("http") else server.url(put))
    retry = RetryPolicy(attempts=4, base_delay=0.05, max_delay=0.5, total_timeout=30)
    async with HTTPStore(limit=CONCURRENCY, retry=retry) as store:
        want = await asyncio.to_thread(bench.expected_tables, files)
        res = await bench.run_load(urls, want,
                                   [len(d) for d, _ in files], scans=SCANS,
                                   concurrency=CONCURRENCY, store=store)
        connector = store.connector
        assert connector is not None and not connector._acquired  # all returned to the pool
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert res.errors == [] and res.wrong == 0 and res.ok == SCANS
    assert len(res.latencies) == SCANS  # every scan finished: none starved
    assert res.max_in_flight == CONCURRENCY  # the limit was reached, and held
    assert res.max < LATENCY_BOUND, res.summary()
    assert res.rss_growth < RSS_BOUND, res.summary()
    with capsys.disabled():
        print("\nload (CI size):\n" + res.markdown())
