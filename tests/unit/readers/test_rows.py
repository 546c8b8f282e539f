"""Row selection, pruning and late materialization (issue 16, items 3 and 4).

Held to the full scan: a filtered scan gives ``[r for r in scan() if matches(f, r)]``
in file order; ``take``/``rows=``/``limit=`` give the same rows of the full scan;
files written with ``statistics=False`` give the same answers.  Then, against real
servers on 127.0.0.1: pruning reads fewer bytes, ``limit=10`` one wave of requests.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import math
import operator
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import ColumnNotFoundError, RowSelectionError
from csup_async.model.types import PrimitiveType
from planner import format_path, get_profile, parse_path, plan_scan
from planner.filters import (
    ColumnStats,
    FilterError,
    Truth,
    bind,
    col,
    columns_of,
    matches,
    zone_truth,
)
from planner.selection import (
    RowRanges,
    column_stats,
    plan_zones,
    prefer_two_waves,
    ranges_from_indices,
    ranges_from_slice,
    segments_for_ranges,
    value_starts,
)

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

# ------------------------------------------------------------ pure parts ---

pairs_st = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), max_size=8)


@given(pairs_st)
def test_row_ranges_normalize_to_the_same_rows(pairs: list[tuple[int, int]]) -> None:
    r = RowRanges.of(pairs)
    want = sorted({i for a, b in pairs for i in range(a, b)})
    assert [i for a, b in r.pairs for i in range(a, b)] == want
    assert r.rows == len(want)
    assert all(b < c for (_, b), (c, _) in zip(r.pairs, r.pairs[1:], strict=False))
    assert ranges_from_indices(want) == r
    assert [i for a, b in r.first(5).pairs for i in range(a, b)] == want[:5]


@given(st.lists(st.integers(0, 9), max_size=12), pairs_st)
def test_segments_for_ranges_are_exactly_those_holding_rows(counts: list[int],
                                                           pairs: list[tuple[int, int]]) -> None:
    total = sum(counts)
    r = RowRanges.of((min(a, total), min(b, total)) for a, b in pairs)
    starts = value_starts(counts)
    rows = {i for a, b in r.pairs for i in range(a, b)}
    want = tuple(k for k in range(len(counts))
                 if any(starts[k] <= i < starts[k + 1] for i in rows))
    assert segments_for_ranges(counts, r) == want


@given(present=st.lists(st.booleans(), min_size=1, max_size=50),
       cuts=st.lists(st.integers(0, 50), max_size=6), pairs=pairs_st)
def test_selected_segments_hold_every_selected_rows_value(present: list[bool],
                                                         cuts: list[int],
                                                         pairs: list[tuple[int, int]]) -> None:
    """Below presence runs a row's value index is only known once the runs are decoded;
    the segments kept from the slack bound hold the value of every selected present row."""
    from csup_async.format.meta import Segment
    from planner.selection import select_segments

    n, values = len(present), sum(present)
    bounds = sorted({0, values, *(c for c in cuts if c < values)})
    segmap = tuple(Segment(offset=i * 10, length=10, mem_length=10, count=b - a)
                   for i, (a, b) in enumerate(itertools.pairwise(bounds)))
    ranges = RowRanges.of((min(a, n), min(b, n)) for a, b in pairs)
    segs, keep = select_segments([("values", segmap)], {id(segmap): (segmap, n - values)},
                                 ranges)
    starts = value_starts([s.count for s in segmap])
    rank = 0
    for row, here in enumerate(present):
        if here:
            if any(a <= row < b for a, b in ranges.pairs):
                k = max(i for i in range(len(segmap)) if starts[i] <= rank)
                assert k in keep[id(segmap)], (row, rank, k)
            rank += 1
    assert segs == [segmap[i] for i in sorted(keep[id(segmap)])]


@given(counts=st.lists(st.integers(0, 9), min_size=1, max_size=12), pairs=pairs_st,
       slack=st.integers(0, 3))
def test_checked_selection_keeps_every_segment_up_to_the_last_needed(
        counts: list[int], pairs: list[tuple[int, int]], slack: int) -> None:
    """``prefix=True`` (take, rows=, limit=): every segment whose count places a selected
    row is kept (so each is checked against its decoded values), none after the last one
    the plain selection needs; the other streams are read whole either way."""
    from csup_async.format.meta import Segment
    from planner.selection import select_segments

    segmap = tuple(Segment(offset=i * 10, length=10, mem_length=10, count=c)
                   for i, c in enumerate(counts))
    n = sum(counts) + slack
    other = (Segment(offset=999, length=5, mem_length=5),)
    ranges = RowRanges.of((min(a, n), min(b, n)) for a, b in pairs)
    streams = [("values", segmap), ("presence", other)]
    sel = {id(segmap): (segmap, slack)}
    plain_segs, plain = select_segments(streams, sel, ranges)
    segs, keep = select_segments(streams, sel, ranges, prefix=True)
    need = plain[id(segmap)]
    assert keep[id(segmap)] == (frozenset(range(max(need) + 1)) if need else frozenset())
    assert need <= keep[id(segmap)]
    assert segs == [segmap[i] for i in sorted(keep[id(segmap)])] + list(other)
    assert plain_segs[-1:] == list(other)


@given(st.integers(0, 30), st.one_of(st.none(), st.integers(-40, 40)),
       st.one_of(st.none(), st.integers(-40, 40)))
def test_ranges_from_slice_is_python_slicing(n: int, a: int | None, b: int | None) -> None:
    r = ranges_from_slice(slice(a, b), n)
    assert [i for x, y in r.pairs for i in range(x, y)] == list(range(n))[a:b]


def test_ranges_refuse_what_is_not_a_selection() -> None:
    for bad in (slice(0, 4, 2), slice("a", 3), slice(1.5, 2)):
        with pytest.raises(RowSelectionError):
            ranges_from_slice(bad, 10)
    with pytest.raises(RowSelectionError):
        RowRanges((3, 1), (4, 2))
    with pytest.raises(RowSelectionError):
        ranges_from_indices([3, 2])


@settings(max_examples=200)
@given(values=st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=40),
       cuts=st.lists(st.integers(1, 40), max_size=6), op=st.sampled_from(["==", "!=", "<",
                                                                            "<=", ">", ">="]),
       lit=st.integers(-6, 6), neg=st.booleans())
def test_zones_proven_false_hold_no_match(values: list[int | None], cuts: list[int], op: str,
                                          lit: int, neg: bool) -> None:
    """Every row of a zone judged false fails the filter; of one judged true passes."""
    n = len(values)
    bounds = sorted({0, n, *(c for c in cuts if c < n)})
    counts = [b - a for a, b in itertools.pairwise(bounds)]
    stats: list[ColumnStats | None] = []
    for a, b in itertools.pairwise(bounds):
        seg = [v for v in values[a:b] if v is not None]
        stats.append(column_stats(b - a, b - a - len(seg), min(seg, default=None),
                                  max(seg, default=None), False, "int64"))
    f = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
         ">": operator.gt, ">=": operator.ge}[op](col("x"), lit)
    if neg:
        f = ~f
    zones = plan_zones(f, n, {("x",): (counts, stats)})
    assert zones[0].start == 0 and zones[-1].stop == n
    for z in zones:
        got = {matches(f, {"x": v}) for v in values[z.start: z.stop]}
        if z.truth is Truth.FALSE:
            assert got == {False}
        if z.truth is Truth.TRUE:
            assert got == {True}


@settings(max_examples=200)
@given(values=st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=40),
       cuts=st.lists(st.integers(1, 40), max_size=6), op=st.sampled_from(["==", "!=", "<",
                                                                            "<=", ">", ">="]),
       lit=st.integers(-6, 6), neg=st.booleans(), isnull=st.booleans())
def test_zones_below_presence_runs_are_sound(values: list[int | None], cuts: list[int],
                                             op: str, lit: int, neg: bool,
                                             isnull: bool) -> None:
    """A column below presence runs (None rows hold no value): its value segments say
    nothing exact about rows, yet a zone judged false holds no match, one judged true
    no miss."""
    present = [v for v in values if v is not None]
    n, m = len(values), len(present)
    bounds = sorted({0, m, *(c for c in cuts if c < m)})
    counts = [b - a for a, b in itertools.pairwise(bounds)]
    stats = [column_stats(b - a, 0, min(present[a:b]), max(present[a:b]), False, "int64")
             for a, b in itertools.pairwise(bounds)]
    f = (col("x").is_null() if isnull else
         {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
          ">": operator.gt, ">=": operator.ge}[op](col("x"), lit))
    if neg:
        f = ~f
    zones = plan_zones(f, n, {}, {("x",): (counts, stats, n - m)})
    assert zones[0].start == 0 and zones[-1].stop == n
    for z in zones:
        got = {matches(f, {"x": v}) for v in values[z.start: z.stop]}
        if z.truth is Truth.FALSE:
            assert got == {False}
        if z.truth is Truth.TRUE:
            assert got == {True}


def test_column_stats_unknowns_stay_unknown() -> None:
    assert column_stats(None, 0, 1, 2, False, "int64") is None
    assert column_stats(4, None, 1, 2, False, "int64") is None
    s = column_stats(4, 0, math.nan, 2.0, None, "float64")
    assert s is not None and s.lo is None and s.nan  # a NaN bound: no bounds, NaN possible
    assert zone_truth(col("x") == 5.0, {("x",): s}) is Truth.MAYBE


@given(counts=st.lists(st.integers(0, 9), min_size=1, max_size=10), pairs=pairs_st,
       slack=st.integers(0, 5))
def test_late_saving_is_bounded_by_what_one_wave_reads(counts: list[int],
                                                       pairs: list[tuple[int, int]],
                                                       slack: int) -> None:
    from csup_async.format.meta import Segment
    from planner.selection import late_saving, select_segments

    segmap = tuple(Segment(offset=i * 7, length=7, mem_length=7, count=c)
                   for i, c in enumerate(counts))
    n = sum(counts) + slack
    surviving = RowRanges.of((min(a, n), min(b, n)) for a, b in pairs)
    sel = {id(segmap): (segmap, slack)}
    one_wave = sum(s.length for s in select_segments([("values", segmap)], sel, surviving)[0])
    saved = late_saving([("values", segmap)], sel, surviving, RowRanges())
    assert 0 <= saved <= max(one_wave - 7, 0)
    if not slack:  # every surviving row proven to match: nothing to avoid
        assert late_saving([("values", segmap)], sel, surviving, surviving) == 0


def test_two_waves_pay_only_above_a_round_trip_of_bytes() -> None:
    s3 = get_profile("s3")
    rtt_bytes = s3.latency * s3.bandwidth * s3.concurrency
    assert not prefer_two_waves(int(rtt_bytes) - 1, s3)
    assert prefer_two_waves(int(rtt_bytes) + 1, s3)


# ------------------------------------------------------------ properties ---

LONG = "p" * 70  # past MAX_BOUND_BYTES: bounds of these strings are cut
strings = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "zz"]),
                    st.builds(lambda s: LONG + s, st.text(alphabet="ab", max_size=3)))
floats = st.one_of(st.none(), st.just(math.nan), st.just(-0.0), st.just(0.0),
                   st.floats(-3, 3, allow_nan=False))
T0 = np.datetime64("2024-01-01T00:00:00", "ns")


@st.composite
def one_type_rows(draw: Any) -> list[dict[str, Any]]:
    """Rows of one super type (every field present): streams whose values are the rows."""
    n = draw(st.integers(1, 80))
    sort = draw(st.booleans())
    ts = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    if sort:
        ts.sort()
    return [{"ts": t, "v": draw(floats), "s": draw(strings),
             "t": T0 + np.timedelta64(draw(st.integers(0, 100)), "h")} for t in ts]


multi_rows = st.lists(st.fixed_dictionaries(
    {"ts": st.integers(-50, 50)},
    optional={"v": floats, "s": st.one_of(strings, st.integers(0, 3)),
              "r": st.fixed_dictionaries({"n": st.one_of(st.none(), st.integers(0, 3))}),
              "a": st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=3))}),
    min_size=1, max_size=60)

_OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
leaves = st.one_of(
    st.builds(lambda op, v: op(col("ts"), v), st.sampled_from(_OPS), st.integers(-55, 55)),
    st.builds(lambda op, v: op(col("v"), v), st.sampled_from(_OPS),
              st.sampled_from([0.0, -0.0, 1.5, -2.0, math.nan])),
    st.builds(lambda op, v: op(col("s"), v), st.sampled_from(_OPS),
              st.sampled_from(["a", "b", LONG, LONG + "a", LONG + "b", ""])),
    st.builds(lambda vs: col("ts").isin(vs), st.lists(st.integers(-55, 55), max_size=4)),
    st.builds(lambda p: col(p).is_null(), st.sampled_from(["v", "s", "r.n"])),
    st.builds(lambda p: col(p).is_not_null(), st.sampled_from(["v", "s"])),
    st.builds(lambda p: col("s").startswith(p), st.sampled_from(["a", "p", LONG, LONG + "b"])),
    st.builds(lambda op, h: op(col("t"), f"2024-01-0{1 + h // 24}T{h % 24:02d}:00:00Z"),
              st.sampled_from(_OPS), st.integers(0, 100)),
    st.builds(lambda v: col("r.n") == v, st.integers(0, 3)),
)
filters = st.recursive(leaves, lambda f: st.one_of(
    st.builds(operator.and_, f, f), st.builds(operator.or_, f, f), st.builds(operator.inv, f)),
    max_leaves=4)
NAMES = {("ts",): "int64", ("v",): "float64", ("s",): "string", ("t",): "time"}


def _norm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """NaN is unequal to itself; -0.0 equals 0.0: compare both by their bits."""
    def one(v: Any) -> Any:
        if isinstance(v, float):
            return ("float", v.hex() if not math.isnan(v) else "nan")
        return v
    return [{k: one(v) for k, v in r.items()} for r in rows]


def _write(rows: list[dict[str, Any]], stats: bool, thresh: int, fuse: bool = True) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, rows, segment_thresh=thresh, statistics=stats, fuse=fuse)
    return out.getvalue()


#: Profiles that force each side of the one-or-two-waves decision: with no latency a
#: second wave pays whenever it avoids a byte; with a 10 s one, never.
EAGER_LATE = dataclasses.replace(get_profile("local"), name="no-latency", latency=0.0)
NEVER_LATE = dataclasses.replace(get_profile("local"), name="slow", latency=10.0)


async def _check(rows: list[dict[str, Any]], f: Any, stats: bool, thresh: int,
                 project: list[str] | None, idx: list[int], a: int | None, b: int | None,
                 limit: int, types: dict[tuple[str, ...], str],
                 profile: Any = "local", fuse: bool = True) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.csup"
        p.write_bytes(_write(rows, stats, thresh, fuse))
        async with csup_async.open(str(p), profile=profile) as r:
            every = (await r.scan(project)).to_pylist()
            names = dict(types)
            present = [format_path(c) for c in columns_of(f)]
            missing = plan_scan(r.meta, present).missing_paths if present else ()
            if missing:  # a filter naming a path no row has is refused, never "no match"
                with pytest.raises(ColumnNotFoundError, match="the filter names"):
                    await r.scan(project, filter=f)
                return
            if present:  # the reader types literals by the file's columns: so does the reference
                arrays = (await r.scan(present)).columns
                names.update((parse_path(c), a.type.name) for c, a in arrays.items()
                             if isinstance(a.type, PrimitiveType))
            try:
                bound = bind(f, names)
            except FilterError:  # e.g. startswith on a column of ints: refused, not guessed
                with pytest.raises(FilterError):
                    await r.scan(project, filter=f)
                return
            got = (await r.scan(project, filter=f)).to_pylist()
            want = [every[i] for i, row in enumerate(rows) if matches(bound, row)]
            assert _norm(got) == _norm(want)
            got = (await r.scan(project, filter=f, limit=limit)).to_pylist()
            assert _norm(got) == _norm(want[:limit])
            got = (await r.take(idx, project)).to_pylist()
            assert _norm(got) == _norm([every[i] for i in idx])
            got = (await r.scan(project, rows=slice(a, b))).to_pylist()
            assert _norm(got) == _norm(every[a:b])
            got = (await r.scan(project, limit=limit)).to_pylist()
            assert _norm(got) == _norm(every[:limit])
            plan = await r.plan(project, filter=f)
            assert "decision:" in plan.explain()
            if plan.two_waves:
                assert r.profile is EAGER_LATE
            if r.profile is NEVER_LATE:
                assert not plan.two_waves


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=one_type_rows(), f=filters, stats=st.booleans(),
       thresh=st.sampled_from([16, 64, 256, 1 << 20]),
       project=st.sampled_from([None, ["ts"], ["s", "v"], ["t"]]),
       profile=st.sampled_from([EAGER_LATE, NEVER_LATE]), data=st.data())
async def test_one_type_selection_is_the_full_scans_rows(rows, f, stats, thresh, project,
                                                         profile, data) -> None:
    n = len(rows)
    idx = data.draw(st.lists(st.integers(0, n - 1), max_size=8))
    a = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    b = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    limit = data.draw(st.integers(0, n + 2))
    await _check(rows, f, stats, thresh, project, idx, a, b, limit, NAMES, profile)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=multi_rows, f=filters, stats=st.booleans(), thresh=st.sampled_from([16, 256]),
       project=st.sampled_from([None, ["ts"], ["s", "r"], ["a", "v"]]),
       fuse=st.booleans(), profile=st.sampled_from([EAGER_LATE, NEVER_LATE]), data=st.data())
async def test_several_super_types_selection_is_the_full_scans_rows(rows, f, stats, thresh,
                                                                    project, fuse, profile,
                                                                    data) -> None:
    """Rows of many shapes (``fuse=False``: a super type per shape, interleaved), filtered,
    limited, sliced and taken, give the full scan's rows: each super type's segments are
    selected and its zones judged by its own rows, then merged in file order."""
    n = len(rows)
    idx = data.draw(st.lists(st.integers(0, n - 1), max_size=8))
    a = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    b = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    limit = data.draw(st.integers(0, n + 2))
    if project is not None:  # a projected column no row has is an error of its own
        project = [c for c in project if any(c in r for r in rows)] or None
    # the literals need no typing here (no time column; ints and floats compare as numbers)
    await _check(rows, f, stats, thresh, project, idx, a, b, limit, {}, profile, fuse)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 120), seed=st.integers(0, 1 << 30), null_rate=st.sampled_from([0, .1, .9]),
       thresh=st.sampled_from([16, 64, 512]), f=filters, data=st.data())
async def test_presence_columns_select_the_same_rows(n, seed, null_rate, thresh, f,
                                                     data) -> None:
    """Arrow nulls are written as presence runs: the values of row r lie in [r - slack, r],
    so row selection reads only the segments that may hold them, and gives the same rows."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < null_rate
    table = pa.table({
        "ts": pa.array(np.sort(rng.integers(-50, 50, n)), mask=rng.random(n) < null_rate / 3),
        "v": pa.array(rng.standard_normal(n), mask=nulls),
        "s": pa.array([LONG + "ab"[int(x)] for x in rng.integers(0, 2, n)],
                      mask=rng.random(n) < null_rate),
    })
    out = io.BytesIO()
    csup_async.write(out, table, segment_thresh=thresh)
    every = table.to_pylist()
    idx = data.draw(st.lists(st.integers(0, n - 1), max_size=8))
    a = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    b = data.draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    limit = data.draw(st.integers(0, n + 2))
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "a.csup"
        p.write_bytes(out.getvalue())
        async with csup_async.open(str(p)) as r:
            assert _norm((await r.take(idx)).to_pylist()) == _norm([every[i] for i in idx])
            assert _norm((await r.scan(rows=slice(a, b))).to_pylist()) == _norm(every[a:b])
            assert _norm((await r.scan(limit=limit)).to_pylist()) == _norm(every[:limit])
            if {p[0] for p in columns_of(f)} & {"t", "r"}:  # no such column: refused
                with pytest.raises(ColumnNotFoundError, match="the filter names"):
                    await r.scan(filter=f)
                return
            names = {("ts",): "int64", ("v",): "float64", ("s",): "string"}
            try:
                bound = bind(f, names)
            except FilterError:
                return
            want = [row for row in every if matches(bound, row)]
            assert _norm((await r.scan(filter=f)).to_pylist()) == _norm(want)


