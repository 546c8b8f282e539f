"""File-level pruning by segment statistics (planner.pruning): never a file holding a
matching row; datasets skip pruned files with no data request and say so in their plan."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.format.colvalue import segment_stats
from csup_async.model.errors import ColumnNotFoundError
from planner import filters as F
from planner.filtertext import parse_filter
from planner.pruning import STATISTICS, file_truth, path_stats, prune_files
from tests.support.rowpaths import named_by_no_row

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


T0 = np.datetime64("2024-01-01T00:00:00", "ns")

# rows of several super types: nulls, NaN, -0.0, absent fields, a nested record, long
# strings (their bounds are cut) and times
values = {
    "id": st.integers(-20, 20),
    "v": st.one_of(st.none(), st.floats(-4, 4), st.just(math.nan), st.just(-0.0)),
    "s": st.one_of(st.none(), st.text(alphabet="ab", max_size=3),
                   st.text(alphabet="ab", min_size=70, max_size=80)),
    "t": st.one_of(st.integers(0, 40).map(lambda h: T0 + np.timedelta64(h, "h")),
                   st.just(np.datetime64("NaT", "ns"))),  # int64's minimum: the least time
    "u": st.fixed_dictionaries({"n": st.one_of(st.none(), st.integers(0, 9))}),
}
rows_st = st.lists(st.fixed_dictionaries({"id": values["id"]},
                                         optional={k: v for k, v in values.items() if k != "id"}),
                   min_size=0, max_size=40)

literals = {
    ("id",): st.integers(-25, 25),
    ("v",): st.one_of(st.floats(-5, 5), st.just(math.nan), st.just(0.0), st.just(-0.0)),
    ("s",): st.one_of(st.text(alphabet="ab", max_size=4),
                      st.text(alphabet="ab", min_size=68, max_size=72)),
    ("t",): st.one_of(
        st.integers(-2, 42).map(lambda h: f"2024-01-0{1 + h // 24 if h >= 0 else 1}T"
                                          f"{h % 24:02d}:00:00Z"),
        st.sampled_from(["9999-12-31T00:00:00Z", "1000-01-01T00:00:00Z",  # beyond int64 ns
                         "1677-09-21T00:12:43.145224Z", "2262-04-11T23:47:17Z"])),
    ("u", "n"): st.integers(-1, 10),
    ("missing",): st.integers(0, 3),
}


@st.composite
def leaf(draw: Any) -> F.Expr:
    path = draw(st.sampled_from(sorted(literals)))
    lit = literals[path]
    kind = draw(st.sampled_from(["cmp", "in", "null", "starts"]))
    if kind == "null":
        return F.IsNull(path, draw(st.booleans()))
    if kind == "in":
        return F.IsIn(path, tuple(draw(st.lists(lit, min_size=1, max_size=3))),
                      draw(st.booleans()))  # exact: NaN in a list with NaN, -0.0 not 0.0
    if kind == "starts" and path == ("s",):
        return F.StartsWith(path, draw(st.text(alphabet="ab", max_size=3)))
    return F.Compare(draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="])), path,
                     draw(lit))


exprs = st.recursive(leaf(), lambda kids: st.one_of(
    st.lists(kids, min_size=2, max_size=3).map(lambda p: F.And(tuple(p))),
    st.lists(kids, min_size=2, max_size=3).map(lambda p: F.Or(tuple(p))),
    kids.map(F.Not)), max_leaves=4)


def _write(rows: list[Any], **options: Any) -> bytes:
    buf = io.BytesIO()
    csup_async.write(buf, rows, segment_thresh=64, **options)
    return buf.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, expr=exprs, statistics=st.booleans())
async def test_a_pruned_file_holds_no_matching_row(tmp_path_factory: Any, rows: list[Any],
                                                   expr: F.Expr, statistics: bool) -> None:
    d = tmp_path_factory.mktemp("prune")
    p = d / "f.csup"
    p.write_bytes(_write(rows, statistics=statistics))
    async with csup_async.open(str(p)) as r:
        try:
            matched = (await r.scan(filter=expr)).num_rows
        except F.FilterError:  # a literal that does not fit the column: proves nothing
            assert file_truth(r.meta, expr, segment_stats) is F.Truth.MAYBE
            return
        except ColumnNotFoundError:  # a path no row has: refused, never "no match"
            assert named_by_no_row(rows, expr)
            return
        truth = file_truth(r.meta, expr, segment_stats)
        n = await r.count_rows()
    event(f"statistics prove {truth.value}")
    if truth is F.Truth.FALSE:
        assert matched == 0
    if truth is F.Truth.TRUE:
        assert matched == n
    if not statistics and n and set(F.columns_of(expr)) == {("id",)}:
        assert truth is F.Truth.MAYBE  # without statistics: same answers, no bounds


async def test_file_bounds_fold_the_segments(tmp_path: Path) -> None:
    p = tmp_path / "f.csup"
    p.write_bytes(_write([{"id": i, "v": None if i % 4 == 0 else float(i)}
                          for i in range(200)]))
    async with csup_async.open(str(p)) as r:
        assert len(r.meta.columns[0].fields[0].column.segmap) > 1  # several segments
        s = path_stats(r.meta, ("id",), segment_stats)
        assert s.type_name == "int64" and s.stats == F.ColumnStats(200, 0, 0, 199, False)
        # two super types (v null, v float64): the row count is unknown from metadata,
        # so the 150 values are known and "there may be nulls"
        v = path_stats(r.meta, ("v",), segment_stats).stats
        assert (v.values, v.lo, v.hi) == (150, 1.0, 199.0) and v.nulls >= 1
    one = tmp_path / "one.csup"
    vals = np.ma.masked_array(np.arange(200, dtype=float), mask=np.arange(200) % 4 == 0)
    one.write_bytes(_write_cols({"id": np.arange(200), "v": vals}))
    async with csup_async.open(str(one)) as r:  # one super type, v with presence
        v = path_stats(r.meta, ("v",), segment_stats).stats
        assert (v.count, v.nulls, v.lo, v.hi) == (200, 50, 1.0, 199.0)
        assert path_stats(r.meta, ("nope",), segment_stats).stats == F.ColumnStats(200, 200)
    q = tmp_path / "plain.csup"
    q.write_bytes(_write([{"id": i} for i in range(50)], statistics=False))
    async with csup_async.open(str(q)) as r:
        assert path_stats(r.meta, ("id",), segment_stats).stats is None  # unknown
        assert file_truth(r.meta, F.col("id") > 100, segment_stats) is F.Truth.MAYBE


def _big(first: int, rows: int = 150_000) -> bytes:
    """A file larger than the tail read (so its data needs requests of its own)."""
    rng = np.random.default_rng(first)
    return _write_cols({"ts": np.arange(first, first + rows, dtype=np.int64),
                        "v": rng.integers(-2**62, 2**62, rows)})


def _write_cols(cols: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    csup_async.write(buf, cols)
    return buf.getvalue()


async def test_pruned_files_get_no_data_request(range_server: Any) -> None:
    names = [range_server.put(f"pruning/f{k}.csup", _big(k * 1_000_000)) for k in range(4)]
    urls = [range_server.url(n) for n in names]
    async with csup_async.open_dataset(urls) as ds:
        range_server.reset()  # the tail reads made at open are not counted
        where = "ts >= 2000000 and ts < 2000100"
        plan = await ds.plan(["v"], filter=where)
        assert [f.name for f in plan.files] == [urls[2]]
        assert sorted(f.name for f in plan.pruned if f.reason == STATISTICS) == sorted(
            urls[:2] + urls[3:])
        assert "filter false by statistics" in plan.explain()
        assert range_server.seen() == []  # planning asked nothing
        res = await ds.scan(["v"], filter=where)
        assert res.num_rows == 100
        assert {s.name for s in range_server.seen()} == {names[2]}
        kept, pruned = ds.prune_by_statistics(F.col("ts") < 10)
        assert [r.key for r in kept] == urls[:1] and len(pruned) == 3


async def test_dataset_scan_equals_the_filter_over_every_file(tmp_path: Path) -> None:
    rows = [[{"k": i, "s": "x" * (i % 3), "g": {"n": i % 5}} for i in range(j * 30, j * 30 + 30)]
            + [{"k": None}] for j in range(5)]
    for j, rs in enumerate(rows):
        (tmp_path / f"{j}.csup").write_bytes(_write(rs))
    flat = [r for rs in rows for r in rs]
    async with csup_async.open_dataset(str(tmp_path)) as ds:
        for text in ["k > 95", "k < 0", "g.n = 3 and k >= 60", "k is null", "s startswith 'xx'",
                     "not (k < 140)", "k in (1, 149)"]:
            f = parse_filter(text)
            got = (await ds.scan(["k"], filter=text)).to_pylist()
            assert got == [{"k": r.get("k")} for r in flat if F.matches(f, r)], text
        plan = await ds.plan(["k"], filter="k > 95")
        assert len(plan.files) == 2 and len(plan.pruned) == 3
        verdict = prune_files([r.meta for r in ds.readers], F.col("k") > 95, segment_stats)
        assert verdict.kept == (3, 4) and verdict.pruned == (0, 1, 2)


async def test_text_filters_on_times_prune_by_time(tmp_path: Path) -> None:
    for day in range(3):
        ts = T0 + np.timedelta64(day, "D") + np.arange(24, dtype="timedelta64[h]")
        (tmp_path / f"d{day}.csup").write_bytes(_write_cols({"ts": ts.astype("datetime64[ns]"),
                                                             "n": np.arange(24)}))
    async with csup_async.open_dataset(str(tmp_path)) as ds:
        plan = await ds.plan(["n"], filter="ts >= '2024-01-02T12:00:00Z'")
        assert [Path(f.name).name for f in plan.files] == ["d1.csup", "d2.csup"]
        res = await ds.scan(["n"], filter="ts >= '2024-01-02T12:00:00Z'")
        assert res.num_rows == 36


@pytest.mark.parametrize("text", ["id = 'a'", "id startswith 'x'"])
async def test_a_filter_that_does_not_fit_the_types_prunes_nothing(tmp_path: Path,
                                                                   text: str) -> None:
    p = tmp_path / "f.csup"
    p.write_bytes(_write([{"id": 1}]))
    async with csup_async.open(str(p)) as r:
        assert file_truth(r.meta, parse_filter(text), segment_stats) is F.Truth.MAYBE


async def test_fields_reached_through_errors_unions_and_names_are_not_pruned(
        tmp_path: Path) -> None:
    """A scan finds ``x`` inside error(record) values (and through named types), so
    statistics must not call such a file null for ``x``; a union member's field is not
    reached by a scan today, and statistics say nothing about it either."""
    from csup_async.model import types as T
    from csup_async.model.values import Value

    rec = T.RecordType((T.Field("x", T.INT64),))
    cases = {"error": [Value(T.ErrorType(rec), {"x": 5}), Value(T.ErrorType(rec), {"x": 6})],
             "named": [Value(T.NamedType("point", rec), {"x": 5})],
             "union": [{"u": Value(T.UnionType((T.INT64, rec)), {"x": 5})}]}
    for name, rows in cases.items():
        p = tmp_path / f"{name}.csup"
        csup_async.write(str(p), rows)
        expr = F.col("u.x" if name == "union" else "x") == 5
        async with csup_async.open(str(p)) as r:
            matched = (await r.scan(filter=expr)).num_rows
            assert matched == (0 if name == "union" else 1), name
            truth = file_truth(r.meta, expr, segment_stats)
            assert truth is (F.Truth.TRUE if name == "named" else F.Truth.MAYBE), name
