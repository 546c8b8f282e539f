"""The filter benchmark's data names, cases and budgets (bench/bench_filter.py runs them):
the files it writes, the row ranges and points each case selects, the readers compared,
and what the network allows (the floor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import data
import numpy as np

HERE = Path(__file__).resolve().parent


VERSION = "filter-v1"  # bump when the data below changes
ROOT = HERE / ".data" / VERSION
PREFIX = "filter"  # key prefix inside the bucket
RESULTS = HERE / "results"
PROFILE = "s3"
RTT = 0.050  # netsim's s3 profile
ROWS = data.WIDE_ROWS
SIX = data.PROJECTIONS["6 cols"]
ALL = [*data.COLUMNS, "ts"]
RANGE_ROW, RANGE_ROWS = 612_345, ROWS // 100  # case a: rows [612345, 622345)
POINT_ROW = 777_777  # case b
TAKE_ROWS, TAKE_SEED = 100, 16


def _label(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10} KiB"


def _writer_default() -> int:
    from csup_async.writers.writer import DEFAULT_SEGMENT_THRESH

    return int(DEFAULT_SEGMENT_THRESH)


# case f: these, and the writer's default whatever it is (its file is written with no option)
SEGMENT_THRESHES = {_label(n): n for n in sorted({256 << 10, 1 << 20, 4 << 20,
                                                  _writer_default()})}
DEFAULT_THRESH = _label(_writer_default())
READERS = ["csup-async", "polars", "duckdb httpfs", "pyarrow.dataset"]
PEERS = READERS[1:]
TIMEOUT = 240.0  # seconds a worker may stay silent


def key(name: str) -> str:
    return f"{PREFIX}/{name}"


def csup_name(thresh: str = DEFAULT_THRESH) -> str:
    return "wide.csup" if thresh == DEFAULT_THRESH else f"wide-seg{thresh.replace(' ', '')}.csup"


def local(name: str) -> Path:
    return ROOT / "root" / data.BUCKET / key(name)


def cases(info: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Every remote case; ``pred`` is a conjunction of (column, op, literal)."""
    c = info["constants"]
    lo, hi = c["range"]
    rng_sum = sum(range(RANGE_ROW, RANGE_ROW + RANGE_ROWS))
    out = [
        {"id": "a", "label": "a: 1% by ts range, 6 cols", "kind": "filter", "columns": SIX,
         "pred": [["ts", ">=", lo], ["ts", "<", hi]], "rows": RANGE_ROWS, "i0_sum": rng_sum},
        {"id": "b", "label": "b: ts == x, all 25 cols", "kind": "filter", "columns": ALL,
         "pred": [["ts", "==", c["point"]]], "rows": 1, "i0_sum": POINT_ROW},
        {"id": "c90", "label": "c: i1 < 90 (90%), 6 cols", "kind": "filter", "columns": SIX,
         "pred": [["i1", "<", 90]], "rows": c["i1_lt_90_rows"], "i0_sum": c["i1_lt_90_i0_sum"]},
        {"id": "cfull", "label": "c: unfiltered, 6 cols", "kind": "scan", "columns": SIX,
         "rows": ROWS, "i0_sum": ROWS * (ROWS - 1) // 2},
        {"id": "dlimit", "label": "d: limit 10, 6 cols", "kind": "limit", "columns": SIX,
         "n": 10, "rows": 10},
        {"id": "dtake", "label": "d: take 100 rows, 6 cols", "kind": "take", "columns": SIX,
         "indices": c["take"], "rows": TAKE_ROWS, "i0_sum": sum(c["take"])},
        {"id": "dslice", "label": "d: rows 612345:622345, 6 cols", "kind": "slice",
         "columns": SIX, "start": RANGE_ROW, "stop": RANGE_ROW + RANGE_ROWS,
         "rows": RANGE_ROWS, "i0_sum": rng_sum},
    ]
    for case in out:
        case["key"] = key("wide.parquet")
    return out


def segment_cases(info: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Cases (a), (b) and the unfiltered 6-column scan on each segment size's CSUP
    file, csup-async only: what small segments win, and what they cost a full read."""
    by_id = {c["id"]: c for c in cases(info, quick)}
    return [{**case, "id": f"f{case['id']}|{label}",
             "label": f"f: {case['id']} on segment_thresh {label}",
             "thresh": label, "csup_key": key(csup_name(label))}
            for label in SEGMENT_THRESHES for case in (by_id["a"], by_id["b"], by_id["cfull"])]


def selections(info: dict[str, Any]) -> dict[str, tuple[list[str], Any]]:
    """The columns and rows each yardstick counts: (a) the projection and the filter
    column over the matching rows, (b) every column of one row, (d) the projection of
    the taken rows."""
    return {"a": ([*SIX, "ts"], np.arange(RANGE_ROW, RANGE_ROW + RANGE_ROWS)),
            "b": (ALL, [POINT_ROW]),
            "dtake": (SIX, info["constants"]["take"]),
            "dslice": (SIX, np.arange(RANGE_ROW, RANGE_ROW + RANGE_ROWS))}


def floor_s(nbytes: int) -> float:
    """What the network allows: two round trips (the open, then one wave of data) and
    ``nbytes`` over 16 connections (netsim's floor)."""
    import netsim

    return netsim.PROFILES[PROFILE].floor(nbytes)


SLOW = 30.0  # a reader whose warm-up takes longer runs a case once
BUDGET = 15.0  # seconds of timed runs per case and reader, at least one run
