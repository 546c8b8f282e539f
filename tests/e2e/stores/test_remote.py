"""The reader end to end against real servers on 127.0.0.1: S3 (moto), GCS (emulator),
HTTP (nginx and aiohttp), fsspec (memory).  Same answers as the local file, one tail
request for metadata, exactly the plan's requests for data, version pinning."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest

import csup_async
import planner as P
from csup_async import NotFoundError, ObjectChangedError

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _rows(n: int, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"id": i, "name": rng.bytes(6).hex(), "score": float(rng.random()),
             "tags": [f"t{j}" for j in range(i % 4)], "user": {"login": f"u{i % 37}",
                                                             "age": None if i % 5 else i}}
            for i in range(n)]


def _file(n: int = 20000, seed: int = 1) -> bytes:
    out = io.BytesIO()
    # at import (no fixture yet): our layout, whose open is one tail request
    csup_async.write(out, _rows(n, seed), segment_thresh=32 << 10, target="csup-async")
    return out.getvalue()


DATA = _file()
COLS = ["id", "user.login", "tags"]
# small requests so a scan has several, and a tail smaller than the file
PROFILE = dataclasses.replace(P.get_profile("s3"), max_request=16 << 10, split_size=16 << 10,
                              tail_max=64 << 10, tail_min=16 << 10)


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    import asyncio

    p = tmp_path_factory.mktemp("local") / "f.csup"
    p.write_bytes(DATA)

    async def run():
        async with csup_async.open(str(p)) as r:
            return (await r.scan(COLS)).to_pylist()

    return asyncio.run(run())


async def _check(url: str, expected, **opts):
    async with csup_async.open(url, profile=PROFILE, **opts) as r:
        assert r.open_stats.requests == 1  # trailer + reassembly in one tail request
        plan = await r.plan(COLS)
        res = await r.scan(COLS)
        assert res.to_pylist() == expected
        assert res.stats.requests == plan.request_count > 1
        assert res.stats.bytes_read == plan.bytes_to_read
        got = []
        async for b in r.iter_batches(COLS, batch_rows=4096):
            got += b.to_pylist()
        assert got == expected
    return plan


async def test_s3_moto(moto_s3, expected):
    key = moto_s3.put("data/f.csup", DATA)
    await _check(f"s3://{key}", expected, **moto_s3.store_options())


async def test_gcs_emulator(gcs_emulator, expected, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator.endpoint)
    key = gcs_emulator.put("data/f.csup", DATA)
    await _check(f"gs://{key}", expected)


async def test_http_nginx(nginx_server, expected):
    nginx_server.put("f.csup", DATA)
    await _check(nginx_server.url("f.csup"), expected)


async def test_http_aiohttp_counts_requests_at_the_server(range_server, expected):
    range_server.put("f.csup", DATA)
    plan = await _check(range_server.url("f.csup"), expected)
    seen = range_server.seen("f.csup")
    # open (1 tail) + scan (plan) + iter_batches (the same plan again)
    assert len(seen) == 1 + 2 * plan.request_count
    assert seen[0].headers.get("Range", "").startswith("bytes=-")


async def test_fsspec_memory(expected):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/csup-test/f.csup", DATA)
    await _check("memory://csup-test/f.csup", expected)


async def test_object_replaced_between_open_and_scan(moto_s3):
    key = moto_s3.put("data/changing.csup", DATA)
    async with csup_async.open(f"s3://{key}", profile=PROFILE, **moto_s3.store_options()) as r:
        moto_s3.put("data/changing.csup", _file(20000, seed=2))
        with pytest.raises(ObjectChangedError) as ei:
            await r.scan(COLS)
        assert "changing.csup" in str(ei.value)


async def test_object_replaced_on_http(range_server):
    range_server.put("c.csup", DATA)
    async with csup_async.open(range_server.url("c.csup"), profile=PROFILE) as r:
        range_server.put("c.csup", _file(20000, seed=3))
        with pytest.raises(ObjectChangedError):
            await r.scan(COLS)


async def test_missing_objects_are_not_found(moto_s3, range_server):
    with pytest.raises(NotFoundError, match="nothing-here"):
        await csup_async.open(f"s3://{moto_s3.BUCKET}/nothing-here.csup",
                              **moto_s3.store_options())
    with pytest.raises(NotFoundError):
        await csup_async.open(range_server.url("nothing-here.csup"))


async def test_signed_url_secrets_never_in_errors(range_server):
    url = range_server.url("nope.csup") + "?X-Amz-Signature=supersecret&X-Amz-Credential=abc"
    with pytest.raises(NotFoundError) as ei:
        await csup_async.open(url)
    assert "supersecret" not in str(ei.value) and "abc" not in str(ei.value)


async def test_shared_store_and_dataset_over_s3_prefix(moto_s3):
    from csup_async.stores import S3Store

    for i in range(3):
        moto_s3.put(f"ds/part-{i}.csup", _file(500, seed=10 + i))
    store = S3Store(**moto_s3.store_options())
    try:
        async with csup_async.open_dataset(f"s3://{moto_s3.BUCKET}/ds/", store=store) as ds:
            assert len(ds.files) == 3
            res = await ds.scan(["id"])
            assert res.column("id").to_pylist() == list(range(500)) * 3
        async with csup_async.open_dataset(f"s3://{moto_s3.BUCKET}/ds/part-[02].csup",
                                           store=store) as ds:
            assert [f.rsplit("/", 1)[1] for f in ds.files] == ["part-0.csup", "part-2.csup"]
        # the store outlives the datasets that borrowed it
        async with csup_async.open(f"s3://{moto_s3.BUCKET}/ds/part-1.csup", store=store) as r:
            assert await r.count_rows() == 500
    finally:
        await store.close()


async def test_small_file_costs_one_round_trip(range_server):
    out = io.BytesIO()
    csup_async.write(out, _rows(50))
    range_server.put("small.csup", out.getvalue())
    async with csup_async.open(range_server.url("small.csup")) as r:
        res = await r.scan(["id", "user.login"])
        assert res.stats.requests == 0
    assert len(range_server.seen("small.csup")) == 1
