"""Per-call cost of asking a store what it can do (#36): ``python bench/bench_abilities.py``.

Before: attribute probes (``getattr(store, "warm_connections", None)`` then
``callable``), and ``isinstance`` against a runtime Protocol (``profile_of``
used ``isinstance(store, Profiled)``).  After: :func:`csup_async.stores.
capabilities.abilities`, every Protocol answered once per store class.  The
"per open" rows are what one ``open()`` + plan asks: the profile, a
revalidating tail read, the cache key, measurements, warm connections.
All in one process, best of 7 repeats of 100,000 calls.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from csup_async.stores import capabilities as C
from csup_async.stores.local import LocalStore
from csup_async.stores.s3 import S3Store

N = 100_000

BEFORE_OPEN = """
p = s.default_profile if isinstance(s, C.Profiled) else "local"
f = getattr(s, "read_tail_unless", None); callable(f)
f = getattr(s, "cache_key", None); callable(f)
f = getattr(s, "measurements_of", None); callable(f)
f = getattr(s, "warm_connections", None); callable(f)
"""
AFTER_OPEN = """
p = C.profile_of(s)
C.abilities(s).tail_revalidating
C.abilities(s).cache_keyed
C.abilities(s).measuring
C.abilities(s).pooled
"""


def ns(stmt: str, g: dict[str, object]) -> float:
    return min(timeit.repeat(stmt, globals=g, number=N, repeat=7)) / N * 1e9


def main() -> None:
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"Python {sys.version.split()[0]}, load {load}; ns per call, best of 7 x {N:,}\n")
    print("| store | getattr probe | isinstance(runtime Protocol) | abilities(s).x "
          "| per open, before | per open, after |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, s in (("local", LocalStore()), ("s3", S3Store(region="us-east-1"))):
        g = {"s": s, "C": C}
        probe = ns("f = getattr(s, 'warm_connections', None); callable(f)", g)
        proto = ns("isinstance(s, C.Pooled)", g)
        abil = ns("C.abilities(s).pooled", g)
        before, after = ns(BEFORE_OPEN, g), ns(AFTER_OPEN, g)
        print(f"| {name} | {probe:,.0f} | {proto:,.0f} | {abil:,.0f} | {before:,.0f} "
              f"| {after:,.0f} |")


if __name__ == "__main__":
    main()
