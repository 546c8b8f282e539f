"""BSUP codec: exact round trips of every type, real Zed files, and refusals."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csup_async import CsupError, EncodeError, FormatError, UnsupportedTypeError
from csup_async.format import bsup
from csup_async.model.types import (
    FLOAT64,
    INT8,
    INT64,
    PRIMITIVE_BY_NAME,
    STRING,
    ArrayType,
    Field,
    MapType,
    RecordType,
    UnionType,
)
from csup_async.model.values import UnionValue, Value, infer_type
from tests.support.paths import DATA
from tests.support.strategies import typed_values, types


def _reencode(values: list[Value]) -> list[bytes | None]:
    return [bsup.encode_value(v.type, v.value) for v in values]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(typed_values, min_size=1, max_size=6), st.booleans())
def test_stream_round_trip_is_exact(pairs, compress):
    bodies = [bsup.encode_value(t, v) for t, v in pairs]
    data = bsup.encode_stream(pairs, compress=compress)
    back = bsup.read_values(data)
    assert [v.type for v in back] == [t for t, _ in pairs]
    assert _reencode(back) == bodies


@settings(max_examples=200)
@given(types)
def test_type_values_round_trip(t):
    assert bsup.decode_type_value(bsup.encode_type_value(t)) == t


def test_several_streams_in_one_file():
    a = bsup.encode_stream([(INT64, 1), (STRING, "x")])
    b = bsup.encode_stream([(RecordType((Field("a", INT8),)), {"a": 3})])
    vals = bsup.read_values(a + b)
    assert [v.value for v in vals] == [1, "x", {"a": 3}]
    assert vals[2].type == RecordType((Field("a", INT8),))


def test_large_values_use_compressed_frames():
    data = bsup.encode_stream([(STRING, "abc" * 1000)] * 10)
    assert data[0] & 0x40 or any(b & 0x40 for b in data[:1])  # first frame is compressed
    assert [v.value for v in bsup.read_values(data)] == ["abc" * 1000] * 10


def test_union_tag_is_a_signed_int_like_zed():
    t = UnionType((INT64, STRING))
    body = bsup.encode_value(t, UnionValue(1, STRING, "a"))
    # tag element: length 1, byte 0x02 (1 << 1, Zed's signed encoding), then "a"
    assert body == b"\x02\x02\x02a"


def test_unsupported_types_are_refused_clearly():
    for name in ("decimal64", "float128", "float256"):
        with pytest.raises(UnsupportedTypeError, match=name):
            bsup.decode_primitive(PRIMITIVE_BY_NAME[name], b"\x01\x02")
        with pytest.raises(UnsupportedTypeError):
            bsup.encode_primitive(PRIMITIVE_BY_NAME[name], 1)


@pytest.mark.parametrize(("t", "v"), [
    (INT8, 300), (PRIMITIVE_BY_NAME["uint8"], -1), (PRIMITIVE_BY_NAME["float32"], 0.1),
    (STRING, b"x"), (RecordType((Field("a", INT64),)), {"b": 1}), (INT64, True),
])
def test_encoder_refuses_inexact_values(t, v):
    with pytest.raises(EncodeError):
        bsup.encode_value(t, v)


def test_inference_documented_mapping():
    assert infer_type(1) == INT64
    assert infer_type(1.5) == FLOAT64
    assert infer_type([1, "a", None]) == ArrayType(UnionType((INT64, STRING)))
    assert infer_type({1: "a"}) == MapType(INT64, STRING)
    assert infer_type(2**63) == PRIMITIVE_BY_NAME["uint64"]
    with pytest.raises(EncodeError):
        infer_type(2**64)
    with pytest.raises(EncodeError):
        infer_type(object())


def _prs_json_rows():
    rows = json.loads((DATA / "prs.json").read_text())
    return [r for r in rows if r]  # Zed drops the two empty objects {} of the JSON file


def test_real_zed_file_prs_agrees_with_its_json():
    vals = bsup.read_values((DATA / "prs.zng").read_bytes(), typed=False)
    rows = _prs_json_rows()
    assert len(vals) == len(rows) == 28
    time_fields = {"created_at", "updated_at", "closed_at", "merged_at"}
    for v, j in zip(vals, rows, strict=True):
        got = v.value
        # the ZNG was made without the JSON's nested base/head/_links objects
        assert set(j) - set(got) == {"base", "head", "_links"}
        assert set(got) <= set(j)
        for k in got:
            if k in time_fields:
                if j[k] is None:
                    assert got[k] is None
                else:
                    assert got[k] == np.datetime64(j[k].rstrip("Z"), "ns"), k
                    assert v.type.field(k).type == PRIMITIVE_BY_NAME["time"]
            else:
                assert got[k] == j[k], k


def test_real_zed_file_github1_round_trips_exactly():
    data = (DATA / "github1.zng").read_bytes()
    raw = list(bsup.iter_raw_values(data))
    vals = bsup.read_values(data)
    assert len(vals) == 100
    assert [bytes(b) if b is not None else None for _, b in raw] == _reencode(vals)


@pytest.mark.parametrize("name", ["prs.zng", "github1.zng"])
def test_every_truncation_of_a_real_file_is_refused(name):
    data = (DATA / name).read_bytes()
    full = len(bsup.read_values(data))
    for cut in range(0, len(data), max(1, len(data) // 400)):
        try:
            got = bsup.read_values(data[:cut])
        except CsupError:
            continue
        # a cut exactly at a frame boundary is a valid (shorter) stream
        assert len(got) < full


def test_bit_flips_give_csup_errors_only():
    data = bytearray((DATA / "prs.zng").read_bytes())
    rng = np.random.default_rng(7)
    for _ in range(300):
        d = bytearray(data)
        i = int(rng.integers(0, len(d)))
        d[i] ^= 1 << int(rng.integers(0, 8))
        with contextlib.suppress(CsupError):
            bsup.read_values(bytes(d))


@pytest.mark.parametrize("bad", [
    b"\x80", b"\x10\xff\xff\xff\xff\x0f", b"\x41\x05\x00\xff\xff\xff\x0f\x00",
    b"\x10\x01\x63\xff", b"\x00" * 3, bytes([0x00, 0x01, 0x00]) + b"\xff",
])
def test_malformed_frames(bad):
    with pytest.raises(CsupError):
        bsup.read_values(bad + b"\x10\x02\x09\x01")


def test_lz4_frame_that_lies_about_its_size():
    payload = bsup.encode_stream([(STRING, "hello world " * 50)])
    assert payload[0] & 0x40
    # rewrite the uncompressed-size uvarint to a smaller number
    hdr_len = 1
    while payload[hdr_len] & 0x80:
        hdr_len += 1
    hdr_len += 1
    bad = bytearray(payload)
    bad[hdr_len + 1] = 5  # claimed size (first uvarint byte after the format byte)
    with pytest.raises(FormatError):
        bsup.read_values(bytes(bad))


def test_types_nested_without_end_are_refused():
    t = INT64
    for _ in range(bsup.MAX_DEPTH + 5):
        t = ArrayType(t)
    out = io.BytesIO()
    enc = bsup.StreamEncoder(out)
    enc.write_body(t, None)
    enc.end_stream()
    with pytest.raises(FormatError, match="deeper"):
        bsup.read_values(out.getvalue())


def test_nan_survives():
    data = bsup.encode_stream([(FLOAT64, math.nan)])
    assert math.isnan(bsup.read_values(data)[0].value)


# ------------------------------------------- fast paths against the reference ---
def _outcome(fn, *args):
    """A call's result, or its error's type and message (what a caller can observe)."""
    try:
        return ("ok", fn(*args))
    except CsupError as e:
        return (type(e).__name__, str(e))


def _segment_value(draw_ints):
    return {"offset": draw_ints[0], "length": draw_ints[1], "mem_length": draw_ints[2],
            "compression_format": draw_ints[3]}


_seg_ints = st.one_of(
    st.tuples(st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 32) - 1),
              st.integers(0, (1 << 32) - 1), st.integers(0, 255)),
    st.integers(0, 1 << 40).flatmap(lambda o: st.integers(0, 1 << 20).map(
        lambda n: (o, n, n, 0))),  # what writers write (uncompressed)
    st.tuples(st.integers(0, 1 << 40), st.integers(1, 1 << 20), st.integers(1, 1 << 24),
              st.just(1)),  # LZ4, sometimes claiming too much
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_seg_ints, max_size=6), st.data())
def test_segmap_fast_path_matches_the_generic_decoder(rows, data):
    """Valid, semantically odd and byte-mangled segmap bodies: the fast path returns
    and refuses exactly what the generic decoder does."""
    from csup_async.format import colvalue

    body = bytearray(bsup.encode_value(colvalue.SEGMAP_TYPE,
                                       [_segment_value(r) for r in rows]))
    shape = colvalue.segmap_shape(colvalue.SEGMAP_TYPE)
    got = colvalue.segment_rows(memoryview(body), shape)  # the fast path decodes it
    assert [g[:4] for g in got] == list(rows)
    assert all(g[4:] == (None, None, None) for g in got)
    if body and data.draw(st.booleans()):  # corrupt a byte, cut or extend the body
        how = data.draw(st.sampled_from(["flip", "cut", "grow"]))
        i = data.draw(st.integers(0, len(body) - 1))
        if how == "flip":
            body[i] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del body[i:]
        else:
            body[i:i] = data.draw(st.binary(min_size=1, max_size=3))
    mv = memoryview(bytes(body))
    fast = _outcome(colvalue.parse_segmap, colvalue.SEGMAP_TYPE, mv, "segmap")
    slow = _outcome(colvalue.parse_segmap_generic, colvalue.SEGMAP_TYPE, mv, "segmap")
    assert fast == slow


@settings(max_examples=400)
@given(st.binary(max_size=40))
def test_split_tagged_matches_iter_tagged(buf):
    def reference(b):
        return [None if p is None else bytes(p) for p in bsup.iter_tagged(b, 0, len(b))]

    def fast(b):
        return [None if p is None else bytes(p) for p in bsup.split_tagged(b)]

    assert _outcome(fast, buf) == _outcome(reference, buf)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(types, min_size=1, max_size=4), st.data())
def test_typedef_memo_defines_what_parsing_does(ts, data):
    """A memoised types frame (hit or miss, intact or corrupt) defines exactly the types,
    and raises exactly the errors, of a fresh parse, in every context state."""
    enc = bsup.TypedefEncoder()
    for t in ts:
        enc.type_id(t)
    payload = bytearray(enc.pending)
    if payload and data.draw(st.booleans()):
        payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    frames = [bytes(payload)] * data.draw(st.integers(1, 2))  # a second frame: a new state

    def parse(memo: bool):
        ctx = bsup.TypeContext(memo=memo)
        for f in frames:
            ctx.parse_typedefs(memoryview(f))
        return ctx.types, ctx.depths, ctx.sizes, ctx.node_count

    reference = _outcome(parse, False)
    assert _outcome(parse, True) == reference  # a miss (or a hit from an earlier example)
    assert _outcome(parse, True) == reference  # a hit


_STATS_TYPES = st.sampled_from(["int64", "string", "float64", "bool"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_seg_ints, max_size=5), _STATS_TYPES, st.data())
def test_segmap_fast_path_skips_segment_statistics(rows, tname, data):
    """Segmaps with the statistics fields (count, nulls, min, max, nan, crc32; elements
    longer than a one-byte tag when bounds are long strings): the fast path decodes the
    segments and refuses exactly what the generic decoder refuses."""
    from csup_async.format import colvalue
    from csup_async.model.types import PRIMITIVE_BY_NAME
    from csup_async.writers.segstats import segmap_type

    ptype = PRIMITIVE_BY_NAME[tname]
    vtype = segmap_type(colvalue.SEGMENT_TYPE, ptype)
    bound = {"int64": st.integers(-(2**63), 2**63 - 1), "string": st.text(max_size=80),
             "float64": st.floats(allow_nan=False), "bool": st.booleans()}[tname]
    values = []
    for r in rows:
        v = _segment_value(r)
        v.update(count=data.draw(st.integers(0, 2**32 - 1)),
                 nulls=data.draw(st.integers(0, 2**32 - 1)),
                 min=data.draw(st.one_of(st.none(), bound)),
                 max=data.draw(st.one_of(st.none(), bound)),
                 nan=data.draw(st.booleans()), crc32=data.draw(st.integers(0, 2**32 - 1)))
        values.append(v)
    body = bytearray(bsup.encode_value(vtype, values))
    shape = colvalue.segmap_shape(vtype)
    assert shape.extra == 6
    got = colvalue.segment_rows(memoryview(body), shape)
    assert [g[:4] for g in got] == list(rows)
    # count and crc32 are read with the segment; the rest decode on demand
    assert [g[4:6] for g in got] == [(v["count"], v["crc32"]) for v in values]
    try:
        segs = colvalue.segmap_from_rows(got, shape, "segmap")
    except FormatError:  # an impossible segment (e.g. more values than bytes)
        segs = ()
    for seg, v in zip(segs, values, strict=False):
        # what the file says, even more nulls than values: planning ignores such
        # statistics (planner/bounds.py), inspect shows them
        stats = colvalue.segment_stats(seg)
        assert (stats.count, stats.nulls, stats.nan, stats.crc32) == (
            v["count"], v["nulls"], v["nan"], v["crc32"])
        assert stats.min == v["min"] and stats.max == v["max"]
    if body and data.draw(st.booleans()):
        how = data.draw(st.sampled_from(["flip", "cut", "grow"]))
        i = data.draw(st.integers(0, len(body) - 1))
        if how == "flip":
            body[i] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del body[i:]
        else:
            body[i:i] = data.draw(st.binary(min_size=1, max_size=3))
    mv = memoryview(bytes(body))
    fast = _outcome(colvalue.parse_segmap, vtype, mv, "segmap")
    slow = _outcome(colvalue.parse_segmap_generic, vtype, mv, "segmap")
    assert fast == slow
