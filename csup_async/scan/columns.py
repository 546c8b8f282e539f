"""The column walker: a tree of cursors over the type tree that turns segment streams into arrays.

One walker serves every read.  For each projected path (or whole rows) it
builds, once and without reading, a cursor per node of the type tree that the
read needs; each leaf registers one job per segment with the
:class:`~.fetch.SegmentSource`, which decodes segments in a thread pool as
their bytes land.  ``take(n)`` then hands out the next ``n`` values: a whole
column is one ``take`` of every row (segments concatenated once, the flat
leaf strategy), a batch is a ``take`` of the batch's rows (one decoded
segment per stream held at a time).

Every count the format promises is checked on every path: a stream that runs
out is a FormatError at the ``take``; a stream with values left when the rows
are done, or presence runs that sum too high, is a FormatError at
:meth:`Cursor.finish`.  Presence runs become masks with vector operations
only (cumulative ends and one ``repeat``), whatever the number of runs.  Every
``take`` is counted against ``max_rows`` (per node, over the whole read) and
``max_values`` (all nodes), so every path refuses the same files.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from planner.projection import Leg

from .. import arrays as A
from .. import decode as D
from ..arrays.buffers import offsets_from_lengths
from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    UnionColumn,
)
from ..model.errors import FormatError
from ..model.types import (
    ArrayType,
    EnumType,
    ErrorType,
    MapType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
    underlying,
)
from .cursors import (
    BodiesCursor,
    ConstCursor,
    Cursor,
    DictCursor,
    Int32Cursor,
    NullCursor,
    PrimCursor,
    RunsCursor,
    SlicedPrimCursor,
)
from .streams import (
    Build,
)


class MaskedCursor(Cursor):
    """Values placed by presence runs: the child holds only the present positions."""

    def __init__(self, b: Build, runs: RunsCursor, child: Cursor) -> None:
        super().__init__(b)
        self.runs, self.child = runs, child

    def _take(self, n: int) -> A.Array:
        valid = self.runs.take(n)
        return self.child.take(int(np.count_nonzero(valid))).expand(valid)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        there, pos, count = self.runs.locate(n, idx)
        return self.child.gather(count, pos).expand(there)

    def skip(self, n: int) -> None:
        self.child.skip(int(np.count_nonzero(self.runs.take(n))))

    def finish(self) -> None:
        self.runs.finish()
        self.child.finish()


class RetypedCursor(Cursor):
    def __init__(self, b: Build, t: Type, child: Cursor) -> None:
        super().__init__(b)
        self.t, self.child = t, child

    def _take(self, n: int) -> A.Array:
        return self.child.take(n).with_type(self.t)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        return self.child.gather(n, idx).with_type(self.t)

    def plan(self, n: int) -> None:
        self.child.plan(n)

    def launch(self) -> None:
        self.child.launch()

    def skip(self, n: int) -> None:
        self.child.skip(n)

    def finish(self) -> None:
        self.child.finish()


class RecordCursor(Cursor):
    def __init__(self, b: Build, t: RecordType, fields: list[Cursor]) -> None:
        super().__init__(b)
        self.t, self.fields = t, fields

    def _take(self, n: int) -> A.Array:
        return A.StructArray(self.t, n, tuple(f.take(n) for f in self.fields))

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        return A.StructArray(self.t, int(idx.size), tuple(f.gather(n, idx)
                                                          for f in self.fields))

    def plan(self, n: int) -> None:
        for f in self.fields:
            f.plan(n)

    def launch(self) -> None:
        for f in self.fields:
            f.launch()

    def skip(self, n: int) -> None:
        for f in self.fields:
            f.skip(n)

    def finish(self) -> None:
        for f in self.fields:
            f.finish()


class ListCursor(Cursor):
    """Arrays, sets and maps: lengths, then that many child values."""

    def __init__(self, b: Build, t: Type, lengths: Int32Cursor, children: list[Cursor]) -> None:
        super().__init__(b)
        self.t, self.lengths, self.children = t, lengths, children

    def _take(self, n: int) -> A.Array:
        offsets = (D.lengths_to_offsets(self.lengths.take(n), max_total=self.b.limits.max_rows)
                   if n else np.zeros(1, np.int64))
        total = int(offsets[-1])
        kids = [c.take(total) for c in self.children]
        if isinstance(self.t, MapType):
            return A.MapArray(self.t, offsets, kids[0], kids[1])
        return A.ListArray(self.t, offsets, kids[0])

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        offsets = D.lengths_to_offsets(self.lengths.take(n), max_total=self.b.limits.max_rows)
        starts = offsets[idx]
        lens = offsets[idx + 1] - starts
        elems = A.range_indices(starts, lens)
        total = int(offsets[-1])
        kids = [c.gather(total, elems) for c in self.children]
        out = offsets_from_lengths(lens)
        if isinstance(self.t, MapType):
            return A.MapArray(self.t, out, kids[0], kids[1])
        return A.ListArray(self.t, out, kids[0])

    def skip(self, n: int) -> None:
        if n:
            total = int(D.lengths_to_offsets(self.lengths.take(n),
                                             max_total=self.b.limits.max_rows)[-1])
            for c in self.children:
                c.skip(total)

    def finish(self) -> None:
        self.lengths.finish()
        for c in self.children:
            c.finish()


class UnionCursor(Cursor):
    def __init__(self, b: Build, t: UnionType, tags: Int32Cursor, members: list[Cursor]) -> None:
        super().__init__(b)
        self.t, self.tags, self.members = t, tags, members

    def _take(self, n: int) -> A.Array:
        tags = self.tags.take(n) if n else np.zeros(0, np.int32)
        k = len(self.members)
        if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        counts = np.bincount(tags, minlength=k)
        return A.UnionArray(self.t, tags.astype(np.int32, copy=False),
                            tuple(m.take(int(c)) for m, c in zip(self.members, counts,
                                                                  strict=True)))

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        tags = self.tags.take(n)
        k = len(self.members)
        if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        counts = np.bincount(tags, minlength=k).tolist()
        picked = tags[idx]
        ranks = A.group_ranks(tags, k)[idx]
        return A.UnionArray(self.t, picked.astype(np.int32, copy=False),
                            tuple(m.gather(c, ranks[picked == i]) for i, (m, c)
                                  in enumerate(zip(self.members, counts, strict=True))))

    def skip(self, n: int) -> None:
        if not n:
            return
        tags = self.tags.take(n)
        k = len(self.members)
        if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        for m, c in zip(self.members, np.bincount(tags, minlength=k).tolist(), strict=True):
            m.skip(c)

    def finish(self) -> None:
        self.tags.finish()
        for m in self.members:
            m.finish()


# --------------------------------------------------------------- the walk ---

def cursor_for(b: Build, t: Type, col: AnyColumn | None) -> Cursor:
    """A cursor over the values of type ``t`` stored in ``col``."""
    if col is None:
        return NullCursor(b, t)
    if isinstance(col, NullsColumn):
        inner = cursor_for(b, t, col.values)
        return MaskedCursor(b, RunsCursor(b, col.presence), inner) if col.presence else inner
    u = underlying(t)
    if isinstance(u, ErrorType):
        return RetypedCursor(b, t, cursor_for(b, u.inner, col))
    if u is not t:
        return RetypedCursor(b, t, cursor_for(b, u, col))
    if isinstance(col, PrimitiveColumn) and not isinstance(t, (PrimitiveType, EnumType)):
        return _opaque_cursor(b, t, col)
    if isinstance(t, (PrimitiveType, EnumType)):
        if not isinstance(col, PrimitiveColumn):
            raise FormatError(f"column for {t} is not a primitive column")
        if col.constant is not None or col.dictionary is not None:
            return _opaque_cursor(b, t, col)
        return SlicedPrimCursor(b, t, col.segmap) if b.lazy else PrimCursor(b, t, col.segmap)
    if isinstance(t, RecordType):
        if not isinstance(col, RecordColumn) or len(col.fields) != len(t.fields):
            raise FormatError(f"column for {t} is not a matching record column")
        return RecordCursor(b, t, [_field(b, f.type, fc.column, fc.presence)
                                   for f, fc in zip(t.fields, col.fields, strict=True)])
    if isinstance(t, (ArrayType, SetType)):
        if not isinstance(col, ArrayColumn):
            raise FormatError(f"column for {t} is not an array column")
        return ListCursor(b, t, Int32Cursor(b, col.lengths, "a lengths column"),
                          [cursor_for(b, t.elem, col.values)])
    if isinstance(t, MapType):
        if not isinstance(col, MapColumn):
            raise FormatError(f"column for {t} is not a map column")
        return ListCursor(b, t, Int32Cursor(b, col.lengths, "a lengths column"),
                          [cursor_for(b, t.key, col.keys), cursor_for(b, t.value, col.values)])
    if isinstance(t, UnionType):
        if not isinstance(col, UnionColumn) or len(col.columns) != len(t.types):
            raise FormatError(f"column for {t} is not a matching union column")
        return UnionCursor(b, t, Int32Cursor(b, col.tags, "a union tags column"),
                           [cursor_for(b, m, c) for m, c in zip(t.types, col.columns,
                                                                 strict=True)])
    raise FormatError(f"cannot read values of type {t}")


def _opaque_cursor(b: Build, t: Type, col: PrimitiveColumn) -> Cursor:
    """VNG's other primitive encodings, and whole bodies of a complex type."""
    if col.constant is not None:
        return ConstCursor(b, t, col.constant)
    if col.dictionary is not None:
        return DictCursor(b, t, col.segmap, col.dictionary)
    return BodiesCursor(b, t, col.segmap)


def _field(b: Build, t: Type, col: AnyColumn | None, presence: Segmap) -> Cursor:
    if col is None:
        return NullCursor(b, t)
    inner = cursor_for(b, t, col)
    return MaskedCursor(b, RunsCursor(b, presence), inner) if presence else inner


def leg_cursor(b: Build, leg: Leg) -> Cursor:
    """A cursor over the values one super type holds at a projected path, built from the
    planner's :class:`planner.projection.Leg` (the projection is not walked again).

    Only the streams on the way down are read: each presence on the way narrows the
    rows, and the target's values are expanded back to every row.  A target that is
    all null reads nothing (the planner plans no bytes for it).
    """
    if leg.error is not None:
        raise FormatError(leg.error)
    if leg.column is None:
        return NullCursor(b, leg.type)
    cursor = cursor_for(b, leg.type, leg.column)
    for presence in reversed(leg.presences):
        cursor = MaskedCursor(b, RunsCursor(b, presence), cursor)
    return cursor


CursorFactory = Callable[[Build], Cursor]
