"""Reading Zed lakes: open, pools, branches, time travel, live objects, scans, pruning.

Every lake here is written by bench/lake_builder.py (an independent writer),
on local disk, in moto's S3 and in the GCS emulator.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

import csup_async
from bench.lake_builder import NIL, LakeBuilder, Obj, PoolInfo, ksuid_str, rec
from csup_async.lake import LakeError
from csup_async.lake import ksuid as K
from tests.support.lake_publish import publish

ROW = rec(("ts", "int64"), ("msg", "string"))


def rows(lo: int, hi: int, tag: str, step: int = 1) -> list[dict[str, Any]]:
    return [{"ts": i, "msg": f"{tag}{i}"} for i in range(lo, hi, step)]


class Scenario:
    """A lake with history: loads, an overlap, a delete, a compaction, a branch."""

    def __init__(self, root: Path) -> None:
        b = self.b = LakeBuilder(root)
        p = self.logs = b.create_pool("logs", stride=16)
        self.c_a, self.a = b.load(p, "main", rows(0, 100, "a"), ROW)
        self.c_b, self.bb = b.load(p, "main", rows(100, 200, "b"), ROW)
        self.c_c, self.c = b.load(p, "main", rows(1000, 1100, "c"), ROW)
        self.dev_created = b.create_branch(p, "dev")
        self.c_h, self.h = b.load(p, "dev", rows(500, 600, "h"), ROW)
        self.c_d, self.d = b.load(p, "main", rows(95, 105, "d"), ROW)
        self.c_del = b.commit(p, "main", deletes=[self.bb.id], message="delete b")
        e_rows = rows(0, 100, "a") + rows(95, 105, "d")
        self.e = b.write_object(p, e_rows, ROW)
        self.c_compact = b.commit(p, "main", adds=[self.e], deletes=[self.a.id, self.d.id],
                                  message="compact")
        self.c_f, self.f = b.load(p, "main", rows(2000, 2100, "f"), ROW)
        self.c_g, self.g = b.load(p, "main", rows(2050, 2150, "g"), ROW)
        self.branch_head = b.head(f"{p.dir}/branches")
        r = self.rev = b.create_pool("rev", order="desc", stride=16)
        self.c_r1, self.r1 = b.load(r, "main", rows(0, 50, "r"), ROW)
        self.c_r2, self.r2 = b.load(r, "main", rows(40, 90, "s"), ROW)
        self.empty = b.create_pool("empty", key="k")

    def content(self, commit: bytes) -> list[Obj]:
        return list(self.b.live[commit].values())


def expected_rows(objs: list[Obj], scenario_rows: dict[bytes, list[dict[str, Any]]]
                  ) -> list[tuple[int, str]]:
    out = []
    for o in objs:
        out += [(r["ts"], r["msg"]) for r in scenario_rows[o.id]]
    return sorted(out)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return Scenario(tmp_path_factory.mktemp("lake") / "lake")


def obj_rows(s: Scenario) -> dict[bytes, list[dict[str, Any]]]:
    return {s.a.id: rows(0, 100, "a"), s.bb.id: rows(100, 200, "b"),
            s.c.id: rows(1000, 1100, "c"), s.h.id: rows(500, 600, "h"),
            s.d.id: rows(95, 105, "d"), s.e.id: rows(0, 100, "a") + rows(95, 105, "d"),
            s.f.id: rows(2000, 2100, "f"), s.g.id: rows(2050, 2150, "g")}


STORES = ["local", "s3", "gcs"]


@pytest.fixture(params=STORES)
def lake_url(request: pytest.FixtureRequest, scenario: Scenario) -> tuple[str, dict[str, Any]]:
    return publish(request, scenario.b, f"scenario-{request.param}")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ------------------------------------------------------------------ open ---
def test_open_lake_lists_pools(lake_url: tuple[str, dict[str, Any]], scenario: Scenario) -> None:
    url, opts = lake_url

    async def go() -> Any:
        async with csup_async.open_lake(url, **opts) as lake:
            return [(p.name, p.id, p.key, p.order, p.seek_stride) for p in lake.pools]

    got = run(go())
    assert got == [("empty", scenario.empty.id, ("k",), "asc", 65536),
                   ("logs", scenario.logs.id, ("ts",), "asc", 16),
                   ("rev", scenario.rev.id, ("ts",), "desc", 16)]


def test_branch_resolves_to_live_objects(lake_url: tuple[str, dict[str, Any]],
                                         scenario: Scenario) -> None:
    url, opts = lake_url
    s = scenario

    async def go() -> Any:
        async with csup_async.open_lake(url, **opts) as lake:
            main = await lake.pool("logs")
            dev = await lake.pool("logs@dev")
            by_id = await lake.pool(ksuid_str(s.logs.id) + "@main")
            branches = await lake.branches("logs")
            return main, dev, by_id, branches

    main, dev, by_id, branches = run(go())
    assert main.commit == s.c_g and by_id.commit == s.c_g and dev.commit == s.c_h
    assert {o.id for o in main.objects} == {s.c.id, s.e.id, s.f.id, s.g.id}
    assert {o.id for o in dev.objects} == {s.a.id, s.bb.id, s.c.id, s.h.id}
    assert [(b.name, b.commit) for b in branches] == [("dev", s.c_h), ("main", s.c_g)]
    e = next(o for o in main.objects if o.id == s.e.id)
    assert (e.min.value, e.max.value, e.count, e.size) == (0, 104, 110, s.e.size)


def test_scan_in_key_order_merges_overlaps(lake_url: tuple[str, dict[str, Any]],
                                           scenario: Scenario) -> None:
    url, opts = lake_url
    s = scenario

    async def go() -> Any:
        async with csup_async.open_lake(url, **opts) as lake:
            pool = await lake.pool("logs")
            return await pool.scan(), await pool.count_rows()

    res, n = run(go())
    got = [(r["ts"], r["msg"]) for r in res.to_pylist()]
    want = expected_rows(s.content(s.c_g), obj_rows(s))
    assert [t for t, _ in got] == [t for t, _ in want]  # key order across objects
    assert sorted(got) == want
    assert n == len(want) == res.num_rows


def test_desc_pool_reads_descending(lake_url: tuple[str, dict[str, Any]],
                                    scenario: Scenario) -> None:
    url, opts = lake_url

    async def go() -> Any:
        async with csup_async.open_lake(url, **opts) as lake:
            pool = await lake.pool("rev")
            return (await pool.scan(["ts"])).to_pylist(), await pool.scan(
                ["ts", "msg"], key_range=(45, 47)), pool.objects

    allrows, part, objs = run(go())
    ts = [r["ts"] for r in allrows]
    assert ts == sorted(list(range(0, 50)) + list(range(40, 90)), reverse=True)
    assert sorted((r["ts"], r["msg"]) for r in part.to_pylist()) == [
        (45, "r45"), (45, "s45"), (46, "r46"), (46, "s46"), (47, "r47"), (47, "s47")]
    assert [o.max.value for o in objs] == [89, 49]  # listed by (max, min) descending
    assert all(o.min.value <= o.max.value for o in objs)


def seek_ranges(o: Obj, lo: int, hi: int) -> list[tuple[int, int]]:
    """The byte ranges the builder's own seek entries say a key range needs."""
    out: list[list[int]] = []
    prev_kept = False
    for e in o.seek:
        kept = not (lo > e["max"] or hi < e["min"])
        if kept and prev_kept:
            out[-1][1] += e["length"]
        elif kept:
            out.append([e["offset"], e["length"]])
        prev_kept = kept
    return [(a, n) for a, n in out]


