"""Many files as one dataset: listing, pruning, row order, nulls for pruned files."""

from __future__ import annotations

import pytest

import csup_async
from csup_async import ColumnNotFoundError

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



@pytest.fixture
def files(tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    csup_async.write(str(d / "a.csup"), [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}])
    csup_async.write(str(d / "b.csup"), [{"z": True}] * 3)  # no x, no y: pruned for x
    csup_async.write(str(d / "c.csup"), [{"x": 3}, 5, {"x": None, "y": "c"}])  # 3 super types
    csup_async.write(str(d / "d.csup"), [{"x": None, "y": None}] * 2)  # x all null
    (d / "_SUCCESS").write_text("")
    return d


async def test_prefix_scan_in_file_order_with_nulls_for_pruned(files):
    async with csup_async.open_dataset(str(files)) as ds:
        assert [f.rsplit("/", 1)[1] for f in ds.files] == ["a.csup", "b.csup", "c.csup",
                                                          "d.csup"]
        res = await ds.scan(["x"])
        plan = await ds.plan(["x"])
    assert res.column("x").to_pylist() == [1, 2, None, None, None, 3, None, None, None, None]
    pruned = {p.name.rsplit("/", 1)[1]: p.reason for p in plan.pruned}
    assert pruned == {"b.csup": "no requested path", "d.csup": "all null"}


async def test_glob_and_list_sources(files):
    async with csup_async.open_dataset(str(files / "[ac].csup")) as ds:
        res = await ds.scan(["y"])
    assert res.to_pylist() == [{"y": "a"}, {"y": "b"}, {"y": None}, {"y": None}, {"y": "c"}]
    urls = [str(files / "d.csup"), str(files / "a.csup")]
    async with csup_async.open_dataset(urls) as ds:
        res = await ds.scan("x,y")
    assert res.column("y").to_pylist() == [None, None, "a", "b"]


async def test_missing_column_everywhere(files):
    async with csup_async.open_dataset(str(files)) as ds:
        with pytest.raises(ColumnNotFoundError, match="nope"):
            await ds.scan(["nope"])


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 5, 6, 10, 100])
async def test_limit_returns_the_first_rows_and_reads_only_the_files_it_needs(files, limit):
    async with csup_async.open_dataset(str(files)) as ds:
        full = await ds.scan(["x", "y"])
        got = await ds.scan(["x", "y"], limit=limit)
    assert got.to_pylist() == full.to_pylist()[:limit]
    assert got.num_rows == min(limit, full.num_rows)
    # a.csup holds 2 rows, b.csup 3 (pruned: no data request), c.csup 3, d.csup 2
    files_needed = next(i + 1 for i, covered in enumerate([2, 5, 8, 10, 10 ** 9])
                        if covered >= limit) if limit else 0
    assert len(got.plan.files) + len(got.plan.pruned) == min(files_needed, 4)
    assert got.stats.bytes_read <= full.stats.bytes_read
    if limit <= 2:
        assert got.stats.requests <= 1


async def test_negative_limit_is_a_clear_error(files):
    async with csup_async.open_dataset(str(files)) as ds:
        with pytest.raises(csup_async.CsupError, match="limit"):
            await ds.scan(["x"], limit=-1)
