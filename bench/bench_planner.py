"""Planner timings: ``python bench/bench_planner.py`` prints a markdown table.

Targets (issue 3): a file of 10,000 segments plans in under 5 ms; 10,000
files' loaded metadata plan (``plan_files``) in under 1 s.  Each case runs
several times and reports the median and the best run; metadata is built
before timing (planning is what is measured, not building the trees).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import planner as P
from csup_async.format.meta import (
    FieldColumn,
    FileMeta,
    PrimitiveColumn,
    RecordColumn,
    Segment,
    Trailer,
)
from csup_async.model.types import INT64, Field, RecordType

MiB = 1 << 20


def flushed_file(n_cols: int, rounds: int, size: int, *, mouse_every: int = 0,
                 shuffle: bool = False, dup_every: int = 0, seed: int = 1) -> FileMeta:
    """``n_cols`` int64 columns written in ``rounds`` flushes of one ``size`` segment each.

    ``mouse_every``: add a "mouse" column with a 300-byte segment before every
    ``mouse_every``-th elephant segment.  ``shuffle``: lay the segments out in a
    random order.  ``dup_every``: repeat every n-th segment in another column's segmap.
    """
    slots = [(c, r) for r in range(rounds) for c in range(n_cols)]
    mice: list[Segment] = []
    if shuffle:
        random.Random(seed).shuffle(slots)
    off = 0
    placed: dict[tuple[int, int], Segment] = {}
    for k, slot in enumerate(slots):
        if mouse_every and k % mouse_every == 0:
            mice.append(Segment(off, 300, 300))
            off += 300
        placed[slot] = Segment(off, size, size)
        off += size
    per_col = [[placed[c, r] for r in range(rounds)] for c in range(n_cols)]
    if dup_every:
        for i in range(0, n_cols * rounds, dup_every):
            per_col[(i + 1) % n_cols].append(per_col[i % n_cols][0])
    fields = [FieldColumn(f"c{i}", PrimitiveColumn(tuple(s)), ()) for i, s in enumerate(per_col)]
    types = [Field(f"c{i}", INT64) for i in range(n_cols)]
    if mice:
        fields.append(FieldColumn("mouse", PrimitiveColumn(tuple(mice)), ()))
        types.append(Field("mouse", INT64))
    sc = Segment(off, 64, 1000)
    trailer = Trailer("super columnar", "csup", 1, (off + 64, 4096), 1 << 26, 1 << 22, 80)
    return FileMeta(trailer, (RecordType(tuple(types)),), (sc,), (RecordColumn(tuple(fields)),),
                    off + 64 + 4096 + 80)


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs)


Case = tuple[str, Callable[[], object], str, int]


def single_file_cases(repeat: int) -> None:
    small = flushed_file(100, 100, 4096)  # 10,000 segments of 4 KiB
    big = flushed_file(100, 100, 4 * MiB)  # 10,000 segments of 4 MiB (40 GiB)
    mice = flushed_file(10, 1000, 4 * MiB, mouse_every=10)  # 10,000 elephants, 1,000 mice
    shuffled = flushed_file(100, 100, 4096, shuffle=True)
    shared = flushed_file(100, 100, 4096, dup_every=7)
    messy = flushed_file(100, 100, 4096, shuffle=True, dup_every=7)
    ten = [f"c{i}" for i in range(0, 100, 10)]
    small_plan = P.plan_scan(small)
    half = small.object_size // 2
    run([
        ("10k segs x 4 KiB, all columns", lambda: P.plan_scan(small), "< 5 ms", repeat),
        ("10k segs x 4 KiB, 1 column", lambda: P.plan_scan(small, ["c5"]), "", repeat),
        ("10k segs x 4 KiB, 10 columns", lambda: P.plan_scan(small, ten), "", repeat),
        ("10k segs x 4 KiB, 10 cols, amplification <= 0.5",
         lambda: P.plan_scan(small, ten, max_amplification=0.5), "", repeat),
        ("10k segs x 4 MiB (40 GiB), all columns", lambda: P.plan_scan(big), "< 5 ms", repeat),
        ("10k elephants + 1k mice, mouse only", lambda: P.plan_scan(mice, ["mouse"]), "",
         repeat),
        ("10k segs in random order, all", lambda: P.plan_scan(shuffled), "< 5 ms", repeat),
        ("10k segs + 1,429 repeated in other segmaps, all", lambda: P.plan_scan(shared),
         "< 5 ms", repeat),
        ("both: random order and repeats, all", lambda: P.plan_scan(messy), "< 5 ms", repeat),
        ("10k segs, half served from available bytes",
         lambda: P.plan_scan(small, None, available=(half, small.object_size - half)), "",
         repeat),
        ("resolve_paths only, 100 columns", lambda: P.resolve_paths(small), "", repeat),
        ("explain() of a 10k-segment plan", small_plan.explain, "", repeat),
    ])


def many_file_cases(n_files: int) -> None:
    files = [(f"part-{i:05}.csup", flushed_file(8, 2, 20_000)) for i in range(n_files)]
    run([
        (f"plan_files, {n_files:,} files, 2 of 8 columns",
         lambda: P.plan_files(files, ["c1", "c3"]), "< 1 s", 5),
        (f"plan_files, {n_files:,} files, all columns", lambda: P.plan_files(files),
         "< 1 s", 5),
    ])


def run(cases: list[Case]) -> None:
    for name, fn, target, repeat in cases:
        result = fn()
        gc.collect()
        med, best = timed(fn, repeat)
        summary = ""
        if isinstance(result, P.ScanPlan):
            summary = (f"{len(result.segments):,} segs, {result.request_count:,} req, "
                       f"{result.amplification:.2f}x")
        elif isinstance(result, P.MultiPlan):
            summary = f"{len(result.tasks):,} tasks, {result.request_count:,} req"
        print(f"| {name} | {med * 1e3:.2f} ms | {best * 1e3:.2f} ms | {target} | {summary} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=21, help="runs per single-file case")
    ap.add_argument("--files", type=int, default=10_000, help="files for plan_files")
    args = ap.parse_args()
    print(f"Python {sys.version.split()[0]}, planner benchmark "
          f"(median and best of N runs, GC enabled)\n")
    print("| case | median | best | target | plan |")
    print("|---|---:|---:|---|---|")
    single_file_cases(args.repeat)
    many_file_cases(args.files)


if __name__ == "__main__":
    main()
