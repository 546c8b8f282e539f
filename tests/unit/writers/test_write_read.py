"""CSUP writer + reader end to end: exact round trips, layout, projection, bad input."""

from __future__ import annotations

import io
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import ColumnNotFoundError, CsupError, FormatError
from csup_async.format import bsup
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import NullsColumn, PrimitiveColumn, iter_segmaps
from csup_async.model.types import INT64, NULL, STRING, ArrayType, Field, RecordType
from csup_async.model.values import Value
from tests.support.paths import DATA
from tests.support.strategies import typed_values

#: About this library's own layout (its bytes, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _csup(values, **opts) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, values, **opts)
    return out.getvalue()


def _meta(data: bytes):
    t = find_trailer(data[-4096:], len(data))
    return parse_reassembly(data[t.data_size : t.data_size + t.reassembly_size], t, len(data))


async def _read_values(tmp_path: Path, data: bytes):
    p = tmp_path / "f.csup"
    p.write_bytes(data)
    async with csup_async.open(str(p)) as r:
        return await r.read_values()


def _bodies(values):
    return [(v.type, bsup.encode_value(v.type, v.value)) for v in values]


# ---------------------------------------------------------------- layout ---

def test_hello_world_layout_matches_the_seed():
    data = _csup([{"a": "hello", "b": "world"}, {"a": "goodnight", "b": "gracie"}])
    meta = _meta(data)
    assert meta.trailer.sections[0] == 31
    assert data[:31] == b"\x06hello\ngoodnight" + b"\x06world\x07gracie" + b"\x01\x01"
    col = meta.columns[0]
    assert [f.name for f in col.fields] == ["a", "b"]
    assert col.fields[0].column.segmap[0].offset == 0
    assert col.fields[1].column.segmap[0].offset == 16
    assert meta.super_column[0].offset == 29
    assert meta.row_count == 2


def test_trailer_fields_are_as_the_decisions_page_says():
    data = _csup([{"a": 1}], segment_thresh=1000, skew_thresh=5000)
    t = _meta(data).trailer
    assert (t.magic, t.type, t.version) == ("super columnar", "csup", 1)
    assert (t.segment_thresh, t.skew_thresh) == (1000, 5000)
    assert sum(t.sections) + t.size == len(data)


def test_each_column_is_contiguous_under_the_skew_threshold():
    rows = [{"a": i, "s": f"name-{i}" * 3, "f": i / 7} for i in range(20000)]
    meta = _meta(_csup(rows, segment_thresh=4096))
    for f in meta.columns[0].fields:
        segs = f.column.segmap
        assert len(segs) > 1
        assert all(a.end == b.offset for a, b in itertools.pairwise(segs))


def test_lz4_used_only_when_smaller():
    meta = _meta(_csup([{"s": "x" * 50} for _ in range(1000)] + [{"s": None}]))
    seg = meta.columns[0].fields[0].column.segmap[0]
    assert seg.compression == 1 and seg.length < seg.mem_length
    meta = _meta(_csup([{"b": bytes(np.random.default_rng(1).integers(0, 256, 64,
                                                                      dtype=np.uint8))}]))
    assert meta.columns[0].fields[0].column.segmap[0].compression == 0


def test_writer_streams_with_bounded_memory():
    class Recorder(io.RawIOBase):
        def __init__(self):
            self.chunks = []

        def writable(self):
            return True

        def write(self, b):
            self.chunks.append(len(b))
            return len(b)

    rec = Recorder()
    skew = 64 << 10
    w = csup_async.Writer(rec, segment_thresh=8 << 10, skew_thresh=skew)
    peak = 0
    rng = np.random.default_rng(5)
    for _i in range(30000):
        w.write({"i": int(rng.integers(-(2**62), 2**62)), "s": rng.bytes(12).hex()})
        peak = max(peak, w.buffered)
    set_aside = w.spilled
    w.close()
    # the data left memory while writing (into the spill file: at close each column's
    # segments are written out together), and memory stayed bounded
    assert set_aside > 200_000
    assert sum(rec.chunks) > set_aside
    assert peak <= skew + (8 << 10) * 4


