"""Results of many types load in pandas and polars: no dense unions unless asked.

A Parquet-converted file (int32, timestamps) beside an NDJSON-converted one (int64,
times as strings) read as ``dense_union<int32, int64>`` and ``dense_union<timestamp,
large_string>``, which pandas and polars refuse.  ``to_arrow()`` now unifies them
and lists each change in ``result.conversions``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.errors import CsupError

pl = pytest.importorskip("polars")
pytest.importorskip("pandas")

_UTC = dt.UTC


def _parquet_part(tmp_path: Path) -> list[dict[str, Any]]:
    """Three rows through a Parquet file (int32 ``small``, timestamp ``ts``)."""
    table = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "small": pa.array([7, None, -9], pa.int32()),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=_UTC), None,
                        dt.datetime(2024, 1, 3, tzinfo=_UTC)], pa.timestamp("us", "UTC")),
        "user": pa.array([{"name": "a"}, {"name": "b"}, None]),
    })
    pq.write_table(table, tmp_path / "part.parquet")
    csup_async.write(tmp_path / "a.csup", pq.read_table(tmp_path / "part.parquet"))
    return table.to_pylist()


def _ndjson_part(tmp_path: Path) -> list[dict[str, Any]]:
    rows = [{"id": 4, "small": 2**40, "ts": "2024-02-01T00:00:00Z", "user": {"age": 5}},
            {"id": 5, "small": None, "ts": "not a time", "user": {"name": "c", "age": 6}}]
    (tmp_path / "part.ndjson").write_text("".join(json.dumps(r) + "\n" for r in rows))
    from csup_async.writers.inputs import read_json

    csup_async.write(tmp_path / "b.csup", read_json(str(tmp_path / "part.ndjson")))
    return rows


def _expected(v: Any) -> Any:
    """What a row's value reads back as in Python (times: numpy ns)."""
    if isinstance(v, dt.datetime):
        return np.datetime64(v.replace(tzinfo=None), "ns")
    if isinstance(v, dict):
        return {k: _expected(x) for k, x in v.items()}
    return v


def _check(table: pa.Table, python_rows: list[dict[str, Any]]) -> None:
    """Loads in pandas and polars, and every value is the Python one, per row."""
    table.to_pandas()
    pl.from_arrow(table)
    assert "union" not in str(table.schema)
    small = table.column("small").to_pylist()
    assert small == [r["small"] for r in python_rows]
    ts = table.column("ts").to_pylist()
    for got, want in zip(ts, python_rows, strict=True):
        w = want["ts"]
        if w is None:
            assert got is None
        elif isinstance(w, str):
            assert got["tag"] == 1 and got["string"] == w and got["time"] is None
        else:
            assert got["tag"] == 0 and got["time"] == w and got["string"] is None
    users = table.column("user").to_pylist()
    for got, want in zip(users, python_rows, strict=True):
        w = want["user"]
        assert got == (None if w is None else {"name": w.get("name"), "age": w.get("age")})


async def _dataset_result(tmp_path: Path) -> Any:
    async with csup_async.open_dataset([str(tmp_path / "a.csup"),
                                        str(tmp_path / "b.csup")]) as ds:
        return await ds.scan(["id", "small", "ts", "user"])


def test_a_dataset_of_a_parquet_and_an_ndjson_part_loads_everywhere(tmp_path: Path) -> None:
    rows = _parquet_part(tmp_path) + _ndjson_part(tmp_path)
    res = asyncio.run(_dataset_result(tmp_path))
    _check(res.to_arrow(), rows)
    notes = "\n".join(res.conversions)
    assert "small: union (int32,int64) widened to int64" in notes
    assert "ts: union" in notes and "struct<tag, time, string>" in notes
    assert "user: records of 2 types unified by field name" in notes


def test_one_file_with_both_shapes_loads_everywhere(tmp_path: Path) -> None:
    rows = _parquet_part(tmp_path) + _ndjson_part(tmp_path)

    async def both() -> Any:
        values = []
        for name in ("a.csup", "b.csup"):
            async with csup_async.open(str(tmp_path / name)) as r:
                values += await r.read_values()
        csup_async.write(tmp_path / "both.csup", values)
        async with csup_async.open(str(tmp_path / "both.csup")) as r:
            assert len(r.meta.super_types) == 2
            return await r.scan(["id", "small", "ts", "user"])

    res = asyncio.run(both())
    _check(res.to_arrow(), rows)


