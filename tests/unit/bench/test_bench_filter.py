"""The filter benchmark's yardstick: bytes of the segments that hold selected rows.

``bench/bench_filter.py`` judges issue 16's "bytes read <= 1.3 x the segments
holding matching rows" target by ``holding_bytes``; a wrong yardstick would make
a target pass or fail for nothing.  Checked here on a small file with many
segments, against an answer found another way: the columns hold their row
number, so each value segment's ``min``/``max`` say which rows it holds, and
the presence runs come from the null mask the test wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


pa = pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import bench_filter  # noqa: E402

import csup_async  # noqa: E402

N = 20_000


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(5)
    nulls = rng.random(N) < 0.3
    rows = np.arange(N, dtype=np.int64)
    table = pa.table({"k": pa.array(rows), "x": pa.array(rows, mask=nulls),
                      "s": pa.array([f"row {i:06d}" for i in range(N)])})
    path = tmp_path_factory.mktemp("bench") / "small.csup"
    csup_async.write(str(path), table, segment_thresh=1024)
    return path, nulls


def presence_rows(presence: list[dict], nulls: np.ndarray) -> list[tuple[int, int, int]]:
    """(first row, end row, stored bytes) of each presence segment, from the null mask's
    runs (present first) and each segment's count of runs."""
    runs, cur, n = [], False, 0
    for is_null in nulls:
        if bool(is_null) != cur:
            runs.append(n)
            cur, n = bool(is_null), 0
        n += 1
    runs.append(n)
    run_rows = np.concatenate(([0], np.cumsum(runs)))
    out, first = [], 0
    for s in presence:
        out.append((int(run_rows[first]), int(run_rows[first + s["count"]]), s["length"]))
        first += s["count"]
    return out


def expected(path: Path, nulls: np.ndarray, column: str, selected: np.ndarray) -> int:
    """The same bytes found from the segments' bounds (values are row numbers) and from
    the presence runs of the null mask written."""
    segs = bench_filter.column_segments(path)[column]
    chosen = set(selected.tolist())
    want = [r for r in chosen if column != "x" or not nulls[r]]
    def row(bound: int | str) -> int:  # "row 012345" -> 12345
        return bound if isinstance(bound, int) else int(bound.split()[1])

    total = sum(s["length"] for s in segs["values"]
                if any(row(s["min"]) <= r <= row(s["max"]) for r in want))
    for lo, hi, length in presence_rows(segs["presence"], nulls):
        if any(lo <= r < hi for r in chosen):
            total += length
    return total


def test_the_small_file_has_many_segments(small: tuple[Path, np.ndarray]) -> None:
    segs = bench_filter.column_segments(small[0])
    assert len(segs["k"]["values"]) > 10
    assert len(segs["x"]["presence"]) > 3  # the nulls' runs span several segments
    assert not segs["k"]["presence"]


@pytest.mark.parametrize("column", ["k", "x", "s"])
@pytest.mark.parametrize("pick", ["range", "random", "one", "nulls only", "segment starts",
                                  "presence starts"])
def test_holding_bytes_matches_the_bounds(small: tuple[Path, np.ndarray], column: str,
                                          pick: str) -> None:
    path, nulls = small
    rng = np.random.default_rng(len(pick) + len(column))
    segs = bench_filter.column_segments(path)
    starts = np.array([int(str(s["min"]).split()[-1]) for c in ("k", "x", "s")
                       for s in segs[c]["values"][1::3]])  # rows that open a segment
    pstarts = np.array([lo for lo, _, _ in presence_rows(segs["x"]["presence"], nulls)[1::2]])
    selected = {"segment starts": starts, "presence starts": pstarts,
                "range": np.arange(7_001, 7_201),
                "random": rng.choice(N, 37, replace=False),
                "one": np.array([12_345]),
                "nulls only": np.flatnonzero(nulls)[100:110]}[pick]
    got = bench_filter.holding_bytes(path, [column], selected)
    want = expected(path, nulls, column, selected)
    assert got["bytes"] == want
    assert got["columns"][column]["bytes"] == want
    if pick == "nulls only" and column == "x":
        assert got["columns"]["x"]["value_segments"] == []


def test_all_rows_hold_every_segment_and_none_hold_none(
        small: tuple[Path, np.ndarray]) -> None:
    path, _ = small
    segs = bench_filter.column_segments(path)
    every = sum(s["length"] for c in ("k", "x", "s")
                for s in (*segs[c]["values"], *segs[c]["presence"]))
    assert bench_filter.holding_bytes(path, ["k", "x", "s"], np.arange(N))["bytes"] == every
    assert bench_filter.holding_bytes(path, ["k", "x", "s"], [])["bytes"] == 0


def test_rows_past_the_end_are_refused(small: tuple[Path, np.ndarray]) -> None:
    with pytest.raises(ValueError, match="past"):
        bench_filter.holding_bytes(small[0], ["k"], [N])


def test_a_file_without_statistics_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.csup"
    csup_async.write(str(path), pa.table({"k": pa.array(np.arange(100))}), statistics=False)
    with pytest.raises(ValueError, match="count"):
        bench_filter.holding_bytes(path, ["k"], [3])


def test_request_waves_split_at_a_round_trip() -> None:
    rtt = bench_filter.RTT
    # a burst of 5, one request a round trip later, then two more a round trip after that
    starts = [0.0, 0.001, 0.002, 0.004, 0.01, rtt + 0.003, 2 * rtt + 0.01, 2 * rtt + 0.012]
    assert bench_filter.request_waves(starts) == 3
    assert bench_filter.request_waves([]) == 0
