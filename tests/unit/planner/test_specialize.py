"""A filter specialised to one file keeps exactly the rows the whole filter keeps."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.filters import And, Compare, IsIn, IsNull, Not, Or, StartsWith, matches
from planner.specialize import specialize

PATHS = [("a",), ("b",), ("c",)]
_FLOATS = st.sampled_from([0.0, -0.0, math.nan, 1.5])  # NaN and signed zeros
values = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["x", "xy", "y"]), _FLOATS)
literals = st.one_of(st.integers(-2, 2), st.sampled_from(["x", "xy", "y"]), _FLOATS)
paths = st.sampled_from(PATHS)

leaves = st.one_of(
    st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), paths, literals),
    st.builds(lambda p, vs, exact: IsIn(p, tuple(vs), exact), paths,
              st.lists(literals, max_size=3), st.booleans()),
    st.builds(IsNull, paths, st.booleans()),
    st.builds(StartsWith, paths, st.sampled_from(["x", "y"])),
)
exprs = st.recursive(leaves, lambda inner: st.one_of(
    st.builds(lambda ps: And(tuple(ps)), st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda ps: Or(tuple(ps)), st.lists(inner, min_size=1, max_size=3)),
    st.builds(Not, inner)), max_leaves=8)
rows = st.fixed_dictionaries({p[0]: values for p in PATHS})


@settings(max_examples=400, deadline=None)
@given(expr=exprs, fixed=st.dictionaries(paths, values, max_size=3), row=rows)
def test_specialised_filter_keeps_the_rows_the_filter_keeps(expr, fixed, row) -> None:
    full = {**row, **{p[0]: v for p, v in fixed.items()}}
    spec = specialize(expr, fixed)
    kept = spec if isinstance(spec, bool) else matches(spec, full)
    assert kept == matches(expr, full)
    if not isinstance(spec, bool):  # what is left reads no constant path
        from planner.filters import columns_of

        assert not set(columns_of(spec)) & set(fixed)


def test_a_constant_decides_or_drops_out() -> None:
    x_null_or_b = Or((IsNull(("a",), False), Compare("==", ("b",), 1)))
    assert specialize(x_null_or_b, {("a",): None}) is True
    assert specialize(x_null_or_b, {("a",): 3}) == Compare("==", ("b",), 1)
    # a comparison with a null is unknown: under not() it still keeps no row
    assert specialize(Not(Compare("==", ("a",), 1)), {("a",): None}) is False
    assert specialize(Not(Compare("==", ("a",), 1)), {("a",): 2}) is True
    assert specialize(x_null_or_b, {}) is x_null_or_b
