"""The store marks a body received beside others of its endpoint as shared, so that a
busy client's slow transfers are not taken for a slow store (planner.calibration)."""

from __future__ import annotations

import asyncio
import io
import random
from typing import Any

import csup_async
from csup_async.readers import headhint
from csup_async.stores.calibrate import Measurements, from_rows, to_rows
from csup_async.stores.http import HTTPStore


def _file() -> bytes:
    out = io.BytesIO()
    rnd = random.Random(0)
    # our layout: its open is one tail read (a v23 file's is a tail and a head read)
    csup_async.write(out, [{"a": i, "b": rnd.randbytes(24).hex()} for i in range(100_000)],
                     target="csup-async")
    return out.getvalue()


def test_begin_and_end_say_whether_bodies_overlapped() -> None:
    m = Measurements()
    a = m.begin()
    assert m.end(a) is False  # alone from start to end
    a = m.begin()
    b = m.begin()  # b starts while a is receiving
    assert m.end(b) is True
    assert m.end(a) is True  # a saw b start
    c = m.begin()
    assert m.end(c) is False and m.receiving == 0


def test_shared_survives_the_disk_form_and_old_rows_read_as_not_shared() -> None:
    m = Measurements()
    m.record(0.05, 1 << 20, 0.01, fresh=False, shared=True)
    m.record(0.05, 1 << 20, 0.01)
    assert [s.shared for s in from_rows(to_rows(m))] == [True, False]
    assert [s.shared for s in from_rows([[0.05, 1 << 20, 0.01, False]])] == [False]
    assert from_rows([[0.05, 1 << 20, 0.01, False, "yes"]]) == []  # malformed: skipped


def test_concurrent_scans_record_shared_samples_and_a_lone_one_does_not(
        range_server: Any) -> None:
    range_server.put("sh/f.csup", _file())
    url = range_server.url("sh/f.csup")

    async def main() -> tuple[list[bool], list[bool], int]:
        store = HTTPStore()
        m = store.measurements_of(url)
        # a place known to hold our layout: no head read beside the tail read
        # (readers/headhint), so the open's read is alone
        headhint.remember(store, url, False)
        try:
            async with csup_async.open(url, store=store, profile="s3") as r:
                lone = [s.shared for s in m.samples]  # the open's tail read, alone
                await r.scan(["a"])
                n1 = len(m.samples)

                async def one() -> int:
                    async with csup_async.open(url, store=store, profile="s3") as r2:
                        return (await r2.scan(["a", "b"])).num_rows
                rows = await asyncio.gather(*(one() for _ in range(6)))
                return lone, [s.shared for s in list(m.samples)[n1:]], sum(rows)
        finally:
            await store.close()

    lone, together, rows = asyncio.run(main())
    assert rows == 6 * 100_000
    assert lone == [False]
    assert together and any(together)
