"""csup_async.parallel gives exactly what the reference path gives, with and without numba.

``Reader.scan`` sends flat projections to :func:`parallel.try_scan` (segments
decoded in a thread pool as they land, numba loops when loaded); the
reference is ``Reader._scan_assembled`` with the loops off (decode.py's numpy
decoders only).  Cases: random flat tables (nulls, long strings with
multi-byte tags, unicode, small and large segments, compressed or not),
corrupt streams, which must raise the same FormatError through the loops as
through decode.py, and the promise that a small scan never imports numba.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import decode as D
from csup_async import parallel
from csup_async.errors import CsupError, FormatError, LimitError
from csup_async.types import PRIMITIVE_BY_NAME

pa = pytest.importorskip("pyarrow")

HAS_NUMBA = parallel.numba_available(wait=True)
_LOADED = parallel._kernels


@pytest.fixture(params=[True, False], ids=["numba", "numpy"])
def loops(request: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """The loops on (for every stream size, so small test streams use them) or off."""
    if request.param:
        if not HAS_NUMBA:
            pytest.skip("numba is not installed")
        monkeypatch.setattr(parallel, "_kernels", _LOADED)
        monkeypatch.setattr(parallel, "_LOADED_MIN_BYTES", 0)
    else:
        monkeypatch.setattr(parallel, "_kernels", False)
    yield request.param


def _table(rng: np.random.Generator, n: int) -> Any:
    def mask(rate: float) -> np.ndarray | None:
        return rng.random(n) < rate if rate else None

    words = ["a", "ünï", "", "x" * 200, "日本語", "long " * 40]
    return pa.table({
        "i": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64), mask=mask(0.1)),
        "small": pa.array(rng.integers(-5, 5, n).astype(np.int8)),
        "u": pa.array(rng.integers(0, 2**64 - 1, n, dtype=np.uint64), mask=mask(0.5)),
        "f": pa.array(rng.standard_normal(n), mask=mask(0.2)),
        "b": pa.array(rng.random(n) < 0.5, mask=mask(0.3)),
        "s": pa.array([words[k] for k in rng.integers(0, len(words), n)], pa.string(),
                      mask=mask(0.05)),  # typed: an all-masked list infers `null`
        "t": pa.array(rng.integers(0, 2**62, n).astype("datetime64[ns]")),
        "blob": pa.array([bytes(rng.integers(0, 256, k, dtype=np.uint8))
                          for k in rng.integers(0, 300, n)]),
        "empty": pa.nulls(n, pa.int64()),
    })


async def _both(path: str, columns: list[str] | None) -> tuple[Any, Any]:
    async with csup_async.open(path) as r:
        got = await parallel.try_scan(r, columns)
    saved = parallel._kernels
    parallel._set(False)
    try:
        async with csup_async.open(path) as r:
            want = await r._scan_assembled(columns)
    finally:
        parallel._set(saved)
    return got, want


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3000),
       thresh=st.sampled_from([64, 4096, 1 << 20]), compress=st.booleans())
def test_flat_scan_matches_reference(loops: bool, tmp_path: Path, seed: int, n: int,
                                     thresh: int, compress: bool) -> None:
    rng = np.random.default_rng(seed)
    path = str(tmp_path / "t.csup")
    csup_async.write(path, _table(rng, n), segment_thresh=thresh, compress=compress)
    for cols in (None, ["s", "i"], ["empty", "b", "t"], ["blob", "u", "small", "f"]):
        got, want = asyncio.run(_both(path, cols))
        assert got is not None, "a flat projection must take the parallel path"
        assert got.to_arrow().equals(want.to_arrow()), cols
        assert got.num_rows == want.num_rows
        assert list(got.columns) == list(want.columns)
        for k in ("requests", "bytes_read", "bytes_needed", "metadata_requests"):
            assert getattr(got.stats, k) == getattr(want.stats, k), k
        assert got.plan.requests == want.plan.requests


def test_scan_uses_parallel_only_when_flat(tmp_path: Path) -> None:
    path = str(tmp_path / "n.csup")
    csup_async.write(path, [{"a": 1, "r": {"x": "s"}}, {"a": 2, "r": {"x": "t"}}])

    async def go() -> None:
        async with csup_async.open(path) as r:
            assert await parallel.try_scan(r, ["r.x"]) is None  # nested path
            assert await parallel.try_scan(r, ["r"]) is None  # a record column
            assert (await parallel.try_scan(r, ["a"])).to_pylist() == [{"a": 1}, {"a": 2}]
            assert (await r.scan(["a", "r.x"])).to_pylist() == [
                {"a": 1, "r.x": "s"}, {"a": 2, "r.x": "t"}]

    asyncio.run(go())


def test_multi_type_file_is_not_flat(tmp_path: Path) -> None:
    path = str(tmp_path / "m.csup")
    csup_async.write(path, [{"a": 1}, {"a": "x", "b": True}])

    async def go() -> None:
        async with csup_async.open(path) as r:
            assert await parallel.try_scan(r, ["a"]) is None
            assert (await r.scan(["a"])).to_pylist() == [{"a": 1}, {"a": "x"}]

    asyncio.run(go())


_I64, _STR = PRIMITIVE_BY_NAME["int64"], PRIMITIVE_BY_NAME["string"]
_GOOD = bytes([3, 2, 0]) * 3000
_CORRUPT = [
    (_I64, _GOOD + bytes([10]) + b"\x00" * 9),  # a 9-byte int64
    (_I64, _GOOD + bytes([5, 1])),  # cut off
    (_STR, bytes([4]) + b"abc" + bytes([3, 0xFF, 0xFE]) + bytes([2, 65]) * 4000),  # not UTF-8
    (_I64, _GOOD + bytes([0x80] * 11)),  # a tag longer than 64 bits
]


@pytest.mark.parametrize("case", range(len(_CORRUPT)))
def test_corrupt_stream_same_error(loops: bool, case: int) -> None:
    ptype, stream = _CORRUPT[case]
    with pytest.raises(FormatError) as ref:
        D.decode_primitive(ptype, stream)
    with pytest.raises(FormatError) as got:
        parallel.decode_primitive(ptype, stream)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("case", range(len(_CORRUPT)))
def test_corrupt_segment_in_file_names_the_path(loops: bool, tmp_path: Path, case: int) -> None:
    """A corrupt data segment read through try_scan raises the reference's error, with the path."""
    ptype, stream = _CORRUPT[case]
    path = tmp_path / "c.csup"
    n = 10_000
    rows = ([{"v": 1}] * n) if ptype == _I64 else ([{"v": "x"}] * n)
    csup_async.write(str(path), rows, compress=False)

    async def seg() -> Any:
        async with csup_async.open(str(path)) as r:
            return r.meta.columns[0].field("v").column.segmap[0]

    s = asyncio.run(seg())
    raw = bytearray(path.read_bytes())
    if len(stream) > s.length:
        pytest.skip("corrupt stream longer than the segment it replaces")
    raw[s.offset: s.offset + s.length] = stream.rjust(s.length, b"\x00")  # fault at the end
    path.write_bytes(bytes(raw))

    async def scan(fast: bool) -> CsupError:
        async with csup_async.open(str(path)) as r:
            with pytest.raises(CsupError) as e:
                if fast:
                    await r.scan(["v"])
                else:
                    await r._scan_assembled(["v"])
            return e.value

    got, want = asyncio.run(scan(True)), asyncio.run(scan(False))
    # the fast path decodes each segment without knowing its column's count, so it
    # may notice a different fault first (a cut-off value, not extra bytes): both
    # are FormatErrors naming the object
    assert isinstance(got, FormatError) and isinstance(want, FormatError)
    assert got.path == want.path == str(path)


