"""pyarrow's list form of filters (``filters=[("a", ">", 3)]``) keeps exactly the rows


pyarrow keeps: checked against ``pyarrow.parquet.filters_to_expression`` on the same
rows, for generated filters, and end to end through ``read(filters=)``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from planner.dnf import as_expr, from_dnf
from planner.filters import FilterError, matches

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

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


# ----------------------------------------------- floats: NaN and signed zeros ---
# pyarrow's ``in`` is ``is_in``: a NaN is in a list holding a NaN, 0.0 and -0.0 are
# different values, and on a float32 column the literals are first rounded to float32.
# Checked through the public readers on files cut into many segments (so zones are
# pruned, or proven true, by their statistics before the rows are evaluated).

NAN = float("nan")
_SPECIAL = [NAN, 0.0, -0.0, 1.0, -1.5, 0.1, math.inf, -math.inf]


def _float_values(width: int) -> st.SearchStrategy:
    return st.one_of(st.none(), st.sampled_from(_SPECIAL), st.sampled_from(_SPECIAL),
                     st.floats(-4, 4, width=width))


@st.composite
def _float_case(draw: st.DrawFn) -> tuple[pa.DataType, list[Any], list[Any]]:
    typ, width = draw(st.sampled_from([(pa.float64(), 64), (pa.float32(), 32)]))
    runs = draw(st.lists(st.tuples(_float_values(width), st.integers(1, 9)), min_size=1,
                         max_size=12))  # runs of one value: segments of zeros, of NaN...
    xs = [x for x, n in runs for _ in range(n)]
    # literals: the specials, ints, values of the column, and floats float32 rounds
    lits = st.one_of(st.sampled_from(_SPECIAL), st.integers(-2, 2),
                     st.sampled_from([x for x in xs if x is not None] or [0.0]),
                     st.floats(-4, 4))

    def pred() -> st.SearchStrategy:
        member = st.tuples(st.just("x"), st.sampled_from(["in", "not in"]),
                           st.lists(lits, min_size=1, max_size=3).flatmap(
                               lambda vs: st.sampled_from([vs, [*vs, None]])))
        other = st.tuples(st.just("x"), st.sampled_from(["=", "!=", "<", ">="]), lits)
        return st.one_of(member, member, other)

    conj = st.lists(pred(), min_size=1, max_size=2)
    dnf = draw(conj | st.lists(conj, min_size=1, max_size=2))
    return typ, xs, dnf


def _float_table(typ: pa.DataType, xs: list[Any]) -> pa.Table:
    return pa.table({"x": pa.array(xs, typ), "i": pa.array(range(len(xs)), pa.int64())})


def _kept_by_pyarrow(table: pa.Table, dnf: list[Any]) -> list[int]:
    kept: list[int] = table.filter(pq.filters_to_expression(dnf)).column("i").to_pylist()
    return kept


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_float_case())
async def test_float_membership_keeps_what_pyarrow_keeps(tmp_path_factory: Any,
                                                         case: Any) -> None:
    typ, xs, dnf = case
    table = _float_table(typ, xs)
    want = _kept_by_pyarrow(table, dnf)
    d = tmp_path_factory.mktemp("floats")
    path = str(d / "f.csup")
    csup_async.write(path, table, segment_thresh=32)  # 4-8 values a segment
    got = [r["i"] for r in csup_async.read(path, ["i"], filters=dnf).to_pylist()]
    assert got == want, dnf
    half = len(xs) // 2  # a dataset of two files, each pruned by its own statistics
    parts = [str(d / "a.csup"), str(d / "b.csup")]
    csup_async.write(parts[0], table.slice(0, half), segment_thresh=32)
    csup_async.write(parts[1], table.slice(half), segment_thresh=32)
    got = [r["i"] for r in csup_async.read(parts, ["i"], filters=dnf).to_pylist()]
    assert got == want, dnf
    async with csup_async.open(path) as reader:
        res = await reader.scan(["i"], filters=dnf)
        assert res.column("i").to_pylist() == want
        batches = [b async for b in reader.iter_batches(["i"], batch_rows=5, filters=dnf)]
        assert [i for b in batches for i in b.column("i").to_pylist()] == want
    if typ == pa.float64():  # the row reference too (float32 literals round when bound)
        expr = from_dnf(dnf)
        assert [i for i, x in enumerate(xs) if matches(expr, {"x": x})] == want


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
@pytest.mark.parametrize(("dnf", "kept"), [
    ([("x", "in", [NAN])], [2]),              # NaN is in a list holding NaN
    ([("x", "in", [0.0])], [0]),              # 0.0 is not -0.0
    ([("x", "not in", [0.0])], [1, 2, 3, 4]),  # so -0.0 is not in [0.0]; null is kept
    ([("x", "in", [-0.0])], [1]),
    ([("x", "in", [0])], [0]),                # an int is a positive zero
    ([("x", "not in", [NAN, None])], [0, 1, 4]),
    ([("x", "=", 0.0)], [0, 1]),              # the comparisons stay IEEE, as pyarrow's
    ([("x", "!=", NAN)], [0, 1, 2, 4]),
])
def test_nan_and_signed_zeros_in_lists_as_pyarrow(tmp_path: Path, typ: pa.DataType,
                                                  dnf: list[Any], kept: list[int]) -> None:
    table = _float_table(typ, [0.0, -0.0, NAN, None, 1.0])
    assert _kept_by_pyarrow(table, dnf) == kept  # the oracle says so
    path = str(tmp_path / "z.csup")
    csup_async.write(path, table)
    assert [r["i"] for r in csup_async.read(path, ["i"], filters=dnf).to_pylist()] == kept


def test_float32_lists_are_rounded_to_float32_as_pyarrow_does(tmp_path: Path) -> None:
    table = _float_table(pa.float32(), [0.1, 0.30000001192092896, 3.4028234663852886e38,
                                        math.inf, 0.0, -0.0, 16777216.0])
    path = str(tmp_path / "f32.csup")
    csup_async.write(path, table)
    for dnf in ([("x", "in", [0.1])], [("x", "in", [0.30000001])], [("x", "in", [1e300])],
                [("x", "in", [3.4028235e38])], [("x", "in", [1e-46])], [("x", "in", [-1e-46])],
                [("x", "not in", [0.1, -1e-46])], [("x", "in", [16777216])],
                [("x", "==", 0.1)]):  # ==: pyarrow compares the float32 as a float64
        got = [r["i"] for r in csup_async.read(path, ["i"], filters=dnf).to_pylist()]
        assert got == _kept_by_pyarrow(table, dnf), dnf


async def test_zones_of_nan_and_zeros_are_judged_exactly(tmp_path: Path) -> None:
    """Statistics keep a zone holding NaN when NaN is listed, never call a zone of zeros
    true for a zero of one sign, and still prune the zones they rule out."""
    xs = [1.0] * 8 + [-0.0] * 8 + [NAN] * 8 + [0.0] * 8 + [5.0] * 8
    path = str(tmp_path / "zones.csup")
    csup_async.write(path, _float_table(pa.float64(), xs), segment_thresh=64)
    async with csup_async.open(path) as reader:
        async def zones(dnf: list[Any]) -> list[tuple[int, int, str]]:
            program = await reader.plan(["i"], filters=dnf)
            got = [(z.start, z.stop, z.truth.value) for z in program.plan.zones]
            res = await reader.scan(["i"], filters=dnf)
            kept = [i for i, x in enumerate(xs) if any(
                math.isnan(v) if math.isnan(x) else (x == v and math.copysign(1, x)
                                                     == math.copysign(1, v))
                for v in dnf[0][2])]
            if dnf[0][1] == "not in":
                kept = [i for i in range(len(xs)) if i not in kept]
            assert res.column("i").to_pylist() == kept
            return got

        assert await zones([("x", "in", [NAN])]) == [
            (0, 16, "false"), (16, 24, "maybe"), (24, 40, "false")]
        # the zones of -0.0 and of 0.0 may hold either zero: evaluated, not assumed
        assert await zones([("x", "in", [0.0])]) == [
            (0, 8, "false"), (8, 32, "maybe"), (32, 40, "false")]
        assert await zones([("x", "not in", [0.0])]) == [
            (0, 8, "true"), (8, 32, "maybe"), (32, 40, "true")]
        assert await zones([("x", "in", [5.0, 1.0])]) == [  # NaN only: no bounds, read
            (0, 8, "true"), (8, 16, "false"), (16, 24, "maybe"), (24, 32, "false"),
            (32, 40, "true")]
