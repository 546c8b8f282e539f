"""``Reader.scan(columns, filter=...)``: exactly the rows ``[r for r in rows if f(r)]``
gives, in file order, for files of several super types with nulls and absent fields."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import ColumnNotFoundError
from planner.filters import FilterError, col, matches, parse_filter
from tests.support.rowpaths import named_by_no_row

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
