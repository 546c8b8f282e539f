"""A filter evaluated exactly over decoded columns: which rows it keeps.

Pruning by statistics (``planner.filters.zone_truth``) only says which zones
*may* hold matches; the rows that survive are decided here, on the decoded
arrays of the filter's columns, with the same SQL semantics as
``planner.filters.matches`` (which is the reference the tests hold this to).

Three-valued logic is carried as two boolean masks per sub-expression: where it
is *true* and where it is *unknown* (null, a missing field, a value of another
type); false is neither.  Primitive numbers, times, bools and strings/bytes are
compared with numpy; anything else (unions of several types, nested values,
128-bit ints) goes row by row through the reference, which is exact for every
value and only slower.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

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
    order_key,
    outcome,
)

from .. import arrays as A
from ..model.types import PrimitiveType, Type, underlying

__all__ = ["evaluate", "take_sorted"]

_NUMPY_KINDS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "bool", "time", "duration"}
_Masks = tuple[np.ndarray, np.ndarray]  # (true, unknown)


def _base(t: Type) -> Type:
    return underlying(t)


def evaluate(expr: Expr, columns: Mapping[tuple[str, ...], A.Array], rows: int) -> np.ndarray:
    """A boolean mask of the ``rows`` rows the filter keeps.

    ``columns`` maps each path the filter reads to its decoded array over those
    rows (a path no super type has may be absent: it is null everywhere).
    """
    true, _ = _masks(expr, columns, rows)
    return true


def take_sorted(arr: A.Array, keep: np.ndarray) -> A.Array:
    """``arr.take(keep)`` for sorted ``keep`` (the rows a filter kept); runs of
    consecutive rows (a clustered filter's matches) as slices, which copy nothing."""
    if keep.size == len(arr):
        return arr
    if not keep.size:
        return arr.take(keep)
    cuts = np.flatnonzero(np.diff(keep) != 1) + 1
    if cuts.size > 64:
        return arr.take(keep)
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [keep.size]])
    parts = [arr.slice(int(keep[a]), int(keep[b - 1]) + 1) for a, b in zip(starts, stops,
                                                                             strict=True)]
    return parts[0] if len(parts) == 1 else A.concat(parts)


def _masks(e: Expr, columns: Mapping[tuple[str, ...], A.Array], n: int) -> _Masks:
    if isinstance(e, (And, Or)):
        parts = [_masks(p, columns, n) for p in e.parts]
        true, unknown = parts[0]
        for t2, u2 in parts[1:]:
            if isinstance(e, And):
                false = (~true & ~unknown) | (~t2 & ~u2)
                true = true & t2
            else:
                false = (~true & ~unknown) & (~t2 & ~u2)
                true = true | t2
            unknown = ~true & ~false
        return true, unknown
    if isinstance(e, Not):
        true, unknown = _masks(e.part, columns, n)
        return ~true & ~unknown, unknown
    arr = columns.get(e.path)
    if arr is None or isinstance(arr, A.NullArray):
        if isinstance(e, IsNull):
            v = np.full(n, not e.negated)
            return v, np.zeros(n, bool)
        return np.zeros(n, bool), np.ones(n, bool)
    if len(arr) != n:
        raise ValueError(f"column of {len(arr)} rows for {n} rows")  # a caller's bug
    valid = np.ones(n, bool) if arr.validity is None else np.asarray(arr.validity, bool)
    if isinstance(e, IsNull):
        return (valid.copy() if e.negated else ~valid), np.zeros(n, bool)
    fast = _leaf_numpy(e, arr)
    if fast is None:
        return _leaf_rows(e, arr)
    true, unknown = fast
    return true & valid, unknown | ~valid


def _leaf_rows(e: Expr, arr: A.Array) -> _Masks:
    """The reference, row by row: exact for every kind of value."""
    leaf = dataclasses.replace(e, path=("v",))
    got = [outcome(leaf, {"v": v}) for v in arr.to_pylist()]
    true = np.fromiter((g is True for g in got), bool, len(got))
    unknown = np.fromiter((g is None for g in got), bool, len(got))
    return true, unknown


