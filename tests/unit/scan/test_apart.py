"""An eager read of several independent columns assembles each as a pool task of its own
(scan.Read.apart): the same values as a column at a time, the caps counted across the
columns, an error in one column raised as the read's, and nothing left running."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import csup_async
from csup_async.model.errors import CsupError, FormatError, LimitError
from csup_async.scan import scan as scan_mod

ROWS = 60_000


@pytest.fixture
def path(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    out = io.BytesIO()
    table = pa.table({"i": rng.integers(-(1 << 40), 1 << 40, ROWS), "f": rng.random(ROWS),
                      "s": [f"s{i % 977}" for i in range(ROWS)],
                      "n": pa.array([None if i % 5 else i for i in range(ROWS)], pa.int32())})
    csup_async.write(out, table, segment_thresh=64 << 10,  # several segments a column
                     target="csup-async")  # the read path of our own layout
    p = tmp_path / "t.csup"
    p.write_bytes(out.getvalue())
    return p


@pytest.fixture
def apart(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every eager read is big enough to go apart; records whether each one did."""
    monkeypatch.setattr(scan_mod, "APART_BYTES", 0)
    seen: list[bool] = []
    real = scan_mod.Read.apart

    def spy(self: Any) -> Any:
        got = real(self)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(scan_mod.Read, "apart", spy)
    return seen


async def test_columns_apart_read_what_one_at_a_time_reads(path: Path, apart: list[bool]) -> None:
    cols = ["i", "f", "s", "n"]
    async with csup_async.open(str(path)) as r:
        together = (await r.scan(cols[:3])).to_arrow()
        with_nulls = (await r.scan(["i", "n"])).to_arrow()
        alone = [(await r.scan([c])).to_arrow().column(c) for c in cols]
    # leaf columns go apart; a column with nulls (a cursor over two streams) keeps the read
    # whole, as does one column alone
    assert apart == [True, False, False, False, False, False]
    for c, want in zip(cols[:3], alone[:3], strict=True):
        assert together.column(c).equals(want)
    assert with_nulls.column("n").equals(alone[3]) and with_nulls.column("i").equals(alone[0])
    assert together.num_rows == ROWS


async def test_the_values_cap_counts_every_column(path: Path, apart: list[bool]) -> None:
    async with csup_async.open(str(path), max_values=int(ROWS * 1.5)) as r:
        assert (await r.scan(["i"])).num_rows == ROWS  # one column is under the cap
        with pytest.raises(LimitError, match="max_values"):
            await r.scan(["i", "f"])  # two are over it, claimed from two threads
    assert apart == [False, True]


async def test_an_error_in_one_column_is_the_read_s_and_leaves_nothing(
        path: Path, apart: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    real = scan_mod.Read.column
    calls = []

    def column(self: Any, cs: Any, ids: Any, counts: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise FormatError("a broken column")
        return real(self, cs, ids, counts)

    monkeypatch.setattr(scan_mod.Read, "column", column)
    before = asyncio.all_tasks()
    async with csup_async.open(str(path)) as r:
        with pytest.raises(CsupError, match="a broken column") as err:
            await r.scan(["i", "f", "s"])
        assert str(path) in str(err.value)
        monkeypatch.setattr(scan_mod.Read, "column", real)
        assert (await r.scan(["i", "f"])).num_rows == ROWS  # the reader still reads
    assert asyncio.all_tasks() == before


async def test_a_cancelled_read_waits_for_its_column_tasks(path: Path, apart: list[bool],
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    import threading

    started, release = threading.Event(), threading.Event()
    finished: list[int] = []
    real = scan_mod.Read.column

    def column(self: Any, cs: Any, ids: Any, counts: Any) -> Any:
        started.set()
        release.wait(10)
        try:
            return real(self, cs, ids, counts)
        finally:
            finished.append(1)

    monkeypatch.setattr(scan_mod.Read, "column", column)
    async with csup_async.open(str(path)) as r:
        task = asyncio.ensure_future(r.scan(["i", "f"]))
        while not started.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        asyncio.get_running_loop().call_later(0.05, release.set)
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(finished) == 2  # the read ended only once its column tasks had
