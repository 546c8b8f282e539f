"""Segment size and checksums: what the writer's ``segment_thresh`` costs and buys, and what
checking every segment's crc32 costs a full scan.

Data: the benchmark's 1M x 24 wide table (``bench/data.py``, seed 42) with a sorted
int64 key ``ts`` added, written by our writer (statistics on) at each threshold into
``bench/.data/segments/``.  Per threshold:

* ``metadata B``: the reassembly section (what every open reads and parses);
* ``open+plan ms``: ``csup_async.open(path)`` with no store passed, then the plan of
  all 25 columns, median of ``--runs`` (a fresh reader each time, in one process);
* ``segs/col``: segments per column (mean over the 25; and of ``ts``);
* ``1% range``: for a ``ts`` range holding 1 % of the rows (in the middle), the stored
  bytes of the ``ts`` segments whose [min, max] intersect it, and of the segments of 6
  projected columns (i0, i3, f0, f3, s0, s1: no nulls, so a row is a value index) that
  hold those rows, next to the bytes those 6 columns hold in all.

Then the crc32 cost: a full local scan of all 24 columns of the default-threshold file,
``verify_checksums`` True vs False, alternated run by run, median of ``--runs``.

Run ``python bench/bench_segments.py [--runs 7] [--rows 1000000]``; prints markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import csup_async
from csup_async.format.colvalue import segment_stats
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import FileMeta, PrimitiveColumn, RecordColumn, Segment

OUT = Path(__file__).resolve().parent / ".data" / "segments"
THRESHOLDS = {"256 KiB": 256 << 10, "512 KiB": 512 << 10, "1 MiB": 1 << 20, "4 MiB": 4 << 20}
COLUMNS = [f"{k}{i}" for k in "ifs" for i in range(8)]
PROJECTED = ["i0", "i3", "f0", "f3", "s0", "s1"]


def table_with_key(rows: int) -> Any:
    import pyarrow as pa
    from data import make_table

    t = make_table(rows, seed=42)
    ts = 1_700_000_000_000_000 + np.arange(rows, dtype=np.int64) * 1000  # sorted, unique
    return t.append_column("ts", pa.array(ts, pa.int64()))


def ensure_files(rows: int) -> dict[str, Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    paths = {name: OUT / f"wide-ts-{rows}-{thresh}.csup" for name, thresh in THRESHOLDS.items()}
    if all(p.exists() for p in paths.values()):
        return paths
    print("writing the files (once) ...", file=sys.stderr)
    table = table_with_key(rows)
    for name, thresh in THRESHOLDS.items():
        if not paths[name].exists():
            t0 = time.perf_counter()
            csup_async.write(str(paths[name]), table, segment_thresh=thresh, target="csup-async")
            print(f"wrote {paths[name].name} in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
    return paths


def load_meta(path: Path) -> FileMeta:
    data = path.read_bytes()
    t = find_trailer(data[-4096:], len(data))
    return parse_reassembly(data[t.data_size: t.data_size + t.reassembly_size], t, len(data))


def leaf_segmaps(meta: FileMeta) -> dict[str, tuple[Segment, ...]]:
    col = meta.columns[0]
    assert isinstance(col, RecordColumn)
    out = {}
    for f in col.fields:
        assert isinstance(f.column, PrimitiveColumn)
        out[f.name] = f.column.segmap
    return out


def range_bytes(meta: FileMeta, rows: int) -> dict[str, int]:
    """Stored bytes a 1 %-selective ts range needs (see the module docstring)."""
    segmaps = leaf_segmaps(meta)
    base = 1_700_000_000_000_000
    first, n = rows // 2, max(1, rows // 100)
    lo, hi = base + first * 1000, base + (first + n - 1) * 1000
    key = 0
    for s in segmaps["ts"]:
        st = segment_stats(s)
        if st.min is None or st.max is None or (st.min <= hi and st.max >= lo):
            key += s.length
    proj = total = 0
    for name in PROJECTED:
        end = 0
        for s in segmaps[name]:
            start, end = end, end + (s.count or 0)
            total += s.length
            if start < first + n and end > first:
                proj += s.length
    return {"key": key, "proj": proj, "proj_total": total}


async def open_plan(path: Path) -> float:
    t0 = time.perf_counter()
    async with csup_async.open(str(path)) as r:
        await r.plan()
    return time.perf_counter() - t0


def six_column_plan(meta: FileMeta) -> tuple[int, int, int]:
    """(requests, bytes to read, bytes needed) of a full scan of the 6 projected columns
    on S3's profile: smaller segments interleave more, so coalescing has more to do."""
    import planner as P

    plan = P.plan_scan(meta, PROJECTED, "s3")
    return plan.request_count, plan.bytes_to_read, plan.bytes_needed