def test_key_range_prunes_objects_and_seek_chunks(lake_url: tuple[str, dict[str, Any]],
                                                  scenario: Scenario) -> None:
    url, opts = lake_url
    s = scenario

    async def go() -> Any:
        async with csup_async.open_lake(url, **opts) as lake:
            pool = await lake.pool("logs")
            plan = await pool.plan(key_range=(2040, 2060))
            res = await pool.scan(["ts", "msg"], filter=[("ts", ">=", 2040), ("ts", "<=", 2060)])
            return plan, res

    plan, res = run(go())
    assert {o.id for o in plan.pruned_by_range} == {s.c.id, s.e.id}
    reads = {r.object.id: r.ranges for r in plan.reads}
    assert set(reads) == {s.f.id, s.g.id}
    for o in (s.f, s.g):
        want = seek_ranges(o, 2040, 2060)
        assert reads[o.id] == want
        assert 0 < sum(n for _, n in want) < o.size  # a true subset of the object
    assert res.stats.bytes_read == sum(n for r in reads.values() for _, n in r)
    got = [(r["ts"], r["msg"]) for r in res.to_pylist()]
    want_rows = sorted([(t, f"f{t}") for t in range(2040, 2061)]
                       + [(t, f"g{t}") for t in range(2050, 2061)])
    assert [t for t, _ in got] == [t for t, _ in want_rows]
    assert sorted(got) == want_rows


