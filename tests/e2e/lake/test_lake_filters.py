"""Pool filters take the common grammar and ``col()`` expressions, with the same type
errors; key conjuncts prune, the whole filter is evaluated on the rows."""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.lake_builder import LakeBuilder, rec
from csup_async import col
from csup_async.cli import EXIT_USAGE, main
from csup_async.lake import open_lake
from planner.filters import FilterError

ROW = rec(("id", "int64"), ("msg", "string"), ("n", "int64"))
TROW = rec(("ts", "time"), ("v", "int64"))
T0 = 1_700_000_000_000_000_000  # ns
SEC = 1_000_000_000


def _rows(lo: int, hi: int) -> list[dict[str, Any]]:
    return [{"id": i, "msg": f"m{i}", "n": i % 7} for i in range(lo, hi)]


@pytest.fixture
def lake(tmp_path: Path) -> tuple[LakeBuilder, Any, Any]:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", key="id", stride=16)
    _, o1 = b.load(p, "main", _rows(0, 100), ROW)
    _, o2 = b.load(p, "main", _rows(500, 600), ROW)
    t = b.create_pool("times", key="ts", key_type="time", stride=16)
    b.load(t, "main", [{"ts": T0 + i * SEC, "v": i} for i in range(60)], TROW)
    return b, o1, o2


def cli(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_range_in_one_where_keeps_the_rows_in_it(lake: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    b, _, o2 = lake
    code, out, err = cli(["lake", "scan", b.root, "--pool", "logs", "-c", "id",
                          "--where", "id >= 10 and id < 12"], capsys)
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == [{"id": 10}, {"id": 11}]
    code, out, err = cli(["lake", "explain", b.root, "--pool", "logs", "--json",
                          "--where", "id >= 10 and id < 12"], capsys)
    d = json.loads(out)
    assert d["pruned_by_min_max"] == [o2.name], "the key conjuncts prune the other object"


@pytest.mark.parametrize(("where", "message"), [
    ("id >= abc", "expected a literal"),
    ("id >= 'abc'", "cannot compare"),
    ("id >=", "expected a literal"),
])
def test_a_bad_filter_is_a_usage_error(lake: Any, capsys: pytest.CaptureFixture[str],
                                       where: str, message: str) -> None:
    b, _, _ = lake
    for cmd in ("scan", "explain"):
        code, out, err = cli(["lake", cmd, b.root, "--pool", "logs", "--where", where], capsys)
        assert code == EXIT_USAGE and out == ""
        assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("where", "keep"), [
    ("id > 5 and msg = 'm7' or id = 550", lambda r: (r["id"] > 5 and r["msg"] == "m7")
     or r["id"] == 550),
    ("n = 3", lambda r: r["n"] == 3),
    ("msg startswith 'm9'", lambda r: r["msg"].startswith("m9")),
    ("not (id < 590) or id in (1, 2)", lambda r: r["id"] >= 590 or r["id"] in (1, 2)),
    ("id != 3 and id <= 20 and n = 3", lambda r: r["id"] != 3 and r["id"] <= 20
     and r["n"] == 3),
])
def test_the_whole_filter_is_evaluated_on_the_rows(lake: Any, capsys: pytest.CaptureFixture[str],
                                                   where: str, keep: Any) -> None:
    b, _, _ = lake
    code, out, err = cli(["lake", "scan", b.root, "--pool", "logs", "-c", "id",
                          "--where", where], capsys)
    assert code == 0, err
    want = [{"id": r["id"]} for r in _rows(0, 100) + _rows(500, 600) if keep(r)]
    assert [json.loads(x) for x in out.splitlines()] == want


def test_repeated_wheres_are_anded(lake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    b, _, _ = lake
    code, out, err = cli(["lake", "scan", b.root, "--pool", "logs", "-c", "msg",
                          "--where", "id >= 40", "--where", "n = 0 and id < 60"], capsys)
    assert code == 0, err
    assert [json.loads(x)["msg"] for x in out.splitlines()] == ["m42", "m49", "m56"]


def test_a_time_key_takes_rfc3339_strings(lake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    b, _, _ = lake
    lo = str(np.datetime64(T0 + 10 * SEC, "ns")) + "Z"
    code, out, err = cli(["lake", "scan", b.root, "--pool", "times", "-c", "v",
                          "--where", f"ts >= '{lo}' and v < 13"], capsys)
    assert code == 0, err
    assert [json.loads(x)["v"] for x in out.splitlines()] == [10, 11, 12]
    code, _, err = cli(["lake", "scan", b.root, "--pool", "times", "--where", "ts >= 5"],
                       capsys)
    assert code == EXIT_USAGE and "time" in err


def test_python_api_takes_col_expressions_and_text(lake: Any) -> None:
    b, _, _ = lake

    async def go() -> None:
        async with open_lake(str(b.root)) as lk:
            pool = await lk.pool("logs")
            res = await pool.scan(["msg"], filter=(col("id") >= 520) & (col("n") == 1))
            assert res.to_pylist() == [{"msg": f"m{i}"} for i in range(520, 600)
                                       if i % 7 == 1]
            res = await pool.scan(filter="id < 3 or id > 597")
            assert [r["id"] for r in res.to_pylist()] == [0, 1, 2, 598, 599]
            assert set(res.columns) == {"id", "msg", "n"}
            assert await pool.count_rows("n = 6") == sum(
                1 for r in _rows(0, 100) + _rows(500, 600) if r["n"] == 6)
            batches = [r async for r in pool.iter_batches(["id"], filter=col("msg") == "m510")]
            assert [r for bt in batches for r in bt.to_pylist()] == [{"id": 510}]
            with pytest.raises(FilterError, match="cannot compare"):
                await pool.scan(filter=col("id") > "x")

    asyncio.run(go())


@pytest.mark.parametrize(("flt", "keep"), [
    ([("ts", "<", _dt.datetime(3000, 1, 1))], range(60)),
    ([("ts", ">", _dt.datetime(3000, 1, 1))], range(0)),
    ([("ts", ">=", _dt.datetime(1000, 1, 1)), ("ts", "<", _dt.datetime(9999, 12, 31))],
     range(60)),
    ("ts < '3000-01-01T00:00:00Z' and v < 3", range(3)),
    (col("ts") > np.datetime64("1000-01-01", "D"), range(60)),
])
def test_a_time_literal_beyond_int64_nanoseconds_is_exact(lake: Any, flt: Any,
                                                          keep: range) -> None:
    """Issue #39 item 12: a time past 2262 (or before 1677) bounds the key exactly, as
    everywhere else, never a raw OverflowError from the key range's filter form."""
    b, _, _ = lake

    async def go() -> None:
        async with open_lake(str(b.root)) as lk:
            pool = await lk.pool("times")
            res = await pool.scan(["v"], filter=flt)
            assert [r["v"] for r in res.to_pylist()] == list(keep)
            res = await pool.scan(["v"], key_range=(_dt.datetime(1000, 1, 1),
                                                    _dt.datetime(3000, 1, 1)))
            assert res.num_rows == 60

    asyncio.run(go())
