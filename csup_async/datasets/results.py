"""A dataset's results put together from its files' results: joined, sliced into
batches, their reads counted."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .. import arrays as A
from ..model.types import NULL
from ..scan.result import ScanResult, ScanStats

__all__ = ["joined", "null_column", "sliced", "summed_stats"]


def null_column(n: int) -> A.Array:
    """``n`` nulls: a column no file of the result has."""
    return A.null_array(NULL, n)


def summed_stats(parts: Sequence[ScanResult]) -> ScanStats:
    """The reads of ``parts``, counted together."""
    stats = ScanStats()
    for p in parts:
        stats.add(p.stats)
    return stats


def joined(parts: Sequence[ScanResult], cols: list[str]) -> ScanResult:
    """The rows of ``parts`` one after another (a column's types combined as a union
    where files differ)."""
    counts = [p.num_rows for p in parts]
    ids = np.repeat(np.arange(len(parts), dtype=np.int32), counts)
    out = {c: (A.combine([p.columns[c] for p in parts], ids) if parts else null_column(0))
           for c in cols}
    return ScanResult(out, int(sum(counts)), summed_stats(parts))


def sliced(res: ScanResult, n: int, batch_rows: int, stats: ScanStats | None
            ) -> Iterator[ScanResult]:
    """The first ``n`` rows of a file read whole, as batches of ``batch_rows`` (views);
    its read counted in ``stats`` first."""
    if stats is not None:
        stats.add(res.stats)
    for lo in range(0, n, batch_rows):
        hi = min(lo + batch_rows, n)
        yield ScanResult({c: a.slice(lo, hi) for c, a in res.columns.items()}, hi - lo,
                         res.stats, res.plan)
