"""Row filters as plain data: the expression model, how a row is judged, and what
segment statistics can prove about it.

The expression model (a tree of frozen dataclasses built with :func:`col`) and the
row-by-row reference (:func:`matches`) are in :mod:`planner.expr`; this module
re-exports them, so ``planner.filters`` stays the one name to import a filter from.

**Semantics** are SQL's ``WHERE``, three-valued (see :mod:`planner.expr`): what a
zone's statistics prove is proved for each row's outcome under them.

**Pruning.** :func:`zone_truth` takes statistics of a *zone* (a run of rows, e.g.
the rows of one segment) per path and answers, soundly, whether the filter is
false for every row (skip the zone), true for every row (no need to evaluate it),
or may be either.  It tracks which of the three row outcomes (true, false,
unknown) each sub-expression can produce in the zone; combining sets treats
columns as independent, which over-approximates and so never wrongly prunes.

The text form and its grammar are in :mod:`planner.filtertext`.

Literals are typed when the filter is bound to a file's column types
(:func:`bind`): a string compared with a ``time`` column is read as an RFC 3339
timestamp (UTC when it has no offset), an integer compared with a float column
as a float; anything else that cannot compare is a :class:`FilterError`.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from typing import Any

from .expr import (
    And,
    Column,
    Compare,
    Expr,
    F,
    IsIn,
    IsNull,
    Like,
    N,
    Not,
    Or,
    StartsWith,
    T,
    and3,
    checked_expr,
    col,
    columns_of,
    is_float,
    is_nan,
    matches,
    not3,
    or3,
    order_key,
    ordered,
    outcome,
    value_kind,
)
from .likes import like_prefix, like_regex
from .literals import INT64_MAX, INT64_MIN, FilterError, duration_ns, time_ns
from .paths import format_path

__all__ = [
    "And", "Column", "ColumnStats", "Compare", "Expr", "FilterError", "IsIn", "IsNull", "Like",
    "Not", "Or", "StartsWith", "Truth", "bind", "col", "columns_of", "like_prefix",
    "like_regex", "matches", "order_key", "outcome", "value_kind", "zone_truth",
]

# ---------------------------------------------------------- statistics ---


class Truth(Enum):
    """What statistics prove about a zone: no row matches, every row matches, or unknown."""

    FALSE = "false"
    MAYBE = "maybe"
    TRUE = "true"


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What is known of one path over a zone of rows.

    ``count`` rows, ``nulls`` of which are null or lack the path; ``lo``/``hi`` bound
    every non-null, non-NaN value (``lo <= v <= hi``; None when unknown, e.g. an
    all-null or all-NaN zone, or bounds a writer left out); ``nan`` says whether any
    value is a NaN (floats).  Bounds may be loose, never tight: pruning relies on them.
    Statistics that contradict themselves (``nulls`` above ``count``, ``lo`` above
    ``hi``) prove nothing.
    """

    count: int
    nulls: int = 0
    lo: Any = None
    hi: Any = None
    nan: bool = False

    @property
    def values(self) -> int:
        return self.count - self.nulls


_ALL = frozenset((T, F, N))


def _like_outcomes(e: Like, s: ColumnStats | None) -> frozenset[bool | None]:
    """A ``like``'s outcomes, from those of its literal prefix: a pattern without a
    wildcard is an equality; one that is its prefix then ``%`` is ``startswith``;
    any other can be false wherever the prefix matches."""
    prefix, rest = like_prefix(e.pattern)
    if not rest:
        return _leaf_outcomes(Compare("==", e.path, prefix), s)
    got = _leaf_outcomes(StartsWith(e.path, prefix), s)
    if rest == "%" or T not in got:
        return got
    return got | {F}


