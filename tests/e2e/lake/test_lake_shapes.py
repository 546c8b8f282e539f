"""Pools whose loads have different record shapes read like any data of several types.

Each load below has a shape of its own (a field another lacks, a field of another
type); a scan of the pool gives every row with the union of the fields, a field a row
lacks as null, in pool-key order, through the API, Arrow and the CLI.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import main

# keys interleave between the first two loads (their objects overlap and are merged)
LOADS: list[list[dict[str, Any]]] = [
    [{"ts": 2 * i, "a": i} for i in range(40)],
    [{"ts": 2 * i + 1, "a": -i, "ok": i % 2 == 0} for i in range(40)],
    [{"ts": 1000 + i, "b": f"x{i}", "a": f"s{i}"} for i in range(30)],
]
FIELDS = ["ts", "a", "ok", "b"]


def expected(columns: list[str] | None = None, keep: Any = None) -> list[dict[str, Any]]:
    rows = sorted((r for load in LOADS for r in load), key=lambda r: r["ts"])
    if keep is not None:
        rows = [r for r in rows if keep(r)]
    return [{c: r.get(c) for c in (columns or FIELDS)} for r in rows]


def make_lake(root: Path, csup: bool = False) -> str:
    async def go() -> None:
        await csup_async.create_lake(str(root))
        async with csup_async.open_lake(str(root)) as lake:
            await lake.create_pool("p", key="ts", order="asc", seek_stride=64)
            pool = await lake.pool("p")
            for rows in LOADS:
                await pool.load(rows, csup=csup)

    asyncio.run(go())
    return str(root)


def scan(root: str, columns: Any = None, **kw: Any) -> Any:
    async def go() -> Any:
        async with csup_async.open_lake(root) as lake:
            return await (await lake.pool("p")).scan(columns, **kw)

    return asyncio.run(go())


@pytest.mark.parametrize("csup", [False, True])
def test_a_scan_of_every_field_gives_the_union_of_the_shapes(tmp_path: Path,
                                                             csup: bool) -> None:
    root = make_lake(tmp_path / "lake", csup)
    res = scan(root, csup=csup or None)
    assert res.num_rows == sum(map(len, LOADS))
    assert sorted(res.columns) == sorted(FIELDS)
    assert res.to_pylist() == expected()


@pytest.mark.parametrize("csup", [False, True])
def test_columns_and_filters_on_fields_some_objects_lack(tmp_path: Path, csup: bool) -> None:
    root = make_lake(tmp_path / "lake", csup)
    got = scan(root, ["ts", "ok"], csup=csup or None)
    assert got.to_pylist() == expected(["ts", "ok"])
    got = scan(root, ["ts", "b"], filter="ts >= 70", csup=csup or None)
    assert got.to_pylist() == expected(["ts", "b"], lambda r: r["ts"] >= 70)
    got = scan(root, ["ts"], filter="ok = true", csup=csup or None)
    assert got.to_pylist() == expected(["ts"], lambda r: r.get("ok") is True)


def test_batches_of_a_pool_of_several_shapes(tmp_path: Path) -> None:
    root = make_lake(tmp_path / "lake")

    async def go() -> list[dict[str, Any]]:
        async with csup_async.open_lake(root) as lake:
            pool = await lake.pool("p")
            return [r async for b in pool.iter_batches(["ts", "a", "b"]) for r in b.to_pylist()]

    assert asyncio.run(go()) == expected(["ts", "a", "b"])


def test_arrow_of_a_pool_of_several_shapes(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    root = make_lake(tmp_path / "lake")
    table = scan(root, ["ts", "ok", "b"]).to_arrow()
    assert isinstance(table, pa.Table)
    assert table.column_names == ["ts", "ok", "b"]
    assert table.to_pylist() == expected(["ts", "ok", "b"])


def test_the_cli_prints_every_row_of_every_shape(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = make_lake(tmp_path / "lake")
    assert main(["lake", "scan", root, "--pool", "p"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # a field the row lacks is printed as null (the rows are the union's records)
    assert [{c: r.get(c) for c in FIELDS} for r in rows] == expected()
