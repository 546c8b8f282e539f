"""Files the real ``super`` main (492eab8) wrote, CSUP version 23 (tests/data/real/super-main/),
read through ``csup_async.open``: every value and its type as ``super`` gives them in its own
BSUP version-5 output of the same file, and as ``super -j`` prints them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import csup_async
from csup_async.format.bsup import split_tagged
from csup_async.format.superdb import bsup5
from csup_async.format.superdb.bsup2 import FusionType
from csup_async.format.superdb.suptext import format_type
from csup_async.scan.superdb.vectors23 import defuse
from tests.support.superjson import super_json

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super-main"
NAMES = sorted(p.stem for p in DATA.glob("*.csup"))


def run(coro):
    return asyncio.run(coro)


async def _values(path: Path):
    async with csup_async.open(str(path)) as r:
        return await r.read_values()


def defused(t, b):
    """A value of ``super -f bsup`` as ``super`` prints it: a fusion value as the value
    of its own subtype (``super -s``/``-j`` and ``typeof`` show it so, and so does
    csup_async)."""
    if isinstance(t, FusionType) and t.inner != bsup5.ALL_T:
        body, tv = split_tagged(b)
        sub = bsup5.decode_type_value(tv)
        return sub, defuse(bsup5.decode_value(t.inner, body, typed=True), sub)
    return t, bsup5.decode_value(t, b, typed=True)


def supers_values(name: str) -> list[tuple[object, object]]:
    """``super -f bsup`` of the file: (type, typed value) per value."""
    return [defused(t, b) for t, b in bsup5.read_values((DATA / f"{name}.bsup").read_bytes())]


def test_the_corpus_is_there():
    assert {"primitives", "unions", "optional", "fusion", "recursive", "parts"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_values_and_types_match_supers_bsup(name):
    got = [(v.type, v.value) for v in run(_values(DATA / f"{name}.csup"))]
    want = supers_values(name)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g[0] == w[0], f"{name} value {i}: type {g[0]} != {w[0]}"
        assert g[1] == w[1], f"{name} value {i}"


@pytest.mark.parametrize("name", NAMES)
def test_json_matches_super_j(name):
    want = [json.loads(line) for line in (DATA / f"{name}.json.out").read_text().splitlines()]
    got = [super_json(v.type, v.value, main=True) for v in run(_values(DATA / f"{name}.csup"))]
    assert got == want


@pytest.mark.parametrize("name", [n for n in NAMES if n != "recursive"])
def test_scan_columns_match_super_j(name):
    """Every top-level column a scan gives holds what ``super -j`` prints at that field
    (null where a row lacks it)."""
    async def scan():
        async with csup_async.open(str(DATA / f"{name}.csup")) as r:
            return await r.scan()

    res = run(scan())
    rows = [json.loads(line) for line in (DATA / f"{name}.json.out").read_text().splitlines()]
    assert res.num_rows == len(rows)
    for path, arr in res.columns.items():
        got = [super_json(arr.type, v, main=True) for v in arr.to_pylist(typed=True)]
        want = rows if path == "" else [r.get(path) if isinstance(r, dict) else None
                                        for r in rows]
        assert _absent_as_null(got) == _absent_as_null(want), path


def _absent_as_null(v):
    """Columns hold an absent optional field as null: compare records without nulls."""
    if isinstance(v, dict):
        return {k: _absent_as_null(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_absent_as_null(x) for x in v]
    return v


def test_recursive_types_are_read_as_values_not_columns():
    async def go():
        async with csup_async.open(str(DATA / "recursive.csup")) as r:
            rows = await r.read_rows()
            with pytest.raises(csup_async.CsupError, match=r"recursive\.csup"):
                await r.scan()
            return rows

    assert run(go())[1] == {"v": 4, "left": None}


def test_the_footer_gives_the_files_fused_type():
    """super fuses every value's type into the footer: the file's schema without data."""
    async def go():
        async with csup_async.open(str(DATA / "optional.csup")) as r:
            return r.schema

    schema = run(go())
    assert format_type(schema.fused_type) == "{x?:int64,y?:string,z?:int64,o?:{a:int64},p?:int64}"
    assert "fused type (footer): {x?:int64," in str(schema)


@pytest.mark.parametrize("name", NAMES)
def test_committed_outputs_are_what_super_main_prints(name):
    """With the real binary: the committed oracle is current (``super -j`` of the file)."""
    import subprocess

    from tests.support import realtools

    tool = getattr(realtools, "SUPER_MAIN",
                   realtools.Tool("super", "github.com/brimdata/super", "main"))
    exe = realtools.find(tool, "super")
    if exe is None:
        pytest.skip("super main is not built (tests/support/realtools.py)")
    r = subprocess.run([str(exe), "-j", str(DATA / f"{name}.csup")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (DATA / f"{name}.json.out").read_text()


def test_inspect_names_the_writer_and_the_parts(capsys):
    from csup_async.cli import main

    assert main(["inspect", str(DATA / "parts.csup")]) == 0
    out = capsys.readouterr().out
    assert "the layout of super main (2026)" in out and "header version 23" in out
    assert "parts: 2" in out and "part 1: bytes 1,750-6,147" in out
    assert "fused type {id:int64,cat:string" in out
