"""Folding null-shaped union members (``[null]`` beside ``[string]``) in to_arrow/to_numpy.

An empty array is typed ``[null]``, so a column of string lists with some empty
ones is a union; ``to_arrow`` and ``to_numpy`` fold such members into their
sibling (the Spark schema's rule) so pandas and polars get one plain type,
while the Python values stay exactly the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import arrays as A
from csup_async.types import INT64, NULL, STRING, ArrayType, UnionType
from tests.support.strategies import types, values_of


async def _scan(rows, tmp_path):
    p = tmp_path / "f.csup"
    csup_async.write(str(p), rows)
    async with csup_async.open(str(p)) as r:
        return await r.scan()


async def test_string_lists_with_empty_ones_are_one_arrow_type(tmp_path):
    pa = pytest.importorskip("pyarrow")
    res = await _scan([{"l": ["a"]}, {"l": []}, {"l": None}, {"l": ["b", "c"]}], tmp_path)
    assert isinstance(res.columns["l"].type, UnionType)  # exact in the array model
    table = res.to_arrow()
    assert table.schema.field("l").type == pa.large_list(pa.large_string())
    assert table.column("l").to_pylist() == [["a"], [], None, ["b", "c"]]
    exact = res.columns["l"].to_arrow(fold=False)
    assert pa.types.is_union(exact.type)


async def test_records_with_all_null_fields_fold_field_by_field(tmp_path):
    pa = pytest.importorskip("pyarrow")
    res = await _scan([{"r": {"x": None, "y": "a"}}, {"r": {"x": 1, "y": "b"}}], tmp_path)
    arr = res.to_arrow().column("r")
    assert arr.type == pa.struct([("x", pa.int64()), ("y", pa.large_string())])
    assert arr.to_pylist() == [{"x": None, "y": "a"}, {"x": 1, "y": "b"}]


async def test_different_data_types_stay_a_union(tmp_path):
    pa = pytest.importorskip("pyarrow")
    res = await _scan([{"v": 1}, {"v": "x"}, {"v": []}, {"v": [2]}], tmp_path)
    t = res.to_arrow().schema.field("v").type
    assert pa.types.is_union(t) and t.num_fields == 3  # int64, string, [int64] ([null] folded)
    assert res.to_arrow().column("v").to_pylist() == [1, "x", [], [2]]


def test_null_member_folds_and_to_numpy_gets_a_plain_array():
    u = A.UnionArray(UnionType((INT64, NULL)), np.array([0, 1, -1, 0], np.int32),
                     [A.PrimitiveArray(INT64, np.array([5, 7])), A.NullArray(1)])
    folded = A.fold_nulls(u)
    assert folded.type == INT64 and folded.to_pylist() == [5, None, None, 7]
    out = u.to_numpy()
    assert isinstance(out, np.ma.MaskedArray) and out.dtype == np.int64
    assert out.mask.tolist() == [False, True, True, False]


def test_chains_fold_to_the_widest_member():
    lists = A.from_pylist(ArrayType(STRING), [["a"]])
    empties = A.from_pylist(ArrayType(NULL), [[]])
    u = A.UnionArray(UnionType((ArrayType(NULL), ArrayType(STRING))),
                     np.array([1, 0, -1], np.int32), [empties, lists])
    folded = A.fold_nulls(u)
    assert folded.type == ArrayType(STRING) and folded.to_pylist() == [["a"], [], None]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_folding_never_changes_values(data):
    t = data.draw(types)
    values = data.draw(st.lists(values_of(t), max_size=5))
    arr = A.from_pylist(t, values)
    folded = A.fold_nulls(arr)
    assert repr(folded.to_pylist()) == repr(arr.to_pylist())  # repr: NaN and NaT equal
    assert len(folded) == len(arr)


def test_union_members_whose_insides_fold_keep_a_consistent_union():
    """A union member folded inside ([(int64,null)] -> [int64]) used to leave the union
    typed with the old member, and to_arrow raised FormatError; members that fold to the
    same type become one member."""
    pytest.importorskip("pyarrow")
    from csup_async.types import Field, RecordType

    inner = UnionType((RecordType((Field("a", ArrayType(UnionType((INT64, NULL)))),)), STRING))
    arr = A.from_pylist(inner, [{"a": [1, None]}, "x"])
    assert arr.to_arrow().to_pylist() == [{"a": [1, None]}, "x"]
    two = UnionType((ArrayType(UnionType((INT64, NULL))), ArrayType(INT64)))
    arr = A.from_pylist(two, [A.UnionValue(0, two.types[0], [1, None]),
                              A.UnionValue(1, two.types[1], [2])])
    assert arr.to_arrow().to_pylist() == [[1, None], [2]]
