"""The CLI completes the loop: ``cat --limit``, and ``convert`` to Parquet and NDJSON
(as well as from them), with exact values, streamed in batches, made whole or not at
all."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import csup_async
from csup_async.cli import EXIT_USAGE, main
from csup_async.cli.lines import PARQUET_BATCH_ROWS

UTC = dt.UTC
T0 = dt.datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC)


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "ts": T0 + dt.timedelta(seconds=i), "name": f"n{i}" if i % 5 else None,
             "rec": {"x": i * 0.5, "tags": ["a", "b", "c"][: i % 4]}} for i in range(n)]


def run(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("convert")
    csup_async.write(str(d / "a.csup"), _rows(1000))
    csup_async.write(str(d / "b.csup"), _rows(300))
    return d


def test_cat_limit_prints_the_first_n_values(data: Path, capsys: Any) -> None:
    _, whole, _ = run(["cat", data / "a.csup"], capsys)
    for n in (0, 1, 7, 999, 1000, 5000):
        code, out, _ = run(["cat", data / "a.csup", "--limit", n], capsys)
        assert code == 0 and out.splitlines() == whole.splitlines()[:n]


def test_cat_limit_across_the_objects_of_a_dataset(data: Path, capsys: Any) -> None:
    _, a, _ = run(["cat", data / "a.csup"], capsys)
    _, b, _ = run(["cat", data / "b.csup"], capsys)
    code, out, _ = run(["cat", data / "a.csup", data / "b.csup", "--limit", 1010], capsys)
    assert code == 0 and out.splitlines() == (a.splitlines() + b.splitlines())[:1010]


def test_cat_limit_with_where_and_other_formats(data: Path, tmp_path: Path,
                                                capsys: Any) -> None:
    code, out, _ = run(["cat", data / "a.csup", "--where", "id >= 500", "--limit", 3], capsys)
    assert [json.loads(x)["id"] for x in out.splitlines()] == [500, 501, 502]
    src = tmp_path / "in.ndjson"
    src.write_text("".join(json.dumps({"k": i}) + "\n" for i in range(10)))
    code, out, _ = run(["cat", src, "--limit", 4], capsys)
    assert code == 0 and [json.loads(x) for x in out.splitlines()] == [{"k": i} for i in range(4)]
    with pytest.raises(SystemExit) as e:
        main(["cat", str(src), "--limit", "-1"])
    assert e.value.code == EXIT_USAGE


def test_csup_to_parquet_keeps_exact_values(data: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "o.parquet"
    code, _, err = run(["convert", data / "a.csup", out], capsys)
    assert code == 0 and "wrote 1,000 rows" in err
    table = pq.read_table(out)
    assert table.schema.field("ts").type == pa.timestamp("ns", tz="UTC")
    got = table.to_pylist()
    want = _rows(1000)
    assert [r["id"] for r in got] == [r["id"] for r in want]
    assert [r["ts"] for r in got] == [r["ts"] for r in want]  # microseconds kept
    assert [r["name"] for r in got] == [r["name"] for r in want]
    assert [r["rec"] for r in got] == [r["rec"] for r in want]


def test_parquet_is_written_in_batches(tmp_path: Path, capsys: Any) -> None:
    """More rows than one batch: several row groups (a batch at a time, not the file)."""
    src = tmp_path / "big.csup"
    n = PARQUET_BATCH_ROWS * 2 + 17
    csup_async.write(str(src), ({"i": i, "s": str(i)} for i in range(n)))
    out = tmp_path / "big.parquet"
    assert run(["convert", src, out], capsys)[0] == 0
    meta = pq.ParquetFile(out).metadata
    assert meta.num_rows == n and meta.num_row_groups >= 3
    assert pq.read_table(out).column("i").to_pylist() == list(range(n))


def test_unions_become_the_documented_struct(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "u.csup"
    csup_async.write(str(src), [{"u": 1}, {"u": "one"}, {"u": None}])
    out = tmp_path / "u.parquet"
    code, _, err = run(["convert", src, out], capsys)
    assert code == 0 and "u: union" in err  # the change is said, once
    assert pq.read_table(out).column("u").to_pylist() == [
        {"tag": 0, "int64": 1, "string": None}, {"tag": 1, "int64": None, "string": "one"},
        None]  # docs/api.md: a union left as struct<tag, member...>


def test_csup_to_ndjson_is_what_cat_prints(data: Path, tmp_path: Path, capsys: Any) -> None:
    _, cat, _ = run(["cat", data / "a.csup", data / "b.csup"], capsys)
    for name in ("o.ndjson", "o.jsonl"):
        code, _, err = run(["convert", data / "a.csup", data / "b.csup", tmp_path / name],
                           capsys)
        assert code == 0 and "wrote 1,300 values" in err
        assert (tmp_path / name).read_text() == cat
    first = json.loads(cat.splitlines()[0])
    assert first["ts"] == "2024-02-29T23:59:59.123456Z"


def test_parquet_round_trip_through_csup(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "in.parquet"
    table = pa.table({
        "id": pa.array([1, 2, None], pa.int64()),
        "ts": pa.array([T0, None, T0 + dt.timedelta(days=400)], pa.timestamp("ns", tz="UTC")),
        "rec": pa.array([{"a": 1.5, "b": ["x"]}, {"a": None, "b": []}, None],
                        pa.struct([("a", pa.float64()), ("b", pa.large_list(pa.large_string()))])),
    })
    pq.write_table(table, src)
    assert run(["convert", src, tmp_path / "mid.csup"], capsys)[0] == 0
    assert run(["convert", tmp_path / "mid.csup", tmp_path / "back.parquet"], capsys)[0] == 0
    assert pq.read_table(tmp_path / "back.parquet").to_pylist() == table.to_pylist()
    # straight from Parquet to NDJSON: times are printed as CSUP's are
    assert run(["convert", src, tmp_path / "o.ndjson"], capsys)[0] == 0
    lines = [json.loads(x) for x in (tmp_path / "o.ndjson").read_text().splitlines()]
    assert lines[0]["ts"] == "2024-02-29T23:59:59.123456Z" and lines[1]["ts"] is None


def test_ndjson_to_parquet(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "in.ndjson"
    src.write_text('{"a":1,"b":"x"}\n{"a":2,"c":[1,2]}\n')
    out = tmp_path / "o.pq"
    assert run(["convert", src, out], capsys)[0] == 0
    assert pq.read_table(out).to_pylist() == [{"a": 1, "b": "x", "c": None},
                                             {"a": 2, "b": None, "c": [1, 2]}]
    assert not list(tmp_path.glob("*tmp*"))  # the staged CSUP file is gone


def test_to_flag_and_refusals(data: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "rows.out"
    assert run(["convert", data / "b.csup", out, "--to", "ndjson"], capsys)[0] == 0
    assert len(out.read_text().splitlines()) == 300
    code, _, err = run(["convert", data / "b.csup", tmp_path / "x.txt"], capsys)
    assert code == EXIT_USAGE and "--to" in err
    code, _, err = run(["convert", data / "b.csup", "s3://bucket/x.parquet"], capsys)
    assert code == EXIT_USAGE and "local file" in err


def test_a_failed_convert_leaves_no_output(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.csup"
    bad.write_bytes(b"not a csup file at all" * 10)
    for name in ("o.parquet", "o.ndjson"):
        code, _, _ = run(["convert", bad, tmp_path / name], capsys)
        assert code != 0
        assert not (tmp_path / name).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csup"]


def test_objects_with_other_columns_share_one_parquet_schema(tmp_path: Path,
                                                             capsys: Any) -> None:
    d = tmp_path / "events"
    d.mkdir()
    csup_async.write(str(d / "day1.csup"), [{"id": 1, "user": {"name": "ann"}}])
    csup_async.write(str(d / "day2.csup"), [{"id": 2, "amount": 9.5}])
    out = tmp_path / "all.parquet"
    assert run(["convert", d, out], capsys)[0] == 0
    assert pq.read_table(out).to_pylist() == [
        {"id": 1, "user": {"name": "ann"}, "amount": None},
        {"id": 2, "user": None, "amount": 9.5}]
    csup_async.write(str(d / "day3.csup"), [{"id": "three"}])
    code, _, err = run(["convert", d, tmp_path / "bad.parquet"], capsys)
    assert code != 0 and "one Parquet schema cannot hold" in err
    assert not (tmp_path / "bad.parquet").exists()
