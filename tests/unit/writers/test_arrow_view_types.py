"""Every Arrow type polars and pyarrow make today writes (issue #39, item 3): view types
(string_view, binary_view, list_view, large_list_view), large types, dictionary and
run-end encoded arrays, fixed-size lists, nested in structs and lists, with nulls;
each reads back as the values written, through pyarrow, polars and pandas input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")
pl = pytest.importorskip("polars")


def _roundtrip(tmp_path: Path, data: Any, name: str = "t.csup") -> list[dict[str, Any]]:
    path = tmp_path / name
    csup_async.write(path, data)
    return csup_async.read(str(path)).to_pylist()


def test_a_polars_frame_with_a_null_string_writes(tmp_path: Path) -> None:
    df = pl.DataFrame({"s": ["a", None, "c"], "i": [1, 2, None]})
    assert _roundtrip(tmp_path, df) == df.to_dicts()


def test_a_frame_from_read_ndjson_writes(tmp_path: Path) -> None:
    src = tmp_path / "in.ndjson"
    src.write_text('{"a":1,"s":"x","l":[1,2],"r":{"t":"u"}}\n'
                   '{"a":null,"s":null,"l":null,"r":null}\n{"a":3,"s":"z","l":[],"r":{"t":null}}\n')
    df = pl.read_ndjson(src)
    assert _roundtrip(tmp_path, df) == df.to_dicts()


VALUES = [["a", None, "ccc", ""], [None, None, None, None], ["x", "y", "x", "x"]]


def _list_view(values: list[Any], large: bool) -> Any:
    """A list view whose lists are out of order in its values (offsets go backwards)."""
    flat = pa.array([v for lst in reversed(values) if lst is not None for v in lst],
                    pa.int64())
    offsets, sizes, at = [], [], len(flat)
    for lst in values:
        n = 0 if lst is None else len(lst)
        at -= n
        offsets.append(at)
        sizes.append(n)
    mask = pa.array([lst is None for lst in values])
    cls = pa.LargeListViewArray if large else pa.ListViewArray
    return cls.from_arrays(offsets, sizes, flat, mask=mask)


ARRAYS = {
    "string_view": lambda v: pa.array(v, pa.string_view()),
    "binary_view": lambda v: pa.array([None if s is None else s.encode() for s in v],
                                      pa.binary_view()),
    "large_string": lambda v: pa.array(v, pa.large_string()),
    "large_binary": lambda v: pa.array([None if s is None else s.encode() for s in v],
                                       pa.large_binary()),
    "dictionary": lambda v: pa.array(v, pa.string()).dictionary_encode(),
    "dictionary_of_views": lambda v: pa.DictionaryArray.from_arrays(
        pa.array([None if s is None else i for i, s in enumerate(v)], pa.int32()),
        pa.array([s or "" for s in v], pa.string_view())),
    "run_end_encoded": lambda v: pc.run_end_encode(pa.array(v, pa.string())),
    "list_of_string_view": lambda v: pa.array([[s, s] if s else None for s in v],
                                              pa.list_(pa.string_view())),
    "large_list": lambda v: pa.array([[s] for s in v], pa.large_list(pa.string())),
    "fixed_size_list": lambda v: pa.array([[s, s] for s in v], pa.list_(pa.string(), 2)),
    "struct_of_views": lambda v: pa.array([{"x": s, "b": None if s is None else s.encode()}
                                           for s in v], pa.struct([("x", pa.string_view()),
                                                                   ("b", pa.binary_view())])),
}


def _expected(kind: str, v: list[Any]) -> list[Any]:
    if kind in ("binary_view", "large_binary"):
        return [None if s is None else s.encode() for s in v]
    if kind == "dictionary_of_views":
        return list(v)
    return ARRAYS[kind](v).to_pylist()


@pytest.mark.parametrize("kind", list(ARRAYS))
@pytest.mark.parametrize("values", VALUES, ids=["some_null", "all_null", "repeats"])
def test_each_arrow_type_writes_and_reads_back(tmp_path: Path, kind: str,
                                               values: list[Any]) -> None:
    col = ARRAYS[kind](values)
    table = pa.table({"c": col, "n": pa.array(range(len(values)))})
    got = _roundtrip(tmp_path, table)
    assert [r["c"] for r in got] == _expected(kind, values)
    assert [r["n"] for r in got] == list(range(len(values)))
    # the same as a RecordBatchReader (a stream) and as a RecordBatch
    got = _roundtrip(tmp_path, pa.RecordBatchReader.from_batches(table.schema,
                                                                 table.to_batches()), "r.csup")
    assert [r["c"] for r in got] == _expected(kind, values)


@pytest.mark.parametrize("large", [False, True])
def test_list_views_with_overlapping_out_of_order_lists(tmp_path: Path, large: bool) -> None:
    lists = [[1, 2], None, [], [3], [4, 5, 6]]
    lv = _list_view(lists, large)
    assert lv.to_pylist() == lists
    got = _roundtrip(tmp_path, pa.table({"l": lv}))
    assert [r["l"] for r in got] == lists
    sliced = pa.table({"l": lv.slice(1, 3)})  # an offset into the view
    assert [r["l"] for r in _roundtrip(tmp_path, sliced, "s.csup")] == lists[1:4]


def test_a_pandas_frame_of_pyarrow_strings_writes(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"s": pd.array(["a", None, "c"], dtype="string[pyarrow]")})
    assert [r["s"] for r in _roundtrip(tmp_path, df)] == ["a", None, "c"]


_text = st.none() | st.text(max_size=4)
_cells = st.recursive(
    _text,
    lambda inner: st.lists(inner, max_size=3) | st.fixed_dictionaries({"k": inner}),
    max_leaves=6)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.fixed_dictionaries({"v": _cells, "s": _text}), min_size=1,
                     max_size=6))
def test_any_polars_frame_writes_as_its_rows(tmp_path: Path, rows: list[dict[str, Any]]
                                             ) -> None:
    """Whatever polars infers for nested, nullable strings (string_view inside lists and
    structs, as polars exports them) reads back as polars' own rows."""
    try:
        df = pl.DataFrame(rows, strict=False)
    except Exception:  # a mix polars itself refuses: nothing to write
        return
    want = df.to_dicts()
    assert _roundtrip(tmp_path, df, "h.csup") == want
