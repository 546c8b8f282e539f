"""``Reader.scan(columns, filter=...)``: exactly the rows ``[r for r in rows if f(r)]``
gives, in file order, for files of several super types with nulls and absent fields."""

from __future__ import annotations

import datetime as dt
import io
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import ColumnNotFoundError
from planner.filters import FilterError, col, matches
from planner.filtertext import parse_filter
from tests.support.rowpaths import named_by_no_row

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


rows_st = st.lists(st.fixed_dictionaries(
    {"id": st.integers(-5, 5)},
    optional={"v": st.one_of(st.none(), st.floats(-3, 3), st.just(math.nan)),
              "s": st.one_of(st.none(), st.text(alphabet="ab", max_size=3)),
              "u": st.fixed_dictionaries({"n": st.one_of(st.none(), st.integers(0, 3))})}),
    min_size=1, max_size=60)

filters_st = st.sampled_from([
    "id = 1", "id >= 0 and v < 1.5", "not (id = 2)", "s startswith 'a' or v is null",
    "u.n in (1, 2)", "u.n is not null and id < 0", "s = 'ab'", "missing = 3",
    "not (missing = 3)", "v != 0.5", "id in (1, -1) or not (s is null)",
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, text=filters_st, project=st.sampled_from([None, "id"]))
async def test_filtered_scan_is_the_filtered_rows(rows, text, project) -> None:
    f = parse_filter(text)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.csup"
        csup_async.write(str(p), rows)
        async with csup_async.open(str(p)) as r:
            if named_by_no_row(rows, f):  # a misspelling is refused, never "no match"
                with pytest.raises(ColumnNotFoundError, match="the filter names"):
                    await r.scan(project, filter=text)
                return
            got = (await r.scan(project, filter=text)).to_pylist()
            every = (await r.scan(project)).to_pylist()
            same = (await r.scan(project, filter=f)).to_pylist()
    kept = [i for i, row in enumerate(rows) if matches(f, row)]
    want = [every[i] for i in kept]
    assert _norm(got) == _norm(want) == _norm(same)


def _norm(rows):
    """NaN compares unequal to itself; compare it as a marker."""
    return [{k: ("nan" if isinstance(v, float) and math.isnan(v) else v)
             for k, v in r.items()} for r in rows]


async def test_time_literals_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "t.csup"
    ts = [np.datetime64("2024-01-01T00:00:00", "ns") + np.timedelta64(h, "h")
          for h in range(48)]
    csup_async.write(str(p), [{"ts": t, "kind": "push" if i % 3 else "pull"}
                              for i, t in enumerate(ts)])
    async with csup_async.open(str(p)) as r:
        res = await r.scan(["ts"], filter="ts >= '2024-01-02T00:00:00Z' and kind = 'pull'")
        assert [row["ts"] for row in res.to_pylist()] == [t for i, t in enumerate(ts)
                                                          if i >= 24 and i % 3 == 0]
        with pytest.raises(FilterError, match="cannot compare"):
            await r.scan(["ts"], filter=col("kind") == 1)
        with pytest.raises(FilterError, match="position 5"):
            await r.scan(["ts"], filter="kind ~ 'a'")


# ---- times with NaT, literals beyond int64 nanoseconds, statistics that lie ----

_T0 = dt.datetime(2024, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_INT64_MIN = -(1 << 63)
_FAR = [dt.datetime(9999, 12, 31), dt.datetime(1000, 1, 1), dt.datetime(1, 1, 1),
        dt.datetime(2262, 4, 12), dt.datetime(1677, 9, 21), dt.datetime(1677, 9, 22)]
_time_values = st.one_of(st.none(), st.just("nat"), st.integers(-3, 40))
_time_literals = st.one_of(st.integers(-5, 45).map(lambda h: _T0 + dt.timedelta(hours=h)),
                           st.sampled_from(_FAR))
_CMP = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
        ">": int.__gt__, ">=": int.__ge__}


def _lie(kind: str) -> tuple[Any, Any]:
    """An edit of segment statistics (tests/support/restat.py) and the bounds' type."""
    from csup_async.model.types import STRING, TIME

    nat = np.datetime64("NaT", "ns")
    return {
        "min>max": (lambda i, s: {**s, "min": s["max"], "max": s["min"]}
                    if s["min"] is not None and s["min"] != s["max"] else s, TIME),
        "strings": (lambda i, s: {**s, "min": "a", "max": "b"}, STRING),
        "nulls>count": (lambda i, s: {**s, "nulls": s["count"] + 1}, TIME),
        "nat-min": (lambda i, s: {**s, "min": nat}, TIME),  # loose, and true: NaT is least
        "no-bounds": (lambda i, s: {**s, "min": None, "max": None} if i % 2 else s, TIME),
    }[kind]


def _ns(v: Any) -> int:
    """A written time as CSUP's int64 nanoseconds (NaT: int64's minimum), exactly."""
    return _INT64_MIN if v == "nat" else (v * 3600 + (_T0 - _EPOCH) // dt.timedelta(
        seconds=1)) * 10**9


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(_time_values, min_size=1, max_size=50), op=st.sampled_from(list(_CMP)),
       lit=_time_literals, lie=st.sampled_from([None, "min>max", "strings", "nulls>count",
                                                "nat-min", "no-bounds"]),
       text=st.booleans())
async def test_time_filters_with_nat_far_literals_and_lying_statistics(
        values, op, lit, lie, text) -> None:
    """Every read path keeps exactly the rows whose int64 nanoseconds compare true with
    the literal's exact nanoseconds, whatever the statistics claim."""
    import pyarrow as pa

    from tests.support.restat import restat

    rows = pa.table({"n": list(range(len(values))), "t": pa.array(
        [0 if v is None else _ns(v) for v in values], pa.timestamp("ns"),
        mask=np.array([v is None for v in values]))})
    lit_ns = (lit - _EPOCH) // dt.timedelta(microseconds=1) * 1000
    want = [i for i, v in enumerate(values) if v is not None and _CMP[op](_ns(v), lit_ns)]
    f = parse_filter(f"t {op} '{lit.isoformat()}Z'") if text else {
        "==": col("t") == lit, "!=": col("t") != lit, "<": col("t") < lit,
        "<=": col("t") <= lit, ">": col("t") > lit, ">=": col("t") >= lit}[op]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.csup"
        out = io.BytesIO()
        csup_async.write(out, rows, segment_thresh=24)
        data = out.getvalue()
        if lie is not None and any(v is not None for v in values):
            data = restat(data, "t", *_lie(lie))
        p.write_bytes(data)
        async with csup_async.open(str(p)) as r:
            assert [x["n"] for x in (await r.scan(["n"], filter=f)).to_pylist()] == want
            got = [x["n"] for x in (await r.scan(["n"], filter=f, limit=3)).to_pylist()]
            assert got == want[:3]
            got = [x["n"] async for b in r.iter_batches(["n"], batch_rows=5, filter=f)
                   for x in b.to_pylist()]
            assert got == want
        async with csup_async.open_dataset([str(p), str(p)]) as ds:
            got = [x["n"] for x in (await ds.scan(["n"], filter=f)).to_pylist()]
            assert got == want + want
