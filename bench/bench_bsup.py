"""BSUP through ``open()``: ``python bench/bench_bsup.py`` prints a markdown table.

A local BSUP stream of ``--rows`` records (a time, an int64, a low-cardinality
string; LZ4 frames as the encoder writes them).  The open reads it whole and walks
its frames; ``scan()`` decodes the top-level columns column-wise (``bsup.columns``),
``scan(limit=n)`` value by value (stopping at the limit), ``read_values`` is the
codec's exact decoding of every value.  Median of ``--repeat`` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import csup_async
from csup_async.format.bsup import encode_stream
from csup_async.model.types import INT64, STRING, TIME, Field, RecordType

ROW = RecordType((Field("ts", TIME), Field("n", INT64), Field("host", STRING)))


def write(path: Path, rows: int) -> None:
    path.write_bytes(encode_stream((ROW, {"ts": 1_700_000_000_000_000_000 + i * 1000,
                                          "n": i, "host": f"host-{i % 50}"})
                                   for i in range(rows)))


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    await fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = Path(tempfile.mkdtemp()) / "bench.zng"
    write(path, args.rows)
    n = args.rows

    async def opened() -> None:
        async with csup_async.open(str(path)):
            pass

    r = await csup_async.open(str(path))
    cases = {
        "open (read whole, frames walked)": opened,
        "scan() column-wise": lambda: r.scan(),
        "scan(limit=rows) value by value": lambda: r.scan(limit=n),
        "scan(limit=100)": lambda: r.scan(limit=100),
        "scan(filter='n >= rows-10')": lambda: r.scan(filter=f"n >= {n - 10}"),
        "read_values()": r.read_values,
    }
    print(f"{n:,} rows, {path.stat().st_size:,} bytes\n")
    print("| case | median s |\n|---|---|")
    for name, fn in cases.items():
        print(f"| {name} | {await timed(fn, args.repeat):.3f} |")
    await r.close()


if __name__ == "__main__":
    asyncio.run(main())
