"""Handing a result to polars / pyarrow / DuckDB: the capsule path against to_arrow.

Run ``python bench/bench_capsule.py [--rows N]``; prints a markdown table of the
median of 5 runs of each way, on a result of N rows (int64, float64, string,
a nullable int64) read from a local file, and the bytes the
capsule export allocated (tracemalloc: numpy's packed validity bitmaps; the value,
offset and string buffers are shared).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import csup_async


def _median(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    n = ap.parse_args().rows
    import duckdb
    import polars as pl
    import pyarrow as pa

    from csup_async.arrays.capsule import export_batch

    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "t.csup")
        nulls = np.ma.masked_array(rng.integers(0, 100, n), rng.random(n) < 0.1)
        strings = pa.array([f"s{i % 1000}" for i in range(n)])
        csup_async.write(path, pa.table({"i": np.arange(n), "f": rng.random(n), "s": strings,
                                         "m": pa.array(nulls)}), target="csup-async")
        res = csup_async.read(path)
    tracemalloc.start()
    export_batch(res.columns, res.num_rows)
    allocated = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    data = sum(a.values.nbytes if hasattr(a, "values") else a.data.nbytes + a.offsets.nbytes
               for a in res.columns.values())
    rows = [
        ("capsule export alone (nanoarrow)", lambda: export_batch(res.columns, res.num_rows)),
        ("to_arrow()", res.to_arrow),
        ("pl.DataFrame(result) (capsule)", lambda: pl.DataFrame(res)),
        ("pl.from_arrow(result.to_arrow())", lambda: pl.from_arrow(res.to_arrow())),
        ("pa.table(result) (capsule)", lambda: pa.table(res)),
        ("duckdb sum(i) over result (capsule)",
         lambda: duckdb.from_arrow(res).aggregate("sum(i)").fetchall()),
    ]
    print(f"{n:,} rows, {data / 1e6:.1f} MB of column buffers; the capsule export "
          f"allocated {allocated / 1e6:.2f} MB\n")
    print("| way | median s |\n|---|---|")
    for name, fn in rows:
        print(f"| {name} | {_median(fn):.4f} |")


if __name__ == "__main__":
    main()
