"""Reads keep the event loop free without a thread of their own.

A large metadata section is parsed in the pool, a small one in place; an eager
read waits for its segments on the loop; a segment no planned request holds is
a FormatError naming it (a consumer waiting for it would wait forever); batch
steps come from one bounded pool and are all gone once the reads end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import threading
from pathlib import Path
from typing import Any

import pytest

import csup_async
import csup_async.readers.loading as loading_mod
from csup_async.model.errors import FormatError
from csup_async.scan import pool, scan

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _file(tmp_path: Path, rows: int, segment_thresh: int) -> Path:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "s": f"v{i}"} for i in range(rows)],
                     segment_thresh=segment_thresh)
    p = tmp_path / f"f{rows}_{segment_thresh}.csup"
    p.write_bytes(out.getvalue())
    return p


def _parse_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    real = loading_mod.parse_reassembly

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(threading.get_ident())
        return real(*args, **kw)

    monkeypatch.setattr(loading_mod, "parse_reassembly", spy)
    return seen


async def test_large_metadata_is_parsed_off_the_loop(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    p = _file(tmp_path, 100_000, 1 << 10)  # many small segments: a large section
    seen = _parse_threads(monkeypatch)
    async with csup_async.open(str(p)) as r:
        assert r.meta.trailer.reassembly_size >= pool.OFF_LOOP_BYTES
        assert (await r.scan(["id"])).num_rows == 100_000
    assert seen and threading.get_ident() not in seen


async def test_small_metadata_is_parsed_in_place(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    p = _file(tmp_path, 100, 1 << 20)
    seen = _parse_threads(monkeypatch)
    async with csup_async.open(str(p)) as r:
        assert r.meta.trailer.reassembly_size < pool.OFF_LOOP_BYTES
    assert seen == [threading.get_ident()]


async def test_a_segment_no_request_holds_is_an_error_not_a_hang(tmp_path: Path) -> None:
    p = _file(tmp_path, 20_000, 1 << 12)
    async with csup_async.open(str(p)) as r:
        plan = (await r.plan(["id"])).plan  # the program's ScanPlan
        reqs = [q for q in plan.requests if not q.served]
        assert reqs
        short = dataclasses.replace(reqs[-1], length=reqs[-1].length // 2)
        cut = dataclasses.replace(plan, requests=(*plan.requests[:-1], short))
        with pytest.raises(FormatError, match="in no planned request") as e:
            await asyncio.wait_for(r.execute(cut, ["id"]), 30)
        assert e.value.path is not None and "f20000" in e.value.path


async def test_batch_steps_share_one_bounded_pool(tmp_path: Path) -> None:
    p = _file(tmp_path, 30_000, 1 << 12)
    before = {t.name for t in threading.enumerate()}

    async def one() -> int:
        async with csup_async.open(str(p)) as r:
            return sum([b.num_rows async for b in r.iter_batches(["id", "s"],
                                                                  batch_rows=4096)])

    got = await asyncio.gather(*(one() for _ in range(3 * scan.step_pool()._max_workers)))
    assert got == [30_000] * len(got)
    steps = [t for t in threading.enumerate() if t.name.startswith("csup-step")]
    assert len(steps) <= scan.step_pool()._max_workers
    pools = ("csup-step", "csup-decode", "asyncio_")  # bounded: ours, and the loop's
    assert not [n for n in {t.name for t in threading.enumerate()} - before
                if not n.startswith(pools)]
    assert scan.steps_running() == 0


@pytest.mark.parametrize(("rows", "on_loop"), [(500, True), (200_000, False)])
async def test_an_eager_read_walks_its_cursors_after_every_segment_is_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int, on_loop: bool) -> None:
    """Every job is settled when the walk starts; a small read walks on the loop, a
    large one in the decode pool (a walk over megabytes would hold the loop)."""
    p = _file(tmp_path, rows, 1 << 14)
    walks: list[tuple[int, int]] = []
    real = scan.Read.whole

    def spy(read: Any) -> Any:
        walks.append((threading.get_ident(), read.source.unsettled))
        return real(read)

    monkeypatch.setattr(scan.Read, "whole", spy)
    async with csup_async.open(str(p)) as r:
        got = await r.scan(["id", "s"])
    assert got.column("id").to_pylist() == list(range(rows))
    assert len(walks) == 1 and walks[0][1] == 0
    assert (walks[0][0] == threading.get_ident()) is on_loop
