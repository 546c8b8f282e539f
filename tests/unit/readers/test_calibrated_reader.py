"""A reader on a ranged store plans with the profile its own requests measured."""

from __future__ import annotations

import asyncio
import io
import random
from typing import Any

import pytest

import csup_async
from csup_async.stores import HTTPStore
from planner.profiles import PROFILES

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _file() -> bytes:
    out = io.BytesIO()
    rnd = random.Random(0)
    csup_async.write(out, [{"a": i, "b": rnd.randbytes(24).hex()} for i in range(100_000)])
    return out.getvalue()


def test_five_scans_calibrate_the_next_plan_and_calibrate_false_opts_out(
        range_server: Any) -> None:
    range_server.put("c/f.csup", _file())
    url = range_server.url("c/f.csup")

    async def main(calibrate: bool) -> tuple[Any, Any, list[Any]]:
        store = HTTPStore()
        try:
            r = csup_async.Reader(store, url, owns_store=False, profile="s3",
                                  calibrate=calibrate)
            await r.load()
            before = r.profile
            rows = []
            for _ in range(5):
                rows.append((await r.scan(["a", "b"])).num_rows)
            return before, r.profile, rows
        finally:
            await store.close()

    before, after, rows = asyncio.run(main(True))
    assert rows == [100_000] * 5
    assert before is PROFILES["s3"]
    # loopback answers far faster than S3's 50 ms: the measured latency is lower
    assert after.name == "s3 (measured)" and after.latency < PROFILES["s3"].latency
    _, fixed, _ = asyncio.run(main(False))
    assert fixed is PROFILES["s3"]
