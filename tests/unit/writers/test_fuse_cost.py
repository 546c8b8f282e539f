"""Fusing costs about what the values cost, not rows times the size of the fused type
(issue #39 item 11: 2,000 rows of 10 of 300 keys with ``datetime`` values took 7-14 s
fused, under 1 s with ``fuse=False``).  Work is counted, never timed: the Python
function calls a write makes (``sys.setprofile``), with the same rows and values but 10x
as many distinct keys.  The benchmark is ``bench/bench_fuse_wide.py``."""

from __future__ import annotations

import datetime as dt
import io
import ipaddress
import random
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.types import NULL, Type
from csup_async.writers.fuse import fuse_all, fuse_types
from tests.support.strategies import types

#: About this library's own layout (its bytes, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


VALUES: dict[str, Callable[[int], Any]] = {
    "datetime": lambda i: dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i),
    "timedelta": lambda i: dt.timedelta(microseconds=i),
    "ipaddress": lambda i: ipaddress.ip_address(i),  # only the per-value path types it
}


def _rows(keys: int, value: Callable[[int], Any], n: int = 600, per: int = 10
          ) -> list[dict[str, Any]]:
    rng = random.Random(1)
    names = [f"k{i}" for i in range(keys)]
    return [{k: value(rng.randint(0, 10**6)) for k in rng.sample(names, per)}
            for _ in range(n)]


def _calls(rows: list[Any]) -> int:
    n = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal n
        if event == "call":
            n += 1

    sys.setprofile(count)
    try:
        csup_async.write(io.BytesIO(), rows)
    finally:
        sys.setprofile(None)
    return n


def _per_row(keys: int, value: Callable[[int], Any]) -> float:
    """The calls one more row costs (400 rows more, counted), with ``keys`` distinct
    keys: what a fused type of ``keys`` fields costs per row, beside the fixed cost
    of its columns."""
    return (_calls(_rows(keys, value, n=800)) - _calls(_rows(keys, value, n=400))) / 400


@pytest.mark.parametrize("name", ["datetime", "timedelta"])
def test_a_row_costs_its_values_not_the_fused_type(name: str) -> None:
    """Python times take the vectorised path: a row of 10 values costs a few calls
    whatever the fused record's size (before: 6,832 calls per row at 300 keys)."""
    assert _per_row(300, VALUES[name]) < 50


def test_the_per_value_path_fuses_the_types_of_a_chunk_at_once() -> None:
    """Values only the per-value path types (ip addresses): their fused type is built
    once per chunk, not once per row, and a missing field costs one byte, not a call;
    each row still walks the fused record's fields (in the writer), so ten times the
    keys costs under 4x per row (before: 6x, 6,832 calls per row at 300 keys)."""
    few, many = _per_row(30, VALUES["ipaddress"]), _per_row(300, VALUES["ipaddress"])
    assert many < 2000 and many / few < 4, (few, many)


def test_python_times_take_the_vectorised_path_with_the_per_value_bytes() -> None:
    rows = [{"t": dt.datetime(2024, 1, 1, 3, 4, 5, 6),
             "d": dt.timedelta(days=-1, microseconds=3)},
            {"t": dt.datetime(1970, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5)))},
            {"t": None, "d": dt.timedelta(0)}]
    fused = io.BytesIO()
    csup_async.write(fused, rows)
    w = csup_async.Writer(exact := io.BytesIO())
    from csup_async.writers.fuse import encode_fused

    t = fuse_all([csup_async.infer_type(r) for r in rows])
    for r in rows:
        w.write_body(t, encode_fused(t, r))
    w.close()
    assert fused.getvalue() == exact.getvalue()


@settings(max_examples=500, deadline=None)
@given(st.lists(types, max_size=8))
def test_fusing_all_at_once_is_fusing_one_by_one(ts: list[Type]) -> None:
    one_by_one: Type = NULL
    for t in ts:
        one_by_one = fuse_types(one_by_one, t)
    assert fuse_all(ts) == one_by_one
