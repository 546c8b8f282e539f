"""Filters never drop a row the rows themselves match, on every read path: out-of-range


time literals, NaT, NaN and self-contradicting statistics, misspelled columns and
literals Python cannot hold.

Each case is read through ``scan(filter=)``, ``scan(filter=, limit=)``,
``iter_batches(filter=)`` and ``Dataset.scan(filter=)`` (with its file pruning), and
the expected rows are computed here from the rows written, as int64 nanoseconds
where times are concerned (CSUP's values).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import csup_async
from csup_async import ColumnNotFoundError
from csup_async.cli import EXIT_NOT_FOUND, EXIT_USAGE, main
from csup_async.format.colvalue import segment_stats
from csup_async.model.types import FLOAT64, INT64, STRING, TIME
from planner.filters import FilterError, col
from planner.pruning import path_stats
from tests.support.restat import meta_of, restat

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

T0 = np.datetime64("2024-01-01T00:00:00", "ns")
NAT = np.datetime64("NaT", "ns")
UTC = dt.UTC
N = 120


def _write(path: Path, table: pa.Table, thresh: int = 128) -> Path:
    csup_async.write(str(path), table, segment_thresh=thresh)
    return path


def _times(path: Path, first: Any = None) -> Path:
    """Rows n = 0..N-1 at T0 + n hours, durations n seconds, several segments each;
    ``first`` replaces row 0's time and duration (NaT)."""
    ts = T0 + np.arange(N) * np.timedelta64(1, "h")
    d = (np.arange(N) * np.timedelta64(1, "s")).astype("timedelta64[ns]")
    if first is not None:
        ts[0] = first
        d[0] = np.timedelta64("NaT", "ns")
    return _write(path, pa.table({"n": np.arange(N), "ts": pa.array(ts.astype("int64"),
                                                                   pa.timestamp("ns")),
                                  "d": pa.array(d.astype("int64"), pa.duration("ns"))}))


async def _reads(paths: list[Path], f: Any) -> dict[str, list[int]]:
    """The ``n`` of the rows ``f`` keeps, by every read path (one file: its reader's)."""
    out: dict[str, list[int]] = {}
    async with csup_async.open(str(paths[0])) as r:
        out["scan"] = [x["n"] for x in (await r.scan(["n"], filter=f)).to_pylist()]
        out["limit"] = [x["n"] for x in (await r.scan(["n"], filter=f, limit=N)).to_pylist()]
        out["batches"] = [x["n"] async for b in r.iter_batches(["n"], batch_rows=7, filter=f)
                          for x in b.to_pylist()]
    async with csup_async.open_dataset([str(p) for p in paths]) as ds:
        out["dataset"] = [x["n"] for x in (await ds.scan(["n"], filter=f)).to_pylist()]
    return out


def _all_equal(got: dict[str, list[int]], want: list[int]) -> None:
    for how, rows in got.items():
        assert rows == want, how


def _ns(x: Any) -> int:
    return int(np.asarray(x).astype("int64"))


# ------------------------------------------------------------ 1. out of range ---

@pytest.mark.parametrize("f, which", [
    (col("ts") < dt.datetime(9999, 12, 31), "all"),
    (col("ts") > dt.datetime(1000, 1, 1), "all"),
    (col("ts") <= dt.datetime(9999, 12, 31, tzinfo=UTC), "all"),
    (col("ts") != dt.datetime(9999, 12, 31), "all"),
    (col("ts") == dt.datetime(9999, 12, 31), "none"),
    (col("ts") < dt.datetime(1000, 1, 1), "none"),
    (col("ts") == dt.datetime(1000, 1, 1), "none"),
    (col("ts") != dt.datetime(1000, 1, 1), "all"),
    (col("d") == -(10**30), "none"),
    ("ts < '9999-12-31T00:00:00Z'", "all"),
    ("ts > '1000-01-01T00:00:00+00:00'", "all"),
    ("ts >= '1000-01-01T00:00:00Z' and ts < '2024-01-01T03:00:00Z'", "first3"),
    (col("ts") < np.datetime64("3000-01-01", "D"), "all"),
    (col("ts").isin([dt.datetime(9999, 12, 31), dt.datetime(2024, 1, 1, 1)]), "one"),
    (col("d") < dt.timedelta(days=10**8), "all"),  # beyond int64 nanoseconds
    (col("d") > np.timedelta64(-10**12, "s"), "all"),
    (col("d") < 10**30, "all"),
    (col("d") > 10**30, "none"),
    (col("d") < np.timedelta64(3000, "ms"), "first3"),  # units converted exactly
    (col("d") == np.timedelta64(1, "s"), "one"),
    (col("d") < np.timedelta64(1, "W"), "all"),
    (col("d") <= np.timedelta64(2_000_000, "us"), "first3"),
    (col("d") < np.timedelta64(2500, "ps"), "none_but_0"),  # 2.5 ns: d <= 2 ns
    (col("d") > np.timedelta64(500, "ps"), "all_but_0"),
    (col("d") == np.timedelta64(500, "ps"), "none"),
])
async def test_time_and_duration_literals_beyond_int64_never_wrap(
        tmp_path: Path, f: Any, which: str) -> None:
    p = _times(tmp_path / "t.csup")
    other = _times(tmp_path / "u.csup")
    want = {"all": list(range(N)), "none": [], "first3": [0, 1, 2], "one": [1],
            "none_but_0": [0], "all_but_0": list(range(1, N))}[which]
    got = await _reads([p, other], f)
    dataset = got.pop("dataset")
    _all_equal(got, want)
    assert dataset == want + want  # the second file is the same rows again


