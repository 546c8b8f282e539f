"""A scan runs the waves its program planned (``scan.selection``), and plans nothing itself:
what depends on the rows read is one planner call per wave, made once the matches are known.
Results are held to the full scan filtered in Python."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import csup_async
import csup_async.scan.selection as selection
import planner.coalescing as coalescing
import planner.waves as waves
from planner import get_profile
from planner.filters import col, matches

#: About this library's own layout (segments with statistics): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

N = 20_000
#: A store whose round trips cost nothing: a second wave pays whenever it saves a byte.
NEVER_EARLY = dataclasses.replace(get_profile("local"), name="instant", latency=0.0)


def _mixed_rows() -> list[dict[str, Any]]:
    """Two super types that disagree on ``x`` (int64, then string), then the first again."""
    return ([{"x": i, "y": i} for i in range(N)] + [{"x": f"s{i}", "y": i} for i in range(N)]
            + [{"x": i, "y": -i} for i in range(N)])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("waves") / "mixed.csup"
    csup_async.write(str(p), _mixed_rows(), fuse=False, segment_thresh=1 << 14)
    return p


@pytest.fixture(scope="module")
def sorted_ids(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("waves") / "ids.csup"
    rows = [{"id": i, "pad": f"{i:08d}" * 8} for i in range(4 * N)]
    csup_async.write(str(p), rows, segment_thresh=1 << 14)
    return p


CASES = [
    (col("x") == 5, None), (col("x") == 5, 1), (col("x") == "s7", None), (col("x") == "s7", 1),
    (col("y") < 100, 3), (col("y") == 30, None), (col("x") == 45_000, 1), (col("y") >= 0, 7),
]


@pytest.mark.parametrize(("expr", "limit"), CASES)
@pytest.mark.parametrize("columns", [["x", "y"], ["y"], ["x"]])
async def test_a_column_of_two_types_is_filtered_by_the_types_it_decodes_as(
        mixed: Path, expr: Any, limit: int | None, columns: list[str]) -> None:
    """``x`` decodes as a union (its super types disagree): the filter is bound before any
    read by the types the arrays will have, and every wave and piece matches the full
    scan filtered in Python."""
    want = [{c: r[c] for c in columns} for r in _mixed_rows() if matches(expr, r)]
    async with csup_async.open(str(mixed)) as r:
        got = await r.scan(columns, filter=expr, limit=limit)
    assert got.to_pylist() == (want if limit is None else want[:limit])


async def test_filtered_batches_of_two_types_match_the_full_scan(mixed: Path) -> None:
    expr = col("y") < 3
    async with csup_async.open(str(mixed)) as r:
        got = [row async for b in r.iter_batches(["x", "y"], filter=expr, batch_rows=1000)
               for row in b.to_pylist()]
    assert got == [r for r in _mixed_rows() if matches(expr, r)]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls, while a program runs, of the planner's steps and of range planning."""
    counts = {"plan_piece": 0, "plan_next": 0, "plan_ranges": 0}

    def counting(fn: Any, key: str) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            counts[key] += 1
            return fn(*a, **k)
        return wrapper

    for name in ("plan_piece", "plan_next"):
        monkeypatch.setattr(selection, name, counting(getattr(waves, name), name))
    ranges = counting(coalescing.plan_ranges, "plan_ranges")
    for mod in (coalescing, waves):
        monkeypatch.setattr(mod, "plan_ranges", ranges)
    return counts


async def test_a_two_wave_scan_asks_the_planner_once_per_wave_it_could_not_know(
        sorted_ids: Path, calls: dict[str, int]) -> None:
    """The first wave was planned whole; once its matches are known, the planner is asked
    once whether a piece follows (none: no limit) and once for the second wave, whose
    ranges are the only ones planned while the program runs."""
    expr = col("id") < 500
    async with csup_async.open(str(sorted_ids), profile=NEVER_EARLY) as r:
        program = await r.plan(["id", "pad"], filter=expr)
        assert program.two_waves and program.work.rest is not None
        calls.update(plan_piece=0, plan_next=0, plan_ranges=0)
        got = await r.execute(program)
    assert calls == {"plan_piece": 1, "plan_next": 1, "plan_ranges": 1}
    assert got.to_pylist() == [{"id": i, "pad": f"{i:08d}" * 8} for i in range(500)]


async def test_a_limited_scan_plans_its_first_piece_before_any_read(
        sorted_ids: Path, calls: dict[str, int]) -> None:
    """A limit's first piece is in the program: when it holds enough matches, running it
    plans only the second wave."""
    expr = col("id") >= 1000
    async with csup_async.open(str(sorted_ids), profile=NEVER_EARLY) as r:
        program = await r.plan(["id", "pad"], filter=expr, limit=5)
        assert program.work.pieces is not None
        assert program.work.first.ranges is not None and program.work.first.ranges.rows
        calls.update(plan_piece=0, plan_next=0, plan_ranges=0)
        got = await r.execute(program)
    assert calls["plan_piece"] == 1  # asked once: enough rows matched, no next piece
    assert calls["plan_ranges"] == calls["plan_next"]  # the second wave's, if any
    assert got.to_pylist() == [{"id": i, "pad": f"{i:08d}" * 8} for i in range(1000, 1005)]
