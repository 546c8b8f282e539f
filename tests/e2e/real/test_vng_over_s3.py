"""A real Zed VNG file read from (moto's) S3 costs what one of this library's CSUP
files costs: one tail read plans everything (a second only when the metadata is
bigger than the tail), then exactly the planned, coalesced data requests."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

import csup_async
import planner as P
from tests.support.zedjson import load_lines

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


REAL = Path(__file__).resolve().parents[3] / "tests" / "data" / "real"
COLS = ["id", "grp", "tags", "rec.a"]
# small requests so a scan needs several, and a tail that holds the metadata of both
PROFILE = dataclasses.replace(P.get_profile("s3"), max_request=2048, split_size=2048,
                              tail_min=8192, tail_max=8192)


async def _costs(url: str, opts: dict) -> tuple[int, int, int, int, list]:
    async with csup_async.open(url, profile=PROFILE, **opts) as r:
        opened = r.open_stats.requests
        plan = await r.plan(COLS)
        res = await r.scan(COLS)
        assert res.stats.requests == plan.request_count
        assert res.stats.bytes_read == plan.bytes_to_read
        segments = sum(len(s) for s in _segmaps(r))
        return opened, res.stats.requests, segments, plan.bytes_to_read, res.to_pylist()


def _segmaps(r: csup_async.Reader) -> list:
    from csup_async.format.meta import iter_segmaps

    return [s for c in r.meta.columns for s in iter_segmaps(c)]


async def test_vng_costs_the_round_trips_of_a_csup_file(moto_s3) -> None:
    want = load_lines(REAL / "zed1.12-long.json")
    vng = (REAL / "zed1.7-long.vng").read_bytes()
    async with csup_async.open(str(REAL / "zed1.7-long.vng")) as r:
        values = await r.read_values()
    out = io.BytesIO()
    csup_async.write(out, values, segment_thresh=1024)
    opts = moto_s3.store_options()
    v = await _costs(f"s3://{moto_s3.put('real/long.vng', vng)}", opts)
    c = await _costs(f"s3://{moto_s3.put('real/long.csup', out.getvalue())}", opts)
    expected = [{"id": w["id"], "grp": w["grp"], "tags": w["tags"], "rec.a": w["rec"]["a"]}
                for w in want]
    assert v[4] == expected == c[4]
    assert v[0] == c[0] == 1  # trailer and metadata in the one tail read
    assert 1 < v[1] < v[2]  # coalesced: fewer requests than segments
    print(f"VNG: open {v[0]} request, scan {v[1]} requests for {v[2]} segments, "
          f"{v[3]} bytes; CSUP: open {c[0]}, scan {c[1]} for {c[2]} segments, {c[3]} bytes")
