"""Planning the reads of super main's multi-object parts (``planner.superdb``): when the
rest of a part is read as one window instead of a chain of header reads, and which
bytes of the projection's segments the data wave still needs after the open's reads."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given
from hypothesis import strategies as st

from csup_async.format.meta import Segment
from planner import get_profile
from planner.superdb import MAX_WINDOW, OpenCost, plan_header_layout, window_read

S3 = get_profile("s3")


def test_small_objects_are_read_in_one_window_split_over_connections() -> None:
    # 2 MB objects against S3's ~5 MB round trip: the 6 MB left come at once, in parts
    # of the data wave's size (1 MiB), all in flight together
    win = window_read(2_000_000, 8_000_000, 2_000_000, 1, S3)
    assert win is not None
    assert win[0][0] == 2_000_000 and sum(n for _, n in win) == 6_000_000
    assert all(a + n == b for (a, n), (b, _) in itertools.pairwise(win))
    assert 1 < len(win) <= S3.concurrency


def test_objects_larger_than_a_round_trip_keep_the_chain() -> None:
    assert window_read(8_000_000, 80_000_000, 8_000_000, 1, S3) is None
    assert window_read(300_000, 900_000, 300_000, 1, "local") is None  # 200 kB trip


def test_a_window_is_bounded() -> None:
    # a thousand small objects: as many round trips' worth as the estimate allows, and
    # never past MAX_WINDOW (the open holds its reads until the reader closes)
    win = window_read(1_000_000, 1_000_000_000, 1_000_000, 1, S3)
    assert win is not None and sum(n for _, n in win) <= MAX_WINDOW


def test_nothing_left_or_nothing_seen_is_no_window() -> None:
    assert window_read(100, 100, 100, 1, S3) is None
    assert window_read(0, 1_000_000, 0, 0, S3) is None


def _cost() -> OpenCost:
    return OpenCost(1, 2, 0, 1, True)


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 400)), min_size=1,
                max_size=12),
       st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 800)), max_size=6))
def test_the_data_wave_reads_every_byte_the_open_does_not_hold(segs, held) -> None:
    segments = [Segment(o, n, n) for o, n in segs]
    plan = plan_header_layout(segments, ["x"], [], _cost(), 23, "s3",
                              held=tuple(held))
    assert plan.bytes_needed == sum(n for _, n in segs)
    got = set()
    for o, n in held:
        got.update(range(o, o + n))
    for r in plan.requests:
        if not r.served:
            got.update(range(r.offset, r.offset + r.length))
    for o, n in segs:
        assert set(range(o, o + n)) <= got, (o, n)


def test_a_segment_the_head_read_holds_in_part_is_read_from_where_it_ends() -> None:
    plan = plan_header_layout([Segment(868, 2_000_000, 2_000_000)], ["x"], [], _cost(), 23,
                              dataclasses.replace(S3, min_part=0),
                              held=((0, 1 << 20),))
    reads = [(r.offset, r.length) for r in plan.requests if not r.served]
    assert reads == [(1 << 20, 868 + 2_000_000 - (1 << 20))]
