"""Which of Spark's pushed filters a file's metadata alone can decide.

Two proofs, both from the metadata the driver loaded (no data read):

* **Null columns.**  Per file, whether a path exists at all and whether its
  column holds any value (a field column of None is null in every row).  That
  decides a filter for the whole file when its column is null throughout:
  comparisons, ``IN`` and the string matches are then never true (SQL's null),
  ``IS NOT NULL`` is false and ``IS NULL`` true.
* **Segment statistics** (a SuperDB file: each object's min/max, the same
  ``zone_truth``: a file is ruled out when every object is).  Spark's filters are
  mapped to ``planner.filters``
  expressions (:func:`to_expr`: ``EqualTo``, the four comparisons, ``In``,
  ``IsNull``, ``IsNotNull``, ``StringStartsWith``, ``EqualNullSafe``, ``And``,
  ``Or``, ``Not``), and ``planner.pruning`` folds each file's segment bounds into
  file bounds: a file where their conjunction is false for every row is dropped.

A file where some pushed filter can never be true is dropped with no data
read; a filter that is true for every row of every file left is not handed
back to Spark.  Everything else stays with Spark, which evaluates it on the
rows (we never filter rows ourselves, so Spark's comparison semantics hold).

The mapping keeps a proof sound under Spark's semantics, not just ours: a
filter on a float or double (Spark orders NaN above every number and equals
it to itself; we follow IEEE) or with a literal of another kind (decimals,
dates) is not mapped; a timestamp literal is widened by one microsecond each
way, because Spark sees CSUP's nanosecond times floored to microseconds (so
such a filter only prunes and is always handed back).  ``NOT`` of a widened
comparison is widened on the other side.

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

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import planner as P
from planner import filters as F
from planner.pruning import file_truth

from ..format.colvalue import segment_stats
from ..format.meta import FileMeta

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


def null_paths(meta: Any, paths: Sequence[str]) -> set[str]:
    """The paths that are null in every row of the file: missing there, or all null (a
    SuperDB file: those no super type has)."""
    if not paths:
        return set()
    if _superdb(meta):
        from ..scan.superdb.columns import type_at

        return {p for p in dict.fromkeys(paths) if all(
            type_at(t, P.parse_path(p)) is None for t in meta.super_types)}
    res = P.resolve_paths(meta, list(dict.fromkeys(paths)))
    return set(res.missing_paths) | set(res.null_paths)


def _superdb(meta: Any) -> bool:
    """A SuperDB file's metadata (its objects' min/max prove filters: v23, v16, v14)."""
    return hasattr(meta, "objects") and not isinstance(meta, FileMeta)


def _provable(meta: Any) -> bool:
    return isinstance(meta, FileMeta) or _superdb(meta)


def _truth(meta: Any, expr: F.Expr) -> F.Truth:
    """What a file's statistics prove of ``expr``: our segment statistics, or a SuperDB
    file's objects' min/max (the same ``zone_truth``)."""
    if _superdb(meta):
        from ..scan.superdb.pruning import file_truth as superdb_truth

        return superdb_truth(meta, expr)
    return file_truth(meta, expr, segment_stats)


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
        if not _provable(meta):  # a BSUP stream: no proof either way; its rows are
            reasons.append(None)  # filtered by Spark
            kept.append(i)
            decided_true = [False] * len(filters)
            continue
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
    kept, reasons, decided_true = _by_statistics(filters, metas, paths, kept, reasons,
                                                 decided_true)
    remaining = [f for f, t in zip(filters, decided_true, strict=True) if not t]
    return kept, reasons, remaining


def conjunction(filters: Sequence[Any], paths: Mapping[str, str]) -> F.Expr | None:
    """The mapped filters (:func:`to_expr`) as one expression, true on every row all of
    Spark's filters are true on (None: none maps): what statistics may rule rows out by."""
    mapped = [m.expr for f in filters if (m := to_expr(f, paths)) is not None]
    if not mapped:
        return None
    return mapped[0] if len(mapped) == 1 else F.And(tuple(mapped))


def _by_statistics(filters: Sequence[Any], metas: Sequence[FileMeta],
                   paths: Mapping[str, str], kept: list[int], reasons: list[str | None],
                   decided_true: list[bool]) -> tuple[list[int], list[str | None], list[bool]]:
    """Files the mapped filters' conjunction is false in, by segment statistics, and the
    exactly mapped filters the statistics prove true in every file left."""
    mapped = [(k, m) for k, f in enumerate(filters) if (m := to_expr(f, paths)) is not None]
    if not mapped or not kept:
        return kept, reasons, decided_true
    conj = conjunction(filters, paths)
    assert conj is not None
    text = "statistics of " + " AND ".join(describe(filters[k]) for k, _ in mapped)
    still: list[int] = []
    for i in kept:
        if not _provable(metas[i]):
            still.append(i)
            continue
        if _truth(metas[i], conj) is F.Truth.FALSE:
            reasons[i] = text
        else:
            still.append(i)
    decided = list(decided_true)
    for k, m in mapped:
        if m.exact and not decided[k] and still and all(
                _provable(metas[i]) and _truth(metas[i], m.expr) is F.Truth.TRUE
                for i in still):
            decided[k] = True
    return still, reasons, decided


