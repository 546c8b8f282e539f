"""The CLI as a user meets it: paths, streamed and vectorised output, limits, refusals.

Output is streamed in batches and built per column with Arrow's kernels; the
text must equal the per-value conversion (``jsonout.dumps``) of the same
values, and CSV must read back to the same cells.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re

import numpy as np
import pytest

import csup_async
from csup_async.arrays import jsonout as J
from csup_async.cli import EXIT_DATA, EXIT_NOT_FOUND, EXIT_USAGE, build_parser, main
from tests.support.paths import DATA

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def usage(args, capsys) -> str:
    """Run a command line argparse or our checks refuse: exit 2 and the message."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    assert e.value.code == EXIT_USAGE
    return capsys.readouterr().err


def lines(text: str) -> list:
    return [json.loads(x) for x in text.splitlines()]


# ------------------------------------------------------------------ paths ---

def test_dotted_names_on_the_command_line(tmp_path, capsys):
    src = tmp_path / "in.ndjson"
    src.write_text('{"a.b":1,"a":{"b":2}}\n')
    out = tmp_path / "o.csup"
    assert run(["convert", src, out], capsys)[0] == 0
    assert lines(run(["scan", out, "-c", "a.b", "--format", "json"], capsys)[1]) == [
        {"a.b": 2}]
    assert lines(run(["scan", out, "-c", "a.b,a", "--format", "json"], capsys)[1]) == [
        {"a.b": 2, "a": {"b": 2}}]
    assert lines(run(["scan", out, "-c", "`a.b`, a", "--format", "json"], capsys)[1]) == [
        {"`a.b`": 1, "a": {"b": 2}}]
    code, text, _ = run(["scan", out, "--format", "csv"], capsys)
    assert code == 0 and text.splitlines()[0] == "`a.b`,a"
    code, _, err = run(["scan", out, "-c", "zz"], capsys)
    assert code == EXIT_NOT_FOUND and err.rstrip().endswith("columns: `a.b`, a.b")


def test_spaces_around_names_are_ignored(tmp_path, capsys):
    out = tmp_path / "o.csup"
    csup_async.write(str(out), [{"id": 1, "level": "x"}])
    code, text, _ = run(["scan", out, "-c", "id, level", "--format", "json"], capsys)
    assert code == 0 and lines(text) == [{"id": 1, "level": "x"}]


# --------------------------------------------------------- vectorised text ---

def _mixed_rows() -> list:
    import ipaddress

    return [
        {"i": 1, "u": 2**63, "f": 1.5, "g": 1.0, "s": 'q"\\\n\x01é', "t": np.datetime64(
            "2020-01-01T00:00:00.123", "ns"), "d": np.timedelta64(5, "ns"), "b": b"\x00\xff",
         "l": [1, 2], "r": {"x": "é", "y": None}, "ip": ipaddress.ip_address("10.0.0.1"),
         "m": {1: "a"}, "e": [], "n": None},
        {"i": None, "u": None, "f": float("nan"), "g": float("inf"), "s": "", "t": None,
         "d": None, "b": None, "l": None, "r": None, "ip": None, "m": None, "e": ["x"],
         "n": None},
        {"i": -5, "u": 0, "f": 1e20, "g": -float("inf"), "s": " pad,", "t": np.datetime64(
            "1960-01-01T00:00:00", "ns"), "d": np.timedelta64(-1, "s"), "b": b"", "l": [],
         "r": {"x": "", "y": 3}, "ip": None, "m": {}, "e": None, "n": None},
        5, "x", [1, "a"], None,
    ]


async def test_json_texts_equal_the_per_value_conversion(tmp_path):
    p = tmp_path / "m.csup"
    csup_async.write(str(p), _mixed_rows())
    async with csup_async.open(str(p)) as r:
        whole = (await r.scan([""])).columns[""]
        fields = (await r.scan()).columns
    got = J.value_lines(whole).decode().splitlines()
    want = [J.dumps(v) for v in whole.to_pylist()]
    assert [json.loads(g) for g in got] == [json.loads(w) for w in want]
    # floats are the only texts that may be spelled differently (shortest round trip)
    assert [g for g, w in zip(got, want, strict=True) if g != w] == []
    rows = J.json_lines(fields).decode().splitlines()
    cols = {k: a.to_pylist() for k, a in fields.items()}
    assert [json.loads(x) for x in rows] == [
        json.loads(J.dumps({k: v[i] for k, v in cols.items()})) for i in range(len(whole))]


