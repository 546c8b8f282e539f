"""Partition pruning: requests and time for a query on partition columns, at the server.

A Hive-style layout (``month=M/kind=K/part-0.csup``, 24 months x 8 kinds = 192
small objects) on the simulated store (bench/netsim.py: nginx behind the
``s3`` profile's 50 ms proxy; requests counted from nginx's log).  Cases, each
a cold ``open_dataset`` + ``scan`` per run:

* csup, ``filter=month = 7 and kind = 'k3'`` (partition-pruned: one object);
* csup, the same filter on a dataset opened without partitioning, where the
  same values are data columns (every object is read, rows filtered);
* pyarrow.dataset with ``partitioning="hive"`` over the same keys as Parquet,
  ``to_table(filter=...)`` (the peer: it prunes fragments by partition too).

Run: ``python bench/bench_partitions.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
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

import netsim  # noqa: E402

DATA = HERE / ".data" / "partitions-v1"
BUCKET = "bench"
MONTHS, KINDS, ROWS = 24, 8, 2000


def ensure_data() -> list[tuple[int, str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import csup_async

    parts = [(m, f"k{k}") for m in range(1, MONTHS + 1) for k in range(KINDS)]
    for m, k in parts:
        base = DATA / "root" / BUCKET
        c = base / "hive-csup" / f"month={m}" / f"kind={k}" / "part-0.csup"
        q = base / "hive-parquet" / f"month={m}" / f"kind={k}" / "part-0.parquet"
        flat = base / "flat-csup" / f"m{m}-{k}.csup"
        if c.exists() and q.exists() and flat.exists():
            continue
        ids = list(range(ROWS))
        t = pa.table({"id": ids, "v": [float(i) * 0.5 for i in ids]})
        for p in (c, q, flat):
            p.parent.mkdir(parents=True, exist_ok=True)
        csup_async.write(str(c), t, target="csup-async")
        pq.write_table(t, str(q))
        csup_async.write(str(flat), t.append_column("month", pa.array([m] * ROWS))
                         .append_column("kind", pa.array([k] * ROWS)), target="csup-async")
    return parts


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    out = fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    parts = ensure_data()
    sim = netsim.SimStore(DATA / "root", DATA / "nginx").start()
    try:
        endpoint = sim.endpoint("s3")
        opts = {"endpoint_url": endpoint, "region": "us-east-1",
                "access_key_id": netsim.SimStore.ACCESS_KEY,
                "secret_access_key": netsim.SimStore.SECRET_KEY}
        rows = []
        for name, case in cases(endpoint, opts, parts):
            mark = netsim.log_mark(sim.log)
            med, got = timed(case, args.repeat)
            n = netsim.log_count(sim.log, mark).requests / (args.repeat + 1)
            rows.append((name, med, n, got))
    finally:
        sim.stop()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; {len(parts)} objects "
          f"of {ROWS} rows; s3 profile (50 ms); median of {args.repeat} runs after a warm-up\n")
    print("| case | median | requests per run | rows |")
    print("|---|---:|---:|---:|")
    for name, med, n, got in rows:
        print(f"| {name} | {med:.3f} s | {n:.0f} | {got} |")


def cases(endpoint: str, opts: dict[str, Any], parts: list[tuple[int, str]]
          ) -> list[tuple[str, Callable[[], Any]]]:
    import pyarrow.dataset as pds
    from pyarrow import fs

    import csup_async
    from planner.filtertext import parse_filter

    where = parse_filter("month = 7 and kind = 'k3'")
    hive = [f"s3://{BUCKET}/hive-csup/month={m}/kind={k}/part-0.csup" for m, k in parts]
    flat = [f"s3://{BUCKET}/flat-csup/m{m}-{k}.csup" for m, k in parts]

    def csup(urls: list[str], **kw: Any) -> Callable[[], int]:
        async def go() -> int:
            async with csup_async.open_dataset(urls, profile="s3", **opts, **kw) as ds:
                return (await ds.scan(["id", "v"], filter=where)).num_rows

        return lambda: asyncio.run(go())

    s3 = fs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                         access_key=netsim.SimStore.ACCESS_KEY,
                         secret_key=netsim.SimStore.SECRET_KEY)
    pq_keys = [f"{BUCKET}/hive-parquet/month={m}/kind={k}/part-0.parquet" for m, k in parts]

    def arrow() -> int:
        d = pds.dataset(pq_keys, filesystem=s3, format="parquet", partitioning="hive",
                        partition_base_dir=f"{BUCKET}/hive-parquet")
        return d.to_table(columns=["id", "v"], filter=(pds.field("month") == 7)
                          & (pds.field("kind") == "k3")).num_rows

    return [
        ("csup, partitioning='hive', filter on partitions",
         csup(hive, partitioning="hive", partition_base=f"s3://{BUCKET}/hive-csup/")),
        ("csup, same values as data columns (no partitioning)", csup(flat)),
        ("pyarrow.dataset, hive partitioning (Parquet)", arrow),
    ]


if __name__ == "__main__":
    main()