# ------------------------------------------------------------ time travel ---
def test_time_travel_by_commit_and_journal_id(scenario: Scenario) -> None:
    s = scenario

    async def go() -> Any:
        async with csup_async.open_lake(str(s.b.root)) as lake:
            at_commit = await lake.pool("logs", at=ksuid_str(s.c_d))
            by_ref = await lake.pool(f"logs@{ksuid_str(s.c_b)}")
            hex_ref = await lake.pool("logs@0x" + s.c_b.hex())
            # branch journal: 1 main, 2-4 loads, 5 dev, 6 dev load, 7 load D
            at_journal = await lake.pool("logs@main", at=7)
            no_dev = lake.branches("logs", at=4)
            rows_d = await at_commit.scan(["ts"], key_range=(90, 110))
            return at_commit, by_ref, hex_ref, at_journal, await no_dev, rows_d

    at_commit, by_ref, hex_ref, at_journal, branches4, rows_d = run(go())
    assert {o.id for o in at_commit.objects} == {s.a.id, s.bb.id, s.c.id, s.d.id}
    assert {o.id for o in by_ref.objects} == {s.a.id, s.bb.id} == {o.id for o in hex_ref.objects}
    assert at_journal.commit == s.c_d and at_journal.journal_id == 7
    assert [b.name for b in branches4] == ["main"]
    ts = [r["ts"] for r in rows_d.to_pylist()]
    want = sorted(list(range(90, 100)) + list(range(100, 111)) + list(range(95, 105)))
    assert ts == want


def test_empty_pool_and_pool_errors(scenario: Scenario) -> None:
    async def go() -> Any:
        async with csup_async.open_lake(str(scenario.b.root)) as lake:
            empty = await lake.pool("empty")
            res = await empty.scan()
            with pytest.raises(LakeError, match="no pool 'nope'"):
                await lake.pool("nope")
            with pytest.raises(LakeError, match="no branch 'zzz'"):
                await lake.pool("logs@zzz")
            return empty, res

    empty, res = run(go())
    assert empty.commit == NIL and empty.objects == [] and res.num_rows == 0


# ----------------------------------------------------------- snapshots ---
def test_journal_snapshot_and_commit_snapshot_are_used(tmp_path: Path) -> None:
    """With snap.zng and <c>.snap.zng present, the entries and commits before them are
    not needed: remove them and the lake still resolves (and only from the snapshots)."""
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", stride=1 << 20)
    objs = []
    for i in range(12):
        c, o = b.load(p, "main", rows(i * 10, i * 10 + 10, f"x{i}-"), ROW)
        objs.append(o)
    snap_commit = c
    b.commit_snapshot(p, snap_commit)
    c_last, o_last = b.load(p, "main", rows(500, 510, "y"), ROW)
    bdir = f"{p.dir}/branches"
    head = b.head(bdir)  # 14: main + 13 loads
    b.journal_snapshot(bdir, ("named", "branches.Config",
                              rec(("ts", "time"), ("name", "string"),
                                  ("commit", ("named", "ksuid.KSUID", "bytes")))),
                       [{"ts": 1, "name": "main", "commit": snap_commit}], head - 1)
    for i in range(1, head - 1):  # entries the snapshot covers
        (b.root / bdir / f"{i}.zng").unlink()
    for o_commit in list(b.live)[:-2]:  # commits older than the snapshot commit
        f = b.root / p.dir / "commits" / f"{ksuid_str(o_commit)}.zng"
        if f.exists():
            f.unlink()

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            pool = await lake.pool("logs")
            return pool, await pool.count_rows()

    pool, n = run(go())
    assert pool.commit == c_last
    assert {o.id for o in pool.objects} == {o.id for o in objs} | {o_last.id}
    assert pool.state.snapshot == snap_commit and pool.state.commits_read == 1
    assert n == 130


