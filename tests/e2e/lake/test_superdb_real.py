"""A SuperDB database made by the real ``super db`` v0.3.0, read by ``open_lake``; and
our ``lake load`` into it, read by the real ``super db`` (live, when built).

``tests/data/real/superdb-0.3/`` was built by ``super`` itself (the history of
``tests/support/superdb_lake.py``: loads, a branch merged back, deletes, a ``.csup``
vector copy), and ``superdb-0.3-expected.json`` holds for every step each branch's
commit and the journal position, and each commit's rows as ``super db -j`` printed
them: every branch at every position, and every commit, must read the same.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from csup_async.lake import open_lake
from tests.support import realtools
from tests.support.zedjson import go_time

REAL = Path(__file__).resolve().parents[3] / "tests" / "data" / "real"
SUPER_MAIN = realtools.Tool("super", "github.com/brimdata/super", "main")
#: name -> (database, what super printed, the tool that made it)
DBS = {name: (REAL / f"superdb-{name}",
              json.loads((REAL / f"superdb-{name}-expected.json").read_text()), tool)
       for name, tool in (("0.3", realtools.SUPER_0_3), ("main", SUPER_MAIN))}


def _db(name: str) -> tuple[Path, dict]:
    """The database and its expectations; main's (BSUP 5) only when this build reads it."""
    if name == "main" and importlib.util.find_spec("csup_async.format.superdb.bsup5") is None:
        pytest.skip("BSUP version 5 (super main) is not read by this build yet")
    db, expected, _ = DBS[name]
    return db, expected


def _rows(rows: list[dict]) -> list[dict]:
    """Our rows as ``super -j`` prints them (times in RFC 3339)."""
    return [{k: go_time(int(v.astype("datetime64[ns]").astype(np.int64)))
             if isinstance(v, np.datetime64) else v for k, v in r.items()} for r in rows]


STEPS = [(name, s["journal"], s["op"], b, c) for name, (_, e, _) in DBS.items()
         for s in e["steps"] for b, c in s["branches"].items()]
COMMITS = [(name, c) for name, (_, e, _) in DBS.items() for c in e["commits"] if c.strip("0")]


@pytest.mark.parametrize(("name", "journal", "op", "branch", "commit"), STEPS,
                         ids=[f"{n}-{j}-{b}" for n, j, _, b, _ in STEPS])
async def test_every_branch_at_every_journal_position(name, journal, op, branch,
                                                      commit) -> None:
    DB, EXPECTED = _db(name)
    async with open_lake(str(DB)) as lake:
        pool = await lake.pool(f"logs@{branch}", at=journal)
        assert pool.commit_id == commit, op
        rows = (await pool.scan()).to_pylist()
    assert _rows(rows) == EXPECTED["commits"][commit], op


@pytest.mark.parametrize(("name", "commit"), COMMITS)
async def test_every_commit(name: str, commit: str) -> None:
    DB, EXPECTED = _db(name)
    async with open_lake(str(DB)) as lake:
        pool = await lake.pool("logs", at=commit)
        rows = (await pool.scan()).to_pylist()
        assert await pool.count_rows() == len(EXPECTED["commits"][commit])
    assert _rows(rows) == EXPECTED["commits"][commit]


@pytest.mark.parametrize("name", list(DBS))
async def test_key_pruning_and_the_csup_copy(name: str) -> None:
    """A key filter prunes objects by their min/max; the one object with a ``.csup``
    copy (``super db vector add``: CSUP v16, or v23 on main) reads the same through it."""
    DB, EXPECTED = _db(name)
    last = EXPECTED["steps"][-1]["branches"]["main"]
    want = EXPECTED["commits"][last]
    async with open_lake(str(DB)) as lake:
        pool = await lake.pool("logs@main")
        ts = sorted(r["ts"] for r in want)
        some = (await pool.scan(filter=f"ts >= '{ts[-3]}'")).to_pylist()
        assert _rows(some) == [r for r in want if r["ts"] >= ts[-3]]
        whole = (await pool.scan(csup=True)).to_pylist()
    assert _rows(whole) == want


@pytest.mark.parametrize("name", list(DBS))
async def test_branches_now_are_those_super_listed_last(name: str) -> None:
    DB, EXPECTED = _db(name)
    last = EXPECTED["steps"][-1]["branches"]
    async with open_lake(str(DB)) as lake:
        got = {b.name: (await lake.pool(f"logs@{b.name}")).commit_id
               for b in await lake.branches("logs")}
    assert got == last


