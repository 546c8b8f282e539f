"""A quick check of issue 16's row-selection targets: requests and bytes, no peers.

The benchmark proper (against polars, DuckDB and pyarrow on the same simulated store)
is ``bench_filter.py``; this one only shows what row selection and pruning read, on the
benchmark's wide table (1M x 24, ``i0`` the sorted row id as the clustered key), from a
local file and through the simulated S3 store (nginx behind the delay proxy), opened
the way users do (``open(url)``, no store or profile passed)::

    python3 bench/rows_check.py            # the writer's default segments (4 MiB)
    python3 bench/rows_check.py 262144     # 256 KiB segments

Wall times are printed but the machine is shared: compare requests and bytes.  The
last lines compare row selection as it reads by default (only the segments holding the
rows, each checked against its count) with ``verify_counts=True`` (every segment up to
the last selected row decoded and checked as well).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from data import PROJECTIONS, make_table
from netsim import SimStore

import csup_async
from planner.filters import col
from planner.selection import RowRanges
from planner.waves import plan_rows

SIX = PROJECTIONS["6 cols"]
ALL = PROJECTIONS["all 24"]


async def run(url: str) -> list[str]:
    out: list[str] = []
    async with csup_async.open(url) as r:
        def rec(label: str, res: Any, t0: float, extra: str = "") -> None:
            out.append(f"{label:<32} rows {res.num_rows:>9,} requests {res.stats.requests:>3} "
                       f"bytes {res.stats.bytes_read / 1e6:8.2f} MB "
                       f"wall {(time.perf_counter() - t0) * 1e3:7.1f} ms {extra}")

        t0 = time.perf_counter()
        full6 = await r.scan(SIX)
        rec("unfiltered, 6 cols", full6, t0)
        lo, hi = 500_000, 510_000
        hold = plan_rows(r.meta, r._plan([*SIX, "i0"]),
                         RowRanges.of([(lo, hi)]), verify_counts=False)[0].bytes_needed
        t0 = time.perf_counter()
        res = await r.scan(SIX, filter=(col("i0") >= lo) & (col("i0") < hi))
        rec("1% filter on i0, 6 cols", res, t0,
            f"{res.stats.bytes_read / hold:.2f}x the segments holding the rows; "
            f"two waves: {res.plan.two_waves}")
        t0 = time.perf_counter()
        res = await r.scan(None, filter=col("i0") == 123_456)
        rec("point lookup, all cols", res, t0, f"two waves: {res.plan.two_waves}")
        t0 = time.perf_counter()
        res = await r.scan(SIX, filter=col("i0") >= 100_000)
        rec("90% filter, 6 cols", res, t0,
            f"{res.stats.bytes_read / full6.stats.bytes_read:.3f}x the unfiltered bytes")
        t0 = time.perf_counter()
        rec("limit=10, all cols", await r.scan(limit=10), t0)
        idx = np.random.default_rng(5).integers(0, 1_000_000, 100)
        hold = plan_rows(r.meta, r._plan(ALL),
                         RowRanges.of((int(i), int(i) + 1) for i in idx),
                         verify_counts=False)[0].bytes_needed
        t0 = time.perf_counter()
        res = await r.take(idx)
        rec("take 100 random rows, all cols", res, t0,
            f"{res.stats.bytes_read / hold:.2f}x the segments holding them")
    # the default (only the segments holding the rows) against verify_counts=True (every
    # segment up to the last selected row decoded and checked too)
    for verify in (True, False):
        async with csup_async.open(url, verify_counts=verify) as r:
            how = "verified" if verify else "default"
            t0 = time.perf_counter()
            rec(f"take [999999], 6 cols, {how}", await r.take([999_999], SIX), t0)
            t0 = time.perf_counter()
            rec(f"rows 500k-510k, 6 cols, {how}",
                await r.scan(SIX, rows=slice(500_000, 510_000)), t0)
    return out


async def main(thresh: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        name = "wide.csup"
        opts = {"segment_thresh": thresh} if thresh else {}
        csup_async.write(str(root / name), make_table(1_000_000, 1), **opts, target="csup-async")
        print(f"{name}: {(root / name).stat().st_size / 1e6:.1f} MB, segments "
              f"{thresh or 'default'}")
        print("-- local file")
        print("\n".join(await run(str(root / name))))
        sim = SimStore(root, root / "sim").start()
        try:
            print("-- simulated s3 (50 ms first byte, 100 MB/s per connection)")
            print("\n".join(await run(f"{sim.endpoint('s3')}/{name}")))
        finally:
            sim.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
