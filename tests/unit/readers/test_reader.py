"""Reader behaviour beyond round trips: batches, plans executed, stats, cancellation."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
import planner as P
from csup_async.model.values import Value
from tests.support.strategies import typed_values

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(typed_values, min_size=1, max_size=15), st.integers(1, 7))
async def test_iter_batches_equals_scan_for_any_values(tmp_path, pairs, batch):
    path = tmp_path / "b.csup"
    csup_async.write(str(path), [Value(t, v) for t, v in pairs], segment_thresh=48)
    async with csup_async.open(str(path)) as r:
        whole = await r.scan()
        got = []
        async for b in r.iter_batches(batch_rows=batch):
            assert 0 < len(b) <= batch
            got += b.to_pylist()
    assert _same(got, whole.to_pylist())


def _same(a, b) -> bool:
    return repr(a) == repr(b)  # NaN-safe structural comparison


def _rows(n: int) -> list[dict]:
    rng = np.random.default_rng(11)
    return [{"i": int(rng.integers(-(2**40), 2**40)), "s": rng.bytes(8).hex(),
             "f": float(rng.random())} for _ in range(n)]


async def test_iter_batches_memory_is_bounded_by_segments_not_result(tmp_path):
    path = tmp_path / "big.csup"
    csup_async.write(str(path), _rows(60000), segment_thresh=16 << 10, compress=False)
    small = dataclasses.replace(P.get_profile("local"), max_request=64 << 10,
                                split_size=64 << 10)
    async with csup_async.open(str(path), profile=small, concurrency=2) as r:
        total = 0
        async for b in r.iter_batches(["i", "s"], batch_rows=5000):
            total += len(b)
        stats = b.stats
    assert total == 60000
    assert stats.requests > 10  # fetched progressively, in many requests
    assert stats.bytes_read <= stats.bytes_needed * 1.1 + (64 << 10)


async def test_scan_executes_exactly_the_plan(tmp_path):
    path = tmp_path / "p.csup"
    csup_async.write(str(path), _rows(30000), segment_thresh=8 << 10)
    prof = dataclasses.replace(P.get_profile("s3"), max_request=32 << 10,
                               split_size=32 << 10)
    async with csup_async.open(str(path), profile=prof) as r:
        plan = await r.plan(["i"])
        res = await r.scan(["i"])
    assert res.stats.requests == plan.request_count
    assert res.stats.bytes_read == plan.bytes_to_read
    assert res.stats.bytes_needed == plan.bytes_needed
    assert res.stats.bytes_read <= 1.1 * plan.bytes_needed + (32 << 10)


async def test_cancelling_a_scan_leaves_no_tasks(tmp_path):
    path = tmp_path / "c.csup"
    csup_async.write(str(path), _rows(50000), segment_thresh=4 << 10)
    prof = dataclasses.replace(P.get_profile("local"), max_request=8 << 10,
                               split_size=8 << 10)
    before = set(asyncio.all_tasks())
    async with csup_async.open(str(path), profile=prof, concurrency=4) as r:
        task = asyncio.ensure_future(r.scan(["i", "s", "f"]))
        await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    await asyncio.sleep(0.05)
    left = {t for t in asyncio.all_tasks() if t not in before and not t.done()}
    assert left == set()


async def test_open_is_awaitable_and_closes(tmp_path):
    path = tmp_path / "o.csup"
    csup_async.write(str(path), [{"a": 1}])
    r = await csup_async.open(str(path))
    try:
        assert r.num_rows == 1
        assert "super type 0: {a:int64}" in str(r.schema)
    finally:
        await r.close()


async def test_paths_that_planner_skips_cost_no_reads(tmp_path):
    """Top-level null records, all-null targets, mixed record/non-record super types."""
    from csup_async.model.types import INT64, Field, RecordType

    rt = RecordType((Field("a", INT64), Field("b", RecordType((Field("c", INT64),)))))
    vals = [Value(rt, None), Value(rt, {"a": 1, "b": None}), Value(rt, {"a": None, "b": None}),
            7, "s", {"`x.y`": 1} if False else {"x.y": 5}]
    path = tmp_path / "n.csup"
    csup_async.write(str(path), vals)
    async with csup_async.open(str(path)) as r:
        res = await r.scan(["b.c", "a", "`x.y`"])
        assert res.to_pylist() == [
            {"b.c": None, "a": None, "`x.y`": None}, {"b.c": None, "a": 1, "`x.y`": None},
            {"b.c": None, "a": None, "`x.y`": None}, {"b.c": None, "a": None, "`x.y`": None},
            {"b.c": None, "a": None, "`x.y`": None}, {"b.c": None, "a": None, "`x.y`": 5}]
        whole = await r.scan([""])
        assert whole.column("").to_pylist()[3:5] == [7, "s"]
        batches = [row async for b in r.iter_batches(["b.c", "a"], batch_rows=2)
                   for row in b.to_pylist()]
        assert batches == [{k: v for k, v in row.items() if k != "`x.y`"}
                           for row in res.to_pylist()]


async def test_reader_from_meta_runs_a_driver_plan(tmp_path):
    from csup_async.readers.reader import reader_from_meta

    path = tmp_path / "d.csup"
    csup_async.write(str(path), _rows(2000))
    async with csup_async.open(str(path)) as r:
        meta, version = r.meta, r.tail.info.version
        want = (await r.scan(["i", "s"])).to_pylist()
    plan = P.plan_scan(meta, ["i", "s"], "local")  # made "on the driver", nothing available
    r2 = reader_from_meta(str(path), meta, version)
    try:
        res = await r2.execute(plan, ["i", "s"])
    finally:
        await r2.close()
    assert res.to_pylist() == want
    assert res.stats.requests == plan.request_count


async def test_paths_open_as_their_text_and_other_objects_are_refused(tmp_path) -> None:
    """``pathlib.Path`` works wherever a URL does (the pyarrow/polars/pandas habit); a
    value that is neither text nor a path is an ArgumentError naming the argument, not
    a TypeError from inside the store resolution."""
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "p.csup"
    csup_async.write(p, [{"a": 1}, {"a": 2}])
    async with csup_async.open(p) as r:
        assert (await r.scan(["a"])).to_pylist() == [{"a": 1}, {"a": 2}]
    async with csup_async.open_dataset([p, p]) as ds:
        assert (await ds.scan(["a"])).num_rows == 4
    assert csup_async.read(p, ["a"]).to_pylist() == [{"a": 1}, {"a": 2}]
    with csup_async.open_sync(p) as r:
        assert r.num_rows == 2
    for bad in (3, None, b"/tmp/x.csup"):
        with pytest.raises(csup_async.ArgumentError, match="string or a path"):
            csup_async.open(bad)  # type: ignore[arg-type]
    with pytest.raises(csup_async.ArgumentError, match="string or a path"):
        csup_async.open_dataset([p, 3])  # type: ignore[list-item]
