"""Regenerates ``tests/data/real/superdb-0.3/`` with the real ``super`` v0.3.0 (never builds it).

The same history as :mod:`tests.support.reallake` (Zed's lake), made by ``super db``:
a pool ordered by ``ts``, loads, a branch with its own load merged back, a delete by
object ID and one by predicate, a vector (``.csup``) copy of one object.  After every
step it records from the real tool only each branch's commit (``super db ls``), the
branch journal position, and each commit's rows (``super db -j -c "from logs@X"``, the
same by branch and by commit ID) into ``superdb-0.3-expected.json``; the CI test
reads every recorded branch, journal position and commit with ``open_lake``.

    python -m tests.support.superdb_lake [v0.3.0|main]

(``main``: ``super`` main 492eab8, into ``superdb-main/``.)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support import realtools
from tests.support.reallake import POOL, journal_head, rows_zson

OUT = Path(__file__).resolve().parents[1] / "data" / "real"
#: version argument -> (tool, folder name under tests/data/real/)
VERSIONS = {
    "v0.3.0": (realtools.SUPER_0_3, "superdb-0.3"),
    "main": (realtools.Tool("super", "github.com/brimdata/super", "main"), "superdb-main"),
}
TOOL, NAME = VERSIONS["v0.3.0"]
DB = OUT / NAME
EXPECTED = OUT / f"{NAME}-expected.json"


def _sup(lo: int, hi: int) -> str:
    """Zed's rows in SUP (SuperDB has no typed nulls: Zed's ``null(int64)`` is ``null``)."""
    return rows_zson(lo, hi).replace("null(int64)", "null")


class Super:
    def __init__(self, db: Path, work: Path) -> None:
        binary = realtools.find(TOOL, "super")
        if binary is None:
            raise SystemExit(f"super {TOOL.version} not found")
        self.binary, self.db, self.work = binary, db, work

    def __call__(self, *args: str) -> bytes:
        old = os.environ.get("HOME")
        os.environ["HOME"] = str(self.work)  # (super keeps its config under $HOME)
        try:
            return realtools.run(self.binary, "db", "-db", str(self.db), *args, cwd=self.work)
        finally:
            if old is not None:
                os.environ["HOME"] = old

    def load(self, branch: str, lo: int, hi: int) -> None:
        path = self.work / f"rows-{lo}-{hi}.sup"
        path.write_text(_sup(lo, hi))
        self("load", "-q", "-i", "sup", "-use", f"{POOL}@{branch}", "-message",
             f"rows {lo}-{hi}", str(path))

    def branches(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self("ls", POOL).decode().splitlines():
            ref, _, commit, *_ = line.split()
            out[ref.split("@", 1)[1]] = commit
        return out

    def query(self, ref: str) -> list[Any]:
        text = self("-j", "-c", f"from {ref}").decode()
        return [json.loads(x) for x in text.splitlines() if x.strip()]

    def objects(self, branch: str) -> list[str]:
        text = self("-j", "-c", f"from {POOL}@{branch}:objects | values ksuid(id)").decode()
        return [json.loads(x) for x in text.splitlines() if x.strip()]


def generate() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        db = work / "db"
        sdb = Super(db, work)
        steps: list[dict[str, Any]] = []

        def record(op: str) -> None:
            branches = sdb.branches()
            steps.append({"op": op, "journal": journal_head(db),
                          "branches": dict(sorted(branches.items())),
                          "rows": {b: sdb.query(f"{POOL}@{b}") for b in sorted(branches)}})

        realtools.run(sdb.binary, "db", "init", "-q", str(db), cwd=work)
        sdb("create", "-q", "-orderby", "ts:asc", POOL)
        record("super db create -orderby ts:asc logs")
        sdb.load("main", 0, 20)
        record("super db load -use logs@main (rows 0-19)")
        sdb.load("main", 20, 40)
        record("super db load -use logs@main (rows 20-39)")
        sdb("branch", "-q", "-use", f"{POOL}@main", "dev")
        record("super db branch -use logs@main dev")
        sdb.load("dev", 40, 60)
        record("super db load -use logs@dev (rows 40-59)")
        sdb("merge", "-q", "-use", f"{POOL}@dev", "main")
        record("super db merge -use logs@dev main")
        sdb.load("main", 60, 80)
        record("super db load -use logs@main (rows 60-79)")
        sdb("delete", "-q", "-use", f"{POOL}@main", sdb.objects("main")[0])
        record("super db delete -use logs@main <the first object>")
        sdb("delete", "-q", "-use", f"{POOL}@dev", sdb.objects("dev")[-1])
        record("super db delete -use logs@dev <its last object>")
        # (super v0.3.0's ``delete -where`` answers "empty transaction" here: not used)
        sdb("vector", "add", "-q", "-use", f"{POOL}@main", sdb.objects("main")[-1])
        record("super db vector add -use logs@main <the last object>")
        sdb.load("main", 80, 85)
        record("super db load -use logs@main (rows 80-84)")
        commits: dict[str, list[Any]] = {}
        for step in steps:
            rows = step.pop("rows")
            for b, c in step["branches"].items():
                if c not in commits:
                    commits[c] = sdb.query(f"{POOL}@{c}") if c.strip("0") else []
                if commits[c] != rows[b]:
                    raise SystemExit(f"from {POOL}@{b} differs from {POOL}@{c}")
        if DB.exists():
            shutil.rmtree(DB)
        shutil.copytree(db, DB)
    result = {"tool": f"super {TOOL.version}", "pool": POOL, "steps": steps,
              "commits": commits}
    EXPECTED.write_text(json.dumps(result, sort_keys=True, separators=(",", ":")) + "\n")
    return result


def main() -> int:
    global TOOL, DB, EXPECTED
    TOOL, name = VERSIONS[sys.argv[1] if len(sys.argv) > 1 else "v0.3.0"]
    DB, EXPECTED = OUT / name, OUT / f"{name}-expected.json"
    result = generate()
    for step in result["steps"]:
        print(step["journal"], step["op"],
              {b: len(result["commits"][c]) for b, c in step["branches"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
