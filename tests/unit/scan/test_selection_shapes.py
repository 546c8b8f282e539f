"""Filters, ``limit``, ``take`` and ``iter_batches(filter=)`` on files of many super types


and on datasets: the rows Python's own filter gives, reading only what holds them.

Rows with nulls and absent fields written with ``fuse=False`` make one super type per
shape; small segments give the statistics zones to prune.  Each read path is compared
with the rows written (differential properties), and the bytes of the selective paths
with those of the whole scan.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.stores.local import LocalStore
from planner.filters import matches
from planner.filtertext import parse_filter
from tests.support.rowpaths import named_by_no_row
from tests.support.shapes import shape_rows, write_shapes

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

ROWS = 30_000
STEP = 10
COLS = ["ts", "k", "pad"]
LO, HI = ROWS // 2 * STEP, (ROWS // 2 + ROWS // 100) * STEP  # 1 % of rows
FILTER = f"ts >= {LO} and ts < {HI}"


class CountingStore(LocalStore):
    """A local store that counts the bytes asked of it (every read path goes through
    ``read_range`` or ``stream_range``)."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        self.bytes += length
        return await super().read_range(key, offset, length, version)

    async def stream_range(self, key: str, offset: int, length: int,
                           version: str | None = None) -> AsyncIterator[bytes]:
        self.bytes += length
        async for chunk in super().stream_range(key, offset, length, version):
            yield chunk


def _rows(nones: bool) -> list[dict[str, Any]]:
    return shape_rows(ROWS, STEP, nones, seed=11)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_shapes(tmp_path_factory.mktemp("shapes"), ROWS, STEP, seed=11)


async def _read_bytes(path: Path, read: Any, **options: Any) -> tuple[Any, int]:
    """What ``read(reader)`` returns and the bytes it asked of the store (the open's
    excluded)."""
    store = CountingStore()
    async with csup_async.open(str(path), store=store, **options) as r:
        opened = store.bytes
        got = await read(r)
    await store.close()
    return got, store.bytes - opened


