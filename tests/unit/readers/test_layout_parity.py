"""The default layout (``target="super"``, CSUP v23, read by the SuperDB reader) and this
library's own (``target="csup-async"``) answer a user's verbs alike: the same keywords,
the same progress events and budget errors, the same argument errors, a schema with
``__arrow_c_schema__``.  Every test writes both layouts and asserts the same behaviour."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import csup_async
from csup_async import (
    ArgumentError,
    BudgetError,
    ColumnNotFoundError,
    RowSelectionError,
)

TARGETS = ["super", "csup-async"]
ROWS = 200_000  # enough that the data is not held by the open's reads (both layouts)


@pytest.fixture(scope="module", params=TARGETS)
def big(request: Any, tmp_path_factory: Any) -> Path:
    """A file of ``ROWS`` rows in the layout of ``target``: its scans send requests."""
    p = tmp_path_factory.mktemp("parity") / f"big-{request.param}.csup"
    csup_async.write(str(p), pa.table({"id": list(range(ROWS)),
                                       "s": [f"s{i % 1000}" for i in range(ROWS)]}),
                     target=request.param)
    return p


@pytest.fixture(scope="module", params=TARGETS)
def small(request: Any, tmp_path_factory: Any) -> Path:
    p = tmp_path_factory.mktemp("parity") / f"small-{request.param}.csup"
    csup_async.write(str(p), [{"id": i, "v": i / 2, "u": {"n": i % 3}} for i in range(50)],
                     target=request.param)
    return p


def _check_events(events: list[Any], read: int) -> None:
    """Progress as our Reader reports it: first at 0, monotonic, the last exactly at the
    total with the one file done, the bytes read (``read``) the bytes done."""
    assert events, "no progress event"
    assert events[0].bytes_done == 0
    done = [e.bytes_done for e in events]
    assert done == sorted(done)
    last = events[-1]
    assert last.bytes_done == last.bytes_planned == read
    assert (last.files_done, last.files_planned) == (1, 1)


async def test_the_verbs_take_the_same_keywords(big: Path) -> None:
    async with csup_async.open(str(big)) as r:
        for verb in ("scan", "iter_batches", "take", "plan", "count_rows"):
            got = set(inspect.signature(getattr(r, verb)).parameters)
            ours = set(inspect.signature(getattr(csup_async.Reader, verb)).parameters)
            assert got == ours - {"self"}, verb
        assert (await r.plan("s, id")).columns == ("s", "id")


async def test_scan_reports_progress_of_what_it_reads(big: Path) -> None:
    async with csup_async.open(str(big)) as r:
        events: list[Any] = []
        res = await r.scan(["id", "s"], on_progress=events.append)
        assert res.num_rows == ROWS and res.stats.bytes_read > 0
        _check_events(events, res.stats.bytes_read)
        events = []
        res = await r.scan(["id"], filter="id >= 199990", on_progress=events.append)
        assert res.column("id").to_pylist() == list(range(199_990, ROWS))
        _check_events(events, res.stats.bytes_read)


async def test_iter_batches_and_take_report_progress(big: Path) -> None:
    async with csup_async.open(str(big)) as r:
        events: list[Any] = []
        n = 0
        async for b in r.iter_batches(["id"], batch_rows=50_000, on_progress=events.append):
            n += b.num_rows
        assert n == ROWS
        _check_events(events, events[-1].bytes_planned)
        assert events[-1].bytes_planned > 0
        events = []
        res = await r.take([5, 3, 199_999], ["s"], on_progress=events.append)
        assert res.column("s").to_pylist() == ["s5", "s3", "s999"]
        assert events[-1].bytes_done == events[-1].bytes_planned
        assert (await r.count_rows(on_progress=events.append)) == ROWS


@pytest.mark.parametrize("budget", [{"max_requests": 0}, {"max_bytes": 10}])
async def test_a_budget_refuses_before_any_data_request(big: Path,
                                                        budget: dict[str, int]) -> None:
    async with csup_async.open(str(big)) as r:
        with pytest.raises(BudgetError, match=r"refused before any data request"):
            await r.scan(["id", "s"], **budget)
        with pytest.raises(BudgetError, match=r"refused before any data request"):
            async for _ in r.iter_batches(["id"], **budget):
                pass
        with pytest.raises(BudgetError, match=r"refused before any data request"):
            await r.take([100_000], ["id", "s"], **budget)
        # within budget: the scan runs
        res = await r.scan(["id"], max_requests=100, max_bytes=1 << 30)
        assert res.num_rows == ROWS


@pytest.mark.parametrize("kw, message", [
    ({"batch_rows": 2.5}, r"batch_rows must be an integer >= 1, not float \(2\.5\)"),
    ({"batch_rows": True}, r"batch_rows must be an integer >= 1, not bool"),
    ({"batch_rows": 0}, r"batch_rows must be an integer >= 1, not 0"),
    ({"prefetch": "2"}, r"prefetch must be an integer >= 0, not str"),
    ({"prefetch": -1}, r"prefetch must be an integer >= 0, not -1"),
])
async def test_iter_batches_refuses_bad_counts_alike(small: Path, kw: dict[str, Any],
                                                     message: str) -> None:
    async with csup_async.open(str(small)) as r:
        with pytest.raises(ArgumentError, match=f"{small.name}: {message}"):
            async for _ in r.iter_batches(["id"], **kw):
                pass


async def test_bad_row_selections_are_refused_alike(small: Path) -> None:
    async with csup_async.open(str(small)) as r:
        with pytest.raises(RowSelectionError, match=r"supports step 1 only, not 2"):
            await r.scan(["id"], rows=slice(0, 10, 2))
        with pytest.raises(RowSelectionError, match=r"slice bounds must be integers"):
            await r.scan(["id"], rows=slice(0, 1.5))
        with pytest.raises(RowSelectionError, match=r"limit must be an integer >= 0"):
            await r.scan(["id"], limit=-1)
        with pytest.raises(RowSelectionError, match=r"row index -1 is negative"):
            await r.take([-1], ["id"])
        assert (await r.scan(["id"], rows=slice(-3, None))).column("id").to_pylist() == [
            47, 48, 49]


async def test_a_missing_column_is_refused_alike(small: Path) -> None:
    async with csup_async.open(str(small)) as r:
        with pytest.raises(ColumnNotFoundError, match=r"no super type has column 'nope'"):
            await r.scan(["nope"])
        with pytest.raises(ColumnNotFoundError, match=r"the filter names 'nope', which no "
                                                      r"super type has; columns: id, v, u"):
            await r.scan(["id"], filter="id >= 0 and nope < 1.5")
        with pytest.raises(ColumnNotFoundError, match=r"the filter names 'u\.x'"):
            async for _ in r.iter_batches(["id"], filter="u.x = 1"):
                pass
        with pytest.raises(ColumnNotFoundError, match=r"the filter names 'nope'"):
            await r.plan(["id"], filter="nope = 1")
        # a present nested path filters
        got = await r.scan(["id"], filter="u.n = 1 and id < 10")
        assert got.column("id").to_pylist() == [1, 4, 7]


def test_the_sync_face_refuses_a_missing_where_column_alike(small: Path) -> None:
    with (csup_async.open_sync(str(small)) as r,
          pytest.raises(ColumnNotFoundError, match=r"the filter names 'nope'")):
        r.scan(["id"], filter="nope = 1")


async def test_the_schema_is_an_arrow_schema_from_metadata(small: Path) -> None:
    async with csup_async.open(str(small)) as r:
        scanned = (await r.scan()).to_arrow().schema
        assert pa.schema(r.schema) == scanned  # __arrow_c_schema__
        one = r.schema.arrow(["u.n", "id"])
        assert one.names == ["u.n", "id"]
        assert pa.schema(one) == (await r.scan(["u.n", "id"])).to_arrow().schema
        with pytest.raises(ColumnNotFoundError, match=r"no super type has a column 'nope'"):
            r.schema.arrow(["nope"])


def test_the_sync_batch_stream_announces_its_schema(small: Path) -> None:
    with csup_async.open_sync(str(small)) as r:
        batches = r.iter_batches(["id"], batch_rows=20)
        reader = pa.RecordBatchReader.from_stream(batches)
        assert reader.schema.names == ["id"]
        assert sum(b.num_rows for b in reader) == 50


@pytest.mark.parametrize("target", TARGETS)
async def test_no_rows_read_back_as_no_rows(tmp_path: Path, target: str) -> None:
    """super main writes nothing at all for no values (a v23 file of no objects has no
    footer nor trailer): that empty file reads as no rows, as our layout's empty file."""
    p = tmp_path / "empty.csup"
    csup_async.write(str(p), [], target=target)
    assert csup_async.read(str(p)).num_rows == 0
    async with csup_async.open(str(p)) as r:
        assert await r.count_rows() == 0
        assert await r.read_rows() == []
