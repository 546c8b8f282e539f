"""The writer's input paths against the per-value path they replace.

``csup_async.write`` shreds Python rows in chunks (:mod:`csup_async.writers.pyrows`)
and Arrow tables and numpy columns a column at a time
(:mod:`csup_async.writers.arrow_write`); ``Writer.write`` of each value is the
reference.  For the same input and options they must write the same bytes:
segment cuts, skew flushes, presence runs and super IDs included.
"""

from __future__ import annotations

import ast
import datetime as dt
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.values import Value
from csup_async.writers.writer import Writer

#: About this library's own layout (its bytes, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


PKG = Path(csup_async.__file__).resolve().parent / "writers"


def _per_value(rows: list[Any], **opts: Any) -> bytes:
    out = io.BytesIO()
    w = Writer(out, **opts)
    for r in rows:
        w.write(r)
    w.close()
    return out.getvalue()


def _written(data: Any, **opts: Any) -> bytes:
    """``csup_async.write`` with exact per-row types (fusing has its own tests,
    tests/unit/writers/test_fuse.py)."""
    out = io.BytesIO()
    csup_async.write(out, data, fuse=False, **opts)
    return out.getvalue()


# Values the chunked path shreds, and some it must hand to the per-value path
# (ints beyond int64, datetimes, sets, maps, mixed lists, Values).
_names = st.sampled_from(["a", "b", "c", "user", "ts", "x.y", ""])
_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(),
    st.text(max_size=12), st.binary(max_size=12),
    st.integers(-(2**40), 2**40).map(lambda n: np.datetime64(n, "us")),
    st.integers(-(2**40), 2**40).map(lambda n: np.timedelta64(n, "ms")),
    st.integers(-(2**62), 2**62).map(np.int64), st.floats().map(np.float64),
    st.booleans().map(np.bool_),
)
_odd = st.one_of(
    st.integers(2**63, 2**64 - 1),
    st.just(dt.datetime(2024, 1, 2, 3, 4, 5)),
    st.frozensets(st.integers(0, 3), max_size=2),
    st.dictionaries(st.integers(0, 3), st.integers(0, 3), max_size=2),
    st.lists(st.one_of(st.integers(0, 9), st.text(max_size=2)), min_size=2, max_size=3),
    st.just(Value(csup_async.model.types.PRIMITIVE_BY_NAME["int8"], 5)),
)


def _values(odd: bool) -> st.SearchStrategy[Any]:
    leaves = st.one_of(_leaves, _odd) if odd else _leaves
    return st.recursive(leaves, lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(_names, kids, max_size=4),
    ), max_leaves=10)


def _rows(odd: bool) -> st.SearchStrategy[list[Any]]:
    shapes = st.lists(st.dictionaries(_names, _values(odd), max_size=5), min_size=1,
                      max_size=4)
    return shapes.flatmap(lambda protos: st.lists(
        st.sampled_from(protos) | st.dictionaries(_names, _values(odd), max_size=3)
        | _values(odd), max_size=80))


_options = st.fixed_dictionaries({
    "segment_thresh": st.sampled_from([1, 7, 64, 500, 1 << 22]),
    "skew_thresh": st.sampled_from([1, 100, 3000, 1 << 26]),
    "compress": st.booleans(),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(rows=_rows(odd=False), opts=_options)
def test_python_rows_write_the_per_value_bytes(rows: list[Any], opts: dict[str, Any]) -> None:
    assert _written(rows, **opts) == _per_value(rows, **opts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(rows=_rows(odd=True), opts=_options)
def test_rows_the_chunks_cannot_take_still_write_the_same_bytes(
        rows: list[Any], opts: dict[str, Any]) -> None:
    try:
        expected = _per_value(rows, **opts)
    except csup_async.EncodeError:
        with pytest.raises(csup_async.EncodeError):
            _written(rows, **opts)
        return
    assert _written(rows, **opts) == expected


def test_large_mixed_input_falls_back_only_where_it_must(monkeypatch) -> None:
    """A chunk with one odd row: the rest of it is still shredded in bulk, the bytes
    are the per-value path's, and skew flushes land on the same rows."""
    rows: list[Any] = [{"i": i, "s": f"v{i % 7}", "l": [i] * (i % 3), "n": None}
                       for i in range(20_000)]
    rows[12_345] = {"i": 2**63, "s": "big", "l": [], "n": None}  # uint64: per value
    rows[15_000] = {"i": 1, "s": "mixed", "l": [1, "x"], "n": None}  # a union
    calls = []
    real = Writer.write

    def counting(self: Writer, v: Any) -> None:
        calls.append(v)
        real(self, v)

    opts = {"segment_thresh": 4096, "skew_thresh": 50_000}
    expected = _per_value(rows, **opts)
    monkeypatch.setattr(Writer, "write", counting)
    assert _written(rows, **opts) == expected
    assert 2 <= len(calls) <= 2 * 256  # two small pieces went value by value


def test_demo_events_write_the_per_value_bytes() -> None:
    from csup_async.cli.demo import sample_rows

    rows = sample_rows(3000)
    for opts in ({}, {"segment_thresh": 2000, "skew_thresh": 20_000}):
        assert _written(rows, **opts) == _per_value(rows, **opts)


# ----------------------------------------------------------------- Arrow ---
pa = pytest.importorskip("pyarrow")


def _arrow_per_value(table: Any, **opts: Any) -> bytes:
    from csup_async.writers.arrow_input import arrow_values

    return _per_value(list(arrow_values(table)), **opts)


_arrow_types = st.recursive(
    st.sampled_from([pa.int64(), pa.int8(), pa.uint32(), pa.float64(), pa.float32(),
                     pa.string(), pa.binary(), pa.bool_(), pa.timestamp("ms"),
                     pa.duration("us"), pa.null()]),
    lambda kids: st.one_of(
        kids.map(pa.list_), kids.map(pa.large_list),
        st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), kids), min_size=1, max_size=3,
                 unique_by=lambda f: f[0]).map(lambda fs: pa.struct(list(fs)))),
    max_leaves=5)


