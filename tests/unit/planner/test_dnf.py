"""pyarrow's list form of filters (``filters=[("a", ">", 3)]``) keeps exactly the rows
pyarrow keeps: checked against ``pyarrow.parquet.filters_to_expression`` on the same
rows, for generated filters, and end to end through ``read(filters=)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from planner.dnf import as_expr, from_dnf
from planner.filters import FilterError, matches

ROWS = [{"a": a, "b": b} for a in (None, -2, 0, 1, 3, 7) for b in (None, "x", "y", "zz")]
TABLE = pa.table({"a": pa.array([r["a"] for r in ROWS], pa.int64()),
                  "b": pa.array([r["b"] for r in ROWS], pa.string())})
TABLE = TABLE.append_column("i", pa.array(range(len(ROWS)), pa.int64()))

_INTS = st.integers(-3, 8)
_STRS = st.sampled_from(["x", "y", "zz", "w"])


@st.composite
def _predicate(draw: st.DrawFn) -> tuple[str, str, Any]:
    column = draw(st.sampled_from(["a", "b"]))
    values = _INTS if column == "a" else _STRS
    op = draw(st.sampled_from(["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]))
    if op in ("in", "not in"):
        vals: list[Any] = draw(st.lists(values, min_size=1, max_size=3))
        if draw(st.booleans()):  # pyarrow types a set of nulls only as null: one value too
            vals.insert(draw(st.integers(0, len(vals))), None)
        return (column, op, vals)
    return (column, op, draw(values))


_CONJ = st.lists(_predicate(), min_size=1, max_size=3)
_DNF = _CONJ | st.lists(_CONJ, min_size=1, max_size=3)


def _pyarrow_rows(dnf: list[Any]) -> list[int]:
    kept: list[int] = TABLE.filter(pq.filters_to_expression(dnf)).column("i").to_pylist()
    return kept


@settings(max_examples=300, deadline=None)
@given(_DNF)
def test_the_list_form_keeps_what_pyarrow_keeps(dnf: list[Any]) -> None:
    expr = from_dnf(dnf)
    ours = [i for i, row in enumerate(ROWS) if matches(expr, row)]
    assert ours == _pyarrow_rows(dnf)


def test_read_with_filters_end_to_end(tmp_path: Path) -> None:
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [dict(r, i=i) for i, r in enumerate(ROWS)])
    for dnf in ([("a", ">", 0), ("b", "in", ["x", "zz"])],
                [[("a", "=", 1)], [("b", "not in", ["x", None])]],
                [("a", "not in", [0, 3])]):
        got = csup_async.read(path, ["i"], filters=dnf).to_pylist()
        assert [r["i"] for r in got] == _pyarrow_rows(dnf), dnf
        same = csup_async.read(path, ["i"], filter=dnf).to_pylist()  # filter= takes it too
        assert same == got


@pytest.mark.parametrize(("bad", "message"), [
    ([("a", "like", 1)], "unknown filter operator 'like'"),
    ([("a", "=", None)], "compares with None"),
    ([("a", ">")], r"\(column, op, value\) tuple"),
    ([], "non-empty list"),
    ([("a", "in", 3)], "takes a list, tuple or set"),
    ([[("a", "=", 1)], ("b", "=", "x")], "mixes tuples and lists"),
    ([(3, "=", 1)], "column is a field name"),
])
def test_malformed_filters_are_filter_errors(bad: list[Any], message: str) -> None:
    with pytest.raises(FilterError, match=message):
        from_dnf(bad)


def test_filter_and_filters_together_is_an_error() -> None:
    with pytest.raises(FilterError, match="not both"):
        as_expr("a = 1", [("a", "=", 1)])


def test_a_tuple_column_is_a_nested_path() -> None:
    expr = from_dnf([(("user", "id"), ">=", 2)])
    assert matches(expr, {"user": {"id": 3}}) and not matches(expr, {"user": {"id": 1}})


def test_a_bad_list_names_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "named.csup")
    csup_async.write(path, [{"a": 1}])
    with pytest.raises(FilterError, match="'like'") as err:
        csup_async.read(path, filters=[("a", "like", 1)])
    assert err.value.path == path
