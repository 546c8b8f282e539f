"""Zed lake numbers: ``python bench/bench_lake.py`` prints a markdown table.

A pool of 1,000 data objects (1,000 rows each, ``ts`` a time key ascending,
objects disjoint in time, seek stride 1 KiB of key so about 8 chunks per
object), committed one object per commit: the branch journal has 1,001
entries, ``snap.zng`` at its end and a ``.snap.zng`` for the tip commit, as
zed leaves them after a load and a query.  The lake is written by
``bench/lake_builder.py`` (the tests' independent writer), served by nginx
behind ``bench/netsim.py``'s proxy on the ``s3`` profile (50 ms RTT,
100 MB/s per connection); requests and bytes are counted in nginx's log.

Targets (issue 18):
1. resolving ``logs@main``: <= 3 round trips beyond the tail of the journal;
2. a key-range query touching 1% of the objects (10): <= 1.2 x the bytes of
   the seek-index chunks holding matching rows, <= 2 x the floor (two round
   trips, seek indexes then data, plus the bytes over 16 connections);
3. Spark driver planning over the pool (resolve + prune + seek ranges): < 2 s.

Peer: the same rows as 1,000 Parquet files read with pyarrow.dataset and the
same filter (no table format: every file's footer is read to prune).
Each case runs once to warm up, then ``--repeat`` times (a fresh lake handle,
so no cache, each time); median and best.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import netsim  # noqa: E402

DATA = HERE / ".data" / "lake-v1"
BUCKET = "lakebench"
OBJECTS = 1000
ROWS = 1000
T0 = 1_700_000_000_000_000_000
SEC = 1_000_000_000
STRIDE = 1024


def ensure_lake(objects: int) -> tuple[Path, Any]:
    """Build the lake (and the Parquet peer) once; returns (lake dir, pool info)."""
    from bench.lake_builder import LakeBuilder, rec

    lake = DATA / "root" / BUCKET / "lake"
    marker = DATA / f"built-{objects}.json"
    if marker.exists():
        return lake, json.loads(marker.read_text())
    import shutil

    shutil.rmtree(DATA / "root", ignore_errors=True)
    t0 = time.perf_counter()
    b = LakeBuilder(lake)
    p = b.create_pool("logs", key="ts", key_type="time", stride=STRIDE)
    row_t = rec(("ts", "time"), ("host", "string"), ("status", "int64"), ("msg", "string"))
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq_dir = DATA / "root" / BUCKET / "parquet"
    pq_dir.mkdir(parents=True, exist_ok=True)
    c = None
    for i in range(objects):
        rows = [{"ts": T0 + (i * ROWS + j) * SEC, "host": f"host-{j % 37}",
                 "status": 200 + j % 7, "msg": f"GET /item/{i}/{j} HTTP/1.1"}
                for j in range(ROWS)]
        c, _ = b.load(p, "main", rows, row_t)
        pq.write_table(pa.table({"ts": pa.array([r["ts"] for r in rows], pa.timestamp("ns")),
                                 "host": [r["host"] for r in rows],
                                 "status": [r["status"] for r in rows],
                                 "msg": [r["msg"] for r in rows]}),
                       str(pq_dir / f"part-{i:04d}.parquet"))
    bdir = f"{p.dir}/branches"
    head = b.head(bdir)
    from bench.lake_builder import BRANCH

    b.journal_snapshot(bdir, BRANCH, [{"ts": T0, "name": "main", "commit": c}], head)
    b.commit_snapshot(p, c)
    info = {"pool_dir": p.dir, "objects": objects}
    marker.write_text(json.dumps(info))
    print(f"<!-- lake built in {time.perf_counter() - t0:.0f} s under {lake} -->")
    return lake, info


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    out = fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs), out


def store_options(sim: Any, profile: str) -> dict[str, Any]:
    return {"endpoint_url": sim.endpoint(profile), "region": "us-east-1",
            "access_key_id": netsim.SimStore.ACCESS_KEY,
            "secret_access_key": netsim.SimStore.SECRET_KEY}


URL = f"s3://{BUCKET}/lake"


class Waves:
    """Counts round trips a client makes: a request that starts while none is in flight
    begins a new one (requests sent together share a round trip)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.in_flight = 0
        self.rounds = 0
        self.requests = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def _count(self, coro: Any) -> Any:
        if self.in_flight == 0:
            self.rounds += 1
        self.in_flight += 1
        self.requests += 1
        try:
            return await coro
        finally:
            self.in_flight -= 1

    async def read_tail(self, key: str, length: int) -> Any:
        return await self._count(self.store.read_tail(key, length))

    async def read_range(self, key: str, offset: int, length: int, version: Any = None) -> Any:
        return await self._count(self.store.read_range(key, offset, length, version))

    async def info(self, key: str) -> Any:
        return await self._count(self.store.info(key))


