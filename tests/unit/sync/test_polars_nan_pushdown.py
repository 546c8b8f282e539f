"""``scan_polars`` keeps exactly the rows polars keeps, with NaN, -0.0 and nulls in a
float column (issue #39 item 5): polars orders NaN above every number (``f > 1.5`` keeps
a NaN row) where the filter model follows IEEE, so an ordered comparison of a float
column is not pushed into the scan (polars filters it); the rest still is.
Differential: random frames and predicates, the lazy scan against polars' eager frame."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.sync.polars_source import pushable_filter

pl = pytest.importorskip("polars")

FLOATS = st.one_of(st.none(), st.sampled_from([math.nan, -0.0, 0.0, 1.5, 2.0, -1.0,
                                               math.inf, -math.inf]),
                   st.floats(-3, 3, allow_nan=False))
LITS = st.sampled_from([1.5, 2.0, 0.0, -0.0, -1.0, 2, 0])


def _pred(op: str, lit: Any, flip: bool, neg: bool) -> Any:
    c = pl.col("f")
    e = {"<": c < lit, "<=": c <= lit, ">": c > lit, ">=": c >= lit, "==": c == lit,
         "!=": c != lit}[op] if not flip else {
        "<": pl.lit(lit) < c, "<=": pl.lit(lit) <= c, ">": pl.lit(lit) > c,
        ">=": pl.lit(lit) >= c, "==": pl.lit(lit) == c, "!=": pl.lit(lit) != c}[op]
    return ~e if neg else e


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((r["i"], repr(r["f"])) for r in df.to_dicts())


@pytest.mark.parametrize("pred", [pl.col("f") > 1.5, pl.col("f") >= 2.0,
                                  ~(pl.col("f") < 1.5), pl.lit(1.5) < pl.col("f")],
                         ids=["f > 1.5", "f >= 2.0", "~(f < 1.5)", "1.5 < f"])
def test_the_issues_predicates_keep_the_nan_rows(tmp_path: Path, pred: Any) -> None:
    df = pl.DataFrame({"i": [0, 1, 2, 3], "f": [math.nan, 1.0, 2.5, None]})
    p = tmp_path / "f.csup"
    csup_async.write(p, df)
    got = csup_async.scan_polars(str(p)).filter(pred).collect()
    assert _rows(got) == _rows(df.filter(pred))
    assert any(math.isnan(v) for v in got["f"].to_list() if v is not None)


def test_ordered_float_comparisons_are_left_to_polars_the_rest_is_pushed() -> None:
    floats = frozenset({"f"})
    assert pushable_filter(pl.col("f") > 1.5, floats=floats) == (None, False)
    got, whole = pushable_filter((pl.col("f") == 1.5) & (pl.col("i") > 3), floats=floats)
    assert whole and got is not None
    got, whole = pushable_filter((pl.col("f") > 1.5) & (pl.col("i") > 3), floats=floats)
    assert not whole and got is not None


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(FLOATS, min_size=1, max_size=30),
       st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), LITS, st.booleans(),
       st.booleans(), st.booleans())
def test_scan_polars_keeps_exactly_polars_rows(tmp_path: Path, values: list[Any], op: str,
                                               lit: Any, flip: bool, neg: bool,
                                               with_int: bool) -> None:
    df = pl.DataFrame({"i": list(range(len(values))), "f": values},
                      schema={"i": pl.Int64, "f": pl.Float64})
    p = tmp_path / "h.csup"
    csup_async.write(p, df)
    pred = _pred(op, lit, flip, neg)
    if with_int:
        pred = pred & (pl.col("i") >= 1)
    got = csup_async.scan_polars(str(p)).filter(pred).collect()
    assert _rows(got) == _rows(df.filter(pred))
