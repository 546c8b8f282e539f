"""Two source trees, one simulated store, alternating: is one slower than the other?

``python bench/ab_trees.py TREE_A TREE_B [--projection "6 cols"] [--rounds 3]``

Each round runs, for each tree in turn, a process (``PYTHONPATH=TREE``) that scans
the wide table through ``bench/readers.py``'s csup-async reader once untimed and 6
times timed on the ``s3`` profile; medians of all timed scans per tree.  On a shared
machine whose load changes minute to minute, alternating is what makes the two
comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import netsim  # noqa: E402

CODE = """
import sys, time, json
sys.path.insert(0, {bench!r})
import readers, data
cols = data.PROJECTIONS[sys.argv[2]]
fn = readers.READERS['csup-async'][1]
fn(sys.argv[1], [data.wide_key('csup')], cols)
ts = []
for _ in range(6):
    t = time.perf_counter()
    fn(sys.argv[1], [data.wide_key('csup')], cols)
    ts.append(time.perf_counter() - t)
print(json.dumps(ts))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs=2)
    ap.add_argument("--projection", default="6 cols", choices=list(data.PROJECTIONS))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data.ensure()  # the wide table, written once by the running tree
    store = netsim.SimStore(data.ROOT / "root", data.ROOT / "nginx-ab").start()
    times: dict[str, list[float]] = {t: [] for t in args.trees}
    try:
        for _ in range(args.rounds):
            for tree in args.trees:
                env = dict(os.environ, PYTHONPATH=tree)
                out = subprocess.run([sys.executable, "-c", CODE.format(bench=str(HERE)),
                                      store.endpoint("s3"), args.projection], env=env,
                                     capture_output=True, text=True, cwd="/")
                if out.returncode:
                    sys.exit(f"{tree}: the scan process failed:\n{out.stderr[-3000:]}")
                times[tree] += json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        store.stop()
    for tree, ts in times.items():
        print(f"{tree}: {args.projection}, median {statistics.median(ts):.3f} s over "
              f"{len(ts)} scans ({min(ts):.3f}-{max(ts):.3f})")


if __name__ == "__main__":
    main()