def _arrow_value(t: Any) -> st.SearchStrategy[Any]:
    if pa.types.is_null(t):
        return st.none()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = st.lists(_arrow_value(t.value_type), max_size=3)
    elif pa.types.is_struct(t):
        inner = st.fixed_dictionaries({f.name: _arrow_value(f.type) for f in t})
    elif pa.types.is_integer(t):
        bits = t.bit_width
        lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(t)
                  else (0, (1 << bits) - 1))
        inner = st.integers(lo, hi)
    elif pa.types.is_floating(t):
        inner = st.floats(width=t.bit_width)
    elif pa.types.is_string(t):
        inner = st.text(max_size=6)
    elif pa.types.is_binary(t):
        inner = st.binary(max_size=6)
    elif pa.types.is_boolean(t):
        inner = st.booleans()
    else:
        inner = st.integers(-(2**40), 2**40).map(
            lambda n, t=t: np.datetime64(n, "ms") if pa.types.is_timestamp(t)
            else np.timedelta64(n, "us"))
    return st.none() | inner


@st.composite
def _nested_tables(draw: st.DrawFn) -> Any:
    n = draw(st.integers(0, 60))
    cols = {}
    for i, t in enumerate(draw(st.lists(_arrow_types, min_size=1, max_size=3))):
        cols[f"c{i}"] = pa.array(draw(st.lists(_arrow_value(t), min_size=n, max_size=n)), t)
    return pa.table(cols)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(table=_nested_tables(), opts=_options)
def test_nested_arrow_writes_the_per_value_bytes(table: Any, opts: dict[str, Any]) -> None:
    from csup_async.writers.arrow_write import fast_writer

    assert fast_writer(table) is not None
    assert _written(table, **opts) == _arrow_per_value(table, **opts)


def test_sliced_and_multi_batch_nested_arrow() -> None:
    t = pa.table({"s": pa.array([{"x": i, "l": list(range(i % 4))} if i % 5 else None
                                 for i in range(3000)]),
                  "ts": pa.array(np.arange(3000).astype("datetime64[s]"))})
    parts = t.slice(7, 2000).to_batches(max_chunksize=333)
    reader = pa.RecordBatchReader.from_batches(t.schema, parts)
    opts = {"segment_thresh": 300, "skew_thresh": 4000}
    assert _written(reader, **opts) == _arrow_per_value(t.slice(7, 2000), **opts)


# ------------------------------------------------------------ structure ---

def _imports(module: str) -> list[tuple[str, list[str]]]:
    tree = ast.parse((PKG / f"{module}.py").read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            out.append((node.module or "", [a.name for a in node.names]))
    return out


def test_the_writer_core_imports_no_input_adapter() -> None:
    """writer.py is the core: the adapters import it, never the other way round."""
    adapters = {"arrow_write", "arrow_input", "pyrows", "writing", "inputs"}
    assert not [m for m, _ in _imports("writer") if m in adapters]
    for adapter in ("arrow_write", "pyrows", "writing", "arrow_input"):
        private = [(m, n) for m, names in _imports(adapter) for n in names
                   if n.startswith("_")]
        assert not private, f"{adapter} imports private names {private}"
