"""Held bytes: pieces read in any order and overlap (the open's tail, head and chain
reads, then a scan's requests) serve every range they cover together."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.model.errors import FormatError
from csup_async.scan.superdb.held import HeldBytes

DATA = bytes(range(256)) * 4


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(DATA) - 1), st.integers(0, 300)), max_size=12),
       st.integers(0, len(DATA) - 1), st.integers(0, 400))
def test_any_covered_range_is_served(pieces, start, length):
    held = HeldBytes()
    have = bytearray(len(DATA))
    for off, n in pieces:
        n = min(n, len(DATA) - off)
        held.add(off, DATA[off:off + n])
        have[off:off + n] = b"\1" * n
    length = min(length, len(DATA) - start)
    covered = all(have[start:start + length]) if length else True
    assert held.covers(start, length) == covered
    if covered:
        assert bytes(held.get(start, length)) == DATA[start:start + length]
    else:
        with pytest.raises(FormatError):
            held.get(start, length)
    # merged where they overlap: the pieces are disjoint (touching ones kept apart)
    spans = held.ranges()
    assert all(a + n <= b for (a, n), (b, _) in pairwise(spans))
    assert all(n for _, n in spans)
    assert held.held_until(start) == next(
        (i for i in range(start, len(DATA)) if not have[i]), len(DATA)) if have[start] else (
        held.held_until(start) == start)


def test_a_range_across_overlapping_reads():
    """The failure RangeBuffer had: a head read, a smaller read inside it, and a range
    running from the small read's end across the head into a later read."""
    held = HeldBytes()
    held.add(0, DATA[:500])
    held.add(100, DATA[100:120])
    held.add(500, DATA[500:900])
    assert bytes(held.get(110, 600)) == DATA[110:710]
