"""Regenerates ``tests/data/real/superdb-main-ours/``: what our ``lake load`` adds to the
database super main made (``tests/data/real/superdb-main/``), and what the real ``super``
main (492eab8) then prints for it (never builds the tool).

Two loads go into a copy of that database: :data:`ROWS_MAIN` onto ``logs@main`` with a
``.csup`` vector copy (so a ``commits.AddVector``), :data:`ROWS_DEV` onto ``logs@dev``.
The folder keeps only the files the loads added or changed (an overlay on the
database: data objects, ``.csup`` copies, commit objects, journal entries, HEAD and
the journal snapshot); ``superdb-main-ours-expected.json`` keeps what ``super db``
printed afterwards: every branch's rows (``-j``), the objects and vectors of each
branch, and ``super db log``'s commit lines.  The CI test puts the overlay back on
the database, reads it with ``open_lake``, and checks that a load made now writes
the same files with the same record types (super's own objects are the model).

    python -m tests.support.superdb_ours
"""

from __future__ import annotations

import asyncio
import filecmp
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tests.support import realtools

OUT = Path(__file__).resolve().parents[1] / "data" / "real"
BASE = OUT / "superdb-main"
OURS = OUT / "superdb-main-ours"
EXPECTED = OUT / "superdb-main-ours-expected.json"
SUPER_MAIN = realtools.Tool("super", "github.com/brimdata/super", "main")
POOL = "logs"
TS0 = np.datetime64("2024-01-01T00:00:00", "ns")

#: Rows of several shapes: nested records, arrays, nulls beside values, floats, bools.
ROWS_MAIN = [{"ts": TS0 + np.timedelta64(i, "s"), "id": 1000 + i, "msg": f"ours {i}",
              "tags": ["x", f"t{i % 3}"], "extra": None if i % 2 else i,
              "geo": {"lat": 40.5 + i / 8, "ok": i % 3 == 0}} for i in range(9)]
ROWS_DEV = [{"ts": TS0 + np.timedelta64(100 + i, "s"), "id": 2000 + i, "msg": f"dev {i}",
             "tags": [], "extra": i} for i in range(4)]
MESSAGES = {"main": "csup-async load onto main", "dev": "csup-async load onto dev"}


async def load_ours(db: Path) -> dict[str, str]:
    """Our two loads into the database at ``db``; the commit IDs by branch."""
    from csup_async.lake import open_lake

    out: dict[str, str] = {}
    async with open_lake(str(db)) as lake:
        for branch, rows, csup in (("main", ROWS_MAIN, True), ("dev", ROWS_DEV, False)):
            pool = await lake.pool(f"{POOL}@{branch}")
            out[branch] = await pool.load(rows, message=MESSAGES[branch],
                                          author="csup-async", csup=csup)
    return out


def changed_files(base: Path, db: Path) -> list[str]:
    """Files of ``db`` that ``base`` does not have, or has with other bytes."""
    out = []
    for p in sorted(db.rglob("*")):
        if p.is_file():
            rel = p.relative_to(db)
            old = base / rel
            if not old.is_file() or not filecmp.cmp(old, p, shallow=False):
                out.append(rel.as_posix())
    return out


def printed(binary: Path, db: Path, work: Path, *args: str) -> str:
    env_home = os.environ.get("HOME")
    os.environ["HOME"] = str(work)  # (super keeps its config under $HOME)
    try:
        return realtools.run(binary, "db", "-db", str(db), *args, cwd=work).decode()
    finally:
        if env_home is not None:
            os.environ["HOME"] = env_home


def _lines(text: str) -> list[Any]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def generate() -> dict[str, Any]:
    binary = realtools.find(SUPER_MAIN, "super")
    if binary is None:
        raise SystemExit("super main not found")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        db = work / "db"
        shutil.copytree(BASE, db)
        commits = asyncio.run(load_ours(db))
        result: dict[str, Any] = {"tool": "super main (492eab8)", "pool": POOL,
                                  "commits": commits, "branches": {}}
        for branch in ("main", "dev"):
            ref = f"{POOL}@{branch}"
            log = printed(binary, db, work, "log", "-use", ref)
            result["branches"][branch] = {
                "rows": _lines(printed(binary, db, work, "-j", "-c", f"from {ref}")),
                "objects": _lines(printed(binary, db, work, "-j", "-c",
                                          f"from {ref}:objects | values ksuid(id)")),
                "vectors": _lines(printed(binary, db, work, "-j", "-c",
                                          f"from {ref}:vectors | values ksuid(id)")),
                "log": [x for x in log.splitlines() if x.startswith("commit ")],
            }
        files = changed_files(BASE, db)
        if OURS.exists():
            shutil.rmtree(OURS)
        for rel in files:
            (OURS / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(db / rel, OURS / rel)
        result["files"] = files
    EXPECTED.write_text(json.dumps(result, sort_keys=True, separators=(",", ":")) + "\n")
    return result


def main() -> int:
    result = generate()
    for b, d in result["branches"].items():
        print(b, len(d["rows"]), "rows,", len(d["objects"]), "objects,",
              len(d["vectors"]), "vectors")
    print(len(result["files"]), "files:", *result["files"], sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
