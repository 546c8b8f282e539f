"""The Spark source at scale (issue 20): ``python bench/bench_spark_scale.py [--repeat 3]``.

Cases, each against a floor or a peer in the same run:

1. Driver planning (every file's metadata loaded by the planning process, as
   below ``planOnExecutorsThreshold``) of 1,000 and 10,000 small files on the
   ``s3`` profile; floor = files / 64 connections (the store's pool, and
   ``fileConcurrency``) x 50 ms.
2. Executor planning (``planOnExecutorsThreshold`` exceeded): a Spark
   ``count()`` of the same files, whose tasks do the tail reads (a small file's
   whole object) and planning; floor = files / (2 tasks x 64 connections) x
   50 ms, plus Spark's cost of a job measured on an empty read.  The same query
   planned on the driver, for the threshold.
3. 100,000 small files, simulated: nothing is written (10,000 files take this
   2-core box minutes; 100,000 would take most of an hour and 100,000 inodes).
   The driver half of executor planning runs on 100,000 listed URLs (time and
   peak memory); driver planning's time and memory are extrapolated from the
   1,000-file run (per-file cost x 100,000).
4. 2,000 small files (100 rows x 3 columns), ``sum(id)``, local disk: csup
   (planned on executors, the default past 500 files, and on the driver)
   against Spark's own Parquet reader over the same rows.
5. 2 of 24 columns of 1M rows in 8 files, local disk: csup against Spark's
   Parquet reader (data of bench/bench_spark.py).
6. A query on partition columns on the ``s3`` profile: the objects nginx
   served, against the objects of the matching partitions.

Latency: bench/netsim.py (nginx behind a user-space proxy that delays each
response's first byte by 50 ms, 100 MB/s per connection).  Writes
bench/results/spark.json; the markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import netsim  # noqa: E402  (bench/netsim.py: nginx + delay proxy)

DATA = HERE / ".data" / "spark-scale-v1"
BUCKET = "bench"
SMALL = 10_000
PARQUET_SMALL = 2_000
YEARS, KINDS, PER_PART = (2022, 2023, 2024, 2025), ("a", "b", "c", "d", "e"), 4
RTT = netsim.PROFILES["s3"].rtt
SWEEP = (250, 500, 1000, 2000, 10_000)  # files: where executor planning starts to pay
CONNECTIONS = 64  # the store's pool and fileConcurrency, both 64 by default


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_by_role(sim: netsim.SimStore) -> dict[str, dict[int, float]]:
    """CPU seconds used so far per process of this process ("driver"), the JVM, Spark's
    Python workers (planning and tasks) and the simulated store (nginx and the delay
    proxy), read from /proc: all of them share this machine's cores."""
    procs: dict[int, tuple[int, str, float]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2 :].split()
        procs[int(d)] = (int(rest[1]), comm, (int(rest[11]) + int(rest[12])) / _TICK)

    def below(roots: set[int]) -> set[int]:
        found, todo = set(roots), list(roots)
        while todo:
            pid = todo.pop()
            kids = [p for p, (pp, _, _) in procs.items() if pp == pid and p not in found]
            found.update(kids)
            todo += kids
        return found

    me = os.getpid()
    store = below({p.pid for p in sim._procs})
    mine = below({me}) - store
    jvm = {p for p in mine if procs[p][1] == "java"}
    workers = below(jvm) - jvm
    def cpu(pids: set[int]) -> dict[int, float]:
        return {p: procs[p][2] for p in pids if p in procs}

    return {"driver": cpu({me}), "jvm": cpu(jvm), "spark_python": cpu(workers),
            "store": cpu(store)}


def cpu_delta(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]],
              runs: int) -> dict[str, float]:
    """CPU seconds per run and role (a process that ended in between is not counted:
    Spark's idle Python workers exit after a minute)."""
    return {role: round(sum(t - before[role].get(p, 0.0) for p, t in now.items()) / runs, 3)
            for role, now in after.items()}


