"""Committing to Zed lakes: pool.load round trips, its on-disk form, concurrent loaders."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import csup_async
from bench.lake_builder import NIL, LakeBuilder, ksuid_str
from csup_async.format import bsup
from csup_async.lake import ksuid as K
from csup_async.lake.objects import LakeIO
from csup_async.model.types import NamedType, RecordType, underlying
from tests.support.lake_publish import publish


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def values(buf: bytes) -> list[tuple[Any, Any]]:
    return [(t, bsup.decode_value(t, b)) for t, b in bsup.iter_raw_values(buf)]


def shape(t: Any) -> Any:
    """A type as (name, [(field, shape)]) to compare with the notes."""
    name = t.name if isinstance(t, NamedType) else None
    u = underlying(t)
    if isinstance(u, RecordType):
        return (name, [(f.name, shape(f.type)) for f in u.fields])
    return name or str(u)


@pytest.fixture(params=["local", "s3", "gcs"])
def fresh_lake(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    b = LakeBuilder(tmp_path / "lake")
    b.create_pool("logs", stride=32)
    b.create_pool("rev", order="desc", stride=32)
    return publish(request, b, f"load-{request.param}-{tmp_path.name}")


def test_load_round_trip(fresh_lake: tuple[str, dict[str, Any]]) -> None:
    url, opts = fresh_lake
    batch1 = [{"ts": (i * 7919) % 500, "msg": f"a{i}"} for i in range(300)]
    batch2 = [{"ts": 400 + i, "msg": f"b{i}"} for i in range(200)]

    async def go() -> Any:
        async with csup_async.open_lake(url, **opts) as lake:
            pool = await lake.pool("logs@main")
            c1 = await pool.load(batch1, message="first", author="tester")
            c2 = await pool.load(batch2)
            after = await lake.pool("logs")
            res = await after.scan()
            part = await after.scan(["ts", "msg"], key_range=(420, 430))
            plan = await after.plan(key_range=(420, 430))
            first = await lake.pool("logs", at=c1)
            rev = await lake.pool("rev@main")
            await rev.load(batch1)
            rev_rows = (await (await lake.pool("rev")).scan(["ts"])).to_pylist()
            return c2, after, res, part, plan, first, rev_rows

    c2, after, res, part, plan, first, rev_rows = run(go())
    assert after.commit_id == c2 and len(after.objects) == 2
    assert len(first.objects) == 1 and first.objects[0].count == 300
    assert first.objects[0].id in {o.id for o in after.objects}
    got = [(r["ts"], r["msg"]) for r in res.to_pylist()]
    assert sorted(got) == sorted((r["ts"], r["msg"]) for r in batch1 + batch2)
    assert [t for t, _ in got] == sorted(t for t, _ in got)
    want = sorted((r["ts"], r["msg"]) for r in batch1 + batch2 if 420 <= r["ts"] <= 430)
    assert sorted((r["ts"], r["msg"]) for r in part.to_pylist()) == want
    assert all(r.ranges is not None and r.bytes < r.object.size for r in plan.reads)
    assert [r["ts"] for r in rev_rows] == sorted((r["ts"] for r in batch1), reverse=True)


def test_loaded_objects_match_the_layout(tmp_path: Path) -> None:
    """What pool.load writes, field by field, as LAKE-NOTES.md describes it."""
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", stride=40)
    d = b.create_pool("rev", order="desc", stride=40)
    rows = [{"ts": np.datetime64(1_700_000_000_000_000_000 + i * 1000, "ns"), "n": i}
            for i in range(200)]

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            c = await (await lake.pool("logs")).load(rows, message="m", author="a")
            cd = await (await lake.pool("rev")).load(rows)
            return c, cd

    c, cd = run(go())
    root = b.root
    bdir = root / p.dir / "branches"
    assert (bdir / "HEAD").read_bytes() == b"2" and (bdir / "TAIL").read_bytes() == b"1 0"
    [(jt, jv)] = values((bdir / "2.zng").read_bytes())
    assert shape(jt) == ("journal.Update", [("entry", ("branches.Config", [
        ("ts", "time"), ("name", "string"), ("commit", "ksuid.KSUID")]))])
    assert jv["entry"]["name"] == "main" and K.to_str(jv["entry"]["commit"]) == c
    commit = (root / p.dir / "commits" / f"{c}.zng").read_bytes()
    assert commit[-1] == 0xFF
    (ct, cv), (at, av) = values(commit)
    assert shape(ct) == ("commits.Commit", [
        ("id", "ksuid.KSUID"), ("parent", "ksuid.KSUID"), ("retries", "uint8"),
        ("author", "string"), ("date", "time"), ("message", "string"), ("meta", "null")])
    assert (K.to_str(cv["id"]), cv["parent"], cv["retries"], cv["author"], cv["message"]) == (
        c, NIL, 0, "a", "m")
    assert shape(at) == ("commits.Add", [("commit", "ksuid.KSUID"), ("object", ("data.Object", [
        ("id", "ksuid.KSUID"), ("min", "time"), ("max", "time"), ("count", "uint64"),
        ("size", "int64")]))])
    obj = av["object"]
    assert av["commit"] == cv["id"] and obj["count"] == 200
    assert obj["min"] == rows[0]["ts"] and obj["max"] == rows[-1]["ts"]
    data = (root / p.dir / "data" / f"{ksuid_str(obj['id'])}.zng").read_bytes()
    assert len(data) == obj["size"] and data[-1] == 0xFF
    seek = values((root / p.dir / "data" / f"{ksuid_str(obj['id'])}-seek.zng").read_bytes())
    assert shape(seek[0][0]) == (None, [("min", "time"), ("max", "time"), ("val_off", "uint64"),
                                        ("val_cnt", "uint64"), ("offset", "uint64"),
                                        ("length", "uint64")])
    assert len(seek) > 2  # 40-byte stride over 8-byte keys: a chunk per 5 rows
    pos = off = 0
    for _, e in seek:  # entries tile the object; each is a standalone stream of val_cnt rows
        assert (e["offset"], e["val_off"]) == (pos, off)
        chunk = data[e["offset"]:e["offset"] + e["length"]]
        got = [v["ts"] for _, v in values(chunk)]
        assert chunk[-1] == 0xFF and len(got) == e["val_cnt"]
        assert got[0] == e["min"] and got[-1] == e["max"] and e["min"] <= e["max"]
        pos, off = pos + e["length"], off + e["val_cnt"]
    assert (pos, off) == (len(data), 200)
    # desc: rows stored descending, min <= max in the object and in each seek entry
    _, (_, dav) = values((root / d.dir / "commits" / f"{cd}.zng").read_bytes())
    dobj = dav["object"]
    assert dobj["min"] == rows[0]["ts"] and dobj["max"] == rows[-1]["ts"]
    dseek = values((root / d.dir / "data" / f"{ksuid_str(dobj['id'])}-seek.zng").read_bytes())
    assert dseek[0][1]["max"] == rows[-1]["ts"] and all(
        e["min"] <= e["max"] for _, e in dseek)


def test_journal_snapshot_written_after_ten_entries(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs")

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            for i in range(11):
                await (await lake.pool("logs")).load([{"ts": i, "x": "y"}])
            return await lake.pool("logs"), await lake.pool("logs", at=11)

    pool, at11 = run(go())
    # entry 1 adds main, loads are 2..12: 11 is the first entry more than 10 past none
    snap = values((b.root / p.dir / "branches" / "snap.zng").read_bytes())
    assert snap[0][1] == 11 and str(snap[0][0]) == "uint64"
    assert snap[1][1]["name"] == "main" and K.to_str(snap[1][1]["commit"]) == at11.commit_id
    assert len(pool.objects) == 11 and pool.journal_id == 12


@pytest.fixture(params=["local", "s3"])
def race_lake(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    b = LakeBuilder(tmp_path / "lake")
    b.create_pool("logs")
    return publish(request, b, f"race-{request.param}-{tmp_path.name}")


def test_concurrent_loaders_never_lose_a_commit(race_lake: tuple[str, dict[str, Any]]) -> None:
    """Eight writers, each with its own lake handle and store, load at once: every
    commit is on main afterwards, in one parent chain (GCS: see test below)."""
    url, opts = race_lake
    n = 8

    async def writer(i: int) -> str:
        async with csup_async.open_lake(url, **opts) as lake:
            pool = await lake.pool("logs")
            return await pool.load([{"ts": i, "who": f"w{i}"}], author=f"w{i}")

    async def go() -> Any:
        commits = await asyncio.gather(*(writer(i) for i in range(n)))
        async with csup_async.open_lake(url, **opts) as lake:
            pool = await lake.pool("logs")
            res = await pool.scan(["who"])
            return commits, pool, res

    commits, pool, res = run(go())
    assert sorted(r["who"] for r in res.to_pylist()) == sorted(f"w{i}" for i in range(n))
    assert len(pool.objects) == n and pool.commit_id in commits
    assert pool.journal_id == n + 1  # main's Add, then one Update per load


def test_put_if_absent(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    async def check(io: LakeIO) -> list[bool]:
        return [await io.put_if_absent("x/1.zng", b"a"), await io.put_if_absent("x/1.zng", b"b")]

    from csup_async.stores import LocalStore

    assert run(check(LakeIO(LocalStore(), str(tmp_path)))) == [True, False]
    assert (tmp_path / "x" / "1.zng").read_bytes() == b"a"
    s3 = request.getfixturevalue("moto_s3")

    async def on_s3() -> list[bool]:
        from csup_async.stores import S3Store

        async with S3Store(**s3.store_options()) as store:
            return await check(LakeIO(store, f"{s3.BUCKET}/pia-{tmp_path.name}"))

    assert run(on_s3()) == [True, False]


def test_load_writes_a_csup_copy(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs")
    rows = [{"ts": 50 - i, "s": f"v{i}"} for i in range(50)]

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            await (await lake.pool("logs")).load(rows, csup=True)
            pool = await lake.pool("logs")
            o = pool.objects[0]
            r = await csup_async.open(str(b.root / p.dir / "data" / f"{o.name}.csup"))
            async with r:
                direct = (await r.scan(["ts", "s"])).to_pylist()
            more = [{"ts": 25 + i, "s": f"w{i}", "wide": os.urandom(500).hex()}
                    for i in range(30)]
            await pool.load(more, csup=True)
            pool = await lake.pool("logs")
            via_csup = await pool.scan(["s"], csup=True)
            via_zng = await pool.scan(["s"], csup=False)
            auto = await pool.scan(["s", "wide"])
            return direct, via_csup, via_zng, auto, await pool.has_csup()

    direct, via_csup, via_zng, auto, has = run(go())
    assert direct == sorted(rows, key=lambda r: r["ts"])
    assert has and via_csup.to_pylist() == via_zng.to_pylist() == [
        {"s": r["s"]} for r in auto.to_pylist()]
    assert sum(r["wide"] is not None for r in auto.to_pylist()) == 30
    # small objects: "auto" keeps to the .zng objects (cached, immutable, from via_zng)
    assert auto.stats.requests == 0


def test_csup_copy_of_a_large_object_reads_only_the_projection(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    b.create_pool("logs")
    rows = [{"ts": i, "s": f"v{i}", "wide": os.urandom(400).hex()} for i in range(2000)]

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            await (await lake.pool("logs")).load(rows, csup=True)
            pool = await lake.pool("logs")
            return (await pool.scan(["s"]), await pool.scan(["s"], csup=False),
                    pool.objects[0].size)

    auto, zng, size = run(go())
    assert size > 1 << 20 and auto.to_pylist() == zng.to_pylist()
    assert zng.stats.bytes_read == size and auto.stats.bytes_read < size / 4


def test_gcs_put_if_absent_sends_the_precondition() -> None:
    """gcp-storage-emulator ignores ``ifGenerationMatch`` (it overwrote in our check), so
    GCS's atomic create is checked here against a small in-process server that honours
    it as GCS does (412 when the object exists); the emulator tests cover the rest."""
    from aiohttp import web

    from csup_async.stores import GCSStore

    seen: list[dict[str, str]] = []
    objects: dict[str, bytes] = {}

    async def upload(request: web.Request) -> web.Response:
        q = dict(request.query)
        seen.append(q)
        name = q["name"]
        if q.get("ifGenerationMatch") == "0" and name in objects:
            return web.json_response({"error": {"code": 412}}, status=412)
        objects[name] = await request.read()
        return web.json_response({"name": name, "generation": "1"})

    async def go() -> list[bool]:
        app = web.Application()
        app.router.add_post("/upload/storage/v1/b/{bucket}/o", upload)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with GCSStore(endpoint=f"http://127.0.0.1:{port}", anonymous=True) as st:
                io = LakeIO(st, "bkt/lake")
                return [await io.put_if_absent("p/branches/2.zng", b"a"),
                        await io.put_if_absent("p/branches/2.zng", b"b"),
                        await io.put("p/branches/HEAD", b"2") is None]
        finally:
            await runner.cleanup()

    assert run(go()) == [True, False, True]
    assert objects == {"lake/p/branches/2.zng": b"a", "lake/p/branches/HEAD": b"2"}
    assert [q.get("ifGenerationMatch") for q in seen] == ["0", "0", None]


@pytest.fixture(params=["local", "s3", "gcs"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    if request.param == "local":
        return str(tmp_path / "new"), {}
    if request.param == "s3":
        s3 = request.getfixturevalue("moto_s3")
        return f"s3://{s3.BUCKET}/new-{tmp_path.name}", s3.store_options()
    gcs = request.getfixturevalue("gcs_emulator")
    return f"gs://{gcs.BUCKET}/new-{tmp_path.name}", {"endpoint": gcs.endpoint}


def test_create_lake_pool_and_branch(empty_url: tuple[str, dict[str, Any]]) -> None:
    url, opts = empty_url

    async def go() -> Any:
        await csup_async.create_lake(url, **opts)
        with pytest.raises(csup_async.LakeError, match="already exists"):
            await csup_async.create_lake(url, **opts)
        async with csup_async.open_lake(url, **opts) as lake:
            assert lake.pools == []
            cfg = await lake.create_pool("logs", key="ts", order="asc", seek_stride=100)
            await lake.create_pool("other")
            with pytest.raises(csup_async.LakeError, match="pool 'logs' already exists"):
                await lake.create_pool("logs")
            await (await lake.pool("logs")).load([{"ts": i, "v": "x"} for i in range(10)])
            await lake.create_branch("logs", "dev")
            await (await lake.pool("logs@dev")).load([{"ts": 99, "v": "dev"}])
        async with csup_async.open_lake(url, **opts) as lake:  # a fresh reader sees it all
            pools = [(p.name, p.key, p.order, p.seek_stride) for p in lake.pools]
            main = await (await lake.pool("logs")).count_rows()
            dev = await (await lake.pool("logs@dev")).count_rows()
            return cfg, pools, main, dev

    cfg, pools, main, dev = run(go())
    assert pools == [("logs", ("ts",), "asc", 100), ("other", ("ts",), "desc", 65536)]
    assert cfg.name == "logs" and (main, dev) == (10, 11)


def test_time_keys_and_mixed_columns_read_back_exactly(tmp_path: Path) -> None:
    import datetime as dt

    b = LakeBuilder(tmp_path / "lake")
    b.create_pool("t")
    t0 = np.datetime64("2026-01-02T03:04:05.123456789", "ns")
    rows = [{"ts": t0 + np.timedelta64(i, "s"), "x": (t0 if i % 2 else f"s{i}"),
             "d": np.timedelta64(i, "ms")} for i in range(20)]

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            await (await lake.pool("t")).load(rows)
            pool = await lake.pool("t")
            whole = await pool.scan()
            lo = dt.datetime(2026, 1, 2, 3, 4, 10, tzinfo=dt.UTC)
            part = await pool.scan(["ts"], filter=[("ts", ">=", lo),
                                                   ("ts", "<", t0 + np.timedelta64(8, "s"))])
            return whole, part, await pool.explain(key_range=(t0, t0))

    whole, part, explain = run(go())
    assert whole.to_pylist() == sorted(rows, key=lambda r: r["ts"])
    assert [r["ts"] for r in part.to_pylist()] == [t0 + np.timedelta64(i, "s")
                                                  for i in range(5, 8)]
    assert explain["kept"][0]["span"][0] == "2026-01-02T03:04:05.123456789"
