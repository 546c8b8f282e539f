"""The csup-async command: convert, cat, inspect, scan and plan, with their errors.

On one file and on datasets (a directory, prefix, glob or several URLs) on local disk,
moto's S3, the GCS emulator and fsspec; progress only on a terminal; Parquet
conversion on the vectorised Arrow path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from csup_async.cli import EXIT_DATA, EXIT_NOT_FOUND, main
from tests.support.paths import DATA, ROOT

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



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
    assert run(["convert", src, csup, "--no-fuse"], capsys)[0] == 0  # exact per-row types
    assert run(["convert", csup, bs], capsys)[0] == 0
    _, a, _ = run(["cat", src], capsys)
    _, b, _ = run(["cat", bs], capsys)
    assert a == b
    assert [json.loads(x) for x in a.splitlines()] == [
        {"a": 1, "b": [1, 2]}, {"a": "x"}, {"c": {"d": None}}]
    # fused (the default): one record type, a missing field null
    assert run(["convert", src, csup], capsys)[0] == 0
    _, fused, _ = run(["cat", csup], capsys)
    assert [json.loads(x) for x in fused.splitlines()] == [
        {"a": 1, "b": [1, 2], "c": None}, {"a": "x", "b": None, "c": None},
        {"a": None, "b": None, "c": {"d": None}}]


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
    from csup_async.format.bsup import read_values

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


# ------------------------------------------------------------ many files ---
def _parts(d: Path) -> list[list[dict]]:
    """Three objects of a dataset, of different shapes, plus names a dataset must skip."""
    import csup_async

    parts = [[{"i": 1, "s": "a"}, {"i": 2, "s": "b"}],
             [{"i": 3, "j": True}],
             [{"i": 4, "s": "d", "j": False, "k": {"x": 1}}]]
    d.mkdir(parents=True, exist_ok=True)
    for n, rows in enumerate(parts, 1):
        csup_async.write(d / f"part-{n}.csup", rows)
    # hidden by Hadoop's rule; not empty, as the GCS emulator refuses empty uploads
    (d / "_SUCCESS").write_bytes(b"done")
    return parts


def test_scan_plan_cat_inspect_a_local_directory_and_glob(tmp_path, capsys):
    d = tmp_path / "events"
    parts = _parts(d)
    flat = [r for p in parts for r in p]
    code, text, err = run(["scan", d, "-c", "i,j", "--format", "json", "--stats"], capsys)
    assert code == 0, err
    assert [json.loads(x) for x in text.splitlines()] == [
        {"i": r["i"], "j": r.get("j")} for r in flat]
    assert "3 objects" in err and "requests" in err
    for source in ([f"{d}/*.csup"], [f"{d}/"], [d / "part-1.csup", d / "part-2.csup",
                                                d / "part-3.csup"]):
        code, text, _ = run(["scan", *source, "-c", "i", "--format", "csv", "--limit", "3"],
                            capsys)
        assert code == 0 and text.splitlines() == ["i", "1", "2", "3"]
    code, text, err = run(["scan", d, "-c", "s,k.x", "--format", "json", "--explain"], capsys)
    assert code == 0
    assert "multi-file plan" in err and "pruned" in err and "part-2.csup" in err
    assert [json.loads(x)["k.x"] for x in text.splitlines()] == [None, None, None, 1]
    code, text, _ = run(["scan", d, "-c", "i,k", "--format", "table"], capsys)
    assert code == 0 and '{"x":1}' in text and "┃ i" in text
    code, text, _ = run(["plan", d, "-c", "j"], capsys)
    assert code == 0 and "1 pruned" in text and "part-1.csup: no requested path" in text
    code, text, _ = run(["cat", d], capsys)
    assert code == 0 and [json.loads(x) for x in text.splitlines()] == flat
    code, text, _ = run(["inspect", d], capsys)
    assert code == 0 and text.count("super columnar") == 3 and "part-3.csup" in text
    merged = tmp_path / "all.csup"
    code, _, err = run(["convert", f"{d}/*.csup", merged], capsys)
    assert code == 0 and "wrote 4 values" in err
    assert [json.loads(x) for x in run(["cat", merged], capsys)[1].splitlines()] == flat


def test_many_file_errors_are_one_line_with_exit_codes(tmp_path, capsys):
    d = tmp_path / "events"
    _parts(d)
    code, _, err = run(["scan", d, "-c", "nope"], capsys)
    assert code == EXIT_NOT_FOUND and err.count("\n") == 1
    assert "nope" in err and str(d) in err
    code, _, err = run(["scan", f"{d}/*.nothing", "-c", "i"], capsys)
    assert code == EXIT_NOT_FOUND and err.count("\n") == 1 and "no objects match" in err
    (d / "junk.csup").write_bytes(b"not csup")
    code, _, err = run(["scan", d, "-c", "i"], capsys)
    assert code == EXIT_DATA and err.count("\n") == 1 and "junk.csup" in err


def test_scan_plan_cat_an_s3_prefix(moto_s3, tmp_path, capsys, monkeypatch):
    d = tmp_path / "local"
    parts = _parts(d)
    for p in sorted(d.iterdir()):
        moto_s3.put(f"cli-many/events/{p.name}", p.read_bytes())
    moto_s3.put("cli-many/other/part-9.csup", (d / "part-1.csup").read_bytes())
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.SECRET_KEY)
    flags = ["--endpoint-url", moto_s3.endpoint, "--region", "us-east-1"]
    base = f"s3://{moto_s3.BUCKET}/cli-many/events"
    want = [r["i"] for p in parts for r in p]
    for source in (base + "/", base, base + "/part-*.csup"):  # prefix, bare prefix, glob
        code, text, err = run(["scan", source, "-c", "i", "--format", "json", "--stats",
                               *flags], capsys)
        assert code == 0, err
        assert [json.loads(x)["i"] for x in text.splitlines()] == want
        assert "3 objects" in err and moto_s3.SECRET_KEY not in text + err
    code, text, _ = run(["plan", base + "/", "-c", "k", *flags], capsys)
    assert code == 0 and "2 pruned" in text
    code, text, _ = run(["cat", base + "/", *flags], capsys)
    assert code == 0 and [json.loads(x) for x in text.splitlines()] == [
        r for p in parts for r in p]
    code, _, err = run(["scan", f"s3://{moto_s3.BUCKET}/cli-many/none/", "-c", "i", *flags],
                       capsys)
    assert code == EXIT_NOT_FOUND and "no objects match" in err


@pytest.mark.parametrize("store", ["gcs", "fsspec-memory"])
def test_scan_a_prefix_on_gcs_and_fsspec(store, request, tmp_path, capsys, monkeypatch):
    """The same dataset commands on the other listing stores: the GCS emulator, fsspec."""
    import uuid

    d = tmp_path / "local"
    parts = _parts(d)
    run_id = uuid.uuid4().hex[:8]
    if store == "gcs":
        emu = request.getfixturevalue("gcs_emulator")
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.endpoint)
        for p in sorted(d.iterdir()):
            emu.put(f"{run_id}/events/{p.name}", p.read_bytes())
        base = f"gs://{emu.BUCKET}/{run_id}/events/"
    else:
        import fsspec

        fs = fsspec.filesystem("memory")
        for p in sorted(d.iterdir()):
            fs.pipe(f"/cli-{run_id}/events/{p.name}", p.read_bytes())
        base = f"memory://cli-{run_id}/events/"
    want = [r["i"] for p in parts for r in p]
    for source in (base, base + "*.csup"):
        code, text, err = run(["scan", source, "-c", "i", "--format", "json", "--stats"],
                              capsys)
        assert code == 0, err
        assert [json.loads(x)["i"] for x in text.splitlines()] == want and "3 objects" in err
    code, text, _ = run(["plan", base, "-c", "k"], capsys)
    assert code == 0 and "2 pruned" in text


# ---------------------------------------------------------------- Parquet ---
@pytest.mark.parametrize("progress", ["--progress", "--no-progress"])
def test_convert_parquet_takes_the_vectorised_path(tmp_path, capsys, monkeypatch, progress):
    """A flat Parquet file is encoded batch by batch by arrow_write, never value by value,
    with or without the progress display counting its batches."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from csup_async.writers import arrow_write, writer

    n = 50_000
    t = pa.table({"i": pa.array(range(n), pa.int64()),
                  "s": pa.array([None if k % 7 == 0 else f"s{k}" for k in range(n)])})
    src = tmp_path / "t.parquet"
    pq.write_table(t, src, row_group_size=10_000)
    calls = []
    real = arrow_write.write_arrow

    def spy(out, data, **options):
        calls.append(type(data).__name__)
        return real(out, data, **options)

    def per_value(self, value):
        raise AssertionError("the value-by-value writer was used for a flat Parquet file")

    monkeypatch.setattr(arrow_write, "write_arrow", spy)
    monkeypatch.setattr(writer.Writer, "write", per_value)
    out = tmp_path / "t.csup"
    code, _, err = run([progress, "convert", src, out], capsys)
    assert code == 0, err
    assert calls == ["RecordBatchReader"] and f"wrote {n:,} values" in err
    if progress == "--progress":
        assert "converting t.parquet" in err and "rows" in err  # batches were counted
    monkeypatch.undo()
    code, text, _ = run(["scan", out, "-c", "i,s", "--format", "json"], capsys)
    rows = [json.loads(x) for x in text.splitlines()]
    assert rows == t.to_pylist()


