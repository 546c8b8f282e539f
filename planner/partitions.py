"""Hive-style partitions: columns whose values live in directory names, not in the files.

Spark's and pyarrow's writers lay a partitioned dataset out as
``root/year=2024/kind=push/part-0.csup``: every file of a directory holds rows
whose ``year`` is 2024 and ``kind`` is ``"push"``.  This module turns the
object paths below a dataset's root into those columns and decides, from a
:mod:`planner.filters` expression, which files can hold matching rows, so a
reader never opens the others.  Plain data in, plain data out.

Conventions (the writers'): a directory name ``key=value`` is one partition
value, both sides URL-escaped (``a%2Fb`` is ``a/b``); ``__HIVE_DEFAULT_PARTITION__``
(and an empty value) is null; other directory names are ignored.  Keys come in
order of first appearance; a file that lacks a key has null for it.

Types are inferred per key over every file, as Spark and pyarrow do for the
common cases: ``int64`` when every non-null value is a decimal integer in
range, else ``float64`` when every one is a decimal number, else ``string``;
``null`` when every value is null.  Dates and timestamps stay strings: their
text form orders like the values, so ``date >= '2024-01-01'`` prunes the same.

Pruning reads a file's partition values as a zone of statistics with
``lo == hi`` (null: every row is null), so :func:`planner.filters.zone_truth`
decides it with the filter model's three-valued logic; a path that is not a
partition column is unknown, so a filter that also reads data columns still
prunes by its partition part, soundly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from csup_async.model.errors import CsupError

from .filters import ColumnStats, Expr, Truth, bind, columns_of, zone_truth

__all__ = [
    "HIVE_NULL", "PartitionColumn", "PartitionError", "Partitions", "format_partition_path",
    "infer_partitions", "parse_partition_path",
]

#: the directory value Spark, Hive and pyarrow write for a null (or empty) value
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT64 = (-(1 << 63), (1 << 63) - 1)


class PartitionError(CsupError, ValueError):
    """A partitioned layout that cannot be read as one (e.g. a key twice in one path)."""


@dataclass(frozen=True, slots=True)
class PartitionColumn:
    name: str
    type: str  # "int64" | "float64" | "string" | "null"


@dataclass(frozen=True, slots=True)
class Partitions:
    """Partition columns, and each file's values for them (aligned with ``columns``)."""

    columns: tuple[PartitionColumn, ...]
    values: tuple[tuple[Any, ...], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def row(self, i: int) -> dict[str, Any]:
        """File ``i``'s partition values by column name (None: null)."""
        return dict(zip(self.names, self.values[i], strict=True))

    def reads(self, expr: Expr) -> bool:
        """Whether the filter reads any partition column."""
        names = {(n,) for n in self.names}
        return any(p in names for p in columns_of(expr))

    def only_partitions(self, expr: Expr) -> bool:
        """Whether the filter reads nothing but partition columns (then pruning is exact)."""
        names = {(n,) for n in self.names}
        return all(p in names for p in columns_of(expr))

    def truths(self, expr: Expr) -> list[Truth]:
        """What each file's partition values prove about the filter (FALSE: skip the file).

        Literals are typed for the partition columns first (``bind``): comparing an
        int64 partition with a string is a :class:`~planner.filters.FilterError`.
        """
        bound = bind(expr, {(c.name,): c.type for c in self.columns if c.type != "null"})
        out = []
        for vals in self.values:
            stats = {(c.name,): _zone(v) for c, v in zip(self.columns, vals, strict=True)}
            out.append(zone_truth(bound, stats))
        return out

    def select(self, expr: Expr | None) -> list[int]:
        """Indices of the files that may hold rows the filter keeps, in order."""
        if expr is None:
            return list(range(len(self.values)))
        return [i for i, t in enumerate(self.truths(expr)) if t is not Truth.FALSE]


def _zone(v: Any) -> ColumnStats:
    # one row stands for all of the file's rows: they share the value
    return ColumnStats(1, nulls=1) if v is None else ColumnStats(1, 0, v, v)


def parse_partition_path(relative: str) -> tuple[tuple[str, str | None], ...]:
    """The ``key=value`` directories of a path relative to the dataset root, unescaped.

    The last component is the file's name and never a partition; a null value is None.
    """
    out: dict[str, str | None] = {}
    for part in relative.split("/")[:-1]:
        key, eq, raw = part.partition("=")
        if not eq or not key:
            continue
        key = unquote(key)
        if key in out:
            raise PartitionError(f"partition key {key!r} appears twice in {relative!r}")
        value = unquote(raw)
        out[key] = None if raw == HIVE_NULL or value == "" else value
    return tuple(out.items())


def _infer_type(texts: Sequence[str]) -> str:
    if not texts:
        return "null"
    if all(_INT.fullmatch(t) for t in texts) and all(
            _INT64[0] <= int(t) <= _INT64[1] for t in texts):
        return "int64"
    if all(_FLOAT.fullmatch(t) and math.isfinite(float(t)) for t in texts):
        return "float64"
    return "string"


def _convert(text: str | None, type_name: str) -> Any:
    if text is None:
        return None
    if type_name == "int64":
        return int(text)
    if type_name == "float64":
        return float(text)
    return text


def infer_partitions(relatives: Sequence[str]) -> Partitions:
    """Partition columns and values of files given by their paths below the root."""
    parsed = [dict(parse_partition_path(r)) for r in relatives]
    names: dict[str, None] = {}
    for p in parsed:
        names.update(dict.fromkeys(p))
    columns = tuple(
        PartitionColumn(n, _infer_type([p[n] for p in parsed if p.get(n) is not None]))
        for n in names)
    values = tuple(tuple(_convert(p.get(c.name), c.type) for c in columns) for p in parsed)
    return Partitions(columns, values)


def format_partition_path(row: Mapping[str, Any]) -> str:
    """The directories a writer puts a file with these partition values in (``k=v/...``).

    Escapes what Hive escapes (``/``, ``=``, ``%``, control characters...), so
    :func:`parse_partition_path` gives the values back (as text; floats by repr).
    """
    parts = []
    for key, v in row.items():
        if v is None or v == "":
            text = HIVE_NULL
        elif isinstance(v, bool):
            text = "true" if v else "false"
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise PartitionError(f"cannot partition by a non-finite float ({key}={v})")
            text = _escape(repr(v))
        else:
            text = _escape(str(v))
        parts.append(f"{_escape(key)}={text}")
    return "".join(p + "/" for p in parts)


def _escape(s: str) -> str:
    # what Spark's escapePathName leaves alone among ASCII punctuation; the rest is %XX
    return quote(s, safe=" -_.,;+@!$&()~<>|`}")
