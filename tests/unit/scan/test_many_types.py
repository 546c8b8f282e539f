"""Files of many super types: every column a scan returns is the rows' values, whatever way
the reader takes it (a plain primitive column of every type as one group, anything else
through cursors built from the plan's legs).

The oracle is ``tests/support/reference_reader.py`` (each stream decoded value by value
with ``bsup``, rows rebuilt in Python), compared per column and row by row.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
import planner as P
from csup_async.model.errors import FormatError
from tests.support.reference_reader import reference_values

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


KINDS = ["int", "str", "float", "bool", "rec", "list"]


def _value(kind: str, draw: Any, null: float) -> Any:
    if draw(st.floats(0, 1)) < null:
        return None
    if kind == "int":
        return draw(st.integers(-(1 << 40), 1 << 40))
    if kind == "str":
        return draw(st.text(max_size=6))
    if kind == "float":
        return draw(st.floats(allow_nan=False, width=64))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "rec":  # a nested record with sparse nulls of its own
        return {"a": _value("int", draw, null), "b": _value("str", draw, null)}
    return draw(st.lists(st.integers(-5, 5), max_size=3))


@st.composite
def sparse_files(draw: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Records whose fields are null (or missing) each with their own probability:
    written without fusing, every null pattern is a super type."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=6))
    nulls = [draw(st.sampled_from([0.0, 0.05, 0.3, 0.7, 1.0])) for _ in kinds]
    missing = draw(st.sampled_from([0.0, 0.1]))
    n = draw(st.integers(1, 120))
    rows = []
    for _ in range(n):
        row = {}
        for j, (kind, null) in enumerate(zip(kinds, nulls, strict=True)):
            if missing and draw(st.floats(0, 1)) < missing:
                continue
            row[f"f{j}"] = _value(kind, draw, null)
        rows.append(row)
    paths = [f"f{j}" for j in range(len(kinds))]
    paths += [f"f{j}.{x}" for j, k in enumerate(kinds) if k == "rec" for x in ("a", "b")]
    return rows, paths


def _at(v: Any, dotted: str) -> Any:
    for name in dotted.split("."):
        if not isinstance(v, dict) or name not in v:
            return None
        v = v[name]
    return v


def _write(rows: list[Any], **opts: Any) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, rows, fuse=False, **opts)
    return out.getvalue()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(case=sparse_files(), thresh=st.sampled_from([16, 256, 1 << 20]),
       compress=st.booleans(), small_requests=st.booleans())
def test_scan_of_many_super_types_is_the_rows(tmp_path: Path, case: Any, thresh: int,
                                              compress: bool, small_requests: bool) -> None:
    rows, paths = case
    data = _write(rows, segment_thresh=thresh, compress=compress)
    want = [v.value for v in reference_values(data)]
    path = tmp_path / "m.csup"
    path.write_bytes(data)
    prof: Any = "local"
    if small_requests:  # segments cut across requests and into the tail read
        prof = dataclasses.replace(P.get_profile("local"), split_size=700, max_request=700,
                                   tail_min=0, tail_max=512, max_gap=0)

    async def go() -> None:
        async with csup_async.open(str(path), profile=prof) as r:
            have = set(P.all_paths(r.meta.super_types)) | set(P.top_level_paths(
                r.meta.super_types))
            cols = [p for p in paths if p in have]
            if not cols:
                return
            whole = await r.scan(cols)
            assert whole.num_rows == len(want)
            for c in cols:
                assert whole.column(c).to_pylist() == [_at(v, c) for v in want], c
            every = await r.scan()  # every top-level column (a missing field is null)
            for c in every.columns:
                assert every.column(c).to_pylist() == [_at(v, c) for v in want], c

    asyncio.run(go())


def _sparse(n: int) -> list[dict[str, Any]]:
    probs = [0.0, 0.3, 0.2, 0.1, 0.05]
    import numpy as np

    rng = np.random.default_rng(5)
    return [{f"f{j}": None if rng.random() < pr else (int(rng.integers(0, 1 << 30)) if j % 2
                                                      else f"s{int(rng.integers(0, 99))}")
             for j, pr in enumerate(probs)} for _ in range(n)]


def test_a_bad_segment_of_a_grouped_column_names_it(tmp_path: Path) -> None:
    """A flipped byte in one small segment of a column read as one group is a FormatError
    naming that column and segment, as a segment read alone is."""
    data = bytearray(_write(_sparse(400), compress=False))
    path = tmp_path / "bad.csup"
    path.write_bytes(data)

    async def meta() -> Any:
        async with csup_async.open(str(path)) as r:
            return r.meta

    m = asyncio.run(meta())
    assert len(m.super_types) > 5
    seg = next(fc.column.segmap[0] for col in m.columns[3:] for fc in col.fields
               if fc.name == "f2" and fc.column is not None)
    data[seg.offset] ^= 0x40
    path.write_bytes(bytes(data))

    async def go() -> None:
        async with csup_async.open(str(path)) as r:
            await r.scan(["f0", "f2"])

    with pytest.raises(FormatError, match=r'f2.*checksum mismatch'):
        asyncio.run(go())