def _dtype_kind(dtype: np.dtype) -> str:
    """``planner.filters.value_kind`` of a value of a numeric, boolean or time ``dtype``
    (the dtypes of ``_NUMPY_KINDS``), read from the dtype: the literals' kinds travel
    on the bound leaf, so evaluation never calls back into the planner."""
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iuf":
        return "number"
    return dtype.kind  # "M" or "m"


_EXACT_FLOAT_INT = 1 << 53  # ints beyond this do not all survive a trip through float64


def _leaf_numpy(e: Expr, arr: A.Array) -> _Masks | None:
    """(true, unknown) before nulls, or None when numpy cannot do it exactly."""
    t = _base(arr.type)
    if not isinstance(t, PrimitiveType):
        return None
    n = len(arr)
    if isinstance(arr, A.BinaryArray):
        return _leaf_binary(e, arr, t.name)
    if t.name not in _NUMPY_KINDS or not isinstance(arr, A.PrimitiveArray):
        return None
    if n == 0:
        return np.zeros(0, bool), np.zeros(0, bool)
    values = arr.values
    if values.dtype.kind == "f" and values.dtype.itemsize < 8:
        values = values.astype(np.float64)  # compare as Python does: the exact value
    lits = [e.value] if isinstance(e, Compare) else list(e.values) if isinstance(
        e, IsIn) else None
    if lits is None:
        return None  # startswith on a number: the reference says unknown per row
    column_kind = _dtype_kind(values.dtype)
    kinds = e.kinds
    usable = []
    for v, kind in zip(lits, kinds, strict=True):
        if kind != column_kind:
            continue  # another kind: unknown for every row
        if values.dtype.kind == "f" and isinstance(v, int) and abs(v) > _EXACT_FLOAT_INT:
            return None
        usable.append(v)
    if values.dtype.kind in "Mm":  # int64 nanoseconds: NaT is the smallest value
        values = values.view(np.int64)
        usable = [order_key(v) for v in usable]
    if isinstance(e, Compare):
        if not usable:
            return np.zeros(n, bool), np.ones(n, bool)
        with np.errstate(invalid="ignore"):
            return _cmp(e.op, values, usable[0]), np.zeros(n, bool)
    true = np.zeros(n, bool)
    for v in usable:
        if e.exact and values.dtype.kind == "f":  # pyarrow's is_in: identity of floats
            true |= _identical(values, v)
            continue
        with np.errstate(invalid="ignore"):
            true |= _cmp("==", values, v)
    unknown = np.ones(n, bool) if (lits and not usable) else np.zeros(n, bool)
    return true, unknown


def _identical(values: np.ndarray, v: object) -> np.ndarray:
    """Float ``values`` that are the number ``v`` (``planner.filters._identical``): a
    NaN matches a NaN, and a zero only the zero of its sign."""
    f = float(v)  # type: ignore[arg-type]
    if f != f:
        return np.isnan(values)
    eq = values == f
    if f == 0:
        eq &= np.signbit(values) == (math.copysign(1.0, f) < 0)
    return eq


def _cmp(op: str, values: np.ndarray, v: object) -> np.ndarray:
    """``values op v`` exactly as Python compares each value with ``v``."""
    if values.dtype.kind in "iu" and isinstance(v, (int, float, np.integer, np.floating)):
        got = _int_cmp(op, values, v)
        if got is not None:
            return got
    if op == "==":
        return values == v
    if op == "!=":
        return values != v
    if op == "<":
        return values < v
    if op == "<=":
        return values <= v
    if op == ">":
        return values > v
    return values >= v


def _int_cmp(op: str, values: np.ndarray, v: object) -> np.ndarray | None:
    """An int column against a number, without numpy's casts (which round an int64
    to float64, or wrap a literal that does not fit the column's type)."""
    n = values.size
    full, none = np.ones(n, bool), np.zeros(n, bool)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f != f:  # NaN: equal to nothing, unordered
            return full if op == "!=" else none
        if f in (float("inf"), float("-inf")):
            above = f > 0
            return _by_side(op, above, full, none)
        if not f.is_integer():
            if op in ("==", "!="):
                return none if op == "==" else full
            # x < 2.5 <=> x <= 2; x > 2.5 <=> x >= 3 (x an int)
            floor = math.floor(f)
            op, v = {"<": ("<=", floor), "<=": ("<=", floor), ">": (">", floor),
                     ">=": (">", floor)}[op]
        else:
            v = int(f)
    v = int(v)  # type: ignore[call-overload]
    info = np.iinfo(values.dtype)
    if v < info.min or v > info.max:
        return _by_side(op, v > info.max, full, none)
    w = values.dtype.type(v)
    return {"==": values.__eq__, "!=": values.__ne__, "<": values.__lt__,
            "<=": values.__le__, ">": values.__gt__, ">=": values.__ge__}[op](w)


