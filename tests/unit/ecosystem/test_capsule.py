"""Results reach Arrow consumers by the PyCapsule interface with to_arrow()'s table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async import arrays as A
from csup_async.errors import FormatError, UnsupportedTypeError
from csup_async.read.result import ScanResult
from csup_async.types import INT64, STRING, EnumType, MapType, Type
from tests.unit.format.test_arrays import SETTINGS, typed_column

pa = pytest.importorskip("pyarrow")


def _same_table(res: ScanResult) -> None:
    want = res.to_arrow()
    got = pa.table(res)
    assert got.schema.equals(want.schema, check_metadata=True), f"{got.schema}\n!=\n{want.schema}"
    got.validate(full=True)
    assert got.equals(want)


@SETTINGS
@given(st.lists(typed_column(arrow=True), min_size=1, max_size=3), st.data())
def test_capsule_table_equals_to_arrow(cols: list[tuple[Type, list[Any]]],
                                       data: st.DataObject) -> None:
    n = min(len(v) for _, v in cols)
    arrays = {f"c{i}": A.from_pylist(t, v[:n]) for i, (t, v) in enumerate(cols)}
    start = data.draw(st.integers(0, n))
    _same_table(ScanResult(arrays, n))
    _same_table(ScanResult({p: a.slice(start) for p, a in arrays.items()}, n - start))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), max_size=6))
def test_enum_is_the_same_dictionary(vals: list[str | None]) -> None:
    _same_table(ScanResult({"e": A.from_pylist(EnumType(("a", "b", "c")), vals)}, len(vals)))


def test_numbers_and_strings_are_not_copied() -> None:
    """The C arrays point at the result's numpy buffers (nanoarrow keeps them alive)."""
    import nanoarrow as na

    ints = A.PrimitiveArray(INT64, np.arange(1000, dtype=np.int64))
    s = A.from_pylist(STRING, ["ab", None, "c"] * 10)
    batch = na.c_array_stream(ScanResult({"i": ints}, 1000)).get_next()
    assert batch.child(0).buffers[1] == ints.values.ctypes.data
    child = na.c_array_stream(ScanResult({"s": s}, 30)).get_next().child(0)
    assert child.buffers[1:] == (s.offsets.ctypes.data, s.data.ctypes.data)


def test_capsule_refuses_what_to_arrow_refuses() -> None:
    with pytest.raises(UnsupportedTypeError):
        pa.table(ScanResult({"m": A.from_pylist(MapType(STRING, INT64), [{None: 1}])}, 1))
    bad = A.BinaryArray(STRING, np.array([0, 2]), np.frombuffer(b"\xff\xfe", np.uint8))
    with pytest.raises(FormatError):
        pa.table(ScanResult({"s": bad}, 1))
