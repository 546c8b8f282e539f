"""SuperDB (header-layout) files over real servers on 127.0.0.1: the requests the
server sees are the ones ``explain`` announces, at open and for the data."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

import csup_async
import planner as P

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super"
OBJECTS = (DATA / "objects.csup").read_bytes()
NESTED = (DATA / "nested.csup").read_bytes()
# a 4 KiB first read: the three objects of objects.csup (52 KB) need a chain of reads
SMALL_READS = dataclasses.replace(P.get_profile("s3"), tail_min=4096, tail_max=4096,
                                  max_gap=1024)


def _expected() -> list[dict]:
    text = gzip.decompress((DATA / "objects.json.gz").read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines()]


async def test_a_small_file_costs_one_request(range_server):
    range_server.put("n.csup", NESTED)
    range_server.put("n2.csup", NESTED)
    for name in ("n.csup", "n2.csup"):
        async with csup_async.open(range_server.url(name)) as r:
            plan = await r.plan()
            assert r.open_stats.requests == 1
            assert plan.open_cost.requests == 1 and plan.request_count == 0
            assert "one read of the whole file" in plan.explain()
            res = await r.scan()
        assert res.num_rows == 300 and res.stats.requests == 0
    # the tail read holds the file; the first, in a place not seen before, had a small
    # head read beside it (readers/headhint: unused, cancelled), the second none
    first = [s.headers.get("Range") for s in range_server.seen("n.csup")]
    tails = [x for x in first if x.startswith("bytes=-")]
    assert len(tails) == 1 and [x for x in first if x not in tails] in ([], ["bytes=0-65535"])
    assert len(range_server.seen("n2.csup")) == 1


async def test_a_chain_of_objects_costs_what_explain_says(range_server):
    range_server.put("o.csup", OBJECTS)
    async with csup_async.open(range_server.url("o.csup"), profile=SMALL_READS) as r:
        at_open = len(range_server.seen("o.csup"))
        plan = await r.plan(["n", "b"])
        text = plan.explain()
        res = await r.scan(["n", "b"])
    seen = range_server.seen("o.csup")
    # tail (no trailer) + head + one read per further object's header and metadata
    assert at_open == plan.open_cost.requests == 4
    assert f"metadata (at open): {at_open} requests" in text
    assert "2 more in a chain" in text
    assert len(seen) - at_open == plan.request_count == res.stats.requests > 0
    assert f"data: {plan.request_count} request" in text
    rows = _expected()
    assert res.column("n").to_pylist() == [x["n"] for x in rows]
    assert res.column("b").to_pylist() == [x.get("b") for x in rows]


async def test_over_s3(moto_s3):
    key = moto_s3.put("superdb/o.csup", OBJECTS)
    async with csup_async.open(f"s3://{key}", profile=SMALL_READS,
                               **moto_s3.store_options()) as r:
        plan = await r.plan(["n"])
        res = await r.scan(["n"])
        assert res.stats.requests == plan.request_count
        assert r.open_stats.requests == plan.open_cost.requests == 4
    assert res.column("n").to_pylist() == [x["n"] for x in _expected()]


async def test_replaced_between_open_and_scan(range_server):
    from csup_async import ObjectChangedError

    range_server.put("c.csup", OBJECTS)
    async with csup_async.open(range_server.url("c.csup"), profile=SMALL_READS) as r:
        range_server.put("c.csup", NESTED + b"\0" * (len(OBJECTS) - len(NESTED)))
        with pytest.raises(ObjectChangedError):
            await r.scan(["n"])
