"""A pool as a source: its objects and its filter, read by the ordinary reader.

``pool.source(filter=)`` names the objects a scan reads (URLs, sizes, key spans, byte
ranges, columnar copies) and states the whole filter (key range included) in the
common filter model; handing the copies and that filter to ``open_dataset`` gives the
pool scan's rows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import csup_async
from csup_async import col
from planner.filters import And

LOADS = [[{"ts": 3 * i + j, "v": f"l{j}-{i}", **({"w": i} if j == 1 else {})}
          for i in range(2000)] for j in range(3)] + [[{"ts": 50_000 + i, "v": "late"}
                                                      for i in range(50)]]


def _lake(root: str) -> None:
    async def go() -> None:
        await csup_async.create_lake(root)
        async with csup_async.open_lake(root) as lake:
            await lake.create_pool("p", key="ts", order="asc", seek_stride=256)
            pool = await lake.pool("p")
            for rows in LOADS:
                await pool.load(rows, csup=True)

    asyncio.run(go())


def test_the_source_names_objects_ranges_and_the_filter(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    _lake(root)

    async def go() -> Any:
        async with csup_async.open_lake(root) as lake:
            pool = await lake.pool("p")
            src = await pool.source("ts >= 100 and ts < 130 and v != 'l0-40'")
            everything = await pool.source()
            return src, everything

    src, everything = asyncio.run(go())
    assert len(everything.objects) == 4 and everything.filter is None
    assert everything.pruned == ()
    late = [o for o in everything.objects if o.min == 50_000]
    assert [p[0] for p in src.pruned] == [late[0].id]  # its min/max rules it out
    assert {p[1] for p in src.pruned} == {"min/max"}
    assert len(src.objects) == 3 and src.groups == ((0, 1, 2),)  # they overlap
    for o in src.objects:
        assert Path(o.url).is_file() and Path(o.url).stat().st_size == o.size
        assert o.url.endswith(f"{o.id}.zng") and o.columnar == o.url[:-4] + ".csup"
        assert o.runs is not None and sum(n for _, n in o.runs) < o.size  # seek-narrowed
    # the key range and the rest, as conjuncts of the common model
    assert isinstance(src.filter, And)
    assert set(src.filter.parts) == {col("ts") >= 100, col("ts") < 130, col("v") != "l0-40"}
    assert src.columnar_urls == [o.columnar for o in src.objects]


def test_the_ordinary_reader_reads_the_source_as_the_pool_scans(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    _lake(root)
    flt = "ts >= 100 and ts < 400 and v != 'l2-50'"

    async def go() -> tuple[list[Any], list[Any]]:
        async with csup_async.open_lake(root) as lake:
            pool = await lake.pool("p")
            src = await pool.source(flt)
            scanned = (await pool.scan(["ts", "v", "w"], filter=flt)).to_pylist()
        urls = src.columnar_urls
        assert urls is not None
        async with csup_async.open_dataset(urls) as ds:
            res = await ds.scan(["ts", "v", "w"], filter=src.filter)
        return scanned, res.to_pylist()

    scanned, read = asyncio.run(go())
    rows = sorted((r for load in LOADS for r in load), key=lambda r: r["ts"])
    want = [{"ts": r["ts"], "v": r["v"], "w": r.get("w")} for r in rows
            if 100 <= r["ts"] < 400 and r["v"] != "l2-50"]
    assert scanned == want
    assert sorted(read, key=lambda r: r["ts"]) == want
