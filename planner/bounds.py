"""Segment statistics as zone statistics: the one rule for trusting a segment's
``count``/``nulls``/``min``/``max``/``nan``, and the one fold of several segments.

Both one file's zones (``planner.selection``) and a dataset's whole files
(``planner.pruning``) go through here, so a bound means the same to both.

Statistics are an optional extension (docs/format.md, "Segment statistics and
checksums": a reader may ignore them), so statistics that cannot be true are
*ignored*, never trusted and never an error: the data is still readable, and the
segment is then judged "maybe" (its rows are read and the filter evaluated on
them).  Such statistics are
``nulls`` above ``count`` (or negative), a ``min`` above its ``max``, bounds of
another kind than the column (a string bound on an int64 column), and a NaN
float bound (which orders with nothing).  A segment with values but no bounds
(types without bounds, cut strings, an all-NaN segment, a writer that left them
out) makes the bounds of every zone holding it unknown: ``nan`` with no bounds
cannot be told from "bounds left out", so it is not read as "all NaN".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .filters import ColumnStats, order_key, value_kind

__all__ = ["column_kind", "fold", "segment_zone"]


_KINDS = {**dict.fromkeys(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                            "uint64", "float16", "float32", "float64"), "number"),
          "string": "str", "bytes": "bytes", "bool": "bool", "time": "M", "duration": "m"}


def column_kind(type_name: str) -> str | None:
    """The :func:`planner.filters.value_kind` of a primitive column's values (None for
    types whose bounds are not used: ip, net, 128-bit ints...)."""
    return _KINDS.get(type_name)


_PLAIN = {int: "number", float: "number", str: "str", bytes: "bytes", bool: "bool"}


def _usable(x: Any, kind: str) -> bool:
    """A bound of the column's kind that orders (a NaN orders with nothing)."""
    k = _PLAIN.get(type(x))
    if k is None:
        k = value_kind(x)
    return k == kind and not (type(x) is float and math.isnan(x))


def segment_zone(count: int | None, nulls: int | None, lo: Any, hi: Any, nan: bool | None,
                 type_name: str) -> ColumnStats | None:
    """One segment's statistics as :class:`ColumnStats` of a ``type_name`` column, or
    None when they are unknown or contradict themselves (see the module docstring)."""
    if type(count) is not int or type(nulls) is not int or not 0 <= nulls <= count:
        return None  # unknown, or more nulls than values
    if type_name.startswith("float") and nan is None:  # unknown: a NaN may be there
        nan = True
    if lo is not None or hi is not None:
        kind = _KINDS.get(type_name)
        if (kind is None or lo is None or hi is None or not _usable(lo, kind)
                or not _usable(hi, kind)):
            lo = hi = None
        else:
            try:
                if (order_key(lo) > order_key(hi)) if kind in ("M", "m") else lo > hi:
                    lo = hi = None
            except TypeError:
                lo = hi = None
    return ColumnStats(count=count, nulls=nulls, lo=lo, hi=hi, nan=bool(nan))


def fold(parts: Iterable[ColumnStats | None]) -> ColumnStats | None:
    """The statistics of the rows of several zones together (None when any is unknown):
    counts and nulls add up, the bounds are the least ``lo`` and greatest ``hi`` of the
    zones with values (unknown if any such zone's are), ``nan`` whether any zone has
    one."""
    count = nulls = 0
    lo: Any = None
    hi: Any = None
    lo_key: Any = None
    hi_key: Any = None
    bounded, nan = True, False
    for p in parts:
        if p is None:
            return None
        count, nulls = count + p.count, nulls + p.nulls
        nan = nan or p.nan
        if not p.values:
            continue
        if p.lo is None or p.hi is None:
            bounded = False
            continue
        try:
            k = order_key(p.lo)
            if lo is None or k < lo_key:
                lo, lo_key = p.lo, k
            k = order_key(p.hi)
            if hi is None or k > hi_key:
                hi, hi_key = p.hi, k
        except TypeError:  # bounds of two kinds: no bound holds both
            bounded = False
    if not bounded:
        lo = hi = None
    return ColumnStats(count=count, nulls=nulls, lo=lo, hi=hi, nan=nan)
