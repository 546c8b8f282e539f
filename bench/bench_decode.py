"""Throughput of the column decoders, next to pyarrow reading the same data from Parquet.

Run ``python bench/bench_decode.py [--rows N] [--runs R]``; prints a markdown table.
MB/s counts the bytes of the CSUP column stream (for pyarrow too, so the rows
compare like for like); both sides run on one core (pyarrow with
``use_threads=False``) and report the median of R runs.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from csup_async import decode as D
from csup_async.types import PRIMITIVE_BY_NAME


def tag_stream(lengths: np.ndarray, body: Callable[[np.ndarray, np.ndarray], None]) -> bytes:
    """A stream of values with these body lengths (-1: null); ``body(out, starts)`` fills
    the bodies.  Vectorised, so that building the inputs does not dominate the run."""
    size = 1 + np.maximum(lengths, 0)
    tags = np.zeros(lengths.size, np.int64)
    np.cumsum(size[:-1], out=tags[1:])
    out = np.zeros(int(size.sum()), np.uint8)
    assert (lengths < 127).all()
    out[tags] = (lengths + 1).astype(np.uint8)
    body(out, tags + 1)
    return out.tobytes()


def int_stream(values: np.ndarray, valid: np.ndarray) -> bytes:
    # sign and magnitude, as Zed encodes signed ints (|v| << 1 | sign)
    sign = (values.astype(np.int64) >> 63).view(np.uint64)
    zz = (((values.astype(np.int64).view(np.uint64) ^ sign) - sign) << np.uint64(1)) | (
        sign & np.uint64(1))
    nbytes = np.zeros(values.size, np.int64)
    for j in range(8):
        nbytes += zz >= (np.uint64(1) << np.uint64(8 * j)) if j else zz > 0
    lengths = np.where(valid, nbytes, -1)

    def fill(out: np.ndarray, starts: np.ndarray) -> None:
        for j in range(8):
            sel = lengths > j
            out[starts[sel] + j] = ((zz[sel] >> np.uint64(8 * j)) & np.uint64(0xFF)).astype(
                np.uint8)

    return tag_stream(lengths, fill)


def fixed_stream(raw: np.ndarray, valid: np.ndarray) -> bytes:
    width = raw.dtype.itemsize
    lengths = np.where(valid, width, -1)
    as_bytes = raw.view(np.uint8).reshape(-1, width)

    def fill(out: np.ndarray, starts: np.ndarray) -> None:
        for j in range(width):
            out[starts[valid] + j] = as_bytes[valid, j]

    return tag_stream(lengths, fill)


def string_stream(lengths: np.ndarray, chars: np.ndarray) -> bytes:
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(np.maximum(lengths, 0), out=offsets[1:])

    def fill(out: np.ndarray, starts: np.ndarray) -> None:
        sizes = np.maximum(lengths, 0)
        at = np.repeat(starts - offsets[:-1], sizes) + np.arange(int(offsets[-1]))
        out[at] = chars

    return tag_stream(lengths, fill)


def timed(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    n, runs = args.rows, args.runs
    rng = np.random.default_rng(42)
    valid = rng.random(n) >= 0.05  # some nulls
    small = rng.integers(-1000, 1000, n)
    large = rng.integers(-(2**62), 2**62, n)
    floats = rng.standard_normal(n)
    bools = rng.random(n) < 0.5
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
                             np.uint8)
    slens = np.where(valid, rng.integers(2, 19, n), -1)  # ~10 characters
    chars = alphabet[rng.integers(0, alphabet.size, int(np.maximum(slens, 0).sum()))]
    all_valid = np.ones(n, bool)

    p = PRIMITIVE_BY_NAME
    # (label, stream, type, values it must decode to, validity, pyarrow column)
    cases = [
        ("int64, abs < 1000, 5% null", int_stream(small, valid), p["int64"], small, valid,
         "small"),
        ("int64, abs < 2^62, 5% null", int_stream(large, valid), p["int64"], large, valid,
         "large"),
        ("float64, no nulls", fixed_stream(floats, all_valid), p["float64"], floats, all_valid,
         "floats"),
        ("float64, 5% null", fixed_stream(floats, valid), p["float64"], floats, valid,
         "floats_null"),
        ("string, ~10 chars, 5% null", string_stream(slens, chars), p["string"], chars, valid,
         "strings"),
        ("bool, no nulls", fixed_stream(bools.astype(np.uint8), all_valid), p["bool"], bools,
         all_valid, "bools"),
        ("bool, 5% null", fixed_stream(bools.astype(np.uint8), valid), p["bool"], bools, valid,
         "bools_null"),
    ]
    for label, stream, ptype, want, ok, _ in cases:  # a fast wrong answer is no answer
        dec = D.decode_primitive(ptype, stream, n)
        got = dec.values if dec.offsets is not None else dec.values[ok]
        assert np.array_equal(got, want if dec.offsets is not None else want[ok]), label
        assert (dec.validity is None) == bool(ok.all()), label

    # Ours first: once pyarrow has run in the process, glibc hands our freed temporaries
    # back to the OS and every call page-faults them in again (several ms per call).
    ours = {key: timed(lambda s=stream, t=ptype: D.decode_primitive(t, s, n), runs)
            for _, stream, ptype, _, _, key in cases}
    theirs = parquet_times(n, runs, valid, small, large, floats, bools, slens, chars)

    print(f"{n:,} values per column, median of {runs} runs, one core.\n")
    print("| column | stream MB | csup-async ms | MB/s | M values/s "
          "| pyarrow Parquet ms | MB/s | M values/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, stream, _, _, _, key in cases:
        mb = len(stream) / 1e6
        row = f"| {label} | {mb:.1f} |"
        for t in (ours[key], theirs.get(key)):
            row += " - | - | - |" if t is None else \
                f" {t * 1e3:.1f} | {mb / t:.0f} | {n / t / 1e6:.1f} |"
        print(row)


def parquet_times(n: int, runs: int, valid: np.ndarray, small: np.ndarray,
                  large: np.ndarray, floats: np.ndarray, bools: np.ndarray,
                  slens: np.ndarray, chars: np.ndarray) -> dict[str, float]:
    """pyarrow reading each column from an in-memory Parquet file (default writer options)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return {}
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(np.maximum(slens, 0), out=offs[1:])
    strings = pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(offs), pa.py_buffer(chars.tobytes()),
        pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())).cast(pa.string())
    columns = {
        "small": pa.array(small, mask=~valid), "large": pa.array(large, mask=~valid),
        "floats": pa.array(floats), "floats_null": pa.array(floats, mask=~valid),
        "strings": strings, "bools": pa.array(bools),
        "bools_null": pa.array(bools, mask=~valid),
    }
    out = {}
    for name, col in columns.items():
        sink = io.BytesIO()
        pq.write_table(pa.table({name: col}), sink)
        blob = sink.getvalue()
        out[name] = timed(lambda b=blob: pq.read_table(io.BytesIO(b), use_threads=False), runs)
    return out

if __name__ == "__main__":
    main()
