"""Segment statistics and checksums (docs/format.md, "Segment statistics and checksums").

The writer adds ``count``, ``nulls``, ``min``, ``max``, ``nan`` and ``crc32`` to
every segmap element of primitive, presence, lengths and tags columns.  Checked
here: every field against the segment's bytes, decoded value by value with the
BSUP codec (an independent path from the vectorised one that computed them);
and that a file with statistics has the same data section, the same column
tree and reads the same rows as one without.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import math
import zlib
from pathlib import Path
from typing import Any

import lz4.block
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.format.bsup import decode_value, iter_tagged, read_values
from csup_async.format.colvalue import segment_stats
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import PrimitiveColumn, RecordColumn, Segment
from csup_async.model.types import NULL, ArrayType, PrimitiveType, RecordType
from csup_async.writers.segstats import MAX_BOUND_BYTES

#: About this library's own layout (its bytes, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _csup(rows: Any, **opts: Any) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, rows, **opts)
    return out.getvalue()


def _sections(data: bytes) -> tuple[Any, bytes]:
    t = find_trailer(data[-4096:], len(data))
    return t, data[t.data_size: t.data_size + t.reassembly_size]


def _segmaps(t: Any, v: Any) -> list[tuple[Any, list[dict[str, Any]]]]:
    """Every segmap with statistics in a reassembly value: (bound type, elements)."""
    found = []
    if isinstance(t, ArrayType) and isinstance(t.elem, RecordType) and t.elem.field("count"):
        found.append((t.elem.field("min").type, v or []))
    elif isinstance(t, RecordType) and isinstance(v, dict):
        for f in t.fields:
            found += _segmaps(f.type, v.get(f.name))
    elif isinstance(t, ArrayType) and isinstance(v, list):
        for x in v:
            found += _segmaps(t.elem, x)
    elif hasattr(t, "inner"):
        found += _segmaps(t.inner, v)
    elif hasattr(t, "types") and v is not None and hasattr(v, "type"):  # a union member
        found += _segmaps(v.type, v.value)
    return found


def _expected(bound: Any, raw: bytes) -> dict[str, Any]:
    values = [None if b is None else decode_value(bound, bytes(b)) if bound != NULL else b
              for b in iter_tagged(raw, 0, len(raw))]
    present = [v for v in values if v is not None]
    out: dict[str, Any] = {"count": len(values), "nulls": len(values) - len(present),
                           "nan": any(isinstance(v, float) and math.isnan(v) for v in present)}
    if bound == NULL:
        return out
    ordered = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
    if ordered:
        out["min"], out["max"] = min(ordered), max(ordered)
    return out


def _check_file(data: bytes) -> int:
    """Check every statistic of a file; return how many segments had them."""
    _trailer, reassembly = _sections(data)
    checked = 0
    for value in read_values(reassembly):
        for bound, segmap in _segmaps(value.type, value.value):
            assert isinstance(bound, PrimitiveType)
            for el in segmap:
                stored = data[el["offset"]: el["offset"] + el["length"]]
                assert el["crc32"] == zlib.crc32(stored)
                raw = (lz4.block.decompress(stored, uncompressed_size=el["mem_length"])
                       if el["compression_format"] == 1 else stored)
                want = _expected(bound, raw)
                assert (el["count"], el["nulls"], el["nan"]) == (
                    want["count"], want["nulls"], want["nan"])
                if "min" not in want:
                    assert el["min"] is None and el["max"] is None
                elif bound.name in ("string", "bytes"):
                    lo, hi = want["min"], want["max"]
                    cut = lo.encode() if bound.name == "string" else lo
                    got = el["min"].encode() if bound.name == "string" else el["min"]
                    assert cut.startswith(got) and len(got) >= min(len(cut),
                                                                   MAX_BOUND_BYTES - 3)
                    hb = hi.encode() if bound.name == "string" else hi
                    assert el["max"] == (hi if len(hb) <= MAX_BOUND_BYTES else None)
                else:
                    assert (el["min"], el["max"]) == (want["min"], want["max"])
                checked += 1
    return checked


_rows = st.lists(st.fixed_dictionaries({
    "i": st.none() | st.integers(-(2**63), 2**63 - 1),
    "u": st.integers(0, 2**64 - 1),
    "f": st.floats() | st.none(),
    "s": st.text(max_size=90) | st.none(),
    "b": st.binary(max_size=80),
    "l": st.lists(st.none() | st.integers(-5, 5) | st.text(max_size=3), max_size=4),
    "t": st.integers(-(2**62), 2**62).map(lambda n: np.datetime64(n, "ns")),
    "ok": st.booleans(),
}), max_size=60)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(rows=_rows, seg=st.sampled_from([1, 40, 300, 1 << 22]))
def test_every_statistic_matches_the_segment_it_describes(rows: list[Any], seg: int) -> None:
    data = _csup(rows, segment_thresh=seg)
    checked = _check_file(data)
    assert checked > 0 or not rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(rows=_rows, seg=st.sampled_from([1, 300, 1 << 22]))
def test_statistics_change_only_the_metadata(rows: list[Any], seg: int) -> None:
    """Same data section and column tree, more metadata; the reader's segmap parser
    takes the extended elements (its fast path falls back to the generic decoder)."""
    with_stats = _csup(rows, segment_thresh=seg)
    without = _csup(rows, segment_thresh=seg, statistics=False)
    ts, rs = _sections(with_stats)
    tn, rn = _sections(without)
    assert with_stats[: ts.data_size] == without[: tn.data_size]
    stated = parse_reassembly(rs, ts, len(with_stats)).columns
    assert _without_stats(stated) == parse_reassembly(rn, tn, len(without)).columns
    counts = [s.count for s in _segments_of(stated)]
    assert None not in counts  # every segment states its count
    assert bool(counts) == bool(rows)
    assert not any(_segmaps(v.type, v.value) for v in read_values(rn))


def _without_stats(tree: Any) -> Any:
    """The column tree with each segment's statistics dropped."""
    if isinstance(tree, Segment):
        return Segment(tree.offset, tree.length, tree.mem_length, tree.compression)
    if isinstance(tree, tuple):
        return tuple(_without_stats(t) for t in tree)
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **{f.name: _without_stats(getattr(tree, f.name))
                                            for f in dataclasses.fields(tree)})
    return tree


