"""Fusing on write: schema-free rows become one table, and every value comes back.

Rows typed one by one got a super type per null pattern (20,000 log rows with sparse
nulls: 157 super types, a bigger file than the same rows from Parquet).  By default
``csup_async.write`` writes rows that differ by nulls, missing fields or a
conflicting field under one record type; ``fuse=False`` keeps exact per-row types.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from bench.sparse_rows import sparse_ndjson
from csup_async.model.errors import EncodeError
from csup_async.model.types import (
    FLOAT64,
    INT64,
    NULL,
    STRING,
    ArrayType,
    Field,
    RecordType,
    UnionType,
)
from csup_async.model.values import infer_type
from csup_async.writers.fuse import encode_fused, fuse_types
from tests.support.paths import ROOT

#: About this library's own layout (its bytes, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



async def _read(path: Path) -> tuple[list[Any], list[str]]:
    async with csup_async.open(str(path)) as r:
        return await r.read_rows(), [str(t) for t in r.meta.super_types]


def _roundtrip(tmp_path: Path, rows: list[Any], **opts: Any) -> tuple[list[Any], list[str]]:
    p = tmp_path / "x.csup"
    csup_async.write(p, rows, **opts)
    return asyncio.run(_read(p))


def _rec(**fields: Any) -> RecordType:
    return RecordType(tuple(Field(k, v) for k, v in fields.items()))


def _same(written: Any, read: Any) -> bool:
    """``read`` is ``written`` with every missing field as None, every value of the
    same Python type (an int stays an int, never a float or a bool)."""
    if isinstance(written, dict):
        return (isinstance(read, dict) and set(written) <= set(read)
                and all(_same(written.get(k), read[k]) for k in read))
    if isinstance(written, (list, tuple)):
        return (isinstance(read, list) and len(read) == len(written)
                and all(_same(a, b) for a, b in zip(written, read, strict=True)))
    if isinstance(written, float) and written != written:
        return isinstance(read, float) and read != read
    return type(written) is type(read) and written == read


# ------------------------------------------------------------------ the rule ---

def test_a_null_takes_the_type_of_its_siblings() -> None:
    assert fuse_types(_rec(k=STRING), _rec(k=NULL)) == _rec(k=STRING)
    assert fuse_types(_rec(k=NULL), _rec(k=STRING)) == _rec(k=STRING)


def test_a_missing_field_is_a_null_of_the_fused_type_in_first_seen_order() -> None:
    assert fuse_types(_rec(a=INT64), _rec(b=STRING, a=INT64)) == _rec(a=INT64, b=STRING)


def test_a_conflict_is_a_union_field_inside_one_record() -> None:
    assert fuse_types(_rec(k=INT64), _rec(k=STRING)) == _rec(k=UnionType((INT64, STRING)))
    fused = fuse_types(_rec(k=UnionType((INT64, STRING))), _rec(k=FLOAT64))
    assert fused == _rec(k=UnionType((INT64, STRING, FLOAT64)))


def test_nested_records_and_array_elements_fuse_by_kind() -> None:
    a = _rec(d=_rec(x=INT64), l=ArrayType(NULL))
    b = _rec(d=_rec(y=STRING), l=ArrayType(INT64))
    assert fuse_types(a, b) == _rec(d=_rec(x=INT64, y=STRING), l=ArrayType(INT64))
    mixed = fuse_types(_rec(v=_rec(x=INT64)), _rec(v=ArrayType(INT64)))
    assert mixed == _rec(v=UnionType((_rec(x=INT64), ArrayType(INT64))))


def test_a_value_that_does_not_fit_its_fused_type_is_refused() -> None:
    with pytest.raises(EncodeError):
        encode_fused(_rec(a=INT64), {"a": 1, "zz": 2})
    with pytest.raises(EncodeError):
        encode_fused(INT64, 1.5)  # never converted silently


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                       st.floats(allow_nan=False), st.text(max_size=6))
_json = st.recursive(_json_leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.sampled_from("abcd"), kids, max_size=3)),
    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(a=_json, b=_json)
def test_values_of_both_types_are_written_exactly_under_their_fusion(a: Any, b: Any) -> None:
    fused = fuse_types(infer_type(a), infer_type(b))
    for v in (a, b):
        back = csup_async.format.bsup.decode_value(fused, encode_fused(fused, v))
        assert _same(v, back)


# --------------------------------------------------------------- the writer ---

def test_null_patterns_and_missing_fields_are_one_super_type(tmp_path: Path) -> None:
    rows = [{"k": "a", "n": 1}, {"k": None, "n": 2}, {"n": 3}, {"k": "d", "n": None}]
    back, types = _roundtrip(tmp_path, rows)
    assert types == ["{k:string,n:int64}"]
    assert back == [{"k": "a", "n": 1}, {"k": None, "n": 2}, {"k": None, "n": 3},
                    {"k": "d", "n": None}]


def test_a_conflicting_field_keeps_every_value_exact(tmp_path: Path) -> None:
    rows = [{"v": 1}, {"v": "one"}, {"v": 1.5}, {"v": True}, {"v": [1, "x"]}, {"v": {"w": 1}}]
    back, types = _roundtrip(tmp_path, rows)
    assert len(types) == 1
    assert all(_same(a, b) for a, b in zip(rows, back, strict=True))


def test_fuse_false_keeps_exact_per_row_types(tmp_path: Path) -> None:
    rows = [{"k": "a"}, {"k": None}, {}, {"k": 1}]
    back, types = _roundtrip(tmp_path, rows, fuse=False)
    assert back == rows
    assert types == ["{k:string}", "{k:null}", "{}", "{k:int64}"]


def test_a_field_first_seen_after_the_first_chunk_starts_a_new_super_type(
        tmp_path: Path) -> None:
    from csup_async.writers.pyrows import CHUNK_ROWS

    rows: list[Any] = [{"a": i} for i in range(CHUNK_ROWS + 10)]
    rows += [{"a": 1, "late": "x"}] + [{"a": i} for i in range(CHUNK_ROWS)]
    back, types = _roundtrip(tmp_path, rows)
    assert types == ["{a:int64}", "{a:int64,late:string}"]
    assert all(_same(a, b) for a, b in zip(rows, back, strict=True))


def test_rows_the_vectorised_path_cannot_type_fuse_too(tmp_path: Path) -> None:
    import datetime as dt

    when = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    rows = [{"t": when, "n": 1}, {"t": None, "n": 2**63}, {"n": 3}]
    back, types = _roundtrip(tmp_path, rows)
    assert types == ["{t:time,n:(int64,uint64)}"]
    stamp = np.datetime64("2024-01-02T00:00:00", "ns")  # how a time reads back
    assert back == [{"t": stamp, "n": 1}, {"t": None, "n": 2**63}, {"t": None, "n": 3}]


def test_a_bad_value_is_still_refused_where_it_is(tmp_path: Path) -> None:
    with pytest.raises(EncodeError, match="outside int64"):
        csup_async.write(io.BytesIO(), [{"a": 1}, {"a": 2**70}])
    with pytest.raises(EncodeError, match="fuse must be"):
        csup_async.write(io.BytesIO(), [{"a": 1}], fuse="yes")


def test_arrow_input_is_unchanged_by_fusing() -> None:
    t = pa.table({"a": [1, None, 3], "s": ["x", None, "z"]})
    a, b = io.BytesIO(), io.BytesIO()
    csup_async.write(a, t)
    csup_async.write(b, t, fuse=False)
    assert a.getvalue() == b.getvalue()


_rowsets = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _json, max_size=4)
                    | st.none(), max_size=60)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(rows=_rowsets, fuse=st.booleans())
def test_random_rows_round_trip(tmp_path_factory: pytest.TempPathFactory, rows: list[Any],
                                fuse: bool) -> None:
    back, _ = _roundtrip(tmp_path_factory.mktemp("h"), rows, fuse=fuse)
    if fuse:
        assert all(_same(a, b) for a, b in zip(rows, back, strict=True))
        assert len(back) == len(rows)
    else:
        assert back == rows
        assert all(_same(a, b) and _same(b, a) for a, b in zip(rows, back, strict=True))


# ------------------------------------------------ the sparse NDJSON target ---

def test_twenty_thousand_sparse_ndjson_rows_are_one_table(tmp_path: Path) -> None:
    text = sparse_ndjson(20_000)
    rows = [json.loads(line) for line in text.splitlines()]
    fused = tmp_path / "fused.csup"
    csup_async.write(fused, rows)
    back, types = asyncio.run(_read(fused))
    assert len(types) == 1
    keys = list(dict.fromkeys(k for r in rows for k in r))
    assert back == [{k: r.get(k) for k in keys} for r in rows]
    # the same rows through Parquet, as a user converts them
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    from_parquet = tmp_path / "parquet.csup"
    csup_async.write(from_parquet, pq.read_table(tmp_path / "rows.parquet"))
    assert fused.stat().st_size <= 1.05 * from_parquet.stat().st_size


def test_cli_convert_fuses_unless_told_not_to(tmp_path: Path) -> None:
    src = tmp_path / "rows.ndjson"
    src.write_text('{"k": "a"}\n{"k": null}\n{}\n')
    for flag, count in (([], 1), (["--no-fuse"], 3)):
        out = tmp_path / f"out{count}.csup"
        subprocess.run([sys.executable, "-m", "csup_async.cli", "convert", str(src), str(out),
                        *flag], check=True, cwd=ROOT, capture_output=True)
        _, types = asyncio.run(_read(out))
        assert len(types) == count


# ------------------------------------------------------------ --infer-times ---

def test_infer_times_makes_rfc3339_strings_times(tmp_path: Path) -> None:
    rows = [{"ts": "2024-01-02T03:04:05.123456789Z", "s": "2024-01-02"},
            {"ts": "2024-01-02T05:04:05+02:00", "s": "x"},
            {"ts": None, "s": None}, {"s": "y"}]
    back, types = _roundtrip(tmp_path, rows, infer_times=True)
    assert types == ["{ts:time,s:string}"]
    assert [r["ts"] for r in back] == [np.datetime64("2024-01-02T03:04:05.123456789", "ns"),
                                      np.datetime64("2024-01-02T03:04:05", "ns"), None, None]
    assert [r["s"] for r in back] == ["2024-01-02", "x", None, "y"]


@pytest.mark.parametrize("odd", ["2024-13-02T03:04:05Z", "2024-01-02T03:04:05",
                                 "2024-12-31T23:59:60Z", "2024-01-02T03:04:05+24:00",
                                 "2024-01-02T03:04:05+99:99", "2024-01-02T03:04:05-00:60"])
def test_strings_that_are_not_all_timestamps_stay_strings(tmp_path: Path, odd: str) -> None:
    rows = [{"ts": "2024-01-02T03:04:05Z"}, {"ts": odd}]
    back, types = _roundtrip(tmp_path, rows, infer_times=True)
    assert types == ["{ts:string}"]
    assert back == rows


def test_strings_stay_strings_unless_asked(tmp_path: Path) -> None:
    rows = [{"ts": "2024-01-02T03:04:05Z"}]
    assert _roundtrip(tmp_path, rows)[0] == rows


def test_cli_convert_infer_times(tmp_path: Path) -> None:
    src = tmp_path / "rows.ndjson"
    src.write_text('{"ts": "2024-01-02T03:04:05Z"}\n{"ts": "2024-01-03T00:00:00-01:30"}\n')
    out = tmp_path / "out.csup"
    subprocess.run([sys.executable, "-m", "csup_async.cli", "convert", str(src), str(out),
                    "--infer-times"], check=True, cwd=ROOT, capture_output=True)
    back, types = asyncio.run(_read(out))
    assert types == ["{ts:time}"]
    assert back[1]["ts"] == np.datetime64("2024-01-03T01:30:00", "ns")


# ---------------------------------------------------------------- inspect ---

def _inspect(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "csup_async.cli", "inspect", *args],
                          check=True, cwd=ROOT, capture_output=True, text=True).stdout


def test_inspect_of_many_super_types_shows_the_fused_view_and_a_row_count(
        tmp_path: Path) -> None:
    rows = [json.loads(line) for line in sparse_ndjson(2000, seed=3).splitlines()]
    path = tmp_path / "exact.csup"
    csup_async.write(path, rows, fuse=False)
    _, types = asyncio.run(_read(path))
    assert len(types) > 100
    text = _inspect(str(path))
    assert "rows: 2,000" in text
    assert len(text.splitlines()) < 80 and "super type 0:" not in text
    line = next(ln for ln in text.splitlines() if ln.split()[:1] == ["latency_ms"])
    ints = sum(isinstance(r.get("latency_ms"), int) for r in rows)
    nulls = sum("latency_ms" in r and r["latency_ms"] is None for r in rows)
    missing = sum("latency_ms" not in r for r in rows)
    assert f"int64 {ints:,}" in line and f"null {nulls:,}" in line
    assert f"missing {missing:,}" in line
    detail = _inspect("--types", str(path))
    assert "super type 0:" in detail and f"super type {len(types) - 1}:" in detail
    doc = json.loads(_inspect("--json", str(path)))
    assert sum(doc["type_rows"]) == doc["rows"] == 2000
    want = {"int64": ints, "null": nulls, "missing": missing}
    assert doc["fused"]["latency_ms"] == {k: n for k, n in want.items() if n}


def test_inspect_of_the_fused_file_is_its_one_type(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in sparse_ndjson(500, seed=3).splitlines()]
    path = tmp_path / "fused.csup"
    csup_async.write(path, rows)
    text = _inspect(str(path))
    assert "rows: 500" in text and "super type 0:" in text and "fused view" not in text


def test_the_fused_view_counts_types_nulls_and_missing_fields_per_path() -> None:
    from csup_async.scan.describe import fused_view

    types = [_rec(a=INT64, d=_rec(x=STRING)), _rec(a=NULL), _rec(a=STRING, l=ArrayType(INT64))]
    view = fused_view(types, [5, 2, 3])
    assert list(view) == ["", "a", "d", "d.x", "l", "l[]"]  # a nested path after its parent
    assert view["a"] == {"int64": 5, "null": 2, "string": 3}
    assert view["d"] == {"record": 5, "missing": 5}
    assert view["d.x"] == {"string": 5}
    assert view["l"] == {"array": 3, "missing": 7} and view["l[]"] == {"int64": 3}
