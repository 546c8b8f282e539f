"""Files the real ``super`` v0.3.0 wrote (tests/data/real/super/) read through every
path agree value for value with ``super``'s own JSON and BSUP output of them."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import csup_async
from csup_async.format.superdb import bsup2
from csup_async.model.values import strip_unions
from tests.support.superjson import super_json

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super"
NAMES = ["primitives", "nested", "nulls", "objects"]
ROOT = Path(__file__).resolve().parents[3]


def expected_json(name: str) -> list[object]:
    p = DATA / f"{name}.json"
    text = p.read_text() if p.exists() else gzip.decompress(
        (DATA / f"{name}.json.gz").read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines()]


def run(coro):
    return asyncio.run(coro)


async def _read(name: str, what: str, **kw):
    async with csup_async.open(str(DATA / f"{name}.csup")) as r:
        if what == "values":
            return await r.read_values()
        if what == "rows":
            return await r.read_rows()
        if what == "scan":
            return await r.scan(**kw)
        if what == "batches":
            return [b async for b in r.iter_batches(**kw)]
        if what == "reader":
            return r
    raise AssertionError(what)


@pytest.mark.parametrize("name", NAMES)
def test_read_values_match_supers_json(name):
    values = run(_read(name, "values"))
    assert [super_json(v.type, v.value) for v in values] == expected_json(name)


@pytest.mark.parametrize("name", ["primitives", "nested", "nulls", "optional", "fusion"])
def test_read_rows_match_supers_bsup(name):
    """``super -f bsup`` of the file, decoded row by row, is exactly what the columnar
    read gives (types and all: times, durations, ips, nets, type values, enums)."""
    want = [bsup2.decode_value(t, b) for t, b in
            bsup2.read_values((DATA / f"{name}.bsup").read_bytes())]
    assert run(_read(name, "rows")) == want


@pytest.mark.parametrize("name", NAMES)
def test_scan_columns_match_supers_json(name):
    res = run(_read(name, "scan"))
    rows = expected_json(name)
    assert res.num_rows == len(rows)
    for path, arr in res.columns.items():
        got = [super_json(arr.type, v) for v in arr.to_pylist(typed=True)]
        if path == "":
            want = rows
        else:
            want = [r.get(path) if isinstance(r, dict) else None for r in rows]
        assert got == want, path


@pytest.mark.parametrize("name", NAMES)
def test_iter_batches_equal_the_scan(name):
    res = run(_read(name, "scan"))
    batches = run(_read(name, "batches", batch_rows=4099))
    assert sum(b.num_rows for b in batches) == res.num_rows
    assert max(b.num_rows for b in batches) <= 4099
    for path, arr in res.columns.items():
        got = [v for b in batches for v in b.columns[path].to_pylist()]
        assert got == arr.to_pylist(), path


@pytest.mark.parametrize("name", ["nulls", "objects"])
def test_to_arrow_matches_supers_json(name):
    """Files of JSON's own types: the Arrow table's rows are super's JSON rows."""
    table = run(_read(name, "scan")).to_arrow()
    rows = expected_json(name)
    got = table.to_pylist()
    want = [{c: r if c == "" else r.get(c) if isinstance(r, dict) else None
             for c in table.column_names} for r in rows]  # "": the whole value
    assert got == want


def test_to_arrow_of_every_primitive():
    table = run(_read("primitives", "scan")).to_arrow()
    rows = expected_json("primitives")
    for c in ("u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "f32", "f64", "b",
              "s", "ip", "ip6", "net", "tag"):
        assert table.column(c).to_pylist() == [r[c] for r in rows], c
    assert [t.isoformat().replace("+00:00", "Z") for t in table.column("t").to_pylist()] == [
        r["t"] for r in rows]


def test_nested_to_arrow_has_every_row():
    table = run(_read("nested", "scan")).to_arrow()
    assert table.num_rows == 300
    assert table.column("id").to_pylist() == [
        r.get("id") if isinstance(r, dict) else None for r in expected_json("nested")]


def test_projection_rows_and_limit():
    rows = expected_json("objects")
    res = run(_read("objects", "scan", columns=["b"], rows=slice(125_000, 125_010)))
    assert res.column("b").to_pylist() == [r.get("b") for r in rows[125_000:125_010]]
    res = run(_read("objects", "scan", columns="n", limit=5))
    assert res.column("n").to_pylist() == [r["n"] for r in rows[:5]]
    # the first rows live in the first object: only its segments are planned
    assert res.plan.bytes_needed < 20_000


def test_nested_paths_descend_records():
    res = run(_read("nested", "scan", columns=["rec.inner.deep", "p.x"]))
    rows = expected_json("nested")

    def dig(r, *keys):
        for k in keys:
            r = r.get(k) if isinstance(r, dict) else None
        return r

    assert res.column("rec.inner.deep").to_pylist() == [dig(r, "rec", "inner", "deep")
                                                         for r in rows]
    assert res.column("p.x").to_pylist() == [dig(r, "p", "x") for r in rows]


def test_take_and_counts():
    async def go():
        async with csup_async.open(str(DATA / "objects.csup")) as r:
            assert r.num_rows == 250_000 and await r.count_rows() == 250_000
            res = await r.take([249_999, 0, 130_000], ["n", "b"])
            return res.column("n").to_pylist(), res.column("b").to_pylist()

    rows = expected_json("objects")
    n, b = run(go())
    assert n == [rows[i]["n"] for i in (249_999, 0, 130_000)]
    assert b == [rows[i].get("b") for i in (249_999, 0, 130_000)]