def _by_side(op: str, above: bool, full: np.ndarray, none: np.ndarray) -> np.ndarray:
    """Every value compared with a literal beyond the column's range on one side."""
    if op == "==":
        return none
    if op == "!=":
        return full
    less = op in ("<", "<=")
    return full if less == above else none


#: The same orders applied to the sign of a byte comparison (decode.compare_bytes).
_SIGNED = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def _leaf_binary(e: Expr, arr: A.BinaryArray, tname: str) -> _Masks | None:
    n = len(arr)
    want = str if tname == "string" else bytes

    def enc(x: object) -> bytes | None:
        if not isinstance(x, want):
            return None
        return x.encode() if isinstance(x, str) else x

    offsets = arr.offsets
    starts, lengths = offsets[:-1], np.diff(offsets)
    if isinstance(e, StartsWith):
        p = enc(e.prefix)
        if p is None:
            return np.zeros(n, bool), np.ones(n, bool)
        return _prefix_equal(arr.data, starts, lengths, p), np.zeros(n, bool)
    if isinstance(e, Like):
        return _like(e, arr, tname, starts, lengths)
    if isinstance(e, IsIn):
        lits = [enc(x) for x in e.values]
        true = np.zeros(n, bool)
        for b in lits:
            if b is not None:
                true |= (lengths == len(b)) & _prefix_equal(arr.data, starts, lengths, b)
        none_comparable = bool(e.values) and all(b is None for b in lits)
        return true, (np.ones(n, bool) if none_comparable else np.zeros(n, bool))
    if isinstance(e, Compare):
        b = enc(e.value)
        if b is None:
            return np.zeros(n, bool), np.ones(n, bool)
        from ..decode import compare_bytes

        # one memcmp per value in C (the reference: a gather per byte of the literal)
        sign = compare_bytes(np.ascontiguousarray(offsets), arr.data, b)
        if e.op in ("==", "!="):
            eq = sign == 0
            return (eq if e.op == "==" else ~eq), np.zeros(n, bool)
        # ordered: UTF-8 byte order is code point order, so the bytes' order (numpy's
        # fixed-width bytes would drop trailing NULs)
        return _SIGNED[e.op](sign, 0), np.zeros(n, bool)
    return None


def _like(e: Like, arr: A.BinaryArray, tname: str, starts: np.ndarray, lengths: np.ndarray
          ) -> _Masks:
    """``like`` on a string column: a pattern without a wildcard compares the bytes, one
    that is a prefix then ``%`` is a prefix test (both vectorised); any other is matched
    per value, after the prefix test has ruled out the rows it can."""
    n = len(arr)
    if tname != "string":  # like holds for strings only: unknown elsewhere
        return np.zeros(n, bool), np.ones(n, bool)
    prefix, rest = e.prefix, e.rest
    p = prefix.encode()
    head = _prefix_equal(arr.data, starts, lengths, p)
    if not rest:
        return head & (lengths == len(p)), np.zeros(n, bool)
    if rest == "%":
        return head, np.zeros(n, bool)
    rx = e.regex
    data = arr.data.tobytes()
    out = np.zeros(n, bool)
    for i in np.flatnonzero(head).tolist():
        s = int(starts[i])
        out[i] = rx.fullmatch(data[s:s + int(lengths[i])].decode("utf-8", "replace")) is not None
    return out, np.zeros(n, bool)


def _prefix_equal(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                  prefix: bytes) -> np.ndarray:
    """Rows whose value starts with ``prefix`` (vectorised: one gather per byte)."""
    ok = lengths >= len(prefix)
    if not prefix or not ok.any():
        return ok
    idx = np.nonzero(ok)[0]
    at = starts[idx]
    for j, byte in enumerate(prefix):
        keep = data[at + j] == byte
        idx, at = idx[keep], at[keep]
        if not idx.size:
            break
    out = np.zeros(lengths.size, bool)
    out[idx] = True
    return out