# ------------------------------------------------------------ errors ---

async def test_bad_selections_name_the_file(tmp_path: Path) -> None:
    p = tmp_path / "e.csup"
    csup_async.write(str(p), [{"a": i} for i in range(10)])
    async with csup_async.open(str(p)) as r:
        cases: list[tuple[Any, str]] = [
            (r.take([10]), "row index 10 is out of range for 10 rows"),
            (r.take([-1]), "row index -1 is negative"),
            (r.take([1, True]), "must be integers, not bool"),
            (r.take(["1"]), "must be integers, not str"),
            (r.take(3), "needs a sequence"),
            (r.take(np.zeros((2, 2), np.int64)), "1-D integer array"),
            (r.scan(rows=slice(0, 5, 2)), "step 1 only"),
            (r.scan(rows=[1, 2]), "must be a slice"),
            (r.scan(limit=-1), "limit must be an integer >= 0"),
            (r.scan(limit=2.0), "limit must be an integer >= 0"),
            (r.scan(filter="a > 1", limit=-3), "limit must be an integer >= 0"),
            (r.plan(limit=-3), "limit must be an integer >= 0"),
        ]
        for coro, msg in cases:
            with pytest.raises(RowSelectionError, match=msg) as e:
                await coro
            assert str(p) in str(e.value)
        with pytest.raises(FilterError, match="startswith needs a string") as e:
            await r.scan(filter=col("a").startswith("x"))
        assert str(p) in str(e.value)
        assert (await r.take([])).num_rows == 0
        assert (await r.take(np.array([9, 0, 9]))).to_pylist() == [{"a": 9}, {"a": 0},
                                                                    {"a": 9}]