def test_a_file_past_the_skew_threshold_has_each_column_in_one_range(tmp_path):
    """Flushed for memory many times, every column is still one contiguous range of the
    data section (one request to read it), and every value reads back."""
    import asyncio

    rows = [{"i": k, "s": f"v{k % 977}", "f": k / 3, "o": None if k % 5 else k}
            for k in range(40_000)]
    p = tmp_path / "x.csup"
    csup_async.write(p, rows, segment_thresh=4 << 10, skew_thresh=32 << 10)

    async def check():
        async with csup_async.open(str(p)) as r:
            assert await r.read_rows() == rows
            return r.meta

    meta = asyncio.run(check())
    runs = 0

    def walk(col):
        nonlocal runs
        for name in ("segmap", "lengths", "tags", "runs"):
            segs = getattr(col, name, None) or ()
            if len(segs) > 1:
                for a, b in itertools.pairwise(segs):
                    assert b.offset == a.offset + a.length, name
                runs += 1
        for name in ("fields", "values", "keys", "inner", "columns"):
            for child in (getattr(col, name, None) or ()) if name in ("fields", "columns") \
                    else [getattr(col, name, None)]:
                if child is None:
                    continue
                walk(getattr(child, "column", child))

    for col in meta.columns:
        walk(col)
    assert runs >= 4  # several columns had many segments, each laid out together


# ------------------------------------------------------------ round trips ---

@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(typed_values, max_size=12), st.sampled_from([64, 1 << 20]))
async def test_any_values_round_trip_exactly(tmp_path, pairs, seg):
    values = [Value(t, v) for t, v in pairs]
    data = _csup(values, segment_thresh=seg, skew_thresh=seg * 4)
    back = await _read_values(tmp_path, data)
    assert _bodies(back) == _bodies(values)


async def test_zero_rows(tmp_path):
    data = _csup([])
    meta = _meta(data)
    assert meta.super_types == () and meta.row_count == 0
    assert await _read_values(tmp_path, data) == []


async def test_nulls_at_every_level(tmp_path):
    rt = RecordType((Field("a", INT64), Field("r", RecordType((Field("x", STRING),)))))
    t = ArrayType(rt)
    values = [
        Value(t, [{"a": 1, "r": {"x": "p"}}, None, {"a": None, "r": None}]),
        Value(t, None),
        Value(t, []),
        Value(t, [None]),
        Value(rt, None),
        Value(rt, {"a": None, "r": {"x": None}}),
        Value(NULL, None),
    ]
    data = _csup(values)
    meta = _meta(data)
    assert isinstance(meta.columns[0], NullsColumn)  # a null array at the top level
    back = await _read_values(tmp_path, data)
    assert _bodies(back) == _bodies(values)


@pytest.mark.parametrize("name", ["prs.zng", "github1.zng"])
async def test_real_zed_files_survive_csup(tmp_path, name):
    raw = (DATA / name).read_bytes()
    values = bsup.read_values(raw)
    data = _csup(values)
    back = await _read_values(tmp_path, data)
    assert _bodies(back) == _bodies(values)
    p = tmp_path / "x.csup"
    p.write_bytes(data)
    async with csup_async.open(str(p)) as r:
        rows = await r.read_rows()
    assert rows == [v.to_python() for v in values]


# ------------------------------------------------------------- projection ---

async def test_projection_by_dotted_path_across_super_types(tmp_path):
    rows = [
        {"a": 1, "b": {"c": "x", "d": 1.5}},
        {"a": "two", "z": True},
        {"b": {"c": "y"}},
        {"a": 3, "b": None},
        7,
    ]
    p = tmp_path / "m.csup"
    csup_async.write(str(p), rows)
    async with await csup_async.open(str(p)) as r:
        res = await r.scan(["a", "b.c"])
        assert res.to_pylist() == [
            {"a": 1, "b.c": "x"}, {"a": "two", "b.c": None}, {"a": None, "b.c": "y"},
            {"a": 3, "b.c": None}, {"a": None, "b.c": None},
        ]
        col = res.column("b.c")
        assert col.to_pylist() == ["x", None, "y", None, None]
        with pytest.raises(ColumnNotFoundError, match="nope"):
            await r.scan(["nope"])
        plan = await r.plan(["b.c"])
        assert plan.bytes_needed > 0


async def test_scan_numpy_and_arrow(tmp_path):
    pa = pytest.importorskip("pyarrow")
    p = tmp_path / "n.csup"
    n = 5000
    csup_async.write(str(p), [{"i": i, "f": i * 0.5, "s": str(i) if i % 3 else None}
                              for i in range(n)])
    async with csup_async.open(str(p)) as r:
        res = await r.scan(["i", "f", "s"])
    np.testing.assert_array_equal(res.column("i").to_numpy(), np.arange(n))
    assert res.column("f").to_numpy().dtype == np.float64
    table = res.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == n
    assert table.column("s").null_count == len([i for i in range(n) if i % 3 == 0])


