"""A row filter's expression model and how one row is judged.

A filter is a tree of frozen dataclasses (so it pickles to Spark executors, prints,
and compares), built in Python with :func:`col` and operators::

    (col("user.id") == 7) & col("ts").ge("2024-01-01T00:00:00Z") | ~col("kind").isin(["a"])

or parsed from the CLI's ``--where`` text by :func:`planner.filtertext.parse_filter`.

**Semantics** are SQL's ``WHERE``: a comparison with a null, with a field the
row's super type does not have, or with a value of another kind than the literal
(a string against a number, a record), is *unknown*; ``and``/``or``/``not`` follow
three-valued (Kleene) logic, and a row is kept only when the whole filter is
*true*.  So ``not (x = 1)`` does not keep rows where ``x`` is null.  Floats compare
as IEEE does (NaN equals nothing and is not ordered; ``NaN != 1`` is true), except
in an ``IsIn`` marked ``exact`` (pyarrow's ``is_in``, for the list form of filters:
NaN is in a list holding NaN, ``0.0`` is not ``-0.0``).

:func:`outcome` and :func:`matches` are the row-by-row reference that the array
evaluation (``csup_async.arrays.filtering``) is tested against.  What statistics can
prove about a filter, and typing its literals to a file's columns, are in
:mod:`planner.filters`, which re-exports every public name here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Union

from .likes import like_prefix, like_regex
from .literals import INT64_MIN, FilterError, check_literal, duration_ns, time_ns
from .paths import format_path, parse_path

__all__ = [
    "And", "Column", "Compare", "Expr", "FilterError", "IsIn", "IsNull", "Like", "Not", "Or",
    "StartsWith", "checked_expr", "col", "columns_of", "matches", "order_key", "outcome",
    "value_kind",
]


# ------------------------------------------------------------ the model ---

_OPS = ("==", "!=", "<", "<=", ">", ">=")
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _Combinable:
    """``&``, ``|`` and ``~`` for every expression; ``and``/``or`` are refused, because
    Python would silently evaluate them on the expressions' truthiness."""

    __slots__ = ()

    def __and__(self, other: Expr) -> And:
        return And((checked_expr(self), checked_expr(other)))

    def __or__(self, other: Expr) -> Or:
        return Or((checked_expr(self), checked_expr(other)))

    def __invert__(self) -> Not:
        return Not(checked_expr(self))

    def __bool__(self) -> bool:
        raise FilterError("a filter has no truth value: combine filters with & | ~ "
                          "(not 'and', 'or', 'not'), and parenthesise comparisons")


@dataclass(frozen=True, slots=True, eq=False)
class Column:
    """A column path; comparing it with a value makes a :class:`Compare`."""

    path: tuple[str, ...]

    def __repr__(self) -> str:
        return f"col({format_path(self.path)!r})"

    # comparisons build expressions (so Column is hashed by identity, like numpy arrays)
    def __eq__(self, value: object) -> Compare:  # type: ignore[override]
        return Compare("==", self.path, _literal(value))

    def __ne__(self, value: object) -> Compare:  # type: ignore[override]
        return Compare("!=", self.path, _literal(value))

    def __lt__(self, value: Any) -> Compare:
        return Compare("<", self.path, _literal(value))

    def __le__(self, value: Any) -> Compare:
        return Compare("<=", self.path, _literal(value))

    def __gt__(self, value: Any) -> Compare:
        return Compare(">", self.path, _literal(value))

    def __ge__(self, value: Any) -> Compare:
        return Compare(">=", self.path, _literal(value))

    __hash__ = object.__hash__

    def eq(self, value: Any) -> Compare:
        return self == value

    def ne(self, value: Any) -> Compare:
        return self != value

    def lt(self, value: Any) -> Compare:
        return self < value

    def le(self, value: Any) -> Compare:
        return self <= value

    def gt(self, value: Any) -> Compare:
        return self > value

    def ge(self, value: Any) -> Compare:
        return self >= value

    def isin(self, values: Iterable[Any]) -> IsIn:
        vals = tuple(_literal(v) for v in values)
        return IsIn(self.path, vals)

    def is_null(self) -> IsNull:
        return IsNull(self.path, False)

    def is_not_null(self) -> IsNull:
        return IsNull(self.path, True)

    def like(self, pattern: str) -> Like:
        """SQL's ``like``: ``%`` any run of characters, ``_`` one, ``\\`` escapes."""
        if not isinstance(pattern, str):
            raise FilterError("like takes a string pattern")
        return Like(self.path, pattern)

    def between(self, low: Any, high: Any) -> And:
        """``low <= x <= high`` (both ends included, as SQL's ``between``)."""
        return And((Compare(">=", self.path, _literal(low)),
                    Compare("<=", self.path, _literal(high))))

    def startswith(self, prefix: str | bytes) -> StartsWith:
        if not isinstance(prefix, (str, bytes)):
            raise FilterError(f"startswith takes a string or bytes, not {type(prefix).__name__}")
        return StartsWith(self.path, prefix)