async def _batches(r: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return [row async for b in r.iter_batches(COLS, **kwargs) for row in b.to_pylist()]


@pytest.mark.parametrize("name", ["one", "two"])
async def test_iter_batches_with_a_filter_skips_the_zones_statistics_rule_out(
        files: dict[str, Path], name: str) -> None:
    """As ``scan(filter=)`` does, per super type: the 1 % range reads a small part."""
    want = [r for r in _rows(name == "two") if LO <= r["ts"] < HI]
    _, whole = await _read_bytes(files[name], lambda r: r.scan(COLS))
    got, read = await _read_bytes(files[name],
                                  lambda r: _batches(r, filter=FILTER, batch_rows=1000))
    assert got == want
    assert read < 0.4 * whole  # every byte before (the filter judged each batch)


async def test_iter_batches_with_a_filter_nothing_rules_out_streams_every_row(
        files: dict[str, Path]) -> None:
    """A filter the statistics cannot judge (``pad`` is random) still reads every row once,
    in bounded batches, and keeps the matches."""
    want = [r for r in _rows(True) if r["pad"] < "1"]
    got, read = await _read_bytes(files["two"],
                                  lambda r: _batches(r, filter="pad < '1'", batch_rows=4096))
    _, whole = await _read_bytes(files["two"], lambda r: r.scan(COLS))
    assert got == want and read <= 1.05 * whole


@pytest.mark.parametrize("name", ["one", "two"])
async def test_a_filter_with_limit_stops_reading_once_enough_rows_matched(
        files: dict[str, Path], name: str) -> None:
    """Half the rows match; the first 10 are in the first zones that survive: the rest of
    the file is not read (before, every surviving zone was, then cut to 10)."""
    half = f"ts >= {LO}"
    every = [r for r in _rows(name == "two") if r["ts"] >= LO]
    filtered, all_matches = await _read_bytes(files[name], lambda r: r.scan(COLS, filter=half))
    first, ten = await _read_bytes(files[name],
                                   lambda r: r.scan(COLS, filter=half, limit=10))
    assert filtered.to_pylist() == every and first.to_pylist() == every[:10]
    assert ten < 0.35 * all_matches


async def test_a_limit_past_the_matches_reads_every_surviving_zone(
        files: dict[str, Path]) -> None:
    every = [r for r in _rows(True) if LO <= r["ts"] < HI or r["ts"] < 50]
    f = f"({FILTER}) or ts < 50"
    got = [await _read_bytes(files["two"], lambda r, n=n: r.scan(COLS, filter=f, limit=n))
           for n in (3, 7, len(every), len(every) + 5)]
    assert [g.to_pylist() for g, _ in got] == [every[:3], every[:7], every, every]


@pytest.mark.parametrize("name", ["one", "two"])
async def test_take_reads_only_the_segments_holding_the_rows(files: dict[str, Path],
                                                              name: str) -> None:
    """The default: no segment before a selected row is read to check its count."""
    every = _rows(name == "two")
    idx = [29_990, 12, 29_995]
    _, whole = await _read_bytes(files[name], lambda r: r.scan(COLS))
    got, read = await _read_bytes(files[name], lambda r: r.take(idx, COLS))
    checked, strict = await _read_bytes(files[name], lambda r: r.take(idx, COLS),
                                        verify_counts=True)
    assert got.to_pylist() == checked.to_pylist() == [every[i] for i in idx]
    assert read < 0.2 * whole < strict  # rows at the end: verified, nearly every segment


# ------------------------------------------------------------ properties ---

_shapes = st.lists(st.fixed_dictionaries(
    {"id": st.integers(0, 40)},
    optional={"v": st.one_of(st.none(), st.integers(-5, 5)),
              "s": st.one_of(st.none(), st.text(alphabet="abc", max_size=2)),
              "r": st.fixed_dictionaries({"n": st.one_of(st.none(), st.integers(0, 3))})}),
    min_size=1, max_size=80)
_filters = st.sampled_from(["id >= 20", "id < 5 or id > 35", "v = 1", "v is null",
                            "s = 'a' and id < 30", "r.n in (1, 2)", "not (id = 3)",
                            "id >= 10 and id < 12"])


def _sorted_ids(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by ascending ``id`` (statistics zones then prune something)."""
    return sorted(rows, key=lambda r: r["id"])


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """The fields some row has (a projected path no row has is refused)."""
    return [c for c in ("id", "v", "s", "r") if any(c in row for row in rows)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_shapes, text=_filters, limit=st.integers(0, 30),
       idx=st.lists(st.integers(0, 79), max_size=6), strict=st.booleans())
async def test_every_selection_on_many_super_types_is_python_s(
        rows: list[dict[str, Any]], text: str, limit: int, idx: list[int],
        strict: bool) -> None:
    rows = _sorted_ids(rows)
    f = parse_filter(text)
    assume(not named_by_no_row(rows, f))  # refused, never "no match": tested elsewhere
    cols = _columns(rows)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.csup"
        csup_async.write(str(p), rows, fuse=False, segment_thresh=32)
        async with csup_async.open(str(p), verify_counts=strict) as r:
            every = (await r.scan(cols)).to_pylist()
            want = [every[i] for i, row in enumerate(rows) if matches(f, row)]
            assert (await r.scan(cols, filter=text)).to_pylist() == want
            assert (await r.scan(cols, filter=text, limit=limit)).to_pylist() == want[:limit]
            assert [x async for b in r.iter_batches(cols, filter=text, batch_rows=7)
                    for x in b.to_pylist()] == want
            ok = [i for i in idx if i < len(rows)]
            assert (await r.take(ok, cols)).to_pylist() == [every[i] for i in ok]
            assert (await r.scan(cols, limit=limit)).to_pylist() == every[:limit]
            a = len(rows) // 3
            assert (await r.scan(cols, rows=slice(a, a + 5))).to_pylist() == every[a:a + 5]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_shapes, text=_filters, cut=st.integers(1, 79))
async def test_a_dataset_of_many_super_types_filters_as_python_does(
        rows: list[dict[str, Any]], text: str, cut: int) -> None:
    rows = _sorted_ids(rows)
    f = parse_filter(text)
    assume(not named_by_no_row(rows, f))
    parts = [rows[:cut], rows[cut:]]
    cols = _columns(rows)
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, part in enumerate(parts):
            if part:
                paths.append(str(Path(d) / f"{i}.csup"))
                csup_async.write(paths[-1], part, fuse=False, segment_thresh=32)
        async with csup_async.open_dataset(paths) as ds:
            every = (await ds.scan(cols)).to_pylist()
            want = [every[i] for i, row in enumerate(rows) if matches(f, row)]
            assert (await ds.scan(cols, filter=text)).to_pylist() == want
            assert [x async for b in ds.iter_batches(cols, filter=text)
                    for x in b.to_pylist()] == want
            idx = [len(rows) - 1, 0]
            assert (await ds.take(idx, cols)).to_pylist() == [every[i] for i in idx]
