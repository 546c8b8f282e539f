"""The pool key: Zed's value order (nulls last), and key ranges that prune by min/max.

Zed compares two values of one type natively; numbers of different types by
their numeric value; values of types that do not coerce by their type's
printed name.  Null (and a missing key) sorts after everything ("nullsMax").
A descending pool reverses the whole order, nulls included.

``KeyRange`` is what prunes a pool scan: bounds on the pool key, each inclusive
or not, built from comparisons (``("ts", ">=", x)``), ``(lo, hi)``, or the key
conjuncts of a filter expression (``lake.filter``).  It prunes
exactly as Zed's pruner does: an object (or seek-index chunk) is dropped when
its ``[min, max]`` cannot hold a value in the range.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, cmp_to_key
from typing import Any

import numpy as np

from planner.filters import And, Compare, Expr
from planner.literals import duration_ns, time_ns

from ..model.errors import CsupError
from ..model.types import TIME, NamedType, PrimitiveType, Type, underlying
from ..model.values import Value, infer_type

__all__ = ["compare", "sort_key", "KeyRange", "key_of", "as_value"]

_NUMERIC = {"uint8", "uint16", "uint32", "uint64", "uint128", "uint256", "int8", "int16",
            "int32", "int64", "int128", "int256", "float16", "float32", "float64"}


def _scalar(t: Type, v: Any) -> Any:
    """A Python value that orders like Zed orders values of type ``t``."""
    # exact nanoseconds (a Python int, beyond int64 for a bound such as year 9999: every
    # key is below it), never numpy's datetime64[ns], which wraps outside 1678-2262
    if isinstance(v, (np.datetime64, _dt.datetime)):
        return exact_int(time_ns(v))
    if isinstance(v, np.timedelta64):
        return exact_int(duration_ns(v))
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (list, tuple)):
        return tuple(_scalar(t, x) for x in v)
    if isinstance(v, dict):
        return tuple(_scalar(t, x) for x in v.values())
    return v


def exact_int(q: int | Fraction) -> int | Fraction:
    """Whole nanoseconds as an int; a fraction of one stays exact (orders correctly)."""
    return int(q) if q == int(q) else q


def family(t: Type) -> str:
    """Which values compare with which: all numbers together, else the type itself."""
    return _family(t)


def _family(t: Type) -> str:
    u = underlying(t)
    if isinstance(u, PrimitiveType):
        return "number" if u.name in _NUMERIC else u.name
    return str(u)


def compare(a: Value | None, b: Value | None) -> int:
    """Zed's ``compare(a, b, nullsMax=True)`` for the values a pool key holds."""
    an = a is None or a.value is None
    bn = b is None or b.value is None
    if an or bn:
        return 0 if an and bn else (1 if an else -1)
    assert a is not None and b is not None
    fa, fb = _family(a.type), _family(b.type)
    if fa != fb:
        sa, sb = str(a.type), str(b.type)
        return (sa > sb) - (sa < sb)
    x, y = _scalar(a.type, a.value), _scalar(b.type, b.value)
    if (isinstance(x, float) and math.isnan(x)) or (isinstance(y, float) and math.isnan(y)):
        return 0
    try:
        return (x > y) - (x < y)
    except TypeError:
        sa, sb = repr(x), repr(y)
        return (sa > sb) - (sa < sb)


sort_key = cmp_to_key(compare)


def norm(v: Value | None) -> Value | None:
    """A key with times and durations as int nanoseconds (how scans carry them), so
    comparing two keys never converts numpy scalars."""
    if v is None or v.value is None:
        return None
    x = v.value
    if isinstance(x, (np.datetime64, np.timedelta64, _dt.datetime)):
        return Value(v.type, _scalar(v.type, x))
    return v


def display(v: Value | None) -> Any:
    """A key as people read it (times as ISO strings)."""
    if v is None or v.value is None:
        return None
    u = underlying(v.type)
    if isinstance(u, PrimitiveType) and u.name == "time" and isinstance(v.value, int):
        if -(1 << 63) <= v.value < (1 << 63):
            return str(np.datetime64(v.value, "ns"))
        return f"{v.value}ns"  # a bound beyond every time (year 9999 and the like)
    if isinstance(v.value, np.datetime64):
        return str(v.value)
    if isinstance(v.value, bytes):
        return v.value.hex()
    return v.value


