"""One scanner for one file and many: a Dataset's verbs give what its files' rows give.

The oracle is independent of the scanner: every file's values read whole
(``read_rows``) and the filter evaluated on each row in Python
(``planner.filters.matches``), concatenated in file order.
"""

from __future__ import annotations

import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import RowSelectionError
from csup_async.datasets.dataset import Dataset
from planner.filters import col, matches
from planner.filtertext import parse_filter

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


SHAPES = {  # files of different shapes in one dataset
    "a.csup": [{"x": i, "y": "ab"[i % 2]} for i in range(40)],
    "b.csup": [{"z": True}] * 3,  # neither x nor y
    "c.csup": [{"x": 3}, 5, {"x": None, "y": "c"}, {"x": 7.5}],  # several super types
    "d.csup": [{"x": None, "y": None}] * 2,
    "e.csup": [{"x": i, "y": "b"} for i in range(100, 160)],
}
FILTERS = [None, "x >= 20", "x < 5 or y = 'c'", "y is null", "not (x = 3)", "y = 'b'",
           "z = true", "x > 1000", "x is not null and y = 'a'"]


@pytest.fixture
def shapes(tmp_path: Path) -> Path:
    d = tmp_path / "shapes"
    d.mkdir()
    for name, rows in SHAPES.items():
        csup_async.write(str(d / name), rows, segment_thresh=256)
    return d


def _value(row: Any, path: str) -> Any:
    return row.get(path) if isinstance(row, dict) else None


def _oracle(cols: list[str], text: str | None) -> list[dict[str, Any]]:
    expr = parse_filter(text) if text else None
    rows = [r for name in sorted(SHAPES) for r in SHAPES[name]]
    kept = [r for r in rows if expr is None or matches(expr, r if isinstance(r, dict) else {})]
    return [{c: _value(r, c) for c in cols} for r in kept]


@pytest.mark.parametrize("text", FILTERS)
@pytest.mark.parametrize("cols", [["x"], ["y", "x"], ["z", "y"]])
async def test_dataset_verbs_agree_with_the_files_rows(shapes, text, cols) -> None:
    want = _oracle(cols, text)
    async with csup_async.open_dataset(str(shapes)) as ds:
        assert (await ds.scan(cols, filter=text)).to_pylist() == want
        assert await ds.count_rows(filter=text) == len(want)
        assert (await ds.head(7, cols, filter=text)).to_pylist() == want[:7]
        got: list[dict[str, Any]] = []
        async for batch in ds.iter_batches(cols, batch_rows=16, filter=text):
            assert 0 < batch.num_rows <= 16 and list(batch.columns) == cols
            got += batch.to_pylist()
        assert got == want
        limited = [r async for b in ds.iter_batches(cols, batch_rows=8, filter=text, limit=11)
                   for r in b.to_pylist()]
        assert limited == want[:11]
        frags = await ds.get_fragments(filter=text)
        each = [r for f in frags for r in (await f.scan(cols, filter=text)).to_pylist()]
        assert each == want  # the fragments a filter keeps hold every matching row


async def test_take_across_files_in_file_order(shapes) -> None:
    everything = _oracle(["x", "y"], None)
    rng = np.random.default_rng(7)
    idx = [*rng.integers(0, len(everything), 50).tolist(), 0, len(everything) - 1, 0]
    async with csup_async.open_dataset(str(shapes)) as ds:
        got = await ds.take(idx, ["x", "y"])
        assert got.to_pylist() == [everything[i] for i in idx]
        assert (await ds.take([], ["x"])).num_rows == 0
        with pytest.raises(RowSelectionError, match="out of range"):
            await ds.take([len(everything)], ["x"])
        with pytest.raises(RowSelectionError, match="negative"):
            await ds.take([-1], ["x"])


async def test_rows_slice_numbers_rows_over_every_file(shapes) -> None:
    everything = _oracle(["x"], None)
    async with csup_async.open_dataset(str(shapes)) as ds:
        for rows in (slice(30, 50), slice(0, 3), slice(-20, None), slice(44, 46)):
            assert (await ds.scan(["x"], rows=rows)).to_pylist() == everything[rows]
        with pytest.raises(RowSelectionError, match="step"):
            await ds.scan(["x"], rows=slice(0, 10, 2))


async def test_one_file_as_a_one_fragment_dataset_reads_as_the_reader(shapes) -> None:
    async with csup_async.open(str(shapes / "a.csup")) as r:
        ds = Dataset.of_readers([r])
        for text in FILTERS[:3]:
            want = await r.scan(["x", "y"], filter=text)
            got = await ds.scan(["x", "y"], filter=text)
            assert got.to_pylist() == want.to_pylist()
        assert await ds.count_rows() == await r.count_rows()
        assert (await ds.take([3, 1], ["y"])).to_pylist() == (
            await r.take([3, 1], ["y"])).to_pylist()


async def test_filter_prunes_zones_inside_each_kept_file(tmp_path) -> None:
    """Kept files are not read whole: each runs its own filtered scan."""
    d = tmp_path / "sorted"
    d.mkdir()
    for k in range(3):
        rows = [{"ts": k * 100_000 + i, "pad": f"{i:08d}" * 4} for i in range(20_000)]
        csup_async.write(str(d / f"{k}.csup"), rows, segment_thresh=16 << 10)
    narrow = (col("ts") >= 100_500) & (col("ts") < 101_000)  # inside file 1 only
    async with csup_async.open_dataset(str(d)) as ds:
        full = await ds.scan(["ts", "pad"])
        got = await ds.scan(["ts", "pad"], filter=narrow)
    assert got.column("ts").to_pylist() == list(range(100_500, 101_000))
    assert [p.name.rsplit("/", 1)[1] for p in got.plan.pruned] == ["0.csup", "2.csup"]
    # one file of three holds the rows: read whole it would cost a third (34%)
    assert got.stats.bytes_read * 6 < full.stats.bytes_read


