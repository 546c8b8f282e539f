"""The CLI at the terminal: JSON lines and CSV of two columns, first row, ``cat`` memory.

Every measurement is a cold process, as a user runs it, against polars in the
same run on the same table as Parquet (``scan_parquet(...).sink_ndjson()`` /
``sink_csv()``), and reports the ratio.  The table is bench/data.py's wide
table (1M rows x 24 columns), written once to ``bench/.data/cli/``.

    python bench/bench_cli.py [--rows N] [--repeat K]

Targets (issue: the CLI at the terminal): JSON lines and CSV of 1M x 2 values
<= 3x polars; the first row well under a second; ``cat`` peak RSS <= 300 MB;
``--limit 1`` reads only the segments the first row needs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".data" / "cli"
COLS = ["i0", "s0"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def ensure(rows: int) -> tuple[Path, Path]:
    csup, parquet = DATA / f"wide-{rows}.csup", DATA / f"wide-{rows}.parquet"
    if csup.exists() and parquet.exists():
        return csup, parquet
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    import pyarrow.parquet as pq
    from data import make_table

    import csup_async

    DATA.mkdir(parents=True, exist_ok=True)
    table = make_table(rows, seed=42)
    csup_async.write(str(csup), table, target="csup-async")
    pq.write_table(table, str(parquet))
    return csup, parquet


def run(cmd: list[str], stdout: int | None = subprocess.DEVNULL
        ) -> tuple[float, int, str, float]:
    """Wall seconds, peak RSS (bytes), stderr and CPU seconds of one cold process.

    CPU seconds (user + system, all threads) are the figure to compare on a busy
    machine: wall time there mostly measures the other processes."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=ENV)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode() if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err}")
    return wall, usage.ru_maxrss * 1024, err, usage.ru_utime + usage.ru_stime


def first_row(cmd: list[str]) -> float:
    """Seconds from process start to the first line on stdout."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    assert p.stdout is not None
    p.stdout.readline()
    t = time.perf_counter() - t0
    p.kill()
    p.wait()
    return t


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "csup_async.cli", *args]


def polars(parquet: Path, fmt: str) -> list[str]:
    sink = "sink_ndjson" if fmt == "json" else "sink_csv"
    code = (f"import polars as pl; pl.scan_parquet({str(parquet)!r}).select({COLS!r})"
            f".{sink}('/dev/stdout')")
    return [sys.executable, "-c", code]


def best(cmd: list[str], repeat: int) -> tuple[float, float]:
    """The fastest wall time and the least CPU time of ``repeat`` runs."""
    runs = [run(cmd) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[3] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    csup, parquet = ensure(args.rows)
    out: dict[str, object] = {"rows": args.rows, "columns": COLS}
    for fmt in ("json", "csv"):
        (ours, ours_cpu) = best(cli("scan", str(csup), "-c", ",".join(COLS), "--format", fmt),
                                args.repeat)
        (peer, peer_cpu) = best(polars(parquet, fmt), args.repeat)
        out[fmt] = {"csup_async_s": round(ours, 3), "polars_s": round(peer, 3),
                    "ratio": round(ours / peer, 2), "csup_async_cpu_s": round(ours_cpu, 3),
                    "polars_cpu_s": round(peer_cpu, 3), "cpu_ratio": round(ours_cpu / peer_cpu, 2)}
        print(f"{fmt:>4}: csup-async {ours:.2f} s, polars {peer:.2f} s -> {ours / peer:.2f}x "
              f"wall (target <= 3x); CPU {ours_cpu:.2f} s vs {peer_cpu:.2f} s -> "
              f"{ours_cpu / peer_cpu:.2f}x")
    fr = min(first_row(cli("scan", str(csup), "-c", ",".join(COLS), "--format", "json"))
             for _ in range(args.repeat))
    fr_cat = min(first_row(cli("cat", str(csup))) for _ in range(args.repeat))
    out["first_row_s"] = {"scan": round(fr, 3), "cat": round(fr_cat, 3)}
    out["load_average"] = os.getloadavg()[0]
    print(f"first row: scan {fr:.2f} s, cat {fr_cat:.2f} s (target: well under 1 s)")
    wall, rss, _, cpu = run(cli("cat", str(csup)))
    out["cat"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                  "peak_rss_mb": round(rss / 1e6)}
    print(f"cat of {args.rows:,} x 24: {wall:.1f} s ({cpu:.1f} s CPU), peak RSS "
          f"{rss / 1e6:.0f} MB (target <= 300 MB)")
    _, _, err, _ = run(cli("scan", str(csup), "-c", ",".join(COLS), "--limit", "1", "--stats",
                        "--format", "json"))
    m = re.search(r"(\d+) requests, ([\d,]+) bytes read", err)
    if m:
        out["limit_1"] = {"requests": int(m[1]), "bytes_read": int(m[2].replace(",", ""))}
        print(f"--limit 1: {m[1]} requests, {m[2]} bytes read (file {csup.stat().st_size:,})")
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "cli.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
