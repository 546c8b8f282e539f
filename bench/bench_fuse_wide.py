"""Fusing many sparse keys: the cost per value, not per row times the fused type.

Rows of ``--per`` keys each, drawn from ``--keys`` distinct keys, with Python
``datetime`` values (the case of issue #39 item 11: 2,000 rows of 300 keys took
6.7-13.8 s fused against 0.75-0.95 s with ``fuse=False``) and with ``ipaddress``
values (which only the per-value path types).  Prints seconds (process CPU time)
fused and with ``fuse=False``, in one run, and their ratio; writes
``bench/results/fuse_wide.md``.

Run ``python bench/bench_fuse_wide.py [--rows 2000] [--keys 300] [--per 10]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import ipaddress
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import csup_async

VALUES: dict[str, Callable[[int], Any]] = {
    "datetime": lambda i: dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i),
    "ipaddress": lambda i: ipaddress.ip_address(i),
}


def rows(n: int, keys: int, per: int, value: Callable[[int], Any]) -> list[dict[str, Any]]:
    rng = random.Random(1)
    names = [f"k{i}" for i in range(keys)]
    return [{k: value(rng.randint(0, 10**6)) for k in rng.sample(names, per)}
            for _ in range(n)]


def cpu(fn: Callable[[], Any]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--per", type=int, default=10)
    a = ap.parse_args()
    lines = [f"rows {a.rows}, {a.keys} keys, {a.per} per row (CPU seconds, one run)", "",
             "| values | fused | fuse=False | fused / fuse=False |", "|---|---|---|---|"]
    for name, value in VALUES.items():
        data = rows(a.rows, a.keys, a.per, value)
        fused = cpu(lambda d=data: csup_async.write(io.BytesIO(), d, target="csup-async"))
        exact = cpu(lambda d=data: csup_async.write(io.BytesIO(), d, fuse=False,
                target="csup-async"))
        lines.append(f"| {name} | {fused:.2f} | {exact:.2f} | {fused / exact:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(__file__).resolve().parent / "results" / "fuse_wide.md"
    out.write_text(text)


if __name__ == "__main__":
    main()
