"""Spark reads a Parquet-converted part beside an NDJSON-converted one (int32 and
int64, timestamps and strings of times, records with different fields), as a
directory of two files and as one file holding both shapes."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

import asyncio

import pyarrow as pa
import pyarrow.parquet as pq

import csup_async
from csup_async.spark.session import local_session
from csup_async.writers.inputs import read_json

UTC = dt.UTC


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-mixed", cores=2)
    yield session
    session.stop()


def _parts(d: Path) -> list[dict[str, Any]]:
    """Writes a.csup (from Parquet) and b.csup (from NDJSON); returns the rows as Spark
    should give them (times naive UTC, a string-and-time field as text)."""
    table = pa.table({
        "id": pa.array([1, 2], pa.int64()), "small": pa.array([7, None], pa.int32()),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC), None], pa.timestamp("us", "UTC")),
        "user": pa.array([{"name": "a"}, None]),
    })
    pq.write_table(table, d / "part.parquet")
    csup_async.write(d / "a.csup", pq.read_table(d / "part.parquet"))
    rows = [{"id": 3, "small": 2**40, "ts": "later", "user": {"age": 5}},
            {"id": 4, "small": None, "ts": None, "user": {"name": "c", "age": 6}}]
    (d / "part.ndjson").write_text("".join(json.dumps(r) + "\n" for r in rows))
    csup_async.write(d / "b.csup", read_json(str(d / "part.ndjson")))
    return [{"id": 1, "small": 7, "user": {"name": "a", "age": None}},
            {"id": 2, "small": None, "user": None},
            {"id": 3, "small": 2**40, "user": {"name": None, "age": 5}},
            {"id": 4, "small": None, "user": {"name": "c", "age": 6}}]


def _check(df: Any, want: list[dict[str, Any]]) -> None:
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert fields["small"] == "bigint" and fields["ts"] == "string"
    assert fields["user"] == "struct<name:string,age:bigint>"
    rows = sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"])
    for got, w in zip(rows, want, strict=True):
        assert {k: got[k] for k in w} == w
    assert rows[0]["ts"] is not None and rows[0]["ts"].startswith("2024-01-01")
    assert rows[1]["ts"] is None and rows[2]["ts"] == "later" and rows[3]["ts"] is None


def test_a_directory_of_a_parquet_and_an_ndjson_part(spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "two"
    d.mkdir()
    want = _parts(d)
    (d / "part.parquet").unlink()
    (d / "part.ndjson").unlink()
    _check(spark.read.format("csup").load(str(d)), want)


def test_one_file_with_both_shapes(spark: Any, tmp_path: Path) -> None:
    want = _parts(tmp_path)

    async def values() -> list[Any]:
        out = []
        for name in ("a.csup", "b.csup"):
            async with csup_async.open(str(tmp_path / name)) as r:
                out += await r.read_values()
        return out

    d = tmp_path / "one"
    d.mkdir()
    csup_async.write(d / "both.csup", asyncio.run(values()))
    _check(spark.read.format("csup").load(str(d)), want)
