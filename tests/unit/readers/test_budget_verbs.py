"""Budgets and exact progress on every Reader verb: filtered scans (one wave and two),
row selections, ``take``, ``iter_batches`` and ``count_rows``, through the HTTP store
against the range server, whose request log counts what was sent."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.errors import BudgetError
from csup_async.model.progress import Progress
from csup_async.stores import HTTPStore
from planner import get_profile
from tests.support.shapes import shape_rows

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = 30_000
STEP = 10
COLS = ["ts", "k", "pad"]
LO, HI = ROWS // 2 * STEP, (ROWS // 2 + ROWS // 100) * STEP  # 1 % of the rows
FILTER = f"ts >= {LO} and ts < {HI}"
#: with no latency a second wave pays whenever it avoids a byte; with 10 s, never
TWO_WAVES = dataclasses.replace(get_profile("local"), name="no-latency", latency=0.0)
ONE_WAVE = dataclasses.replace(get_profile("local"), name="slow", latency=10.0)
#: a tail read too short to hold the super column
SHORT_TAIL = dataclasses.replace(ONE_WAVE, name="short-tail", tail_min=1024, tail_max=1024)


def _rows(nones: bool) -> list[dict[str, Any]]:
    return shape_rows(ROWS, STEP, nones, seed=7)


def _file(nones: bool = False, statistics: bool = True) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, _rows(nones), fuse=False, segment_thresh=8 << 10,
                     statistics=statistics)
    return out.getvalue()


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return {"one": _file(), "two": _file(nones=True),
            "nostats": _file(nones=True, statistics=False)}


async def _with(url: str, profile: Any, body: Any) -> Any:
    store = HTTPStore()
    store.hedge = None  # every request the plan names, and no other
    try:
        async with csup_async.open(url, store=store, profile=profile) as r:
            return await body(r)
    finally:
        await store.close()


def _check_events(events: list[Progress], bytes_read: int | None = None) -> None:
    assert events and events[0].bytes_done == 0
    for a, b in itertools.pairwise(events):
        assert b.bytes_done >= a.bytes_done and b.bytes_planned >= a.bytes_planned
        assert b.files_done >= a.files_done and b.files_planned >= a.files_planned
        assert b.bytes_done <= b.bytes_planned
    last = events[-1]
    assert last.bytes_done == last.bytes_planned, "ends exactly at the total"
    assert (last.files_done, last.files_planned) == (1, 1)
    if bytes_read is not None:
        assert last.bytes_done == bytes_read


def test_a_second_wave_over_budget_is_refused_before_any_of_its_requests(
        range_server: Any, files: dict[str, bytes]) -> None:
    range_server.put("bv/one.csup", files["one"])
    url = range_server.url("bv/one.csup")

    async def body(r: Any) -> Any:
        program = await r.plan(COLS, filter=FILTER)
        assert program.two_waves
        wave1 = r.first_wave(program)
        before = len(range_server.seen("bv/one.csup"))
        with pytest.raises(BudgetError) as refused:
            await r.scan(COLS, filter=FILTER, max_requests=wave1[0])
        sent = len(range_server.seen("bv/one.csup")) - before
        events: list[Progress] = []
        res = await r.scan(COLS, filter=FILTER, on_progress=events.append)
        exact = await r.scan(COLS, filter=FILTER, max_requests=res.stats.requests,
                             max_bytes=res.stats.bytes_read)
        return wave1, refused.value, sent, events, res, exact

    wave1, err, sent, events, res, exact = asyncio.run(_with(url, TWO_WAVES, body))
    assert sent == wave1[0], "the first wave ran; none of the second wave's requests went"
    assert "before its next wave" in str(err) and "bv/one.csup" in str(err)
    assert f"max_requests={wave1[0]:,}" in str(err)
    assert f"{wave1[0]:,} requests and {wave1[1]:,} bytes were planned before it" in str(err)
    _check_events(events, res.stats.bytes_read)
    totals = sorted({e.bytes_planned for e in events})
    assert totals == [wave1[1], res.stats.bytes_read], "the total grew once, for wave two"
    assert res.stats.requests > wave1[0]
    assert exact.to_pylist() == res.to_pylist() == [
        r for r in _rows(False) if LO <= r["ts"] < HI]


VERBS = ["filter", "rows", "limit", "take", "batches"]


async def _run(r: Any, verb: str, **kw: Any) -> Any:
    if verb == "filter":
        return await r.scan(COLS, filter=FILTER, **kw)
    if verb == "rows":
        return await r.scan(COLS, rows=slice(ROWS // 3, ROWS // 3 + 500), **kw)
    if verb == "limit":
        return await r.scan(COLS, limit=700, **kw)
    if verb == "take":
        return await r.take([ROWS - 1, 5, ROWS // 2, 5], COLS, **kw)
    out = [b async for b in r.iter_batches(COLS, batch_rows=4096, **kw)]
    return sum(b.num_rows for b in out)


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("shape", ["one", "two"])
def test_a_verb_over_budget_sends_no_data_request(range_server: Any, files: dict[str, bytes],
                                                  verb: str, shape: str) -> None:
    """Every verb is refused before its first data request when its plan is over (a file
    of two super types reads no row map either: ``open`` read its counts)."""
    name = f"bv/{shape}-{verb}.csup"
    range_server.put(name, files[shape])

    async def body(r: Any) -> Any:
        events: list[Progress] = []
        ok = await _run(r, verb, on_progress=events.append)
        planned = events[-1].bytes_planned
        before = len(range_server.seen(name))
        with pytest.raises(BudgetError) as by_bytes:
            await _run(r, verb, max_bytes=max(planned - 1, 0))
        with pytest.raises(BudgetError):
            await _run(r, verb, max_requests=0)
        sent = len(range_server.seen(name)) - before
        again = await _run(r, verb, max_bytes=planned)
        return ok, planned, by_bytes.value, sent, again

    ok, planned, err, sent, again = asyncio.run(_with(range_server.url(name), ONE_WAVE, body))
    assert planned > 0
    assert sent == 0, "refused before any data request"
    assert "before any data request" in str(err)
    assert f"{planned:,} bytes (max_bytes={planned - 1:,})" in str(err)
    n = ok if isinstance(ok, int) else ok.num_rows
    assert n == (again if isinstance(again, int) else again.num_rows) > 0


def test_a_row_map_over_budget_is_refused_before_it_is_read(
        range_server: Any, files: dict[str, bytes]) -> None:
    """Without ``count`` statistics a file of two super types reads its super column to
    select rows, before the scan is planned: that read is refused when it alone is over,
    and it is part of the progress total."""
    range_server.put("bv/nostats.csup", files["nostats"])
    url = range_server.url("bv/nostats.csup")

    async def body(r: Any) -> Any:
        assert r.num_rows is None
        before = len(range_server.seen("bv/nostats.csup"))
        with pytest.raises(BudgetError) as refused:
            await r.scan(COLS, rows=slice(10, 20), max_requests=0)
        sent = len(range_server.seen("bv/nostats.csup")) - before
        events: list[Progress] = []
        res = await r.scan(COLS, rows=slice(10, 20), on_progress=events.append)
        count_events: list[Progress] = []
        n = await r.count_rows(on_progress=count_events.append)  # counted by the row map
        return refused.value, sent, events, res, n, count_events

    err, sent, events, res, n, count_events = asyncio.run(_with(url, SHORT_TAIL, body))
    assert sent == 0 and "before any data request" in str(err)
    _check_events(events, res.stats.bytes_read)
    assert len({e.bytes_planned for e in events}) == 2, "the row map, then the scan's plan"
    assert res.to_pylist() == _rows(True)[10:20]
    assert n == ROWS
    assert [(e.bytes_done, e.bytes_planned, e.files_done) for e in count_events] == [
        (0, 0, 0), (0, 0, 1)], "the count held since the row map: nothing read"


def test_count_rows_reads_the_super_column_within_its_budget(
        range_server: Any, files: dict[str, bytes]) -> None:
    range_server.put("bv/count.csup", files["nostats"])
    url = range_server.url("bv/count.csup")

    async def body(r: Any) -> Any:
        opened = len(range_server.seen("bv/count.csup"))
        with pytest.raises(BudgetError, match="before any data request"):
            await r.count_rows(max_bytes=1)
        refused = len(range_server.seen("bv/count.csup")) - opened
        events: list[Progress] = []
        n = await r.count_rows(on_progress=events.append)
        return refused, events, n

    refused, events, n = asyncio.run(_with(url, SHORT_TAIL, body))
    assert refused == 0
    assert n == ROWS
    _check_events(events)
    assert events[-1].bytes_done > 0


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verb=st.sampled_from(VERBS), shape=st.sampled_from(["one", "two", "nostats"]),
       profile=st.sampled_from([TWO_WAVES, ONE_WAVE, SHORT_TAIL]),
       chunk=st.sampled_from([4096, 1 << 20]),
       lo=st.integers(0, ROWS - 1), width=st.integers(1, 3000))
@example(verb="limit", shape="one", profile=TWO_WAVES, chunk=4096, lo=0, width=1)  # limit=0
def test_every_verbs_progress_is_monotonic_and_exact(range_server: Any,
                                                      files: dict[str, bytes], verb: str,
                                                      shape: str, profile: Any, chunk: int,
                                                      lo: int, width: int) -> None:
    name = f"bv/p-{shape}.csup"
    range_server.put(name, files[shape])
    flt = f"ts >= {lo * STEP} and ts < {(lo + width) * STEP}"

    async def main() -> tuple[list[Progress], Any]:
        store = HTTPStore(chunk_size=chunk)
        store.hedge = None
        events: list[Progress] = []
        try:
            async with csup_async.open(range_server.url(name), store=store,
                                       profile=profile) as r:
                if verb == "filter":
                    res = await r.scan(COLS, filter=flt, on_progress=events.append)
                elif verb == "rows":
                    res = await r.scan(COLS, rows=slice(lo, lo + width),
                                       on_progress=events.append)
                elif verb == "limit":
                    res = await r.scan(["pad"], filter=flt, limit=width // 3,
                                       on_progress=events.append)
                elif verb == "take":
                    res = await r.take([lo, (lo * 7) % ROWS, lo], COLS,
                                       on_progress=events.append)
                else:
                    n = 0
                    async for b in r.iter_batches(COLS, batch_rows=5000, filter=flt,
                                                  on_progress=events.append):
                        n += b.num_rows
                    return events, None
        finally:
            await store.close()
        return events, res

    events, res = asyncio.run(main())
    _check_events(events, None if res is None else res.stats.bytes_read)
