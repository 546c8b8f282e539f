"""Files super v0.2.0 wrote (header version 14: a 28-byte header, BSUP version 1
metadata) read through every path as super v0.2.0's own BSUP and JSON say."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import csup_async
from csup_async.format.superdb import bsup2
from csup_async.model.values import strip_unions
from tests.support.superjson import super_json

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super" / "v0.2.0"


async def _open_read(name: str):
    async with csup_async.open(str(DATA / f"{name}.csup")) as r:
        return r.meta.version, await r.read_rows(), await r.read_values(), await r.scan()


@pytest.mark.parametrize("name", ["primitives", "nested", "nulls", "optional"])
def test_rows_match_super_v0_2_bsup(name):
    version, rows, values, res = asyncio.run(_open_read(name))
    want = [bsup2.decode_value(t, b, dialect=bsup2.V1) for t, b in
            bsup2.read_values((DATA / f"{name}.bsup").read_bytes(), bsup2.V1)]
    assert version == 14
    assert rows == want
    assert [strip_unions(v.value) for v in values] == want
    assert res.num_rows == len(want)


@pytest.mark.parametrize("name", ["primitives", "nested", "nulls"])
def test_values_match_super_v0_2_json(name):
    _, _, values, res = asyncio.run(_open_read(name))
    want = [json.loads(x) for x in (DATA / f"{name}.json").read_text().splitlines()]
    assert [super_json(v.type, v.value) for v in values] == want
    for path, arr in res.columns.items():
        got = [super_json(arr.type, v) for v in arr.to_pylist(typed=True)]
        assert got == [r if path == "" else r.get(path) if isinstance(r, dict) else None
                       for r in want], path


def test_inspect_names_v0_2():
    from csup_async.format.superdb.describe import describe_file

    async def go():
        async with csup_async.open(str(DATA / "nested.csup")) as r:
            return describe_file(r.meta, r.path)

    text = asyncio.run(go())
    assert "the layout of super v0.2.0, header version 14" in text
    assert "(header 28, metadata" in text
