"""``compare_bytes``, the kernel behind ordered filters on strings and bytes (``ts >=
'2026-11-18'``), C against numpy: the same signs for any values and literal (NUL bytes,
bytes above 0x7F, prefixes either way, empty values), equal to Python's own byte order,
and the same FormatError for offsets that leave the data or go backwards."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.decode import kernels as K
from csup_async.model.errors import FormatError
from tests.support.kernel_pairs import both

NATIVE = K.native_module()
needs_native = pytest.mark.skipif(NATIVE is None, reason="the C kernels are not built "
                                  "(or CSUP_ASYNC_NATIVE=0)")

#: Bytes that make prefixes and ties likely, and the edge values of a byte.
BYTE_VALUES = st.binary(max_size=6) | st.lists(st.sampled_from([0, 1, 0x61, 0x62, 0x7F, 0x80,
                                                                 0xFF]), max_size=5).map(bytes)


def _packed(values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    data = np.frombuffer(b"".join(values), np.uint8).copy()
    return offsets, data


def _sign(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(BYTE_VALUES, max_size=30), literal=BYTE_VALUES)
def test_compare_agrees_with_python_byte_order(values: list[bytes], literal: bytes) -> None:
    offsets, data = _packed(values)
    native, numpy = both(lambda: K.compare_bytes(offsets, data, literal))
    assert native[0] == numpy[0] == "ok"
    want = [_sign(v, literal) for v in values]
    assert native[1].dtype == numpy[1].dtype == np.int8
    assert native[1].tolist() == numpy[1].tolist() == want


@settings(max_examples=200, deadline=None)
@given(values=st.lists(BYTE_VALUES, min_size=1, max_size=10), literal=BYTE_VALUES,
       at=st.integers(0, 10), to=st.integers(-3, 80))
def test_hostile_offsets_are_the_same_format_error(values: list[bytes], literal: bytes,
                                                   at: int, to: int) -> None:
    offsets, data = _packed(values)
    offsets[at % offsets.size] = to
    native, numpy = both(lambda: K.compare_bytes(offsets, data, literal))
    assert native[0] == numpy[0]
    if native[0] == "ok":
        assert native[1].tolist() == numpy[1].tolist()
    else:
        assert native[1] == numpy[1]  # the very same error type and message
    starts, ends = offsets[:-1], offsets[1:]
    bad = bool((starts < 0).any() or (ends < starts).any() or (ends > data.size).any())
    assert (native[0] == "error") == bad
    if bad:
        assert native[1][0] is FormatError


@needs_native
def test_kernel_refuses_a_short_output() -> None:
    offsets, data = _packed([b"a", b"b", b"c"])
    assert not NATIVE.compare_bytes(offsets, data, b"b", np.empty(2, np.int8))
    out = np.empty(3, np.int8)
    assert NATIVE.compare_bytes(offsets, data, b"b", out)
    assert out.tolist() == [-1, 0, 1]