def test_where_with_a_far_time_on_the_command_line(tmp_path: Path, capsys: Any) -> None:
    p = _times(tmp_path / "t.csup")
    for where in ("ts < '9999-12-31T00:00:00Z'", "ts > '1000-01-01T00:00:00Z'",
                  "d < 100000000000000000000000000000"):
        code = main(["scan", str(p), "-c", "n", "--format", "json", "--where", where])
        out = capsys.readouterr().out
        assert code == 0
        assert [json.loads(x)["n"] for x in out.splitlines()] == list(range(N)), where


def _spark_filters() -> Any:
    return pytest.importorskip("pyspark.sql.datasource")


def test_spark_pushdown_with_far_times_keeps_the_file(tmp_path: Path) -> None:
    from csup_async.spark import filters

    S = _spark_filters()
    p = _times(tmp_path / "t.csup")
    meta = meta_of(p.read_bytes())
    paths = {"ts": "ts", "n": "n"}
    for f in (S.GreaterThan(("ts",), dt.datetime(1000, 1, 1, tzinfo=UTC)),
              S.LessThan(("ts",), dt.datetime(9999, 12, 31, tzinfo=UTC)),
              S.LessThanOrEqual(("ts",), dt.datetime(9999, 12, 31, tzinfo=UTC))):
        kept, _, _ = filters.decide([f], [meta], paths)
        assert kept == [0], f
    kept, _, _ = filters.decide([S.GreaterThan(("ts",), dt.datetime(9999, 1, 1, tzinfo=UTC))],
                                [meta], paths)
    assert kept == []  # every time is below year 9999: the file is rightly pruned
    for f in (S.LessThan(("ts",), dt.datetime.max.replace(tzinfo=UTC)),
              S.GreaterThan(("ts",), dt.datetime.min.replace(tzinfo=UTC))):
        kept, _, _ = filters.decide([f], [meta], paths)  # no OverflowError widening them
        assert kept == [0], f


def test_lake_key_ranges_with_far_times() -> None:
    from csup_async.lake.keys import KeyRange, as_value

    lo, hi = as_value(T0), as_value(T0 + np.timedelta64(5, "h"))
    assert not KeyRange.from_comparisons("ts", [("ts", "<", dt.datetime(9999, 12, 31))]
                                         ).prunes(lo, hi)
    assert not KeyRange.from_comparisons("ts", [("ts", ">", dt.datetime(1000, 1, 1))]
                                         ).prunes(lo, hi)
    assert KeyRange.from_comparisons("ts", [("ts", ">", dt.datetime(9999, 1, 1))]
                                     ).prunes(lo, hi)
    far = KeyRange.between(np.datetime64("1000-01-01", "D"), np.datetime64("9999-01-01", "D"))
    assert far.contains(lo) and far.contains(hi)
    assert "key" in str(far)  # printable


# ------------------------------------------------------------------- 2. NaT ---

