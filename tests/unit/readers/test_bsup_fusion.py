"""Fusion values read from BSUP keep their subtypes, as super prints them (issue #37).

A BSUP fusion value is its supertype's value and its subtype.  ``read_values`` used to
give the supertype's value under the fusion type, its subtype dropped; now each fusion
value is its subtype's, the types around it rebuilt, as super main prints it (its
``defuse``, auto-applied on output).  Judged by the real tools' committed outputs
(tests/data/real/fusion-bsup/README.md); live against super main when it is built."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.format.superdb.suptext import format_type
from csup_async.writers.inputs import read_values
from tests.support import realtools
from tests.support.superjson import super_json

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "fusion-bsup"


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


async def _read(path: Path) -> list[Any]:
    async with csup_async.open(str(path)) as r:
        return await r.read_values()


def _printed(values: list[Any]) -> tuple[list[str], list[Any]]:
    """The values' types as ``typeof`` prints them, and their ``-j`` JSON."""
    return ([f"<{format_type(v.type)}>" for v in values],
            [super_json(v.type, v.value, main=True) for v in values])


@pytest.mark.parametrize("name", ["nested.bsup", "nested.super-0.3.bsup"])
async def test_nested_fusion_values_read_as_super_main_prints_them(name: str) -> None:
    types, got = _printed(await _read(DATA / name))
    assert types == _lines("nested.types.out")
    assert got == [json.loads(x) for x in _lines("nested.json.out")]
    # the subtypes are what the file holds, not derived: {a:[{x:int64}|{y:int64}]}
    assert types[4] == "<{a:[{x:int64}|{y:int64}]}>" and types[5] == "<{u:{x:int64}}>"


async def test_super_0_3_top_level_fusion_values_read_as_its_defuse() -> None:
    values = await _read(DATA / "top.super-0.3.bsup")
    types, got = _printed(values)
    assert types == _lines("top.super-0.3-defused.types.out")
    assert got == [json.loads(x) for x in _lines("top.super-0.3-defused.json.out")]
    assert [list(v.value) for v in values[:3]] == [["a", "b"], ["a"], ["c", "b"]]


def test_convert_input_keeps_the_subtypes() -> None:
    """``convert``'s reader of a BSUP input (writers.inputs) reads them the same way."""
    types, got = _printed(list(read_values(str(DATA / "nested.bsup"))))
    assert types == _lines("nested.types.out")
    assert got == [json.loads(x) for x in _lines("nested.json.out")]


async def test_a_scan_still_reads_the_supertype_columns() -> None:
    """Columns are of the stream's (super)type: a scan is unchanged by the subtypes."""
    async with csup_async.open(str(DATA / "top.super-0.3.bsup")) as r:
        res = await r.scan(["a"])
    assert res.column("a").to_pylist()[:4] == [0, 1, None, None]


def test_live_super_main_prints_what_is_committed() -> None:
    exe = realtools.find(realtools.SUPER_MAIN, "super")
    if exe is None:
        pytest.skip("super main is not built (tests/support/realtools.py)")
    for args, out in ((["-j"], "nested.json.out"),
                      (["-s", "-c", "typeof(this)"], "nested.types.out")):
        run = subprocess.run([str(exe), *args, str(DATA / "nested.bsup")],
                             capture_output=True, text=True, check=True, timeout=60)
        assert run.stdout.splitlines() == _lines(out)
