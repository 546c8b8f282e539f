"""Spark's pushed filters on partition columns, as ``planner.filters`` expressions.

Spark pushes a conjunction: every filter must hold.  The ones that read only
partition columns are translated (comparisons, ``IN``, null tests, ``NOT``,
``STARTS WITH``) and decide whole files from their directory names
(``planner.partitions``), exactly; the rest stay with the other pruning and
with Spark.  Dropping a conjunct only keeps more files, so pruning stays sound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner import filters as F

_OPS = {"EqualTo": "==", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
        "LessThanOrEqual": "<="}


def to_expr(f: Any, names: set[str]) -> F.Expr | None:
    """The filter as an expression, if it reads only partition columns ``names``."""
    kind = type(f).__name__
    if kind == "Not":
        inner = to_expr(f.child, names)
        return None if inner is None else F.Not(inner)
    attr = tuple(getattr(f, "attribute", ()))
    if len(attr) != 1 or attr[0] not in names:
        return None
    path = attr
    if kind in ("IsNull", "IsNotNull"):
        return F.IsNull(path, kind == "IsNotNull")
    value = getattr(f, "value", None)
    if kind == "EqualNullSafe":  # true or false, never null (so NOT of it is exact too)
        if value is None:
            return F.IsNull(path, False)
        return F.And((F.IsNull(path, True), F.Compare("==", path, value)))
    if kind in _OPS and value is not None:
        return F.Compare(_OPS[kind], path, value)
    if kind == "In" and isinstance(value, (tuple, list)) and None not in value:
        return F.IsIn(path, tuple(value))
    if kind == "StringStartsWith" and isinstance(value, str):
        return F.StartsWith(path, value)
    return None


def split(filters: Sequence[Any], types: dict[str, str]
          ) -> tuple[F.Expr | None, list[Any], list[Any]]:
    """``(expression, decided, others)``: the conjunction of the filters on partition
    columns (``types``: their names and type names), those filters, and the rest
    (which includes a filter whose literal does not fit its column's type)."""
    keys = set(types)
    bound = {(n,): t for n, t in types.items() if t != "null"}
    exprs, decided, others = [], [], []
    for f in filters:
        e = to_expr(f, keys) if keys else None
        if e is not None:
            try:
                F.bind(e, bound)
            except F.FilterError:
                e = None
        if e is None:
            others.append(f)
        else:
            exprs.append(e)
            decided.append(f)
    expr = None if not exprs else exprs[0] if len(exprs) == 1 else F.And(tuple(exprs))
    return expr, decided, others