async def test_partitioned_fragments_carry_their_values(tmp_path) -> None:
    root = tmp_path / "p"
    for year in (2023, 2024):
        (root / f"year={year}").mkdir(parents=True)
        csup_async.write(str(root / f"year={year}" / "f.csup"),
                         [{"id": year * 10 + i} for i in range(3)])
    async with csup_async.open_dataset(str(root), partitioning="hive") as ds:
        frags = await ds.get_fragments(filter="year = 2024 or id = 20231")
        assert [f.partition_values for f in frags] == [{"year": 2023}, {"year": 2024}]
        assert (await frags[0].scan(["id", "year"], filter="year = 2024 or id = 20231")
                ).to_pylist() == [{"id": 20231, "year": 2023}]
        assert await ds.count_rows(filter="year = 2024") == 3
        only = await ds.get_fragments(filter="year = 2024")
        assert len(only) == 1 and len(ds.readers) == 2  # opened for the first call
        assert (await ds.take([5, 0], ["year", "id"])).to_pylist() == [
            {"year": 2024, "id": 20242}, {"year": 2023, "id": 20230}]


async def test_iter_batches_over_500_files_holds_a_batch_not_the_result(tmp_path) -> None:
    d = tmp_path / "many"
    d.mkdir()
    for k in range(500):
        csup_async.write(str(d / f"{k:03d}.csup"),
                         [{"id": k * 1000 + i, "v": float(i), "s": f"row {i:06d}"}
                          for i in range(0, 1000, 1)])
    text = "v >= 100"
    async with csup_async.open_dataset(str(d)) as ds:
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            whole = await ds.scan(["id", "s"], filter=text)
            scan_peak = tracemalloc.get_traced_memory()[1] - base
            n_whole = whole.num_rows
            del whole
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            n, last = 0, -1
            async for b in ds.iter_batches(["id", "s"], batch_rows=4096, filter=text):
                ids = b.column("id").to_numpy()
                assert ids[0] > last
                last, n = int(ids[-1]), n + b.num_rows
            batches_peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    assert n == n_whole == 500 * 900
    assert batches_peak * 8 < scan_peak, (batches_peak, scan_peak)


async def test_a_filtered_dataset_scan_plans_each_file_once(shapes, monkeypatch) -> None:
    """The dataset plans no file itself: each kept file's own scan is its one plan."""
    import planner
    from csup_async.readers.reader import Reader

    scans: list[str] = []
    real_plan = Reader.plan_with  # each kept file's scan plans it once, then executes that

    async def counted(self: Reader, *args: Any, **kwargs: Any) -> Any:
        scans.append(self.key.rsplit("/", 1)[1])
        return await real_plan(self, *args, **kwargs)

    def no_plan_files(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the dataset planned files itself")

    async with csup_async.open_dataset(str(shapes)) as ds:
        monkeypatch.setattr(Reader, "plan_with", counted)  # the request's plan, below `plan`
        monkeypatch.setattr(planner, "plan_files", no_plan_files)
        got = await ds.scan(["x", "y"], filter="x >= 100")
    assert got.num_rows == 60
    # a, d: statistics rule them out (no plan, no read); b has no x (null: false); c's
    # x is int64 in one super type and float64 in another, so its statistics say nothing
    assert scans == ["c.csup", "e.csup"]


async def test_rows_of_files_without_a_column_give_nulls_not_an_error(shapes) -> None:
    async with csup_async.open_dataset(str(shapes)) as ds:
        got = await ds.scan(["z"], rows=slice(0, 2))  # z is only in b.csup, past these rows
    assert got.to_pylist() == [{"z": None}, {"z": None}]


_rows_st = st.lists(st.one_of(
    st.fixed_dictionaries({"id": st.integers(-5, 5)},
                          optional={"s": st.one_of(st.none(), st.text(alphabet="ab", max_size=2)),
                                    "v": st.one_of(st.none(), st.floats(-3, 3))}),
    st.integers(0, 3)), min_size=0, max_size=30)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(_rows_st, min_size=1, max_size=4),
       text=st.sampled_from(["id = 1", "id >= 0 and v < 1.5", "not (id = 2)",
                             "s startswith 'a' or v is null", "s is null", "v != 0.5"]),
       limit=st.one_of(st.none(), st.integers(0, 40)))
async def test_dataset_filter_and_limit_are_the_files_rows_filtered(files, text, limit) -> None:
    """Random files (records of varying fields beside plain integers: several super
    types) as one dataset: the rows a filter keeps, the first ``limit``."""
    expr = parse_filter(text)
    files = [*files, [{"id": 9, "s": "b", "v": 9.0}]]  # some file has every column
    rows = [r for f in files for r in f]
    want = [{"id": _value(r, "id"), "s": _value(r, "s")} for r in rows
            if matches(expr, r if isinstance(r, dict) else {})]
    with tempfile.TemporaryDirectory() as d:
        for k, f in enumerate(files):
            csup_async.write(str(Path(d) / f"{k}.csup"), f)
        async with csup_async.open_dataset(d) as ds:
            got = await ds.scan(["id", "s"], filter=text, limit=limit)
            batches = [r async for b in ds.iter_batches(["id", "s"], batch_rows=7, filter=text,
                                                        limit=limit) for r in b.to_pylist()]
            n = await ds.count_rows(filter=text)
    assert got.to_pylist() == batches == want[:limit]
    assert n == len(want)
