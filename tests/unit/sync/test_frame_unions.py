"""A column of several kinds in polars, pandas and DuckDB (issue #39, item 19): by
default the one type ``pl.read_ndjson`` and the Spark source give it (int|float ->
float64, anything beside a string -> its text), noted in ``result.conversions``;
``unions="struct"`` keeps every member exactly, as ``to_arrow`` does.  And the
result's ``.shape``, ``.schema`` and ``result["col"]`` (item 22)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import ArgumentError, ColumnNotFoundError
from csup_async.writers.inputs import read_json

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

LINES = [{"id": 1, "v": 1, "m": "a"}, {"id": 2, "v": 2.5, "m": 7},
         {"id": 3, "v": None, "m": {"k": [1, 2]}}, {"id": 4, "v": -3, "m": True}]


def _file(tmp_path: Path, rows: list[dict[str, Any]] = LINES) -> str:
    src = tmp_path / "in.ndjson"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = str(tmp_path / "t.csup")
    csup_async.write(out, read_json(str(src)))
    return out


def _ndjson(rows: list[dict[str, Any]]) -> Any:
    return pl.read_ndjson(io.StringIO("".join(json.dumps(r) + "\n" for r in rows)))


def test_polars_gets_the_types_read_ndjson_gives(tmp_path: Path) -> None:
    res = csup_async.read(_file(tmp_path))
    df = res.to_polars()
    want = _ndjson(LINES)
    assert df.schema["v"] == want.schema["v"] == pl.Float64
    assert df.schema["m"] == want.schema["m"] == pl.String
    assert df["v"].to_list() == want["v"].to_list()
    assert df["m"].to_list() == ["a", "7", '{"k":[1,2]}', "true"]
    notes = res.conversions
    assert any(n.startswith("v: union") and "float64" in n for n in notes)
    assert any(n.startswith("m: union") and "as string" in n for n in notes)


def test_pandas_and_duckdb_take_the_same_types(tmp_path: Path) -> None:
    path = _file(tmp_path)
    pdf = csup_async.read(path).to_pandas()
    assert pdf["v"].tolist()[:2] == [1.0, 2.5] and pdf["m"].tolist()[0] == "a"
    duckdb = pytest.importorskip("duckdb")
    rel = csup_async.to_duckdb(path, connection=duckdb.connect())
    assert [str(t) for t in rel.types] == ["BIGINT", "DOUBLE", "VARCHAR"]
    assert rel.filter("m = '7'").fetchall() == [(2, 2.5, "7")]


def test_scan_polars_types_and_filters_by_the_supertype(tmp_path: Path) -> None:
    path = _file(tmp_path)
    lf = csup_async.scan_polars(path)
    assert lf.collect_schema()["v"] == pl.Float64 and lf.collect_schema()["m"] == pl.String
    # a filter on a converted column sees the text polars sees, never the stored int
    assert lf.filter(pl.col("m") == "7").collect()["id"].to_list() == [2]
    assert lf.filter(pl.col("v") > 0).collect()["id"].to_list() == [1, 2]


def test_the_exact_union_stays_available(tmp_path: Path) -> None:
    res = csup_async.read(_file(tmp_path))
    assert res.to_arrow().schema.field("v").type.num_fields == 3  # tag, int64, float64
    df = res.to_polars(unions="struct")
    assert df.schema["v"] == pl.Struct
    assert res.conversions[0].endswith("(tag: the member's index)")
    lf = csup_async.scan_polars(_file(tmp_path), unions="struct")
    assert lf.collect_schema()["m"] == pl.Struct
    assert res.to_arrow(unions="supertype").schema.field("m").type == pa.large_string()


@pytest.mark.parametrize("bad", ["string", "polars", None])
def test_a_wrong_union_mode_names_the_accepted_ones(tmp_path: Path, bad: Any) -> None:
    res = csup_async.read(_file(tmp_path))
    with pytest.raises(ArgumentError, match="'struct', 'dense', 'supertype'"):
        res.to_arrow(unions=bad)
    with pytest.raises(ArgumentError):
        res.to_polars(unions=bad)


SCALARS = st.one_of(st.integers(-2**40, 2**40), st.floats(-1e6, 1e6, allow_nan=False),
                    st.text(alphabet="ab", max_size=3), st.none())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(SCALARS, min_size=1, max_size=8))
def test_any_mix_of_numbers_and_strings_reads_as_read_ndjson(tmp_path: Path,
                                                             values: list[Any]) -> None:
    """Whatever ints, floats, strings and nulls a field holds, to_polars gives the
    dtype and values pl.read_ndjson gives (numbers as text beside a string: JSON's)."""
    rows = [{"x": v} for v in values]
    try:
        want = _ndjson(rows)
    except Exception:  # a mix polars refuses
        return
    d = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    got = csup_async.read(_file(d, rows)).to_polars()
    assert got.schema["x"] == want.schema["x"] or want.schema["x"] == pl.Null
    if want.schema["x"] == pl.String:  # polars writes a float's text its own way
        assert [g if isinstance(v, (str, int)) or v is None else float(g)
                for g, v in zip(got["x"].to_list(), values, strict=True)] == [
            v if isinstance(v, str) or v is None else (str(v) if isinstance(v, int)
                                                        else float(v)) for v in values]
    else:
        assert got["x"].to_list() == want["x"].to_list()


def test_a_result_has_shape_schema_and_columns_by_name(tmp_path: Path) -> None:
    path = str(tmp_path / "r.csup")
    csup_async.write(path, [{"a": 1, "user": {"name": "x"}}, {"a": 2, "user": {"name": "y"}}])
    res = csup_async.read(path, ["a", "user.name"])
    assert res.shape == (2, 2) == res.to_polars().shape
    assert pa.schema(res.schema) == res.to_arrow().schema
    assert res.schema.names == ["a", "user.name"] and res.schema.types["a"] == "int64"
    assert res["a"].to_pylist() == [1, 2] and res["user.name"].to_pylist() == ["x", "y"]
    assert "a" in res and "b" not in res
    with pytest.raises(ColumnNotFoundError):
        res["b"]
    with pytest.raises(ArgumentError):
        res[0]  # type: ignore[index]