def test_dense_unions_when_asked(tmp_path: Path) -> None:
    _parquet_part(tmp_path)
    _ndjson_part(tmp_path)
    res = asyncio.run(_dataset_result(tmp_path))
    table = res.to_arrow(unions="dense")
    assert pa.types.is_union(table.schema.field("ts").type)
    assert pa.types.is_int64(table.schema.field("small").type)  # widening is exact anyway
    with pytest.raises(CsupError, match="unions must be"):
        res.to_arrow(unions="sparse")


def test_one_type_has_no_conversions(tmp_path: Path) -> None:
    csup_async.write(tmp_path / "x.csup", [{"a": 1}, {"a": None}])

    async def go() -> Any:
        async with csup_async.open(str(tmp_path / "x.csup")) as r:
            return await r.scan()

    res = asyncio.run(go())
    assert res.conversions == []
    assert res.to_arrow().schema.field("a").type == pa.int64()


def test_an_unsigned_value_beyond_int64_beside_a_signed_one_is_not_widened(
        tmp_path: Path) -> None:
    rows = [{"n": -1}, {"n": 2**64 - 1}]
    csup_async.write(tmp_path / "x.csup", rows)

    async def go() -> Any:
        async with csup_async.open(str(tmp_path / "x.csup")) as r:
            return await r.scan()

    table = asyncio.run(go()).to_arrow()
    col = table.column("n")
    # a union of both (its member order is the layout's: super sorts unions its own way)
    assert {f.name for f in col.type} == {"tag", "int64", "uint64"}
    got = col.to_pylist()
    assert [v[["int64", "uint64"][i]] for i, v in enumerate(got)] == [-1, 2**64 - 1]
    assert [_from_struct_form(v) for v in got] == [-1, 2**64 - 1]


def _from_struct_form(v: Any) -> Any:
    """A struct-form union value back to its member's value (for comparing)."""
    if isinstance(v, dict) and "tag" in v and len(v) >= 3:
        members = [k for k in v if k != "tag"]
        return _from_struct_form(v[members[v["tag"]]])
    if isinstance(v, dict):
        return {k: _from_struct_form(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_from_struct_form(x) for x in v]
    return v


_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                  st.floats(allow_nan=False), st.text(max_size=5))
_json = st.recursive(_leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(["x", "y"]), kids,
                                                max_size=2)), max_leaves=6)
_rows = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3),
                 min_size=1, max_size=30)


def _eq(want: Any, got: Any) -> bool:
    """``got`` is ``want`` with missing fields as None, every value of the same Python
    type (an int stays an int)."""
    if isinstance(want, dict):
        return (isinstance(got, dict) and set(want) <= set(got)
                and all(_eq(want.get(k), got[k]) for k in got))
    if isinstance(want, list):
        return (isinstance(got, list) and len(got) == len(want)
                and all(_eq(a, b) for a, b in zip(want, got, strict=True)))
    return type(want) is type(got) and want == got


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(rows=_rows, fuse=st.booleans())
def test_random_rows_convert_to_pandas_and_polars(
        tmp_path_factory: pytest.TempPathFactory, rows: list[Any], fuse: bool) -> None:
    path = tmp_path_factory.mktemp("u") / "x.csup"
    csup_async.write(path, rows, fuse=fuse)

    async def go() -> Any:
        async with csup_async.open(str(path)) as r:
            return await r.scan()

    table = asyncio.run(go()).to_arrow()
    assert "union" not in str(table.schema)
    table.to_pandas()
    pl.from_arrow(table)
    if table.num_columns == 0:
        return  # rows of empty records: nothing to compare
    got = [_from_struct_form(r) for r in table.to_pylist()]
    assert all(_eq(w, g) for w, g in zip(rows, got, strict=True))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(rows=st.one_of(_rows, st.lists(_json, min_size=1, max_size=30)), fuse=st.booleans(),
       batch_rows=st.integers(1, 7))
def test_every_batch_has_the_schema_of_the_whole_scan(
        tmp_path_factory: pytest.TempPathFactory, rows: list[Any], fuse: bool,
        batch_rows: int) -> None:
    """A consumer appending batches to one table (``pa.Table.from_batches``, a polars
    concat) needs one schema: a batch that happens to lack a member type or a field
    must still come out in the file's schema, and the batches' rows are the scan's."""
    path = tmp_path_factory.mktemp("b") / "x.csup"
    csup_async.write(path, rows, fuse=fuse)

    async def go() -> tuple[pa.Table, list[pa.Table]]:
        async with csup_async.open(str(path)) as r:
            whole = (await r.scan()).to_arrow()
            parts = [b.to_arrow() async for b in r.iter_batches(batch_rows=batch_rows)]
            return whole, parts

    whole, parts = asyncio.run(go())
    for part in parts:
        assert part.schema == whole.schema
    if parts:
        assert pa.concat_tables(parts).to_pylist() == whole.to_pylist()
