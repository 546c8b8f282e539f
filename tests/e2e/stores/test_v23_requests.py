"""CSUP v23 files (super main) over S3 (moto on 127.0.0.1, through a counting proxy): what a
2-column projection costs, counted at the server.

The file (tests/data/real/super-main/wide/wide.csup, 4,000 rows, 6 columns, 87 KB) was
written by the real ``super`` main; a profile of 4 KiB first reads makes it "large" (the
tail read holds the trailer and footer, not the head)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import csup_async
import planner as P
from csup_async.readers import headhint
from tests.support.fault_proxy import Fault, FaultProxy

WIDE = (Path(__file__).resolve().parents[2] / "data" / "real" / "super-main" / "wide"
        / "wide.csup")
SMALL_READS = dataclasses.replace(P.get_profile("s3"), tail_min=4096, tail_max=4096,
                                  max_gap=1024)


@pytest.fixture(autouse=True)
def _no_head_hints() -> Iterator[None]:
    """Each test starts with no memory of the files opened before (readers.headhint)."""
    headhint.forget()
    yield
    headhint.forget()


@pytest.fixture
def proxy(moto_s3: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(moto_s3.endpoint.rsplit(":", 1)[1])).start()
    yield p
    p.stop()


async def _local(columns: list[str]) -> dict[str, list[Any]]:
    async with csup_async.open(str(WIDE)) as r:
        res = await r.scan(columns)
    return {c: res.column(c).to_pylist() for c in columns}


async def test_two_columns_cost_one_metadata_round_trip_and_one_data_wave(moto_s3, proxy):
    """#37's target, opened cold (no file seen before in its place, no listing): the tail
    and head reads go together (one metadata round trip), then one data wave."""
    key = moto_s3.put("v23/wide.csup", WIDE.read_bytes())
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    # the tail's response held back 1 s: a head read logged before that went with it
    proxy.inject(Fault.delay(1.0), match=lambda q: q.kind == "tail")
    async with csup_async.open(f"s3://{key}", profile=SMALL_READS, **opts) as r:
        at_open = [q for q in proxy.requests() if q.method == "GET"]
        plan = await r.plan(["id", "score"])
        res = await r.scan(["id", "score"])
        obj = r.meta.objects[0]
    gets = [q for q in proxy.requests() if q.method == "GET"]
    print("GETs", [(q.kind, q.range) for q in gets], "data bytes", res.stats.bytes_read,
          "needed", plan.bytes_needed)
    # the tail (trailer, footer) and the head (header, metadata, types): then one wave
    assert len(at_open) == 2 and sorted(q.kind for q in at_open) == ["data", "tail"]
    assert abs(at_open[0].time - at_open[1].time) < 1.0
    assert len(gets) <= 4 and len(gets) - 2 == res.stats.requests == plan.request_count
    # the data wave: the two columns' segments (intcomp ints, LZ4 floats) and the gaps the
    # planner chose to read between them, nothing of the other columns beyond that
    id_node, score_node = obj.nodes[0], obj.nodes[2]
    needed = sum(s.size for n in (id_node, score_node) for _, s in n.segs)
    assert plan.bytes_needed == needed
    assert res.stats.bytes_read == plan.bytes_to_read <= needed + SMALL_READS.max_gap
    head = next(q for q in at_open if q.kind == "data")
    meta_end = 45 + obj.header.meta_size + obj.header.type_size
    assert head.range == f"bytes=0-{SMALL_READS.tail_min - 1}" and meta_end <= 4096
    assert {c: res.column(c).to_pylist() for c in ("id", "score")} == await _local(
        ["id", "score"])
    assert res.column("id").to_pylist() == list(range(4000))


async def test_a_small_v23_file_cold_is_one_round_trip_and_one_request_when_listed(
        moto_s3, proxy):
    """Opened by URL in a place not seen before, nothing says the file is small: the tail
    read (which holds it whole) goes with a small head read, one round trip.  Listed (a
    dataset of a prefix), the listing's size says the tail read holds it: one GET."""
    data = (WIDE.parent.parent / "nested.csup").read_bytes()
    key = moto_s3.put("v23req/small/nested.csup", data)
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    async with csup_async.open(f"s3://{key}", **opts) as r:
        rows = await r.read_rows()
    assert len(rows) == 2
    # (the head read, unused once the tail read holds the file, is cancelled: it may have
    # been cancelled before it was sent)
    ranges = [q.range for q in proxy.requests() if q.method == "GET"]
    assert ranges[0] == f"bytes=-{P.tail_prefetch_size('s3')}" or len(ranges) == 2
    assert set(ranges) <= {f"bytes=-{P.tail_prefetch_size('s3')}",
                           f"bytes=0-{P.get_profile('s3').tail_min - 1}"}
    headhint.forget()
    mark = len(proxy.requests())
    async with await csup_async.open_dataset(f"s3://{moto_s3.BUCKET}/v23req/small/",
                                             **opts) as ds:
        assert (await ds.scan()).num_rows == 2
    gets = [q for q in proxy.requests()[mark:] if q.method == "GET" and q.range]
    assert [q.kind for q in gets] == ["tail"]


