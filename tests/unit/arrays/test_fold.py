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
from csup_async.model.types import INT64, NULL, STRING, ArrayType, UnionType
from tests.support.strategies import types, values_of


async def _scan(rows, tmp_path):
    p = tmp_path / "f.csup"
    csup_async.write(str(p), rows, fuse=False)  # exact types: folding is what is tested
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
    dense = res.to_arrow(unions="dense")
    t = dense.schema.field("v").type
    assert pa.types.is_union(t) and t.num_fields == 3  # int64, string, [int64] ([null] folded)
    assert dense.column("v").to_pylist() == [1, "x", [], [2]]
    # the default: the same three members as a struct with a tag (pandas, polars load it)
    v = res.to_arrow().column("v").to_pylist()
    assert [r["tag"] for r in v] == [0, 1, 2, 2]
    assert [r[k] for r, k in zip(v, ["int64", "string", "[int64]", "[int64]"], strict=True)] \
        == [1, "x", [], [2]]


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


async def test_to_numpy_of_lists_of_mixed_types_gives_object_rows(tmp_path):
    """A list of int and string elements has an unfoldable union inside: object rows."""
    res = await _scan([{"a": [1, "x"]}, {"a": []}, {"a": None}, {"r": {"l": [2.5, "y"]}}],
                      tmp_path)
    out = res.to_numpy()
    assert out["a"].dtype == object and out["a"].tolist() == [[1, "x"], [], None, None]
    assert res.column("r").to_numpy().tolist() == [None, None, None, {"l": [2.5, "y"]}]


async def test_scan_result_to_arrow_fold_false_keeps_the_unions(tmp_path):
    pa = pytest.importorskip("pyarrow")
    res = await _scan([{"l": ["a"]}, {"l": []}, {"l": None}], tmp_path)
    exact = res.to_arrow(fold=False)
    t = exact.schema.field("l").type
    assert pa.types.is_union(t)  # [null] beside [string], as written
    assert {t.field(i).type for i in range(t.num_fields)} == {
        pa.large_list(pa.large_string()), pa.large_list(pa.null())}
    assert exact.column("l").to_pylist() == [["a"], [], None]
    assert res.to_arrow(fold=True).schema.field("l").type == pa.large_list(pa.large_string())


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_to_numpy_gives_one_row_per_value_for_any_type(data):
    t = data.draw(types)
    values = data.draw(st.lists(values_of(t), max_size=5))
    out = A.from_pylist(t, values).to_numpy()
    assert len(out) == len(values)


async def test_a_member_whose_inside_folds_retypes_the_union(tmp_path):
    """``[(uint8,null)]`` beside ``uint8`` folds to ``[uint8]``: the union's member type
    changes with it (building the union with the old member type was a FormatError)."""
    pa = pytest.importorskip("pyarrow")
    from csup_async.model.types import PRIMITIVE_BY_NAME
    from csup_async.model.values import Value

    u8 = PRIMITIVE_BY_NAME["uint8"]
    rows = [Value(u8, 0), Value(ArrayType(UnionType((u8, NULL))), []),
            Value(ArrayType(UnionType((u8, NULL))), [7, None])]
    res = await _scan(rows, tmp_path)
    t = res.to_arrow(unions="dense").schema.field("").type
    assert pa.types.is_union(t)
    assert {t.field(i).type for i in range(t.num_fields)} == {pa.uint8(),
                                                              pa.large_list(pa.uint8())}
    assert res.to_arrow(unions="dense").column("").to_pylist() == [0, [], [7, None]]
    assert res.to_pylist() == [{"": 0}, {"": []}, {"": [7, None]}]


def test_members_that_fold_to_one_type_become_one():
    l8 = ArrayType(INT64)
    un = ArrayType(UnionType((INT64, NULL)))
    u = A.UnionArray(UnionType((l8, un)), np.array([0, 1, 1], np.int32),
                     [A.from_pylist(l8, [[1]]), A.from_pylist(un, [[2, None], []])])
    folded = A.fold_nulls(u)
    assert folded.type == l8 and folded.to_pylist() == [[1], [2, None], []]


def test_union_members_whose_insides_fold_keep_a_consistent_union():
    """A union member folded inside ([(int64,null)] -> [int64]) used to leave the union
    typed with the old member, and to_arrow raised FormatError; members that fold to the
    same type become one member."""
    pytest.importorskip("pyarrow")
    from csup_async.model.types import Field, RecordType

    inner = UnionType((RecordType((Field("a", ArrayType(UnionType((INT64, NULL)))),)), STRING))
    arr = A.from_pylist(inner, [{"a": [1, None]}, "x"])
    assert arr.to_arrow().to_pylist() == [{"a": [1, None]}, "x"]
    two = UnionType((ArrayType(UnionType((INT64, NULL))), ArrayType(INT64)))
    arr = A.from_pylist(two, [A.UnionValue(0, two.types[0], [1, None]),
                              A.UnionValue(1, two.types[1], [2])])
    assert arr.to_arrow().to_pylist() == [[1, None], [2]]
