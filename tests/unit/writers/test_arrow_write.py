"""The vectorised Arrow/numpy writer against the value-by-value path it replaces.

The regular writer is the reference: for any table both must write the same
bytes, skew flushes included (both check the threshold every
``SKEW_CHECK_ROWS`` rows), and read back the same values.
"""

from __future__ import annotations

import asyncio
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

import csup_async  # noqa: E402
from csup_async.writers.arrow_input import arrow_values  # noqa: E402
from csup_async.writers.arrow_write import fast_writer  # noqa: E402
from csup_async.writers.writer import Writer  # noqa: E402

#: About this library's own layout (its bytes, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _int(bits: int, signed: bool) -> st.SearchStrategy[int]:
    if signed:
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return st.integers(0, (1 << bits) - 1)


# (Arrow type, value strategy, post-processing of the Python values into an Arrow array)
COLUMN_KINDS: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    **{f"int{b}": (getattr(pa, f"int{b}")(), _int(b, True)) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (getattr(pa, f"uint{b}")(), _int(b, False)) for b in (8, 16, 32, 64)},
    "float16": (pa.float16(), st.floats(width=16)),
    "float32": (pa.float32(), st.floats(width=32)),
    "float64": (pa.float64(), st.floats()),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.text(max_size=200)),
    "large_string": (pa.large_string(), st.text(max_size=20)),
    "binary": (pa.binary(), st.binary(max_size=140)),
    "fixed_binary": (pa.binary(3), st.binary(min_size=3, max_size=3)),
    "timestamp": (pa.timestamp("us", tz="UTC"), st.integers(-(2**53), 2**53)),
    "duration": (pa.duration("ms"), st.integers(-(2**40), 2**40)),
    "date": (pa.date32(), st.integers(-100_000, 100_000)),
    "dict": (pa.string(), st.sampled_from(["a", "bb", "ccc", ""])),
    "null": (pa.null(), st.none()),
}


def _array(kind: str, values: list[Any]) -> Any:
    typ, _ = COLUMN_KINDS[kind]
    if kind in ("timestamp", "duration", "date"):
        storage = pa.int32() if kind == "date" else pa.int64()
        return pa.array(values, storage).cast(typ)
    if kind == "float16":
        return pa.array(np.array([0.0 if v is None else v for v in values], np.float16),
                        mask=np.array([v is None for v in values], bool))
    arr = pa.array(values, typ)
    return arr.dictionary_encode() if kind == "dict" else arr


@st.composite
def tables(draw: st.DrawFn) -> Any:
    n = draw(st.integers(0, 120))
    kinds = draw(st.lists(st.sampled_from(sorted(COLUMN_KINDS)), min_size=1, max_size=5))
    cols = {}
    for i, kind in enumerate(kinds):
        null_rate = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0]))
        strat = COLUMN_KINDS[kind][1]
        nulls = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
        values = [None if r < null_rate else draw(strat) for r in nulls]
        cols[f"c{i}_{kind}"] = _array(kind, values)
    return pa.table(cols) if cols else pa.table({})


def _slow(table: Any, **opts: Any) -> bytes:
    out = io.BytesIO()
    w = Writer(out, **opts)
    for v in arrow_values(table):
        w.write(v)
    w.close()
    return out.getvalue()


def _fast(data: Any, **opts: Any) -> bytes:
    assert fast_writer(data) is not None, "the vectorised path was not taken"
    out = io.BytesIO()
    csup_async.write(out, data, **opts)
    return out.getvalue()


def _norm(v: Any) -> Any:
    """Comparable form: NaN equals NaN (payloads aside), times and floats by bits."""
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("f", np.float64(v).tobytes())
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return ("t", int(v.astype(np.int64)))
    if hasattr(v, "type") and hasattr(v, "value"):  # Value
        return (str(v.type), _norm(v.value))
    return v


def _read(data: bytes, tmp: Path, name: str) -> list[Any]:
    p = tmp / name
    p.write_bytes(data)

    async def go() -> list[Any]:
        async with csup_async.open(str(p)) as r:
            return await r.read_values()

    return [_norm(v) for v in asyncio.run(go())]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(table=tables(), seg=st.integers(1, 600), skew=st.integers(1, 5000),
       compress=st.booleans())
def test_same_values_as_python_path(tmp_path: Path, table: Any, seg: int, skew: int,
                                    compress: bool) -> None:
    opts = {"segment_thresh": seg, "skew_thresh": skew, "compress": compress}
    fast = _fast(table, **opts)
    slow = _slow(table, **opts)
    assert fast == slow
    assert _read(fast, tmp_path, "fast.csup") == _read(slow, tmp_path, "slow.csup")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table=tables(), seg=st.integers(1, 600), compress=st.booleans())
