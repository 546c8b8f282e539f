"""The filter model (planner.filters): grammar, Python API, SQL row semantics, and the
soundness of pruning by statistics (a zone proven false holds no matching row; a
zone proven true holds only matching rows)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.filters import (
    And,
    ColumnStats,
    Compare,
    FilterError,
    IsIn,
    IsNull,
    Not,
    Or,
    StartsWith,
    Truth,
    bind,
    col,
    columns_of,
    matches,
    zone_truth,
)
from planner.filtertext import parse_filter

# ------------------------------------------------------------- grammar ---


def test_the_text_and_the_python_api_build_the_same_filter() -> None:
    text = ("ts >= '2024-01-01T00:00:00Z' and kind = 'push' or not (user.id in (1, 2, 3)) "
            "and name startswith 'a''b' and `a.b`.c is not null and x <> 2.5 and ok = true")
    built = ((col("ts") >= "2024-01-01T00:00:00Z") & (col("kind") == "push")) | (
        ~col("user.id").isin([1, 2, 3]) & col("name").startswith("a'b")
        & col(["a.b", "c"]).is_not_null() & (col("x") != 2.5) & (col("ok") == True))  # noqa: E712
    assert _flat(parse_filter(text)) == _flat(built)
    assert columns_of(built) == [("ts",), ("kind",), ("user", "id"), ("name",), ("a.b", "c"),
                                 ("x",), ("ok",)]
    assert pickle.loads(pickle.dumps(built)) == built


def _flat(e):
    """And/Or trees flattened, so `a & b & c` and `a and b and c` compare equal."""
    if isinstance(e, (And, Or)):
        parts = []
        for p in e.parts:
            q = _flat(p)
            parts += list(q.parts) if type(q) is type(e) else [q]
        return type(e)(tuple(parts))
    if isinstance(e, Not):
        return Not(_flat(e.part))
    return e


@pytest.mark.parametrize(("text", "want"), [
    ("a = 1", Compare("==", ("a",), 1)),
    ("a == -1.5e3", Compare("==", ("a",), -1500.0)),
    ("a<3", Compare("<", ("a",), 3)),
    ("A.b is null", IsNull(("A", "b"), False)),
    ("a not in ('x')", Not(IsIn(("a",), ("x",)))),
    ("NOT a > 1 AND b <= 2", And((Not(Compare(">", ("a",), 1)), Compare("<=", ("b",), 2)))),
    ("`and` = 1", Compare("==", ("and",), 1)),
    ("s startswith ''", StartsWith(("s",), "")),
])
def test_grammar_examples(text: str, want) -> None:
    assert parse_filter(text) == want


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty filter"),
    ("a =", "expected a literal .* at the end"),
    ("a = 1 b = 2", "expected 'and', 'or' or the end at position 6"),
    ("a = null", "use 'is null'"),
    ("(a = 1", "expected '\\)' at the end"),
    ("a ~ 1", "cannot read the filter at position 2"),
    ("a in ()", "expected a literal .* at position 6"),
    ("a..b = 1", "empty component"),
    ("a startswith 1", "startswith takes a quoted string"),
    ("= 1", "expected a column path at position 0"),
])
def test_grammar_errors_say_where(text: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        parse_filter(text)


def test_python_misuse_is_refused_clearly() -> None:
    with pytest.raises(FilterError, match="combine filters with &"):
        bool(col("a") == 1)
    with pytest.raises(FilterError, match="combine filters with &"):
        _ = (col("a") == 1) and (col("b") == 2)
    with pytest.raises(FilterError, match="is_null"):
        _ = col("a") == None  # noqa: E711
    with pytest.raises(FilterError, match="not a filter"):
        _ = (col("a") == 1) & 3


# --------------------------------------------------------- row semantics ---

def test_sql_semantics_for_nulls_missing_fields_and_nan() -> None:
    rows = [{"x": 1}, {"x": None}, {"y": 5}, {"x": math.nan}, {"x": 3}]
    keep = lambda f: [i for i, r in enumerate(rows) if matches(f, r)]  # noqa: E731
    assert keep(col("x") == 1) == [0]
    assert keep(~(col("x") == 1)) == [3, 4]  # null and missing: unknown, not kept
    assert keep(col("x") != 1) == [3, 4]  # NaN != 1 is true (IEEE)
    assert keep(col("x") > 0) == [0, 4]
    assert keep(col("x").is_null()) == [1, 2]
    assert keep(col("x").is_not_null()) == [0, 3, 4]
    assert keep((col("x") == 1) | col("y").is_not_null()) == [0, 2]
    assert keep(~((col("x") == 1) & (col("y") == 5))) == [3, 4]  # F for x=3,NaN; N for others
    assert keep(col("x").isin([3, 1])) == [0, 4]


def test_nested_paths_and_values_of_another_type() -> None:
    rows = [{"u": {"id": 7}}, {"u": None}, {"u": {"id": "7"}}, {"u": [1]}]
    assert [matches(col("u.id") == 7, r) for r in rows] == [True, False, False, False]
    assert [matches(col("u.id") < 8, r) for r in rows] == [True, False, False, False]


# ----------------------------------------------------------------- binding ---

def test_bind_types_literals_for_their_columns() -> None:
    f = bind(parse_filter("ts >= '2024-01-01T01:00:00+01:00' and f > 2 and b = 'x'"),
             {("ts",): "time", ("f",): "float64", ("b",): "bytes"})
    assert f == And((Compare(">=", ("ts",), np.datetime64("2024-01-01T00:00:00", "ns")),
                     Compare(">", ("f",), 2.0), Compare("==", ("b",), b"x")))
    with pytest.raises(FilterError, match="column s is a string: cannot compare it with 1"):
        bind(col("s") == 1, {("s",): "string"})
    with pytest.raises(FilterError, match="not an RFC 3339 time"):
        bind(col("t") > "yesterday", {("t",): "time"})
    with pytest.raises(FilterError, match="startswith needs a string"):
        bind(col("n").startswith("a"), {("n",): "int64"})


# ------------------------------------------------------------ statistics ---

def test_zone_examples() -> None:
    z = {("x",): ColumnStats(count=100, nulls=0, lo=10, hi=20)}
    assert zone_truth(col("x") == 5, z) is Truth.FALSE
    assert zone_truth(col("x") == 15, z) is Truth.MAYBE
    assert zone_truth(col("x") >= 10, z) is Truth.TRUE
    assert zone_truth(col("x") > 20, z) is Truth.FALSE
    assert zone_truth(~(col("x") > 20), z) is Truth.TRUE
    assert zone_truth(col("x").isin([1, 2, 30]), z) is Truth.FALSE
    assert zone_truth(col("y") == 1, z) is Truth.MAYBE  # no statistics: unknown
    with_nulls = {("x",): ColumnStats(count=100, nulls=3, lo=10, hi=20)}
    assert zone_truth(col("x") >= 10, with_nulls) is Truth.MAYBE  # nulls are not kept
    all_null = {("x",): ColumnStats(count=5, nulls=5)}
    assert zone_truth(col("x") == 1, all_null) is Truth.FALSE
    assert zone_truth(col("x").is_null(), all_null) is Truth.TRUE
    strings = {("s",): ColumnStats(count=9, lo="apple", hi="apricot")}
    assert zone_truth(col("s").startswith("ap"), strings) is Truth.TRUE
    assert zone_truth(col("s").startswith("b"), strings) is Truth.FALSE
    assert zone_truth(col("s").startswith("apr"), strings) is Truth.MAYBE
    nan = {("f",): ColumnStats(count=3, lo=1.0, hi=2.0, nan=True)}
    assert zone_truth(col("f") >= 1.0, nan) is Truth.MAYBE
    assert zone_truth(col("f") > 5.0, nan) is Truth.FALSE
    assert zone_truth(col("f") != 5.0, nan) is Truth.TRUE


values = st.one_of(st.none(), st.integers(-5, 5))
floats = st.one_of(st.none(), st.floats(-5, 5), st.just(math.nan))
strings = st.one_of(st.none(), st.text(alphabet="abc", max_size=4))


def leaves(path: tuple[str, ...], lits) -> st.SearchStrategy:
    ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        st.builds(Compare, ops, st.just(path), lits),
        st.builds(lambda vs: IsIn(path, tuple(vs)), st.lists(lits, max_size=3)),
        st.builds(IsNull, st.just(path), st.booleans()),
    )


def filters(kind: str) -> st.SearchStrategy:
    lit = {"int": st.integers(-6, 6), "float": st.floats(-6, 6),
           "str": st.text(alphabet="abc", max_size=3)}[kind]
    # now and then a literal of another kind: unknown for every row, never kept
    lit = st.one_of(lit, lit, lit, st.booleans(), st.sampled_from(["a", 1, 1.5, b"a"]))
    leaf = st.one_of(leaves(("x",), lit), leaves(("y",), lit))
    if kind == "str":
        leaf = st.one_of(leaf, st.builds(StartsWith, st.sampled_from([("x",), ("y",)]),
                                         st.one_of(st.text(alphabet="abc", max_size=2),
                                                   st.just(b"a"))))
    return st.recursive(leaf, lambda sub: st.one_of(
        st.builds(lambda a, b: And((a, b)), sub, sub),
        st.builds(lambda a, b: Or((a, b)), sub, sub),
        st.builds(Not, sub)), max_leaves=5)


def _stats(rows: list[dict], name: str, loosen: int) -> ColumnStats:
    vals = [r.get(name) for r in rows]
    real = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    nan = any(isinstance(v, float) and math.isnan(v) for v in vals)
    lo = min(real) if real else None
    hi = max(real) if real else None
    if real and loosen and isinstance(lo, (int, float)):
        lo, hi = lo - loosen, hi + loosen  # bounds may be loose, never tight
    if real and loosen and isinstance(lo, str):
        lo = lo[:1] if lo else lo  # a cut min is still a lower bound
        hi = None if loosen > 1 else hi  # an unrepresentable cut max is left out
    return ColumnStats(count=len(vals), nulls=sum(v is None for v in vals), lo=lo, hi=hi,
                       nan=nan)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), kind=st.sampled_from(["int", "float", "str"]),
       loosen=st.integers(0, 2))
def test_pruning_is_sound(data, kind: str, loosen: int) -> None:
    gen = {"int": values, "float": floats, "str": strings}[kind]
    rows = data.draw(st.lists(st.fixed_dictionaries({}, optional={"x": gen, "y": gen}),
                              max_size=12))
    f = data.draw(filters(kind))
    stats = {("x",): _stats(rows, "x", loosen), ("y",): _stats(rows, "y", loosen)}
    verdict = zone_truth(f, stats)
    kept = [matches(f, r) for r in rows]
    if verdict is Truth.FALSE:
        assert not any(kept)
    if verdict is Truth.TRUE:
        assert all(kept)
