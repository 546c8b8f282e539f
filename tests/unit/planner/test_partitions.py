"""Hive-style partition paths: parsing, type inference and file pruning (planner.partitions)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.filters import And, Compare, FilterError, IsIn, IsNull, Not, Or, col, matches
from planner.filtertext import parse_filter as pf
from planner.partitions import (
    HIVE_NULL,
    PartitionColumn,
    PartitionError,
    format_partition_path,
    infer_partitions,
    parse_partition_path,
)


def test_paths_as_spark_and_pyarrow_write_them() -> None:
    assert parse_partition_path("year=2024/kind=push/part-0.csup") == (
        ("year", "2024"), ("kind", "push"))
    # escaped values, the null directory, an empty value, a plain directory, a file name
    assert parse_partition_path(f"k=a%2Fb%3Dc/n={HIVE_NULL}/e=/plain/x=1.csup") == (
        ("k", "a/b=c"), ("n", None), ("e", None))
    with pytest.raises(PartitionError, match="twice"):
        parse_partition_path("k=1/k=2/f.csup")


def test_types_are_inferred_per_key_over_all_files() -> None:
    p = infer_partitions(["y=2024/f=1.5/s=01/d=2024-01-02/n=" + HIVE_NULL + "/a.csup",
                          "y=-3/f=2/s=x/d=2024-01-03/n=" + HIVE_NULL + "/b.csup",
                          f"y={HIVE_NULL}/c.csup"])
    assert p.columns == (PartitionColumn("y", "int64"), PartitionColumn("f", "float64"),
                         PartitionColumn("s", "string"), PartitionColumn("d", "string"),
                         PartitionColumn("n", "null"))
    assert p.values == ((2024, 1.5, "01", "2024-01-02", None), (-3, 2.0, "x", "2024-01-03", None),
                        (None, None, None, None, None))
    # out of int64 range: not an int64
    assert infer_partitions([f"k={1 << 63}/a"]).columns[0].type == "float64"
    assert infer_partitions(["k=1e999/a"]).columns[0].type == "string"


def test_pruning_examples() -> None:
    p = infer_partitions(["year=2023/kind=push/a", "year=2024/kind=push/b",
                          "year=2024/kind=pull/c", f"year={HIVE_NULL}/kind=push/d"])
    assert p.select(col("year") == 2024) == [1, 2]
    assert p.select(pf("year >= 2024 and kind = 'pull'")) == [2]
    assert p.select(pf("year is null")) == [3]
    assert p.select(pf("not (year = 2024)")) == [0]  # null is unknown: not kept
    # a data column is unknown: the partition part still prunes, soundly
    assert p.select(pf("year = 2023 and x > 5")) == [0]
    assert p.select(pf("year = 2023 or x > 5")) == [0, 1, 2, 3]
    assert p.only_partitions(pf("year = 1 and kind = 'a'"))
    assert not p.only_partitions(pf("year = 1 and x = 2")) and p.reads(pf("year = 1 and x = 2"))
    with pytest.raises(FilterError, match="year"):
        p.select(col("year") == "2024")  # an int64 column compared with a string


keys = st.sampled_from(["a", "b", "k=v", "sp ace", "p/q", "é"])
texts = st.one_of(st.integers(-(1 << 70), 1 << 70).map(str),
                  st.floats(allow_nan=False, allow_infinity=False).map(repr),
                  st.text(min_size=1, max_size=6))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(keys, st.one_of(st.none(), texts), max_size=4),
                min_size=1, max_size=6))
def test_written_paths_read_back(rows: list[dict]) -> None:
    rels = [format_partition_path(r) + f"part-{i}.csup" for i, r in enumerate(rows)]
    for r, rel in zip(rows, rels, strict=True):
        want = {k: (None if v in (None, "", HIVE_NULL) else v) for k, v in r.items()}
        assert dict(parse_partition_path(rel)) == want
    p = infer_partitions(rels)
    for i, r in enumerate(rows):
        got = p.row(i)
        assert set(got) >= set(r)
        assert all(got[k] is None for k in got if k not in r)
        for k, v in r.items():
            if got[k] is not None:
                assert str(got[k]) == v or float(got[k]) == float(v)


int_vals = st.one_of(st.none(), st.integers(-3, 3))
str_vals = st.one_of(st.none(), st.sampled_from(["a", "b", "ab", "c"]))


def _leaf(name: str, lits: st.SearchStrategy) -> st.SearchStrategy:
    path = (name,)
    return st.one_of(
        st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.just(path),
                  lits),
        st.builds(IsIn, st.just(path), st.lists(lits, max_size=3).map(tuple)),
        st.builds(IsNull, st.just(path), st.booleans()))


leaf = st.one_of(_leaf("i", st.integers(-4, 4)), _leaf("s", st.sampled_from(["a", "b", "ab"])),
                 _leaf("x", st.integers(-4, 4)))  # x: a data column
exprs = st.recursive(leaf, lambda e: st.one_of(
    st.lists(e, min_size=1, max_size=3).map(lambda ps: And(tuple(ps))),
    st.lists(e, min_size=1, max_size=3).map(lambda ps: Or(tuple(ps))),
    e.map(Not)), max_leaves=6)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(int_vals, str_vals), min_size=1, max_size=8), exprs,
       st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=4))
def test_pruning_is_sound_and_exact_on_partition_columns(files, expr, data_values) -> None:
    rels = [format_partition_path({"i": i, "s": s}) + "f.csup" for i, s in files]
    p = infer_partitions(rels)
    kept = set(p.select(expr))
    for n, (i, s) in enumerate(files):
        rows = [{"i": i, "s": s, "x": x} for x in data_values]
        if any(matches(expr, r) for r in rows):  # a file with a matching row is kept
            assert n in kept
        if p.only_partitions(expr):  # then the file's rows all agree: exact
            assert (n in kept) == matches(expr, {"i": i, "s": s})


def test_spark_filters_on_partition_columns_decide_files_as_spark_would() -> None:
    ds = pytest.importorskip("pyspark.sql.datasource")
    from csup_async.spark.partition_filters import split

    p = infer_partitions(["year=2023/kind=push/a", "year=2024/kind=pull/b",
                          f"year={HIVE_NULL}/kind=push/c"])
    types = {c.name: c.type for c in p.columns}

    def kept(*filters):
        expr, decided, others = split(list(filters), types)
        return p.select(expr), len(decided), len(others)

    assert kept(ds.EqualTo(("year",), 2024), ds.GreaterThan(("n",), 1)) == ([1], 1, 1)
    # NOT (year <=> 2024) is true for the null year: Spark keeps that file, and so do we
    assert kept(ds.Not(ds.EqualNullSafe(("year",), 2024))) == ([0, 2], 1, 0)
    assert kept(ds.EqualNullSafe(("year",), None)) == ([2], 1, 0)
    assert kept(ds.In(("kind",), ("pull", "x"))) == ([1], 1, 0)
    # IN with a null, or a literal of another type: not decided here, left to Spark
    assert kept(ds.Not(ds.In(("kind",), ("pull", None)))) == ([0, 1, 2], 0, 1)
    assert kept(ds.EqualTo(("year",), "2024")) == ([0, 1, 2], 0, 1)
    assert kept(ds.StringStartsWith(("kind",), "pu")) == ([0, 1, 2], 1, 0)
    assert kept(ds.IsNotNull(("year",)), ds.LessThan(("year",), 2024)) == ([0], 2, 0)
