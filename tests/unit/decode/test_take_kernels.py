"""The kernels behind combining super types and reading in batches, C against numpy.

``copy_ranges``, ``take_binary`` and ``route`` (``arrays.combine`` and string
takes) and ``ValueSlicer`` (a batch's slice of a segment) each have a C loop
and a numpy fallback behind one public function.  Both must give the same
arrays for any input, and the same FormatError for hostile input (ranges and
indices out of bounds, offsets that go backwards, IDs outside the parts, a
stream cut inside a value), never a crash, a wrapped index or a short copy.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async import arrays as A
from csup_async.decode import kernels as K
from csup_async.format import bsup
from csup_async.model.errors import CsupError, FormatError
from csup_async.model.types import PRIMITIVE_BY_NAME
from tests.support.kernel_pairs import both, mutate, some_byte

STRING = PRIMITIVE_BY_NAME["string"]
INT64 = PRIMITIVE_BY_NAME["int64"]
NATIVE = K.native_module()
needs_native = pytest.mark.skipif(NATIVE is None, reason="the C kernels are not built "
                                  "(or CSUP_ASYNC_NATIVE=0)")


def agree(fn: Callable[[], Any]) -> tuple[str, Any]:
    """fn's outcome with the kernels and with numpy: the same arrays or the same error."""
    native, numpy = both(fn)
    assert native[0] == numpy[0], (native, numpy)
    if native[0] == "ok":
        a, b = native[1], numpy[1]
        a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    return native


def _expected_ranges(src: bytes, starts: list[int], lengths: list[int]) -> bytes:
    return b"".join(src[s:s + n] for s, n in zip(starts, lengths, strict=True))


# ------------------------------------------------------------ copy_ranges ---


@settings(max_examples=200, deadline=None)
@given(src=st.binary(max_size=60),
       ranges=st.lists(st.tuples(st.integers(-3, 70), st.integers(-2, 40)), max_size=20))
def test_copy_ranges_agree_and_refuse_out_of_bounds(src: bytes, ranges: list[tuple[int, int]]
                                                    ) -> None:
    data = np.frombuffer(src, np.uint8)
    starts = np.array([s for s, _ in ranges], np.int64)
    lengths = np.array([n for _, n in ranges], np.int64)
    kind, got = agree(lambda: K.copy_ranges(data, starts, lengths))
    inside = all(s >= 0 and n >= 0 and s + n <= len(src) for s, n in ranges)
    if inside:
        assert kind == "ok"
        assert got.tobytes() == _expected_ranges(src, starts.tolist(), lengths.tolist())
    else:
        assert kind == "error" and got[0] is FormatError


@needs_native
def test_copy_ranges_kernel_checks_the_destination() -> None:
    """The raw kernel: False for a destination the ranges do not fill exactly."""
    src = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz" * 2, np.uint8)
    starts, lengths = np.array([0, 20], np.int64), np.array([3, 30], np.int64)
    assert NATIVE.copy_ranges(src, starts, lengths, np.empty(33, np.uint8))
    assert not NATIVE.copy_ranges(src, starts, lengths, np.empty(32, np.uint8))
    assert not NATIVE.copy_ranges(src, starts, lengths, np.empty(34, np.uint8))
    assert not NATIVE.copy_ranges(src, np.array([50], np.int64), np.array([3], np.int64),
                                  np.empty(3, np.uint8))
    assert not NATIVE.copy_ranges(src, starts, lengths[:1], np.empty(3, np.uint8))


# ------------------------------------------------------------ take_binary ---


@st.composite
def binary_takes(draw: st.DrawFn) -> tuple[list[bytes | None], list[int], bool]:
    values = draw(st.lists(st.none() | st.binary(max_size=30), max_size=25))
    idx = draw(st.lists(st.integers(-1, max(len(values) - 1, -1)), max_size=40))
    return values, idx, draw(st.booleans())


@settings(max_examples=200, deadline=None)
@given(binary_takes())
def test_take_binary_agrees_with_python(case: tuple[list[bytes | None], list[int], bool]
                                        ) -> None:
    values, idx, garbage = case
    # a null's range may hold bytes (garbage) that must not be taken
    bodies = [(b"??" if garbage else b"") if v is None else v for v in values]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in bodies])]).astype(np.int64)
    data = np.frombuffer(b"".join(bodies), np.uint8)
    validity = np.array([v is not None for v in values], bool)
    ix = np.array(idx, np.int64)
    kind, (o, d) = agree(lambda: K.take_binary(offsets, data, ix, validity))
    assert kind == "ok"
    want = [b"" if i < 0 or values[i] is None else values[i] for i in idx]
    assert [d[a:b].tobytes() for a, b in pairwise(o.tolist())] == want


@pytest.mark.parametrize("offsets, idx", [
    ([0, 2, 5], [2]),            # index past the end
    ([0, 2, 5], [-2]),           # below -1
    ([0, 5, 2], [1]),            # offsets that go backwards
    ([0, 2, 50], [1]),           # a range past the data
    ([-4, 2, 5], [0]),           # a negative offset
])
def test_take_binary_refuses_hostile_input(offsets: list[int], idx: list[int]) -> None:
    data = np.frombuffer(b"hello", np.uint8)
    kind, err = agree(lambda: K.take_binary(np.array(offsets, np.int64), data,
                                            np.array(idx, np.int64)))
    assert kind == "error" and err[0] is FormatError


