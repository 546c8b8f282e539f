"""Writing real-shaped data, whole process against whole process, ratios in one run.

``python bench/bench_write_realshape.py [--rows N] [--reps R] [--only NAME,...]``

The log records of ``bench/logshape.py`` (200,000 by default: nested optional
objects, int|string and int|float fields, string timestamps, arrays) are
converted by separate processes, run in turns (A B C A B C ...) so the noise of
a shared machine falls on each alike; the median wall time and the peak RSS
(``wait4``) of each are reported, with the ratios issue #38 sets targets for:

- ``ndjson->csup``: ``csup-async convert logs.ndjson out.csup`` (the default target,
  ``super``: CSUP v23; ``--target csup-async`` this library's own layout, beside it) against
  ``polars``: ``pl.read_ndjson(...).write_parquet(...)`` (target: time and peak
  memory <= 1.0x) and ``super`` main's ``super -f csup -o out.csup logs.ndjson``
  when its binary is built (``~/.cache/csup-async/tools/super-main/super``);
- ``csup->csup``: ``csup-async convert --segment-thresh 1048576 logs.csup out.csup``
  (a writer option given: every value read and written again, the only route before)
  against ``csup-async convert --copy logs.csup out.csup`` (the file as it is, once
  its metadata reads; also what ``convert`` does with no writer option): target <= 0.2x.

Results go to ``bench/results/write_realshape.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import logshape  # noqa: E402

SUPER_MAIN = Path.home() / ".cache/csup-async/tools/super-main/super"
PY = sys.executable


def _run(cmd: list[str]) -> tuple[float, int, float]:
    """(wall seconds, peak RSS bytes, CPU seconds: user + system) of one process."""
    t0 = time.perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, dict(os.environ, PYTHONPATH=str(ROOT)),
                         file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                       (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def _cases(paths: dict[str, Path], out: Path) -> dict[str, list[str]]:
    nd, cs = str(paths["ndjson"]), str(paths["csup"])
    cli = [PY, "-m", "csup_async.cli"]
    cases = {
        "ndjson->csup csup-async": [*cli, "convert", nd, str(out / "a.csup")],
        "ndjson->csup csup-async --target csup-async": [
            *cli, "convert", "--target", "csup-async", nd, str(out / "a1.csup")],
        "ndjson->parquet polars": [PY, "-c", "import polars as pl, sys; "
                                   "pl.read_ndjson(sys.argv[1]).write_parquet(sys.argv[2])",
                                   nd, str(out / "b.parquet")],
        # a writer option given: every value read and written again (the route before
        # --copy, and still the one when the layout is to change)
        "csup->csup csup-async": [*cli, "convert", "--segment-thresh", str(1 << 20), cs,
                                  str(out / "c.csup")],
        "csup->csup csup-async --copy": [*cli, "convert", "--copy", cs, str(out / "d.csup")],
    }
    if SUPER_MAIN.exists():
        cases["ndjson->csup super main"] = [str(SUPER_MAIN), "-f", "csup", "-o",
                                            str(out / "e.csup"), nd]
    return cases


RATIOS = [
    ("NDJSON->CSUP time / polars NDJSON->Parquet", "ndjson->csup csup-async",
     "ndjson->parquet polars", "wall", 1.0),
    ("NDJSON->CSUP peak RSS / polars", "ndjson->csup csup-async",
     "ndjson->parquet polars", "rss", 1.0),
    ("NDJSON->CSUP CPU / polars (less sensitive to a loaded machine)",
     "ndjson->csup csup-async", "ndjson->parquet polars", "cpu", None),
    ("NDJSON->CSUP --target csup-async time / polars",
     "ndjson->csup csup-async --target csup-async", "ndjson->parquet polars", "wall", 1.0),
    ("NDJSON->CSUP --target csup-async CPU / polars",
     "ndjson->csup csup-async --target csup-async", "ndjson->parquet polars", "cpu", None),
    ("NDJSON->CSUP time / super main NDJSON->CSUP", "ndjson->csup csup-async",
     "ndjson->csup super main", "wall", None),
    ("CSUP->CSUP --copy / re-encoding convert", "csup->csup csup-async --copy",
     "csup->csup csup-async", "wall", 0.2),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated case names to run")
    ap.add_argument("--skip-reencode", action="store_true",
                    help="leave out the (slow) re-encoding CSUP->CSUP convert")
    args = ap.parse_args()
    paths = logshape.ensure() if args.rows == logshape.ROWS else logshape.ensure(
        ROOT / "bench/.data" / f"logshape-v1-{args.rows}", n=args.rows)
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(paths, Path(tmp))
        if args.only:
            keep = set(args.only.split(","))
            cases = {k: v for k, v in cases.items() if k in keep}
        if args.skip_reencode:
            cases.pop("csup->csup csup-async", None)
        for _ in range(args.reps):
            for name, cmd in cases.items():
                wall, rss, cpu = _run(cmd)
                r = results.setdefault(name, {"wall": [], "rss": [], "cpu": []})
                r["wall"].append(wall)
                r["rss"].append(rss)
                r["cpu"].append(cpu)
    med = {k: {"wall": statistics.median(v["wall"]), "rss": max(v["rss"]),
               "cpu": statistics.median(v["cpu"])} for k, v in results.items()}
    lines = [f"# Writing real-shaped data ({args.rows:,} log records, "
             f"{paths['ndjson'].stat().st_size / 1e6:.1f} MB NDJSON; median of {args.reps}, "
             "whole processes in turns)", "",
             f"(load average {os.getloadavg()[0]:.1f} at the end)", "",
             "| case | wall s | CPU s | peak RSS MB |", "|---|---|---|---|"]
    for k, v in med.items():
        lines.append(f"| {k} | {v['wall']:.2f} | {v['cpu']:.2f} | {v['rss'] / 1e6:.0f} |")
    lines += ["", "| ratio | value | target |", "|---|---|---|"]
    ratios = {}
    for label, a, b, what, target in RATIOS:
        if a in med and b in med:
            ratios[label] = med[a][what] / med[b][what]
            lines.append(f"| {label} | {ratios[label]:.2f} | "
                         f"{'<= ' + str(target) if target else '-'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = ROOT / "bench/results"
    (out / "write_realshape.md").write_text(text)
    (out / "write_realshape.json").write_text(json.dumps(
        {"rows": args.rows, "reps": args.reps, "cases": med, "ratios": ratios,
         "runs": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
