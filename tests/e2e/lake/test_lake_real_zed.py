"""A lake made by the real ``zed`` v1.7.0, read by :func:`csup_async.lake.open_lake`.

``tests/data/real/lake/`` was built by ``zed`` itself (init, create -orderby, loads,
branch, merge, deletes by ID and by predicate, a vector copy; see
``tests/support/reallake.py``), and ``lake-expected.json`` holds, for every step,
the branch journal position it made, each branch's commit (``zed ls``) and each
commit's rows (``zed query -j``).  Every branch at every journal position, and every
commit, must read as zed printed it.  The live tests (skipped without the binary)
check the other direction: a load by this library into a copy of that lake, read
back by ``zed query`` and listed by ``zed log``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from csup_async.lake import open_lake
from tests.support import realtools
from tests.support.zedjson import go_time

REAL = Path(__file__).resolve().parents[3] / "tests" / "data" / "real"
LAKE = REAL / "lake"
EXPECTED = json.loads((REAL / "lake-expected.json").read_text())


def _zed_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our rows as ``zq -j`` prints them (times in RFC 3339)."""
    return [{k: go_time(int(v.astype("datetime64[ns]").astype(np.int64)))
             if isinstance(v, np.datetime64) else v for k, v in r.items()} for r in rows]


STEPS = [(s["journal"], s["op"], b, c) for s in EXPECTED["steps"]
         for b, c in s["branches"].items()]


@pytest.mark.parametrize(("journal", "op", "branch", "commit"), STEPS,
                         ids=[f"{j}-{b}" for j, _, b, _ in STEPS])
async def test_every_branch_at_every_journal_position(journal: int, op: str, branch: str,
                                                      commit: str) -> None:
    async with open_lake(str(LAKE)) as lake:
        pool = await lake.pool(f"logs@{branch}", at=journal)
        assert pool.commit_id == commit, op
        rows = (await pool.scan()).to_pylist()
    assert _zed_rows(rows) == EXPECTED["commits"][commit], op


@pytest.mark.parametrize("commit", [c for c in EXPECTED["commits"] if c.strip("0")])
async def test_every_commit(commit: str) -> None:
    async with open_lake(str(LAKE)) as lake:
        pool = await lake.pool("logs", at=commit)
        rows = (await pool.scan()).to_pylist()
        assert await pool.count_rows() == len(EXPECTED["commits"][commit])
    assert _zed_rows(rows) == EXPECTED["commits"][commit]


async def test_branches_now_are_those_zed_listed_last() -> None:
    last = EXPECTED["steps"][-1]["branches"]
    async with open_lake(str(LAKE)) as lake:
        got = {b.name: (await lake.pool(f"logs@{b.name}")).commit_id
               for b in await lake.branches("logs")}
    assert got == last


def _zed(lake: Path, home: Path, *args: str) -> bytes:
    zed = realtools.require(realtools.ZED_1_7, "zed")
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # zed keeps its config there
    try:
        return realtools.run(zed, "-lake", str(lake), *args)
    finally:
        if old is not None:
            os.environ["HOME"] = old


async def test_real_zed_reads_and_logs_our_load(tmp_path: Path) -> None:
    realtools.require(realtools.ZED_1_7, "zed")
    lake_dir, home = tmp_path / "lake", tmp_path / "home"
    home.mkdir()
    shutil.copytree(LAKE, lake_dir)
    ts0 = np.datetime64("2024-01-01T00:00:00", "ns")
    rows = [{"ts": ts0 + np.timedelta64(i, "s"), "id": 1000 + i, "msg": f"ours {i}",
             "tags": ["x"], "extra": None if i % 2 else i} for i in range(7)]
    async with open_lake(str(lake_dir)) as lake:
        pool = await lake.pool("logs@dev")
        commit = await pool.load(rows, message="loaded by csup-async", author="tester")
        ours = _zed_rows((await (await lake.pool("logs@dev")).scan()).to_pylist())
    printed = _zed(lake_dir, home, "query", "-j", "from logs@dev").decode().splitlines()
    assert [json.loads(x) for x in printed] == ours
    assert [r["id"] for r in ours][-7:] == [1000 + i for i in range(7)]
    log = _zed(lake_dir, home, "log", "-use", "logs@dev").decode()
    assert f"commit {commit}" in log and "loaded by csup-async" in log
    assert "tester" in log
    listed = _zed(lake_dir, home, "ls", "logs").decode()
    assert f"logs@dev commit {commit}" in listed


async def test_zed_vector_copies_are_read_as_vng(tmp_path: Path) -> None:
    """``zed vector add`` wrote a ``.vng`` beside one object and a vector commit: a
    columnar scan reads that copy (here the only one left: its ``.zng`` is removed)."""
    lake_dir = tmp_path / "lake"
    shutil.copytree(LAKE, lake_dir)
    (vng,) = lake_dir.glob("*/data/*.vng")
    vng.with_suffix(".zng").unlink()
    commit = EXPECTED["steps"][-1]["branches"]["main"]
    cols = ["ts", "id", "msg", "tags", "extra"]
    async with open_lake(str(lake_dir)) as lake:
        pool = await lake.pool("logs@main")
        assert sum(pool.has_vector(o) for o in pool.objects) == 1
        rows = (await pool.scan(cols, csup=True)).to_pylist()
    assert _zed_rows(rows) == EXPECTED["commits"][commit]