async def test_dataset_limit_reads_only_the_first_files(tmp_path: Path) -> None:
    for k in range(3):
        csup_async.write(str(tmp_path / f"{k}.csup"), [{"a": k * 100 + i} for i in range(100)])
    async with csup_async.open_dataset(str(tmp_path)) as ds:
        res = await ds.scan(["a"], limit=150)
        assert res.column("a").to_pylist() == list(range(100)) + list(range(100, 150))
        with pytest.raises(RowSelectionError):
            await ds.scan(["a"], limit=True)


# ------------------------------------------------ against a real server ---

def _wide(n: int) -> tuple[bytes, pa.Table]:
    rng = np.random.default_rng(7)
    t = pa.table({"ts": np.arange(n, dtype=np.int64),
                  "a": rng.integers(0, 1000, n), "b": rng.random(n),
                  "c": rng.integers(0, 1 << 40, n)})
    out = io.BytesIO()
    # segments of 256 KiB (32k int64s): the writer's 4 MiB default gives 2 per column here
    csup_async.write(out, t, segment_thresh=256 << 10)
    return out.getvalue(), t


@pytest.fixture(scope="module")
def wide() -> tuple[bytes, pa.Table]:
    return _wide(1_000_000)


def _data_bytes(seen: list[Any]) -> int:
    total = 0
    for s in seen:
        rng = s.headers.get("Range", "")
        if rng.startswith("bytes=") and "-" in rng and not rng.startswith("bytes=-"):
            lo, hi = rng[6:].split("-")
            total += int(hi) - int(lo) + 1
    return total


