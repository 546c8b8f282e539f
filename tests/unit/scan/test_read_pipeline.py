"""The read pipeline (csup_async/read) against a plain per-stream reference reader.

Every sink of the one pipeline (``scan``, ``iter_batches``, ``read_values``,
``count_rows``, ``execute``) must give exactly what ``tests/support/reference_reader.py``
gives (each stream decoded value by value with ``bsup``, rows rebuilt in
Python): random typed values of random types, several super types, nested
records, small segments (so values arrive across many segments and requests),
compressed or not, and segments cut across requests and the tail read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
import planner as P
from csup_async.format import bsup
from csup_async.model.errors import CsupError, FormatError, LimitError
from csup_async.model.values import Value
from tests.support.reference_reader import reference_values
from tests.support.strategies import typed_values

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


pa = pytest.importorskip("pyarrow")


def _encoded(values: list[Value]) -> list[tuple[Any, bytes | None]]:
    return [(v.type, bsup.encode_value(v.type, v.value)) for v in values]


def _write(values: list[Value], **opts: Any) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, values, **opts)
    return out.getvalue()


def _arrays_repr(results: list[Any], paths: list[str]) -> dict[str, str]:
    return {p: repr([v for r in results for v in r.column(p).to_pylist(typed=True)])
            for p in paths}


async def _all_paths(path: str, batch_rows: int) -> tuple[list[Value], Any, list[Any], int]:
    async with csup_async.open(path) as r:
        values = await r.read_values()
        whole = await r.scan()
        batches = [b async for b in r.iter_batches(batch_rows=batch_rows)]
        count = await r.count_rows()
    return values, whole, batches, count


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(typed_values, min_size=1, max_size=40),
       thresh=st.sampled_from([16, 64, 4096]), compress=st.booleans(),
       batch_rows=st.integers(1, 17))
def test_every_sink_matches_the_reference(tmp_path: Path, rows: list[tuple[Any, Any]],
                                          thresh: int, compress: bool,
                                          batch_rows: int) -> None:
    values = [Value(t, v) for t, v in rows]
    data = _write(values, segment_thresh=thresh, compress=compress)
    want = reference_values(data)
    assert _encoded(want) == _encoded(values)  # the reference itself reads what was written
    path = tmp_path / "t.csup"
    path.write_bytes(data)
    got, whole, batches, count = asyncio.run(_all_paths(str(path), batch_rows))
    assert _encoded(got) == _encoded(want)
    assert count == whole.num_rows == len(want) == sum(b.num_rows for b in batches)
    paths = list(whole.columns)
    assert _arrays_repr(batches, paths) == _arrays_repr([whole], paths)


def _nested_rows(n: int, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for i in range(n):
        k = int(rng.integers(0, 4))
        if k == 0:
            out.append({"id": i, "r": {"x": int(rng.integers(-9, 9)), "s": f"s{i}" * (i % 4)},
                        "l": [i, None, i * 2][: i % 4]})
        elif k == 1:
            out.append({"id": str(i), "r": None, "m": {"deep": {"v": float(i)}}})
        elif k == 2:
            out.append({"id": i, "r": {"x": None, "s": None}, "m": {"deep": None}})
        else:
            out.append(None if i % 7 == 0 else [i, "x"])
    return out


@pytest.mark.parametrize("compress", [False, True])
def test_nested_paths_several_types(tmp_path: Path, compress: bool) -> None:
    rows = _nested_rows(3000, 5)
    data = _write(rows, segment_thresh=512, compress=compress, fuse=False)
    path = tmp_path / "n.csup"
    path.write_bytes(data)
    want = reference_values(data)

    def at(v: Any, dotted: str) -> Any:
        for name in dotted.split("."):
            if not isinstance(v, dict) or name not in v:
                return None
            v = v[name]
        return v

    async def go() -> None:
        async with csup_async.open(str(path)) as r:
            for cols in (["r.x", "m.deep.v", "id"], ["l"], ["r.s", "r"]):
                whole = await r.scan(cols)
                for c in cols:
                    assert whole.column(c).to_pylist() == [at(v.value, c) for v in want], c
                batches = [b async for b in r.iter_batches(cols, batch_rows=333)]
                assert _arrays_repr(batches, cols) == _arrays_repr([whole], cols)

    asyncio.run(go())


@pytest.mark.parametrize("spread", [False, True], ids=["split", "spread"])
def test_segments_cut_across_requests(tmp_path: Path, spread: bool) -> None:
    """Segments whose bytes arrive in pieces from several requests (and partly from the
    tail read) are joined exactly: tiny request caps, or one wave spread down to 1 KiB."""
    rng = np.random.default_rng(7)
    rows = [{"s": "x" * int(rng.integers(0, 300)), "i": int(rng.integers(-2**40, 2**40)),
             "blob": bytes(rng.integers(0, 256, int(rng.integers(0, 50)), dtype=np.uint8))}
            for _ in range(3000)]
    data = _write(rows, segment_thresh=1 << 20, compress=False)
    path = tmp_path / "p.csup"
    path.write_bytes(data)
    want = [v.value for v in reference_values(data)]
    base = P.get_profile("local")
    if spread:
        prof = dataclasses.replace(base, concurrency=16, min_part=1024, tail_min=0,
                                   tail_max=2048, max_gap=0)
    else:
        prof = dataclasses.replace(base, split_size=3000, max_request=3000, tail_min=0,
                                   tail_max=2048, max_gap=0)

    async def go() -> None:
        async with csup_async.open(str(path), profile=prof) as r:
            plan = await r.plan(["s", "i", "blob"])
            assert any(p.segment.length > p.length for q in plan.requests for p in q.pieces)
            got = await r.scan(["s", "i", "blob"])
            assert got.to_pylist() == want
            again = await r.execute(plan, ["s", "i", "blob"])
            assert again.to_pylist() == want
            rows_b = []
            async for b in r.iter_batches(["s", "i", "blob"], batch_rows=1000):
                rows_b += b.to_pylist()
            assert rows_b == want

    asyncio.run(go())


def test_many_super_types_read_in_small_requests_match_the_rows(tmp_path: Path) -> None:
    """Sparse-null records of dozens of super types, read through small requests: the
    segments wholly inside one request (served as views of its buffer) and those cut
    across requests or into the tail read give the written rows, as the fused file does."""
    rng = np.random.default_rng(25)
    probs = [0.0, 0.3, 0.2, 0.1, 0.05, 0.02]
    rows = [{f"f{j}": None if rng.random() < pr else (int(rng.integers(0, 1 << 30)) if j % 2
                                                      else "s" * int(rng.integers(0, 40)))
             for j, pr in enumerate(probs)} for _ in range(4000)]
    path = tmp_path / "many.csup"
    path.write_bytes(_write(rows, fuse=False, segment_thresh=4096))
    prof = dataclasses.replace(P.get_profile("local"), split_size=6000, max_request=6000,
                               tail_min=0, tail_max=2048, max_gap=0)
    cols = [f"f{j}" for j in range(len(probs))]

    async def go() -> None:
        async with csup_async.open(str(path), profile=prof) as r:
            assert len(r.meta.super_types) > 10
            plan = await r.plan(cols)
            pieces = [p for q in plan.requests for p in q.pieces]
            assert any(p.segment.length > p.length for p in pieces)  # cut segments
            assert any(p.segment.length == p.length for p in pieces)  # whole ones
            got = await r.scan(cols)
            assert got.to_pylist() == rows
            batches = []
            async for b in r.iter_batches(cols, batch_rows=700):
                batches += b.to_pylist()
            assert batches == rows

    asyncio.run(go())


def test_stats_count_requests_and_bytes(tmp_path: Path) -> None:
    path = str(tmp_path / "s.csup")
    csup_async.write(path, [{"a": i, "s": str(i)} for i in range(50_000)],
                     segment_thresh=1 << 16)

    async def go() -> None:
        prof = dataclasses.replace(P.get_profile("local"), tail_min=0, tail_max=1024)
        async with csup_async.open(path, profile=prof) as r:
            plan = await r.plan(["a"])
            res = await r.scan(["a"])
            assert res.stats.requests == plan.request_count
            assert res.stats.bytes_read == plan.bytes_to_read
            assert res.stats.bytes_needed == plan.bytes_needed
            assert res.plan is plan or res.plan == plan

    asyncio.run(go())


_CORRUPT_I64 = [
    bytes([3, 2, 0]) * 3000 + bytes([10]) + b"\x00" * 9,  # a 9-byte int64
    bytes([3, 2, 0]) * 3000 + bytes([5, 1]),  # cut off
    bytes([3, 2, 0]) * 3000 + bytes([0x80] * 11),  # a tag longer than 64 bits
]


@pytest.mark.parametrize("case", range(len(_CORRUPT_I64)))
def test_corrupt_segment_is_a_format_error_naming_the_path(tmp_path: Path, case: int) -> None:
    stream = _CORRUPT_I64[case]
    path = tmp_path / "c.csup"
    csup_async.write(str(path), [{"v": 1}] * 10_000, compress=False)

    async def seg() -> Any:
        async with csup_async.open(str(path)) as r:
            return r.meta.columns[0].field("v").column.segmap[0]

    s = asyncio.run(seg())
    raw = bytearray(path.read_bytes())
    raw[s.offset: s.offset + s.length] = stream.rjust(s.length, b"\x00")[-s.length:]
    path.write_bytes(bytes(raw))

    async def go() -> None:
        async with csup_async.open(str(path)) as r:
            # batches of 1,000 rows decode in the read thread, of 5,000 in the pool
            for read in (lambda: r.scan(["v"]), r.read_rows, lambda: _drain(r, ["v"]),
                         lambda: _drain(r, ["v"], 5000)):
                with pytest.raises(FormatError) as e:
                    await read()
                assert e.value.path == str(path)

    asyncio.run(go())


async def _drain(r: Any, cols: list[str] | None = None, batch_rows: int = 1000) -> list[Any]:
    return [b async for b in r.iter_batches(cols, batch_rows=batch_rows)]


def test_row_cap_binds_every_path(tmp_path: Path) -> None:
    path = str(tmp_path / "r.csup")
    csup_async.write(path, [{"a": i} for i in range(100)])

    async def go() -> None:
        async with csup_async.open(path, max_rows=10) as r:
            for read in (lambda: r.scan(["a"]), r.read_rows, lambda: _drain(r, ["a"], 5)):
                with pytest.raises(LimitError, match="max_rows"):
                    await read()

    asyncio.run(go())


def test_values_cap_binds_batches_as_scan(tmp_path: Path) -> None:
    """max_values counts every value a read hands out, whole or in batches."""
    path = str(tmp_path / "v.csup")
    csup_async.write(path, [{"a": i, "b": [i] * 3} for i in range(100)])

    async def go() -> None:
        async with csup_async.open(path, max_values=300) as r:
            with pytest.raises(LimitError, match="max_values"):
                await r.scan()
            with pytest.raises(LimitError, match="max_values"):
                await _drain(r, None, 7)
        async with csup_async.open(path, max_values=700) as r:
            assert (await r.scan()).num_rows == 100
            assert sum(b.num_rows for b in await _drain(r, None, 7)) == 100

    asyncio.run(go())


def test_bad_batch_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "b.csup")
    csup_async.write(path, [{"a": 1}])

    async def go() -> None:
        async with csup_async.open(path) as r:
            with pytest.raises(CsupError):
                await _drain(r, ["a"], 0)

    asyncio.run(go())

