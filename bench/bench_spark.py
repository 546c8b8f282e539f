"""The Spark data source's numbers: ``python bench/bench_spark.py`` prints a markdown table.

1. Driver planning over 1,000 small files on the ``s3`` profile: list given as
   URLs (nginx cannot list), every file's metadata loaded concurrently, pruned
   and packed.  Target: under 2 s; the floor is about files / connections x RTT
   (1,000 / 64 x 50 ms = 0.8 s).
2. A Spark read (local mode, 2 cores) of a 2-column projection (``i3``, ``s1``)
   of 1M rows x 24 columns in 8 files, against Spark's own Parquet reader on
   the same rows in the same session, both from local disk (Spark's Parquet
   reader has no S3 client here: hadoop-aws is not in the pyspark wheel and
   nothing may be downloaded); then the CSUP read again from the simulated S3.

Latency: the store is nginx (sendfile, range GETs, S3 path-style URLs) behind
``bench/netsim.py``'s user-space TCP proxy, which holds each response's first
byte until 50 ms after its request arrived and then paces it at 100 MB/s per
connection (no netem on these kernels).  Requests are counted in nginx's log.
Each case runs once to warm up, then ``--repeat`` times; the table shows the
median and the best.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import netsim  # noqa: E402  (bench/netsim.py: nginx + delay proxy)

DATA = HERE / ".data" / "spark-v1"
BUCKET = "bench"
WIDE_FILES = 8
COLUMNS = "i3 long, s1 string"


def ensure_data(files: int, rows: int) -> dict[str, list[str]]:
    """Keys (under the bucket) of the small files and of the wide CSUP/Parquet files."""
    import pyarrow.parquet as pq
    from data import make_table  # bench/data.py: the shared benchmark table

    import csup_async

    root = DATA / "root" / BUCKET / "spark"
    keys: dict[str, list[str]] = {
        "many": [f"spark/many/part-{i:04d}.csup" for i in range(files)],
        "csup": [f"spark/wide-csup/part-{i}.csup" for i in range(WIDE_FILES)],
        "parquet": [f"spark/wide-parquet/part-{i}.parquet" for i in range(WIDE_FILES)],
    }
    bucket = DATA / "root" / BUCKET
    if not all((bucket / k).exists() for ks in keys.values() for k in ks):
        t0 = time.perf_counter()
        for i, k in enumerate(keys["many"]):
            p = bucket / k
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                csup_async.write(str(p), make_table(500, seed=5000 + i, start=i * 500),
                        target="csup-async")
        per = rows // WIDE_FILES
        for i in range(WIDE_FILES):
            t = make_table(per, seed=42 + i, start=i * per)
            for k in (keys["csup"][i], keys["parquet"][i]):
                (bucket / k).parent.mkdir(parents=True, exist_ok=True)
            csup_async.write(str(bucket / keys["csup"][i]), t, target="csup-async")
            pq.write_table(t, str(bucket / keys["parquet"][i]))
        print(f"<!-- data generated in {time.perf_counter() - t0:.0f} s under {root} -->")
    return keys


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    out = fn()  # warm-up (connections, imports, JIT of the JVM)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs), out


def s3_options(endpoint: str) -> dict[str, str]:
    return {"endpoint": endpoint, "region": "us-east-1",
            "accessKeyId": netsim.SimStore.ACCESS_KEY,
            "secretAccessKey": netsim.SimStore.SECRET_KEY}


def plan_case(sim: netsim.SimStore, keys: list[str], profile: str) -> Callable[[], Any]:
    from csup_async.spark import listing, planning
    from csup_async.spark.options import parse_options

    urls = [f"s3://{BUCKET}/{k}" for k in keys]
    settings = parse_options({"paths": json.dumps(urls), **s3_options(sim.endpoint(profile)),
                              "profile": "s3"})

    def run() -> Any:
        loaded = listing.load_sync(settings)
        return planning.plan_read(loaded, (("i3", "i3"), ("s1", "s1")), [], settings)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000, help="small files for planning")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the wide table")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    keys = ensure_data(args.files, args.rows)
    sim = netsim.SimStore(DATA / "root", DATA / "nginx").start()
    rows: list[tuple[str, float, float, str]] = []
    try:
        for profile in ("s3", "local"):
            mark = netsim.log_mark(sim.log)
            med, best, plan = timed(plan_case(sim, keys["many"], profile), args.repeat)
            n = netsim.log_count(sim.log, mark).requests // (args.repeat + 1)
            rtt = "50 ms RTT" if profile == "s3" else "no delay"
            rows.append((f"driver planning, {args.files:,} files, s3 profile, {rtt}", med, best,
                         f"{n:,} requests at the server; {len(plan.partitions)} partitions; "
                         f"target < 2 s" if profile == "s3" else f"{n:,} requests"))
        rows += spark_cases(sim, keys, args.repeat)
    finally:
        sim.stop()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; median and best of "
          f"{args.repeat} runs after a warm-up\n")
    print("| case | median | best | notes |")
    print("|---|---:|---:|---|")
    for name, med, best, note in rows:
        print(f"| {name} | {med:.2f} s | {best:.2f} s | {note} |")


def spark_cases(sim: netsim.SimStore, keys: dict[str, list[str]],
                repeat: int) -> list[tuple[str, float, float, str]]:
    from csup_async.spark.session import local_session

    spark = local_session("csup-bench", cores=2)
    bucket = DATA / "root" / BUCKET
    out = []
    try:
        def noop(make: Callable[[], Any]) -> Callable[[], Any]:
            # a new DataFrame per run: Spark keeps a loaded DataFrame's read plan, and the
            # driver's listing and planning are part of what a query costs
            return lambda: make().write.format("noop").mode("overwrite").save()

        pq_paths = [str(bucket / k) for k in keys["parquet"]]
        med, best, _ = timed(noop(lambda: spark.read.parquet(*pq_paths).select("i3", "s1")),
                             repeat)
        out.append(("Spark Parquet reader, 2 of 24 columns, 1M rows, local disk", med, best,
                    f"{len(keys['parquet'])} files"))
        local_paths = json.dumps([str(bucket / k) for k in keys["csup"]])
        med, best, _ = timed(noop(lambda: spark.read.format("csup").schema(COLUMNS)
                                  .option("paths", local_paths).load()), repeat)
        out.append(("csup source, 2 of 24 columns, 1M rows, local disk", med, best,
                    f"{len(keys['csup'])} files, user schema = projection"))
        report = DATA / "plan-report.json"
        s3 = s3_options(sim.endpoint("s3"))

        def remote(keys: list[str]) -> Callable[[], Any]:
            urls = json.dumps([f"s3://{BUCKET}/{k}" for k in keys])
            return lambda: (spark.read.format("csup").schema(COLUMNS).options(**s3)
                            .option("planReport", str(report)).option("paths", urls).load())

        mark = netsim.log_mark(sim.log)
        med, best, _ = timed(noop(remote(keys["csup"])), repeat)
        n = netsim.log_count(sim.log, mark).requests // (repeat + 1)
        plan = json.loads(report.read_text())
        out.append(("csup source, 2 of 24 columns, 1M rows, simulated S3 (50 ms)", med, best,
                    f"{n} requests/query ({plan['metadata_requests']} metadata), "
                    f"{plan['bytes_to_read'] / 1e6:.1f} MB read, "
                    f"{plan['partitions']} partitions"))
        mark = netsim.log_mark(sim.log)
        med, best, _ = timed(noop(remote(keys["many"])), repeat)
        n = netsim.log_count(sim.log, mark).requests // (repeat + 1)
        plan = json.loads(report.read_text())
        if plan.get("planned_on") == "executors":  # past planOnExecutorsThreshold
            note = (f"{n:,} requests/query, all from the tasks (planned on executors, "
                    f"{plan['partitions']} partitions)")
        else:
            note = (f"{n:,} requests/query, driver metadata {plan['metadata_seconds']:.2f} s, "
                    f"{plan['requests']} executor requests, "
                    f"{plan['bytes_shipped'] / 1e6:.1f} MB shipped with partitions")
        out.append((f"csup source, {len(keys['many']):,} small files, simulated S3 (50 ms)",
                    med, best, note))
    finally:
        spark.stop()
    return out


if __name__ == "__main__":
    main()
