"""One rule for column names (issue #39, item 20): a dotted path asked for is one
column named by its path, in ``read``/``scan``, ``scan_polars``, ``to_duckdb`` and
datasets alike; asking for nothing gives the top-level columns, records as structs."""

from __future__ import annotations

from pathlib import Path

import pytest

import csup_async

pl = pytest.importorskip("polars")
ROWS = [{"id": k, "user": {"name": f"n{k}", "age": k * 10}} for k in range(5)]


@pytest.fixture
def path(tmp_path: Path) -> str:
    p = str(tmp_path / "u.csup")
    csup_async.write(p, ROWS)
    return p


def test_a_path_asked_for_is_one_column_named_by_it(path: str) -> None:
    cols = ["user.name", "id"]
    want = {"user.name": [r["user"]["name"] for r in ROWS], "id": [r["id"] for r in ROWS]}
    assert csup_async.read(path, cols).to_polars().to_dict(as_series=False) == want
    lf = csup_async.scan_polars(path, cols)
    assert lf.collect_schema().names() == cols
    assert lf.collect().to_dict(as_series=False) == want
    # the filter names the column as the frame does, and is pushed as that path
    got = lf.filter(pl.col("user.name") == "n3").collect()
    assert got.to_dicts() == [{"user.name": "n3", "id": 3}]
    with csup_async.open_dataset_sync([path, path]) as ds:
        assert ds.scan(cols).column_names == cols
    duckdb = pytest.importorskip("duckdb")
    rel = csup_async.to_duckdb(path, cols, connection=duckdb.connect())
    assert rel.columns == cols


def test_asking_for_nothing_gives_top_level_columns_records_as_structs(path: str) -> None:
    from_read = csup_async.read(path).to_polars()
    lf = csup_async.scan_polars(path)
    assert lf.collect_schema() == from_read.schema
    assert from_read.schema["user"] == pl.Struct({"name": pl.String, "age": pl.Int64})
    assert lf.select(pl.col("user").struct.field("name")).collect()["name"].to_list() == [
        r["user"]["name"] for r in ROWS]