OBJECTS = WIDE.parent / "objects.csup"  # 3 objects: 31,000 + 31,000 + 1,333 bytes


async def _open_and_scan(moto_s3: Any, proxy: FaultProxy, profile: Any,
                         cols: list[str]) -> tuple[list[Any], list[Any], Any]:
    key = moto_s3.put("v23/objects.csup", OBJECTS.read_bytes())
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    async with csup_async.open(f"s3://{key}", profile=profile, **opts) as r:
        at_open = [q for q in proxy.requests() if q.method == "GET"]
        res = await r.scan(cols)
        assert len(r.meta.objects) == 3
    gets = [q for q in proxy.requests() if q.method == "GET"]
    return at_open, gets, res


async def test_small_objects_come_in_one_window_with_their_data(moto_s3, proxy):
    """Objects small against a round trip (31 KB, where S3's is ~5 MB): after the head
    read, the rest of the part (headers, metadata and data of the objects after the
    first, and the first's data the head read did not hold) is one read, not a chain of
    one request per object and then a data wave."""
    at_open, gets, res = await _open_and_scan(moto_s3, proxy, SMALL_READS, ["b"])
    print("GETs", [(q.kind, q.range) for q in gets])
    kinds = [q.kind for q in at_open]  # the tail and head go together: either first
    assert sorted(kinds[:2]) == ["data", "tail"] and kinds[2:] == ["data"]
    window = at_open[2]
    assert window.range == f"bytes={SMALL_READS.tail_min}-{OBJECTS.stat().st_size - 4096 - 1}"
    assert len(gets) == 3 and res.stats.requests == 0  # the data came with the window
    async with csup_async.open(str(OBJECTS)) as r:
        local = await r.scan(["b"])
    assert res.column("b").to_pylist() == local.column("b").to_pylist()
    assert res.num_rows == 250_000


async def test_objects_large_against_a_round_trip_keep_the_chain(moto_s3, proxy):
    """A store whose round trip moves fewer bytes than an object (here 10 KB against
    31 KB): one header read per object, then the projection's segments only."""
    quick = dataclasses.replace(SMALL_READS, latency=0.0001)
    at_open, gets, res = await _open_and_scan(moto_s3, proxy, quick, ["b"])
    # the tail and the head (sent together: either may arrive first), then a hop to
    # object 1's header (object 2's is in the tail read)
    got = [(q.kind, q.range) for q in at_open]
    assert sorted(got[:2]) == [("data", "bytes=0-4095"), ("tail", "bytes=-4096")]
    assert got[2:] == [("data", f"bytes=31000-{31000 + 16384 - 1}")]
    assert len(gets) - len(at_open) == res.stats.requests >= 1
    needed = res.stats.bytes_read
    assert needed < OBJECTS.stat().st_size // 2  # column b's segments, not c's
    assert res.num_rows == 250_000


