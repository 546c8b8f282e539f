"""One column of many super types read as one group: one job, one decode, one combine.

A file of many super types (sparse-null NDJSON written without fusing has one per
null pattern) holds each column as one short stream per super type: hundreds of
segments of a few dozen bytes.  Read as a cursor and a job per (super type, path)
pair, a scan costs per pair and per segment, not per byte (``bench/shapes.py``).
When every super type that has a column holds it as plain primitive values of one
type (no presence on the way, no dictionary or constant) and two types at least hold
values, an eager whole read takes it as a group instead:

* one :class:`~.jobs.GroupJob` over every type's segments, dispatched once the
  requests holding them are in (checked and decoded on the loop when small);
* the segments' decompressed bytes laid end to end and decoded in one call, each
  segment's values counted in the same C walk (its ``count`` and CRC checked as a
  single segment's are);
* rows put in file order by one pass over the super IDs (:func:`arrays.gather`):
  ``route`` gives each row its place among the types' values laid end to end, -1
  for a type without the column (a null there).

Any other shape (presences, nested structure, unions of types) keeps the cursors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from planner.projection import Leg

from .. import arrays as A
from .. import decode as D
from ..format.meta import PrimitiveColumn, Segment
from ..model.errors import FormatError
from ..model.types import NULL, PrimitiveType
from .jobs import GroupJob
from .streams import Build, decode_values

#: Primitive types decoded by one kernel call into one numpy-backed array.
VECTOR = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "time", "duration", "float16", "float32", "float64", "bool", "string",
                    "bytes"})


class ColumnGroup:
    """Every super type's values of one output column, read as one group."""

    claimed = 0  # values counted against max_rows, as a cursor counts them

    def __init__(self, b: Build, t: PrimitiveType, sids: list[int],
                 segs: list[Segment], seg_ends: list[int]) -> None:
        self.b = b
        self.t = t
        self.sids = np.asarray(sids, np.int64)
        """The super types holding values, in file order of their segments."""
        self.seg_ends = np.asarray(seg_ends, np.int64)
        """Per type of ``sids``, the end of its segments in ``segs``."""
        self.job: GroupJob = b.source.group(segs, self._decode)

    @classmethod
    def of(cls, b: Build, legs: Sequence[Leg]) -> ColumnGroup | None:
        """The group for a column's legs, or None when some type holds it otherwise
        than as plain primitive values of the one type (the cursors read those)."""
        t: PrimitiveType | None = None
        others: list[Any] = []
        sids: list[int] = []
        segs: list[Segment] = []
        ends: list[int] = []
        for leg in legs:
            col = leg.column
            if leg.error is not None:
                return None
            if col is None:  # all null in this type: its rows are null
                if leg.type is not NULL and leg.type != NULL:  # types are interned: `is` first
                    others.append(leg.type)
                continue
            lt = leg.type
            if (leg.presences or type(col) is not PrimitiveColumn or col.dictionary is not None
                    or col.constant is not None or type(lt) is not PrimitiveType
                    or lt.name not in VECTOR):
                return None
            if t is None:
                t = lt
            elif lt is not t and lt != t:
                return None
            sids.append(leg.sid)
            segs.extend(col.segmap)
            ends.append(len(segs))
        if len(sids) < 2 or any(o is not t and o != t for o in others):
            return None  # one type holds values: its cursor and a mask cost less
        assert t is not None
        return cls(b, t, sids, segs, ends)

    def _decode(self, joined: Any, ends: np.ndarray) -> tuple[A.Array, np.ndarray]:
        """In the pool (or on the loop when small): the segments' bytes end to end, counted
        per segment in one C walk and decoded in one call."""
        counts = D.count_ranges(joined, ends)
        return decode_values(self.t, joined, int(counts.sum())), counts

    def column(self, ids: np.ndarray, counts: list[int]) -> A.Array:
        """The column for rows ``ids`` (every row of the file), in file order: nulls in
        the rows of the types without it."""
        values, seg_counts = self.job.take()
        have = np.zeros(len(seg_counts) + 1, np.int64)  # values before each segment
        np.cumsum(seg_counts, out=have[1:])
        first = np.zeros(self.sids.size, np.int64)  # each type's first segment
        first[1:] = self.seg_ends[:-1]
        per_type = have[self.seg_ends] - have[first]
        rows = np.asarray(counts, np.int64)[self.sids]
        if (per_type != rows).any():
            i = int(np.argmax(per_type != rows))
            raise FormatError(f"super type {int(self.sids[i])} has {int(per_type[i])} values "
                              f"for {int(rows[i])} rows")
        self.b.claim(self, len(values))  # type: ignore[arg-type]
        base = np.full(len(counts), -1, np.int64)
        base[self.sids] = have[first]
        return A.gather(values, ids, base, self.t)
