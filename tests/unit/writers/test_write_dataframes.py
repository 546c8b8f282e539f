"""Data frames are written as their columns, and things that iterate but are not rows
are refused with what to pass: a pandas DataFrame used to be written as rows of its
column *names* (``[{'': 'a'}, {'': 'b'}]``), without an error."""

from __future__ import annotations

import builtins
import io
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import csup_async
from csup_async import EncodeError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")


async def _rows(path: Path) -> list[Any]:
    async with csup_async.open(str(path)) as r:
        return await r.read_rows()


async def test_a_pandas_dataframe_is_written_as_its_columns(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"], "f": [1.5, np.nan, -2.0]},
                      index=[10, 20, 30])
    dest = tmp_path / "p.csup"
    assert csup_async.write(dest, df) == 3
    rows = await _rows(dest)
    assert [r["a"] for r in rows] == [1, 2, 3]
    assert [r["b"] for r in rows] == ["x", None, "z"]
    assert rows[0]["f"] == 1.5 and rows[2]["f"] == -2.0
    assert set(rows[0]) == {"a", "b", "f"}  # the index is not a column (reset_index() keeps it)


async def test_a_polars_dataframe_is_written_as_its_columns(tmp_path: Path) -> None:
    df = pl.DataFrame({"a": [1, 2], "s": ["x", "yy"], "l": [[1], [2, 3]],
                       "r": [{"x": 1}, {"x": None}]})
    dest = tmp_path / "q.csup"
    assert csup_async.write(dest, df) == 2
    assert await _rows(dest) == df.to_dicts()


async def test_a_pandas_dataframe_reads_back_as_pandas_would_write_it(tmp_path: Path) -> None:
    df = pd.DataFrame({"id": np.arange(1000), "name": [f"n{i}" for i in range(1000)]})
    dest = tmp_path / "big.csup"
    csup_async.write(dest, df)
    async with csup_async.open(str(dest)) as r:
        back = (await r.scan()).to_arrow().to_pandas()
    pd.testing.assert_frame_equal(back, df, check_dtype=False)


def test_a_pandas_dataframe_arrow_cannot_hold_says_how_to_write_it(tmp_path: Path) -> None:
    df = pd.DataFrame({"o": [1, "x"]})  # an object column of mixed types
    with pytest.raises(EncodeError, match=r"to_dict\('records'\)"):
        csup_async.write(tmp_path / "o.csup", df)
    assert list(tmp_path.iterdir()) == []


def test_without_pyarrow_a_dataframe_is_refused_saying_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_pyarrow(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("no pyarrow")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(EncodeError, match=r"needs pyarrow.*csup-async\[arrow\]"):
        csup_async.write(tmp_path / "p.csup", pd.DataFrame({"a": [1]}))
    with pytest.raises(EncodeError, match=r"needs pyarrow.*to_dicts\(\)"):
        csup_async.write(tmp_path / "q.csup", pl.DataFrame({"a": [1]}))


@pytest.mark.parametrize(("make", "match"), [
    (lambda: pd.Series([1, 2]), r"pandas Series.*to_frame\(\)"),
    (lambda: pd.Index([1, 2]), r"pandas Index.*DataFrame"),
    (lambda: pl.Series([1, 2]), r"polars Series.*to_frame\(\)"),
    (lambda: pl.DataFrame({"a": [1]}).lazy(), r"LazyFrame.*collect\(\)"),
    (lambda: np.zeros((2, 3)), r"2-d numpy array.*tolist\(\)"),
    (lambda: "abc", r"str, not rows.*\[value\]"),
    (lambda: b"abc", r"bytes, not rows.*\[value\]"),
    (lambda: bytearray(b"ab"), r"bytearray, not rows"),
    (lambda: {"a": 1, "b": "x"}, r"pass a list of rows: \[row\]"),
    (lambda: {"a": [1, 2]}, r"1-d numpy arrays"),
    (lambda: 42, r"int, not rows: pass an iterable of rows"),
])
def test_objects_that_are_not_rows_are_refused_saying_what_to_pass(
        tmp_path: Path, make: Any, match: str) -> None:
    dest = tmp_path / "out.csup"
    with pytest.raises(EncodeError, match=match) as err:
        csup_async.write(dest, make())
    assert err.value.path == str(dest)
    with pytest.raises(EncodeError, match=match):
        csup_async.write(io.BytesIO(), make())
    assert list(tmp_path.iterdir()) == []


def test_writing_plain_rows_does_not_import_pandas_or_polars(tmp_path: Path) -> None:
    import subprocess

    code = ("import sys, csup_async; csup_async.write(sys.argv[1], [{'a': 1}]); "
            "print(sorted(m for m in ('pandas', 'polars') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.csup")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_any_arrow_c_stream_is_written_as_its_columns(tmp_path: Path) -> None:
    """An object exporting ``__arrow_c_stream__`` (here a ScanResult) goes through Arrow."""
    src = tmp_path / "src.csup"
    rows = [{"a": i, "s": f"s{i}"} for i in range(50)]
    csup_async.write(src, rows)
    async with csup_async.open(str(src)) as r:
        res = await r.scan()
    dest = tmp_path / "copy.csup"
    assert csup_async.write(dest, res) == 50
    assert await _rows(dest) == rows