def test_row_cap_is_the_reference_limit_error(tmp_path: Path) -> None:
    path = str(tmp_path / "r.csup")
    csup_async.write(path, [{"a": i} for i in range(100)])

    async def go() -> None:
        async with csup_async.open(path, max_rows=10) as r:
            assert await parallel.try_scan(r, ["a"]) is None
            with pytest.raises(LimitError, match="max_rows"):
                await r.scan(["a"])

    asyncio.run(go())


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=500))
def test_decode_int32s_and_ints_match(loops: bool, values: list[int | None]) -> None:
    stream = bytearray()
    for v in values:
        if v is None:
            stream.append(0)
            continue
        z = (v << 1) if v >= 0 else ((-v) << 1) | 1  # Zed's sign and magnitude
        body = z.to_bytes(8, "little").rstrip(b"\0")
        stream.append(len(body) + 1)
        stream += body
    want = D.decode_primitive(_I64, bytes(stream))
    got = parallel.decode_primitive(_I64, bytes(stream))
    np.testing.assert_array_equal(got.values, want.values)
    assert (got.validity is None) == (want.validity is None)
    if want.validity is not None:
        np.testing.assert_array_equal(got.validity, want.validity)
    if None not in values:
        np.testing.assert_array_equal(parallel.decode_int32s(bytes(stream)),
                                      D.decode_int32s(bytes(stream)))


def test_small_scan_does_not_import_numba(tmp_path: Path) -> None:
    """The import and a small scan stay light: numba is loaded only for big streams."""
    path = tmp_path / "small.csup"
    code = (
        "import asyncio, sys, csup_async\n"
        f"csup_async.write({str(path)!r}, [{{'i': i, 's': str(i)}} for i in range(5000)])\n"
        "async def m():\n"
        f"    async with csup_async.open({str(path)!r}) as r:\n"
        "        await r.scan(['i', 's'])\n"
        "        await r.scan()\n"
        "        async for _ in r.iter_batches(['s']):\n"
        "            pass\n"
        "asyncio.run(m())\n"
        "print('numba' in sys.modules, 'llvmlite' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["False", "False"]


def test_numba_can_be_turned_off() -> None:
    code = ("import os; os.environ['CSUP_ASYNC_NUMBA'] = '0'\n"
            "import sys; from csup_async import parallel\n"
            "print(parallel.numba_available(wait=True), 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("spread", [False, True], ids=["split", "spread"])
def test_segments_cut_across_requests(loops: bool, tmp_path: Path, spread: bool) -> None:
    """Segments whose bytes arrive in pieces from several requests (and partly from the
    tail read) are joined exactly: tiny request caps, or one wave spread down to 1 KiB."""
    import dataclasses

    import planner as P

    rng = np.random.default_rng(7)
    path = str(tmp_path / "p.csup")
    csup_async.write(path, _table(rng, 3000), segment_thresh=1 << 20, compress=False)
    base = P.get_profile("local")
    if spread:
        prof = dataclasses.replace(base, concurrency=16, min_part=1024, tail_min=0,
                                   tail_max=2048, max_gap=0)
    else:
        prof = dataclasses.replace(base, split_size=3000, max_request=3000, tail_min=0,
                                   tail_max=2048, max_gap=0)

    async def go() -> None:
        async with csup_async.open(path, profile=prof) as r:
            plan = await r.plan(["s", "i", "blob"])
            assert any(p.segment.length > p.length for q in plan.requests for p in q.pieces)
            got = await parallel.try_scan(r, ["s", "i", "blob"])
            want = await r._scan_assembled(["s", "i", "blob"])
        assert got is not None and got.to_arrow().equals(want.to_arrow())

    asyncio.run(go())