# ------------------------------------------------------------------ route ---


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 5), max_size=60),
       base=st.lists(st.integers(-1, 100), min_size=6, max_size=6))
def test_route_places_each_row_in_its_part(ids: list[int], base: list[int]) -> None:
    ix = np.array(ids, np.int32)
    kind, got = agree(lambda: K.route(ix, np.array(base, np.int64)))
    assert kind == "ok"
    seen = [0] * 6
    want = []
    for s in ids:
        want.append(-1 if base[s] < 0 else base[s] + seen[s])
        seen[s] += 1
    assert got.tolist() == want


@pytest.mark.parametrize("ids", [[0, 3], [-1], [7, 0]])
def test_route_refuses_ids_outside_the_parts(ids: list[int]) -> None:
    kind, err = agree(lambda: K.route(np.array(ids, np.int32), np.zeros(3, np.int64)))
    assert kind == "error" and err[0] is FormatError


# ---------------------------------------------------- combine and slicing ---


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.lists(st.none() | st.text(max_size=6), max_size=12), min_size=2,
                      max_size=5),
       absent=st.sets(st.integers(0, 4)), seed=st.integers(0, 2**16))
def test_combine_of_strings_matches_rows(parts: list[list[str | None]], absent: set[int],
                                         seed: int) -> None:
    """Parts of one string type (some absent: their rows null) combined in a random row
    order give each row the next value of its part, with C and with numpy."""
    ids = np.repeat(np.arange(len(parts), dtype=np.int32), [len(p) for p in parts])
    np.random.default_rng(seed).shuffle(ids)
    arrays = [None if i in absent else A.from_pylist(STRING, p) for i, p in enumerate(parts)]
    nexts = [iter(p) for p in parts]
    want = [None if s in absent else next(nexts[s]) for s in ids.tolist()]
    native, numpy = both(lambda: A.combine(arrays, ids).to_pylist())
    if all(a is None for a in arrays) or not ids.size:
        assert native == numpy
        return
    assert native == numpy == ("ok", want)


def _stream(values: list[int | None]) -> bytes:
    """An int64 column stream as the writer makes it (bsup's tag and integer codecs)."""
    out = bytearray()
    for v in values:
        bsup.append_tagged(out, None if v is None else bsup.encode_int(v))
    return bytes(out)


def _slices(data: bytes, sizes: list[int]) -> list[Any]:
    s = K.ValueSlicer(data)
    out: list[Any] = [s.count]
    for k in sizes:
        lo, hi, got = s.next(k)
        out.append((lo, hi, got))
    return out


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=30),
       sizes=st.lists(st.integers(0, 9), max_size=8),
       edits=st.lists(st.tuples(st.floats(0, 1), some_byte,
                                st.sampled_from(["set", "insert", "delete"])), max_size=2),
       cut=st.integers(0, 2), corrupt=st.booleans(), every=st.sampled_from([1, 2, 3, 256]))
def test_value_slicer_agrees_and_slices_decode_as_the_whole(
        values: list[int | None], sizes: list[int], edits: Any, cut: int,
        corrupt: bool, every: int) -> None:
    """A segment handed out in slices decodes to the same values as decoded whole (the C
    walk jumping from marks of every ``every`` values); a stream cut inside a value is
    the reference's FormatError either way."""
    K.ValueSlicer.MARK_EVERY = every
    try:
        _check_slices(values, sizes, edits, cut, corrupt)
    finally:
        K.ValueSlicer.MARK_EVERY = 256


def _check_slices(values: list[int | None], sizes: list[int], edits: Any, cut: int,
                  corrupt: bool) -> None:
    data = _stream(values)
    if corrupt:
        data = mutate(data, edits, cut)
    native, numpy = both(lambda: _slices(data, sizes))
    assert native == numpy
    if native[0] == "error":
        assert issubclass(native[1][0], FormatError)
        return
    count = native[1][0]
    if not corrupt:
        assert count == len(values)
        pos, got = 0, []
        s = K.ValueSlicer(data)
        for k in [*sizes, 1 << 30]:
            lo, hi, m = s.next(k)
            assert lo == pos and m == min(k, count - len(got))
            pos = hi
            got += [None if x is None else int(x) for x in
                    A.PrimitiveArray(INT64, *_decode(data[lo:hi], m)).to_pylist()]
        assert got == values


def _decode(stream: bytes, n: int) -> tuple[Any, Any]:
    from csup_async import decode as D

    return D.decode_ints(stream, n, signed=True, bits=64)


def test_value_slicer_refuses_a_cut_stream() -> None:
    data = _stream([1, 2, 300])[:-1]  # the last value's body is cut
    native, numpy = both(lambda: K.ValueSlicer(data).count)
    assert native == numpy
    assert native[0] == "error" and issubclass(native[1][0], FormatError)
    assert issubclass(native[1][0], CsupError)


def test_batch_buffers_and_trim() -> None:
    """Buffers of a batch read: writable arrays of the size asked, small or mapped; trimming
    malloc's free pages is harmless wherever it is called (a no-op off glibc)."""
    from csup_async.scan import memory

    for n in (0, 5, memory.OWN_PAGES_FROM, memory.OWN_PAGES_FROM * 3 + 7):
        a = memory.pages(n)
        assert a.dtype == np.uint8 and a.size == n and a.flags.writeable
        a[:] = 7
        assert int(a.sum()) == 7 * n
    memory.trim()
    memory.trim()
