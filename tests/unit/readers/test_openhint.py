"""A v23 file opened again: the reads its last open made go with the tail read
(readers/openhint), and a file that changed since still reads as it is now."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import csup_async
import planner as P
from csup_async.readers import headhint, openhint
from csup_async.stores.local import LocalStore

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "super-main"
OBJECTS = REAL / "wide" / "objects.csup"  # 3 objects: 31,000 + 31,000 + 1,333 bytes
PARTS = REAL / "parts.csup"  # 2 parts
# reads of 4 KiB: the tail read holds neither the head nor the other objects' headers
SMALL = dataclasses.replace(P.get_profile("local"), tail_min=4096, tail_max=4096)


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    headhint.forget()
    yield
    headhint.forget()


async def _open(path: Path, **kw: Any) -> tuple[Any, list[dict[str, Any]]]:
    async with csup_async.open(str(path), profile=SMALL, **kw) as r:
        cost = (await r.plan(None)).open_cost if getattr(r, "header_layout", False) else (
            None)
        return cost, await r.read_rows()


class Counting(LocalStore):
    """A local store counting its thread hand-offs (each read of the open)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def read_tail(self, key: str, length: int) -> Any:
        self.calls.append("tail")
        return await super().read_tail(key, length)

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        self.calls.append("range")
        return await super().read_range(key, offset, length, version)

    async def read_tail_also(self, key: str, length: int, ranges: Any, version: str) -> Any:
        self.calls.append("tail+")
        return await super().read_tail_also(key, length, ranges, version)


@pytest.mark.parametrize("path", [OBJECTS, PARTS], ids=["3 objects", "2 parts"])
async def test_a_warm_open_sends_its_reads_with_the_tail_read(tmp_path: Path,
                                                               path: Path) -> None:
    f = tmp_path / path.name
    shutil.copy(path, f)
    store = Counting()
    async with csup_async.open(str(f), profile=SMALL, store=store) as r:
        plan = await r.plan(None)
        cold, cold_rows, cold_plan = plan.open_cost, await r.read_rows(), plan.explain()
    assert store.calls[0] == "tail" and store.calls.count("range") >= 1
    assert cold.recalled == 0
    store.calls.clear()
    async with csup_async.open(str(f), profile=SMALL, store=store) as r:
        wplan = await r.plan(None)
        warm, warm_rows, plan = wplan.open_cost, await r.read_rows(), wplan.explain()
    # one thread hand-off for the whole open (then the scan's data reads)
    assert store.calls[0] == "tail+" and "range" not in store.calls[:1]
    assert warm.recalled == cold.requests - 1  # every read but the tail's, sent with it
    assert (warm.requests, warm.bytes_read) == (cold.requests, cold.bytes_read)
    assert warm.in_first_read == warm.objects
    assert "round trips: 1 at open" in plan and "round trips: 1 at open" not in cold_plan
    assert warm_rows == cold_rows


@pytest.mark.parametrize("new", [PARTS, OBJECTS, "own", "v23"])
async def test_a_file_changed_since_its_last_open_reads_as_it_is_now(
        tmp_path: Path, new: Any) -> None:
    """The same path holding another file (another v23 file, the same one again, our
    layout, a v23 file of other rows): the recalled reads are dropped, never mistaken
    for it (its version, inode, size and mtime, is another)."""
    f = tmp_path / "f.csup"
    shutil.copy(OBJECTS, f)
    await _open(f)
    assert openhint.recall(LocalStore(), str(f)) is not None
    st = f.stat()
    if new == "own":
        csup_async.write(str(f), [{"id": i} for i in range(5000)], target="csup-async")
    elif new == "v23":
        csup_async.write(str(f), [{"a": str(i)} for i in range(30_000)], target="super")
    else:
        shutil.copy(new, f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    cost, rows = await _open(f)
    assert cost is None or cost.recalled == 0  # (our layout: no v23 open cost)
    async with csup_async.open(str(f)) as fresh:  # a cold open of the default profile
        assert rows == await fresh.read_rows()


async def test_reads_recalled_wrongly_only_cost_reads(tmp_path: Path) -> None:
    """Ranges that do not hold what the open needs (or lie outside the file) for the
    file's own size and version: the chain parses what it reads and reads the rest."""
    f = tmp_path / "f.csup"
    shutil.copy(OBJECTS, f)
    cold, rows = await _open(f)
    known = openhint.recall(LocalStore(), str(f))
    assert known is not None
    size, version, _ = known
    for ranges in (((100, 10),), ((size - 10, 100),), ((5000, 4096), (40_000, 1))):
        openhint.remember(LocalStore(), str(f), size, version, ranges)
        again, got = await _open(f)
        assert got == rows
        assert again.objects == cold.objects


def test_the_memory_is_bounded_and_keeps_no_unknown_version() -> None:
    store = LocalStore()
    for i in range(openhint.KEEP + 10):
        openhint.remember(store, f"/d/{i}.csup", 100, "v", ((0, 10),))
    assert [i for i in range(openhint.KEEP + 10)
            if openhint.recall(store, f"/d/{i}.csup") is None] == list(range(10))
    assert openhint.recall(store, f"/d/{openhint.KEEP + 9}.csup") == (100, "v", ((0, 10),))
    openhint.remember(store, "/d/x.csup", 100, None, ((0, 10),))
    assert openhint.recall(store, "/d/x.csup") is None
    many = tuple((i, 1) for i in range(openhint.MAX_RANGES + 1))
    openhint.remember(store, "/d/y.csup", 100, "v", many)
    assert openhint.recall(store, "/d/y.csup") is None
