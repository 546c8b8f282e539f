"""A connection reset in the middle of a body, on a CSUP v23 file (super main's) over S3
(moto behind the fault proxy): the read resumes from the byte it reached, a ranged
re-GET of the rest pinned to the object's version, as it does for this library's
layout (tests/e2e/faults/test_faults.py's ``reset-mid-body``), whether the body was the
data wave's or the speculative head read's (readers/headhint)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import csup_async
import planner as P
from csup_async.stores import RetryPolicy
from tests.support.fault_proxy import Fault, FaultProxy, Request

WIDE = (Path(__file__).resolve().parents[2] / "data" / "real" / "super-main" / "wide"
        / "wide.csup")  # 4,000 rows, 6 columns, 87 KB, written by the real super main
RETRY = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05, total_timeout=8)


@pytest.fixture
def proxy(moto_s3: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(moto_s3.endpoint.rsplit(":", 1)[1])).start()
    yield p
    p.stop()


def _start(req: Request) -> int:
    assert req.range is not None
    return int(req.range.split("=")[1].split("-")[0])


async def _expected() -> list[dict[str, Any]]:
    async with csup_async.open(str(WIDE)) as r:
        return await r.read_rows()


async def _read(moto_s3: Any, proxy: FaultProxy, name: str, profile: Any,
                match: Any) -> list[Request]:
    key = moto_s3.put(f"v23resume/{name}", WIDE.read_bytes())
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint, "retry": RETRY}
    proxy.inject(Fault.reset(20_000), match=match)
    async with csup_async.open(f"s3://{key}", profile=profile, **opts) as r:
        rows = await r.read_rows()
    assert rows == await _expected()
    assert proxy.fired["reset"] == 1
    gets = [q for q in proxy.requests() if q.method == "GET"]
    hit = next(q for q in gets if q.fault == "reset")
    resumed = [q for q in gets if q.range and q.kind == "data" and q.time >= hit.time
               and _start(q) == _start(hit) + 20_000]
    assert len(resumed) == 1, [(q.range, q.fault) for q in gets]
    assert resumed[0].headers.get("if-match"), "the rest is pinned to the version"
    assert asyncio.all_tasks() == {asyncio.current_task()}
    return gets


async def test_a_reset_in_the_data_wave_resumes(moto_s3, proxy):
    """Small metadata reads (4 KiB), so the data is one request of ~80 KB after open."""
    small = dataclasses.replace(P.get_profile("s3"), tail_min=4096, tail_max=4096,
                                max_gap=1024)
    gets = await _read(moto_s3, proxy, "data.csup", small,
                       lambda q: q.kind == "data" and _start(q) > 0)
    assert [q.range for q in gets][:2] in (["bytes=-4096", "bytes=0-4095"],
                                           ["bytes=0-4095", "bytes=-4096"])


async def test_a_reset_in_the_head_read_resumes(moto_s3, proxy):
    """A cold open's head read (64 KiB here, beside a 64 KiB tail read of the 87 KB file)
    broken after 20,000 bytes: the rest of it, not the whole head again."""
    mid = dataclasses.replace(P.get_profile("s3"), tail_min=65536, tail_max=65536)
    gets = await _read(moto_s3, proxy, "head.csup", mid,
                       lambda q: q.range == "bytes=0-65535")
    assert [q.range for q in gets].count("bytes=0-65535") == 1  # not read again whole