async def test_after_a_large_v23_file_the_next_head_read_goes_with_the_tail_read(moto_s3, proxy):
    """A file that needed a head read: the next file opened from the same place sends its
    head read with its tail read (one metadata round trip, not two), and uses it when
    its version is the tail's; a file of another layout there costs one unused head read,
    and the next opened after it none."""
    data = WIDE.read_bytes()
    keys = [moto_s3.put(f"v23/place/{n}.csup", data) for n in ("one", "two")]
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    async with csup_async.open(f"s3://{keys[0]}", profile=SMALL_READS, **opts) as r:
        first = [(q.kind, q.range) for q in proxy.requests() if q.method == "GET"]
    assert sorted(first) == [("data", "bytes=0-4095"), ("tail", "bytes=-4096")]  # together
    mark = len(proxy.requests())
    # the tail's response held back 2 s: a head read logged before that was sent with it
    proxy.inject(Fault.delay(2.0), match=lambda q: q.kind == "tail")
    async with csup_async.open(f"s3://{keys[1]}", profile=SMALL_READS, **opts) as r:
        at_open = [q for q in proxy.requests()[mark:] if q.method == "GET"]
        assert r.open_stats.requests == 2
        res = await r.scan(["id", "score"])
    assert sorted((q.kind, q.range) for q in at_open) == [("data", "bytes=0-4095"),
                                                          ("tail", "bytes=-4096")]
    tail = next(q for q in at_open if q.kind == "tail")
    head = next(q for q in at_open if q.kind == "data")
    assert head.time < tail.time + 2.0
    gets = [q for q in proxy.requests()[mark:] if q.method == "GET"]
    assert len(gets) <= 4 and len(gets) - 2 == res.stats.requests
    assert {c: res.column(c).to_pylist() for c in ("id", "score")} == await _local(
        ["id", "score"])
    # our own layout in the same place: one head read unused, then none
    own = moto_s3.put("v23/place/own.csup", _own_layout())
    for speculated in (True, False):
        mark = len(proxy.requests())
        async with csup_async.open(f"s3://{own}", profile=SMALL_READS, **opts) as r:
            assert (await r.scan(["id"])).num_rows == 4000
        ranges = _ranges_after(proxy, mark, "bytes=0-4095" if speculated else None)
        assert ("bytes=0-4095" in ranges) is speculated, ranges


def _ranges_after(proxy: FaultProxy, mark: int, awaited: str | None) -> list[str | None]:
    """The GETs' ranges since ``mark``, once ``awaited`` is among them (a cancelled
    request may reach the proxy's log a moment after the client moved on; 5 s at most)."""
    import time

    for _ in range(500):
        ranges = [q.range for q in proxy.requests()[mark:] if q.method == "GET"]
        if awaited is None or awaited in ranges:
            break
        time.sleep(0.01)
    return ranges


def _own_layout() -> bytes:
    import io

    buf = io.BytesIO()
    csup_async.write(buf, [{"id": i} for i in range(4000)], target="csup-async")
    return buf.getvalue()


async def test_our_layout_cold_costs_one_small_head_read_then_none(moto_s3, proxy):
    """The documented cost of a cold open for this library's layout (docs/performance.md):
    the tail read and one unused head read of at most ``tail_min`` bytes, sent together
    (one round trip); the next file from the same place, the tail read alone."""
    keys = [moto_s3.put(f"v23req/own/{n}.csup", _own_layout()) for n in ("one", "two")]
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    for i, key in enumerate(keys):
        mark = len(proxy.requests())
        async with csup_async.open(f"s3://{key}", profile=SMALL_READS, **opts) as r:
            assert (await r.scan(["id"])).column("id").to_pylist() == list(range(4000))
            opened = r.open_stats.requests
        ranges = _ranges_after(proxy, mark, "bytes=0-4095" if i == 0 else None)
        if i == 0:
            assert "bytes=0-4095" in ranges and len(ranges) <= opened + 1 + 1
        else:
            assert "bytes=0-4095" not in ranges


