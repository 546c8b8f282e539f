"""Budgets and exact progress over a Dataset: every kept file is planned before any is
read, the sum of their plans is checked (zero data requests at the server when it is
over), and progress counts bytes and files against the plan; a property test over
random plans (files, sizes, waves, arrival order) that events rise monotonically and
end exactly at the totals."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import itertools
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.errors import BudgetError
from csup_async.model.progress import Meter, Progress, tracking
from csup_async.stores import HTTPStore
from planner import get_profile

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


N_FILES = 4
#: S3's figures with a tail read too short to hold the files' data (every verb reads)
SHORT_TAIL = dataclasses.replace(get_profile("s3"), name="short-tail", tail_min=16 << 10,
                                 tail_max=16 << 10)


def _file(seed: int, rows: int) -> bytes:
    rng = random.Random(seed)
    out = io.BytesIO()
    csup_async.write(out, [{"id": seed * 1_000_000 + i, "name": f"n{rng.getrandbits(40)}",
                            "score": rng.random()} for i in range(rows)],
                     segment_thresh=16 << 10)
    return out.getvalue()


@pytest.fixture(scope="module")
def blobs() -> list[bytes]:
    return [_file(k, 20_000 + 7_000 * k) for k in range(N_FILES)]


def _put(range_server: Any, blobs: list[bytes], prefix: str) -> list[str]:
    names = [f"{prefix}/part-{k}.csup" for k in range(len(blobs))]
    for n, b in zip(names, blobs, strict=True):
        range_server.put(n, b)
    return names


def _sent(range_server: Any, names: list[str]) -> int:
    return sum(len(range_server.seen(n)) for n in names)


async def _with(range_server: Any, names: list[str], body: Any) -> Any:
    store = HTTPStore()
    store.hedge = None
    try:
        async with csup_async.open_dataset([range_server.url(n) for n in names], store=store,
                                           profile=SHORT_TAIL) as ds:
            return await body(ds)
    finally:
        await store.close()


def _check(events: list[Progress], files: int, bytes_read: int | None = None) -> None:
    assert events and events[0].bytes_done == 0 and events[0].files_done == 0
    for a, b in itertools.pairwise(events):
        assert b.bytes_done >= a.bytes_done and b.bytes_planned >= a.bytes_planned
        assert b.files_done >= a.files_done and b.files_planned >= a.files_planned
    last = events[-1]
    assert last.bytes_done == last.bytes_planned
    assert last.files_done == last.files_planned == files
    if bytes_read is not None:
        assert last.bytes_done == bytes_read


VERBS = ["scan", "filter", "limit", "take", "to_arrow", "batches"]


async def _run(ds: Any, verb: str, **kw: Any) -> int:
    if verb == "scan":
        return int((await ds.scan(["id", "name"], **kw)).num_rows)
    if verb == "filter":
        return int((await ds.scan(["name"], filter="score < 0.3", **kw)).num_rows)
    if verb == "limit":
        return int((await ds.scan(["name"], limit=30_000, **kw)).num_rows)
    if verb == "take":
        return int((await ds.take([3, 25_000, 60_000, 3], ["name"], **kw)).num_rows)
    if verb == "to_arrow":
        return int((await ds.to_arrow(["score"], **kw)).num_rows)
    n = 0
    async for b in ds.iter_batches(["id", "name"], batch_rows=10_000, read_whole_below=0,
                                   **kw):
        n += b.num_rows
    return n


@pytest.mark.parametrize("verb", VERBS)
def test_a_dataset_over_budget_sends_no_data_request_to_any_file(
        range_server: Any, blobs: list[bytes], verb: str) -> None:
    names = _put(range_server, blobs, f"bd-{verb}")

    async def body(ds: Any) -> Any:
        events: list[Progress] = []
        n = await _run(ds, verb, on_progress=events.append)
        total_req = None
        before = _sent(range_server, names)
        with pytest.raises(BudgetError) as by_bytes:
            await _run(ds, verb, max_bytes=events[-1].bytes_planned - 1)
        with pytest.raises(BudgetError) as by_requests:
            await _run(ds, verb, max_requests=0)
        sent = _sent(range_server, names) - before
        again = await _run(ds, verb, max_bytes=events[-1].bytes_planned)
        total_req = _sent(range_server, names) - before - sent
        exact = await _run(ds, verb, max_requests=total_req)
        return n, events, by_bytes.value, by_requests.value, sent, again, exact

    n, events, e_bytes, e_req, sent, again, exact = asyncio.run(
        _with(range_server, names, body))
    planned = events[-1].bytes_planned
    assert planned > 0
    assert sent == 0, "no file got a data request"
    assert f"{planned:,} bytes (max_bytes={planned - 1:,})" in str(e_bytes)
    assert "before any data request" in str(e_bytes) and "max_requests=0" in str(e_req)
    assert n == again == exact > 0
    _check(events, events[-1].files_planned)
    assert events[-1].files_planned >= 1


def test_dataset_progress_counts_every_file_and_ends_at_the_stats(
        range_server: Any, blobs: list[bytes]) -> None:
    names = _put(range_server, blobs, "bd-progress")

    async def body(ds: Any) -> Any:
        events: list[Progress] = []
        res = await ds.scan(["id", "name", "score"], on_progress=events.append)
        return events, res

    events, res = asyncio.run(_with(range_server, names, body))
    _check(events, N_FILES, res.stats.bytes_read)
    assert res.num_rows == sum(20_000 + 7_000 * k for k in range(N_FILES))
    assert {e.bytes_planned for e in events} == {res.stats.bytes_read}, \
        "every file planned before the first byte"


# ------------------------------------------------------- random plans ---

waves = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 1 << 22)), min_size=1,
                 max_size=3)
plans = st.lists(st.tuples(waves, st.integers(1, 20)), min_size=0, max_size=8)


@settings(max_examples=200, deadline=None)
@given(plans=plans, seed=st.integers(0, 2**32 - 1))
def test_random_plans_give_monotonic_events_ending_exactly_at_the_totals(
        plans: list[tuple[list[tuple[int, int]], int]], seed: int) -> None:
    """Files of one to three waves (the first expected before anything is sent, the
    others claimed when planned), chunks landing in a random interleaving of the files:
    the events never go back, the total grows only when a wave is claimed, and the last
    event is every byte and every file."""
    events: list[Progress] = []
    meter = Meter(events.append)
    fms = [meter.file(f"f{k}") for k in range(len(plans))]
    meter.expect([(fm, *w[0]) for fm, (w, _) in zip(fms, plans, strict=True)])
    rng = random.Random(seed)
    # each file's steps: claim a wave, then its chunks; files interleave at random
    queues = []
    for fm, (ws, pieces) in zip(fms, plans, strict=True):
        steps: list[tuple[str, int, int]] = []
        for req, nbytes in ws:
            steps.append(("claim", req, nbytes))
            chunk = max(1, -(-nbytes // pieces))  # a wave lands in up to ``pieces`` chunks
            steps += [("add", min(chunk, nbytes - off), 0) for off in range(0, nbytes, chunk)]
        steps.append(("done", 0, 0))
        queues.append((fm, steps))
    growths = 0
    while queues:
        k = rng.randrange(len(queues))
        fm, steps = queues[k]
        kind, a, b = steps.pop(0)
        planned = meter.bytes_planned
        with tracking(fm):
            if kind == "claim":
                fm.claim(a, b)
                growths += meter.bytes_planned > planned
            elif kind == "add":
                fm.add(a)
            else:
                fm.done()
        if not steps:
            queues.pop(k)
    meter.finish()
    total = sum(b for ws, _ in plans for _, b in ws)
    assert events[0].bytes_done == 0
    assert events[0].bytes_planned == sum(ws[0][1] for ws, _ in plans)
    for a, b in itertools.pairwise(events):
        assert b.bytes_done >= a.bytes_done and b.bytes_planned >= a.bytes_planned
        assert b.files_done >= a.files_done and b.bytes_done <= b.bytes_planned
    assert (events[-1].bytes_done, events[-1].bytes_planned) == (total, total)
    assert events[-1].files_done == events[-1].files_planned == len(plans)
    assert growths <= sum(len(ws) - 1 for ws, _ in plans)
    assert meter.requests_planned == sum(r for ws, _ in plans for r, _ in ws)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.integers(1, 30_000), min_size=1, max_size=4),
       verb=st.sampled_from(VERBS), chunk=st.sampled_from([4096, 1 << 20]))
def test_random_datasets_progress_is_exact(range_server: Any, files: list[int], verb: str,
                                           chunk: int) -> None:
    blobs = [_file(k, rows) for k, rows in enumerate(files)]
    names = [f"bd-rand/{len(files)}-{k}-{rows}.csup" for k, rows in enumerate(files)]
    for n, b in zip(names, blobs, strict=True):
        range_server.put(n, b)

    async def main() -> list[Progress]:
        store = HTTPStore(chunk_size=chunk)
        store.hedge = None
        events: list[Progress] = []
        try:
            async with csup_async.open_dataset([range_server.url(n) for n in names],
                                               store=store, profile=SHORT_TAIL) as ds:
                if verb == "take":
                    total = sum(files)
                    await ds.take([0, total // 2, total - 1], ["name"],
                                  on_progress=events.append)
                else:
                    await _run(ds, verb, on_progress=events.append)
        finally:
            await store.close()
        return events

    events = asyncio.run(main())
    _check(events, events[-1].files_planned)
