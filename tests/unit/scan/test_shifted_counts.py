"""Row selection and segment counts that lie.

Selection maps rows to segments by the running sum of ``count``.  By default it reads
only the segments holding the rows: each is checked against its count, and a column's
counts must add up to its rows (a total that lies is read whole and refused), which
costs no read.  Counts shifted between two segments that are not neighbours (``[9, 7,
6]`` said as ``[10, 7, 5]``) still sum to the rows, and the segment between them decodes
to exactly its own count: only decoding the segments before it shows the lie, which
``verify_counts=True`` does (every segment up to the last selected row is decoded and
checked, and the lie is a FormatError naming file, column, segment).
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async import FormatError
from tests.support.fuzz_counts import counted, with_statistics
from tests.support.fuzz_model import decode, get, put, streams

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = [{"a": i * 10, "n": i} for i in range(40)]


def _shifted(tmp_path: Path, first: int, second: int) -> tuple[Path, list[int]]:
    """The file of ROWS with column a's counts: one value moved from segment ``second``
    to ``first``; and a's true counts."""
    buf = io.BytesIO()
    csup_async.write(buf, ROWS, segment_thresh=16)
    laid = counted(decode(buf.getvalue()))
    ref = next(r for r in streams(laid) if r.name == "0/fields/0/column/segmap")
    segmap = list(get(laid, ref))
    counts = [s.count for s in segmap]
    assert len(segmap) > second  # several segments, or the test shows nothing
    segmap[first] = replace(segmap[first], count=segmap[first].count + 1)
    segmap[second] = replace(segmap[second], count=segmap[second].count - 1)
    p = tmp_path / "shifted.csup"
    p.write_bytes(with_statistics(put(laid, ref, tuple(segmap))))
    return p, counts


@pytest.mark.parametrize("how", ["take", "rows", "limit"])
async def test_counts_shifted_past_a_segment_are_refused_by_row_selection(
        tmp_path: Path, how: str) -> None:
    p, counts = _shifted(tmp_path, 0, 2)
    row = counts[0] + 2  # in segment 1, whose count is true but whose start is not
    async with csup_async.open(str(p), verify_counts=True) as r:
        with pytest.raises(FormatError, match="its count statistic says") as whole:
            await r.scan()
        reads: dict[str, Any] = {"take": lambda: r.take([row]),
                                 "rows": lambda: r.scan(["a", "n"], rows=slice(row, row + 2)),
                                 "limit": lambda: r.scan(["a"], limit=row + 1)}
        with pytest.raises(FormatError) as err:
            await reads[how]()
    msg = str(err.value)
    assert err.value.path == str(p) and 'column "a"' in msg and "segment 0 of" in msg
    assert str(whole.value) == msg  # the same lie, found the same way as a full scan


async def test_rows_before_the_shifted_segments_still_read(tmp_path: Path) -> None:
    p, counts = _shifted(tmp_path, 1, 3)
    async with csup_async.open(str(p), verify_counts=True) as r:
        got = await r.take([counts[0] - 1, 0])  # segment 0: its count, and start, are true
        assert got.to_pylist() == [ROWS[counts[0] - 1], ROWS[0]]
        assert (await r.scan(limit=2)).to_pylist() == ROWS[:2]
        with pytest.raises(FormatError, match="segment 1 of"):
            await r.take([counts[0] + counts[1] + 1])


async def test_verified_counts_still_select_only_the_segments_up_to_the_rows(
        tmp_path: Path) -> None:
    big = [{"a": i} for i in range(20_000)]
    p = tmp_path / "big.csup"
    csup_async.write(p, big, segment_thresh=4096)
    async with csup_async.open(str(p), verify_counts=True) as r:
        whole = await r.scan(["a"])
        first = await r.take([5, 7])
        last = await r.take([19_999])
    assert first.to_pylist() == [big[5], big[7]] and last.to_pylist() == [big[19_999]]
    # the first rows need the first segment only; the last row every segment before it
    assert first.stats.bytes_needed < whole.stats.bytes_needed // 10
    assert last.stats.bytes_needed <= whole.stats.bytes_needed


@pytest.mark.parametrize("option", [{}, {"trust_counts": True}])
async def test_by_default_only_the_segments_holding_the_rows_are_read(
        tmp_path: Path, option: dict[str, bool]) -> None:
    """The default (and ``trust_counts=True``, which now means the same): the segments
    before a selected row are skipped by their counts; a lie those counts shift between
    unread segments gives what they say (the documented limit of the default)."""
    big = [{"a": i} for i in range(20_000)]
    p = tmp_path / "big.csup"
    csup_async.write(p, big, segment_thresh=4096)
    async with csup_async.open(str(p), **option) as r:
        fast = await r.take([19_999])
        planned = await r.plan(["a"], rows=slice(19_999, 20_000))
    async with csup_async.open(str(p), verify_counts=True) as r:
        checked = await r.take([19_999])
    assert fast.to_pylist() == checked.to_pylist() == [big[19_999]]
    assert fast.stats.bytes_needed < checked.stats.bytes_needed // 10
    assert planned.bytes_needed == fast.stats.bytes_needed
    shifted, counts = _shifted(tmp_path, 0, 2)
    async with csup_async.open(str(shifted), **option) as r:
        got = await r.take([counts[0] + 2])
    assert got.to_pylist() != [ROWS[counts[0] + 2]]  # what a shift that adds up gives


def _short(tmp_path: Path, seg: int) -> Path:
    """The file of ROWS with column a's segment ``seg`` counting one value less: a's
    counts add up to one row less than the file has."""
    buf = io.BytesIO()
    csup_async.write(buf, ROWS, segment_thresh=16)
    laid = counted(decode(buf.getvalue()))
    ref = next(r for r in streams(laid) if r.name == "0/fields/0/column/segmap")
    segmap = list(get(laid, ref))
    segmap[seg] = replace(segmap[seg], count=segmap[seg].count - 1)
    p = tmp_path / "short.csup"
    p.write_bytes(with_statistics(put(laid, ref, tuple(segmap))))
    return p


@pytest.mark.parametrize("how", ["take", "rows", "limit"])
async def test_counts_that_do_not_add_up_to_the_rows_are_refused_without_the_prefix(
        tmp_path: Path, how: str) -> None:
    """A lie in one segment's count moves every later row of its column; by default the
    column's counts are added up against the rows first, and a column whose total lies
    is read whole, so the lie is a FormatError naming the segment, never another row."""
    p = _short(tmp_path, 0)
    async with csup_async.open(str(p)) as r:
        reads: dict[str, Any] = {"take": lambda: r.take([30]),
                                 "rows": lambda: r.scan(["a", "n"], rows=slice(30, 32)),
                                 "limit": lambda: r.scan(["a"], limit=31)}
        with pytest.raises(FormatError) as err:
            await reads[how]()
    msg = str(err.value)
    assert err.value.path == str(p) and 'column "a"' in msg and "segment 0 of" in msg


async def test_trusting_and_verifying_counts_at_once_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "rows.csup"
    csup_async.write(p, ROWS)
    with pytest.raises(csup_async.CsupError, match="contradict"):
        async with csup_async.open(str(p), trust_counts=True, verify_counts=True):
            pass
