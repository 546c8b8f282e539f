"""``lake load`` into a SuperDB database of super main (492eab8), judged without the tool.

``tests/data/real/superdb-main-ours/`` is what our load added to the database super main
made (``tests/support/superdb_ours.py``), and ``superdb-main-ours-expected.json`` what
the real ``super db`` printed for it afterwards.  Here: that overlay reads through
``open_lake`` as super printed it, and a load made now writes the same files with the
same record types, which are those super main writes itself (its own commit objects
and journal entries in ``superdb-main/`` are the model).  The live test against the
binary is ``test_superdb_real.py::test_real_super_reads_our_load[main]``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from csup_async.format.superdb import bsup5
from csup_async.lake import open_lake
from tests.e2e.lake.test_superdb_real import _rows
from tests.support import superdb_ours as S

EXPECTED = json.loads(S.EXPECTED.read_text())
POOL_DIR = next(p.name for p in S.BASE.iterdir() if p.is_dir() and p.name != "pools")


def _present(rows: list[dict]) -> list[dict]:
    """Rows without their null fields: the pool reads as one Arrow table, where a field
    only some rows have (``geo``) is null in the others, which super prints without it."""
    return [{k: v for k, v in r.items() if v is not None} for r in rows]


def _overlaid(tmp_path: Path) -> Path:
    db = tmp_path / "db"
    shutil.copytree(S.BASE, db)
    shutil.copytree(S.OURS, db, dirs_exist_ok=True)
    return db


def _types(path: Path) -> list[str]:
    """The type of each record of a BSUP version-5 object, as text."""
    data = path.read_bytes()
    assert data[:1] == b"\x85", path  # BSUP version 5, as super main writes
    return [str(t) for t, _ in bsup5.read_values(data)]


def _shape(rel: str) -> str:
    """A file's place with its KSUIDs and journal numbers left out."""
    return re.sub(r"[0-9A-Za-z]{27}", "K", re.sub(r"/\d+\.bsup$", "/N.bsup", rel))


@pytest.mark.parametrize("branch", ["main", "dev"])
async def test_open_lake_reads_what_super_printed(tmp_path: Path, branch: str) -> None:
    want = EXPECTED["branches"][branch]
    async with open_lake(str(_overlaid(tmp_path))) as lake:
        pool = await lake.pool(f"logs@{branch}")
        assert pool.commit_id == EXPECTED["commits"][branch]
        assert _present(_rows((await pool.scan()).to_pylist())) == _present(want["rows"])
        assert sorted(o.name for o in pool.objects) == sorted(want["objects"])
        assert sorted(o.name for o in pool.objects
                      if pool.has_vector(o)) == sorted(want["vectors"])
        if want["vectors"]:  # our .csup copy (CSUP v23) reads the same rows
            got = _rows((await pool.scan(csup=True)).to_pylist())
            assert _present(got) == _present(want["rows"])
        # super's log of the branch: our commit on top, then its parents, each readable
        logged = [line.split()[1] for line in want["log"]]
        assert logged[0] == pool.commit_id
        for c in logged[1:]:
            await lake.pool("logs", at=c)


async def test_a_load_now_writes_the_files_super_read(tmp_path: Path) -> None:
    """The same files (by kind and place) as the load super read, each object's records
    of the same types; ``commits/*.snap.bsup`` are super's own caches, not ours."""
    db = tmp_path / "db"
    shutil.copytree(S.BASE, db)
    commits = await S.load_ours(db)
    ours = S.changed_files(S.BASE, db)
    recorded = [f for f in EXPECTED["files"] if not f.endswith(".snap.bsup")
                or "/branches/" in f]
    assert sorted(map(_shape, ours)) == sorted(map(_shape, recorded))
    by_shape: dict[str, list[list[str]]] = {}
    for rel in recorded:
        if rel.endswith(".bsup"):
            by_shape.setdefault(_shape(rel), []).append(_types(S.OURS / rel))
    for rel in ours:
        if rel.endswith(".bsup"):
            assert _types(db / rel) in by_shape[_shape(rel)], rel
    async with open_lake(str(db)) as lake:
        for branch, rows in (("main", S.ROWS_MAIN), ("dev", S.ROWS_DEV)):
            pool = await lake.pool(f"logs@{branch}")
            assert pool.commit_id == commits[branch]
            got = (await pool.scan()).to_pylist()
            assert [r["id"] for r in got][-len(rows):] == [r["id"] for r in rows]


def _super_own(kind: str) -> list[str]:
    """The record types of super main's own objects of one kind in ``superdb-main/``."""
    base = S.BASE / POOL_DIR
    paths = {"commit": [p for p in (base / "commits").glob("*.bsup")
                        if not p.name.endswith(".snap.bsup")],
             "journal": sorted((base / "branches").glob("*.bsup"))}[kind]
    return sorted({t for p in paths for t in _types(p)})


def test_our_commit_and_journal_records_are_typed_as_super_writes_them() -> None:
    """Every record type our commit objects and journal entries hold (commits.Commit
    with ``meta: any``, commits.Add with ``min``/``max: any``, commits.AddVector,
    journal.Update) is one super main wrote itself."""
    base = S.OURS / POOL_DIR
    ours_commits = {t for p in (base / "commits").glob("*.bsup")
                    if not p.name.endswith(".snap.bsup") for t in _types(p)}
    ours_journal = {t for p in (base / "branches").glob("[0-9]*.bsup") for t in _types(p)}
    assert ours_commits and ours_commits <= set(_super_own("commit"))
    assert ours_journal and ours_journal <= set(_super_own("journal"))
    assert any("commits.AddVector" in t for t in ours_commits)
    assert any("min:fusion(all)" in t for t in ours_commits)


def test_lake_load_cli_into_a_super_main_database(tmp_path: Path) -> None:
    """``csup-async lake load`` commits NDJSON rows into super main's database in its
    formats (BSUP version 5 objects, no seek index), and ``lake scan`` reads them."""
    import subprocess
    import sys

    db = tmp_path / "db"
    shutil.copytree(S.BASE, db)
    src = tmp_path / "rows.ndjson"
    src.write_text("".join(json.dumps({"ts": f"2030-01-01T00:00:0{i}Z", "id": 5000 + i})
                           + "\n" for i in range(3)))
    cmd = [sys.executable, "-m", "csup_async.cli", "lake"]
    r = subprocess.run([*cmd, "load", str(db), "--pool", "logs@main", str(src), "-m", "cli",
                        "--csup"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    commit = r.stdout.split()[-1]
    assert _types(db / POOL_DIR / "commits" / f"{commit}.bsup")[0].startswith(
        '"commits.Commit"=')
    data = [p for p in (db / POOL_DIR / "data").iterdir()
            if not (S.BASE / POOL_DIR / "data" / p.name).exists()]
    assert sorted(p.suffix for p in data) == [".bsup", ".csup"]  # no -seek object
    r = subprocess.run([*cmd, "scan", str(db), "--pool", f"logs@{commit}", "-c", "id",
                        "--where", "id >= 5000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == [5000, 5001, 5002]
