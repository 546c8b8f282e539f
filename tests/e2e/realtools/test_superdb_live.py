"""Against the real ``super`` binaries (skipped where they are not built): the committed
files are what ``super`` writes today, and files it writes from varied data read as
its own BSUP and JSON say."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

import csup_async
from csup_async.format.superdb import bsup2
from csup_async.model.values import strip_unions
from tests.support import realtools, superdb_data
from tests.support.superjson import super_json

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super"
TOOLS = {"v0.3.0": (realtools.SUPER_0_3, bsup2.V2, 16),
         "v0.2.0": (realtools.SUPER_0_2, bsup2.V1, 14)}


def _binary(release: str) -> Path:
    return realtools.require(TOOLS[release][0], "super")


@pytest.mark.parametrize("name", ["primitives", "nested", "nulls", "optional", "fusion"])
def test_committed_files_are_what_super_writes(tmp_path, name):
    binary = _binary("v0.3.0")
    ext, make = superdb_data.INPUTS[name]
    (tmp_path / f"{name}.input.{ext}").write_text(make())
    realtools.run(binary, *superdb_data.commands(name, ext)[0][1:], cwd=tmp_path)
    assert (tmp_path / f"{name}.csup").read_bytes() == (DATA / f"{name}.csup").read_bytes()


def _rows(seed: int, n: int) -> list[dict]:
    """Varied JSON: shapes that come and go, nulls, repeats (dict vectors) and distinct
    values (plain ones), nested records and arrays, mixed-type arrays (unions)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        row: dict = {"i": i, "k": rnd.choice(["a", "b", "c", None])}
        if rnd.random() < 0.7:
            row["f"] = rnd.choice([rnd.random() * 1e6, -1.5, 0.0, None])
        if rnd.random() < 0.5:
            row["s"] = "".join(rnd.choice("xyz ") for _ in range(rnd.randrange(40)))
        if rnd.random() < 0.4:
            row["r"] = {"a": rnd.randrange(-5, 5), "b": [rnd.randrange(3) for _ in range(
                rnd.randrange(4))], "c": {"d": rnd.choice([True, False, None])}}
        if rnd.random() < 0.2:
            row["m"] = [rnd.choice([1, "one", None, {"x": 1}]) for _ in range(rnd.randrange(3))]
        if rnd.random() < 0.05:
            row = {"other": i}
        out.append(row)
    return out


@pytest.mark.parametrize("release", sorted(TOOLS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_varied_data_reads_as_super_says(tmp_path, release, seed):
    binary = _binary(release)
    _, dialect, version = TOOLS[release]
    src = tmp_path / "in.json"
    src.write_text("\n".join(json.dumps(r) for r in _rows(seed, 3000)) + "\n")
    realtools.run(binary, "-f", "csup", "-o", "f.csup", "in.json", cwd=tmp_path)
    realtools.run(binary, "-f", "bsup", "-bsup.compress=false", "-o", "f.bsup", "f.csup",
                  cwd=tmp_path)
    text = realtools.run(binary, "-j", "f.csup", cwd=tmp_path).decode()
    want = [bsup2.decode_value(t, b, dialect=dialect) for t, b in
            bsup2.read_values((tmp_path / "f.bsup").read_bytes(), dialect)]

    async def read():
        async with csup_async.open(str(tmp_path / "f.csup")) as r:
            assert r.meta.version == version
            return await r.read_rows(), await r.read_values(), await r.scan()

    rows, values, res = asyncio.run(read())
    assert rows == want
    assert [strip_unions(v.value) for v in values] == want
    assert [super_json(v.type, v.value) for v in values] == [
        json.loads(x) for x in text.splitlines()]
    for path, arr in res.columns.items():
        if path:  # "" (whole rows, some not records) is read_rows' comparison above
            assert arr.to_pylist() == [r.get(path) if isinstance(r, dict) else None
                                       for r in rows], path
