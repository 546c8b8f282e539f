"""``scan_polars`` and ``arrow_schema`` over many objects (issue #39, item 2): a dataset's
schema is the unified schema of its files, whichever files a query reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def _two_same(d: Path) -> list[str]:
    d.mkdir(parents=True, exist_ok=True)
    paths = [str(d / "a.csup"), str(d / "b.csup")]
    csup_async.write(paths[0], [{"id": 1}, {"id": 2}])
    csup_async.write(paths[1], [{"id": 3}, {"id": 4}])
    return paths


def test_a_datasets_arrow_schema_is_its_files_types(tmp_path: Path) -> None:
    _two_same(tmp_path / "d")
    with csup_async.open_dataset_sync(str(tmp_path / "d") + "/") as ds:
        assert pa.schema(ds.arrow_schema()) == pa.schema([("id", pa.int64())])
        assert ds.scan(limit=0).to_arrow().schema == pa.schema([("id", pa.int64())])


@pytest.mark.parametrize("how", ["list", "glob", "prefix"])
def test_scan_polars_reads_a_list_a_glob_and_a_prefix(tmp_path: Path, how: str) -> None:
    paths = _two_same(tmp_path / "d")
    source: Any = {"list": paths, "glob": str(tmp_path / "d" / "*.csup"),
                   "prefix": str(tmp_path / "d") + "/"}[how]
    lf = csup_async.scan_polars(source)
    assert dict(lf.collect_schema()) == {"id": pl.Int64}
    assert lf.collect()["id"].to_list() == [1, 2, 3, 4]
    assert lf.filter(pl.col("id") > 2).collect()["id"].to_list() == [3, 4]
    assert lf.head(3).collect().height == 3


def test_files_of_differing_columns_unify(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    csup_async.write(d / "a.csup", [{"id": 1, "x": 0.5}, {"id": 2, "x": None}])
    csup_async.write(d / "b.csup", [{"id": 3, "y": "three"}])
    lf = csup_async.scan_polars(str(d) + "/")
    assert dict(lf.collect_schema()) == {"id": pl.Int64, "x": pl.Float64, "y": pl.String}
    df = lf.collect()
    assert df.to_dicts() == [{"id": 1, "x": 0.5, "y": None}, {"id": 2, "x": None, "y": None},
                             {"id": 3, "x": None, "y": "three"}]
    # a filter that reads one file only: the other file's columns keep their types
    assert lf.filter(pl.col("y") == "three").collect().to_dicts() == [
        {"id": 3, "x": None, "y": "three"}]
    assert lf.filter(pl.col("x") > 0).select("y").collect().dtypes == [pl.String]


def test_files_whose_column_types_differ_keep_one_schema(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    csup_async.write(d / "a.csup", [{"v": 1}])
    csup_async.write(d / "b.csup", [{"v": "one"}])
    lf = csup_async.scan_polars(str(d) + "/")
    schema = lf.collect_schema()
    assert lf.collect().schema == schema
    assert lf.filter(pl.col("v").is_not_null()).head(1).collect().schema == schema


COLUMNS = {"i": (pl.Int64, st.integers(-10, 10)), "f": (pl.Float64, st.floats(-5, 5)),
           "s": (pl.String, st.text("abc", max_size=3))}


@st.composite
def _files(draw: Any) -> list[list[dict[str, Any]]]:
    files = []
    for _ in range(draw(st.integers(1, 4))):
        names = draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, unique=True))
        rows = draw(st.lists(st.fixed_dictionaries(
            {n: st.none() | COLUMNS[n][1] for n in names}), min_size=1, max_size=5))
        files.append(rows)
    return files


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=_files(), bound=st.integers(-3, 3))
def test_many_files_read_as_polars_concatenates_them(tmp_path: Path,
                                                     files: list[list[dict[str, Any]]],
                                                     bound: int) -> None:
    """Any files of columns drawn from one set of names and types: scan_polars over them
    is polars' own diagonal concatenation of each file's frame, filtered or not."""
    d = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    frames = []
    for k, rows in enumerate(files):
        csup_async.write(d / f"{k:02}.csup", rows)
        schema = {n: COLUMNS[n][0] for n in rows[0]}
        frames.append(pl.DataFrame(rows, schema=schema))
    want = pl.concat(frames, how="diagonal")
    lf = csup_async.scan_polars(str(d) + "/")
    got = lf.collect()
    assert got.select(sorted(got.columns)).equals(want.select(sorted(want.columns)))
    if "i" in want.columns:
        flt = pl.col("i") >= bound
        assert lf.filter(flt).collect().select(sorted(got.columns)).equals(
            want.filter(flt).select(sorted(want.columns)))
