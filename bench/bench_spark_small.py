"""Spark over 2,000 small files (#38): ``python bench/bench_spark_small.py [--rounds 3]``.

``sum(id)`` over 2,000 files of 100 rows x 3 columns (``id long, name string,
value double``) from local disk, in Spark local mode (``local[2]``): the csup
source (planned on executors, the default past ``planOnExecutorsThreshold``,
and planned on the driver) against Spark's own Parquet reader over the same
rows, in one session.  The cases alternate round by round (after one warm-up
each) so load on the shared machine hits them alike; the table gives medians,
bests and the ratio of medians.  CPU per run is read from ``/proc`` for this
process's children (the JVM, and Spark's Python workers under it).

``--profile`` also runs the csup source's halves in this process, outside
Spark, under cProfile: listing + planning (what Spark's planning worker runs in
``partitions()``) and the reads of every partition (what the tasks run), and
prints the top functions of each.

Writes bench/results/spark_small.json; the markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DATA = HERE / ".data" / "spark-small-v1"
FILES = 2_000
ROWS = 100
SCHEMA = "id long, name string, value double"
_TICK = os.sysconf("SC_CLK_TCK")


def _table(i: int) -> Any:
    import numpy as np
    import pyarrow as pa

    ids = np.arange(i * ROWS, i * ROWS + ROWS, dtype=np.int64)
    return pa.table({"id": ids, "name": pa.array([f"n{v % 977}" for v in ids.tolist()]),
                     "value": ids.astype(np.float64) / 7})


def ensure_data(files: int) -> tuple[Path, Path]:
    """Directories of the CSUP files and of their Parquet twins (same rows)."""
    import pyarrow.parquet as pq

    import csup_async

    cs, pqd = DATA / f"csup-{files}", DATA / f"parquet-{files}"
    cs.mkdir(parents=True, exist_ok=True)
    pqd.mkdir(parents=True, exist_ok=True)
    t0, made = time.perf_counter(), 0
    for i in range(files):
        c, p = cs / f"part-{i:05d}.csup", pqd / f"part-{i:05d}.parquet"
        if c.exists() and p.exists():
            continue
        t = _table(i)
        csup_async.write(str(c), t, target="csup-async")
        pq.write_table(t, str(p))
        made += 1
    if made:
        print(f"<!-- {made} file pairs written in {time.perf_counter() - t0:.0f} s -->")
    return cs, pqd


def _children_cpu() -> float:
    """CPU seconds of every live descendant of this process (the JVM, Python workers)."""
    me = os.getpid()
    parent: dict[int, int] = {}
    stats: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        parent[int(d)] = int(rest[1])
        stats[int(d)] = (int(rest[11]) + int(rest[12])) / _TICK
    total = 0.0
    for pid, t in stats.items():
        p = pid
        while p in parent and p != me and p > 1:
            p = parent[p]
        if p == me and pid != me:
            total += t
    return total


def run_spark(files: int, rounds: int, cs: Path, pqd: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from csup_async.spark.session import local_session

    spark = local_session("csup-bench-small", cores=2,
                          **{"spark.ui.showConsoleProgress": "false"})
    expect = sum(range(files * ROWS))
    cases: dict[str, Callable[[], Any]] = {
        "parquet": lambda: spark.read.parquet(str(pqd)),
        "csup_executors": lambda: spark.read.format("csup").schema(SCHEMA).load(str(cs)),
        "csup_driver": lambda: spark.read.format("csup").schema(SCHEMA)
        .option("planOnExecutorsThreshold", str(files)).load(str(cs)),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    parts: dict[str, int] = {}
    try:
        for name, make in cases.items():  # warm-up, and the answer checked
            df = make()
            got = df.agg(F.sum("id")).collect()[0][0]
            assert got == expect, (name, got, expect)
            parts[name] = df.rdd.getNumPartitions()
        for r in range(rounds):
            order = list(cases) if r % 2 == 0 else list(reversed(cases))
            for name in order:
                gc.collect()
                c0 = _children_cpu()
                t0 = time.perf_counter()
                cases[name]().agg(F.sum("id")).collect()
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(_children_cpu() - c0)
    finally:
        spark.stop()
    out: dict[str, Any] = {}
    for name in cases:
        out[name] = {"median_s": round(statistics.median(times[name]), 3),
                     "best_s": round(min(times[name]), 3),
                     "runs_s": [round(t, 3) for t in times[name]],
                     "cpu_s": round(statistics.median(cpu[name]), 3),
                     "partitions": parts[name]}
    return out


def profile_halves(cs: Path, top: int) -> dict[str, str]:
    """cProfile of the source's driver half (listing, planning) and of every task's read,
    in this process (Spark runs them in its Python workers)."""
    from pyspark.sql import types as T

    from csup_async.spark.source import CsupDataSource

    schema = T.StructType([T.StructField("id", T.LongType()),
                           T.StructField("name", T.StringType()),
                           T.StructField("value", T.DoubleType())])
    out: dict[str, str] = {}
    for mode, opts in (("executors", {}), ("driver", {"planOnExecutorsThreshold": "100000"})):
        src = CsupDataSource({"path": str(cs), **opts})
        reader = src.reader(schema)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        partitions = reader.partitions()
        prof.disable()
        t_plan = time.perf_counter() - t0
        out[f"{mode}: driver"] = _top(prof, top, f"{len(partitions)} partitions, "
                                                 f"{t_plan:.3f} s")
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for p in partitions:
            for _ in reader.read(p):
                pass
        prof.disable()
        out[f"{mode}: tasks"] = _top(prof, top, f"{time.perf_counter() - t0:.3f} s")
    return out


def _top(prof: cProfile.Profile, top: int, head: str) -> str:
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(top)
    return head + "\n" + s.getvalue()


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=FILES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="also profile the source's driver and task halves in this process")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=str(HERE / "results" / "spark_small.json"))
    args = ap.parse_args()
    cs, pqd = ensure_data(args.files)
    load0 = load_average()
    res: dict[str, Any] = {"files": args.files, "rows": args.files * ROWS,
                           "rounds": args.rounds, "python": sys.version.split()[0],
                           "cores": os.cpu_count(), "load_before": load0}
    res["cases"] = run_spark(args.files, args.rounds, cs, pqd)
    res["load_after"] = load_average()
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    if args.profile:
        res["profile"] = profile_halves(cs, args.top)
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    pq = res["cases"]["parquet"]["median_s"]
    print(f"sum(id) over {args.files:,} small files ({args.files * ROWS:,} rows), "
          f"local[2], {args.rounds} alternating rounds, load {load0} -> {res['load_after']}\n")
    print("| case | median | best | CPU (JVM + workers) | partitions | / Parquet |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, c in res["cases"].items():
        print(f"| {name} | {c['median_s']:.2f} s | {c['best_s']:.2f} s | {c['cpu_s']:.2f} s "
              f"| {c['partitions']} | {c['median_s'] / pq:.2f} x |")
    for k, v in res.get("profile", {}).items():
        print(f"\n### {k}\n```\n{v}```")


if __name__ == "__main__":
    main()