# --------------------------------------------------------------- bad input ---

def _small_file() -> bytes:
    return _csup([{"a": i, "s": ["x", None][i % 2], "u": [i, "q"]} for i in range(40)],
                 segment_thresh=64)


async def test_every_truncation_is_refused(tmp_path):
    data = _small_file()
    p = tmp_path / "t.csup"
    # 0 bytes is super main's file of no rows: read as 0 rows (tests/e2e/fuzz/test_fuzz.py)
    for cut in range(1, len(data)):
        p.write_bytes(data[:cut])
        with pytest.raises(CsupError) as ei:
            async with csup_async.open(str(p)) as r:
                await r.read_rows()
        assert str(p) in str(ei.value)


async def test_bit_flips_never_escape_as_other_errors(tmp_path):
    data = _small_file()
    want = None
    p = tmp_path / "b.csup"
    p.write_bytes(data)
    async with csup_async.open(str(p)) as r:
        want = await r.read_rows()
    rng = np.random.default_rng(3)
    for _ in range(400):
        d = bytearray(data)
        i = int(rng.integers(0, len(d)))
        d[i] ^= 1 << int(rng.integers(0, 8))
        p.write_bytes(bytes(d))
        try:
            async with csup_async.open(str(p)) as r:
                got = await r.read_rows()
        except CsupError:
            continue
        # a flip inside a value's bytes can change the value; the shape must hold
        assert len(got) == len(want)


async def test_wrong_magic_and_not_csup(tmp_path):
    p = tmp_path / "w.csup"
    # a one-value stream after bytes that are not BSUP: tried as a trailer, wrong magic
    p.write_bytes(b"\xf3" * 9 + b"\xff" + bsup.encode_stream([(INT64, 1)]))
    with pytest.raises(FormatError, match="magic"):
        await csup_async.open(str(p))
    p.write_bytes(bsup.encode_stream([(INT64, 1)]))  # a whole BSUP stream: open reads it
    async with csup_async.open(str(p)) as r:
        assert await r.read_rows() == [1]
    p.write_bytes(b"PAR1" + b"\x00" * 100)
    with pytest.raises(FormatError, match="trailer"):
        await csup_async.open(str(p))


async def test_decompression_bomb_is_refused(tmp_path):
    data = _csup([{"s": "x" * 1000}] * 100)
    meta = _meta(data)
    seg = meta.columns[0].fields[0].column.segmap[0]
    assert seg.compression == 1
    # rewrite the reassembly with a huge mem_length for that segment
    from csup_async.writers import writer as W

    big = type(seg)(seg.offset, seg.length, 3_000_000_000 & 0xFFFFFFFF, 1)
    col = meta.columns[0]
    f0 = col.fields[0]
    new = type(col)((type(f0)(f0.name, PrimitiveColumn((big,)), f0.presence),))
    out = bytearray(data[: meta.trailer.data_size])
    enc = bsup.StreamEncoder(out)
    enc.write_body(meta.super_types[0], None)
    from csup_async.format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value

    enc.write(SEGMAP_TYPE, segmap_value(meta.super_column))
    enc.write(*column_value(new))
    enc.end_stream()
    reas = len(out) - meta.trailer.data_size
    enc2 = bsup.StreamEncoder(out, compress=False)
    enc2.write(TRAILER_TYPE, {"magic": "super columnar", "type": "csup", "version": 1,
                              "sections": [meta.trailer.data_size, reas],
                              "meta": {"skew_thresh": 1, "segment_thresh": 1}})
    enc2.end_stream()
    del W
    p = tmp_path / "bomb.csup"
    p.write_bytes(bytes(out))
    # refused before anything is allocated: LZ4 cannot expand 408 bytes to 3 GB
    with pytest.raises(FormatError, match="decompress"):
        async with csup_async.open(str(p)) as r:
            await r.read_rows()


def test_segments_inside_data_section():
    meta = _meta(_small_file())
    for c in meta.columns:
        for sm in iter_segmaps(c):
            for s in sm:
                assert s.end <= meta.trailer.data_size


def test_nan_round_trip_in_columns(tmp_path):
    import asyncio

    vals = [{"f": math.nan}, {"f": 1.0}]
    back = asyncio.run(_read_values(tmp_path, _csup(vals)))
    assert math.isnan(back[0].value["f"]) and back[1].value["f"] == 1.0
