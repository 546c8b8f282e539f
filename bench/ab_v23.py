"""Reading super main's CSUP v23 file against the same rows in our layout, in two source
trees, alternating: how far each tree is from issue 37's 1.1x.

``python bench/ab_v23.py TREE_A TREE_B [--runs 15] [--rounds 4] [--out bench/results/v23_ab]``

The files are bench_realshape's (``bench/logshape.py``'s 200,000 log records: our fused
file and ``super -f csup``'s, made by the running tree when missing).  Each round runs,
for each tree in turn (order alternating), a process (``PYTHONPATH=TREE``) that reads
both files once untimed, then ``--runs`` times each, alternating, with
``csup_async.read`` (warm: one process), for ``2 cols`` (ts, u.name) and ``6 cols``;
then a whole process per tree and file (import and the first read of 2 columns).  Ratios
are v23 / our layout of the same tree and round, medians over rounds; wall and CPU (the
process's, every thread).  Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_realshape  # noqa: E402

CASES = {"2 cols": bench_realshape.COLS, "6 cols": bench_realshape.SIX}
WARM = """
import json, statistics, sys, time
import csup_async
files, cols, runs = json.loads(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
for f in files.values():
    csup_async.read(f, cols)
w = {k: [] for k in files}
c = {k: [] for k in files}
for i in range(runs):
    for k, f in (list(files.items()) if i % 2 == 0 else list(files.items())[::-1]):
        c0, t0 = time.process_time(), time.perf_counter()
        csup_async.read(f, cols)
        w[k].append(time.perf_counter() - t0)
        c[k].append(time.process_time() - c0)
print(json.dumps({k: [statistics.median(w[k]), statistics.median(c[k])] for k in files}))
"""
COLD = "import csup_async\ncsup_async.read({path!r}, ['ts', 'u.name'])\n"


def _env(tree: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has bytecode
    return env


def _cold(tree: str, path: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", COLD.format(path=path)], env=_env(tree),
                   check=True, cwd="/")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(trees: list[str], runs: int, rounds: int) -> dict[str, Any]:
    paths = bench_realshape.files(log=False)
    files = {"own": str(paths["csup"]), "v23": str(paths["super-main"])}
    ratios: dict[str, dict[str, list[tuple[float, float]]]] = {t: {} for t in trees}
    for t in trees:  # bytecode written, files in the page cache
        _cold(t, files["v23"])
    for r in range(rounds):
        for tree in (trees if r % 2 == 0 else trees[::-1]):
            for case, cols in CASES.items():
                out = subprocess.run([sys.executable, "-c", WARM, json.dumps(files),
                                      ",".join(cols), str(runs)], env=_env(tree),
                                     capture_output=True, text=True, check=True, cwd="/")
                m = json.loads(out.stdout)
                ratios[tree].setdefault(case, []).append(
                    (m["v23"][0] / m["own"][0], m["v23"][1] / m["own"][1]))
            own, v23 = _cold(tree, files["own"]), _cold(tree, files["v23"])
            ratios[tree].setdefault("whole process", []).append(
                (v23[0] / own[0], v23[1] / own[1]))
    return {"trees": trees, "runs": runs, "rounds": rounds, "load": os.getloadavg(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "ratios": {t: {c: {"wall": statistics.median(x[0] for x in v),
                               "cpu": statistics.median(x[1] for x in v)}
                           for c, v in cases.items()} for t, cases in ratios.items()}}


def markdown(res: dict[str, Any], command: str) -> str:
    lines = ["# CSUP v23 against our layout, two trees (bench/ab_v23.py)\n",
             f"`{command}`, {res['when']}, load {res['load'][0]:.1f} at the end; "
             f"{res['rounds']} rounds of {res['runs']} warm reads per file. Ratio = super "
             "main's file / our fused file of the same rows (issue 37: at most 1.1).\n",
             "| tree | case | v23 / ours (wall) | v23 / ours (CPU) |", "|---|---|---:|---:|"]
    for tree, cases in res["ratios"].items():
        for case, r in cases.items():
            lines.append(f"| `{tree}` | {case} | {r['wall']:.2f} | {r['cpu']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs=2)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "v23_ab")
    args = ap.parse_args()
    res = run(args.trees, args.runs, args.rounds)
    command = "python bench/ab_v23.py " + " ".join(sys.argv[1:])
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(res, command))
    print(markdown(res, command))


if __name__ == "__main__":
    main()