# --------------------------------------------------------------- progress ---
def _run_with_terminal_stderr(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal (as in a shell), stdout piped."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="120", TERM="xterm", PYTHONPATH=str(ROOT))
    env.pop("NO_COLOR", None)
    out_file = cwd / "stdout.txt"  # a file, not a pipe nobody reads while stderr is
    with out_file.open("wb") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "csup_async.cli", *args], cwd=cwd,
                                stdout=stdout, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    code = proc.wait(timeout=60)
    return code, out_file.read_text(), seen.decode(errors="replace")



def test_progress_on_a_terminal_and_quiet_when_piped(tmp_path):
    import csup_async

    d = tmp_path / "many"
    d.mkdir()
    for n in range(20):
        csup_async.write(d / f"p{n:02d}.csup", [{"i": n * 1000 + k, "s": "x" * (k % 50)}
                                                for k in range(1000)])
    args = ["scan", str(d), "-c", "i,s", "--format", "json"]
    code, out, term = _run_with_terminal_stderr(args, tmp_path)
    assert code == 0, term
    assert "reading metadata of 20 objects" in term and "scanning 20 objects" in term
    piped = subprocess.run([sys.executable, "-m", "csup_async.cli", *args], cwd=tmp_path,
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert piped.returncode == 0 and piped.stderr == ""  # no bar, no escape codes
    assert piped.stdout == out and len(out.splitlines()) == 20_000

    src = tmp_path / "rows.ndjson"
    src.write_text("".join(f'{{"i":{k}}}\n' for k in range(5000)))
    code, _, term = _run_with_terminal_stderr(["convert", str(src), "rows.csup"], tmp_path)
    assert code == 0 and "converting" in term and "wrote 5,000 values" in term