async def test_limit_is_one_wave_on_a_million_rows(range_server, wide) -> None:
    million, table = wide
    url = range_server.url(range_server.put("m.csup", million))
    async with csup_async.open(url) as r:
        assert len(range_server.seen("m.csup")) == 1  # the tail read
        res = await r.scan(limit=10)
        assert res.to_pylist() == table.slice(0, 10).to_pylist()
        # one source, all requests at once: one round trip after the tail read, and the
        # requests carry only the first segment of each column
        assert res.stats.requests <= r.profile.concurrency
        assert res.stats.bytes_read < len(million) // 20
        plan = await r.plan(limit=10)
        assert plan.request_count == res.stats.requests


async def test_pruning_reads_fewer_bytes_than_the_unpruned_scan(range_server, wide) -> None:
    million, _ = wide
    url = range_server.url(range_server.put("p.csup", million))
    async with csup_async.open(url) as r:
        full = await r.scan(["a", "b", "ts"])
        f = (col("ts") >= 500_000) & (col("ts") < 510_000)
        before = len(range_server.seen("p.csup"))
        got = await r.scan(["a", "b"], filter=f)
        seen = range_server.seen("p.csup")[before:]
        assert got.num_rows == 10_000
        assert got.column("a").to_pylist() == full.column("a").to_pylist()[500_000:510_000]
        assert _data_bytes(seen) == got.stats.bytes_read < full.stats.bytes_read // 10
        plan = await r.plan(["a", "b"], filter=f)
        text = plan.explain()
        assert plan.segments_pruned > 0 and "segments pruned" in text and "decision" in text
        # take of 100 random rows reads only the segments holding them
        idx = np.random.default_rng(3).integers(0, 1_000_000, 100)
        t = await r.take(idx, ["a"])
        assert t.column("a").to_pylist() == [full.column("a")[int(i)] for i in idx]