def as_value(v: Any) -> Value | None:
    """A bound given as a plain Python value (or a Value) as a typed Value."""
    if v is None:
        return None
    if isinstance(v, Value):
        return norm(v)
    if isinstance(v, _dt.datetime):
        return norm(Value(TIME, v))
    try:
        return norm(Value(infer_type(v), v))
    except CsupError as e:
        raise CsupError(f"cannot compare the pool key with {v!r}: {e.message}") from None


def key_of(row: Any, row_type: Type, path: Sequence[str]) -> Value | None:
    """The pool key of a record (None when missing or null, as Zed treats both)."""
    t, v = row_type, row
    for name in path:
        u = underlying(t)
        f = u.field(name) if hasattr(u, "field") else None
        if f is None or not isinstance(v, dict) or v.get(name) is None:
            return None
        t, v = f.type, v[name]
    while isinstance(t, NamedType):
        t = t.inner
    return Value(t, v)


@dataclass(frozen=True)
class KeyRange:
    """``lo (<|<=) key (<|<=) hi``; either side None for unbounded."""

    lo: Value | None = None
    hi: Value | None = None
    lo_inclusive: bool = True
    hi_inclusive: bool = True

    @classmethod
    def between(cls, lo: Any = None, hi: Any = None) -> KeyRange:
        return cls(as_value(lo), as_value(hi))

    @classmethod
    def from_comparisons(cls, key: str, comparisons: Iterable[tuple[str, str, Any]]
                         ) -> KeyRange:
        """AND of comparisons of the pool key with literals: ``("ts", ">=", x)``."""
        r = cls()
        for field_name, op, lit in comparisons:
            if field_name != key:
                raise CsupError(f"(key, op, value) comparisons compare the pool key "
                                f"{key!r}, not {field_name!r} (a filter expression takes "
                                f"any column)")
            v = as_value(lit)
            if v is None:
                raise CsupError("a pool key comparison needs a non-null literal")
            if op in (">", ">="):
                r = r.narrow(lo=v, lo_inclusive=op == ">=")
            elif op in ("<", "<="):
                r = r.narrow(hi=v, hi_inclusive=op == "<=")
            elif op in ("==", "="):
                r = r.narrow(lo=v, hi=v)
            else:
                raise CsupError(f"unsupported pool key comparison {op!r} "
                                "(use ==, <, <=, >, >=)")
        return r

    def narrow(self, lo: Value | None = None, hi: Value | None = None,
               lo_inclusive: bool = True, hi_inclusive: bool = True) -> KeyRange:
        nlo, nloi = self.lo, self.lo_inclusive
        if lo is not None:
            c = compare(lo, nlo) if nlo is not None else 1
            if nlo is None or c > 0 or (c == 0 and not lo_inclusive):
                nlo, nloi = lo, lo_inclusive
        nhi, nhii = self.hi, self.hi_inclusive
        if hi is not None:
            c = compare(hi, nhi) if nhi is not None else -1
            if nhi is None or c < 0 or (c == 0 and not hi_inclusive):
                nhi, nhii = hi, hi_inclusive
        return KeyRange(nlo, nhi, nloi, nhii)

    @property
    def unbounded(self) -> bool:
        return self.lo is None and self.hi is None

    def prunes(self, mn: Value | None, mx: Value | None) -> bool:
        """Whether no key in ``[mn, mx]`` can be in this range (Zed's pruner rules).

        Null keys sort last, so ``mx`` null means the span runs to the end.
        """
        if self.lo is not None:
            c = compare(self.lo, mx)
            if c > 0 or (c == 0 and not self.lo_inclusive):
                return True
        if self.hi is not None:
            c = compare(self.hi, mn)
            if c < 0 or (c == 0 and not self.hi_inclusive):
                return True
        return False

    def contains(self, k: Value | None) -> bool:
        if k is None or k.value is None:
            return self.unbounded  # a null key matches no comparison
        fast = self.int_bounds
        if fast is not None and _family(k.type) == fast[0] and type(k.value) is int:
            x = k.value
            lo, hi = fast[1], fast[2]
            if lo is not None and (x < lo or (x == lo and not self.lo_inclusive)):
                return False
            return not (hi is not None and (x > hi or (x == hi and not self.hi_inclusive)))
        return not self.prunes(k, k)

    @cached_property
    def int_bounds(self) -> tuple[str, int | None, int | None] | None:
        """(family, lo, hi) when both bounds are ints of one family: the per-row check
        is then two int comparisons."""
        fams = {_family(b.type) for b in (self.lo, self.hi) if b is not None}
        vals = [b.value for b in (self.lo, self.hi) if b is not None]
        if len(fams) != 1 or not all(type(x) is int for x in vals):
            return None
        return (fams.pop(), None if self.lo is None else self.lo.value,
                None if self.hi is None else self.hi.value)

    def families(self) -> set[str]:
        """The value families of the bounds (empty: unbounded)."""
        return {_family(v.type) for v in (self.lo, self.hi) if v is not None}

    def to_filter(self, key: tuple[str, ...]) -> Expr | None:
        """This range as a filter of the common model on column ``key`` (None: it is
        unbounded, or a bound is of a type filters cannot hold, such as ``ip``).

        On keys of the bounds' family the filter keeps exactly the keys ``contains``
        keeps (a null key neither: SQL semantics); Zed's order across families (by
        type name) has no filter form, so a caller checks the families first."""
        if self.unbounded:
            return None
        lits = [_literal(v) for v in (self.lo, self.hi) if v is not None]
        if any(x is None for x in lits):
            return None
        parts: list[Expr] = []
        if (self.lo is not None and self.hi is not None and self.lo_inclusive
                and self.hi_inclusive and compare(self.lo, self.hi) == 0):
            return Compare("==", key, lits[0])
        if self.lo is not None:
            parts.append(Compare(">=" if self.lo_inclusive else ">", key, lits[0]))
        if self.hi is not None:
            parts.append(Compare("<=" if self.hi_inclusive else "<", key, lits[-1]))
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def __str__(self) -> str:
        lo_op = "<=" if self.lo_inclusive else "<"
        hi_op = "<=" if self.hi_inclusive else "<"
        lo = "" if self.lo is None else f"{display(self.lo)!r} {lo_op} "
        hi = "" if self.hi is None else f" {hi_op} {display(self.hi)!r}"
        return f"{lo}key{hi}"