@dataclass(frozen=True, slots=True)
class Compare(_Combinable):
    op: str
    path: tuple[str, ...]
    value: Any
    #: :func:`value_kind` of ``value``, worked out once here so evaluation
    #: (``arrays/filtering``) only reads it and never calls back into the planner.
    kinds: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise FilterError(f"unknown comparison {self.op!r}")
        object.__setattr__(self, "kinds", (value_kind(self.value),))


@dataclass(frozen=True, slots=True)
class IsIn(_Combinable):
    """Membership in ``values``.  By default by ``==`` (SQL's and SuperDB's ``in``:
    NaN is in no list, ``-0.0 in (0.0)``).  ``exact``: by identity of the value, as
    pyarrow's ``is_in`` (which the list form of a filter follows): a NaN is in a list
    holding a NaN, and ``0.0`` and ``-0.0`` are different values; on a float32 (float16)
    column a float literal is first rounded to that type, as pyarrow casts its value
    set to the column's type."""

    path: tuple[str, ...]
    values: tuple[Any, ...]
    exact: bool = False
    #: :func:`value_kind` of each of ``values`` (see :attr:`Compare.kinds`).
    kinds: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(value_kind(v) for v in self.values))


@dataclass(frozen=True, slots=True)
class IsNull(_Combinable):
    path: tuple[str, ...]
    negated: bool


@dataclass(frozen=True, slots=True)
class StartsWith(_Combinable):
    path: tuple[str, ...]
    prefix: str | bytes


@dataclass(frozen=True, slots=True)
class Like(_Combinable):
    """SQL's ``like`` on a string column: ``%`` any run, ``_`` one character, a
    backslash escapes either; the pattern matches the whole value."""

    path: tuple[str, ...]
    pattern: str
    #: The pattern compiled once (:func:`like_prefix`, :func:`like_regex`), so
    #: evaluation only reads it: the literal text before the first wildcard, the
    #: pattern from it on, and the whole pattern's regular expression.
    prefix: str = field(init=False, repr=False, compare=False)
    rest: str = field(init=False, repr=False, compare=False)
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        prefix, rest = like_prefix(self.pattern)
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "rest", rest)
        object.__setattr__(self, "regex", like_regex(self.pattern))


@dataclass(frozen=True, slots=True)
class And(_Combinable):
    parts: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or(_Combinable):
    parts: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not(_Combinable):
    part: Expr


Expr = Union[Compare, IsIn, IsNull, StartsWith, Like, And, Or, Not]  # noqa: UP007
_LEAVES = (Compare, IsIn, IsNull, StartsWith, Like)


def col(path: str | tuple[str, ...] | list[str]) -> Column:
    """The column at ``path``: a dotted path string, or its parts as a tuple/list."""
    if isinstance(path, str):
        return Column(parse_path(path))
    parts = tuple(path)
    if not all(isinstance(p, str) for p in parts):
        raise FilterError("a column path's parts are strings")
    return Column(parts)


def checked_expr(x: Any) -> Expr:
    if isinstance(x, (*_LEAVES, And, Or, Not)):
        return x
    raise FilterError(f"not a filter: {x!r} (build one from col(...) comparisons)")


def _literal(v: Any) -> Any:
    if v is None:
        raise FilterError("a comparison with None is never true (SQL semantics): use "
                          ".is_null() / .is_not_null()")
    if isinstance(v, (Column, *_LEAVES, And, Or, Not)):
        raise FilterError("comparing two columns is not supported; compare with a value")
    return check_literal(v)


def columns_of(expr: Expr) -> list[tuple[str, ...]]:
    """The paths a filter reads, in first-use order, each once."""
    seen: dict[tuple[str, ...], None] = {}

    def walk(e: Expr) -> None:
        if isinstance(e, (And, Or)):
            for p in e.parts:
                walk(p)
        elif isinstance(e, Not):
            walk(e.part)
        else:
            seen.setdefault(e.path, None)

    walk(checked_expr(expr))
    return list(seen)


# ------------------------------------------------------ row evaluation ---

T, F, N = True, False, None  # a row's outcome: true, false, unknown


def and3(a: bool | None, b: bool | None) -> bool | None:
    if a is F or b is F:
        return F
    if a is N or b is N:
        return N
    return T