def _small(i: int) -> Any:
    import numpy as np
    import pyarrow as pa

    ids = np.arange(i * 100, i * 100 + 100, dtype=np.int64)
    return pa.table({"id": ids, "name": pa.array([f"n{v % 977}" for v in ids.tolist()]),
                     "value": ids.astype(np.float64) / 7})


def ensure_data() -> dict[str, list[str]]:
    """Keys under the bucket: small CSUP files, their Parquet twins, a partitioned set."""
    import pyarrow.parquet as pq

    import csup_async

    bucket = DATA / "root" / BUCKET
    keys = {
        "small": [f"small/part-{i:05d}.csup" for i in range(SMALL)],
        "small_pq": [f"small-pq/part-{i:05d}.parquet" for i in range(PARQUET_SMALL)],
        "parts": [f"parts/year={y}/kind={k}/part-{j}.csup" for y in YEARS for k in KINDS
                  for j in range(PER_PART)],
        "small2k": [f"small2k/part-{i:05d}.csup" for i in range(PARQUET_SMALL)],
    }
    t0 = time.perf_counter()
    made = 0
    for group, ks in keys.items():
        for i, k in enumerate(ks):
            p = bucket / k
            if p.exists():
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            t = _small(i if group != "parts" else 50_000 + i)
            if group == "small_pq":
                pq.write_table(t, str(p))
            else:
                csup_async.write(str(p), t, target="csup-async")
            made += 1
    if made:
        print(f"<!-- {made} files generated in {time.perf_counter() - t0:.0f} s -->")
    return keys


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    out = fn()  # warm-up
    runs = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs), out


def s3_options(endpoint: str) -> dict[str, str]:
    return {"endpoint": endpoint, "region": "us-east-1",
            "accessKeyId": netsim.SimStore.ACCESS_KEY,
            "secretAccessKey": netsim.SimStore.SECRET_KEY, "profile": "s3"}


def urls_of(keys: list[str]) -> list[str]:
    return [f"s3://{BUCKET}/{k}" for k in keys]


def driver_planning(sim: netsim.SimStore, keys: list[str], repeat: int) -> dict[str, Any]:
    """Load + plan on this process, as a planning worker does below the threshold; again
    with no delay (what the CPUs alone allow), and once under tracemalloc (peak memory)."""
    from csup_async.spark import listing, planning
    from csup_async.spark.options import parse_options

    def case(profile: str) -> Callable[[], Any]:
        settings = parse_options({"paths": json.dumps(urls_of(keys)),
                                  **s3_options(sim.endpoint(profile)),
                                  "planOnExecutorsThreshold": str(len(keys))})

        def run() -> Any:
            loaded = listing.load_sync(settings)
            return planning.plan_read(loaded, (("id", "id"),), [], settings)

        return run

    run = case("s3")
    mark = netsim.log_mark(sim.log)
    cpu0 = cpu_by_role(sim)
    med, best, plan = timed(run, repeat)
    cpu = cpu_delta(cpu0, cpu_by_role(sim), repeat + 1)
    reqs = netsim.log_count(sim.log, mark).requests // (repeat + 1)
    nodelay, _, _ = timed(case("local"), repeat)
    gc.collect()
    tracemalloc.start()
    plan = run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    floor = len(keys) / CONNECTIONS * RTT
    return {"files": len(keys), "median_s": med, "best_s": best, "floor_s": floor,
            "ratio": med / floor, "requests": reqs, "partitions": len(plan.partitions),
            "no_delay_median_s": nodelay, "cpu_s": cpu, "peak_bytes": peak}