def test_an_unknown_column_is_named():
    with pytest.raises(csup_async.ColumnNotFoundError, match="nope"):
        run(_read("objects", "scan", columns=["nope"]))


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "csup_async.cli", *args], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", ["nulls", "objects"])
def test_cli_cat_prints_supers_json(name):
    done = _cli("cat", str(DATA / f"{name}.csup"))
    assert done.returncode == 0, done.stderr
    assert [json.loads(x) for x in done.stdout.splitlines()] == expected_json(name)


def test_cli_scan_columns():
    done = _cli("scan", str(DATA / "objects.csup"), "-c", "n,b", "--limit", "130005")
    assert done.returncode == 0, done.stderr
    got = [json.loads(x) for x in done.stdout.splitlines()]
    want = [{"n": r["n"], "b": r.get("b")} for r in expected_json("objects")[:130_005]]
    assert got == want


def test_cli_inspect_names_the_writer_and_version():
    done = _cli("inspect", str(DATA / "objects.csup"))
    assert done.returncode == 0, done.stderr
    assert "the layout of super v0.3.0 (target super-0.3), header version 16" in done.stdout
    assert "objects: 3" in done.stdout and "rows: 250,000" in done.stdout
    doc = json.loads(_cli("inspect", "--json", str(DATA / "nested.csup")).stdout)
    assert doc["writer"] == "super v0.3.0" and doc["version"] == 16 and doc["rows"] == 300


def _bsup_rows(name: str) -> list[object]:
    return [bsup2.decode_value(t, b) for t, b in
            bsup2.read_values((DATA / f"{name}.bsup").read_bytes())]


@pytest.mark.parametrize("name", ["optional", "fusion"])
def test_absent_optional_fields(name):
    """Absent (none) fields are left out of rows, null in columns (arrays have no
    absent value: a record column's optional field is null where absent)."""
    rows = _bsup_rows(name)
    assert any(len(r) < 3 for r in rows)  # the files do have absent fields

    def as_column(v):
        return {"w": v.get("w")} if isinstance(v, dict) and name == "optional" else v

    res = run(_read(name, "scan"))
    for path, arr in res.columns.items():
        assert arr.to_pylist() == [as_column(r.get(path)) for r in rows], path
    batches = run(_read(name, "batches", batch_rows=7))
    assert [v for b in batches for v in b.columns["x" if name == "optional" else "a"]
            .to_pylist()] == [r.get("x" if name == "optional" else "a") for r in rows]
    assert [v.value for v in run(_read(name, "values"))] == rows


def test_optional_nested_path():
    rows = _bsup_rows("optional")
    res = run(_read("optional", "scan", columns=["z.w"]))
    assert res.column("z.w").to_pylist() == [(r.get("z") or {}).get("w") for r in rows]


def test_none_runs_super_breaks_are_refused():
    """super v0.3.0 writes optional fields of more than one 100-row input batch with
    none runs that no longer alternate (and misreads the file itself from row 100:
    see broken_runs.output.sup); reading it is a FormatError, never wrong rows."""
    with pytest.raises(csup_async.FormatError, match=r"broken_runs\.csup.*none runs"):
        run(_read("broken_runs", "rows"))


@pytest.mark.parametrize("name", ["primitives", "nested", "nulls", "objects", "optional"])
def test_schema_arrow_is_the_scans(name):
    """The Arrow schema from metadata alone is the one a scan's table has (the sync
    face's BatchStream announces it before reading)."""
    pa = pytest.importorskip("pyarrow")

    async def go():
        async with csup_async.open(str(DATA / f"{name}.csup")) as r:
            return (pa.schema(r.schema.arrow()), (await r.scan()).to_arrow().schema,
                    str(r.schema))

    arrow, scanned, text = run(go())
    assert arrow == scanned
    assert text.startswith("super type 0: ")


def test_the_sync_face_reads_superdb_files():
    r = csup_async.open_sync(str(DATA / "objects.csup"))
    try:
        assert sum(b.num_rows for b in r.iter_batches(["n"])) == 250_000
        assert r.scan(["n"], filter="n >= 2499").num_rows == 100
    finally:
        r.close()


def test_cli_convert_to_the_trailer_layout(tmp_path):
    """super's file converted to this library's layout keeps every value and type."""
    out = tmp_path / "nested.csup"
    done = _cli("convert", "--target", "csup-async", str(DATA / "nested.csup"), str(out))
    assert done.returncode == 0, done.stderr

    async def values(p):
        async with csup_async.open(str(p)) as r:
            return await r.read_values(), getattr(r, "header_layout", False)

    (mine, hl1), (theirs, hl2) = run(values(out)), run(values(DATA / "nested.csup"))
    assert (hl1, hl2) == (False, True)
    assert [(v.type, strip_unions(v.value)) for v in mine] == [
        (v.type, strip_unions(v.value)) for v in theirs]


def test_cli_inspect_verify_refuses_a_broken_file():
    done = _cli("inspect", "--verify", str(DATA / "broken_runs.csup"))
    assert done.returncode == 4
    assert "broken_runs.csup" in done.stderr and "none runs" in done.stderr
