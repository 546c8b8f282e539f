"""A busy client does not talk itself into more, smaller requests (issue #38 item 4).

Scans that run together share the client: each body arrives only as fast as one event
loop takes them all in, so each looks like a slow connection.  Taken as the store's
bandwidth that meant more connections and smaller parts, hence more requests and more
client work per scan (16 requests for a 2-column scan on the simulated S3, where the
static profile makes 7).  Against nginx (moto closes its connections after each
response, so its requests never calibrate: calibration measures warm connections), a
loop kept busy by other work while rounds of scans run together leaves the calibrated
profile's connections and part sizes where the static profile has them, and a scan
after them makes no more requests than the static profile plans for the same pool.
"""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

import numpy as np

import csup_async
import planner as P
from csup_async.stores.http import HTTPStore
from planner.profiles import PROFILES

MiB = 1 << 20


def _file() -> bytes:
    out = io.BytesIO()
    rng = np.random.default_rng(5)
    csup_async.write(out, {"x": rng.integers(-(1 << 62), 1 << 62, 600_000),
                           "y": rng.random(600_000)}, segment_thresh=MiB,
                     target="csup-async")  # our layout: the test reads its scan programs
    return out.getvalue()


def test_concurrent_scans_on_a_busy_loop_keep_the_static_parts(nginx_server: Any) -> None:
    nginx_server.put("busy/f.csup", _file())
    url = nginx_server.url("busy/f.csup")
    static = PROFILES["s3"]

    async def main() -> tuple[int, int, Any, int]:
        store = HTTPStore()
        opts = {"store": store, "profile": "s3", "calibrate": True}
        try:
            async def one() -> None:
                async with csup_async.open(url, **opts) as r:
                    assert (await r.scan(["x", "y"])).num_rows == 600_000

            await one()
            busy = asyncio.Event()

            async def hog() -> None:  # other work on the loop: 5 ms of every 6
                while not busy.is_set():
                    time.sleep(0.005)
                    await asyncio.sleep(0.001)

            hogging = asyncio.create_task(hog())
            for _ in range(3):
                await asyncio.gather(*(one() for _ in range(6)))
            busy.set()
            await hogging
            async with csup_async.open(url, **opts) as r:
                profile = r.profile
                program = await r.plan(["x", "y"])
                last = (await r.scan(["x", "y"])).stats.requests
                shared = sum(s.shared for s in r.measurements.samples)
                planned = P.plan_scan(r.meta, ["x", "y"], static, available=program.available,
                                      warm=program.warm).request_count
            return planned, last, profile, shared
        finally:
            await store.close()

    planned, last, profile, shared = asyncio.run(main())
    assert shared > 0  # the rounds' bodies were received together
    assert profile.name == "s3 (measured)"  # calibrated: the latency is loopback's
    assert profile.concurrency <= static.concurrency
    assert profile.min_part >= static.min_part
    assert last <= planned  # the static profile's requests for the same pool