@dataclass(frozen=True, slots=True)
class Mapped:
    """A Spark filter as an expression: true on every row Spark's filter is true on;
    ``exact`` when true on exactly those rows (so a proof that it is true is Spark's too)."""

    expr: F.Expr
    exact: bool


_CMP = {"EqualTo": "==", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
        "LessThanOrEqual": "<="}
_NEGATED = {"==": "!=", ">": "<=", ">=": "<", "<": ">=", "<=": ">"}
_MICRO = _dt.timedelta(microseconds=1)


def to_expr(f: Any, paths: Mapping[str, str], negated: bool = False) -> Mapped | None:
    """Spark's filter (``NOT`` of it when ``negated``) as a ``planner.filters`` expression
    that holds wherever Spark's does (the module docstring says how), or None."""
    kind = type(f).__name__
    if kind == "Not":
        return to_expr(f.child, paths, not negated)
    if kind in ("And", "Or"):  # not pushed by PySpark 4.3, mapped should they come
        left, right = to_expr(f.left, paths, negated), to_expr(f.right, paths, negated)
        if (kind == "And") != negated:  # a conjunction (De Morgan under NOT)
            parts = [m for m in (left, right) if m is not None]
            if not parts:
                return None
            exact = left is not None and right is not None and left.exact and right.exact
            return Mapped(parts[0].expr if len(parts) == 1
                          else F.And((parts[0].expr, parts[1].expr)), exact)
        if left is None or right is None:
            return None
        return Mapped(F.Or((left.expr, right.expr)), left.exact and right.exact)
    path = filter_path(getattr(f, "attribute", ()), paths)
    if path is None:
        return None
    try:
        p = P.parse_path(path)
    except P.InvalidPathError:
        return None
    if kind in ("IsNull", "IsNotNull"):
        return Mapped(F.IsNull(p, (kind == "IsNotNull") != negated), True)
    value = getattr(f, "value", None)
    if kind == "In":
        vals = [_literal(v) for v in (value or ()) if v is not None]
        if not vals or any(v is _NO for v in vals):
            return None
        if isinstance(vals[0], _dt.datetime):
            return _time_in(p, vals, negated)
        exact = None not in value
        leaf: F.Expr = F.IsIn(p, tuple(vals))
        return Mapped(F.Not(leaf) if negated else leaf, exact or not negated)
    if kind == "StringStartsWith" and isinstance(value, str):
        leaf = F.StartsWith(p, value)
        return Mapped(F.Not(leaf) if negated else leaf, True)
    v = _literal(value)
    if v is _NO or v is None:
        return None
    if kind == "EqualNullSafe":  # never null, so NOT of it is exact too
        if isinstance(v, _dt.datetime):
            return None
        leaf = F.And((F.IsNull(p, True), F.Compare("==", p, v)))
        return Mapped(F.Not(leaf) if negated else leaf, True)
    if kind not in _CMP:
        return None
    op = _NEGATED[_CMP[kind]] if negated else _CMP[kind]
    if isinstance(v, _dt.datetime):
        return _time_compare(p, op, v)
    return Mapped(F.Compare(op, p, v), True)


def _time_compare(p: tuple[str, ...], op: str, v: _dt.datetime) -> Mapped:
    """Spark compares our time floored to microseconds: widen by one microsecond (at
    ``datetime.min``/``max``, where it cannot, only "not null" survives)."""
    try:
        return _widened(p, op, v)
    except OverflowError:
        return Mapped(F.IsNull(p, True), False)


def _widened(p: tuple[str, ...], op: str, v: _dt.datetime) -> Mapped:
    if op in (">", ">="):
        return Mapped(F.Compare(">", p, v - _MICRO), False)
    if op in ("<", "<="):
        return Mapped(F.Compare("<", p, v + _MICRO), False)
    if op == "==":
        return Mapped(F.And((F.Compare(">", p, v - _MICRO), F.Compare("<", p, v + _MICRO))),
                      False)
    return Mapped(F.IsNull(p, True), False)  # != : only "not null" survives the flooring


def _time_in(p: tuple[str, ...], vals: list[Any], negated: bool) -> Mapped:
    if negated:
        return Mapped(F.IsNull(p, True), False)
    return Mapped(F.Or(tuple(_time_compare(p, "==", v).expr for v in vals)), False)


_NO = object()


def _literal(v: Any) -> Any:
    """Spark's literal as ours, when both order it alike; ``_NO`` when not mapped
    (floats: NaN orders differently; decimals, dates, naive timestamps)."""
    if v is None:
        return None
    if isinstance(v, (bool, int, str, bytes)):
        return v
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        return v
    return _NO


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
        v = f.value
        return f"{col} {ops[kind]} {v.isoformat() if isinstance(v, _dt.datetime) else v!r}"
    return kind
