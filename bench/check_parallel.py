"""Checks that csup_async.parallel returns exactly what the reference path returns.

``python bench/check_parallel.py`` (exit status 1 on any difference).  Kept in
bench/ because this change may not add tests beyond test_arrow_write.py; it is
written so that it moves into tests/ as it is.  Cases: random flat tables
(nulls, long strings with multi-byte tags, unicode, small and large
segments, compressed or not) scanned by ``parallel.scan`` and ``Reader.scan``
with and without the numba loops, and corrupt streams, which must raise the
same FormatError through the loops as through decode.py.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa

import csup_async
from csup_async import decode as D
from csup_async import parallel
from csup_async.errors import CsupError
from csup_async.types import PRIMITIVE_BY_NAME


def table(rng: np.random.Generator, n: int) -> Any:
    def mask(rate: float) -> np.ndarray | None:
        return rng.random(n) < rate if rate else None

    words = ["a", "ünï", "", "x" * 200, "日本語", "long " * 40]
    return pa.table({
        "i": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64), mask=mask(0.1)),
        "small": pa.array(rng.integers(-5, 5, n).astype(np.int8)),
        "u": pa.array(rng.integers(0, 2**64 - 1, n, dtype=np.uint64), mask=mask(0.5)),
        "f": pa.array(rng.standard_normal(n), mask=mask(0.2)),
        "b": pa.array(rng.random(n) < 0.5, mask=mask(0.3)),
        "s": pa.array([words[k] for k in rng.integers(0, len(words), n)], mask=mask(0.05)),
        "t": pa.array(rng.integers(0, 2**62, n).astype("datetime64[ns]")),
        "blob": pa.array([bytes(rng.integers(0, 256, k, dtype=np.uint8))
                          for k in rng.integers(0, 300, n)]),
        "empty": pa.nulls(n, pa.int64()),
    })


async def compare(path: str, columns: list[str] | None) -> bool:
    async with csup_async.open(path) as r:
        want = (await r.scan(columns)).to_arrow()
    async with csup_async.open(path) as r:
        got = (await parallel.scan(r, columns)).to_arrow()
    return want.equals(got)


def corrupt_streams() -> int:
    bad = 0
    i64, s = PRIMITIVE_BY_NAME["int64"], PRIMITIVE_BY_NAME["string"]
    good = bytes([3, 2, 0]) * 3000
    cases = [(i64, good + bytes([10]) + b"\x00" * 9), (i64, good + bytes([5, 1])),
             (s, bytes([4]) + b"abc" + bytes([3, 0xFF, 0xFE]) + bytes([2, 65]) * 4000),
             (i64, good + bytes([0x80] * 11))]
    for ptype, stream in cases:
        ref = got = None
        try:
            D.decode_primitive(ptype, stream)
        except CsupError as e:
            ref = str(e)
        try:
            parallel.decode_primitive(ptype, stream)
        except CsupError as e:
            got = str(e)
        if ref != got:
            print(f"corrupt {ptype}: decode.py {ref!r}, parallel {got!r}")
            bad += 1
    return bad


def main() -> int:
    failures = 0
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as tmp:
        for numba in (True, False):
            if numba:
                if not parallel.numba_available(wait=True):
                    print("numba not installed: checking the numpy path only")
                    continue
            else:
                parallel._set(False)
            for case in range(8):
                n = int(rng.integers(1, 40_000))
                opts = {"segment_thresh": int(rng.choice([64, 4096, 1 << 20])),
                        "compress": bool(case % 2)}
                p = os.path.join(tmp, f"t{case}.csup")
                csup_async.write(p, table(rng, n), **opts)
                for cols in (None, ["s", "i"], ["empty", "b", "t"], ["blob"]):
                    if not asyncio.run(compare(p, cols)):
                        print(f"DIFFERENT: numba={numba} rows={n} {opts} columns={cols}")
                        failures += 1
            failures += corrupt_streams()
    print("parallel.scan and decode_primitive agree with the reference" if not failures
          else f"{failures} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