async def test_csv_reads_back_and_tells_null_from_empty(tmp_path):
    p = tmp_path / "m.csup"
    csup_async.write(str(p), _mixed_rows()[:3])
    async with csup_async.open(str(p)) as r:
        cols = (await r.scan("i,f,s,t,d,b,l,r")).columns
    text = (J.csv_header(list(cols)) + J.csv_lines(cols)).decode()
    back = list(csv.reader(io.StringIO(text)))
    assert back[0] == ["i", "f", "s", "t", "d", "b", "l", "r"]
    assert back[1] == ["1", "1.5", 'q"\\\n\x01é', "2020-01-01T00:00:00.123Z", "5", "0x00ff",
                       "[1,2]", '{"x":"é","y":null}']
    assert back[2] == ["", "NaN", "", "", "", "", "", ""]
    assert back[3][2] == " pad,"
    # null is an empty cell, the empty string a quoted one
    assert '\n,NaN,"",,' in text


def test_cat_and_scan_stream_the_same_values(tmp_path, capsys):
    p = tmp_path / "g.csup"
    run(["convert", DATA / "github1.zng", p, "--segment-thresh", "4096"], capsys)
    from csup_async.format.bsup import read_values

    want = [J.dumps(v.to_python()) for v in read_values((DATA / "github1.zng").read_bytes())]
    code, text, _ = run(["cat", p], capsys)
    assert code == 0 and [json.loads(x) for x in text.splitlines()] == [
        json.loads(w) for w in want]
    code, text, _ = run(["scan", p, "-c", "number,user.login", "--format", "csv"], capsys)
    got = list(csv.DictReader(io.StringIO(text)))
    assert [(int(g["number"]), g["user.login"]) for g in got] == [
        (json.loads(w)["number"], json.loads(w)["user"]["login"]) for w in want]


def test_table_shows_null_and_empty_string_apart(tmp_path, capsys):
    p = tmp_path / "t.csup"
    csup_async.write(str(p), [{"s": ""}, {"s": None}, {"s": "x"}])
    code, text, _ = run(["scan", p, "--format", "table"], capsys)
    assert code == 0
    body = [line for line in text.splitlines() if line.startswith("│")]
    assert [line.strip("│ ") for line in body] == ['""', "null", "x"]


# ------------------------------------------------------------------ limits ---

def _stats(err: str) -> tuple[int, int]:
    m = re.search(r"([\d,]+) requests?, ([\d,]+) bytes read", err)
    assert m, err
    return int(m[1].replace(",", "")), int(m[2].replace(",", ""))


def test_limit_reads_only_what_the_first_rows_need(tmp_path, capsys):
    p = tmp_path / "big.csup"
    n = 60_000
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"i": np.arange(n), "s": [f"v{k}" for k in range(n)]})
    csup_async.write(str(p), table, segment_thresh=16 << 10)
    code, text, err = run(["scan", p, "--limit", "1", "--stats", "--format", "json"],
                          capsys)
    assert code == 0 and lines(text) == [{"i": 0, "s": "v0"}]
    _, few = _stats(err)
    code, text, err = run(["scan", p, "--stats", "--format", "json"], capsys)
    assert len(text.splitlines()) == n
    _, all_bytes = _stats(err)
    assert few * 4 < all_bytes  # the first segments of each column, not the file
    code, text, err = run(["scan", p, "--limit", "70000", "--format", "csv"], capsys)
    assert code == 0 and len(text.splitlines()) == n + 1
    code, text, err = run(["scan", p, "--limit", "0", "--format", "csv"], capsys)
    assert code == 0 and text == "i,s\n"


def test_limit_explain_says_what_stats_count(tmp_path, capsys):
    p = tmp_path / "big.csup"
    csup_async.write(str(p), [{"i": k} for k in range(5000)], segment_thresh=1 << 10)
    code, _, err = run(["scan", p, "--limit", "1", "--explain", "--stats", "--format",
                        "json"], capsys)
    assert code == 0
    assert "--limit 1: reading stops after the first 1 row" in err
    assert "--stats counts those made" in err and "stats:" in err


