"""Runs one reader's tasks in a process of its own and prints one JSON line per task.

A process per reader keeps readers from sharing thread pools, caches or the
GIL with each other or with the harness, and lets the harness kill a reader
that hangs.  For each task: one untimed warm-up run (imports, JIT caches,
connection pools), then timed runs; requests and bytes are what nginx logged
during the last run.  A reader whose warm-up takes over ``SLOW`` seconds is
not run again (its warm-up is its one sample), and timed runs stop at about
``BUDGET`` seconds.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import netsim
import readers

SLOW = 30.0
BUDGET = 12.0  # seconds of timed runs per task, at least one run


def run_task(fn: Any, task: dict[str, Any], runs: int, log: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"task": task["id"]}
    endpoint, keys, columns = task["endpoint"], task["keys"], task["columns"]
    mark = netsim.log_mark(log)
    t = time.perf_counter()
    rows, ncols = fn(endpoint, keys, columns)
    warm = time.perf_counter() - t
    count = netsim.log_count(log, mark)
    times = [warm]
    if warm < SLOW:
        n = max(1, min(runs, int(BUDGET / warm)))
        times = []
        for _ in range(n):
            mark = netsim.log_mark(log)
            t = time.perf_counter()
            rows, ncols = fn(endpoint, keys, columns)
            times.append(time.perf_counter() - t)
            count = netsim.log_count(log, mark)
    out.update(median=statistics.median(times), times=times, warm=warm, warm_only=warm >= SLOW,
               rows=rows,
               cols=ncols, requests=count.requests, gets=count.gets, heads=count.heads,
               connections=count.connections,
               bytes=count.bytes, errors=count.errors)
    return out


def main() -> None:
    job = json.loads(sys.argv[1])
    _, fn = readers.READERS[job["reader"]]
    if job.get("native") is False:
        import os

        os.environ["CSUP_ASYNC_NATIVE"] = "0"
    log = Path(job["log"])
    for task in job["tasks"]:
        task["reader"] = job["reader"]
        try:
            res = run_task(fn, task, job["runs"], log)
        except Exception as e:
            res = {"task": task["id"], "error": f"{type(e).__name__}: {e}"[:400],
                   "trace": traceback.format_exc()[-1500:]}
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
