"""One scan program, and every selection on files of several super types.

``reader.plan(...)`` is what ``scan(...)`` runs: a ``ScanProgram`` that explains itself
and that ``execute`` runs without planning again.  Files whose rows have two super
types (a ``None`` written with ``fuse=False``) prune, limit and take like files of one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import csup_async
import csup_async.readers.execution as execution_mod
import planner
import planner.coalescing as coalescing
import planner.plan as plan_mod
import planner.waves as waves
from planner import get_profile
from planner.program import ScanProgram
from tests.support.shapes import shape_rows, write_shapes

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

ROWS = 30_000
STEP = 10
COLS = ["ts", "k", "pad"]
#: 1 % of the rows, in the middle of the file
LO, HI = ROWS // 2 * STEP, (ROWS // 2 + ROWS // 100) * STEP
FILTER = f"ts >= {LO} and ts < {HI}"
NEVER_LATE = dataclasses.replace(get_profile("local"), name="slow", latency=10.0)


def _rows(nones: bool) -> list[dict[str, Any]]:
    return shape_rows(ROWS, STEP, nones, seed=7)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_shapes(tmp_path_factory.mktemp("shapes"), ROWS, STEP, seed=7)


def _want(nones: bool, keep: Any) -> list[dict[str, Any]]:
    return [r for i, r in enumerate(_rows(nones)) if keep(i, r)]


# ------------------------------------------------------ several super types ---

async def test_two_super_types_have_their_row_count_in_the_metadata(files) -> None:
    async with csup_async.open(str(files["two"])) as r:
        assert len(r.meta.super_types) == 2
        assert r.num_rows == ROWS  # before any read of the super column


async def test_a_range_filter_on_two_super_types_prunes_by_each_types_statistics(
        files) -> None:
    """The 1 % range filter reads a small part of the file, as on one super type (it read
    every byte before: 'pruning by statistics of: (none)')."""
    async with csup_async.open(str(files["two"]), profile=NEVER_LATE) as r:
        whole = await r.scan(COLS)
        got = await r.scan(COLS, filter=FILTER)
        program = await r.plan(COLS, filter=FILTER)
    assert got.to_pylist() == _want(True, lambda i, row: LO <= row["ts"] < HI)
    assert got.stats.bytes_read < 0.2 * whole.stats.bytes_read
    text = program.explain()
    assert "pruning by statistics of: ts" in text
    assert "super type 0:" in text and "super type 1:" in text
    assert program.rows_pruned > ROWS // 2


async def test_limit_on_two_super_types_reads_only_the_first_segments(files) -> None:
    async with csup_async.open(str(files["two"])) as r:
        whole = await r.scan(COLS)
    async with csup_async.open(str(files["two"])) as r:
        got = await r.scan(COLS, limit=10)
        program = await r.plan(COLS, limit=10)
    assert got.to_pylist() == _rows(True)[:10]
    assert got.stats.bytes_read < 0.05 * whole.stats.bytes_read
    assert not program.rowmap.complete and len(program.rowmap.ids) < ROWS  # a prefix
    assert "a prefix" in program.explain()


@pytest.mark.parametrize("how", ["take", "rows", "limit", "filter"])
async def test_the_super_column_is_read_once_on_two_super_types(files, how: str) -> None:
    """The row map decodes the super column while planning; the scan uses its IDs and
    fetches none of the super column's segments again."""
    async with csup_async.open(str(files["two"]), profile=NEVER_LATE) as r:
        runs = {"take": lambda: r.take([29_000, 3, 15_007], COLS),
                "rows": lambda: r.scan(COLS, rows=slice(20_000, 20_050)),
                "limit": lambda: r.scan(COLS, limit=10),
                "filter": lambda: r.scan(COLS, filter=FILTER)}
        got = await runs[how]()
        supers = {(s.offset, s.length) for s in r.meta.super_column}
        program = got.plan if isinstance(got.plan, ScanProgram) else None
        inner = got.plan.plan if program is not None else got.plan
        first = getattr(inner, "wave1", None) or inner
        planned = {(s.offset, s.length) for s in first.segments}
    assert not planned & supers
    assert got.num_rows > 0


async def test_take_and_rows_on_two_super_types_read_only_their_segments(files) -> None:
    idx = [29_000, 3, 15_007, 3, 22_222]
    every = _rows(True)
    async with csup_async.open(str(files["two"]), trust_counts=True) as r:
        whole = await r.scan(COLS)
        got = await r.take(idx, COLS)
        sliced = await r.scan(COLS, rows=slice(20_000, 20_050))
    assert got.to_pylist() == [every[i] for i in idx]
    assert sliced.to_pylist() == every[20_000:20_050]
    assert got.stats.bytes_read < 0.25 * whole.stats.bytes_read
    assert sliced.stats.bytes_read < 0.1 * whole.stats.bytes_read


# ------------------------------------------------------------ one program ---

