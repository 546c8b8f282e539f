"""Writer throughput next to pyarrow writing Parquet, in one run (ratios).

Run ``python bench/bench_write.py [--rows N] [--demo-rows N] [--before-rows N]``;
prints a markdown table.  Rows:

- *flat Python dicts*: ``csup_async.write(path, rows, target="csup-async")`` against
  ``pyarrow.Table.from_pylist(rows)`` + ``pyarrow.parquet.write_table`` of the
  same list (target: CSUP at least 0.5x pyarrow's rows/s), with the writer's
  defaults (segment statistics on) and without statistics.
- *demo events*: the CLI demo's 100,000 events (nested user, nulls, lists of
  strings, several super types), the same two ways.
- *flat / nested Arrow*: a table of flat columns and one of nested columns
  (``struct<x: int64, l: list<int64>>``, ``list<string>``, ``struct<a, b>``),
  MB/s per byte of Arrow input (target: nested within 2x flat per byte).
- *fusing*: ``csup_async.write(path, rows, target="csup-async")`` (fusing, the default) against
  ``fuse=False`` (exact per-row types, the writer before fusing) on schema-free
  rows (bench/sparse_rows.py: 15 fields, ~5% nulls, ~1% missing, as
  ``json.loads`` gives them), the flat dicts and the demo events: seconds, super
  types and file size, next to the same rows through Arrow (``Table.from_pylist``,
  as a Parquet conversion writes them).  Targets: fused <= 1.2x the exact
  writer's time, one super type for the sparse rows, file <= 1.05x the Arrow
  route.  ``--only fuse`` runs just this table.

"before" is the per-value path the vectorised ones replace (``Writer.write`` of
each value, as every Python row and nested Arrow table went before), measured
on ``--before-rows`` rows and scaled.  Single process; pyarrow's own threads
are left on (its default, as a user runs it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.parquet as pq

import csup_async
from bench.sparse_rows import sparse_rows
from csup_async.cli.demo import sample_rows
from csup_async.writers.arrow_input import arrow_values
from csup_async.writers.writer import Writer


def flat_rows(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 1 << 40, n).tolist()
    amounts = np.round(rng.random(n) * 1000, 2).tolist()
    kinds = ["view", "click", "buy", "refund"]
    return [{"id": ids[i], "user": f"user-{ids[i] % 5000:05d}", "kind": kinds[i % 4],
             "amount": amounts[i], "ok": i % 3 != 0, "seq": i} for i in range(n)]


def flat_table(n: int, seed: int = 2) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "i": rng.integers(-(1 << 40), 1 << 40, n), "j": rng.integers(0, 1000, n),
        "f": rng.random(n), "s": pa.array([f"name-{k}" for k in rng.integers(0, 10**6, n)]),
        "b": rng.random(n) < 0.5,
    })


def nested_table(n: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 5, n)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    inner = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()),
                                     pa.array(rng.integers(-(1 << 30), 1 << 30, int(lens.sum()))))
    x = pa.array(rng.integers(0, 1 << 40, n))
    s_lens = rng.integers(0, 4, n)
    s_off = np.concatenate(([0], np.cumsum(s_lens)))
    words = pa.array([f"w{k}" for k in rng.integers(0, 1000, int(s_lens.sum()))])
    return pa.table({
        "xl": pa.StructArray.from_arrays([x, inner], names=["x", "l"]),
        "tags": pa.ListArray.from_arrays(pa.array(s_off, pa.int32()), words),
        "ab": pa.StructArray.from_arrays([pa.array(rng.random(n)),
                                          pa.array(rng.integers(0, 100, n))], names=["a", "b"]),
    })


def timed(fn: Callable[[], Any], runs: int = 1) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def per_value(rows: Any, path: str) -> None:
    with open(path, "wb") as f:
        w = Writer(f)
        for r in rows:
            w.write(r)
        w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="flat dicts and Arrow rows")
    ap.add_argument("--demo-rows", type=int, default=100_000, help="demo events")
    ap.add_argument("--before-rows", type=int, default=20_000,
                    help="rows the per-value path writes (then scaled)")
    ap.add_argument("--runs", type=int, default=1, help="best of this many runs")
    ap.add_argument("--sparse-rows", type=int, default=100_000,
                    help="schema-free rows of the fusing table")
    ap.add_argument("--only", choices=["fuse"], help="run only this table")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-write-")
    csup_path, pq_path = os.path.join(tmp, "t.csup"), os.path.join(tmp, "t.parquet")
    out = ["| input | rows | CSUP s | pyarrow + Parquet s | CSUP / pyarrow rows/s | "
           "before (per value) s | speed-up |", "|---|---:|---:|---:|---:|---:|---:|"]

    def rows_case(name: str, rows: list[Any], **opts: Any) -> None:
        n = len(rows)
        ours = timed(lambda: csup_async.write(csup_path, rows, **opts,
                target="csup-async"), args.runs)
        peer = timed(lambda: pq.write_table(pa.Table.from_pylist(rows), pq_path), args.runs)
        k = min(n, args.before_rows)
        before = timed(lambda: per_value(rows[:k], csup_path)) * n / k
        out.append(f"| {name} | {n:,} | {ours:.2f} | {peer:.2f} | {peer / ours:.2f}x | "
                   f"{before:.1f} | {before / ours:.0f}x |")

    if args.only == "fuse":
        print(fuse_table(args, csup_path))
        return
    flat = flat_rows(args.rows)
    rows_case("flat Python dicts (6 fields)", flat)
    rows_case("flat Python dicts, statistics=False", flat, statistics=False)
    rows_case("demo events (nested, nulls, lists)", sample_rows(args.demo_rows))

    out += ["", "| Arrow input | rows | Arrow MB | CSUP s | MB/s | Parquet s | "
            "before (per value) s |", "|---|---:|---:|---:|---:|---:|---:|"]
    per_byte = {}
    for name, table in (("flat (int64, int64, float64, string, bool)", flat_table(args.rows)),
                        ("nested (struct<x, list<int64>>, list<string>, struct<a, b>)",
                         nested_table(args.rows))):
        mb = table.nbytes / 1e6
        ours = timed(lambda table=table: csup_async.write(csup_path, table,
                target="csup-async"), args.runs)
        peer = timed(lambda table=table: pq.write_table(table, pq_path), args.runs)
        k = min(table.num_rows, args.before_rows)
        before = timed(lambda table=table, k=k: per_value(arrow_values(table.slice(0, k)),
                                                          csup_path)) * table.num_rows / k
        per_byte[name.split()[0]] = ours / mb
        out.append(f"| {name} | {table.num_rows:,} | {mb:.0f} | {ours:.2f} | {mb / ours:.0f} | "
                   f"{peer:.2f} | {before:.0f} |")
    out += ["", f"nested / flat seconds per Arrow byte: "
                f"{per_byte['nested'] / per_byte['flat']:.2f}x (target <= 2x)"]
    out += ["", fuse_table(args, csup_path)]
    print("\n".join(out))


def fuse_table(args: argparse.Namespace, path: str) -> str:
    """Fused against exact per-row types (see the module docstring)."""
    out = ["| rows (fusing) | n | fused s | exact s | fused / exact | super types "
           "fused / exact | KB fused / exact / Arrow route |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    arrow_path = path + ".arrow.csup"
    for name, rows in (("sparse NDJSON (15 fields, 5% null, 1% missing)",
                        sparse_rows(args.sparse_rows)),
                       ("flat Python dicts (6 fields)", flat_rows(args.rows)),
                       ("demo events (nested, nulls, lists)", sample_rows(args.demo_rows))):
        got = {}
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.runs):  # interleaved: both see the same machine load
            for fuse in (True, False):
                secs = timed(lambda fuse=fuse, rows=rows: csup_async.write(path, rows,
                                                                           fuse=fuse,
                                                                                   target="csup-async"))
                best[fuse] = min(best[fuse], secs)
        for fuse in (True, False):
            csup_async.write(path, rows, fuse=fuse, target="csup-async")
            got[fuse] = (best[fuse], _super_types(path), os.path.getsize(path) / 1e3)
        csup_async.write(arrow_path, pa.Table.from_pylist(rows), target="csup-async")
        (fs, ft, fk), (es, et, ek) = got[True], got[False]
        out.append(f"| {name} | {len(rows):,} | {fs:.2f} | {es:.2f} | {fs / es:.2f}x | "
                   f"{ft} / {et} | {fk:.0f} / {ek:.0f} / "
                   f"{os.path.getsize(arrow_path) / 1e3:.0f} |")
    return "\n".join(out)


def _super_types(path: str) -> int:
    import asyncio

    async def count() -> int:
        async with csup_async.open(path) as r:
            return len(r.meta.super_types)
    return asyncio.run(count())


if __name__ == "__main__":
    main()
