"""Results reach Arrow consumers by the PyCapsule interface with to_arrow()'s table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import arrays as A
from csup_async.model.errors import FormatError, UnsupportedTypeError
from csup_async.model.types import INT64, STRING, EnumType, MapType, Type
from csup_async.model.values import Value
from csup_async.scan.result import ScanResult
from tests.support.strategies import types, values_of
from tests.unit.arrays.test_arrays import SETTINGS, typed_column

pa = pytest.importorskip("pyarrow")


def _same_table(res: ScanResult) -> None:
    want = res.to_arrow()
    got = pa.table(res)
    assert got.schema.equals(want.schema, check_metadata=True), f"{got.schema}\n!=\n{want.schema}"
    got.validate(full=True)
    # Table.equals holds NaN unequal to itself: values compare with NaN as a marker
    assert got.equals(want) or _nan_marked(got.to_pylist()) == _nan_marked(want.to_pylist())


def _nan_marked(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return "<NaN>"
    if isinstance(v, dict):
        return {k: _nan_marked(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_nan_marked(x) for x in v]
    return v


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


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.lists(types.flatmap(lambda t: st.tuples(st.just(t), values_of(t, nullable=False))),
                min_size=1, max_size=4))
def test_schema_from_metadata_is_the_scans(tmp_path: Path,
                                           rows: list[tuple[Type, Any]]) -> None:
    """``pa.schema(reader.schema)`` (no data read) is the schema of the scan's table, in
    both layouts (the default's refuses 128-bit numbers and decimals: not written)."""
    for target in ("super", "csup-async"):
        path = str(tmp_path / f"t-{target}.csup")
        try:
            csup_async.write(path, [Value(t, v) for t, v in rows], target=target)
        except UnsupportedTypeError:  # super main has no vectors for them
            continue
        with csup_async.open_sync(path) as r:
            try:
                want = r.scan().to_arrow().schema
            except UnsupportedTypeError:  # no Arrow form (a null map key): nothing to compare
                continue
            assert pa.schema(r.schema).equals(want, check_metadata=True), target
            assert pa.schema(r.arrow_schema()).equals(want, check_metadata=True), target


def test_schema_of_nested_paths_and_a_missing_one(tmp_path: Path) -> None:
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [{"a": {"b": 1, "c": "x"}}, {"a": {"b": "s"}}, {"z": [1.5]}])
    with csup_async.open_sync(path) as r:
        want = r.scan(["a.b", "z", "a.c"]).to_arrow().schema
        assert pa.schema(r.schema.arrow(["a.b", "z", "a.c"])).equals(want)
        with pytest.raises(csup_async.ColumnNotFoundError):
            r.schema.arrow(["nope"])


def test_batch_stream_reads_as_a_record_batch_reader(tmp_path: Path) -> None:
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [{"i": i, "s": None if i % 7 == 0 else f"v{i}"} for i in range(2500)])
    with csup_async.open_sync(path) as r:
        whole = r.scan().to_arrow()
        stream = r.iter_batches(batch_rows=1000)
        reader = pa.RecordBatchReader.from_stream(stream)
        assert reader.schema.equals(whole.schema)
        sizes = [b.num_rows for b in reader]
        assert sizes == [1000, 1000, 500]
        assert pa.Table.from_batches(
            list(pa.RecordBatchReader.from_stream(r.iter_batches(batch_rows=700)))).equals(whole)
        with pytest.raises(csup_async.CsupError, match="read already"):
            stream.__arrow_c_stream__()
        filtered = r.iter_batches(["s"], batch_rows=1000, filter="i >= 2400")
        assert pa.table(filtered).column("s").to_pylist() == whole.column("s").to_pylist()[2400:]


def test_to_pandas_and_to_polars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    path = str(tmp_path / "t.csup")
    rows = [{"id": i, "name": None if i == 1 else f"n{i}", "tags": ["x"] * i} for i in range(4)]
    csup_async.write(path, rows)
    res = csup_async.read(path)
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["id", "name", "tags"]
    assert df["id"].tolist() == [0, 1, 2, 3]
    assert [None if pd.isna(v) else v for v in df["name"]] == ["n0", None, "n2", "n3"]
    assert [list(v) for v in df["tags"]] == [r["tags"] for r in rows]
    frame = res.to_polars()
    assert isinstance(frame, pl.DataFrame) and frame.to_dicts() == rows
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(A.MissingDependencyError, match=r"csup-async\[pandas\]"):
        res.to_pandas()
    assert res.to_polars().to_dicts() == rows  # polars needs no pyarrow
