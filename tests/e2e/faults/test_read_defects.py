"""Defects of the old read paths, each shown on every path of the one pipeline.

Files are crafted with the library's own BSUP codec: a data section of
hand-encoded streams and a reassembly section that says exactly what the test
wants (however wrong), behind a valid trailer.  The rule on each: every read
path (``scan``, ``read_rows``, ``iter_batches`` at several batch sizes,
``count_rows`` where it reads) gives the same answer or the same
``FormatError``; never a silent wrong row, never a ValueError.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import lz4.block
import pytest

import csup_async
from csup_async.format import bsup
from csup_async.format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from csup_async.format.meta import FieldColumn, PrimitiveColumn, RecordColumn, Segment
from csup_async.model.errors import CsupError, FormatError, StoreTimeoutError
from csup_async.model.types import INT64, STRING, Field, RecordType, Type
from csup_async.stores import HTTPStore
from tests.support.servers import Fault, RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



# ------------------------------------------------------------- crafting ---
def ints(values: list[int]) -> bytes:
    out = bytearray()
    for v in values:
        bsup.append_tagged(out, bsup.encode_int(v))
    return bytes(out)


def strings(values: list[str]) -> bytes:
    out = bytearray()
    for v in values:
        bsup.append_tagged(out, v.encode())
    return bytes(out)


class Data:
    """A data section built stream by stream; each add returns its one-segment segmap."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def add(self, stream: bytes, compress: bool = False) -> tuple[Segment, ...]:
        off = len(self.buf)
        if compress:
            body = lz4.block.compress(stream, store_size=False)
            self.buf += body
            return (Segment(off, len(body), len(stream), 1),)
        self.buf += stream
        return (Segment(off, len(stream), len(stream), 0),)


def build(data: bytes, super_types: list[Type], super_column: Any, columns: Any) -> bytes:
    """A CSUP file: ``data`` and a reassembly section encoding exactly this metadata."""
    out = bytearray(data)
    enc = bsup.StreamEncoder(out)
    for t in super_types:
        enc.write_body(t, None)
    enc.write(SEGMAP_TYPE, segmap_value(tuple(super_column)))
    for c in columns:  # a column, or (type, body) already encoded
        if isinstance(c, tuple):
            enc.write_body(*c)
        else:
            enc.write(*column_value(c))
    enc.end_stream()
    value = {"magic": "super columnar", "type": "csup", "version": 1,
             "sections": [len(data), len(out) - len(data)],
             "meta": {"skew_thresh": 1 << 26, "segment_thresh": 1 << 22}}
    tenc = bsup.StreamEncoder(out, compress=False)
    tenc.write(TRAILER_TYPE, value)
    tenc.end_stream()
    return bytes(out)


def record(*fields: tuple[str, Any, tuple[Segment, ...]]) -> RecordColumn:
    return RecordColumn(tuple(FieldColumn(n, c, p) for n, c, p in fields))


async def outcomes(path: Path, columns: list[str] | None = None) -> dict[str, Any]:
    """What each read path makes of the file: its rows, or its error's class."""
    out: dict[str, Any] = {}

    async def attempt(label: str, coro: Any) -> None:
        try:
            out[label] = await coro
        except CsupError as e:
            out[label] = type(e).__name__

    async def batches(r: Any, n: int) -> list[Any]:
        rows: list[Any] = []
        async for b in r.iter_batches(columns, batch_rows=n):
            rows += b.to_pylist()
        return rows

    async def scan(r: Any) -> list[Any]:
        return (await r.scan(columns)).to_pylist()

    async with csup_async.open(str(path)) as r:
        await attempt("scan", scan(r))
        for n in (1, 2, 5, 1000):
            await attempt(f"iter_batches({n})", batches(r, n))
        if columns is None:
            async def rows() -> list[Any]:
                return [{k: v for k, v in row.items()} for row in await r.read_rows()]
            await attempt("read_rows", rows())
    return out


