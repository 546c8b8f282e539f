"""Throughput of the column decoders (C kernels and numpy), next to pyarrow reading the
same data from in-memory Parquet, in one run.

Run ``python bench/bench_decode.py [--rows N] [--runs R]``; prints a markdown table
and the import time of the C extension.  MB/s counts the bytes of the CSUP column
stream (for pyarrow too, so the rows compare like for like); every decoder runs on
one core (pyarrow with ``use_threads=False``) and reports the best of R runs (the
machines this runs on are shared: the best run is the one least disturbed; the
median is printed alongside).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from csup_async import decode as D
from csup_async.decode import kernels
from csup_async.model.types import PRIMITIVE_BY_NAME


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


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """(best, median) seconds of ``runs`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def import_ms(module: str, runs: int = 7) -> float:
    """The best self+children time ``python -X importtime`` reports for ``module``, in ms
    (its parents are imported first, so only the module itself is counted)."""
    parent = module.rsplit(".", 1)[0]
    best = float("inf")
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {parent}; import {module}"],
            capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}).stderr
        for line in err.splitlines():
            m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s+(\S+)$", line)
            if m and m.group(2) == module:
                best = min(best, int(m.group(1)) / 1e3)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=9)
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
    llens = np.where(valid, rng.integers(50, 120, n), -1)  # ~85 characters, 1-byte tags
    lchars = alphabet[rng.integers(0, alphabet.size, int(np.maximum(llens, 0).sum()))]
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
        ("string, ~85 chars, 5% null", string_stream(llens, lchars), p["string"], lchars,
         valid, "long_strings"),
        ("bool, no nulls", fixed_stream(bools.astype(np.uint8), all_valid), p["bool"], bools,
         all_valid, "bools"),
        ("bool, 5% null", fixed_stream(bools.astype(np.uint8), valid), p["bool"], bools, valid,
         "bools_null"),
    ]
    native = kernels._K
    impls = [("C", native), ("numpy", None)] if native is not None else [("numpy", None)]
    for _, k in impls:
        kernels._K = k
        for label, stream, ptype, want, ok, _ in cases:  # a fast wrong answer is no answer
            dec = D.decode_primitive(ptype, stream, n)
            got = dec.values if dec.offsets is not None else dec.values[ok]
            assert np.array_equal(got, want if dec.offsets is not None else want[ok]), label
            assert (dec.validity is None) == bool(ok.all()), label

    # Ours first: once pyarrow has run in the process, glibc hands our freed temporaries
    # back to the OS and every call page-faults them in again (several ms per call).
    times: dict[str, dict[str, tuple[float, float]]] = {}
    for name, k in impls:
        kernels._K = k
        times[name] = {key: timed(lambda s=stream, t=ptype: D.decode_primitive(t, s, n), runs)
                       for _, stream, ptype, _, _, key in cases}
    kernels._K = native
    times["pyarrow"] = parquet_times(n, runs, valid, small, large, floats, bools, slens, chars,
                                     llens, lchars)

    names = [name for name in ("C", "numpy", "pyarrow") if name in times]
    print(f"{n:,} values per column, best (median) of {runs} runs, one core; MB/s of the "
          "CSUP stream.\n")
    print("| column | stream MB | " + " | ".join(f"{x} ms | {x} MB/s" for x in names)
          + (" | C / pyarrow |" if "C" in times and times["pyarrow"] else " |"))
    print("|---|---:|" + "---:|---:|" * len(names) + ("---:|" if "C" in times else ""))
    for label, stream, _, _, _, key in cases:
        mb = len(stream) / 1e6
        row = f"| {label} | {mb:.1f} |"
        for x in names:
            best, med = times[x].get(key, (None, None))
            row += " - | - |" if best is None else \
                f" {best * 1e3:.1f} ({med * 1e3:.1f}) | {mb / best:,.0f} |"
        if "C" in times and times["pyarrow"].get(key):
            row += f" {times['pyarrow'][key][0] / times['C'][key][0]:.1f}x |"
        print(row)
    if native is not None:
        print(f"\nimport csup_async.decode._kernels: {import_ms('csup_async.decode._kernels'):.2f}"
              " ms (python -X importtime, best of 7, its package already imported)")


def parquet_times(n: int, runs: int, valid: np.ndarray, small: np.ndarray,
                  large: np.ndarray, floats: np.ndarray, bools: np.ndarray,
                  slens: np.ndarray, chars: np.ndarray, llens: np.ndarray,
                  lchars: np.ndarray) -> dict[str, tuple[float, float]]:
    """pyarrow reading each column from an in-memory Parquet file (default writer options)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return {}

    def strings(lens: np.ndarray, data: np.ndarray) -> pa.Array:
        offs = np.zeros(n + 1, np.int64)
        np.cumsum(np.maximum(lens, 0), out=offs[1:])
        return pa.LargeStringArray.from_buffers(
            n, pa.py_buffer(offs), pa.py_buffer(data.tobytes()),
            pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())).cast(pa.string())

    columns = {
        "small": pa.array(small, mask=~valid), "large": pa.array(large, mask=~valid),
        "floats": pa.array(floats), "floats_null": pa.array(floats, mask=~valid),
        "strings": strings(slens, chars), "long_strings": strings(llens, lchars),
        "bools": pa.array(bools),
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