async def test_partitioned_dataset_limit_opens_only_the_files_it_needs(range_server) -> None:
    names = []
    for day in range(6):
        out = io.BytesIO()
        csup_async.write(out, [{"a": day * 10 + i} for i in range(10)])
        names.append(range_server.put(f"ds/day={day}/part.csup", out.getvalue()))
    base = range_server.url("ds")
    async with csup_async.open_dataset([range_server.url(n) for n in names],
                                       partitioning="hive", partition_base=base,
                                       file_concurrency=1) as ds:
        res = await ds.scan(["a"], limit=15)
        assert res.column("a").to_pylist() == list(range(15))
        opened = sorted({s.name for s in range_server.seen()})
        assert opened == sorted(names[:2])  # two files cover 15 rows: the others unopened


async def test_late_materialization_reads_only_the_selected_rows_segments(tmp_path: Path
                                                                         ) -> None:
    """Matches scattered through the filter column's zones: the second wave reads the other
    columns' segments holding them, the one-wave plan those of every surviving zone."""
    n = 20_000
    ts = np.arange(n, dtype=np.int64)
    table = pa.table({"ts": ts, "k": (ts % 1000 == 7), "x": ts * 3, "y": ts.astype(float)})
    p = tmp_path / "late.csup"
    csup_async.write(str(p), table, segment_thresh=4096)
    got = {}
    for prof in (EAGER_LATE, NEVER_LATE):
        async with csup_async.open(str(p), profile=prof) as r:
            f = (col("k") == True) & (col("ts") < 5000)  # noqa: E712 (a filter, not a test)
            plan = await r.plan(["x", "y"], filter=f)
            res = await r.scan(["x", "y"], filter=f)
            got[prof.name] = (plan, res)
            assert res.column("x").to_pylist() == [t * 3 for t in range(7, 5000, 1000)]
    late, whole = got["no-latency"], got["slow"]
    assert late[0].two_waves and not whole[0].two_waves
    assert late[0].segments_pruned == whole[0].segments_pruned > 0  # ts >= 5000: pruned
    assert late[1].stats.bytes_needed < whole[1].stats.bytes_needed  # (a small file: held)
    assert "two waves" in late[0].explain() and "one wave" in whole[0].explain()