def resolve_case(opts: dict[str, Any]) -> Callable[[], Any]:
    """Time to a resolved pool, and the round trips of each step: opening the lake, the
    branch journal (HEAD/TAIL/snap.zng, then entries), and the rest of ``lake.pool``."""
    import csup_async
    from csup_async.lake.journal import read_journal
    from csup_async.stores import S3Store

    async def go() -> Any:
        t0 = time.perf_counter()
        async with S3Store(**opts) as s3:
            w = Waves(s3)
            async with csup_async.open_lake(URL, store=w) as lake:
                r_open = w.rounds
                t_open = time.perf_counter() - t0
                pool = await lake.pool("logs@main")
                r_pool = w.rounds - r_open
                t_all = time.perf_counter() - t0
                lake.io._cache.clear()
                w.rounds = 0
                await read_journal(lake.io, f"{lake.pool_config('logs').id_str}/branches")
                r_journal = w.rounds
                return t_open, t_all, r_open, r_pool, r_journal, len(pool.objects)

    return lambda: asyncio.run(go())


def key_range(objects: int) -> tuple[Any, Any, list[int]]:
    """A range over 1% of the objects (k of them), from a quarter into object m to three
    quarters into object m + k - 1."""
    import numpy as np

    k = max(1, objects // 100)
    m = objects // 2
    lo = T0 + (m * ROWS + ROWS // 4) * SEC  # a quarter into object m
    hi = T0 + ((m + k - 1) * ROWS + 3 * ROWS // 4) * SEC  # 3/4 into object m + k - 1
    return np.datetime64(lo, "ns"), np.datetime64(hi, "ns"), list(range(m, m + k))


def query_case(opts: dict[str, Any], lo: Any, hi: Any) -> Callable[[], Any]:
    import csup_async
    from csup_async.stores import S3Store

    async def go() -> Any:
        async with S3Store(**opts) as s3:
            w = Waves(s3)
            async with csup_async.open_lake(URL, store=w) as lake:
                pool = await lake.pool("logs@main")
                w.rounds = 0
                t0 = time.perf_counter()
                res = await pool.scan(["ts", "host", "status"], key_range=(lo, hi))
                res.stats.metadata_requests = w.rounds  # (carried out: round trips)
                return time.perf_counter() - t0, res

    return lambda: asyncio.run(go())


def matching_chunk_bytes(lake: Path, pool_dir: str, lo: Any, hi: Any) -> tuple[int, int]:
    """(bytes of the seek-index chunks that hold rows in [lo, hi], seek index bytes of the
    objects they are in), from the files on disk."""
    from csup_async.format import bsup

    chunk = seek = 0
    for f in sorted((lake / pool_dir / "data").glob("*-seek.zng")):
        buf = f.read_bytes()
        hit = False
        for t, body in bsup.iter_raw_values(buf):
            e = bsup.decode_value(t, body)
            if not (lo > e["max"] or hi < e["min"]):
                chunk += e["length"]
                hit = True
        if hit:
            seek += len(buf)
    return chunk, seek


def parquet_case(sim: Any, profile: str, objects: int, lo: Any, hi: Any) -> Callable[[], Any]:
    import pyarrow as pa
    import pyarrow.dataset as ds
    from pyarrow import fs

    host = sim.endpoint(profile).removeprefix("http://")
    paths = [f"{BUCKET}/parquet/part-{i:04d}.parquet" for i in range(objects)]

    def run() -> Any:
        s3 = fs.S3FileSystem(endpoint_override=host, scheme="http", region="us-east-1",
                             access_key=netsim.SimStore.ACCESS_KEY,
                             secret_key=netsim.SimStore.SECRET_KEY)
        d = ds.dataset(paths, filesystem=s3, format="parquet")
        flt = (ds.field("ts") >= pa.scalar(lo, pa.timestamp("ns"))) & (
            ds.field("ts") <= pa.scalar(hi, pa.timestamp("ns")))
        return d.to_table(columns=["ts", "host", "status"], filter=flt)

    return run


def spark_plan_case(sim: Any, profile: str, where: str) -> Callable[[], Any]:
    from csup_async.spark.lake import LakeReader
    from csup_async.spark.options import parse_options

    o = store_options(sim, profile)
    settings = parse_options({"path": URL, "endpoint": o["endpoint_url"], "region": "us-east-1",
                              "accessKeyId": o["access_key_id"],
                              "secretAccessKey": o["secret_access_key"], "pool": "logs@main",
                              "where": where})

    def run() -> Any:
        return LakeReader(None, settings)._plan()  # type: ignore[arg-type]

    return run


def cold_cli(sim: Any, lo: Any, hi: Any) -> tuple[float, int]:
    """Seconds and rows of one ``csup-async lake scan`` in a fresh process."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID=netsim.SimStore.ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=netsim.SimStore.SECRET_KEY,
               PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "csup_async.cli", "lake", "scan", URL,
                        "--pool", "logs", "-c", "ts", "--where",
                        f"ts>='{lo}Z'", "--where", f"ts<='{hi}Z'",
                        "--endpoint-url", sim.endpoint("s3"), "--region", "us-east-1"],
                       capture_output=True, text=True, env=env, timeout=300)
    t_cli = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return t_cli, len(r.stdout.splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=OBJECTS)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    lake, info = ensure_lake(args.objects)
    sim = netsim.SimStore(DATA / "root", DATA / "nginx").start()
    prof = netsim.PROFILES["s3"]
    rows: list[tuple[str, str, str, str]] = []
    results: dict[str, Any] = {}
    try:
        opts = store_options(sim, "s3")
        # 1. resolve
        mark = netsim.log_mark(sim.log)
        med, best, (t_open, _t_all, r_open, r_pool, r_journal, n) = timed(
            resolve_case(opts), args.repeat)
        c = netsim.log_count(sim.log, mark)
        per_run = c.requests // (args.repeat + 1)
        beyond = r_pool - r_journal
        rows.append(("resolve `logs@main` (open lake + pools journal, branch journal, tip)",
                     f"{med:.3f} s", f"{best:.3f} s",
                     f"{n:,} live objects; about {per_run} requests per run; round trips: "
                     f"open {r_open}, pool {r_pool} = branch journal {r_journal} + "
                     f"{beyond} beyond it (target <= 3); last run: open {t_open:.3f} s"))
        results["resolve"] = {"median_s": med, "best_s": best, "requests": per_run,
                              "rounds_open": r_open, "rounds_pool": r_pool,
                              "rounds_journal": r_journal, "rounds_beyond_journal": beyond}
        # 2. key-range query
        lo, hi, touched = key_range(args.objects)
        chunk_bytes, seek_bytes = matching_chunk_bytes(lake, info["pool_dir"], lo, hi)
        mark = netsim.log_mark(sim.log)
        case = query_case(opts, lo, hi)
        case()  # warm-up
        q_runs = [case() for _ in range(args.repeat)]
        med = statistics.median(t for t, _ in q_runs)
        best = min(t for t, _ in q_runs)
        t_q, res = q_runs[-1]
        c = netsim.log_count(sim.log, mark)
        runs = args.repeat + 1
        # the query alone: requests/bytes of a run minus what resolving costs
        floor = prof.floor(chunk_bytes + seek_bytes, round_trips=2, connections=16)
        q_bytes = res.stats.bytes_read
        ratio = q_bytes / chunk_bytes
        rows.append((f"key-range query over 1% of the objects ({len(touched)}), 3 columns, "
                     "on a resolved pool",
                     f"{med:.3f} s", f"{best:.3f} s",
                     f"{res.num_rows:,} rows; {res.stats.requests} requests in "
                     f"{res.stats.metadata_requests} round trips, "
                     f"{q_bytes:,} bytes (seek indexes: {seek_bytes:,}) = {ratio:.2f} x the "
                     f"{chunk_bytes:,} bytes of matching chunks (target <= 1.2); median "
                     f"{med / floor:.1f} x the floor {floor:.3f} s (target <= 2)"))
        results["query"] = {"median_s": med, "best_s": best, "rows": res.num_rows,
                            "query_s": t_q, "floor_s": floor, "bytes_read": q_bytes,
                            "chunk_bytes": chunk_bytes, "seek_bytes": seek_bytes,
                            "requests": res.stats.requests,
                            "round_trips": res.stats.metadata_requests,
                            "server_requests_per_run": c.requests // runs}
        # peer
        mark = netsim.log_mark(sim.log)
        pmed, pbest, table = timed(parquet_case(sim, "s3", args.objects, lo, hi), args.repeat)
        c = netsim.log_count(sim.log, mark)
        rows.append(("peer: pyarrow.dataset, same rows as 1,000 Parquet files, same filter",
                     f"{pmed:.3f} s", f"{pbest:.3f} s",
                     f"{table.num_rows:,} rows; {c.requests // runs:,} requests, "
                     f"{c.bytes // runs:,} bytes per run; the lake (resolve + query) is "
                     f"{pmed / (med + results['resolve']['median_s']):.1f} x faster"))
        results["peer_pyarrow"] = {"median_s": pmed, "best_s": pbest, "rows": table.num_rows,
                                   "requests": c.requests // runs, "bytes": c.bytes // runs}
        # 3. Spark driver planning
        where = f"ts>='{lo}Z';ts<='{hi}Z'"  # a time key compares with times, not ints
        mark = netsim.log_mark(sim.log)
        smed, sbest, parts = timed(spark_plan_case(sim, "s3", where), args.repeat)
        c = netsim.log_count(sim.log, mark)
        rows.append(("Spark driver planning (resolve, prune, seek ranges)",
                     f"{smed:.3f} s", f"{sbest:.3f} s",
                     f"{len(parts)} partitions; {c.requests // runs} requests per run; "
                     "target < 2 s"))
        results["spark_plan"] = {"median_s": smed, "best_s": sbest, "partitions": len(parts)}
        # cold CLI
        t_cli, n_cli = cold_cli(sim, lo, hi)
        rows.append(("cold CLI: `csup-async lake scan --pool logs --where ...` (process)",
                     f"{t_cli:.2f} s", "-", f"{n_cli:,} rows printed"))
        results["cli_cold_s"] = t_cli
    finally:
        sim.stop()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; s3 profile "
          f"({prof.rtt * 1000:.0f} ms RTT, {prof.bandwidth / 1e6:.0f} MB/s per connection); "
          f"median and best of {args.repeat} runs after a warm-up\n")
    print("| case | median | best | notes |")
    print("|---|---:|---:|---|")
    for name, med_s, best_s, note in rows:
        print(f"| {name} | {med_s} | {best_s} | {note} |")
    out = HERE / "results" / "lake.json"
    out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
