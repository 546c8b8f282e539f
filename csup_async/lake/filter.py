"""A pool filter: the common filter model (``planner.filters``), narrowed to a key range.

A pool scan takes the same filters as every other reader: ``--where`` text in
the CLI's grammar or ``col()`` expressions, with the same type errors (a
literal is bound to the pool key's type, ``id >= 'abc'`` on an int key is a
FilterError).  Only the conjuncts that compare the pool key with a literal
narrow the key range that prunes objects and seek-index chunks; the whole
filter is then evaluated exactly on the rows read, so a filter on other
columns (or an ``or`` of key comparisons) is never wrong, only less pruned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from planner.filters import (
    And,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Like,
    Not,
    Or,
    StartsWith,
    bind,
    columns_of,
)
from planner.filtertext import parse_filter
from planner.paths import format_path, parse_path

from ..model.types import PrimitiveType, Type, underlying
from ..scan.result import ScanResult
from .keys import KeyRange, as_value

__all__ = ["PoolFilter", "is_expr", "key_type_name", "pool_filter", "where_filter",
           "filter_columns", "keep_matching"]

_EXPRS = (Compare, IsIn, IsNull, StartsWith, Like, And, Or, Not)
_RANGE_OPS = ("==", "<", "<=", ">", ">=")


def is_expr(f: Any) -> bool:
    """Whether ``f`` is a filter expression of the common model (``col(...)`` built)."""
    return isinstance(f, _EXPRS)


def key_type_name(key_type: Type | None) -> str | None:
    """The primitive name of the pool key's type (None: unknown, or not primitive)."""
    if key_type is None:
        return None
    u = underlying(key_type)
    return u.name if isinstance(u, PrimitiveType) else None


def where_filter(wheres: Sequence[str]) -> Expr | None:
    """Repeated ``--where`` texts, each in the common grammar, ANDed."""
    exprs = [parse_filter(w) for w in wheres]
    if not exprs:
        return None
    return exprs[0] if len(exprs) == 1 else And(tuple(exprs))


class PoolFilter:
    """A filter bound to a pool key: ``expr`` (literals typed for the key) and the
    ``key_range`` its key conjuncts allow."""

    def __init__(self, expr: Expr | None, key_range: KeyRange) -> None:
        self.expr = expr
        self.key_range = key_range

    def __repr__(self) -> str:
        return f"PoolFilter({self.expr!r}, {self.key_range})"


def pool_filter(expr: Expr | str, key: tuple[str, ...], key_type: Type | None) -> PoolFilter:
    """``expr`` with its key literals typed, and the key range of its key conjuncts."""
    if isinstance(expr, str):
        expr = parse_filter(expr)
    tname = key_type_name(key_type)
    bound = bind(expr, {key: tname}) if tname is not None else expr
    r = KeyRange()
    conjuncts = bound.parts if isinstance(bound, And) else (bound,)
    for c in conjuncts:
        if not (isinstance(c, Compare) and c.path == key and c.op in _RANGE_OPS):
            continue
        v = as_value(c.value)
        if v is None:
            continue
        if c.op in (">", ">="):
            r = r.narrow(lo=v, lo_inclusive=c.op == ">=")
        elif c.op in ("<", "<="):
            r = r.narrow(hi=v, hi_inclusive=c.op == "<=")
        else:
            r = r.narrow(lo=v, hi=v)
    return PoolFilter(bound, r)


def filter_columns(expr: Expr) -> list[str]:
    """The columns (lake spelling: dotted) a filter reads."""
    return [format_path(p) for p in columns_of(expr)]


def keep_matching(res: ScanResult, expr: Expr, wanted: Sequence[str] | None) -> ScanResult:
    """The rows of ``res`` the filter is true for (SQL semantics), columns ``wanted``
    (None: every column of ``res`` but those read only for the filter)."""
    from ..arrays.filtering import evaluate

    by_path = {parse_path(c): a for c, a in res.columns.items()}
    typed = bind(expr, {p: a.type.name for p, a in by_path.items()
                        if isinstance(a.type, PrimitiveType)})
    keep = np.flatnonzero(evaluate(typed, by_path, res.num_rows))
    names = list(res.columns) if wanted is None else list(wanted)
    return ScanResult({c: res.columns[c].take(keep) for c in names}, int(keep.size),
                      res.stats, res.plan)
