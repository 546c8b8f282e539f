"""Pacing under throttling, against a range server that refuses more than N requests a second."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.stores import HTTPStore, RetryPolicy
from csup_async.stores.pacing import Pacer, PacingPolicy, pacer_for
from tests.support.servers import RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


N = 40  # requests a second the server accepts


class ThrottlingServer(RangeServer):
    """Answers 503 SlowDown (as S3 does) to a request beyond ``limit`` in the last second."""

    def __init__(self, root: Path, limit: int) -> None:
        super().__init__(root)
        self.limit = limit
        self.arrivals: list[float] = []
        self.accepted: list[float] = []
        self.refused = 0

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        now = time.monotonic()
        self.arrivals.append(now)
        while self.accepted and now - self.accepted[0] > 1.0:
            self.accepted.pop(0)
        if len(self.accepted) >= self.limit:
            self.refused += 1
            return web.Response(status=503, content_type="application/xml",
                                text="<Error><Code>SlowDown</Code>"
                                     "<Message>Please reduce your request rate.</Message></Error>")
        self.accepted.append(now)
        return await super()._handle(request)


@pytest.fixture
def throttling(tmp_path: Path) -> Any:
    server = ThrottlingServer(tmp_path / "root", N).start()
    yield server
    server.stop()


def _small_csup(i: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i * 100 + j, "v": f"value {j}"} for j in range(50)])
    return out.getvalue()


def test_200_concurrent_scans_slow_down_and_finish(throttling: ThrottlingServer) -> None:
    bucket = f"paced-{uuid.uuid4().hex[:8]}"
    for i in range(20):
        throttling.put(f"{bucket}/f{i}.csup", _small_csup(i))

    async def main() -> list[int]:
        store = HTTPStore(limit=64, retry=RetryPolicy(attempts=8, total_timeout=120.0))
        try:
            async def one(i: int) -> int:
                url = throttling.url(f"{bucket}/f{i % 20}.csup")
                async with csup_async.open(url, store=store) as r:
                    res = await r.scan()
                    return int(res.to_arrow().column("id")[0].as_py())

            return list(await asyncio.gather(*(one(i) for i in range(200))))
        finally:
            await store.close()

    got = asyncio.run(main())
    assert got == [(i % 20) * 100 for i in range(200)]
    assert throttling.refused > 0, "the server must have throttled for this test to mean anything"
    first = min(throttling.arrivals)
    arrivals = [t - first for t in throttling.arrivals]
    end = max(arrivals)
    # offered rate over every one-second window after the first second
    worst = 0
    w = 1.0
    while w < end:
        worst = max(worst, sum(1 for t in arrivals if w <= t < w + 1.0))
        w += 0.25
    assert worst < 2 * N, f"{worst} requests offered in one second after the first (N={N})"
    assert pacer_for("http", "127.0.0.1", throttling.port, f"/{bucket}/x").throttles > 0


def test_an_unthrottled_pacer_never_waits() -> None:
    async def main() -> float:
        p = Pacer()
        t0 = time.monotonic()
        for _ in range(1000):
            await p.wait()
            p.record(False)
        return time.monotonic() - t0

    assert asyncio.run(main()) < 0.5


def test_the_rate_falls_on_refusals_and_recovers() -> None:
    p = Pacer(PacingPolicy(cooldown=0.0, release=0.3, min_rate=1.0))
    for _ in range(10):
        p.record(False)
    p.record(True)
    assert p.rate == pytest.approx(7.0)  # 0.7 of what the server accepted
    time.sleep(0.01)
    p.record(True)
    assert p.rate is not None and p.rate < 7.0

    async def after_quiet() -> float | None:
        await asyncio.sleep(0.35)
        await p.wait()
        return p.rate

    assert asyncio.run(after_quiet()) is None  # released after a quiet spell


def test_pacers_are_per_bucket() -> None:
    a = pacer_for("https", "s3.example", None, "/bucket-a/key")
    assert a is pacer_for("https", "S3.EXAMPLE", None, "/bucket-a/other")
    assert a is not pacer_for("https", "s3.example", None, "/bucket-b/key")