_FILTER_KINDS = frozenset({"bool", "string", "bytes", "float16", "float32", "float64",
                           *(f"{s}int{n}" for s in ("", "u") for n in (8, 16, 32, 64))})


def _literal(v: Value) -> Any:
    """A key bound as a filter literal (times and durations as numpy ns), or None when
    its type has no literal form in the filter model."""
    u = underlying(v.type)
    if not isinstance(u, PrimitiveType):
        return None
    x = v.value
    if u.name in ("time", "duration"):
        unit = "datetime64" if u.name == "time" else "timedelta64"
        if isinstance(x, int):
            return _int_ns_literal(x, unit)
        return x if isinstance(x, (np.datetime64, np.timedelta64)) else None
    if u.name not in _FILTER_KINDS:
        return None
    if isinstance(x, Fraction):
        return None
    return x


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_COARSER = (("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000),
            ("m", 60_000_000_000), ("h", 3_600_000_000_000), ("D", 86_400_000_000_000))


def _int_ns_literal(q: int, unit: str) -> Any:
    """Nanoseconds ``q`` as a numpy time (duration) literal, beyond int64 too (a bound
    such as ``datetime(3000, 1, 1)``): in the finest unit that holds it, exact when
    ``q`` is a whole number of that unit, else rounded away from zero, which every
    int64-nanosecond key compares with as it compares with ``q`` (both lie beyond
    every key)."""
    for name, step in _COARSER:
        n = q // step if q < 0 else -(-q // step)
        if _INT64_MIN < n <= _INT64_MAX:  # int64's minimum is NaT
            return np.array(n, np.int64).view(f"{unit}[{name}]")[()]
    return None  # pragma: no cover - beyond ±2.5e16 years