def _segments_of(tree: Any) -> list[Segment]:
    if isinstance(tree, Segment):
        return [tree]
    if isinstance(tree, tuple):
        return [s for t in tree for s in _segments_of(t)]
    if dataclasses.is_dataclass(tree):
        return [s for f in dataclasses.fields(tree) for s in _segments_of(getattr(tree, f.name))]
    return []


async def _read_every_way(path: Path) -> tuple[Any, ...]:
    async with csup_async.open(str(path)) as r:
        rows = await r.read_rows()
        scanned = (await r.scan(["i", "s", "l"])).to_pylist()
        batches = []
        async for b in r.iter_batches(["i", "s", "l"], batch_rows=7):
            batches += b.to_pylist()
    return rows, scanned, batches


def test_files_with_statistics_read_the_same(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    rows = [{"i": int(x) if x % 5 else None, "s": f"v{x}" * (x % 40), "l": [int(x)] * (x % 3)}
            for x in rng.integers(0, 1000, 5000)]
    a, b = tmp_path / "a.csup", tmp_path / "b.csup"
    csup_async.write(a, rows, segment_thresh=2000)
    csup_async.write(b, rows, segment_thresh=2000, statistics=False)
    assert asyncio.run(_read_every_way(a)) == asyncio.run(_read_every_way(b))
    assert _check_file(a.read_bytes()) > 10


def test_nan_null_and_long_string_bounds() -> None:
    rows = [{"f": [float("nan"), None, -0.0], "s": ["z" * 100, "a" * 100, None]}]
    _trailer, reassembly = _sections(data := _csup(rows))
    elements = {b.name: segmap[0] for v in read_values(reassembly)
                for b, segmap in _segmaps(v.type, v.value) if segmap and b.name != "int32"}
    f, s = elements["float64"], elements["string"]
    assert (f["count"], f["nulls"], f["nan"], f["min"], f["max"]) == (3, 1, True, 0.0, 0.0)
    assert (s["count"], s["nulls"], s["min"], s["max"]) == (3, 1, "a" * MAX_BOUND_BYTES, None)
    assert _check_file(data) >= 4  # and the two lengths columns


def test_arrow_and_numpy_input_get_statistics_too() -> None:
    import pyarrow as pa

    t = pa.table({"x": pa.array([3, None, -7]), "s": pa.array([{"a": "q"}, None, {"a": "b"}]),
                  "l": pa.array([[1.5], [], None])})
    assert _check_file(_csup(t)) >= 5
    # a, t and the super column (its IDs' statistics: the file's row count)
    assert _check_file(_csup({"a": np.arange(10), "t": np.arange(10).astype("M8[s]")})) == 3


def test_reader_metadata_holds_the_written_statistics() -> None:
    """What the reader parses into its segments is what the writer computed: counts
    and checksums with the segmap, the rest decoded on demand."""
    rows = [{"n": i, "s": f"k{i:05d}", "x": i / 3} for i in range(3000)]
    data = _csup(rows, segment_thresh=1500)
    t, r = _sections(data)
    tree = parse_reassembly(r, t, len(data)).columns[0]
    assert isinstance(tree, RecordColumn)
    cols = {f.name: f for f in tree.fields}
    n_col = cols["n"].column
    assert isinstance(n_col, PrimitiveColumn)
    segs = n_col.segmap
    assert len(segs) > 1
    assert sum(s.count for s in segs) == len(rows)
    lo = hi = None
    body = data[: t.data_size]
    for seg in segs:
        st_ = segment_stats(seg)
        assert st_.crc32 == zlib.crc32(body[seg.offset:seg.end])
        assert st_.nulls == 0 and st_.min <= st_.max
        lo = st_.min if lo is None else min(lo, st_.min)
        hi = st_.max if hi is None else max(hi, st_.max)
    assert (lo, hi) == (0, 2999)
    s_stats = [segment_stats(s) for s in cols["s"].column.segmap]
    assert s_stats[0].min == "k00000" and s_stats[-1].max == "k02999"