# ---------------------------------------------------------------- refusals ---

def test_usage_errors_exit_2(tmp_path, capsys):
    p = tmp_path / "o.csup"
    csup_async.write(str(p), [{"a": 1}])
    assert "at least one column" in usage(["scan", p, "-c", ""], capsys)
    assert "empty entry" in usage(["scan", p, "-c", "a,"], capsys)
    assert "--limit must be 0 or more" in usage(["scan", p, "--limit", "-1"], capsys)
    assert "unclosed backquote" in usage(["plan", p, "-c", "`a"], capsys)
    code, _, err = run(["convert", p, tmp_path / "out.json"], capsys)
    assert code == EXIT_USAGE and "not known from its name" in err and "--to" in err
    src = tmp_path / "a.ndjson"
    src.write_text("{}\n")
    code, _, err = run(["convert", src, src, tmp_path / "x.csup"], capsys)
    assert code == EXIT_USAGE and "must all be CSUP" in err


def test_version_and_plan_explain(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert re.match(r"csup-async \S+", capsys.readouterr().out)
    p = tmp_path / "o.csup"
    csup_async.write(str(p), [{"a": 1}])
    code, text, _ = run(["plan", p, "--explain", "-c", "a"], capsys)
    assert code == 0 and "a" in text


def test_every_flag_has_help():
    import argparse

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    def missing_in(prefix: str, sp: argparse.ArgumentParser) -> list[str]:
        out = []
        for a in sp._actions:
            if isinstance(a, argparse._SubParsersAction):  # nested commands (lake ls ...)
                for name, child in a.choices.items():
                    out += missing_in(f"{prefix} {name}", child)
            if not a.help and not isinstance(a, argparse._HelpAction):
                out.append(f"{prefix} {a.option_strings or a.dest}")
        return out

    missing = [m for name, sp in subs.choices.items() for m in missing_in(name, sp)]
    assert missing == []
    convert_help = subs.choices["convert"].format_help()
    assert "date32" in convert_help and "midnight UTC" in convert_help


def test_two_inputs_to_cat_and_convert_are_a_dataset(tmp_path, capsys):
    a, b = tmp_path / "a.csup", tmp_path / "b.csup"
    csup_async.write(str(a), [{"x": 1}])
    csup_async.write(str(b), [{"x": 2}, {"y": "z"}], fuse=False)
    code, text, _ = run(["cat", a, b], capsys)
    assert code == 0 and lines(text) == [{"x": 1}, {"x": 2}, {"y": "z"}]
    out = tmp_path / "ab.csup"
    code, _, err = run(["convert", a, b, out], capsys)
    assert code == 0 and "wrote 3 values" in err
    assert lines(run(["cat", out], capsys)[1]) == [{"x": 1}, {"x": 2}, {"y": "z"}]


def test_ndjson_int_beyond_int64_names_file_and_line(tmp_path, capsys):
    src = tmp_path / "big.ndjson"
    src.write_text('{"a":1}\n{"a":' + str(2**70) + "}\n")
    code, _, err = run(["convert", src, tmp_path / "o.csup"], capsys)
    assert code == EXIT_DATA and err.count("\n") == 1
    assert "big.ndjson" in err and "line 2" in err and "Value(" not in err
    doc = tmp_path / "big.json"
    doc.write_text('[\n {"a": 1},\n {"a": -' + str(2**70) + "}\n]\n")
    code, _, err = run(["convert", doc, tmp_path / "o.csup"], capsys)
    assert code == EXIT_DATA and "big.json" in err and "line 3" in err


# -------------------------------------------------------- files and counts ---

def test_inspect_counts_rows_of_a_multi_type_file(tmp_path, capsys):
    """Without statistics (an older writer's file) the super column is read for the
    count; with them its segments' counts say it."""
    p = tmp_path / "multi.csup"
    csup_async.write(str(p), [{"a": 1}, {"b": "x"}, 3, {"a": 2}], statistics=False)
    code, text, _ = run(["inspect", p], capsys)
    assert code == 0 and "rows: 4 (counted from the super column)" in text
    csup_async.write(str(p), [{"a": 1}, {"b": "x"}, 3, {"a": 2}])
    code, text, _ = run(["inspect", p], capsys)
    assert code == 0 and "rows: 4" in text and "counted" not in text


async def test_num_rows_is_set_once_counted(tmp_path):
    p = tmp_path / "multi.csup"
    csup_async.write(str(p), [{"a": 1}, {"b": "x"}, 3], statistics=False)
    async with csup_async.open(str(p)) as r:
        assert r.num_rows is None
        assert await r.count_rows() == 3
        assert r.num_rows == 3


def test_plan_wording_for_a_tiny_dataset(tmp_path, capsys):
    d = tmp_path / "ds"
    d.mkdir()
    csup_async.write(str(d / "one.csup"), [{"a": 1}])
    code, text, _ = run(["plan", d, "-c", "a"], capsys)
    assert code == 0 and "1 file to read" in text and "1 files" not in text
    assert "1 task of" in text and "(target 128.0 MiB)" in text


def test_directory_selects_csup_files_and_names_the_skipped(tmp_path, capsys):
    d = tmp_path / "ds"
    d.mkdir()
    csup_async.write(str(d / "one.csup"), [{"a": 1}])
    (d / "notes.txt").write_text("not data")
    for cmd in (["scan", d, "--format", "json"], ["cat", d], ["inspect", d], ["plan", d]):
        code, _, err = run(cmd, capsys)
        assert code == 0, err
        assert "skipped 1 object(s) not matching '*.csup'" in err and "notes.txt" in err
    code, _, err = run(["scan", d / "notes.txt"], capsys)  # named explicitly: an error
    assert code != 0 and "notes.txt" in err
    code, _, err = run(["scan", d, "--match", "*"], capsys)  # everything: notes.txt is read
    assert code == EXIT_DATA and "notes.txt" in err


async def test_open_dataset_selects_and_refuses_at_open(tmp_path):
    from csup_async.model.errors import NotFoundError

    d = tmp_path / "ds"
    d.mkdir()
    csup_async.write(str(d / "one.csup"), [{"a": 1}])
    (d / "notes.txt").write_text("not data")
    async with csup_async.open_dataset(str(d)) as ds:
        assert [os.path.basename(f) for f in ds.files] == ["one.csup"]
        assert [os.path.basename(f) for f in ds.skipped] == ["notes.txt"]
    with pytest.raises(NotFoundError, match="no objects match"):
        await csup_async.open_dataset(str(tmp_path / "nomatch" / "*.csup"))
    with pytest.raises(NotFoundError, match="no objects match"):
        await csup_async.open_dataset(str(tmp_path / "ds"), match="*.parquet")


def test_dataset_missing_column_lists_full_paths(tmp_path, capsys):
    d = tmp_path / "ds"
    d.mkdir()
    csup_async.write(str(d / "one.csup"), [{"a": {"b": 1}}])
    csup_async.write(str(d / "two.csup"), [{"c.d": 2}])
    code, _, err = run(["scan", d, "-c", "zz"], capsys)
    assert code == EXIT_NOT_FOUND and err.rstrip().endswith("columns: a.b, `c.d`")


def test_without_pyarrow_the_text_is_the_same(tmp_path, capsys, monkeypatch):
    p = tmp_path / "g.csup"
    run(["convert", DATA / "github1.zng", p], capsys)
    cols = "number,title,user.login,created_at,labels"
    fast = [run(["scan", p, "-c", cols, "--format", f], capsys)[1] for f in ("json", "csv")]
    fast_cat = run(["cat", p], capsys)[1]
    monkeypatch.setattr(J, "have_pyarrow", lambda: False)
    slow = [run(["scan", p, "-c", cols, "--format", f], capsys)[1] for f in ("json", "csv")]
    assert lines(fast[0]) == lines(slow[0]) and fast[0] == slow[0]
    assert list(csv.reader(io.StringIO(fast[1]))) == list(csv.reader(io.StringIO(slow[1])))
    assert run(["cat", p], capsys)[1] == fast_cat