def simulated_100k(per_file: dict[str, Any]) -> dict[str, Any]:
    """Executor planning's driver half on 100,000 URLs; driver planning extrapolated."""
    import pickle

    import planner as P
    from csup_async.spark.listing import Loaded
    from csup_async.spark.options import parse_options
    from csup_async.spark.scaleout import plan_unopened

    n = 100_000
    urls = [f"s3://{BUCKET}/sim/part-{i:06d}.csup" for i in range(n)]
    settings = parse_options({"paths": json.dumps(urls), "profile": "s3"})

    def run() -> tuple[Any, int]:
        loaded = Loaded([], P.get_profile("s3"), 0, 0.0, None, [], urls)
        plan = plan_unopened(loaded, (("id", "id"),), [], settings)
        # what the planning worker pickles for Spark
        return plan, sum(len(pickle.dumps(p)) for p in plan.partitions)

    seconds, _, (plan, shipped) = timed(run, 3)
    gc.collect()
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    scale = n / per_file["files"]
    return {"files": n, "executor_planning_driver_s": seconds,
            "executor_planning_peak_bytes": peak, "partitions": len(plan.partitions),
            "pickled_partition_bytes": shipped,
            "driver_planning_extrapolated_s": per_file["median_s"] * scale,
            "driver_planning_extrapolated_cpu_s": per_file["cpu_s"]["driver"] * scale,
            "driver_planning_extrapolated_peak_bytes": per_file["peak_bytes"] * scale,
            "floor_executors_s": n / (2 * CONNECTIONS) * RTT}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-10k-driver", action="store_true",
                    help="leave out driver planning of 10,000 files (about 15 s a run)")
    args = ap.parse_args()
    keys = ensure_data()
    import bench_spark  # the wide 24-column data of bench/bench_spark.py

    wide = bench_spark.ensure_data(1000, 1_000_000)
    sim = netsim.SimStore(DATA / "root", DATA / "nginx").start()
    results: dict[str, Any] = {"python": sys.version.split()[0], "cores": os.cpu_count(),
                               "repeat": args.repeat}
    try:
        results["driver_1k"] = driver_planning(sim, keys["small"][:1000], args.repeat)
        if not args.skip_10k_driver:
            results["driver_10k"] = driver_planning(sim, keys["small"], 1)
        results["simulated_100k"] = simulated_100k(results["driver_1k"])
        results.update(spark_cases(sim, keys, wide, args.repeat))
    finally:
        sim.stop()
    out = HERE / "results" / "spark.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print_table(results)


