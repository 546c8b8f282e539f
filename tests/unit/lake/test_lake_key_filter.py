"""A pool's key range in the common filter model keeps exactly the keys the range keeps.

The pool hands its key range to the ordinary reader as a filter (``KeyRange.to_filter``);
evaluated on a column of keys it must keep the rows ``KeyRange.contains`` keeps (a
null key in none), for int and time keys, every bound inclusive or not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from csup_async import arrays as A
from csup_async.arrays.filtering import evaluate
from csup_async.lake.keys import KeyRange
from csup_async.model.types import INT64, TIME, Type
from csup_async.model.values import Value
from planner.filters import bind

small = st.integers(-50, 50)
bound = st.one_of(st.none(), small)


def _kept(expr: Any, t: Type, keys: list[int | None]) -> list[bool]:
    values = np.array([0 if k is None else k for k in keys], np.int64)
    if t == TIME:
        values = values.view("datetime64[ns]")
    arr = A.PrimitiveArray(t, values, np.array([k is not None for k in keys]))
    typed = bind(expr, {("k",): t.name})
    return evaluate(typed, {("k",): arr}, len(keys)).tolist()


@given(bound, bound, st.booleans(), st.booleans(), st.sampled_from([INT64, TIME]),
       st.lists(st.one_of(st.none(), small), min_size=1, max_size=40))
def test_the_filter_keeps_what_the_range_contains(lo: Any, hi: Any, loi: bool, hii: bool,
                                                   t: Type, keys: list[Any]) -> None:
    r = KeyRange(None if lo is None else Value(t, lo), None if hi is None else Value(t, hi),
                 loi, hii)
    expr = r.to_filter(("k",))
    want = [r.contains(None if k is None else Value(t, k)) for k in keys]
    if expr is None:  # unbounded: every key, null too, and nothing to evaluate
        assert lo is None and hi is None and all(want)
        return
    assert _kept(expr, t, keys) == want
