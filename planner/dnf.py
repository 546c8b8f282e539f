"""pyarrow's list form of a filter (``filters=[("a", ">", 3), ...]``) as an expression.

People bring filters from ``pyarrow.parquet.read_table(filters=...)``, pandas and
Dask in *disjunctive normal form*: a list of ``(column, op, value)`` tuples is their
AND; a list of such lists is the OR of those ANDs.  The translation keeps pyarrow's
meaning exactly, including where it differs from SQL's: ``not in`` keeps the rows
whose value is null (pyarrow negates a membership test that is false for a null),
and ``in`` with ``None`` among the values matches nulls too; ``in`` matches values
as pyarrow's ``is_in`` does (:attr:`IsIn.exact`: a NaN is in a list holding a NaN,
``0.0`` is not ``-0.0``), not by SQL's ``==``.  A column is one field
name, as pyarrow's (``"a.b"`` is a field so named); a tuple of names is a nested
path.  The operators are pyarrow's: ``=`` ``==`` ``!=`` ``<`` ``<=`` ``>`` ``>=``
``in`` ``not in``; any other is a :class:`FilterError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from csup_async.model.errors import CsupError

from .filters import And, Compare, Expr, IsIn, IsNull, Not, Or
from .filtertext import parse_filter
from .literals import FilterError, check_literal

__all__ = ["as_expr", "from_dnf", "is_dnf"]

_COMPARE = {"=": "==", "==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_OPS = (*_COMPARE, "in", "not in")


def is_dnf(filter: Any) -> bool:
    """Whether ``filter`` is written in the list form (a list, not an expression)."""
    return isinstance(filter, list)


def _path(column: Any) -> tuple[str, ...]:
    if isinstance(column, str) and column:
        return (column,)
    if isinstance(column, tuple) and column and all(isinstance(p, str) for p in column):
        return column
    raise FilterError(f"a filter tuple's column is a field name (or a tuple of names for a "
                      f"nested field), not {column!r}")


def _predicate(item: Any) -> Expr:
    if not (isinstance(item, (tuple, list)) and len(item) == 3):
        raise FilterError(f"each filter is a (column, op, value) tuple, not {item!r}")
    column, op, value = item
    path = _path(column)
    if not isinstance(op, str) or op.lower() not in _OPS:
        raise FilterError(f"unknown filter operator {op!r} in {item!r}; use one of "
                          f"{', '.join(_OPS)}")
    op = op.lower()
    if op in _COMPARE:
        if value is None:
            raise FilterError(f"{item!r} compares with None, which pyarrow never matches: "
                              "use ('col', 'in', [None]) for nulls")
        return Compare(_COMPARE[op], path, check_literal(value))
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise FilterError(f"{op!r} takes a list, tuple or set of values, not "
                          f"{type(value).__name__}")
    values = list(value)
    nulls = any(v is None for v in values)
    kept = tuple(check_literal(v) for v in values if v is not None)
    # pyarrow's is_in: NaN is in a list holding NaN, 0.0 and -0.0 are told apart
    member: Expr | None = IsIn(path, kept, exact=True) if kept else None
    if op == "in":  # true for a member; for a null only when None is listed
        parts = [p for p in (member, IsNull(path, False) if nulls else None) if p is not None]
        if not parts:
            return IsIn(path, (), exact=True)
        return parts[0] if len(parts) == 1 else Or(tuple(parts))
    # not in: pyarrow's ~is_in is true for a null unless None is listed
    if nulls:
        not_null = IsNull(path, True)
        return not_null if member is None else And((Not(member), not_null))
    if member is None:
        return Or((IsNull(path, True), IsNull(path, False)))  # every row
    return Or((Not(member), IsNull(path, False)))


def _conjunction(items: Sequence[Any]) -> Expr:
    if not items:
        raise FilterError("an empty list of filters (give at least one (column, op, "
                          "value) tuple, or no filter)")
    parts = tuple(_predicate(i) for i in items)
    return parts[0] if len(parts) == 1 else And(parts)


def from_dnf(filters: Sequence[Any]) -> Expr:
    """The expression of a list of tuples (AND) or a list of lists of tuples (OR of ANDs)."""
    if not isinstance(filters, (list, tuple)) or not filters:
        raise FilterError("filters= is a non-empty list of (column, op, value) tuples, or "
                          "a list of such lists")
    if all(isinstance(f, list) for f in filters):
        ors = tuple(_conjunction(f) for f in filters)
        return ors[0] if len(ors) == 1 else Or(ors)
    if any(isinstance(f, list) for f in filters) and not all(
            isinstance(f, tuple) for f in filters):
        raise FilterError("filters= mixes tuples and lists: give a list of tuples (AND) or "
                          "a list of lists of tuples (OR of ANDs)")
    return _conjunction(filters)


def as_expr(filter: Any, filters: Any = None, *, path: str | None = None) -> Any:
    """One filter expression from ``filter=`` (an expression, the ``--where`` text, or
    the list form) and ``filters=`` (the list form, as pyarrow names it); None when
    neither is given.  Both at once is a FilterError: which one wins is not obvious.
    ``path``: the object the filter is for, named by the error of a bad filter."""
    try:
        return _as_expr(filter, filters)
    except CsupError as e:
        raise e.with_path(path) from None


def _as_expr(filter: Any, filters: Any) -> Any:
    if filters is not None:
        if filter is not None:
            raise FilterError("pass filter= or filters=, not both")
        return from_dnf(filters)
    if isinstance(filter, str):
        return parse_filter(filter)
    if is_dnf(filter):
        return from_dnf(filter)
    return filter
