"""The dataset scanner: 500 small files, ``iter_batches(filter=)`` against ``scan(filter=)``.

Local files (``bench/.data/dataset-scan-v1``: 500 objects of 2,000 rows
``{id, v, s}``, written once).  Per case: wall time (median of ``--repeat``
runs, without tracing) and the peak of Python-traced memory above the opened
dataset (one more run under ``tracemalloc``: numpy's buffers are traced too).
Cases:

* ``scan(filter=)``: the whole filtered result in memory;
* ``iter_batches(filter=)``: batches of 65,536 rows, each dropped once seen;
* ``count_rows(filter=)``;
* zones inside files: three sorted files, a filter matching 0.8% of one file's
  rows; bytes read against the unfiltered scan's.

Run: ``python bench/bench_dataset_scan.py [--repeat 3]``; writes
``bench/results/dataset_scan.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DATA = HERE / ".data" / "dataset-scan-v1"
FILES, ROWS = 500, 2000
FILTER = "v >= 500"  # 75% of the rows


def ensure_data() -> tuple[Path, Path]:
    import csup_async

    many, zones = DATA / "many", DATA / "zones"
    if not (many / f"{FILES - 1:03d}.csup").exists():
        many.mkdir(parents=True, exist_ok=True)
        for k in range(FILES):
            csup_async.write(str(many / f"{k:03d}.csup"),
                             [{"id": k * ROWS + i, "v": float(i), "s": f"row {i:06d} of {k}"}
                              for i in range(ROWS)], target="csup-async")
    if not (zones / "2.csup").exists():
        zones.mkdir(parents=True, exist_ok=True)
        for k in range(3):
            csup_async.write(str(zones / f"{k}.csup"),
                             [{"ts": k * 1_000_000 + i, "pad": f"{i:08d}" * 4}
                              for i in range(60_000)], segment_thresh=32 << 10, target="csup-async")
    return many, zones


async def _scan(ds: Any) -> int:
    return int((await ds.scan(["id", "s"], filter=FILTER)).num_rows)


async def _batches(ds: Any) -> int:
    n = 0
    async for b in ds.iter_batches(["id", "s"], filter=FILTER):
        n += b.num_rows
    return n


async def _count(ds: Any) -> int:
    return int(await ds.count_rows(filter=FILTER))


def measure(many: Path, fn: Callable[[Any], Awaitable[int]], repeat: int) -> dict[str, Any]:
    import csup_async

    async def once(trace: bool) -> tuple[float, int, int]:
        async with csup_async.open_dataset(str(many)) as ds:
            if trace:
                tracemalloc.start()
                base = tracemalloc.get_traced_memory()[0]
            t0 = time.perf_counter()
            n = await fn(ds)
            wall = time.perf_counter() - t0
            peak = 0
            if trace:
                peak = tracemalloc.get_traced_memory()[1] - base
                tracemalloc.stop()
            return wall, n, peak

    walls = [asyncio.run(once(False))[0] for _ in range(repeat)]
    _, rows, peak = asyncio.run(once(True))
    return {"seconds": round(statistics.median(walls), 3), "rows": rows,
            "peak_traced_mib": round(peak / 2 ** 20, 1)}


def zones(path: Path) -> dict[str, Any]:
    import csup_async
    from planner.filters import col

    async def run() -> dict[str, Any]:
        async with csup_async.open_dataset(str(path)) as ds:
            full = await ds.scan(["ts", "pad"])
            f = (col("ts") >= 1_020_000) & (col("ts") < 1_020_500)
            got = await ds.scan(["ts", "pad"], filter=f)
        return {"rows": got.num_rows, "bytes_read": got.stats.bytes_read,
                "unfiltered_bytes_read": full.stats.bytes_read,
                "ratio": round(got.stats.bytes_read / full.stats.bytes_read, 4)}

    return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    many, zone_dir = ensure_data()
    out: dict[str, Any] = {
        "files": FILES, "rows_per_file": ROWS, "filter": FILTER,
        "scan": measure(many, _scan, args.repeat),
        "iter_batches": measure(many, _batches, args.repeat),
        "count_rows": measure(many, _count, args.repeat),
        "zones_inside_files": zones(zone_dir),
    }
    res = HERE / "results"
    (res / "dataset_scan.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# Dataset scanner: {FILES} files x {ROWS:,} rows, filter `{FILTER}`", "",
             "| verb | seconds (median) | rows | peak traced MiB |", "|---|---|---|---|"]
    for k in ("scan", "iter_batches", "count_rows"):
        m = out[k]
        lines.append(f"| {k} | {m['seconds']} | {m['rows']:,} | {m['peak_traced_mib']} |")
    z = out["zones_inside_files"]
    lines += ["", f"Zones inside kept files: a filter matching 500 rows of one of three "
              f"sorted 60,000-row files read {z['bytes_read']:,} bytes of the unfiltered "
              f"{z['unfiltered_bytes_read']:,} ({z['ratio']:.1%}).", "",
              "Run: `python bench/bench_dataset_scan.py --repeat 3` (local files, "
              "2 shared cores)."]
    (res / "dataset_scan.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