@pytest.mark.parametrize("op", ["==", "<=", "<", ">", ">=", "!="])
async def test_nat_is_the_smallest_time_and_prunes_nothing_it_should_not(
        tmp_path: Path, op: str) -> None:
    p = _times(tmp_path / "nat.csup", first=NAT)
    other = _times(tmp_path / "plain.csup")
    async with csup_async.open(str(p)) as r:  # the writer's bound is exact: NaT is the min
        st = path_stats(r.meta, ("ts",), segment_stats).stats
        assert st is not None and _ns(st.lo) == -(1 << 63)
    lit = T0 + np.timedelta64(5, "h")
    ints = [-(1 << 63)] + [_ns(T0 + np.timedelta64(h, "h")) for h in range(1, N)]
    cmp = {"==": int.__eq__, "<=": int.__le__, "<": int.__lt__, ">": int.__gt__,
           ">=": int.__ge__, "!=": int.__ne__}[op]
    want = [n for n, t in enumerate(ints) if cmp(t, _ns(lit))]
    f = {"==": col("ts") == lit, "<=": col("ts") <= lit, "<": col("ts") < lit,
         ">": col("ts") > lit, ">=": col("ts") >= lit, "!=": col("ts") != lit}[op]
    got = await _reads([p, other], f)
    dataset = got.pop("dataset")
    _all_equal(got, want)
    want_other = [n for n in range(N) if cmp(_ns(T0 + np.timedelta64(n, "h")), _ns(lit))]
    assert dataset == want + want_other
    # a duration NaT likewise: the smallest duration
    got = await _reads([p], col("d") < np.timedelta64(1, "s"))
    _all_equal(got, [0])


async def test_nat_literal_matches_nat_rows(tmp_path: Path) -> None:
    p = _times(tmp_path / "nat.csup", first=NAT)
    _all_equal(await _reads([p], col("ts") == NAT), [0])
    _all_equal(await _reads([p], col("ts").is_null()), [])  # NaT is a value, not null


def test_spark_pushdown_keeps_the_file_holding_the_time_next_to_nat(tmp_path: Path) -> None:
    from csup_async.spark import filters

    S = _spark_filters()
    p = _times(tmp_path / "nat.csup", first=NAT)
    meta = meta_of(p.read_bytes())
    t5 = dt.datetime(2024, 1, 1, 5, tzinfo=UTC)
    for f in (S.EqualTo(("ts",), t5), S.LessThanOrEqual(("ts",), t5),
              S.LessThan(("ts",), t5)):
        kept, _, _ = filters.decide([f], [meta], {"ts": "ts"})
        assert kept == [0], f


# ------------------------------------------------------------------- 3. NaN ---