def spark_cases(sim: netsim.SimStore, keys: dict[str, list[str]],
                wide: dict[str, list[str]], repeat: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from csup_async.spark.session import local_session

    spark = local_session("csup-bench-scale", cores=2)
    bucket = DATA / "root" / BUCKET
    s3 = s3_options(sim.endpoint("s3"))
    out: dict[str, Any] = {}

    def csup(threshold: int | None = None, **opts: str) -> Any:
        r = spark.read.format("csup").options(**opts)
        if threshold is not None:
            r = r.option("planOnExecutorsThreshold", str(threshold))
        return r

    def served(make: Callable[[], Any]) -> dict[str, Any]:
        mark = netsim.log_mark(sim.log)
        cpu0 = cpu_by_role(sim)
        med, best, _ = timed(make, repeat)
        return {"median_s": med, "best_s": best, "cpu_s": cpu_delta(cpu0, cpu_by_role(sim),
                                                                   repeat + 1),
                "requests": netsim.log_count(sim.log, mark).requests // (repeat + 1)}

    try:
        # Spark's own cost of a query on this source: one empty-ish file, count()
        one = json.dumps(urls_of(keys["small"][:1]))
        med, best, _ = timed(lambda: csup(**s3).schema("id long").option("paths", one)
                             .load().count(), repeat)
        out["spark_job_overhead"] = {"median_s": med, "best_s": best}
        local = s3_options(sim.endpoint("local"))
        for n in SWEEP:
            paths = json.dumps(urls_of(keys["small"][:n]))
            row: dict[str, Any] = {"files": n}
            modes = [("executors", 0, s3)] + ([("driver", n, s3)] if n <= 2000 else []) + (
                [("executors_no_delay", 0, local)] if n == SWEEP[-1] else [])
            for mode, threshold, opts in modes:
                row[mode] = served(lambda p=paths, t=threshold, o=opts: csup(t, **o)
                                   .schema("id long").option("paths", p).load().count())
            row["floor_executors_s"] = n / (2 * CONNECTIONS) * RTT
            row["floor_driver_s"] = n / CONNECTIONS * RTT
            out[f"count_s3_{n}"] = row

        # 2,000 small files, sum(id), local disk
        pq_dir, csup_dir = str(bucket / "small-pq"), str(bucket / "small2k")
        expect = sum(range(PARQUET_SMALL * 100))
        row = {"files": PARQUET_SMALL, "rows": PARQUET_SMALL * 100}
        cases = {"parquet": lambda: spark.read.parquet(pq_dir),
                 "csup_executors": lambda: csup().schema("id long, name string, value double")
                 .load(csup_dir),
                 "csup_driver": lambda: csup(PARQUET_SMALL)
                 .schema("id long, name string, value double").load(csup_dir)}
        for name, make in cases.items():
            got = make().agg(F.sum("id")).collect()[0][0]
            assert got == expect, (name, got, expect)
            row[name] = served(lambda m=make: m().agg(F.sum("id")).collect())
        out["sum_small_2k"] = row

        # 2 of 24 columns, 1M rows in 8 files, local disk
        wbucket = bench_spark_bucket()
        pq_paths = [str(wbucket / k) for k in wide["parquet"]]
        cs_paths = json.dumps([str(wbucket / k) for k in wide["csup"]])

        def noop(df: Any) -> None:
            df.write.format("noop").mode("overwrite").save()

        row = {"files": len(pq_paths), "rows": 1_000_000}
        for name, make in {
                "parquet": lambda: spark.read.parquet(*pq_paths).select("i3", "s1"),
                "csup": lambda: csup().schema("i3 long, s1 string").option("paths", cs_paths)
                .load()}.items():
            row[name] = served(lambda m=make: noop(m()))
        out["wide_2_of_24"] = row

        # partition filter on the s3 profile: which objects are opened
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        purls = json.dumps(urls_of(keys["parts"]))
        row = {"objects": len(keys["parts"])}
        for mode, threshold in (("driver", 1000), ("executors", 0)):
            df = (csup(threshold, **s3).option("pushdown", "true").option("paths", purls)
                  .option("basePath", f"s3://{BUCKET}/parts/")
                  .schema("id long, name string, value double, year long, kind string")
                  .load())
            mark = netsim.log_mark(sim.log)
            got = df.where("year = 2024 AND kind = 'c'").agg(F.count("*")).collect()[0][0]
            time.sleep(0.05)  # nginx logs after the response
            with open(sim.log, "rb") as f:
                f.seek(mark)
                uris = [line.rsplit(b" ", 1)[-1].decode() for line in f.read().splitlines()]
            row[mode] = {"rows": got, "requests": len(uris),
                         "objects_opened": len(set(uris)),
                         "only_matching": all("/year=2024/kind=c/" in u for u in uris)}
        row["matching_objects"] = PER_PART
        out["partition_filter"] = row
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    finally:
        spark.stop()
    return out


def bench_spark_bucket() -> Path:
    import bench_spark

    return bench_spark.DATA / "root" / bench_spark.BUCKET


def _cpu(c: dict[str, float]) -> str:
    return (f"CPU/run: driver {c['driver']:.2f} s, JVM {c['jvm']:.2f} s, Spark's Python "
            f"{c['spark_python']:.2f} s, store+proxy {c['store']:.2f} s")


def print_table(r: dict[str, Any]) -> None:
    print(f"Python {r['python']}, {r['cores']} cores; median (best) of {r['repeat']} runs "
          "after a warm-up\n")
    print("| case | csup | floor or peer | ratio | notes |")
    print("|---|---:|---:|---:|---|")
    for key in ("driver_1k", "driver_10k"):
        if key in r:
            d = r[key]
            print(f"| driver planning, {d['files']:,} small files, s3 profile | "
                  f"{d['median_s']:.2f} s ({d['best_s']:.2f}) | {d['floor_s']:.2f} s floor "
                  f"(/64 conn.) | {d['ratio']:.2f} x | {d['requests']:,} requests; no delay: "
                  f"{d['no_delay_median_s']:.2f} s; {_cpu(d['cpu_s'])}; peak "
                  f"{d['peak_bytes'] / 2**20:.0f} MiB |")
    job = r["spark_job_overhead"]["median_s"]
    for n in SWEEP:
        row = r[f"count_s3_{n}"]
        e = row["executors"]
        floor = row["floor_executors_s"] + job
        print(f"| count(), {n:,} files, s3, planned on executors | {e['median_s']:.2f} s "
              f"({e['best_s']:.2f}) | {floor:.2f} s floor (/2x64 conn. + {job:.2f} s job) | "
              f"{e['median_s'] / floor:.2f} x | {e['requests']:,} requests; "
              f"{_cpu(e['cpu_s'])} |")
        if "executors_no_delay" in row:
            d = row["executors_no_delay"]
            print(f"| the same, no delay | {d['median_s']:.2f} s ({d['best_s']:.2f}) | | | "
                  f"{_cpu(d['cpu_s'])} |")
        if "driver" in row:
            d = row["driver"]
            print(f"| count(), {n:,} files, s3, planned on the driver | {d['median_s']:.2f} s "
                  f"({d['best_s']:.2f}) | {e['median_s']:.2f} s on executors | "
                  f"{d['median_s'] / e['median_s']:.2f} x | {_cpu(d['cpu_s'])} |")
    s = r["simulated_100k"]
    print(f"| 100,000 files, simulated: executor planning, driver half | "
          f"{s['executor_planning_driver_s']:.2f} s | {s['driver_planning_extrapolated_s']:.0f}"
          f" s driver planning (extrapolated) | — | peak "
          f"{s['executor_planning_peak_bytes'] / 2**20:.0f} MiB vs "
          f"{s['driver_planning_extrapolated_peak_bytes'] / 2**30:.2f} GiB; "
          f"{s['partitions']} partitions, {s['pickled_partition_bytes'] / 2**20:.1f} MiB "
          f"pickled; tasks' floor {s['floor_executors_s']:.0f} s on 2 cores |")
    row = r["sum_small_2k"]
    pq = row["parquet"]["median_s"]
    print(f"| sum(id), 2,000 small files, local disk, Spark Parquet | {pq:.2f} s | | | "
          f"{_cpu(row['parquet']['cpu_s'])} |")
    for name in ("csup_executors", "csup_driver"):
        c = row[name]
        print(f"| sum(id), 2,000 small files, local disk, {name.replace('csup_', 'planned on ')}"
              f" | {c['median_s']:.2f} s ({c['best_s']:.2f}) | {pq:.2f} s Spark Parquet | "
              f"{c['median_s'] / pq:.2f} x | {_cpu(c['cpu_s'])} |")
    row = r["wide_2_of_24"]
    pq, c = row["parquet"]["median_s"], row["csup"]
    print(f"| 2 of 24 columns, 1M rows, 8 files, local disk | {c['median_s']:.2f} s "
          f"({c['best_s']:.2f}) | {pq:.2f} s Spark Parquet | {c['median_s'] / pq:.2f} x | "
          f"{_cpu(c['cpu_s'])}; Parquet: {_cpu(row['parquet']['cpu_s'])} |")
    row = r["partition_filter"]
    for mode in ("driver", "executors"):
        p = row[mode]
        print(f"| year = 2024 AND kind = 'c', {row['objects']} objects, s3, planned on {mode} | "
              f"{p['objects_opened']} objects opened | {row['matching_objects']} matching | — | "
              f"{p['requests']} requests; only matching: {p['only_matching']} |")


if __name__ == "__main__":
    main()