def _leaf_outcomes(e: Any, s: ColumnStats | None) -> frozenset[bool | None]:
    """Which row outcomes a leaf can produce in a zone with these statistics."""
    if isinstance(e, Like):
        return _like_outcomes(e, s)
    if s is None or s.nulls < 0 or s.nulls > s.count:
        return _ALL
    if s.count == 0:
        return frozenset()
    out: set[bool | None] = set()
    if isinstance(e, IsNull):
        if s.nulls:
            out.add(F if e.negated else T)
        if s.values:
            out.add(T if e.negated else F)
        return frozenset(out)
    if s.nulls:
        out.add(N)
    if not s.values:
        return frozenset(out)
    if s.lo is None or s.hi is None:  # unknown bounds (or all NaN): say nothing
        return _ALL
    kind = value_kind(s.lo)
    if type(s.hi) is not type(s.lo) and value_kind(s.hi) != kind:
        return _ALL
    if isinstance(e, IsIn):
        same = tuple(v for v in e.values if value_kind(v) == kind)
        if e.values and not same:
            return frozenset(out | {N})  # no literal of the values' kind: unknown
        e = dataclasses.replace(e, values=same)
    elif value_kind(e.value if isinstance(e, Compare) else e.prefix) != kind:
        return frozenset(out | {N})
    try:
        lo, hi = s.lo, s.hi
        if kind in ("M", "m"):  # as int64 nanoseconds (NaT the smallest)
            lo, hi = order_key(lo), order_key(hi)
            if isinstance(e, Compare):
                e = Compare(e.op, e.path, order_key(e.value))
            elif isinstance(e, IsIn):
                e = dataclasses.replace(e, values=tuple(order_key(v) for v in e.values))
        if lo > hi:  # bounds that contradict each other prove nothing
            return _ALL
        if s.nan:  # NaN: false for every comparison but !=, which it makes true, and an
            # exact membership in a list holding a NaN
            nan_true = (e.op == "!=" if isinstance(e, Compare) else
                        isinstance(e, IsIn) and e.exact and any(map(is_nan, e.values)))
            out.add(T if nan_true else F)
        out |= _bounded(e, lo, hi)
    except TypeError:  # bounds that do not order with the literal: say nothing
        return _ALL
    return frozenset(out)


def _bounded(e: Any, lo: Any, hi: Any) -> set[bool | None]:
    """Outcomes of a leaf over values known to lie in ``[lo, hi]``."""
    if isinstance(e, Compare):
        v, op = e.value, e.op
        if isinstance(v, float) and math.isnan(v):
            return {T} if op == "!=" else {F}
        exact = lo == hi
        if op in ("==", "!="):
            inside = lo <= v <= hi
            can_eq = inside
            can_ne = not (exact and lo == v)
            res = set()
            if can_eq:
                res.add(T if op == "==" else F)
            if can_ne:
                res.add(F if op == "==" else T)
            return res
        # ordered: x op v is true for some x in [lo, hi] iff it is for the extreme
        some_true = ordered(op, hi if op in (">", ">=") else lo, v)
        all_true = ordered(op, lo if op in (">", ">=") else hi, v)
        res = set()
        if some_true:
            res.add(T)
        if not all_true:
            res.add(F)
        return res
    if isinstance(e, IsIn):
        res = set()
        if any(lo <= v <= hi for v in e.values):  # a NaN literal lies in no bounds
            res.add(T)
        if not (lo == hi and any(lo == v for v in e.values)):
            res.add(F)
        elif e.exact and lo == 0 and is_float(lo):
            res.add(F)  # bounds of zeros do not tell 0.0 from -0.0
        return res
    if isinstance(e, StartsWith):
        p = e.prefix
        if not isinstance(lo, type(p)):
            return {T, F, N}
        # values starting with p lie in [p, p + max char); a cut bound stays a bound
        res = set()
        if hi >= p and not (lo > p and not lo.startswith(p)):
            res.add(T)
        if not (lo.startswith(p) and hi.startswith(p)):
            res.add(F)
        return res
    raise FilterError(f"not a filter: {e!r}")


