"""Local file, warm process: csup-async against ``pyarrow.parquet.read_table``, alternating.

``python bench/bench_local.py [--runs 10] [--alone]``

The wide table (1M x 24) from a local file in one process, all 24 columns and
2 columns: after one untimed scan of each reader, ``runs`` rounds of
csup-async's ``scan`` then pyarrow's ``read_table`` of the same columns from
the Parquet file.  Alternating with pyarrow is what made csup-async's full
scan bimodal (0.33-0.39 s most times, 0.75-1.3 s with twice the CPU others),
so every run's wall and CPU seconds are kept, and the report gives the median
and the p90/median spread.  ``--alone`` runs csup-async without pyarrow in
between, for comparison.  Results: ``bench/results/local.json`` and ``local.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402

RESULTS = HERE / "results"
WIDE_ALL = [f"{k}{i}" for k in "ifs" for i in range(8)]
CASES = {"all 24 columns": WIDE_ALL, "2 columns": ["i3", "s1"]}


def _spread(xs: list[float]) -> dict[str, Any]:
    med = statistics.median(xs)
    p90 = sorted(xs)[min(len(xs) - 1, max(0, -(-9 * len(xs) // 10) - 1))]
    return {"median_s": med, "p90_s": p90, "p90_over_median": p90 / med, "runs": xs}


def _timed(fn: Any) -> tuple[float, float, int]:
    """Wall and CPU seconds, and minor page faults (fresh pages the kernel zeroed)."""
    f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c, t = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - t, time.process_time() - c,
            resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--alone", action="store_true", help="no pyarrow between csup-async runs")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    stem = data.ROOT / "root" / data.BUCKET / "wide" / "wide"
    if not (stem.with_suffix(".csup").exists() and stem.with_suffix(".parquet").exists()):
        data.ensure(log=lambda m: print("  " + m, flush=True))
    import pyarrow.parquet as pq

    import csup_async

    csup, parquet = str(stem.with_suffix(".csup")), str(stem.with_suffix(".parquet"))

    async def scan(cols: list[str]) -> None:
        async with csup_async.open(csup) as r:
            res = await r.scan(cols)
        assert len(res) == data.WIDE_ROWS

    res: dict[str, Any] = {"command": " ".join(["python", *sys.argv]), "cases": []}
    for name, cols in CASES.items():
        ours, theirs = [], []
        asyncio.run(scan(cols))
        pq.read_table(parquet, columns=cols)
        for _ in range(args.runs):
            ours.append(_timed(lambda c=cols: asyncio.run(scan(c))))
            if not args.alone:
                theirs.append(_timed(lambda c=cols: pq.read_table(parquet, columns=c)))
        case: dict[str, Any] = {"name": name, "runs": args.runs, "alternating": not args.alone,
                                "csup-async": {**_spread([w for w, _, _ in ours]),
                                               "cpu_runs": [c for _, c, _ in ours],
                                               "faults_runs": [f for _, _, f in ours]}}
        if theirs:
            case["pyarrow"] = {**_spread([w for w, _, _ in theirs]),
                               "cpu_runs": [c for _, c, _ in theirs],
                               "faults_runs": [f for _, _, f in theirs]}
        res["cases"].append(case)
        print(f"{name}: csup-async {case['csup-async']['median_s']:.3f} s "
              f"(p90/median {case['csup-async']['p90_over_median']:.2f})"
              + (f", pyarrow {case['pyarrow']['median_s']:.3f} s" if theirs else ""),
              flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "local_alone.json" if args.alone else "local.json"
    (out / name).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
