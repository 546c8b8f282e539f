"""What a SuperDB file's min/max prove of a filter over the whole file
(``scan.superdb.pruning.file_truth``, by which a Dataset and a Spark driver skip v23
files): sound against the rows themselves, for any values and comparison.

Files are written with the default target (CSUP v23, super main's layout), whose
metadata keeps each vector's min and max as super's does.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.scan.superdb.pruning import file_truth
from planner.dnf import as_expr
from planner.filters import Truth

OPS = ["==", "!=", "<", "<=", ">", ">="]
_PY = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
       "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _meta(table: pa.Table) -> Any:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.csup")
        csup_async.write(path, table)

        async def meta() -> Any:
            async with csup_async.open(path) as r:
                return r.meta

        got = asyncio.run(meta())
    assert got.version == 23
    return got


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=40),
       op=st.sampled_from(OPS), lit=st.integers(-60, 60), text=st.booleans())
def test_file_truth_is_sound(values: list[int | None], op: str, lit: int, text: bool) -> None:
    """FALSE: no row matches; TRUE: every row does (SQL: a null matches nothing)."""
    if text:  # strings: min/max of bytes, compared as text
        col = pa.array([None if v is None else f"{v + 100:03d}" for v in values])
        literal: Any = f"{lit + 100:03d}"
        expr = as_expr(f"v {op} '{literal}'")
    else:
        col = pa.array(values, pa.int64())
        literal = lit
        expr = as_expr(f"v {op} {lit}")
    truth = file_truth(_meta(pa.table({"v": col})), expr)
    matches = [v is not None and _PY[op](v, literal) for v in col.to_pylist()]
    if truth is Truth.FALSE:
        assert not any(matches)
    if truth is Truth.TRUE:
        assert all(matches)
    if None not in values:  # no null: the vector's own min/max decide
        lo, hi = min(col.to_pylist()), max(col.to_pylist())
        outside = {"==": not lo <= literal <= hi, "<": literal <= lo, ">": literal >= hi,
                   "<=": literal < lo, ">=": literal > hi}.get(op, False)
        if outside:
            assert truth is Truth.FALSE


def test_what_it_proves_and_what_it_leaves() -> None:
    meta = _meta(pa.table({"n": pa.array(range(10, 20), pa.int64()),
                           "s": pa.array([f"k{i}" for i in range(10)]),
                           "f": pa.array([0.5] * 10)}))
    assert file_truth(meta, as_expr("n >= 20")) is Truth.FALSE
    assert file_truth(meta, as_expr("n >= 10")) is Truth.TRUE
    assert file_truth(meta, as_expr("n >= 15")) is Truth.MAYBE
    assert file_truth(meta, as_expr("s < 'k0'")) is Truth.FALSE
    assert file_truth(meta, as_expr("missing == 1")) is Truth.FALSE  # null in every row
    assert file_truth(meta, as_expr("n >= 20 or s == 'k3'")) is Truth.MAYBE
    # a partition column (not in the file): no statistics, nothing proved
    assert file_truth(meta, as_expr("year == 2024"), unknown={("year",)}) is Truth.MAYBE
    # a literal of another kind than the column: bound as the reader binds it, or MAYBE
    assert file_truth(meta, as_expr("n == 'x'")) in (Truth.MAYBE, Truth.FALSE)


def test_a_nullable_column_super_main_wrote() -> None:
    """super main's own JSON input file: ``v`` is a fusion over ``int64|null``."""
    path = Path(__file__).resolve().parents[2] / "data" / "real" / "super-main" / (
        "minmax/nullable.csup")

    async def meta() -> Any:
        async with csup_async.open(str(path)) as r:
            return r.meta

    m = asyncio.run(meta())
    assert file_truth(m, as_expr("v > 5")) is Truth.FALSE
    assert file_truth(m, as_expr("v < 1")) is Truth.FALSE
    assert file_truth(m, as_expr("v >= 5")) is Truth.MAYBE
    assert file_truth(m, as_expr("v is null")) is Truth.MAYBE