def _outcomes(expr: Expr, stats: Callable[[tuple[str, ...]], ColumnStats | None]
              ) -> frozenset[bool | None]:
    if isinstance(expr, (And, Or)):
        combine = and3 if isinstance(expr, And) else or3
        acc: frozenset[bool | None] = frozenset((T,) if isinstance(expr, And) else (F,))
        for p in expr.parts:
            sub = _outcomes(p, stats)
            acc = frozenset(combine(a, b) for a in acc for b in sub)
        return acc
    if isinstance(expr, Not):
        return frozenset(not3(a) for a in _outcomes(expr.part, stats))
    return _leaf_outcomes(expr, stats(expr.path))


def zone_truth(expr: Expr, stats: Mapping[tuple[str, ...], ColumnStats]
               | Callable[[tuple[str, ...]], ColumnStats | None]) -> Truth:
    """What the statistics of a zone prove about the filter (see the module docstring).

    ``stats`` maps a path to its :class:`ColumnStats` in the zone (a path it lacks is
    unknown).  An empty zone is :attr:`Truth.FALSE`.
    """
    get = stats.get if isinstance(stats, Mapping) else stats
    got = _outcomes(checked_expr(expr), get)
    if T not in got:
        return Truth.FALSE
    if got == {T}:
        return Truth.TRUE
    return Truth.MAYBE


# -------------------------------------------------------------- binding ---

def _exact_ns(v: Any, tname: str, path: tuple[str, ...]) -> int | Fraction:
    """A time or duration literal as its exact nanoseconds (see ``planner.literals``)."""
    if tname == "time":
        if isinstance(v, str):
            try:
                v = _dt.datetime.fromisoformat(v)
            except ValueError:
                raise FilterError(f"{v!r} is not an RFC 3339 time (column "
                                  f"{format_path(path)})") from None
        try:
            return time_ns(v)
        except TypeError:
            raise FilterError(f"column {format_path(path)} is a time: compare it with a "
                              f"time or an RFC 3339 string, not {type(v).__name__}") from None
    try:
        return duration_ns(v)
    except TypeError:
        raise FilterError(f"column {format_path(path)} is a duration: compare it with "
                          f"integer nanoseconds or a timedelta, not {type(v).__name__}"
                          ) from None


def _as_int64(q: int | Fraction, tname: str) -> Any:
    import numpy as np

    return np.datetime64(int(q), "ns") if tname == "time" else np.timedelta64(int(q), "ns")


def _never(path: tuple[str, ...]) -> Expr:
    """False for every value, unknown for a null: ``x in ()``."""
    return IsIn(path, ())


def _always(path: tuple[str, ...]) -> Expr:
    """True for every value, unknown for a null: ``not (x in ())``."""
    return Not(IsIn(path, ()))


def _int64_compare(op: str, path: tuple[str, ...], q: int | Fraction, tname: str) -> Expr:
    """``x op q`` for int64 values ``x`` (times, durations) and an exact literal ``q``,
    as a comparison with an int64 literal, or an expression true (false) for every
    value when ``q`` lies beyond int64 or between two integers."""
    if q != int(q):  # between two nanoseconds: x < 2.5 is x <= 2, x > 2.5 is x > 2
        if op in ("==", "!="):
            return _never(path) if op == "==" else _always(path)
        op, q = ("<=" if op in ("<", "<=") else ">"), math.floor(q)
    q = int(q)
    if q > INT64_MAX or q < INT64_MIN:
        if op in ("==", "!="):
            return _always(path) if op == "!=" else _never(path)
        below_literal = op in ("<", "<=")  # x < q: true for all when q is above them
        return _always(path) if below_literal == (q > INT64_MAX) else _never(path)
    return Compare(op, path, _as_int64(q, tname))


_NUMERIC = ("int", "uint", "float")