async def test_scan_runs_the_program_plan_returns(files) -> None:
    async with csup_async.open(str(files["two"])) as r:
        for kwargs in ({}, {"filter": FILTER}, {"limit": 7}, {"rows": slice(100, 200)},
                       {"filter": FILTER, "limit": 3}):
            program = await r.plan(COLS, **kwargs)
            assert isinstance(program, ScanProgram)
            assert program.explain().startswith(f"scan program: {program.kind}")
            ran = await r.execute(program)
            assert ran.plan is program
            assert ran.to_pylist() == (await r.scan(COLS, **kwargs)).to_pylist()
        with pytest.raises(csup_async.CsupError, match="plan those columns"):
            await r.execute(await r.plan(COLS, limit=3), ["ts"])


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls of plan_scan and plan_ranges, wherever they are reached from."""
    counts = {"plan_scan": 0, "plan_ranges": 0}

    def counting(fn: Any, key: str) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            counts[key] += 1
            return fn(*a, **k)
        return wrapper

    scan = counting(plan_mod.plan_scan, "plan_scan")
    for mod in (planner, plan_mod):
        monkeypatch.setattr(mod, "plan_scan", scan)
    ranges = counting(coalescing.plan_ranges, "plan_ranges")
    for mod in (coalescing, plan_mod, waves, execution_mod):
        monkeypatch.setattr(mod, "plan_ranges", ranges)
    return counts


async def test_executing_a_program_plans_nothing(files, counted) -> None:
    """A one-wave filtered scan, a row selection and a whole scan run as planned."""
    async with csup_async.open(str(files["one"]), profile=NEVER_LATE) as r:
        programs = [await r.plan(COLS, filter=FILTER), await r.plan(COLS, limit=5),
                    await r.plan(COLS)]
        assert not programs[0].two_waves
        counted.update(plan_scan=0, plan_ranges=0)
        for p in programs:
            await r.execute(p)
    assert counted == {"plan_scan": 0, "plan_ranges": 0}


async def test_a_filtered_scan_plans_each_projection_once(files, counted) -> None:
    """Planning weighs three projections (all columns, the filter's, the others'): each
    is planned once, and running adds nothing (it planned 8 and 12 times before)."""
    async with csup_async.open(str(files["one"]), profile=NEVER_LATE) as r:
        counted.update(plan_scan=0, plan_ranges=0)
        await r.scan(COLS, filter=FILTER)
    assert counted["plan_scan"] == 3
    assert counted["plan_ranges"] <= 2 * 3  # each projection's ranges, whole and cut


# ------------------------------------------------- super column counts that lie ---

def _segmap_value(segmap: tuple[Any, ...]) -> tuple[Any, Any]:
    """A segmap with ``count`` and ``crc32`` (no bounds: nothing is pruned)."""
    from csup_async.format.colvalue import SEGMAP_TYPE
    from csup_async.model.types import UINT32, ArrayType, Field, RecordType

    plain = [{"offset": s.offset, "length": s.length, "mem_length": s.mem_length,
              "compression_format": s.compression} for s in segmap]
    if not segmap or any(s.count is None or s.crc32 is None for s in segmap):
        return SEGMAP_TYPE, plain
    for el, s in zip(plain, segmap, strict=True):
        el.update(count=s.count, crc32=s.crc32)
    extra = (Field("count", UINT32), Field("crc32", UINT32))
    return ArrayType(RecordType((*SEGMAP_TYPE.elem.fields, *extra))), plain


def _super_counts(data: bytes, shift: int, at: int) -> bytes:
    """``data`` with ``shift`` counts moved from super column segment ``at + 1`` to
    segment ``at`` (every total unchanged)."""
    from csup_async.format.bsup import StreamEncoder
    from csup_async.format.colvalue import TRAILER_TYPE, column_value
    from tests.support.checksum_files import file_meta

    meta = file_meta(data)
    segs = list(meta.super_column)
    segs[at] = dataclasses.replace(segs[at], count=segs[at].count + shift)
    segs[at + 1] = dataclasses.replace(segs[at + 1], count=segs[at + 1].count - shift)
    out = bytearray(data[:meta.trailer.data_size])
    enc = StreamEncoder(out)
    for t in meta.super_types:
        enc.write_body(t, None)
    enc.write(*_segmap_value(tuple(segs)))
    for c in meta.columns:
        enc.write(*column_value(c, _segmap_value))
    enc.end_stream()
    size = meta.trailer.data_size
    tenc = StreamEncoder(out, compress=False)
    tenc.write(TRAILER_TYPE, {"magic": "super columnar", "type": "csup", "version": 1,
                              "sections": [size, len(out) - size],
                              "meta": {"skew_thresh": 1 << 26, "segment_thresh": 1 << 22}})
    tenc.end_stream()
    return bytes(out)


@pytest.mark.parametrize("shift", [1, -1, 50])
async def test_super_column_counts_that_lie_give_the_rows_or_an_error(files, tmp_path,
                                                                     shift) -> None:
    """The row map of ``limit=`` is read from the super column's first segments by their
    counts: counts shifted between two segments give the true rows or a CsupError."""
    data = files["two"].read_bytes()
    p = tmp_path / "lying.csup"
    p.write_bytes(_super_counts(data, shift, 0))
    every = _rows(True)
    async with csup_async.open(str(p)) as r:
        n = r.meta.super_column[0].count
        for limit in (5, n, n + 3):
            try:
                got = (await r.scan(COLS, limit=limit)).to_pylist()
            except csup_async.CsupError as e:
                assert str(p) in str(e)
                continue
            assert got == every[:limit]
        try:
            got = (await r.take([n - 1, n, n + 1], COLS)).to_pylist()
        except csup_async.CsupError as e:
            assert str(p) in str(e)
        else:
            assert got == [every[n - 1], every[n], every[n + 1]]


async def test_a_filter_that_rules_out_no_row_reads_its_plans_uncut(files, counted) -> None:
    """Statistics that keep every zone (most small files of a dataset): the plans are run
    as planned, none is cut again to 'every row' (three more plannings of ranges before),
    and the rows are all of them."""
    async with csup_async.open(str(files["one"]), profile=NEVER_LATE) as r:
        counted.update(plan_scan=0, plan_ranges=0)
        got = await r.scan(COLS, filter="ts >= 0")
        program = await r.plan(COLS, filter="ts >= 0")
    assert got.num_rows == ROWS and program.rows_pruned == 0
    # scan's, then plan's (at most: the reader may reuse a plan of the same projection)
    assert counted["plan_ranges"] == counted["plan_scan"] <= 2 * 3