def _write(tmp: Path, data: bytes) -> Path:
    p = tmp / "f.csup"
    p.write_bytes(data)
    return p


R_A = RecordType((Field("a", INT64),))


# ----------------------------------------------- 1: counts on every path ---
async def test_too_many_values_is_an_error_on_every_path(tmp_path: Path) -> None:
    """``{a: i*10}`` for 6 rows with the value 10 written twice: 7 values for 6 rows."""
    d = Data()
    sup = d.add(b"\x01" * 6)  # six rows of super type 0
    a = d.add(ints([0, 10, 10, 20, 30, 40, 50]))
    got = await outcomes(_write(tmp_path, build(bytes(d.buf), [R_A], sup,
                                                [record(("a", PrimitiveColumn(a), ()))])))
    assert all(v == "FormatError" for v in got.values()), got


async def test_short_super_column_is_an_error_on_every_path(tmp_path: Path) -> None:
    """Two super types; the super column names 3 rows, the columns hold 4."""
    r_b = RecordType((Field("b", STRING),))
    d = Data()
    sup = d.add(ints([0, 1, 0]))
    a = d.add(ints([1, 2, 3]))
    b = d.add(strings(["x", "y"]))
    cols = [record(("a", PrimitiveColumn(a), ())), record(("b", PrimitiveColumn(b), ()))]
    got = await outcomes(_write(tmp_path, build(bytes(d.buf), [R_A, r_b], sup, cols)))
    assert all(v == "FormatError" for v in got.values()), got


async def test_presence_runs_summing_too_high_are_an_error_on_every_path(tmp_path: Path
                                                                         ) -> None:
    d = Data()
    sup = d.add(b"\x01" * 6)
    a = d.add(ints([1, 2, 3]))
    runs = d.add(ints([3, 3, 0, 2]))  # 8 positions for 6 rows
    got = await outcomes(_write(tmp_path, build(bytes(d.buf), [R_A], sup,
                                                [record(("a", PrimitiveColumn(a), runs))])))
    assert all(v == "FormatError" for v in got.values()), got


async def test_exact_presence_runs_read_the_same_everywhere(tmp_path: Path) -> None:
    d = Data()
    sup = d.add(b"\x01" * 6)
    a = d.add(ints([1, 2, 3]))
    runs = d.add(ints([0, 0, 2, 1, 0, 2, 1]))  # present, absent, present, ...: sums to 6
    got = await outcomes(_write(tmp_path, build(bytes(d.buf), [R_A], sup,
                                                [record(("a", PrimitiveColumn(a), runs))])))
    want = [{"a": 1}, {"a": 2}, {"a": None}, {"a": None}, {"a": None}, {"a": 3}]
    assert all(v == want for v in got.values()), got


# --------------------------------------------- 2: duplicate field names ---
async def test_duplicate_field_name_is_a_format_error_at_open(tmp_path: Path) -> None:
    t = RecordType((Field("i", STRING), Field("i", INT64)))
    d = Data()
    sup = d.add(b"\x01" * 2)
    s = d.add(strings(["x", "y"]))
    i = d.add(ints([1, 2]))
    # the column value with the names {i, j}, then written under the type {i, i}
    ok_t, ok_v = column_value(record(("i", PrimitiveColumn(s), ()),
                                     ("j", PrimitiveColumn(i), ())))
    dup_t = RecordType((ok_t.fields[0], Field("i", ok_t.fields[1].type)))
    p = _write(tmp_path, build(bytes(d.buf), [t], sup,
                               [(dup_t, bsup.encode_value(ok_t, ok_v))]))
    with pytest.raises(FormatError, match="duplicate field"):
        await csup_async.open(str(p))


async def test_duplicate_field_name_nested_is_a_format_error(tmp_path: Path) -> None:
    inner = RecordType((Field("x", INT64), Field("x", INT64)))
    t = RecordType((Field("r", inner),))
    d = Data()
    sup = d.add(b"\x01")
    p = _write(tmp_path, build(bytes(d.buf), [t], sup, [record(("r", None, ()))]))
    with pytest.raises(FormatError, match="duplicate field"):
        await csup_async.open(str(p))