@pytest.mark.parametrize("name", list(DBS))
async def test_real_super_reads_our_load(tmp_path: Path, name: str) -> None:
    DB, _ = _db(name)
    exe = realtools.require(DBS[name][2], "super")
    db = tmp_path / "db"
    shutil.copytree(DB, db)
    ts0 = np.datetime64("2024-01-01T00:00:00", "ns")
    rows = [{"ts": ts0 + np.timedelta64(i, "s"), "id": 1000 + i, "msg": f"ours {i}",
             "tags": ["x"], "extra": None if i % 2 else i} for i in range(7)]
    async with open_lake(str(db)) as lake:
        pool = await lake.pool("logs@dev")
        commit = await pool.load(rows, message="loaded by csup-async", author="tester",
                                 csup=True)
        ours = _rows((await (await lake.pool("logs@dev")).scan()).to_pylist())
    printed = realtools.run(exe, "db", "-db", str(db), "-j", "-c", "from logs@dev")
    assert [json.loads(x) for x in printed.decode().splitlines()] == ours
    assert [r["id"] for r in ours][-7:] == [1000 + i for i in range(7)]
    log = realtools.run(exe, "db", "-db", str(db), "log", "-use", "logs@dev").decode()
    assert f"commit {commit}" in log and "loaded by csup-async" in log
    # the .csup copy is committed as a vector (``commits.AddVector``), as super lists it
    vectors = realtools.run(exe, "db", "-db", str(db), "-j", "-c",
                            "from logs@dev:vectors | values ksuid(id)").decode().split()
    async with open_lake(str(db)) as lake:
        pool = await lake.pool("logs@dev")
        assert sorted(json.loads(v) for v in vectors) == sorted(
            o.name for o in pool.objects if pool.has_vector(o))
        assert _rows((await pool.scan(csup=True)).to_pylist()) == ours


def _record_types(path: Path) -> list[str]:
    """The record types of a SuperDB database object (BSUP 2 or 5), as text."""
    from csup_async.format.superdb import bsup2, bsup5

    data = path.read_bytes()
    if data[:1] == b"\x85":
        return [str(t) for t, _ in bsup5.read_values(data)]
    assert data[:1] == b"\x82", path
    return [str(t) for t, _ in bsup2.read_values(data, bsup2.V2)]


async def _create_pool_and_branch(db: Path) -> None:
    ts0 = np.datetime64("2025-01-01T00:00:00", "ns")
    async with open_lake(str(db)) as lake:
        await lake.create_pool("p2", key="ts", order="asc")
        await lake.create_branch("logs", "b2")
        await (await lake.pool("p2@main")).load(
            [{"ts": ts0 + np.timedelta64(i, "s"), "n": i} for i in range(3)])
        await (await lake.pool("logs@b2")).load([{"ts": ts0, "id": 99, "msg": "b2"}])


@pytest.mark.parametrize("name", list(DBS))
async def test_create_pool_and_branch_write_supers_records(tmp_path: Path, name: str) -> None:
    """``create_pool``/``create_branch`` in a SuperDB database write journal entries in
    its BSUP version, typed as super's own (``pools.Config`` with an ``order.SortKey``,
    no ``seek_stride`` on main), and ``open_lake`` reads them back."""
    DB, _ = _db(name)
    db = tmp_path / "db"
    shutil.copytree(DB, db)
    await _create_pool_and_branch(db)
    pools = sorted((db / "pools").glob("*.bsup"), key=lambda p: int(p.stem))
    assert _record_types(pools[-1]) == _record_types(pools[0])  # super's own first entry
    async with open_lake(str(db)) as lake:
        cfg = lake.pool_config("p2")
        assert (cfg.order, cfg.key) == ("asc", ("ts",))
        assert [r["n"] for r in (await (await lake.pool("p2@main")).scan()).to_pylist()] == \
            [0, 1, 2]
        assert "b2" in {b.name for b in await lake.branches("logs")}
    bdir = db / cfg.id_str / "branches"
    first = sorted(bdir.glob("*.bsup"), key=lambda p: int(p.stem))[0]
    logs_dir = next(p for p in DB.iterdir() if p.is_dir() and p.name != "pools")
    # (super's own first branch entry: journal.Add of main)
    assert _record_types(first) == _record_types(logs_dir / "branches" / "1.bsup")


@pytest.mark.parametrize("name", list(DBS))
async def test_real_super_reads_our_new_pool_and_branch(tmp_path: Path, name: str) -> None:
    DB, _ = _db(name)
    exe = realtools.require(DBS[name][2], "super")
    db = tmp_path / "db"
    shutil.copytree(DB, db)
    await _create_pool_and_branch(db)
    listed = realtools.run(exe, "db", "-db", str(db), "ls").decode()
    assert "p2 " in listed and "key ts order asc" in listed
    assert "logs@b2 commit" in realtools.run(exe, "db", "-db", str(db), "ls", "logs").decode()
    rows = realtools.run(exe, "db", "-db", str(db), "-j", "-c", "from p2@main").decode()
    assert [json.loads(x)["n"] for x in rows.splitlines()] == [0, 1, 2]
    rows = realtools.run(exe, "db", "-db", str(db), "-j", "-c", "from logs@b2").decode()
    assert json.loads(rows.splitlines()[-1])["msg"] == "b2"
