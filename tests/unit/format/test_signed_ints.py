"""Signed integers are sign-and-magnitude, exactly as Zed writes them.

Zed's ``zcode/counted.go`` (``EncodeCountedVarint`` / ``DecodeCountedVarint``,
the same in every version up to SuperDB's ``scode``) stores a signed int as its
magnitude shifted left one bit with the sign in bit 0, little-endian with high
zero bytes dropped, and decodes ``u = 1`` ("minus zero") as int64's minimum.
The expected bytes below are written out by hand from that rule, never derived
from our encoder: a round trip alone cannot catch an encoding that is
consistently wrong (zig-zag round-trips perfectly and reads every negative
number in a Zed file wrong by one).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import FormatError
from csup_async.decode import decode_primitive
from csup_async.format import bsup
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.model.types import DURATION, INT8, INT16, INT32, INT64, TIME, Field, RecordType
from csup_async.model.values import Value

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# value -> the bytes Zed's EncodeCountedVarint writes for it (as an int64)
ZED_BYTES = {
    0: b"",
    1: b"\x02",
    -1: b"\x03",
    -2: b"\x05",
    63: b"\x7e",
    -64: b"\x81",
    127: b"\xfe",
    -128: b"\x01\x01",
    128: b"\x00\x01",
    -300: b"\x59\x02",
    INT64_MAX: b"\xfe" + b"\xff" * 7,
    INT64_MIN: b"\x01",
    INT64_MIN + 1: b"\xff" * 8,
}


@pytest.mark.parametrize(("value", "body"), ZED_BYTES.items())
def test_bsup_int64_bodies_are_zeds(value: int, body: bytes) -> None:
    assert bsup.encode_value(INT64, value) == body
    assert bsup.decode_primitive(INT64, body) == value


def test_narrow_types_take_their_minimum_in_one_more_byte() -> None:
    assert bsup.encode_value(INT8, -128) == b"\x01\x01"
    assert bsup.encode_value(INT8, 127) == b"\xfe"
    assert bsup.encode_value(INT16, -32768) == b"\x01\x00\x01"
    assert bsup.encode_value(INT32, -(2**31)) == b"\x01\x00\x00\x00\x01"
    for t, v in ((INT8, -128), (INT16, -32768), (INT32, -(2**31))):
        assert bsup.decode_primitive(t, bsup.encode_value(t, v)) == v


def test_time_and_duration_before_zero() -> None:
    before_epoch = np.datetime64("1969-12-31T23:59:59", "ns")  # -1e9 ns
    # 1e9 << 1 | 1 = 2_000_000_001 = 0x77359401
    assert bsup.encode_value(TIME, before_epoch) == b"\x01\x94\x35\x77"
    assert bsup.decode_primitive(TIME, b"\x01\x94\x35\x77") == before_epoch
    assert bsup.encode_value(DURATION, np.timedelta64(-1, "ns")) == b"\x03"
    assert bsup.decode_primitive(DURATION, b"\x03") == np.timedelta64(-1, "ns")


def test_a_whole_bsup_stream_from_fixed_bytes() -> None:
    # values frame (header 0x13: type values, length 3; uvarint rest 0), int64 (ID 9),
    # tag 2 (a one-byte body), body 03; then a second frame with -128; end of stream
    data = b"\x13\x00\x09\x02\x03" + b"\x14\x00\x09\x03\x01\x01" + b"\xff"
    assert [v.value for v in bsup.read_values(data)] == [-1, -128]
    assert bsup.encode_stream([(INT64, -1)]) == b"\x13\x00\x09\x02\x03\xff"


@pytest.mark.parametrize("t", [INT8, INT16, INT32])
def test_minus_zero_in_a_narrow_type_is_an_error_not_a_wrapped_value(t) -> None:
    # u = 1 is int64's minimum in Zed; it does not fit the narrower type
    with pytest.raises(FormatError, match="out of range"):
        bsup.decode_primitive(t, b"\x01")
    with pytest.raises(FormatError, match="out of range"):
        decode_primitive(t, b"\x02\x01")
    # one past the minimum's magnitude is out of range too (e.g. int8 -129)
    bits = {INT8: 8, INT16: 16, INT32: 32}[t]
    too_far = ((1 << (bits - 1)) + 1) << 1 | 1
    body = too_far.to_bytes((too_far.bit_length() + 7) // 8, "little")
    with pytest.raises(FormatError, match="out of range"):
        bsup.decode_primitive(t, body)
    with pytest.raises(FormatError, match="out of range"):
        decode_primitive(t, bytes([len(body) + 1]) + body)


def test_int64_minus_zero_reads_as_the_minimum() -> None:
    assert bsup.decode_primitive(INT64, b"\x01") == INT64_MIN
    assert decode_primitive(INT64, b"\x02\x01").values.tolist() == [INT64_MIN]


# ------------------------------------------------------------------- CSUP ---

def _csup(values, **opts) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, values, compress=False, **opts)
    return out.getvalue()


def _first_segment(data: bytes) -> bytes:
    t = find_trailer(data[-4096:], len(data))
    meta = parse_reassembly(data[t.data_size: t.data_size + t.reassembly_size], t, len(data))
    seg = meta.columns[0].fields[0].column.segmap[0]
    return data[seg.offset: seg.offset + seg.length]


COLUMN = [-1, 1, -128, INT64_MIN, INT64_MAX, 0]
COLUMN_BYTES = b"".join(bytes([len(ZED_BYTES[v]) + 1]) + ZED_BYTES[v] for v in COLUMN)


async def _read_every_way(path: Path, column: str = "v") -> list[list]:
    async with csup_async.open(str(path)) as r:
        scanned = (await r.scan([column])).to_pylist()
        rows = await r.read_rows()
        batches = []
        async for b in r.iter_batches([column], batch_rows=4):
            batches += b.to_pylist()
    return [[row[column] for row in scanned], [row[column] for row in rows],
            [row[column] for row in batches]]


async def test_csup_column_stream_holds_zeds_bytes(tmp_path: Path) -> None:
    data = _csup([{"v": v} for v in COLUMN])
    assert _first_segment(data) == COLUMN_BYTES
    p = tmp_path / "f.csup"
    p.write_bytes(data)
    for got in await _read_every_way(p):
        assert got == COLUMN


async def test_arrow_writer_writes_the_same_bytes(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    data = _csup(pa.table({"v": pa.array(COLUMN, pa.int64())}))
    assert _first_segment(data) == COLUMN_BYTES
    p = tmp_path / "f.csup"
    p.write_bytes(data)
    for got in await _read_every_way(p):
        assert got == COLUMN


async def test_a_csup_file_with_zeds_bytes_reads_as_zed_means(tmp_path: Path) -> None:
    """Patch a column's stored bytes to Zed's encoding of other values: readers follow."""
    # no statistics: the patched bytes would fail the segment's crc32 (as Zed writes: none)
    data = bytearray(_csup([{"v": v} for v in (5, 6, 7)], statistics=False))  # 0a, 0c, 0e
    seg = _first_segment(bytes(data))
    assert seg == b"\x02\x0a\x02\x0c\x02\x0e"
    at = bytes(data).index(seg)
    data[at: at + len(seg)] = b"\x02\x03\x02\x05\x02\x01"  # -1, -2, int64 min
    p = tmp_path / "zed.csup"
    p.write_bytes(bytes(data))
    for got in await _read_every_way(p):
        assert got == [-1, -2, INT64_MIN]


async def test_minus_zero_in_a_narrow_csup_column_is_a_format_error(tmp_path: Path) -> None:
    t = RecordType((Field("v", INT8),))
    data = bytearray(_csup([Value(t, {"v": -1})], statistics=False))  # patched below: no crc32
    seg = _first_segment(bytes(data))
    assert seg == b"\x02\x03"
    at = bytes(data).index(seg)
    data[at: at + 2] = b"\x02\x01"  # u = 1: int64's minimum, not an int8
    p = tmp_path / "bad.csup"
    p.write_bytes(bytes(data))
    async with csup_async.open(str(p)) as r:
        with pytest.raises(FormatError, match="out of range"):
            await r.scan(["v"])
        with pytest.raises(FormatError, match="out of range"):
            await r.read_rows()
        with pytest.raises(FormatError, match="out of range"):
            async for _ in r.iter_batches(["v"]):
                pass


async def test_narrow_minimums_survive_a_csup_round_trip(tmp_path: Path) -> None:
    t = RecordType((Field("a", INT8), Field("b", INT16), Field("c", INT32)))
    rows = [{"a": -128, "b": -32768, "c": -(2**31)}, {"a": 127, "b": 32767, "c": 2**31 - 1},
            {"a": -1, "b": -1, "c": -1}]
    p = tmp_path / "narrow.csup"
    csup_async.write(str(p), [Value(t, r) for r in rows])
    async with csup_async.open(str(p)) as r:
        assert (await r.scan()).to_pylist() == rows
        assert await r.read_rows() == rows


int64s = st.integers(INT64_MIN, INT64_MAX)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(int64s, st.sampled_from([INT64_MIN, INT64_MAX, -1, 0]))))
def test_bsup_round_trips_the_whole_int64_range(values: list[int]) -> None:
    for v in values:
        body = bsup.encode_value(INT64, v)
        assert bsup.decode_primitive(INT64, body) == v
        expect = (v << 1 if v >= 0 else ((-v) << 1) | 1) % 2**64
        assert int.from_bytes(body, "little") == expect


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(int64s, st.sampled_from([INT64_MIN, INT64_MAX, -1])), min_size=1,
                max_size=300))
async def test_csup_round_trips_the_whole_int64_range(values: list[int]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.csup"
        p.write_bytes(_csup([{"v": v} for v in values]))
        for got in await _read_every_way(p):
            assert got == values