def _coerce(v: Any, tname: str, path: tuple[str, ...]) -> Any:
    if tname in ("time", "duration"):
        q = _exact_ns(v, tname, path)
        if q != int(q) or not INT64_MIN <= q <= INT64_MAX:
            return None  # matches no value: the caller drops it
        return _as_int64(q, tname)
    if tname.startswith(_NUMERIC):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise FilterError(f"column {format_path(path)} is {tname}: cannot compare it "
                              f"with {v!r}")
        if tname.startswith("float") and isinstance(v, int):
            try:
                f = float(v)
            except OverflowError:  # beyond every float: compared exactly as an int
                return v
            return f if f == v else v  # an int a float cannot hold stays exact
        return v
    if tname == "string":
        if not isinstance(v, str):
            raise FilterError(f"column {format_path(path)} is a string: cannot compare it "
                              f"with {v!r}")
        return v
    if tname == "bytes":
        if isinstance(v, str):
            return v.encode()
        if not isinstance(v, bytes):
            raise FilterError(f"column {format_path(path)} is bytes: cannot compare it with "
                              f"{v!r}")
        return v
    if tname == "bool":
        if not isinstance(v, bool):
            raise FilterError(f"column {format_path(path)} is a bool: compare it with true "
                              f"or false, not {v!r}")
        return v
    return v


_NARROW_FLOATS = ("float16", "float32")


def _narrowed(v: Any, tname: str) -> Any:
    """A float literal rounded to the column's narrower float type (to nearest,
    beyond its range to an infinity), as pyarrow casts an ``is_in`` value set; an
    integer only when the type holds it exactly (pyarrow refuses to round one)."""
    import numpy as np

    cast = np.float32 if tname == "float32" else np.float16
    if isinstance(v, float):
        with np.errstate(over="ignore"):
            return float(cast(v))
    if isinstance(v, int) and not isinstance(v, bool):
        try:
            f = float(v)
        except OverflowError:
            return v
        with np.errstate(over="ignore"):
            r = float(cast(f))
        return r if r == v else v
    return v


def bind(expr: Expr, type_names: Mapping[tuple[str, ...], str]) -> Expr:
    """The filter with its literals typed for the columns it compares.

    ``type_names`` maps a path to its primitive type's name (``int64``, ``time``,
    ``string``...); a path it lacks keeps its literals as they are (a field no super
    type has is null everywhere, so it matches nothing whatever the literal).
    """
    def go(e: Expr) -> Expr:
        if isinstance(e, And):
            return And(tuple(go(p) for p in e.parts))
        if isinstance(e, Or):
            return Or(tuple(go(p) for p in e.parts))
        if isinstance(e, Not):
            return Not(go(e.part))
        tname = type_names.get(e.path)
        if tname in (None, "null") or isinstance(e, IsNull):
            return e  # an all-null column matches no comparison, whatever the literal
        if isinstance(e, Compare):
            if tname in ("time", "duration"):
                return _int64_compare(e.op, e.path, _exact_ns(e.value, tname, e.path), tname)
            return Compare(e.op, e.path, _coerce(e.value, tname, e.path))
        if isinstance(e, IsIn):
            lits = e.values
            if e.exact and tname in _NARROW_FLOATS:
                lits = tuple(_narrowed(v, tname) for v in lits)
            vals = (_coerce(v, tname, e.path) for v in lits)
            return IsIn(e.path, tuple(v for v in vals if v is not None), e.exact)
        if isinstance(e, StartsWith):
            if tname not in ("string", "bytes"):
                raise FilterError(f"startswith needs a string or bytes column; "
                                  f"{format_path(e.path)} is {tname}")
            return StartsWith(e.path, _coerce(e.prefix, tname, e.path))
        if isinstance(e, Like):
            if tname != "string":
                raise FilterError(f"like needs a string column; {format_path(e.path)} is "
                                  f"{tname}")
            return e
        raise FilterError(f"not a filter: {e!r}")

    return go(checked_expr(expr))
