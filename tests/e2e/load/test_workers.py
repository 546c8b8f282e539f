"""A service past one core: worker processes forked from a parent that already read.

Pre-forking servers (gunicorn with ``--preload``, ``multiprocessing`` with the fork
start method, uvicorn's workers) import and warm up once in a parent, then fork one
worker per core, each running its own event loop.  A forked child has none of its
parent's threads, so a thread pool the parent had started (the decode pool, the
step pool) would take the child's jobs and never run them: its scans would hang.
Here the parent scans first, then two forked workers each run concurrent scans on
a loop of their own and must return every row, within a bound.
"""

from __future__ import annotations

import asyncio
import io
import multiprocessing
import sys
from pathlib import Path
from typing import Any

import pytest

import csup_async
from tests.support import servers

ROWS = 30_000
COLUMNS = ["id", "s"]
WORKERS = 2
SCANS = 16  # concurrent scans in each worker

pytestmark = [pytest.mark.usefixtures("own_layout"),
              pytest.mark.skipif(sys.platform == "win32", reason="no fork on Windows")]


def _object() -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "s": f"row {i:06d}"} for i in range(ROWS)],
                     segment_thresh=1 << 15)
    return out.getvalue()


@pytest.fixture(params=["local", "http"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    data = _object()
    if request.param == "local":
        p = tmp_path / "workers.csup"
        p.write_bytes(data)
        return str(p)
    name = "nginx_server" if servers.nginx_binary() is not None else "range_server"
    server = request.getfixturevalue(name)
    put = server.put("workers/w.csup", data)
    return put if put.startswith("http") else server.url(put)


async def _scan_many(url: str, n: int) -> list[int]:
    async def one(i: int) -> int:
        async with csup_async.open(url, metadata_cache=True) as r:
            got = await r.scan(COLUMNS)
        k = (i * 997) % ROWS
        assert got.column("id").slice(k, k + 1).to_pylist() == [k]
        return got.num_rows

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def _worker(url: str, out: Any) -> None:
    try:
        out.put(("ok", asyncio.run(_scan_many(url, SCANS))))
    except BaseException as e:  # reported to the parent, which fails the test with it
        out.put(("error", repr(e)))


def test_forked_workers_scan_after_their_parent_did(url: str) -> None:
    # the parent reads first: its decode pool, step pool and metadata cache exist
    assert asyncio.run(_scan_many(url, 4)) == [ROWS] * 4
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, out)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    try:
        results = [out.get(timeout=60) for _ in procs]
    except Exception:
        results = []
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
    assert len(results) == WORKERS, "a forked worker's scans did not finish within 60 s"
    assert results == [("ok", [ROWS] * SCANS)] * WORKERS
    # and the parent still reads after its children have gone
    assert asyncio.run(_scan_many(url, 2)) == [ROWS] * 2