def test_same_bytes_without_skew_flush(table: Any, seg: int, compress: bool) -> None:
    opts = {"segment_thresh": seg, "skew_thresh": 1 << 40, "compress": compress}
    assert _fast(table, **opts) == _slow(table, **opts)


def test_batches_and_large_segments(tmp_path: Path) -> None:
    """Several record batches, segments cut across batches, runs spanning batches."""
    rng = np.random.default_rng(5)
    n = 150_000
    t = pa.table({
        "i": pa.array(rng.integers(-(2**62), 2**62, n), mask=rng.random(n) < 0.05),
        "s": pa.array([str(x) for x in rng.integers(0, 10**9, n)], mask=np.arange(n) > 140_000),
        "f": rng.standard_normal(n),
    })
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=40_000))
    opts = {"segment_thresh": 50_000, "skew_thresh": 1 << 40}
    assert _fast(reader, **opts) == _slow(t, **opts)
    opts["skew_thresh"] = 300_000
    assert _read(_fast(t, **opts), tmp_path, "a.csup") == _read(_slow(t, **opts), tmp_path,
                                                                 "b.csup")


def test_numpy_columns_match_arrow(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 5000
    ints = rng.integers(-1000, 1000, n)
    mask = rng.random(n) < 0.2
    cols = {"i": np.ma.MaskedArray(ints, mask=mask), "f": rng.random(n).astype(np.float32),
            "u": rng.integers(0, 255, n).astype(np.uint8), "b": rng.random(n) < 0.5,
            "t": rng.integers(0, 10**12, n).astype("datetime64[ms]")}
    table = pa.table({"i": pa.array(ints, mask=mask), "f": cols["f"], "u": cols["u"],
                      "b": cols["b"], "t": pa.array(cols["t"])})
    assert _fast(cols) == _fast(table)


def test_zero_rows_and_all_null(tmp_path: Path) -> None:
    empty = pa.table({"a": pa.array([], pa.int64())})
    assert _fast(empty) == _slow(empty)
    allnull = pa.table({"a": pa.array([None] * 10, pa.int64()), "b": pa.nulls(10)})
    assert _fast(allnull) == _slow(allnull)


def test_nested_columns_take_the_vectorised_path(tmp_path: Path) -> None:
    t = pa.table({"l": pa.array([[1, 2], None, [], [None, 3]]),
                  "s": pa.array([{"x": 1, "y": [1]}, None, {"x": 3, "y": None},
                                 {"x": None, "y": [None]}]),
                  "ls": pa.array([[{"a": "x"}, None], [], None, [{"a": None}]]),
                  "i": pa.array([1, None, 3, 4])})
    assert _fast(t) == _slow(t)
    assert _read(_fast(t), tmp_path, "n.csup") == _read(_slow(t), tmp_path, "m.csup")


def test_maps_fall_back(tmp_path: Path) -> None:
    t = pa.table({"m": pa.array([[("b", 1), ("a", 2)], None], pa.map_(pa.string(), pa.int64())),
                  "i": pa.array([1, None])})
    assert fast_writer(t) is None
    out = io.BytesIO()
    csup_async.write(out, t)
    assert out.getvalue() == _slow(t)


def test_path_destination(tmp_path: Path) -> None:
    t = pa.table({"a": [1, 2, 3], "s": ["x", None, "z"]})
    p = tmp_path / "t.csup"
    assert csup_async.write(str(p), t) == 3
    assert p.read_bytes() == _slow(t)
    assert not list(tmp_path.glob("*.tmp-*"))


def test_parquet_rows_take_the_vectorised_path(tmp_path: Path) -> None:
    """``write(dest, parquet_values(path))`` (the CLI's convert) encodes whole batches,
    and a nested Parquet file still goes value by value, none of its rows lost."""
    import pyarrow.parquet as pq

    from csup_async.writers.arrow_input import parquet_values

    flat = pa.table({"a": pa.array([1, None, 3]), "s": ["x", "y", None]})
    nested = pa.table({"l": pa.array([[1], None, [2, 3]]), "i": [1, 2, 3]})
    for name, t in (("flat", flat), ("nested", nested)):
        src = tmp_path / f"{name}.parquet"
        pq.write_table(t, str(src), row_group_size=2)
        out = io.BytesIO()
        assert csup_async.write(out, parquet_values(str(src))) == 3
        assert _read(out.getvalue(), tmp_path, f"{name}.csup") == _read(
            _slow(t), tmp_path, f"{name}-ref.csup")