# ------------------------------------------ 7: segments keyed by identity ---
async def test_two_columns_sharing_a_segment_read_alike_everywhere(tmp_path: Path) -> None:
    t = RecordType((Field("x", INT64), Field("y", INT64)))
    d = Data()
    sup = d.add(b"\x01" * 4)
    shared = d.add(ints([5, 6, 7, 8]))
    p = _write(tmp_path, build(bytes(d.buf), [t], sup,
                               [record(("x", PrimitiveColumn(shared), ()),
                                       ("y", PrimitiveColumn(shared), ()))]))
    want = [{"x": v, "y": v} for v in (5, 6, 7, 8)]
    got = await outcomes(p)
    assert all(v == want for v in got.values()), got
    got_x = await outcomes(p, ["x", "y"])
    assert all(v == want for v in got_x.values()), got_x


@pytest.mark.parametrize("compress", [False, True])
async def test_presence_pointing_at_another_columns_segment(tmp_path: Path,
                                                            compress: bool) -> None:
    """The same bytes decoded as values by one column and as runs by another: every path
    agrees on the rows or on a FormatError, and nothing else escapes."""
    t = RecordType((Field("a", INT64), Field("b", INT64)))
    for b_values in ([1, 1, 1, 1], [4, 0, 0], [2, 2], [7, 7, 7, 7]):
        d = Data()
        sup = d.add(b"\x01" * 4)
        b = d.add(ints(b_values), compress)
        a = d.add(ints([9] * 4))
        p = _write(tmp_path, build(bytes(d.buf), [t], sup,
                                   [record(("a", PrimitiveColumn(a), b),
                                           ("b", PrimitiveColumn(b), ()))]))
        got = await outcomes(p)
        assert len({repr(v) for v in got.values()}) == 1, (b_values, got)


# --------------------------------------------------- 13: linear work ---
def _subset_rows(n_types: int) -> list[dict[str, int]]:
    names = [f"f{k}" for k in range(11)]
    return [{names[k]: i for k in range(11) if (i + 1) >> k & 1} for i in range(n_types)]


@pytest.mark.parametrize("shape", ["shared-fields", "own-field"])
async def test_two_thousand_super_types_read_in_linear_time(tmp_path: Path, shape: str) -> None:
    """2,000 record super types (each row its own type, sharing 11 field names or each
    with a field of its own): a watchdog, not a benchmark; the quadratic paths took
    2.6-50 s here."""
    rows: list[Any] = (_subset_rows(2000) if shape == "shared-fields"
                       else [{f"f{i}": i} for i in range(2000)])
    p = tmp_path / "types.csup"
    csup_async.write(str(p), rows, fuse=False)  # each row its own super type
    assert p.stat().st_size < 400_000
    async with csup_async.open(str(p)) as r:
        assert len(r.meta.super_types) == 2000
        for label, read in (("read_rows", r.read_rows), ("scan", r.scan),
                            ("iter_batches", lambda: _drain(r, 100))):
            t0 = time.perf_counter()
            got = await read()
            assert time.perf_counter() - t0 < 10, label
            if label == "read_rows":
                assert got == rows
            elif label == "scan":
                assert got.num_rows == 2000
                assert got.to_pylist()[7] == {k: rows[7].get(k) for k in got.columns}
            else:
                assert got == 2000


async def _drain(r: Any, batch_rows: int, columns: list[str] | None = None) -> int:
    n = 0
    async for b in r.iter_batches(columns, batch_rows=batch_rows):
        n += b.num_rows
    return n


