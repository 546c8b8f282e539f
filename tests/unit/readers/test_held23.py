"""A v23 reader built from the bytes another open held (a Spark driver's, shipped with a
task): no request at its open, the same rows as a plain open, and only the data it was
not given read by its scan."""

from __future__ import annotations

from pathlib import Path

import csup_async
import planner as P
from csup_async.readers.held23 import from_held
from csup_async.stores import shared_store
from planner.request import ScanRequest

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
FILES = [REAL / "super-main" / "minmax" / "parts.csup",  # two parts, six objects
         REAL / "super-main" / "wide" / "objects.csup",  # three objects
         REAL / "super-main" / "nested.csup"]


async def test_a_reader_from_held_bytes_opens_with_no_request() -> None:
    for path in FILES:
        async with csup_async.open(str(path), profile="s3") as r:
            want = (await r.scan()).to_pylist()
            meta_only = r.held_ranges(None)
            plan = r.plan_now(ScanRequest.parse())
            with_data = r.held_ranges(plan, 1 << 30)
            size, version = r.tail.info.size, r.tail.info.version
            n_objects = len(r.meta.objects)
        # the metadata alone: a few hundred bytes per object, far less than the file
        assert sum(len(b) for _, b in meta_only) < size or n_objects * 500 > size
        store, key, _ = await shared_store(str(path))
        got = await from_held(key, size, version, with_data, store=store, profile="s3")
        res = await got.scan()
        assert got.open_stats.requests == 0 and res.stats.requests == 0, path
        assert res.to_pylist() == want
        bare = await from_held(key, size, version, meta_only, store=store, profile="s3")
        assert bare.open_stats.requests == 0
        res = await bare.scan()
        assert res.to_pylist() == want
        assert res.stats.requests >= (1 if plan.bytes_needed else 0), path


async def test_older_versions_have_no_held_ranges() -> None:
    async with csup_async.open(str(REAL / "super" / "nested.csup")) as r:  # v16
        assert r.held_ranges(r.plan_now(ScanRequest.parse()), 1 << 20) is None
        assert isinstance(r.plan_now(ScanRequest.parse()), P.superdb.HeaderLayoutPlan)


async def test_a_reader_from_held_bytes_reads_only_the_objects_kept() -> None:
    path = REAL / "super-main" / "minmax" / "parts.csup"  # objects of g = 0, 1, 2, 3, 4, 5
    async with csup_async.open(str(path)) as r:
        held = r.held_ranges(r.plan_now(ScanRequest.parse()), 1 << 20)
        size, version = r.tail.info.size, r.tail.info.version
        rows = [o.length for o in r.meta.objects]
    store, key, _ = await shared_store(str(path))
    got = await from_held(key, size, version, held, store=store, objects=[1, 4])
    res = await got.scan(["g"])
    assert res.column("g").to_pylist() == [1] * rows[1] + [4] * rows[4]
    assert await got.count_rows() == rows[1] + rows[4]