def or3(a: bool | None, b: bool | None) -> bool | None:
    if a is T or b is T:
        return T
    if a is N or b is N:
        return N
    return F


def not3(a: bool | None) -> bool | None:
    return N if a is N else not a


def order_key(x: Any) -> Any:
    """A value as it orders: times and durations as their int64 nanoseconds (so NaT,
    int64's minimum, is the smallest, as in CSUP), anything else as itself."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "Mm":
        return x
    if dtype.str in _NS_DTYPES:  # the common case, fast: the value is the count
        v = x.item()
        return INT64_MIN if v is None else v
    return time_ns(x) if dtype.kind == "M" else duration_ns(x)


_NS_DTYPES = frozenset(("<M8[ns]", "<m8[ns]", ">M8[ns]", ">m8[ns]"))


def _compare(op: str, x: Any, v: Any) -> bool:
    return ordered(op, order_key(x), order_key(v))


def is_float(x: Any) -> bool:
    return isinstance(x, float) or getattr(getattr(x, "dtype", None), "kind", None) == "f"


def _identical(x: Any, v: Any) -> bool:
    """Whether the value ``x`` is the literal ``v`` (both in their order,
    :func:`order_key`): ``==``, except that on a float value a NaN is a NaN and the
    sign of a zero counts (an integer literal is a positive zero), as pyarrow's
    ``is_in`` matches values.  A value of another type (an int column against
    ``-0.0``) compares by ``==``: pyarrow casts the literal to the column's type."""
    if not is_float(x):
        return bool(x == v)
    if x != x:
        return bool(v != v)
    if x != v:
        return False
    return x != 0 or math.copysign(1.0, x) == math.copysign(1.0, v)


def is_nan(v: Any) -> bool:
    return is_float(v) and bool(v != v)


def ordered(op: str, x: Any, v: Any) -> bool:
    """``x op v`` for values already in their order (:func:`order_key`)."""
    if op == "==":
        return bool(x == v)
    if op == "!=":
        return bool(x != v)
    if op == "<":
        return bool(x < v)
    if op == "<=":
        return bool(x <= v)
    if op == ">":
        return bool(x > v)
    return bool(x >= v)




def value_kind(x: Any) -> str:
    """Which values compare with which: numbers with numbers, strings with strings..."""
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return "bool"
    dtype = getattr(x, "dtype", None)
    if isinstance(x, (int, float)) or (dtype is not None and dtype.kind in "iuf"):
        return "number"
    if isinstance(x, str):
        return "str"
    if isinstance(x, (bytes, bytearray)):
        return "bytes"
    if dtype is not None and dtype.kind in "Mm":
        return dtype.kind
    return type(x).__name__


def _lookup(row: Any, path: tuple[str, ...]) -> Any:
    cur = row
    for name in path:
        if not isinstance(cur, dict) or name not in cur:
            return None
        cur = cur[name]
    return cur


def outcome(expr: Expr, row: Any) -> bool | None:
    """The filter's three-valued outcome for one row (a dict as ``read_rows`` gives)."""
    if isinstance(expr, And):
        out: bool | None = T
        for p in expr.parts:
            out = and3(out, outcome(p, row))
        return out
    if isinstance(expr, Or):
        out = F
        for p in expr.parts:
            out = or3(out, outcome(p, row))
        return out
    if isinstance(expr, Not):
        return not3(outcome(expr.part, row))
    x = _lookup(row, expr.path)
    if isinstance(expr, IsNull):
        return (x is not None) if expr.negated else (x is None)
    if x is None:
        return N
    # a value of another kind than the literal (a union member, a nested value) is
    # unknown, as a null is: it neither matches nor fails to match
    kind = value_kind(x)
    if isinstance(expr, Compare):
        return _compare(expr.op, x, expr.value) if value_kind(expr.value) == kind else N
    if isinstance(expr, IsIn):
        same = [v for v in expr.values if value_kind(v) == kind]
        if expr.values and not same:
            return N
        if expr.exact:
            key = order_key(x)
            return any(_identical(key, order_key(v)) for v in same)
        return any(_compare("==", x, v) for v in same)
    if isinstance(expr, StartsWith):
        return x.startswith(expr.prefix) if value_kind(expr.prefix) == kind else N
    if isinstance(expr, Like):
        if not isinstance(x, str) or value_kind(expr.pattern) != kind:
            return N
        return like_regex(expr.pattern).fullmatch(x) is not None
    raise FilterError(f"not a filter: {expr!r}")


def matches(expr: Expr, row: Any) -> bool:
    """Whether a row is kept: the filter is true for it (SQL ``WHERE``)."""
    return outcome(expr, row) is T