async def test_several_super_types_take_needs_no_row_count_first(tmp_path: Path) -> None:
    """A file of several super types without statistics (an older writer's) has no row
    count in the metadata: take() and rows= with bounds from the start do not read the
    super column for one first."""
    p = tmp_path / "m.csup"
    rows = [{"a": i} if i % 3 else {"a": str(i), "b": i} for i in range(50)]
    csup_async.write(str(p), rows, fuse=False, statistics=False)
    async with csup_async.open(str(p)) as r:
        assert r.num_rows is None
        got = await r.take([49, 3, 3], ["a"])
        assert got.to_pylist() == [{"a": 49}, {"a": "3"}, {"a": "3"}]
        # the selection read the super column to map rows to super types: counted
        assert r.num_rows == 50
        assert (await r.scan(["a"], rows=slice(47, None))).to_pylist() == [
            {"a": 47}, {"a": "48"}, {"a": 49}]
        with pytest.raises(RowSelectionError, match="row index 50 is out of range for 50"):
            await r.take([50])
        assert r.num_rows == 50  # learnt from that read
        assert (await r.scan(["a"], rows=slice(-2, None))).to_pylist() == [{"a": "48"},
                                                                          {"a": 49}]


def test_cli_limit_reads_only_the_first_rows_segments(range_server, wide, capsys) -> None:
    from csup_async.cli import main

    million, table = wide
    name = range_server.put("cli.csup", million)
    code = main(["scan", range_server.url(name), "-c", "ts,a", "--format", "json",
                 "--limit", "10"])
    out = capsys.readouterr()
    assert code == 0, out.err
    import json

    assert [json.loads(x) for x in out.out.splitlines()] == table.select(["ts", "a"]).slice(
        0, 10).to_pylist()
    seen = range_server.seen(name)
    data = seen[1:]  # after the tail read: one wave, the first segment of each column
    assert len(data) <= 2 and _data_bytes(data) < len(million) // 20
