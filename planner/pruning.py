"""Whole files a filter cannot match, proven from their segment statistics alone.

A dataset has every file's metadata from the tail read it made at open, and the
segmaps in it carry each segment's ``count``/``nulls``/``min``/``max``/``nan``
(docs/format.md, "Segment statistics and checksums").  Folding them per filter
path gives the file's own zone statistics (:class:`planner.filters.ColumnStats`):
the non-null values are the segments' counts less their nulls, the bounds the
least minimum and the greatest maximum, ``nan`` whether any segment saw one.
:func:`planner.filters.zone_truth` then says whether the filter is false for every
row of the file, and such a file is dropped before any of its data is requested.

Soundness comes first, so a path says nothing (unknown) when any of its
segments lacks the statistics, when it is not a plain primitive column in some
super type (a union, an error, something below an array), or when its super
types disagree on its type.  Rows that lack the path (a super type without the
field, absent fields, a null parent) are nulls; when the file's row count is
not known from metadata (several super types) the fold assumes there may be
such nulls.  Decoding the statistics is the caller's (``stats_of``), so this
module stays pure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from csup_async.format.meta import (
    AnyColumn,
    FileMeta,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segment,
    SegmentStats,
)
from csup_async.model.types import ErrorType, NamedType, PrimitiveType, RecordType, Type, UnionType

from .bounds import fold, segment_zone
from .filters import ColumnStats, Expr, FilterError, Truth, bind, columns_of, zone_truth

__all__ = ["STATISTICS", "FileVerdict", "PathStats", "file_truth", "path_stats",
           "prune_files", "type_has_path"]

#: The reason a file pruned by its statistics is reported with.
STATISTICS = "filter false by statistics"

StatsOf = Callable[[Segment], SegmentStats]


@dataclass(frozen=True, slots=True)
class PathStats:
    """One path over one file: its zone statistics and its primitive type's name
    (None when unknown or null throughout)."""

    stats: ColumnStats | None
    type_name: str | None


@dataclass(frozen=True, slots=True)
class FileVerdict:
    """What the statistics prove for each file: the indices kept and those pruned."""

    kept: tuple[int, ...]
    pruned: tuple[int, ...]


_UNKNOWN = PathStats(None, None)


def _at(t: Type, col: AnyColumn | None, path: tuple[str, ...]
        ) -> tuple[str, PrimitiveType | None, PrimitiveColumn | None, bool]:
    """``(status, type, column, clean)`` of ``path`` in one super type.

    status: ``"found"`` (a primitive column), ``"null"`` (no value there: the type
    lacks the path or its column is all null) or ``"other"`` (not a plain primitive
    column: unknown).  ``clean``: every row of the super type has a value slot in
    the column (no presence runs or null parents on the way)."""
    clean = True
    for name in path:
        t, col, clean = _unwrap(t, col, clean)
        if not isinstance(t, RecordType):
            return ("null", None, None, False) if not _opaque(t) else ("other", None, None, False)
        ft = t.field(name)
        if ft is None:
            return "null", None, None, False
        if not isinstance(col, RecordColumn):
            return "other", None, None, False
        fc = col.field(name)
        if fc is None or fc.column is None:
            return "null", None, None, False
        if fc.presence:
            clean = False
        t, col = ft.type, fc.column
    t, col, clean = _unwrap(t, col, clean)
    if isinstance(t, PrimitiveType) and isinstance(col, PrimitiveColumn):
        return "found", t, col, clean
    return "other", None, None, False


def _opaque(t: Type) -> bool:
    """Types whose values a field lookup could still reach (a union's record member, an
    error's record): unknown, not null."""
    return isinstance(t, (UnionType, ErrorType))


def _unwrap(t: Type, col: AnyColumn | None, clean: bool
            ) -> tuple[Type, AnyColumn | None, bool]:
    while True:
        if isinstance(col, NullsColumn):
            clean = clean and not col.presence
            col = col.values
        elif isinstance(t, NamedType):
            t = t.inner
        else:
            return t, col, clean


def type_has_path(t: Type, path: tuple[str, ...]) -> bool:
    """Whether values of type ``t`` can hold a field at ``path``: through records, named
    types, errors and union members (a filter naming a path no super type can hold is
    a misspelling, not a comparison with null)."""
    if not path:
        return True
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(t, UnionType):
        return any(type_has_path(m, path) for m in t.types)
    if isinstance(t, RecordType):
        f = t.field(path[0])
        return f is not None and type_has_path(f.type, path[1:])
    return False


def path_stats(meta: FileMeta, path: tuple[str, ...], stats_of: StatsOf) -> PathStats:
    """The statistics of ``path`` over the whole file, folded from its segments by the
    rule one file's zones use too (:mod:`planner.bounds`)."""
    if not path:
        return _UNKNOWN
    clean = True
    found: list[tuple[str, PrimitiveColumn]] = []
    for t, col in zip(meta.super_types, meta.columns, strict=False):
        status, ptype, pcol, ok = _at(t, col, path)
        if status == "other":
            return _UNKNOWN
        clean = clean and ok
        if status == "null":
            continue
        assert ptype is not None and pcol is not None
        found.append((ptype.name, pcol))
    names = {name for name, _ in found if name != "null"}
    if len(names) > 1:
        return _UNKNOWN
    parts: list[ColumnStats | None] = []
    for name, pcol in found:
        for seg in pcol.segmap:
            s = stats_of(seg)
            parts.append(segment_zone(s.count, s.nulls, s.min, s.max, s.nan, name))
    together = fold(parts)
    if together is None:
        return _UNKNOWN
    values, inband, slots = together.values, together.nulls, together.count
    lo, hi, nan = together.lo, together.hi, together.nan
    rows = meta.row_count
    if clean:
        rows = slots
    if rows is None:  # rows may lack the path: say there may be nulls
        stats = ColumnStats(values + inband + 1, inband + 1, lo, hi, nan)
    elif rows < values:
        return _UNKNOWN  # statistics that contradict the metadata prove nothing
    else:
        stats = ColumnStats(rows, rows - values, lo, hi, nan)
    return PathStats(stats, next(iter(names), None))


def file_truth(meta: FileMeta, expr: Expr, stats_of: StatsOf, *,
               unknown: Collection[tuple[str, ...]] = ()) -> Truth:
    """What ``meta``'s statistics prove about ``expr`` for every row of the file.

    Paths in ``unknown`` (a dataset's partition columns, which are not in the
    file) get no statistics.  A filter that cannot be typed for the file's
    columns proves nothing (the scan reports the error)."""
    got = {p: path_stats(meta, p, stats_of) for p in dict.fromkeys(columns_of(expr))
           if p not in unknown}
    try:
        typed = bind(expr, {p: s.type_name for p, s in got.items() if s.type_name})
    except FilterError:
        return Truth.MAYBE
    return zone_truth(typed, {p: s.stats for p, s in got.items() if s.stats is not None})


def prune_files(metas: Sequence[FileMeta], expr: Expr, stats_of: StatsOf, *,
                unknown: Collection[tuple[str, ...]] = ()) -> FileVerdict:
    """Split files into those that may hold a matching row and those that cannot."""
    kept: list[int] = []
    pruned: list[int] = []
    for i, meta in enumerate(metas):
        false = file_truth(meta, expr, stats_of, unknown=unknown) is Truth.FALSE
        (pruned if false else kept).append(i)
    return FileVerdict(tuple(kept), tuple(pruned))