async def full_scan(path: Path, verify: bool, columns: list[str]) -> float:
    t0 = time.perf_counter()
    async with csup_async.open(str(path), verify_checksums=verify) as r:
        res = await r.scan(columns)
        assert res.num_rows
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--skip-crc", action="store_true")
    args = ap.parse_args()
    paths = ensure_files(args.rows)

    print(f"### Segment size ({args.rows:,} rows x 25 columns, sorted int64 ts)\n")
    print("| segment_thresh | file MB | metadata B | open+plan ms (median) | segs/col (ts) "
          "| ts segs read, B | 6 cols: B read / B in all | full 6-col scan on s3: requests, "
          "B to read / B needed | full local scan, 24 cols, s (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, path in paths.items():
        meta = load_meta(path)
        segmaps = leaf_segmaps(meta)
        times = [asyncio.run(open_plan(path)) for _ in range(args.runs)]
        rb = range_bytes(meta, args.rows)
        per_col = statistics.mean(len(s) for s in segmaps.values())
        nreq, to_read, needed = six_column_plan(meta)
        scans = [asyncio.run(full_scan(path, True, COLUMNS)) for _ in range(args.runs)]
        print(f"| {name} | {path.stat().st_size / 1e6:.1f} | "
              f"{meta.trailer.reassembly_size:,} | {statistics.median(times) * 1e3:.1f} | "
              f"{per_col:.1f} ({len(segmaps['ts'])}) | {rb['key']:,} | "
              f"{rb['proj']:,} / {rb['proj_total']:,} ({rb['proj'] / rb['proj_total']:.1%}) | "
              f"{nreq}, {to_read / needed:.3f} | {statistics.median(scans):.3f} |")

    if args.skip_crc:
        return
    path = paths["4 MiB"]
    cols = COLUMNS
    import zlib

    from csup_async.scan import checks

    fast = checks.crc32
    configs = {"off": (False, fast), f"on ({fast.__module__})": (True, fast),
               "on (zlib)": (True, zlib.crc32)}
    asyncio.run(full_scan(path, True, cols))  # page cache and decode pool warm
    wall: dict[str, list[float]] = {k: [] for k in configs}
    cpu: dict[str, list[float]] = {k: [] for k in configs}
    for _ in range(args.runs):  # alternated, so load drifts hit every config alike
        for name, (verify, fn) in configs.items():
            checks.crc32 = fn
            c0 = time.process_time()
            wall[name].append(asyncio.run(full_scan(path, verify, cols)))
            cpu[name].append(time.process_time() - c0)
    checks.crc32 = fast
    print(f"\n### crc32 cost: full local scan of 24 columns ({path.name}, "
          f"{path.stat().st_size / 1e6:.0f} MB), {args.runs} runs alternated\n")
    print("| verify_checksums | wall median s | wall best s | CPU median s | "
          "wall ratio (median) | CPU ratio (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    w0, c0 = statistics.median(wall["off"]), statistics.median(cpu["off"])
    for name in configs:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"| {name} | {w:.3f} | {min(wall[name]):.3f} | {c:.3f} | {w / w0:.3f} | "
              f"{c / c0:.3f} |")

if __name__ == "__main__":
    main()
