"""Regenerates ``tests/data/real/lake/`` with the real ``zed`` v1.7.0 (never builds it).

A small lake with history: a pool ordered by ``ts``, several loads, a branch with
its own load merged back, a delete by object ID and one by predicate, and a
vectorised (VNG) copy of one object.  After every step it records, from the real
tool only, each branch's commit (``zed ls``), the branch journal position the
step made, and each commit's rows (``zed query -j``, the same by branch and by
commit ID), into ``lake-expected.json``: the CI test reads every recorded branch,
journal position and commit with :func:`csup_async.lake.open_lake` and compares.
Run it with the binary in ``$CSUP_ASYNC_REAL_TOOLS``::

    CSUP_ASYNC_REAL_TOOLS=/work/tools python -m tests.support.reallake
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support import realtools
from tests.support.realtools import ZED_1_7

OUT = Path(__file__).resolve().parents[1] / "data" / "real"
LAKE = OUT / "lake"
EXPECTED = OUT / "lake-expected.json"
POOL = "logs"
T0 = dt.datetime(2023, 11, 14, 22, 0, tzinfo=dt.UTC)


def rows_zson(lo: int, hi: int) -> str:
    """Records ``lo..hi-1``: a time key, an id, a string, an array, a sometimes-null."""
    out = []
    for i in range(lo, hi):
        ts = (T0 + dt.timedelta(seconds=61 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        extra = "null(int64)" if i % 5 == 0 else str(i * i)
        out.append(f'{{ts:{ts},id:{i},msg:"m{i}",tags:["t{i % 3}"],extra:{extra}}}')
    return "\n".join(out) + "\n"


class Zed:
    def __init__(self, lake: Path, work: Path) -> None:
        binary = realtools.find(ZED_1_7, "zed")
        if binary is None:
            raise SystemExit("zed v1.7.0 not found under $CSUP_ASYNC_REAL_TOOLS")
        self.binary, self.lake, self.work = binary, lake, work
        self.home = work / "home"  # zed keeps its config (and `use`) under $HOME
        self.home.mkdir(parents=True, exist_ok=True)

    def __call__(self, *args: str) -> bytes:
        old = os.environ.get("HOME")
        os.environ["HOME"] = str(self.home)
        try:
            return realtools.run(self.binary, "-lake", str(self.lake), *args, cwd=self.work)
        finally:
            if old is not None:
                os.environ["HOME"] = old

    def load(self, branch: str, lo: int, hi: int) -> None:
        path = self.work / f"rows-{lo}-{hi}.zson"
        path.write_text(rows_zson(lo, hi))
        self("load", "-q", "-use", f"{POOL}@{branch}", "-message", f"rows {lo}-{hi}",
             str(path))

    def branches(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self("ls", POOL).decode().splitlines():
            ref, _, commit, *_ = line.split()  # "logs@main commit <id>"
            out[ref.split("@", 1)[1]] = commit
        return out

    def query(self, ref: str) -> list[Any]:
        text = self("query", "-j", f"from {ref}").decode()
        return [json.loads(x) for x in text.splitlines() if x.strip()]

    def objects(self, branch: str) -> list[str]:
        text = self("query", "-j", f"from {POOL}@{branch}:objects | yield ksuid(id)").decode()
        return [json.loads(x) for x in text.splitlines() if x.strip()]


def journal_head(lake: Path) -> int:
    (pool_dir,) = [p for p in lake.iterdir() if p.is_dir() and (p / "branches").is_dir()]
    return int((pool_dir / "branches" / "HEAD").read_text().strip())


def generate() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lake = work / "lake"
        zed = Zed(lake, work)
        steps: list[dict[str, Any]] = []

        def record(op: str) -> None:
            branches = zed.branches()
            steps.append({
                "op": op, "journal": journal_head(lake),
                "branches": dict(sorted(branches.items())),
                "rows": {b: zed.query(f"{POOL}@{b}") for b in sorted(branches)},
            })

        zed("init", "-q", str(lake))
        zed("create", "-q", "-orderby", "ts:asc", POOL)
        record("zed create -orderby ts:asc logs")
        zed.load("main", 0, 20)
        record("zed load -use logs@main (rows 0-19)")
        zed.load("main", 20, 40)
        record("zed load -use logs@main (rows 20-39)")
        zed("branch", "-q", "-use", f"{POOL}@main", "dev")
        record("zed branch -use logs@main dev")
        zed.load("dev", 40, 60)
        record("zed load -use logs@dev (rows 40-59)")
        zed("merge", "-q", "-use", f"{POOL}@dev", "main")
        record("zed merge -use logs@dev main")
        zed.load("main", 60, 80)
        record("zed load -use logs@main (rows 60-79)")
        first = zed.objects("main")[0]
        zed("delete", "-q", "-use", f"{POOL}@main", first)
        record("zed delete -use logs@main <the first object>")
        zed("delete", "-q", "-use", f"{POOL}@dev", "-where", "id >= 50")
        record("zed delete -use logs@dev -where 'id >= 50'")
        zed("vector", "add", "-q", "-use", f"{POOL}@main", zed.objects("main")[-1])
        record("zed vector add -use logs@main <the last object>")
        zed.load("main", 80, 85)
        record("zed load -use logs@main (rows 80-84)")
        commits: dict[str, list[Any]] = {}
        for step in steps:
            rows = step.pop("rows")
            for b, c in step["branches"].items():
                if c not in commits:  # the zero commit (an empty branch) names no commit
                    commits[c] = zed.query(f"{POOL}@{c}") if c.strip("0") else []
                if commits[c] != rows[b]:
                    raise SystemExit(f"zed query of {POOL}@{b} differs from {POOL}@{c}")
        if LAKE.exists():
            shutil.rmtree(LAKE)
        shutil.copytree(lake, LAKE)
    result = {"tool": f"zed {ZED_1_7.version}", "pool": POOL, "steps": steps,
              "commits": commits}
    EXPECTED.write_text(json.dumps(result, sort_keys=True, separators=(",", ":")) + "\n")
    return result


def main() -> int:
    result = generate()
    for step in result["steps"]:
        print(step["journal"], step["op"],
              {b: len(result["commits"][c]) for b, c in step["branches"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
