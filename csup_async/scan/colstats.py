"""Per-column statistics of a whole file, from its segment statistics alone (no data read).

``reader.schema.column_stats`` and ``csup-async inspect`` show, for every
primitive column (a leaf of the column tree), what the writer recorded about
its segments (docs/format.md, "Segment statistics and checksums"), summed
over segments and super types.  A path is keyed by its canonical spelling
(``user.id``); elements of arrays and sets are ``path[]``, map keys and values
``path{keys}``/``path{values}``, union members ``path|i``.

``values`` counts the column's positions: one per record that holds the field
(a null record's fields, and the fields a record type lacks, are not counted).
``nulls`` counts the null ones among them, stored in-band or as presence runs
(a null field's positions the statistics cannot tell apart, e.g. under a null
record whose count no sibling field gives, make both unknown: None); a super
type where the field is all null (no column) adds its records as nulls.  A
bound is known only when every segment holding a non-null, non-NaN value has
it: one unknown segment makes the column's bound unknown (None), never a
tighter one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from planner.bounds import fold, segment_zone
from planner.paths import quote_component

from ..format.colvalue import segment_stats
from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    FileMeta,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    UnionColumn,
)
from ..model.types import (
    ArrayType,
    ErrorType,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)


@dataclass(frozen=True, slots=True)
class ColumnStatistics:
    """One primitive column over the whole file (see the module docstring).

    ``segments`` in all, ``with_statistics`` of them carrying a ``count``; the
    other fields are None when some segment does not say (a file without
    statistics has every one None).  ``type`` is the column's primitive type
    (``"int64|string"`` when super types disagree: bounds of different types
    are not compared, so they are None then).
    """

    path: str
    type: str
    segments: int
    with_statistics: int
    stored_bytes: int
    values: int | None
    nulls: int | None
    min: Any
    max: Any
    nan: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "segments": self.segments,
                "with_statistics": self.with_statistics, "stored_bytes": self.stored_bytes,
                "values": self.values, "nulls": self.nulls, "min": self.min, "max": self.max,
                "nan": self.nan}


def has_statistics(meta: FileMeta) -> bool:
    """Whether any segment of the file carries statistics (a ``count``)."""
    return any(s.count is not None for _, _, segmap, _ in _leaves(meta) for s in segmap)


def column_stats(meta: FileMeta) -> dict[str, ColumnStatistics]:
    """Every primitive column's statistics, in column-tree order (decoded now)."""
    grouped: dict[str, list[tuple[str, Segmap, int | None]]] = {}
    for path, tname, segmap, absent in _leaves(meta):
        grouped.setdefault(path, []).append((tname, segmap, absent))
    inner = {p for p, parts in grouped.items() if not any(seg for _, seg, _ in parts)
             and any(q.startswith((p + ".", p + "[", p + "{", p + "|")) for q in grouped)}
    return {path: _summarise(path, parts) for path, parts in grouped.items()
            if path not in inner}  # a record null in some super types is no leaf


def _summarise(path: str, parts: list[tuple[str, Segmap, int | None]]) -> ColumnStatistics:
    types = list(dict.fromkeys(t for t, segmap, _ in parts if t != NULL_TYPE or segmap))
    segs = [s for _, segmap, _ in parts for s in segmap]
    stats = [segment_stats(s) for s in segs]
    absent = [a for _, _, a in parts]
    known = all(st.count is not None for st in stats) and (
        bool(segs) or all(a is not None for a in absent))
    values = sum(st.count for st in stats) if known else None  # type: ignore[misc]
    nulls = (sum(st.nulls for st in stats) + sum(absent)  # type: ignore[misc,arg-type]
             if known and all(st.nulls is not None for st in stats)
             and all(a is not None for a in absent) else None)
    if nulls is not None and values is not None:
        values += sum(absent)  # type: ignore[arg-type]
    nan = (any(st.nan for st in stats) if known and all(st.nan is not None for st in stats)
           else None)
    lo = hi = None
    if known and len(types) == 1:  # the bounds planning trusts (planner.bounds)
        together = fold(segment_zone(st.count, st.nulls, st.min, st.max, st.nan, types[0])
                        for st in stats)
        if together is not None:
            lo, hi = together.lo, together.hi
    return ColumnStatistics(path, "|".join(types), len(segs),
                            sum(st.count is not None for st in stats),
                            sum(s.length for s in segs), values, nulls, lo, hi, nan)


#: the type of a column no super type stores (every value null)
NULL_TYPE = "null"


def _empty(st: Any) -> bool:
    """A segment with no value that could have a bound: all null, or all NaN."""
    if st.nulls is None or st.count is None:
        return False
    return st.count == st.nulls or (bool(st.nan) and st.min is None and st.max is None)


def _count(segmap: Segmap) -> int | None:
    """Values stored in a primitive column, from its segments' statistics."""
    stats = [segment_stats(s) for s in segmap]
    if not stats or any(st.count is None for st in stats):
        return None
    return sum(st.count for st in stats)  # type: ignore[misc]


def _leaves(meta: FileMeta) -> Iterator[tuple[str, str, Segmap, int | None]]:
    """(path, type, segmap, nulls its presence runs hold: 0 without presence, None when
    the positions the runs cover are not known from statistics) per primitive column."""
    rows = meta.row_count if len(meta.super_types) == 1 else None
    for t, col in zip(meta.super_types, meta.columns, strict=True):
        yield from _walk(t, col, "", rows, False)


def _walk(t: Type, col: AnyColumn | None, path: str, slots: int | None, masked: bool
          ) -> Iterator[tuple[str, str, Segmap, int | None]]:
    """``slots``: positions of this column (None: unknown); ``masked``: presence runs over
    them hold nulls, so only the present ones are stored in ``col``."""
    if col is None:  # every value null: the positions, if known, are all nulls
        if path:
            yield path, NULL_TYPE, (), slots
        return
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(col, NullsColumn):
        yield from _walk(t, col.values, path, slots, True)
    elif isinstance(col, PrimitiveColumn):
        absent: int | None = 0
        if masked:
            n = _count(col.segmap)
            absent = slots - n if slots is not None and n is not None else None
        yield path, str(t), col.segmap, absent
    elif isinstance(col, RecordColumn) and isinstance(t, RecordType):
        records = None if masked else slots
        if records is None:  # a field with no presence has a value for every record
            records = next((_count(fc.column.segmap) for fc in col.fields
                            if not fc.presence and isinstance(fc.column, PrimitiveColumn)),
                           None)
        for f, fc in zip(t.fields, col.fields, strict=False):
            sub = f"{path}.{quote_component(f.name)}" if path else quote_component(f.name)
            yield from _walk(f.type, fc.column, sub, records, bool(fc.presence))
    elif isinstance(col, ArrayColumn) and isinstance(t, (ArrayType, SetType)):
        yield from _walk(t.elem, col.values, f"{path}[]", None, False)
    elif isinstance(col, MapColumn) and isinstance(t, MapType):
        yield from _walk(t.key, col.keys, f"{path}{{keys}}", None, False)
        yield from _walk(t.value, col.values, f"{path}{{values}}", None, False)
    elif isinstance(col, UnionColumn) and isinstance(t, UnionType):
        for i, (m, c) in enumerate(zip(t.types, col.columns, strict=False)):
            yield from _walk(m, c, f"{path}|{i}", None, False)
