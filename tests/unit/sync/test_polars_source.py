"""scan_polars: polars predicates pushed exactly, or left to polars; same rows either way."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.sync.polars_source import pushable_filter
from planner.filters import col

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


pl = pytest.importorskip("polars")

ROWS = [{"i": i, "f": i / 4, "s": f"k{i % 13}", "b": i % 2 == 0,
         "n": None if i % 5 == 0 else i % 11} for i in range(3000)]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("polars") / "t.csup")
    csup_async.write(path, ROWS, segment_thresh=4096)
    return path


def test_exact_parts_are_pushed_and_the_rest_left() -> None:
    got, whole = pushable_filter((pl.col("i") < 5) & (pl.lit(3) <= pl.col("f"))
                                 & pl.col("s").str.starts_with("k1"))
    assert whole
    assert got == (col("i") < 5) & (col("f") >= 3) & col("s").startswith("k1")
    got, whole = pushable_filter((pl.col("i") > 7) & (pl.col("i") % 2 == 0))
    assert not whole and got == (col("i") > 7)
    got, whole = pushable_filter(~pl.col("n").is_null() | (pl.col("b") == True))  # noqa: E712
    assert whole and got == (~col("n").is_null()) | (col("b") == True)  # noqa: E712
    assert pushable_filter(pl.col("i").is_in([1, 2]) | (pl.col("i") < 3)) == (None, False)


def test_schema_from_metadata_and_n_rows(source: str) -> None:
    lf = csup_async.scan_polars(source)
    assert dict(lf.collect_schema()) == {"i": pl.Int64, "f": pl.Float64, "s": pl.String,
                                         "b": pl.Boolean, "n": pl.Int64}
    assert lf.select("s").head(3).collect()["s"].to_list() == ["k0", "k1", "k2"]
    assert lf.filter(pl.col("i") >= 2990).select(pl.len()).collect().item() == 10


LEAF = st.one_of(
    st.tuples(st.sampled_from(["i", "f", "n"]), st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
              st.integers(-5, 3100)),
    st.tuples(st.just("s"), st.sampled_from(["==", "!=", "<", ">="]),
              st.sampled_from(["k1", "k12", "k7", "z"])),
    st.tuples(st.sampled_from(["n", "i"]), st.sampled_from(["null", "not null"]), st.none()),
    st.tuples(st.just("s"), st.just("starts"), st.sampled_from(["k1", "k", "x"])),
    st.tuples(st.just("i"), st.just("mod"), st.integers(2, 4)),  # polars-only
)


def _leaf(t: tuple[str, str, object]) -> pl.Expr:
    name, op, v = t
    c = pl.col(name)
    if op == "null":
        return c.is_null()
    if op == "not null":
        return c.is_not_null()
    if op == "starts":
        return c.str.starts_with(v)
    if op == "mod":
        return c % v == 0
    return {"<": c < v, "<=": c <= v, ">": c > v, ">=": c >= v, "==": c == v, "!=": c != v}[op]


PREDICATES = st.recursive(
    LEAF.map(_leaf),
    lambda kids: st.one_of(st.tuples(kids, kids).map(lambda ab: ab[0] & ab[1]),
                           st.tuples(kids, kids).map(lambda ab: ab[0] | ab[1]),
                           kids.map(lambda a: ~a)),
    max_leaves=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(PREDICATES, st.sampled_from([["i"], ["s", "f"], None]), st.none() | st.integers(0, 40))
def test_lazy_scan_matches_polars_eager_filter(source: str, pred: pl.Expr,
                                               cols: list[str] | None,
                                               n: int | None) -> None:
    eager = pl.DataFrame(ROWS, schema={"i": pl.Int64, "f": pl.Float64, "s": pl.String,
                                       "b": pl.Boolean, "n": pl.Int64})
    lf = csup_async.scan_polars(source, batch_rows=500)
    want, got = eager.filter(pred), lf.filter(pred)
    if cols is not None:
        want, got = want.select(cols), got.select(cols)
    if n is not None:
        want, got = want.head(n), got.head(n)
    assert got.collect().equals(want)