def test_head_lagging_behind_the_journal_is_followed(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs")
    b.load(p, "main", rows(0, 10, "a"), ROW)
    b.load(p, "main", rows(10, 20, "b"), ROW, write_head=False)
    c3, _ = b.load(p, "main", rows(20, 30, "c"), ROW, write_head=False)

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            return await lake.pool("logs")

    pool = run(go())
    assert pool.commit == c3 and pool.journal_id == 4


# ------------------------------------------------------------ bad input ---
def broken(tmp_path: Path) -> tuple[LakeBuilder, PoolInfo, bytes, Obj]:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs")
    b.load(p, "main", rows(0, 10, "a"), ROW)
    c, o = b.load(p, "main", rows(10, 20, "b"), ROW)
    return b, p, c, o


def open_pool(root: Path, ref: str = "logs") -> Any:
    async def go() -> Any:
        async with csup_async.open_lake(str(root)) as lake:
            pool = await lake.pool(ref)
            return await pool.scan()

    return run(go())


def test_bad_lake_version(tmp_path: Path) -> None:
    b, *_ = broken(tmp_path)
    from bench.lake_builder import zng

    (b.root / "lake.zng").write_bytes(zng((("named", "lake.LakeMagic", rec(
        ("magic", "string"), ("version", "int64"))), {"magic": "ZED LAKE", "version": 4})))
    with pytest.raises(LakeError, match="unsupported lake version 4") as e:
        open_pool(b.root)
    assert e.value.path.endswith("lake.zng")
    (b.root / "lake.zng").unlink()
    with pytest.raises(LakeError, match="not a Zed lake"):
        open_pool(b.root)


def test_missing_and_torn_journal_entries(tmp_path: Path) -> None:
    b, p, _, _ = broken(tmp_path)
    entry = b.root / p.dir / "branches" / "2.zng"
    good = entry.read_bytes()
    entry.write_bytes(good[:-3])
    with pytest.raises(LakeError, match=r"torn|not a valid ZNG") as e:
        open_pool(b.root)
    assert e.value.path.endswith("branches/2.zng")
    entry.unlink()
    with pytest.raises(LakeError, match="journal entry 2 is missing") as e:
        open_pool(b.root)
    assert e.value.path.endswith("branches/2.zng")
    entry.write_bytes(good)
    (b.root / "pools" / "HEAD").write_bytes(b"banana")
    with pytest.raises(LakeError, match="not a journal ID file") as e:
        open_pool(b.root)
    assert e.value.path.endswith("pools/HEAD")


def test_missing_commit_and_data_object(tmp_path: Path) -> None:
    b, p, c, o = broken(tmp_path)
    data = b.root / p.dir / "data" / f"{o.name}.zng"
    keep = data.read_bytes()
    data.unlink()
    with pytest.raises(LakeError, match=f"data object {o.name} is missing") as e:
        open_pool(b.root)
    assert o.name in e.value.path
    data.write_bytes(keep[:-5])
    with pytest.raises(LakeError, match="bytes, its commit says"):
        open_pool(b.root)
    data.write_bytes(keep)
    (b.root / p.dir / "commits" / f"{ksuid_str(c)}.zng").unlink()
    with pytest.raises(LakeError, match="commit object is missing") as e:
        open_pool(b.root)
    assert ksuid_str(c) in e.value.path


def test_cycle_in_parents(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs")
    c1, _ = b.load(p, "main", rows(0, 10, "a"), ROW)
    c2, _ = b.load(p, "main", rows(10, 20, "b"), ROW)
    # rewrite c1 so that its parent is c2: c2 -> c1 -> c2
    from bench.lake_builder import COMMIT, zng

    (b.root / p.dir / "commits" / f"{ksuid_str(c1)}.zng").write_bytes(zng((COMMIT, {
        "id": c1, "parent": c2, "retries": 0, "author": "x", "date": 1, "message": "",
        "meta": None})))
    with pytest.raises(LakeError, match="cycle in parents"):
        open_pool(b.root)


def test_ksuid_text_round_trip() -> None:
    for k in (NIL, b"\xff" * 20, os.urandom(20), K.new()):
        s = K.to_str(k)
        assert len(s) == 27 and K.parse(s) == k and ksuid_str(k) == s
    assert K.to_str(NIL) == "0" * 27
    assert K.to_str(b"\xff" * 20) == "aWgEPTl1tmebfsQzFP4bxwgy80V"  # segmentio/ksuid's Max


def test_iter_batches_and_count_rows_with_a_filter(scenario: Scenario) -> None:
    s = scenario

    async def go() -> Any:
        async with csup_async.open_lake(str(s.b.root)) as lake:
            pool = await lake.pool("logs")
            batches = [b async for b in pool.iter_batches(["ts"])]
            whole = await pool.scan(["ts"])
            n_range = await pool.count_rows(filter=[("ts", ">", 2090), ("ts", "<=", 2100)])
            n_eq = await pool.count_rows(filter=("ts", "==", 2095))
            return batches, whole, n_range, n_eq

    batches, whole, n_range, n_eq = run(go())
    # one batch per group of overlapping objects: E, C, then F+G merged
    assert [b.num_rows for b in batches] == [110, 100, 200]
    assert [r for b in batches for r in b.to_pylist()] == whole.to_pylist()
    assert (n_range, n_eq) == (9 + 10, 2)  # f2091..f2099 and g2091..g2100; f2095, g2095


def test_pool_rename_and_pools_journal_time_travel(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs")  # pools entry 1
    b.load(p, "main", rows(0, 5, "a"), ROW)
    b.create_pool("other")  # 2
    b.rename_pool(p, "events")  # 3: Delete(logs) + Add(events)

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as now:
            names_now = [q.name for q in now.pools]
            n = await (await now.pool("events")).count_rows()
            with pytest.raises(LakeError, match="no pool 'logs'"):
                await now.pool("logs")
        async with csup_async.open_lake(str(b.root), at=1) as then:
            names_then = [q.name for q in then.pools]
        return names_now, n, names_then

    names_now, n, names_then = run(go())
    assert names_now == ["events", "other"] and n == 5 and names_then == ["logs"]


def test_s3_denials_mean_absent_only_for_probes(range_server: Any) -> None:
    """S3 answers 403 (not 404) for a missing key to credentials without ListBucket: a
    probe (snap.zng, the entry after HEAD, a commit's .snap.zng) then means absent, but a
    denied entry the state needs is an error, never silently missing data."""
    from csup_async import AccessDeniedError
    from tests.support.servers import Fault

    b = LakeBuilder(range_server.root / "bkt" / "lake")
    p = b.create_pool("logs")
    c1, _ = b.load(p, "main", rows(0, 5, "a"), ROW)
    c2, _ = b.load(p, "main", rows(5, 9, "b"), ROW)
    bdir = f"bkt/lake/{p.dir}/branches"
    probes = ["bkt/lake/pools/snap.zng", "bkt/lake/pools/2.zng", f"{bdir}/snap.zng",
              f"{bdir}/4.zng", *(f"bkt/lake/{p.dir}/commits/{ksuid_str(c)}.snap.zng"
                                 for c in (c1, c2))]
    for name in probes:
        range_server.inject(name, Fault.error(403))
    opts = {"endpoint_url": range_server.endpoint, "region": "us-east-1",
            "access_key_id": "k", "secret_access_key": "s"}

    async def go(fail: str | None = None) -> Any:
        if fail:
            range_server.inject(fail, Fault.error(403))
        async with csup_async.open_lake("s3://bkt/lake", **opts) as lake:
            return await (await lake.pool("logs")).count_rows()

    assert run(go()) == 9
    assert {s.name for s in range_server.seen()} >= set(probes)
    with pytest.raises(AccessDeniedError) as e:
        run(go(f"{bdir}/3.zng"))
    assert "branches/3.zng" in str(e.value)
