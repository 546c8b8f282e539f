"""Two flat columns (``id``, ``score``) of bench_v23's 200,000-row, 2-object v23 file
against the same rows in our layout, warm, in two source trees: the case of issue 37's
1.1x where a v23 open's extra local reads show (3 reads where our layout makes 1).

``python bench/ab_v23_flat.py TREE_A TREE_B [--reads 300] [--rounds 3]``

The files (``super -f csup`` of bench_superdb.rows, and ``csup_async.write`` of the same
rows) are made once in ``$TMPDIR/csup-ab-v23-flat`` by the running tree.  Each round runs,
for each tree in turn (order alternating), a process (``PYTHONPATH=TREE``) that opens and
scans both files once, then ``--reads`` times each, alternating, in one event loop
(``async with open(f) as r: await r.scan(["id", "score"])``): medians of wall, CPU (the
process's) and of the open alone.  Ratios v23 / our layout of the same process, medians
over rounds.  Writes bench/results/v23_flat_ab.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RUN = """
import asyncio, json, statistics, sys, time
import csup_async
files, reads, cols = json.loads(sys.argv[1]), int(sys.argv[2]), ["id", "score"]
async def main():
    for f in files.values():
        async with csup_async.open(f) as r:
            await r.scan(cols)
    m = {k: ([], [], []) for k in files}
    for i in range(reads):
        for k, f in (list(files.items()) if i % 2 == 0 else list(files.items())[::-1]):
            c0, t0 = time.process_time(), time.perf_counter()
            async with csup_async.open(f) as r:
                t1 = time.perf_counter()
                await r.scan(cols)
            m[k][0].append(time.perf_counter() - t0)
            m[k][1].append(time.process_time() - c0)
            m[k][2].append(t1 - t0)
    print(json.dumps({k: [statistics.median(x) for x in v] for k, v in m.items()}))
asyncio.run(main())
"""


def files() -> dict[str, str]:
    d = Path(tempfile.gettempdir()) / "csup-ab-v23-flat"
    v23, own = d / "v23.csup", d / "own.csup"
    if not (v23.exists() and own.exists()):
        sys.path.insert(0, str(HERE))
        sys.path.insert(0, str(HERE.parent))
        from bench_superdb import rows
        from bench_v23 import super_main

        import csup_async

        d.mkdir(exist_ok=True)
        data = rows(200_000)
        exe = super_main()
        if exe is None:
            raise SystemExit("needs super main (tests/support/realtools.py builds it)")
        src = d / "rows.json"
        src.write_text("\n".join(json.dumps(r) for r in data) + "\n")
        subprocess.run([str(exe), "-f", "csup", "-o", str(v23), str(src)], check=True)
        csup_async.write(str(own), data, target="csup-async")
    return {"v23": str(v23), "own": str(own)}


def run(trees: list[str], reads: int, rounds: int) -> dict[str, Any]:
    fs = files()
    got: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree in (trees if r % 2 == 0 else trees[::-1]):
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run([sys.executable, "-c", RUN, json.dumps(fs), str(reads)],
                                 env=env, capture_output=True, text=True, check=True, cwd="/")
            m = json.loads(out.stdout)
            got[tree].append({"wall": m["v23"][0] / m["own"][0],
                              "cpu": m["v23"][1] / m["own"][1],
                              "open_ms_v23": m["v23"][2] * 1e3,
                              "open_ms_own": m["own"][2] * 1e3,
                              "cpu_ms_v23": m["v23"][1] * 1e3,
                              "cpu_ms_own": m["own"][1] * 1e3})
    return {"trees": trees, "reads": reads, "rounds": rounds, "load": os.getloadavg(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "ratios": {t: {k: statistics.median(x[k] for x in v) for k in v[0]}
                       for t, v in got.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs=2)
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    res = run(args.trees, args.reads, args.rounds)
    command = "python bench/ab_v23_flat.py " + " ".join(sys.argv[1:])
    lines = ["# v23 / our layout, scan(id, score) of 200,000 rows, warm (bench/ab_v23_flat.py)\n",
             f"`{command}`, {res['when']}, load {res['load'][0]:.1f} at the end; medians of "
             f"{args.reads} reads per file and round, over {args.rounds} rounds.\n",
             "| tree | wall | CPU | open ms v23 / ours | CPU ms v23 / ours |",
             "|---|---:|---:|---|---|"]
    for tree, r in res["ratios"].items():
        lines.append(f"| `{tree}` | {r['wall']:.2f} | {r['cpu']:.2f} | "
                     f"{r['open_ms_v23']:.2f} / {r['open_ms_own']:.2f} | "
                     f"{r['cpu_ms_v23']:.2f} / {r['cpu_ms_own']:.2f} |")
    out = HERE / "results" / "v23_flat_ab"
    out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
