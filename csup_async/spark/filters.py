"""Which of Spark's pushed filters a file's metadata alone can decide.

CSUP metadata has no min/max statistics, but it knows, per file, whether a
path exists at all and whether its column holds any value (a field column of
None is null in every row).  That decides a filter for the whole file when
its column is null throughout: comparisons, ``IN`` and the string matches are
then never true (SQL's null), ``IS NOT NULL`` is false and ``IS NULL`` true.
A file where some pushed filter can never be true is dropped with no data
read; a filter that is true for every row of every file left is not handed
back to Spark.  Everything else stays with Spark, which evaluates it on the
rows (we never filter rows ourselves, so Spark's comparison semantics hold).

Opt-in (``pushdown=true``) because of a PySpark 4.3.0 bug: the JVM stores the
read info (partitions and read function) made while pushing filters on the
loaded relation (``PythonScanBuilder.pushFilters`` calls
``PythonDataSourceV2.setReadInfo``) and ``getOrCreateReadInfo`` gives it to a
later scan of the same DataFrame that pushes no filter, so files pruned for
``df.where(...)`` would be missing from a later ``df.count()``.  Reporting
every filter as unhandled would not make pruning safe: the partitions are what
is reused, and nothing tells ``read()`` which query it serves.  Safe uses: one
query per ``load()``, or queries that all push the same filters.

Filters are matched by class name so this module works on the plain
dataclasses of ``pyspark.sql.datasource`` without importing pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import planner as P

from ..meta import FileMeta

TRUE, FALSE, NULL, UNKNOWN = "true", "false", "null", "unknown"

_NULL_ON_NULL = frozenset({"EqualTo", "GreaterThan", "GreaterThanOrEqual", "LessThan",
                           "LessThanOrEqual", "In", "StringStartsWith", "StringEndsWith",
                           "StringContains"})
PUSHABLE = _NULL_ON_NULL | {"IsNull", "IsNotNull", "EqualNullSafe", "Not"}


def filter_path(attribute: Sequence[str], paths: Mapping[str, str]) -> str | None:
    """The CSUP path of a filter's column (None when the column is not in the schema)."""
    if not attribute or attribute[0] not in paths:
        return None
    head = paths[attribute[0]]
    rest = P.format_path(tuple(attribute[1:])) if len(attribute) > 1 else ""
    return ".".join(p for p in (head, rest) if p)


def outcome(f: Any, is_null: Callable[[str], bool], paths: Mapping[str, str]) -> str:
    """TRUE/FALSE/NULL when ``f`` has that value in every row of the file, else UNKNOWN."""
    kind = type(f).__name__
    if kind == "Not":
        inner = outcome(f.child, is_null, paths)
        return {TRUE: FALSE, FALSE: TRUE}.get(inner, inner)
    if kind not in PUSHABLE:
        return UNKNOWN
    path = filter_path(getattr(f, "attribute", ()), paths)
    if path is None or not is_null(path):
        return UNKNOWN
    if kind == "IsNull":
        return TRUE
    if kind == "IsNotNull":
        return FALSE
    if kind == "EqualNullSafe":
        return TRUE if f.value is None else FALSE
    return NULL


def null_paths(meta: FileMeta, paths: Sequence[str]) -> set[str]:
    """The paths that are null in every row of the file: missing there, or all null."""
    if not paths:
        return set()
    res = P.resolve_paths(meta, list(dict.fromkeys(paths)))
    return set(res.missing_paths) | set(res.null_paths)


def decide(filters: Sequence[Any], metas: Sequence[FileMeta], paths: Mapping[str, str]
           ) -> tuple[list[int], list[str | None], list[Any]]:
    """Per file, the index of the first filter that rules it out; the filters Spark must keep.

    Returns ``(kept, reasons, remaining)``: indices of files that may have
    matching rows, the ruling filter's text for each file (None when kept) and
    the filters (the same objects) Spark still has to evaluate.
    """
    wanted = [p for f in filters for p in _attr_paths(f, paths)]
    decided_true = [True] * len(filters)
    kept: list[int] = []
    reasons: list[str | None] = []
    for i, meta in enumerate(metas):
        nulls = null_paths(meta, wanted)
        outs = [outcome(f, nulls.__contains__, paths) for f in filters]
        ruled = next((k for k, o in enumerate(outs) if o in (FALSE, NULL)), None)
        if ruled is not None:
            reasons.append(describe(filters[ruled]))
            continue
        reasons.append(None)
        kept.append(i)
        for k, o in enumerate(outs):
            if o != TRUE:
                decided_true[k] = False
    remaining = [f for f, t in zip(filters, decided_true, strict=True) if not t]
    return kept, reasons, remaining


def _attr_paths(f: Any, paths: Mapping[str, str]) -> list[str]:
    if type(f).__name__ == "Not":
        return _attr_paths(f.child, paths)
    p = filter_path(getattr(f, "attribute", ()), paths)
    return [] if p is None else [p]


def describe(f: Any) -> str:
    """Short SQL-like text of a filter, for reports (values are the user's own literals)."""
    kind = type(f).__name__
    if kind == "Not":
        return f"NOT ({describe(f.child)})"
    col = ".".join(getattr(f, "attribute", ()))
    ops = {"EqualTo": "=", "EqualNullSafe": "<=>", "GreaterThan": ">",
           "GreaterThanOrEqual": ">=", "LessThan": "<", "LessThanOrEqual": "<=", "In": "IN",
           "StringStartsWith": "STARTS WITH", "StringEndsWith": "ENDS WITH",
           "StringContains": "CONTAINS"}
    if kind == "IsNull":
        return f"{col} IS NULL"
    if kind == "IsNotNull":
        return f"{col} IS NOT NULL"
    if kind in ops:
        return f"{col} {ops[kind]} {f.value!r}"
    return kind
