"""Reading SuperDB's own CSUP files (header layout, ``super`` v0.3.0) against the same
rows in this library's trailer layout, and against ``super`` reading its file.

Makes ``--rows`` rows of 6 columns (int64 ids, a float, a low-cardinality string, a
free string, a bool, an int that is null one row in ten: a union), writes them with
``super -f csup`` (the binary under ``$CSUP_ASYNC_REAL_TOOLS``; this script never
builds it) and with ``csup_async.write``, then times, median of ``--runs`` in one
process (local files, warm page cache):

* ``scan(all)``, ``scan(id)``, ``read_rows()`` of both files;
* ``super -f bsup -o /dev/null FILE`` and ``super -c "count()" FILE`` (whole process).

    CSUP_ASYNC_REAL_TOOLS=DIR python bench/bench_superdb.py --rows 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import csup_async  # noqa: E402


def rows(n: int) -> list[dict]:
    rnd = random.Random(7)
    cities = [f"city{i}" for i in range(50)]
    return [{"id": i, "score": rnd.random() * 100, "city": rnd.choice(cities),
             "note": f"n{rnd.randrange(10**9)}", "ok": rnd.random() < 0.5,
             "maybe": None if i % 10 == 0 else i * 3} for i in range(n)]


def timed(runs: int, fn) -> float:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def read(path: str, what: str) -> None:
    async def go() -> None:
        async with csup_async.open(path) as r:
            if what == "scan(all)":
                await r.scan()
            elif what == "scan(id)":
                await r.scan(["id"])
            else:
                await r.read_rows()

    asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tools = os.environ.get("CSUP_ASYNC_REAL_TOOLS")
    binary = Path(tools or "/nonexistent") / "super-v0.3.0" / "super"
    if not binary.exists():
        sys.exit("super v0.3.0 not found: set CSUP_ASYNC_REAL_TOOLS")
    data = rows(args.rows)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "rows.json"
        src.write_text("\n".join(json.dumps(r) for r in data) + "\n")
        sdb = Path(d) / "super.csup"
        subprocess.run([str(binary), "-f", "csup", "-o", str(sdb), str(src)], check=True)
        own = Path(d) / "own.csup"
        csup_async.write(str(own), data, target="csup-async")
        del data
        print(f"{args.rows:,} rows: super's file {sdb.stat().st_size:,} B, "
              f"trailer layout {own.stat().st_size:,} B")
        print("| read | SuperDB file (header layout) | trailer layout |")
        print("|---|---|---|")
        for what in ("scan(all)", "scan(id)", "read_rows"):
            a = timed(args.runs, lambda w=what: read(str(sdb), w))
            b = timed(args.runs, lambda w=what: read(str(own), w))
            print(f"| {what} | {a:.3f} s | {b:.3f} s |")
        for cmd in (["-f", "bsup", "-o", "/dev/null", str(sdb)],
                    ["-c", "count()", str(sdb)]):
            t = timed(args.runs, lambda c=cmd: subprocess.run([str(binary), *c], check=True,
                                                              capture_output=True))
            print(f"| super {' '.join(cmd[:-1])} (process) | {t:.3f} s | |")


if __name__ == "__main__":
    main()