async def test_millions_of_zero_length_presence_runs_in_linear_time(tmp_path: Path) -> None:
    """A 16 kB file of 4M zero-length presence runs (valid): one vector step, not one
    Python step per run, on every path."""
    d = Data()
    sup = d.add(b"\x01" * 3)
    a = d.add(ints([1, 2]))
    runs = d.add(ints([1, 1]) + b"\x01" * 4_000_000 + ints([1]), compress=True)
    p = _write(tmp_path, build(bytes(d.buf), [R_A], sup,
                               [record(("a", PrimitiveColumn(a), runs))]))
    assert p.stat().st_size < 40_000
    t0 = time.perf_counter()
    got = await outcomes(p)
    assert time.perf_counter() - t0 < 20
    want = [{"a": 1}, {"a": None}, {"a": 2}]  # runs: 1 present, 1 absent, 0, 0, ..., 1
    assert all(v == want for v in got.values()), got


# ------------------------------------- 12: cancellation, and a deadline ---
def _busy_threads() -> list[str]:
    """Steps of reads still running, and any thread a read started of its own."""
    from csup_async.scan.scan import steps_running

    return (["step"] * steps_running()
            + [t.name for t in threading.enumerate() if t.name.startswith("csup-read")])


@pytest.fixture
def stall_server(tmp_path: Path) -> Any:
    server = RangeServer(tmp_path / "root").start()
    yield server
    server.stop()


def _big_file() -> bytes:
    import io

    out = io.BytesIO()
    csup_async.write(out, [{"i": i, "s": f"value {i}"} for i in range(200_000)],
                     segment_thresh=1 << 15)
    return out.getvalue()


async def test_cancelled_iter_batches_leaves_nothing_behind(stall_server: RangeServer) -> None:
    stall_server.put("big.csup", _big_file())
    store = HTTPStore(limit=8)
    async with store, csup_async.open(stall_server.url("big.csup"), store=store,
                               concurrency=4) as r:
        stall_server.inject("big.csup", *[Fault.stall(30, after_bytes=100)] * 50)
        before = asyncio.all_tasks()
        got: list[int] = []

        async def consume() -> None:
            async for b in r.iter_batches(["i", "s"], batch_rows=1000):
                got.append(b.num_rows)

        task = asyncio.create_task(consume())
        await asyncio.sleep(1.0)
        assert not task.done() and _busy_threads()  # stuck on a stalled body
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert not _busy_threads(), "a worker thread is still blocked"
        assert asyncio.all_tasks() == before, asyncio.all_tasks() - before
        assert not store.connector._acquired, "a pooled connection is still held"


async def test_cancelled_scan_leaves_nothing_behind(stall_server: RangeServer) -> None:
    stall_server.put("big.csup", _big_file())
    store = HTTPStore(limit=8)
    async with store, csup_async.open(stall_server.url("big.csup"), store=store) as r:
        stall_server.inject("big.csup", *[Fault.stall(30, after_bytes=100)] * 50)
        before = asyncio.all_tasks()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(r.scan(), 1.0)
        assert not _busy_threads()
        assert asyncio.all_tasks() == before
        assert not store.connector._acquired


@pytest.mark.parametrize("how", ["scan", "iter_batches", "read_rows"])
async def test_timeout_option_bounds_the_whole_read(stall_server: RangeServer,
                                                    how: str) -> None:
    stall_server.put("big.csup", _big_file())
    async with csup_async.open(stall_server.url("big.csup"), timeout=1.0,
                               read_timeout=60.0) as r:
        stall_server.inject("big.csup", *[Fault.stall(30, after_bytes=100)] * 50)
        t0 = time.perf_counter()
        with pytest.raises(StoreTimeoutError, match="timeout") as e:
            if how == "scan":
                await r.scan()
            elif how == "iter_batches":
                await _drain(r, 1000)
            else:
                await r.read_rows()
        assert time.perf_counter() - t0 < 10
        assert e.value.path is not None
        assert not _busy_threads()


def test_timeout_must_be_positive() -> None:
    from csup_async.scan.options import Limits, ReadOptions

    with pytest.raises(CsupError):
        ReadOptions(4, Limits.of(), timeout=0)
