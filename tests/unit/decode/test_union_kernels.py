"""The kernels behind v23 union columns, C against numpy.

``fill_runs`` (a two-member union's tags from its run lengths, or those tags mapped to a
column's members), ``map_tags`` (a union's tags counted and mapped in one pass) and
``scatter_offsets`` (strings spread over the rows a mask marks) each have a C loop and a
numpy fallback behind one public function (csup_async.decode.kernels).  Both must give
the same arrays for any input, and the same FormatError for hostile input (negative runs,
runs past the values, tags outside the union, a mask that does not mark one row per
value), never a crash or a short write.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

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


def agree(fn: Callable[[], Any]) -> tuple[str, Any]:
    """fn's outcome with the kernels and with numpy: the same arrays or the same error."""
    native, numpy = both(fn)
    assert native[0] == numpy[0], (native, numpy)
    if native[0] == "ok":
        a, b = native[1], numpy[1]
        a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    else:
        assert native[1] == numpy[1]
    return native


# -------------------------------------------------------------- fill_runs ---


def _runs_model(runs: list[int], first: int, second: int, n: int) -> list[int]:
    out: list[int] = []
    for j, r in enumerate(runs):
        out += [first if j % 2 == 0 else second] * r
    return out + [second] * (n - len(out))


@settings(max_examples=300, deadline=None)
@given(runs=st.lists(st.integers(-2, 12), max_size=12), extra=st.integers(-5, 6),
       first=st.integers(-1, 3), second=st.integers(-1, 3))
def test_fill_runs_agree_and_refuse_runs_past_the_values(runs: list[int], extra: int,
                                                         first: int, second: int) -> None:
    n = max(0, sum(r for r in runs if r > 0) + extra)
    kind, got = agree(lambda: K.fill_runs(np.array(runs, np.int64), first, second, n))
    if all(r >= 0 for r in runs) and sum(runs) <= n:
        assert kind == "ok"
        assert got.dtype == np.int32 and got.tolist() == _runs_model(runs, first, second, n)
    else:
        assert kind == "error" and got[0] is FormatError


def test_fill_runs_of_no_runs_is_every_value_second() -> None:
    assert K.fill_runs(np.zeros(0, np.int64), 1, 0, 4).tolist() == [0, 0, 0, 0]


@needs_native
def test_fill_runs_kernel_refuses_what_it_cannot_fill() -> None:
    one, zero = np.int32(1).tobytes(), np.int32(0).tobytes()
    out = np.empty(5, np.int32)
    assert NATIVE.fill_runs(np.array([2, 3], np.int64), one, zero, out)
    assert out.tolist() == [1, 1, 0, 0, 0]
    assert not NATIVE.fill_runs(np.array([2, 4], np.int64), one, zero, out)  # past n
    assert not NATIVE.fill_runs(np.array([-1], np.int64), one, zero, out)
    assert not NATIVE.fill_runs(np.array([1], np.int64), b"\x01", zero, out)  # not int32


# --------------------------------------------------------------- map_tags ---


@settings(max_examples=300, deadline=None)
@given(tags=st.lists(st.integers(-2, 5), max_size=40),
       to=st.lists(st.integers(-1, 4), min_size=0, max_size=5))
def test_map_tags_agree_and_refuse_tags_outside_the_union(tags: list[int], to: list[int]
                                                          ) -> None:
    kind, got = agree(lambda: K.map_tags(np.array(tags, np.int64), np.array(to, np.int32)))
    if all(0 <= t < len(to) for t in tags):
        assert kind == "ok"
        mapped, counts = got
        assert mapped.dtype == np.int32 and mapped.tolist() == [to[t] for t in tags]
        assert counts.tolist() == [tags.count(k) for k in range(len(to))]
    else:
        assert kind == "error" and got[0] is FormatError


@needs_native
def test_map_tags_kernel_checks_its_outputs() -> None:
    tags, to = np.array([0, 1, 1], np.int64), np.array([5, 6], np.int32)
    out, counts = np.empty(3, np.int32), np.full(2, 9, np.int64)
    assert NATIVE.map_tags(tags, to, out, counts)
    assert out.tolist() == [5, 6, 6] and counts.tolist() == [1, 2]  # counts zeroed first
    assert not NATIVE.map_tags(tags, to, np.empty(2, np.int32), counts)
    assert not NATIVE.map_tags(tags, to, out, np.empty(3, np.int64))
    assert not NATIVE.map_tags(np.array([2], np.int64), to, np.empty(1, np.int32), counts)


# -------------------------------------------------------- scatter_offsets ---


@settings(max_examples=300, deadline=None)
@given(lengths=st.lists(st.integers(0, 9), max_size=20), start=st.integers(0, 5),
       mask=st.lists(st.booleans(), max_size=30), backwards=st.booleans())
def test_scatter_offsets_agree_and_refuse_a_mask_of_other_rows(
        lengths: list[int], start: int, mask: list[bool], backwards: bool) -> None:
    offs = np.cumsum([start, *lengths]).astype(np.int64)
    if backwards and offs.size > 2:
        offs[1], offs[2] = offs[2] + 1, offs[1]  # offsets that go back: the reference's
    m = np.array(mask, dtype=bool)
    kind, got = agree(lambda: K.scatter_offsets(offs, m))
    if sum(mask) != len(lengths):
        assert kind == "error" and got[0] is FormatError
        return
    assert kind == "ok" and got.dtype == np.int64 and got.size == len(mask) + 1
    diffs = iter(np.diff(offs).tolist())
    want = [next(diffs) if present else 0 for present in mask]
    assert [b - a for a, b in pairwise(got.tolist())] == want and got[0] == 0
