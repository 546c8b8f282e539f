"""Rows of the two-shape test file: ``{ts, k, pad}`` with ``k`` None in a random third of
rows when ``nones`` (written with ``fuse=False``: two interleaved super types), so the
selection, budget and program tests read the same kind of file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def shape_rows(rows: int, step: int, nones: bool, seed: int) -> list[dict[str, Any]]:
    """``rows`` records sorted by ``ts`` (``i * step``), ``pad`` 32 random hex chars."""
    rng = np.random.default_rng(seed)
    none = rng.random(rows) < 1 / 3
    raw = rng.bytes(16 * rows)
    return [{"ts": i * step, "k": None if nones and none[i] else i % 97,
             "pad": raw[16 * i:16 * i + 16].hex()} for i in range(rows)]


def write_shapes(d: Path, rows: int, step: int, seed: int) -> dict[str, Path]:
    """``two.csup`` (with the None third: two super types) and ``one.csup`` (without) in
    ``d``, in 8 KiB segments so a selection has many to choose from."""
    import csup_async

    out = {"two": d / "two.csup", "one": d / "one.csup"}
    for name, nones in (("two", True), ("one", False)):
        csup_async.write(str(out[name]), shape_rows(rows, step, nones, seed), fuse=False,
                         segment_thresh=8 << 10, target="csup-async")  # segments: ours
    return out