async def test_a_multi_part_v23_file_cold(moto_s3, proxy):
    """A file of two parts (``cat`` of two files) read with small reads: the head read goes
    with the tail read; the earlier part's trailer is one more read, at most."""
    parts = WIDE.parent.parent / "parts.csup"
    key = moto_s3.put("v23req/parts/parts.csup", parts.read_bytes())
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    small = dataclasses.replace(SMALL_READS, tail_min=1024, tail_max=1024, max_gap=0)
    async with csup_async.open(f"s3://{key}", profile=small, **opts) as r:
        at_open = [q for q in proxy.requests() if q.method == "GET"]
        assert len(r.parts) == 2
        rows = await r.read_rows()
    async with csup_async.open(str(parts)) as local:
        assert rows == await local.read_rows()
    print([(q.kind, q.range) for q in at_open])
    assert sorted(q.range for q in at_open)[:2] == ["bytes=-1024", "bytes=0-1023"]
    assert len(at_open) <= 4


async def test_a_cancelled_cold_open_leaves_no_task_or_connection(moto_s3, proxy):
    """Cancelled while its tail and head reads are both in flight: neither is left behind."""
    import asyncio

    from csup_async.stores import store_for

    key = moto_s3.put("v23req/cancel/wide.csup", WIDE.read_bytes())
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    proxy.inject(Fault.delay(10.0), Fault.delay(10.0), match=lambda q: q.method == "GET")
    url = f"s3://{key}"
    store = store_for(url, **opts)[0]
    async with store:
        async def scan() -> None:
            async with csup_async.open(url, store=store, profile=SMALL_READS) as r:
                await r.scan(["id"])

        task = asyncio.ensure_future(scan())
        for _ in range(500):
            if len([q for q in proxy.requests() if q.method == "GET"]) >= 2:
                break
            await asyncio.sleep(0.01)
        assert sorted(q.kind for q in proxy.requests() if q.method == "GET") == [
            "data", "tail"]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.all_tasks() == {asyncio.current_task()}, asyncio.all_tasks()
        connector = getattr(store, "connector", None)
        assert connector is None or not connector._acquired
    assert await asyncio.to_thread(proxy.wait_idle, 5.0)


async def test_a_file_opened_again_sends_its_metadata_reads_with_the_tail_read(moto_s3, proxy):
    """The same object (size and ETag) opened again: the reads its last open made one after
    the other (the head, then the window of the objects after the first) go with the tail
    read, one round trip; the same requests and bytes.  Replaced since (another ETag), it
    reads as it is now."""
    at_open, _, res = await _open_and_scan(moto_s3, proxy, SMALL_READS, ["b"])
    assert sorted(q.kind for q in at_open) == ["data", "data", "tail"]
    cold = sorted(q.range for q in at_open)
    mark = len(proxy.requests())
    # the tail's response held back 2 s: reads logged before that went with it
    proxy.inject(Fault.delay(2.0), match=lambda q: q.kind == "tail")
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    url = f"s3://{moto_s3.BUCKET}/v23/objects.csup"
    async with csup_async.open(url, profile=SMALL_READS, **opts) as r:
        warm = [q for q in proxy.requests()[mark:] if q.method == "GET"]
        again = await r.scan(["b"])
        assert r.open_stats.requests == 3 and "round trips: 1 at open" in (
            await r.plan(["b"])).explain()
    assert sorted(q.range for q in warm) == cold
    tail = next(q for q in warm if q.kind == "tail")
    assert all(q.time < tail.time + 2.0 for q in warm)
    assert again.column("b").to_pylist() == res.column("b").to_pylist()
    # replaced by a file of two parts: the recalled reads fail their If-Match, unused
    parts = WIDE.parent.parent / "parts.csup"
    moto_s3.put("v23/objects.csup", parts.read_bytes())
    async with csup_async.open(url, profile=SMALL_READS, **opts) as r:
        rows = await r.read_rows()
    async with csup_async.open(str(parts)) as local:
        assert rows == await local.read_rows()
