"""Realistic schema-free rows: what an application's NDJSON log looks like.

Fifteen fields (ints, floats, strings, bools, times as RFC 3339 strings, a nested
record, a list), each null about 5% of the time and occasionally missing
altogether: typed row by row, nearly every row has its own null pattern.  Used by
the fusing tests and bench/bench_write.py.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import numpy as np

__all__ = ["sparse_rows", "sparse_ndjson"]

_KINDS = ["view", "click", "buy", "refund", "signup"]
_COUNTRIES = ["DE", "FR", "US", "BR", "JP", "IN", "NG"]


def sparse_rows(n: int, seed: int = 7, null_rate: float = 0.05,
                missing_rate: float = 0.01) -> list[dict[str, Any]]:
    """``n`` rows as ``json.loads`` gives them (keys in one order, as a logger writes)."""
    rng = np.random.default_rng(seed)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    secs = np.sort(rng.integers(0, 86400 * 30, n))
    ids = rng.integers(1, 1 << 40, n)
    users = rng.integers(0, 5000, n)
    amounts = np.round(rng.gamma(2.0, 30.0, n), 2)
    scores = rng.random(n)
    kinds = rng.integers(0, len(_KINDS), n)
    countries = rng.integers(0, len(_COUNTRIES), n)
    flags = rng.random(n) < 0.3
    latencies = rng.integers(1, 5000, n)
    ages = rng.integers(13, 90, n)
    tag_counts = rng.integers(0, 4, n)
    null = rng.random((n, 16)) < null_rate
    missing = rng.random((n, 16)) < missing_rate
    rows = []
    for i in range(n):
        t = base + dt.timedelta(seconds=int(secs[i]), microseconds=int(ids[i] % 1000000))
        row: dict[str, Any] = {
            "id": int(ids[i]),
            "ts": t.isoformat().replace("+00:00", "Z"),
            "user": f"user-{int(users[i]):05d}",
            "kind": _KINDS[kinds[i]],
            "amount": float(amounts[i]),
            "score": float(scores[i]),
            "ok": bool(flags[i]),
            "latency_ms": int(latencies[i]),
            "country": _COUNTRIES[countries[i]],
            "session": f"s{int(ids[i]) % 100003:x}",
            "referrer": f"https://example.com/p/{int(users[i]) % 97}",
            "device": {"os": ["ios", "android", "web"][int(ids[i]) % 3],
                       "version": int(ids[i]) % 20, "beta": bool(ids[i] % 7 == 0)},
            "age": int(ages[i]),
            "tags": [f"t{(int(ids[i]) >> k) % 50}" for k in range(int(tag_counts[i]))],
            "updated": (t + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
        }
        for j, key in enumerate(list(row)):
            if missing[i, j]:
                del row[key]
            elif null[i, j]:
                row[key] = None
        if null[i, 15] and "device" in row and row["device"] is not None:
            row["device"]["version"] = None
        rows.append(row)
    return rows


def sparse_ndjson(n: int, seed: int = 7) -> str:
    """The rows of :func:`sparse_rows` as NDJSON text."""
    return "".join(json.dumps(r) + "\n" for r in sparse_rows(n, seed))
