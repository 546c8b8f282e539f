"""``decode.count_ranges``: the values in each byte range of a stream (the segments of a
column of many super types, laid end to end and counted in one walk).

The C walk and the numpy reference must agree on any bytes and any cut points: the same
counts, or both a FormatError (the reference names the first bad range).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async import decode as D
from csup_async.decode import columns as ref
from csup_async.format import bsup
from csup_async.model.errors import FormatError
from tests.support.kernel_pairs import NATIVE


def _stream(bodies: list[bytes | None]) -> tuple[bytes, list[int]]:
    out = bytearray()
    ends = []
    for b in bodies:
        bsup.append_tagged(out, b)
        ends.append(len(out))
    return bytes(out), ends


@settings(max_examples=300, deadline=None)
@given(bodies=st.lists(st.none() | st.binary(max_size=200), max_size=40), data=st.data())
def test_counts_per_segment_are_the_values_in_it(bodies: list[bytes | None],
                                                  data: st.DataObject) -> None:
    stream, value_ends = _stream(bodies)
    cuts = sorted(data.draw(st.sets(st.sampled_from(value_ends), max_size=8))
                  if value_ends else set())
    ends = np.asarray([*cuts, len(stream)] if stream or cuts else [], np.int64)
    got = D.count_ranges(stream, ends)
    want = []
    start = 0
    for end in ends.tolist():
        want.append(sum(1 for e in value_ends if start < e <= end))
        start = end
    assert got.tolist() == want
    assert int(got.sum()) == len(bodies)


@settings(max_examples=300, deadline=None)
@given(stream=st.binary(max_size=300), data=st.data())
def test_native_and_reference_agree_on_any_bytes(stream: bytes, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=6)))
    ends = np.asarray([*cuts, len(stream)], np.int64)
    try:
        want = ref.count_ranges(stream, ends).tolist()
    except FormatError:
        with pytest.raises(FormatError):
            D.count_ranges(stream, ends)
        return
    assert D.count_ranges(stream, ends).tolist() == want


def test_a_value_across_a_segment_boundary_is_refused() -> None:
    stream, _ = _stream([b"abc", b"de"])
    with pytest.raises(FormatError, match="byte range 0"):
        D.count_ranges(stream, np.asarray([2, len(stream)], np.int64))


@pytest.mark.skipif(NATIVE is None, reason="the C kernels are not built")
def test_the_kernel_counts_in_one_call() -> None:
    stream, ends = _stream([b"x", None, b"yy", b""])
    out = np.empty(2, np.int64)
    assert NATIVE.count_ranges(stream, np.asarray([ends[1], ends[3]], np.int64), out)
    assert out.tolist() == [2, 2]
