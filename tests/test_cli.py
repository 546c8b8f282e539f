"""The csup-async command: convert, cat, inspect, scan and plan, with their errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from csup_async.cli import EXIT_DATA, EXIT_NOT_FOUND, main

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_convert_zng_to_csup_and_cat_agree(tmp_path, capsys):
    out = tmp_path / "prs.csup"
    code, _, err = run(["convert", DATA / "prs.zng", out], capsys)
    assert code == 0 and "28" in err
    code, csup_lines, _ = run(["cat", out], capsys)
    assert code == 0
    code, zng_lines, _ = run(["cat", DATA / "prs.zng"], capsys)
    assert csup_lines == zng_lines
    rows = [json.loads(x) for x in csup_lines.splitlines()]
    assert len(rows) == 28
    assert rows[0]["created_at"] == "2019-11-11T19:50:46Z"
    assert rows[0]["user"]["login"] == "aswan"


def test_convert_json_ndjson_bsup_round_trip(tmp_path, capsys):
    src = tmp_path / "in.ndjson"
    src.write_text('{"a":1,"b":[1,2]}\n{"a":"x"}\n\n{"c":{"d":null}}\n')
    csup = tmp_path / "o.csup"
    bs = tmp_path / "o.bsup"
    assert run(["convert", src, csup], capsys)[0] == 0
    assert run(["convert", csup, bs], capsys)[0] == 0
    _, a, _ = run(["cat", src], capsys)
    _, b, _ = run(["cat", bs], capsys)
    assert a == b
    assert [json.loads(x) for x in a.splitlines()] == [
        {"a": 1, "b": [1, 2]}, {"a": "x"}, {"c": {"d": None}}]


def test_convert_parquet(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    t = pa.table({"i": pa.array([1, None, 3], pa.int32()), "s": ["a", "b", None],
                  "ts": pa.array([0, 10**9, None], pa.timestamp("ns"))})
    src = tmp_path / "t.parquet"
    pq.write_table(t, src)
    out = tmp_path / "t.csup"
    assert run(["convert", src, out], capsys)[0] == 0
    code, text, _ = run(["inspect", out], capsys)
    assert code == 0 and "i:int32" in text and "ts:time" in text
    _, lines, _ = run(["cat", out], capsys)
    assert [json.loads(x) for x in lines.splitlines()] == [
        {"i": 1, "s": "a", "ts": "1970-01-01T00:00:00Z"},
        {"i": None, "s": "b", "ts": "1970-01-01T00:00:01Z"},
        {"i": 3, "s": None, "ts": None}]


def test_inspect_shows_layout(tmp_path, capsys):
    out = tmp_path / "g.csup"
    run(["convert", DATA / "github1.zng", out], capsys)
    code, text, _ = run(["inspect", out], capsys)
    assert code == 0
    assert "super columnar" in text and "super type 0" in text and ".user" in text
    assert "rows: 100" in text


def test_scan_json_and_csv(tmp_path, capsys):
    out = tmp_path / "g.csup"
    run(["convert", DATA / "github1.zng", out], capsys)
    code, text, _ = run(["scan", out, "-c", "number,user.login", "--format", "json",
                         "--limit", "2"], capsys)
    assert code == 0
    rows = [json.loads(x) for x in text.splitlines()]
    from csup_async.bsup import read_values

    want = [v.value for v in read_values((DATA / "github1.zng").read_bytes())][:2]
    assert rows == [{"number": w["number"], "user.login": w["user"]["login"]} for w in want]
    code, text, err = run(["scan", out, "-c", "number", "--format", "csv", "--stats"],
                          capsys)
    assert text.splitlines()[0] == "number" and len(text.splitlines()) == 101
    assert "requests" in err


def test_errors_are_one_line_with_exit_codes(tmp_path, capsys):
    code, _, err = run(["inspect", tmp_path / "missing.csup"], capsys)
    assert code == EXIT_NOT_FOUND and err.count("\n") == 1 and "missing.csup" in err
    bad = tmp_path / "bad.csup"
    bad.write_bytes(b"not a csup file")
    code, _, err = run(["inspect", bad], capsys)
    assert code == EXIT_DATA and "Traceback" not in err
    out = tmp_path / "g.csup"
    run(["convert", DATA / "prs.zng", out], capsys)
    code, _, err = run(["scan", out, "-c", "nope"], capsys)
    assert code == EXIT_NOT_FOUND and "nope" in err


def test_console_script_entry_point(tmp_path):
    out = tmp_path / "p.csup"
    r = subprocess.run([sys.executable, "-m", "csup_async.cli", "convert",
                        str(DATA / "prs.zng"), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "csup_async.cli", "plan", str(out),
                        "-c", "title"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "title" in r.stdout


def test_scan_over_s3_with_store_flags(moto_s3, tmp_path, capsys, monkeypatch):
    out = tmp_path / "p.csup"
    run(["convert", DATA / "prs.zng", out], capsys)
    key = moto_s3.put("cli/prs.csup", out.read_bytes())
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.SECRET_KEY)
    code, text, err = run(["scan", f"s3://{key}", "-c", "number", "--format", "json",
                           "--endpoint-url", moto_s3.endpoint, "--region", "us-east-1",
                           "--limit", "3", "--stats"], capsys)
    assert code == 0, err
    assert [json.loads(x)["number"] for x in text.splitlines()] == [1, 2, 3]
    assert moto_s3.SECRET_KEY not in text + err
    code, text, _ = run(["inspect", f"s3://{key}", "--endpoint-url", moto_s3.endpoint], capsys)
    assert code == 0 and "rows: 28" in text
