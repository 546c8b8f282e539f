"""Partitioned datasets: partition columns in scans, and files pruned before they are opened."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import csup_async
from planner.filters import FilterError, col
from planner.filtertext import parse_filter
from planner.partitions import HIVE_NULL, PartitionError

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


LAYOUT = {  # relative path -> rows (as Spark/pyarrow lay it out)
    "year=2023/kind=push/part-0.csup": [{"id": 1, "n": 10}, {"id": 2, "n": 20}],
    "year=2024/kind=push/part-0.csup": [{"id": 3, "n": 30}],
    "year=2024/kind=pull/part-0.csup": [{"id": 4, "n": 40}, {"id": 5, "n": 50}],
    "year=2024/kind=a%2Fb/part-0.csup": [{"id": 6, "n": 60}],
    f"year={HIVE_NULL}/kind=push/part-0.csup": [{"id": 7, "n": 70}],
}


def _bytes(rows: list[Any]) -> bytes:
    buf = io.BytesIO()
    csup_async.write(buf, rows)
    return buf.getvalue()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "events"
    for rel, rows in LAYOUT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(_bytes(rows))
    (root / "_SUCCESS").write_text("")
    return root


def _rows(res: Any) -> list[dict]:
    cols = list(res.columns)
    return [dict(zip(cols, vals, strict=True))
            for vals in zip(*(res.columns[c].to_pylist() for c in cols), strict=True)]


async def test_partition_columns_are_columns(tree: Path) -> None:
    async with csup_async.open_dataset(str(tree), partitioning="hive") as ds:
        assert [(c.name, c.type) for c in ds.partitions.columns] == [("year", "int64"),
                                                                     ("kind", "string")]
        res = await ds.scan()
        assert list(res.columns) == ["id", "n", "year", "kind"]
        got = sorted(_rows(res), key=lambda r: r["id"])
        assert [(r["year"], r["kind"]) for r in got] == [
            (2023, "push"), (2023, "push"), (2024, "push"), (2024, "pull"), (2024, "pull"),
            (2024, "a/b"), (None, "push")]
        only = await ds.scan(["kind", "id"], limit=2)
        assert list(only.columns) == ["kind", "id"] and only.num_rows == 2


async def test_filters_on_partitions_skip_files_and_rows_stay_exact(tree: Path) -> None:
    async with csup_async.open_dataset(str(tree) + "/", partitioning="hive") as ds:
        assert ds.readers == []  # nothing opened yet
        res = await ds.scan(["id"], filter=parse_filter("year = 2024 and kind != 'push'"))
        assert sorted(res.column("id").to_pylist()) == [4, 5, 6]
        assert len(ds.readers) == 2  # only the matching files were opened
        plan = await ds.plan(["id"], filter=col("year") == 2023)
        assert [f.name.split("events/")[1] for f in plan.files] == [
            "year=2023/kind=push/part-0.csup"]
        # a filter that reads a data column too: pruned by the partition part, rows exact
        res = await ds.scan(["id", "year"], filter=parse_filter("year >= 2024 and n > 30"))
        assert sorted(_rows(res), key=lambda r: r["id"]) == [
            {"id": 4, "year": 2024}, {"id": 5, "year": 2024}, {"id": 6, "year": 2024}]
        res = await ds.scan(["id"], filter=parse_filter("year is null or n = 10"))
        assert sorted(res.column("id").to_pylist()) == [1, 7]
        none = await ds.scan(["id"], filter=col("year") == 1999)
        assert none.num_rows == 0
        with pytest.raises(FilterError, match="year"):
            await ds.scan(["id"], filter=col("year") == "2024")


async def test_matching_partitions_only_are_requested(range_server: Any) -> None:
    names = [range_server.put(f"parts/{rel}", _bytes(rows)) for rel, rows in LAYOUT.items()]
    urls = [range_server.url(n) for n in names]
    async with csup_async.open_dataset(urls, partitioning="hive",
                                       partition_base=range_server.url("parts/")) as ds:
        assert [c.name for c in ds.partitions.columns] == ["year", "kind"]
        assert range_server.seen() == []  # listing a list costs nothing; no file is opened
        res = await ds.scan(["id", "kind"], filter=col("kind").isin(["pull", "a/b"]))
        assert sorted(_rows(res), key=lambda r: r["id"]) == [
            {"id": 4, "kind": "pull"}, {"id": 5, "kind": "pull"}, {"id": 6, "kind": "a/b"}]
    requested = sorted({s.name for s in range_server.seen()})
    assert requested == sorted(n for n in names if "kind=pull" in n or "kind=a%2Fb" in n)
    assert len(range_server.seen()) == 2  # small files: one tail read each, nothing else


async def test_s3_prefix_partitions(moto_s3: Any) -> None:
    from csup_async.stores import S3Store

    for rel, rows in LAYOUT.items():
        moto_s3.put(f"hive/{rel}", _bytes(rows))
    async with S3Store(**moto_s3.store_options()) as store, csup_async.open_dataset(
            f"s3://{moto_s3.BUCKET}/hive/", store=store, partitioning="hive") as ds:
        assert len(ds.files) == 5
        res = await ds.scan(["id"], filter=col("year") == 2023)
        assert res.column("id").to_pylist() == [1, 2]
        assert [r.key.split("hive/")[1] for r in ds.readers] == [
            "year=2023/kind=push/part-0.csup"]


async def test_bad_partitioning_is_refused_clearly(tree: Path) -> None:
    with pytest.raises(PartitionError, match="partitioning must be"):
        await csup_async.open_dataset(str(tree), partitioning="yes")
    files = [str(p) for p in sorted(tree.rglob("*.csup"))]
    with pytest.raises(PartitionError, match="partition_base"):
        await csup_async.open_dataset(files, partitioning="hive")
    with pytest.raises(PartitionError, match="not below"):
        await csup_async.open_dataset(files, partitioning="hive", partition_base="/elsewhere/")
    # without partitioning the same files have no such columns, and a filter is exact on rows
    async with csup_async.open_dataset(str(tree)) as ds:
        res = await ds.scan(["id"], filter=col("n") >= 50)
        assert sorted(res.column("id").to_pylist()) == [5, 6, 7]


async def test_row_filters_are_typed_for_their_columns(tmp_path: Path) -> None:
    import numpy as np

    t0 = np.datetime64("2024-01-01T00:00:00", "ns")
    root = tmp_path / "t"
    for day in (1, 2):
        (root / f"day={day}").mkdir(parents=True)
        csup_async.write(str(root / f"day={day}" / "a.csup"),
                         [{"ts": t0 + np.timedelta64(h + 24 * (day - 1), "h")} for h in range(3)])
    async with csup_async.open_dataset(str(root), partitioning="hive") as ds:
        res = await ds.scan(["day"], filter=parse_filter(
            "day = 2 and ts >= '2024-01-02T01:00:00Z'"))
        assert res.column("day").to_pylist() == [2, 2]
