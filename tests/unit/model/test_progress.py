"""Exact progress: ``scan(on_progress=)`` over random files, projections, profiles and chunk
sizes, through the HTTP store (chunks) and local files (filled in place)."""

from __future__ import annotations

import asyncio
import io
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.progress import Progress
from csup_async.stores import HTTPStore

COLUMNS = ["id", "name", "score", "tags"]


def _file(seed: int, rows: int) -> bytes:
    rng = random.Random(seed)
    out = io.BytesIO()
    # our layout: a v23 file of these sizes is read whole at open, so its scans would plan
    # no bytes to report (v23 progress is checked in tests/unit/readers/test_layout_parity)
    csup_async.write(out, [{"id": i, "name": f"n{rng.getrandbits(rng.choice([8, 40]))}",
                            "score": rng.random(),
                            "tags": [rng.randrange(9) for _ in range(i % 4)]}
                           for i in range(rows)], target="csup-async")
    return out.getvalue()


async def _scan(url: str, store: Any, columns: list[str], profile: str
                ) -> tuple[list[Progress], Any, Any]:
    events: list[Progress] = []
    async with csup_async.open(url, store=store, profile=profile) as r:
        plan = await r.plan(columns)
        res = await r.scan(columns, on_progress=events.append)
    return events, plan, res


SEEN: dict[str, int] = {"reads": 0, "events": 0}


def _check(events: list[Progress], plan: Any, res: Any) -> None:
    SEEN["reads"] += plan.bytes_to_read > 0
    SEEN["events"] += len(events)
    assert events, "at least the first event"
    assert events[0].bytes_done == 0
    assert {e.bytes_planned for e in events} == {plan.bytes_to_read}
    done = [e.bytes_done for e in events]
    assert done == sorted(done), "monotonic"
    assert done[-1] == plan.bytes_to_read == res.stats.bytes_read, "ends exactly at the plan"
    assert events[-1].fraction == 1.0
    assert (events[-1].files_done, events[-1].files_planned) == (1, 1)
    assert all(e.files_done == 0 for e in events[:-1])


scans = st.tuples(st.integers(0, 10**6), st.integers(1, 60_000),
                  st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=4, unique=True),
                  st.sampled_from(["s3", "http", "local"]),
                  st.sampled_from([1024, 8192, 65536, 1 << 20]))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scans)
@example((1, 100_000, ["id", "name"], "s3", 8192))  # surely beyond the tail read
def test_progress_over_http_is_monotonic_and_exact(range_server: Any, case: Any) -> None:
    seed, rows, columns, profile, chunk = case
    name = f"progress/{seed}-{rows}.csup"
    range_server.put(name, _file(seed, rows))

    async def main() -> tuple[list[Progress], Any, Any]:
        store = HTTPStore(chunk_size=chunk)
        try:
            return await _scan(range_server.url(name), store, columns, profile)
        finally:
            await store.close()

    _check(*asyncio.run(main()))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scans)
@example((2, 100_000, ["name", "tags"], "local", 65536))  # surely beyond the tail read
def test_progress_of_local_files_is_monotonic_and_exact(tmp_path: Path, case: Any) -> None:
    seed, rows, columns, profile, _ = case
    path = tmp_path / f"{seed}-{rows}.csup"
    path.write_bytes(_file(seed, rows))
    _check(*asyncio.run(_scan(str(path), None, columns, profile)))


def test_the_random_scans_above_read_data() -> None:
    """The property tests mean something only if their scans read beyond the tail."""
    if SEEN["reads"] == 0:
        pytest.skip("run with the property tests above")
    assert SEEN["reads"] >= 2 and SEEN["events"] > 2 * SEEN["reads"]
