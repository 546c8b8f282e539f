"""The integer coding of SuperDB's vectors: decoding inverts the layout for every
length (whole bit-packed blocks, a variable-byte remainder, both), sign and width."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.format.superdb import intcomp
from csup_async.model.errors import CsupError
from tests.support.intcomp_encoder import encode

ints = st.one_of(
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.integers(-1000, 1000),
    st.integers(0, 1 << 20).map(lambda v: v << 20),  # trailing zeros: the ntz shift
)
lengths = st.sampled_from([0, 1, 5, 127, 128, 129, 255, 256, 257, 300, 512, 600, 1024 + 3])


@settings(max_examples=60, deadline=None)
@given(lengths.flatmap(lambda n: st.lists(ints, min_size=n, max_size=n)), st.booleans())
def test_int64_round_trip(values, use_ntz):
    got = intcomp.int64s(encode(values, 64, True, use_ntz)).tolist()
    assert got == values


@settings(max_examples=60, deadline=None)
@given(lengths.flatmap(lambda n: st.lists(st.integers(0, (1 << 64) - 1), min_size=n,
                                          max_size=n)))
def test_uint64_round_trip(values):
    assert intcomp.uint64s(encode(values, 64, False)).tolist() == values


@settings(max_examples=60, deadline=None)
@given(lengths.flatmap(lambda n: st.lists(st.integers(0, (1 << 32) - 1), min_size=n,
                                          max_size=n)))
def test_uint32_round_trip(values):
    assert intcomp.uint32s(encode(values, 32, False)).tolist() == values


def test_sorted_offsets_pack_small():
    offsets = list(range(0, 3 * 10_000, 3))
    raw = encode(offsets, 32, False)
    assert len(raw) < len(offsets)  # 2 bits a value, not 32
    assert intcomp.uint32s(raw).tolist() == offsets


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200).filter(lambda b: len(b) % 8 == 0))
def test_garbage_is_a_format_error_not_a_crash(raw):
    for decode in (intcomp.int64s, intcomp.uint64s, intcomp.uint32s):
        with contextlib.suppress(CsupError):
            decode(raw)


def test_a_segment_of_partial_words_is_refused():
    with pytest.raises(CsupError, match="whole"):
        intcomp.int64s(b"\0" * 12)
