"""Spark over CSUP v23 files (the default target) on a simulated S3 (bench/netsim.py,
50 ms, 100 MB/s), in local mode (``local[2]``), pushdown on: ``sum(id)`` with a filter
one file matches, and over every row; requests and bytes counted at the server (the
last of 3 runs; seconds: their median), after one warm-up query.

``TREE=/path/to/another/checkout python bench/bench_spark_v23.py`` runs another tree's
csup_async (an A/B against main: Spark's Python workers get it through PYTHONPATH);
``FILES`` and ``ROWS`` in the environment size the data (24 x 20,000 by default).
Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TREE = os.environ.get("TREE") or str(Path(__file__).resolve().parents[1])
sys.path.insert(0, TREE)
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["PYTHONPATH"] = TREE + os.pathsep + os.environ.get("PYTHONPATH", "")

import netsim  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import csup_async  # noqa: E402

FILES = int(os.environ.get("FILES", "24"))
ROWS = int(os.environ.get("ROWS", "20000"))


def write(root: Path) -> None:
    root.mkdir(parents=True)
    for k in range(FILES):
        ids = np.arange(k * ROWS, (k + 1) * ROWS, dtype=np.int64)
        csup_async.write(str(root / f"{k:03d}.csup"),
                         pa.table({"id": ids, "s": pa.array([f"s{i % 13}" for i in range(ROWS)])}))


def main() -> None:
    from csup_async.spark import PUSHDOWN_CONF
    from csup_async.spark.session import local_session

    out: dict[str, Any] = {"tree": TREE, "files": FILES, "rows": ROWS,
                           "load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "root" / "bench" / "v23"
        write(root)
        out["bytes_per_file"] = (root / "000.csup").stat().st_size
        store = netsim.SimStore(Path(d) / "root", Path(d) / "nginx").start()
        spark = local_session("v23-bench", cores=2)
        spark.conf.set(PUSHDOWN_CONF, "true")
        urls = json.dumps([f"s3://bench/v23/{k:03d}.csup" for k in range(FILES)])
        opts = {"endpoint": store.endpoint("s3"), "region": netsim.SimStore.REGION,
                "accessKeyId": netsim.SimStore.ACCESS_KEY,
                "secretAccessKey": netsim.SimStore.SECRET_KEY, "pushdown": "true",
                "profile": "s3", "paths": urls}
        k = FILES // 2
        try:
            for name, q in [("warm-up", None),
                            ("filter 1 file", f"id >= {k * ROWS + 5} AND id < {k * ROWS + 500}"),
                            ("all rows", None)]:
                times = []
                for _ in range(1 if name == "warm-up" else 3):
                    mark = netsim.log_mark(store.log)
                    t0 = time.perf_counter()
                    df = spark.read.format("csup").schema("id long, s string").options(
                        **opts).load()
                    n = (df if q is None else df.where(q)).agg({"id": "sum"}).collect()[0][0]
                    times.append(time.perf_counter() - t0)
                    c = netsim.log_count(store.log, mark)
                out[name] = {"sum": n, "seconds": statistics.median(times),
                             "requests": c.requests, "bytes": c.bytes}
        finally:
            spark.stop()
            store.stop()
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