async def test_a_nan_bound_is_unknown_for_one_file_and_for_a_dataset(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.csup", pa.table({"n": [0, 1, 2], "x": [1.0, 2.0, 3.0]}))
    _write(tmp_path / "b.csup", pa.table({"n": [3, 4], "x": [10.0, 11.0]}))

    def nan_min(_: int, s: dict[str, Any]) -> dict[str, Any]:
        return {**s, "min": float("nan"), "max": 3.0}

    a.write_bytes(restat(a.read_bytes(), "x", nan_min, FLOAT64))
    got = await _reads([a, tmp_path / "b.csup"], col("x") == 2.0)
    _all_equal(got, [1])
    async with csup_async.open_dataset([str(a), str(tmp_path / "b.csup")]) as ds:
        kept, _ = ds.prune_by_statistics(col("x") == 2.0)
        assert [r.path for r in kept] == [str(a)]  # b's bounds rightly prune it


# ------------------------------------------------- 4. contradicting statistics ---

def _lying(path: Path, edit: Any, bound_type: Any = INT64) -> Path:
    _write(path, pa.table({"n": np.arange(N), "k": np.arange(N) * 10}), thresh=64)
    path.write_bytes(restat(path.read_bytes(), "k", edit, bound_type))
    return path


@pytest.mark.parametrize("name, edit, bound_type", [
    ("min above max", lambda i, s: {**s, "min": s["max"] + 1000, "max": s["min"]}, INT64),
    ("string bounds on int64", lambda i, s: {**s, "min": "a", "max": "z"}, STRING),
    ("time bounds on int64", lambda i, s: {**s, "min": T0, "max": T0}, TIME),
    ("nulls above count", lambda i, s: {**s, "nulls": s["count"] + 1}, INT64),
    ("min above max in one segment", lambda i, s: {**s, "min": 10**6} if i == 0 else s, INT64),
])
async def test_self_contradicting_statistics_never_drop_rows(
        tmp_path: Path, name: str, edit: Any, bound_type: Any) -> None:
    p = _lying(tmp_path / "lie.csup", edit, bound_type)
    for f, want in ((col("k") == 50, [5]), (col("k") >= 10 * (N - 2), [N - 2, N - 1]),
                    (col("k") < 30, [0, 1, 2]), ("k in (40, 70) or k is null", [4, 7])):
        _all_equal(await _reads([p], f), want)
    async with csup_async.open(str(p)) as r:  # inspect still answers
        assert "k" in r.schema.column_stats


# -------------------------------------------------------- 8. misspelled paths ---

async def test_a_filter_naming_no_column_is_an_error_on_every_path(tmp_path: Path) -> None:
    p = _times(tmp_path / "t.csup")
    async with csup_async.open(str(p)) as r:
        for call in (lambda: r.scan(["n"], filter="nmae = 1"),
                     lambda: r.scan(["n"], filter=col("nmae") == 1, limit=3),
                     lambda: r.plan(["n"], filter=col("nmae").is_null())):
            with pytest.raises(ColumnNotFoundError) as e:
                await call()
            assert "'nmae'" in str(e.value) and "columns: n, ts, d" in str(e.value)
            assert str(p) in str(e.value)
        with pytest.raises(ColumnNotFoundError, match="'nmae'"):
            async for _ in r.iter_batches(["n"], filter="n > 1 and nmae = 1"):
                pass
    async with csup_async.open_dataset([str(p)]) as ds:
        with pytest.raises(ColumnNotFoundError, match=r"'nmae'.*columns: n, ts, d"):
            await ds.scan(["n"], filter="nmae = 1")
        with pytest.raises(ColumnNotFoundError, match="'nmae'"):
            await ds.plan(["n"], filter="nmae = 1")


async def test_a_field_some_types_or_files_have_keeps_sql_semantics(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.csup"
    csup_async.write(str(mixed), [{"n": 0, "x": 1}, {"n": 1}, {"n": 2, "x": 2}])
    async with csup_async.open(str(mixed)) as r:
        assert [x["n"] for x in (await r.scan(["n"], filter="x >= 1")).to_pylist()] == [0, 2]
    lacks = tmp_path / "lacks.csup"
    csup_async.write(str(lacks), [{"n": 3}])
    async with csup_async.open_dataset([str(lacks), str(mixed)]) as ds:
        got = (await ds.scan(["n"], filter="x = 2 or n = 3")).to_pylist()
        assert [x["n"] for x in got] == [3, 2]


def test_where_naming_no_column_exits_not_found(tmp_path: Path, capsys: Any) -> None:
    p = _times(tmp_path / "t.csup")
    code = main(["scan", str(p), "--where", "nmae = 1"])
    err = capsys.readouterr().err
    assert code == EXIT_NOT_FOUND
    assert "nmae" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------- 10. odd literals ---

def test_literals_python_cannot_hold_are_filter_errors(tmp_path: Path, capsys: Any) -> None:
    p = _times(tmp_path / "t.csup")
    with pytest.raises(SystemExit) as e:
        main(["scan", str(p), "--where", "n < " + "9" * 5000])
    err = capsys.readouterr().err
    assert e.value.code == EXIT_USAGE and "too long" in err and "Traceback" not in err
    for bad in ({"x": 2}, [1], (1, 2), {1}, object()):
        with pytest.raises(FilterError, match="number, string, bytes"):
            col("n") < bad  # noqa: B015 (building the filter is the test)
        with pytest.raises(FilterError, match="number, string, bytes"):
            col("n").isin([1, bad])


@pytest.mark.parametrize("unit", ["Y", "M"])
async def test_duration_literals_in_years_or_months_are_refused(tmp_path: Path,
                                                                unit: str) -> None:
    p = _times(tmp_path / "t.csup")
    async with csup_async.open(str(p)) as r:
        with pytest.raises(FilterError, match="no fixed length") as e:
            await r.scan(["n"], filter=col("d") < np.timedelta64(1, unit))
        assert str(p) in str(e.value)
        with pytest.raises(FilterError, match="no fixed length"):
            async for _ in r.iter_batches(["n"], filter=col("d") > np.timedelta64(1, unit)):
                pass


async def test_huge_and_inexact_numbers_compare_exactly(tmp_path: Path) -> None:
    p = _write(tmp_path / "f.csup", pa.table({"n": [0, 1, 2],
                                              "x": [1.0, float(2**53), float("inf")]}))
    _all_equal(await _reads([p], col("x") < 10**400), [0, 1])  # no OverflowError
    _all_equal(await _reads([p], col("x") == 2**53 + 1), [])  # not rounded to 2**53
    _all_equal(await _reads([p], col("x") == 2**53), [1])
    _all_equal(await _reads([p], col("x") > -(10**400)), [0, 1, 2])

