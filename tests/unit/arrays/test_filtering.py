"""Exact filter evaluation over decoded columns (csup_async.arrays.filtering) agrees with the
row-by-row reference (planner.filters.matches) for every kind of value."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async import arrays as A
from csup_async.arrays.filtering import evaluate
from csup_async.model.types import (
    BOOL,
    FLOAT32,
    FLOAT64,
    INT8,
    INT64,
    STRING,
    TIME,
    UINT64,
    UnionType,
)
from planner.filters import And, Compare, IsIn, IsNull, Not, Or, StartsWith, col, matches

NS = np.datetime64(0, "ns")

KINDS = {
    "int64": (INT64, st.integers(-(2**63), 2**63 - 1)),
    "int8": (INT8, st.integers(-128, 127)),
    "uint64": (UINT64, st.integers(0, 2**64 - 1)),
    "float64": (FLOAT64, st.one_of(st.floats(), st.just(-0.0))),
    "float32": (FLOAT32, st.floats(width=32)),
    "string": (STRING, st.text(alphabet="ab\u00e9\x00", max_size=3)),
    "bool": (BOOL, st.booleans()),
    "time": (TIME, st.integers(-(2**62), 2**62).map(lambda i: NS + np.timedelta64(i, "ns"))),
    "union": (UnionType((INT64, STRING)), st.one_of(st.integers(-3, 3), st.text("ab",
                                                                                max_size=2))),
}


def literals(kind: str) -> st.SearchStrategy:
    near = {"int64": st.integers(-(2**64), 2**64), "int8": st.integers(-300, 300),
            "uint64": st.integers(-5, 2**65), "float64": st.floats(),
            "float32": st.one_of(st.floats(), st.floats(width=32)),
            "string": st.text(alphabet="ab\u00e9\x00", max_size=3), "bool": st.booleans(),
            "time": st.integers(-(2**62), 2**62).map(lambda i: NS + np.timedelta64(i, "ns")),
            "union": st.one_of(st.integers(-3, 3), st.text("ab", max_size=2))}[kind]
    other = st.sampled_from([1, 2.5, "a", b"a", True, 2**70, -(2**70), math.inf, math.nan])
    return st.one_of(near, near, near, other)


def filters(kind: str) -> st.SearchStrategy:
    lit = literals(kind)
    ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    leaf = st.one_of(
        st.builds(Compare, ops, st.just(("x",)), lit),
        st.builds(lambda vs, exact: IsIn(("x",), tuple(vs), exact), st.lists(lit, max_size=3),
                  st.booleans()),  # exact: pyarrow's is_in (NaN is NaN, -0.0 not 0.0)
        st.builds(IsNull, st.just(("x",)), st.booleans()),
        st.builds(StartsWith, st.just(("x",)), st.one_of(st.text("ab\u00e9", max_size=2),
                                                        st.just(b"a"))),
    )
    return st.recursive(leaf, lambda sub: st.one_of(
        st.builds(lambda a, b: And((a, b)), sub, sub),
        st.builds(lambda a, b: Or((a, b)), sub, sub),
        st.builds(Not, sub)), max_leaves=4)


@settings(max_examples=500, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(KINDS)))
def test_evaluate_matches_the_row_reference(data, kind: str) -> None:
    t, values = KINDS[kind]
    rows = data.draw(st.lists(st.one_of(st.none(), values), max_size=20))
    arr = A.from_pylist(t, rows)
    f = data.draw(filters(kind))
    got = evaluate(f, {("x",): arr}, len(rows))
    want = [matches(f, {"x": v}) for v in arr.to_pylist()]
    assert got.tolist() == want


def test_missing_columns_are_null_and_other_paths_combine() -> None:
    x = A.from_pylist(INT64, [1, 2, None, 4])
    s = A.from_pylist(STRING, ["a", "b", "c", None])
    f = ((col("x") >= 2) & col("s").isin(["b", "c"])) | col("nope").is_null() & (col("x") == 4)
    got = evaluate(f, {("x",): x, ("s",): s}, 4)
    rows = [{"x": a, "s": b} for a, b in zip(x.to_pylist(), s.to_pylist(), strict=True)]
    assert got.tolist() == [matches(f, r) for r in rows] == [False, True, False, True]
    assert evaluate(col("nope") == 1, {}, 3).tolist() == [False] * 3
    assert evaluate(~(col("nope") == 1), {}, 3).tolist() == [False] * 3


def test_int_columns_compare_exactly_with_floats_and_big_literals() -> None:
    big = A.from_pylist(INT64, [2**53 + 1, 2**63 - 1, -(2**63), 3])
    cases = [col("x") == float(2**53), col("x") < 2.5, col("x") > 2.5, col("x") <= -1e300,
             col("x") != 2**64, col("x") >= 2**63, col("x").isin([3.0, 2**53 + 1])]
    for f in cases:
        got = evaluate(f, {("x",): big}, 4)
        assert got.tolist() == [matches(f, {"x": v}) for v in big.to_pylist()], f


def test_strings_with_trailing_nuls_order_exactly() -> None:
    arr = A.from_pylist(STRING, ["\x00", "a\x00", "a", ""])
    for f in (col("x") <= "\x00", col("x") > "a", col("x") < "a\x00", col("x") == "a\x00",
              col("x") >= ""):
        got = evaluate(f, {("x",): arr}, 4)
        assert got.tolist() == [matches(f, {"x": v}) for v in arr.to_pylist()], f
