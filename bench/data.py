"""The benchmark's data: one wide table and many small files, as CSUP, Parquet and Vortex.

Generated once, seeded, into ``bench/.data/<version>/root/bench/`` (the
directory nginx serves, ``bench`` being the S3 bucket), so every run and every
reader sees the same bytes.  The columns mimic event data rather than uniform
noise, because compression and tag lengths depend on it: ids, small counts,
timestamps, prices, category words, free text and hex ids, with 10 % nulls
in the last column of each kind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent / ".data" / "v2"  # v2: signed ints as Zed writes them
BUCKET = "bench"
WIDE_ROWS = 1_000_000
MANY_FILES = 500
MANY_ROWS = 2_000
FORMATS = ("csup", "parquet", "vortex")

INT_COLS = [f"i{k}" for k in range(8)]
FLOAT_COLS = [f"f{k}" for k in range(8)]
STR_COLS = [f"s{k}" for k in range(8)]
COLUMNS = INT_COLS + FLOAT_COLS + STR_COLS
PROJECTIONS: dict[str, list[str]] = {
    "2 cols": ["i3", "s1"],
    "6 cols": ["i0", "i3", "f0", "f3", "s0", "s1"],
    "all 24": COLUMNS,
}

_WORDS = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                   "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
                   "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
                   "xray", "yankee", "zulu"])


def _strings(rng: np.random.Generator, n: int, lo: int, hi: int, alphabet: bytes) -> Any:
    import pyarrow as pa

    lengths = rng.integers(lo, hi + 1, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    table = np.frombuffer(alphabet, np.uint8)
    data = table[rng.integers(0, table.size, int(offsets[-1]))]
    arr = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
    return arr.cast(pa.string())


def make_table(n: int, seed: int, start: int = 0) -> Any:
    """n rows x 24 columns (8 int64, 8 float64, 8 strings); deterministic in ``seed``."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.10
    ints = [
        np.arange(start, start + n, dtype=np.int64),            # row id
        rng.integers(0, 100, n),                                # small counts
        rng.integers(-1_000_000, 1_000_000, n),                 # signed measurements
        rng.integers(-(10**9), 10**9, n),                       # wide ids
        1_700_000_000_000_000_000 + np.sort(rng.integers(0, 86_400 * 10**9, n)),  # ns stamps
        rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),   # hashes
        rng.zipf(1.5, n).clip(max=10**12).astype(np.int64),     # heavy tail
        rng.integers(-10_000, 10_000, n),                       # nullable
    ]
    floats = [
        rng.standard_normal(n),
        rng.random(n),
        np.round(rng.random(n) * 1000, 2),                      # prices
        rng.exponential(5.0, n),
        rng.standard_normal(n) * 1e6,
        np.round(rng.standard_normal(n), 1),
        rng.random(n) * 100,
        rng.standard_normal(n),                                 # nullable
    ]
    strs = [
        pa.array(_WORDS[rng.integers(0, _WORDS.size, n)]),    # categories
        _strings(rng, n, 4, 20, b"abcdefghijklmnopqrstuvwxyz"),
        _strings(rng, n, 32, 32, b"0123456789abcdef"),         # hex ids
        _strings(rng, n, 1, 8, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        _strings(rng, n, 10, 60, b"abcdefghij klmnopqrstuvwxyz .,"),  # text
        _strings(rng, n, 2, 2, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"),  # country-like codes
        _strings(rng, n, 8, 16, b"abcdefghijklmnopqrstuvwxyz0123456789"),
        _strings(rng, n, 4, 12, b"abcdefghijklmnopqrstuvwxyz"),  # nullable
    ]
    cols: dict[str, Any] = {}
    for i, v in enumerate(ints):
        cols[f"i{i}"] = pa.array(v, pa.int64(), mask=nulls if i == 7 else None)
    for i, v in enumerate(floats):
        cols[f"f{i}"] = pa.array(v, pa.float64(), mask=nulls if i == 7 else None)
    for i, v in enumerate(strs):
        if i == 7:
            import pyarrow.compute as pc

            v = pc.if_else(pa.array(nulls), pa.scalar(None, pa.string()), v)
        cols[f"s{i}"] = v
    return pa.table(cols)


def _write_all(table: Any, stem: Path) -> None:
    import pyarrow.parquet as pq
    import vortex

    import csup_async

    stem.parent.mkdir(parents=True, exist_ok=True)
    csup_async.write(str(stem.with_suffix(".csup")), table, target="csup-async")
    pq.write_table(table, str(stem.with_suffix(".parquet")))
    vortex.io.write(table, str(stem.with_suffix(".vortex")))


def wide_key(fmt: str) -> str:
    return f"wide/wide.{fmt}"


def many_keys(fmt: str, files: int = MANY_FILES) -> list[str]:
    return [f"many/{fmt}/part-{i:04d}.{fmt}" for i in range(files)]


def ensure(log: Any = print) -> dict[str, Any]:
    """Generate whatever is missing; return sizes and timings (the CSUP write speed too)."""
    bucket = ROOT / "root" / BUCKET
    info_path = ROOT / "info.json"
    if info_path.exists():
        return json.loads(info_path.read_text())
    info: dict[str, Any] = {}
    t0 = time.perf_counter()
    table = make_table(WIDE_ROWS, seed=42)
    info["generate_s"] = time.perf_counter() - t0
    log(f"generated {WIDE_ROWS:,} rows x {table.num_columns} columns "
        f"in {info['generate_s']:.1f} s ({table.nbytes / 1e6:.0f} MB in Arrow)")
    info["arrow_bytes"] = table.nbytes
    stem = bucket / "wide" / "wide"
    stem.parent.mkdir(parents=True, exist_ok=True)
    import pyarrow.parquet as pq
    import vortex

    import csup_async

    timings = {}
    for fmt, fn in (("csup", lambda p: csup_async.write(p, table, target="csup-async")),
                    ("parquet", lambda p: pq.write_table(table, p)),
                    ("vortex", lambda p: vortex.io.write(table, p))):
        t = time.perf_counter()
        fn(str(stem.with_suffix("." + fmt)))
        timings[fmt] = time.perf_counter() - t
        log(f"  wrote wide.{fmt}: {stem.with_suffix('.' + fmt).stat().st_size / 1e6:.1f} MB "
            f"in {timings[fmt]:.2f} s")
    info["write_s"] = timings
    info["wide_size"] = {f: stem.with_suffix("." + f).stat().st_size for f in FORMATS}
    t = time.perf_counter()
    for i in range(MANY_FILES):
        small = make_table(MANY_ROWS, seed=1000 + i, start=i * MANY_ROWS)
        for fmt in FORMATS:
            p = bucket / many_keys(fmt)[i]
            p.parent.mkdir(parents=True, exist_ok=True)
            if fmt == "csup":
                csup_async.write(str(p), small, target="csup-async")
            elif fmt == "parquet":
                pq.write_table(small, str(p))
            else:
                vortex.io.write(small, str(p))
    info["many_s"] = time.perf_counter() - t
    info["many_size"] = {f: sum((bucket / k).stat().st_size for k in many_keys(f))
                         for f in FORMATS}
    log(f"  wrote {MANY_FILES} x {MANY_ROWS:,}-row files per format in {info['many_s']:.1f} s")
    info_path.write_text(json.dumps(info, indent=1))
    return info


if __name__ == "__main__":
    print(json.dumps(ensure(), indent=1))
