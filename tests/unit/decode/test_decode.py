"""Tests of the column decoders against a tiny reference encoder/scanner.

Every test runs twice: with the C kernels (when built) and with the numpy
implementation.  For numpy, streams shorter than ``decode.scan.SERIAL_BELOW``
take the serial path; the "big" tests build longer ones so that the lockstep
lanes, their fallbacks and their restarts are exercised too.  Tests of the
lanes themselves (``numpy_only``) run once.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import struct

import lz4.block
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csup_async import decode as D
from csup_async.decode import kernels as K
from csup_async.decode import scan as S
from csup_async.format.meta import Segment
from csup_async.model.errors import (
    CsupError,
    FormatError,
    LimitError,
    TruncatedError,
    UnsupportedTypeError,
)
from csup_async.model.types import PRIMITIVE_BY_NAME

BIG = S.SERIAL_BELOW  # streams at least this long use the lanes


NATIVE = K.native_module()


@pytest.fixture(autouse=True, params=["native", "numpy"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each test with the C kernels and with numpy; numpy's speculative path
    is strict, to surface its bugs instead of its silent serial fallback."""
    if request.param == "native":
        if NATIVE is None:
            pytest.skip("the C kernels are not built (or CSUP_ASYNC_NATIVE=0)")
        if request.node.get_closest_marker("numpy_only"):
            pytest.skip("a test of the numpy scanner")
    monkeypatch.setattr(K, "_K", NATIVE if request.param == "native" else None)
    monkeypatch.setattr(S, "_STRICT", True)

# ------------------------------------------------------- reference codec ---


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tagged(body: bytes | None) -> bytes:
    return b"\x00" if body is None else uvarint(len(body) + 1) + body


def zed_signed(v: int) -> int:
    """Zed's EncodeCountedVarint before the byte cut: sign and magnitude, mod 2**64."""
    return ((v << 1) if v >= 0 else ((-v) << 1) | 1) & (2**64 - 1)


def uint_bytes(u: int) -> bytes:
    return u.to_bytes((u.bit_length() + 7) // 8, "little")


def enc_ints(values: list[int | None], signed: bool) -> bytes:
    return b"".join(tagged(None if v is None else uint_bytes(zed_signed(v) if signed else v))
                    for v in values)


def enc_floats(values: list[float | None], width: int) -> bytes:
    fmt = {2: "<e", 4: "<f", 8: "<d"}[width]
    return b"".join(tagged(None if v is None else struct.pack(fmt, v)) for v in values)


def enc_bools(values: list[bool | None]) -> bytes:
    return b"".join(tagged(None if v is None else bytes([v])) for v in values)


def enc_bin(values: list[bytes | None]) -> bytes:
    return b"".join(tagged(v) for v in values)


def ref_scan(data: bytes) -> list[tuple[int, int]] | None:
    """(body offset, length or -1) of each value; None if the stream is not valid."""
    out, pos, n = [], 0, len(data)
    while pos < n:
        t, shift, nb = 0, 0, 0
        while True:
            if pos >= n or nb == 10:
                return None
            b = data[pos]
            pos += 1
            nb += 1
            t |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        if t == 0:
            out.append((pos, -1))
        else:
            if pos + t - 1 > n:
                return None
            out.append((pos, t - 1))
            pos += t - 1
    return out


def assert_scan_matches(data: bytes, count: int | None = None) -> None:
    ref = ref_scan(data)
    if ref is not None and (count is None or count == len(ref)):
        starts, lengths = D.scan_tags(data, count)
        assert starts.dtype == np.int64 and lengths.dtype == np.int64
        assert list(zip(starts.tolist(), lengths.tolist(), strict=True)) == ref
    else:
        with pytest.raises(FormatError):
            D.scan_tags(data, count)


INT_RANGES = {(signed, bits): ((-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed
                               else (0, 2**bits - 1))
              for signed in (True, False) for bits in (8, 16, 32, 64)}


def int_values(signed: bool, bits: int) -> st.SearchStrategy[list[int | None]]:
    lo, hi = INT_RANGES[signed, bits]
    edge = st.sampled_from([lo, hi, 0, min(hi, 1), max(lo, -1), lo + 1, hi - 1])
    return st.lists(st.none() | st.integers(lo, hi) | edge, max_size=60)


def check_ints(values: list[int | None], signed: bool, bits: int, data: bytes) -> None:
    got, validity = D.decode_ints(data, len(values), signed=signed, bits=bits)
    assert got.dtype == (np.int64 if signed else np.uint64)
    assert got.tolist() == [0 if v is None else v for v in values]
    if any(v is None for v in values):
        assert validity is not None
        assert validity.tolist() == [v is not None for v in values]
    else:
        assert validity is None


# ------------------------------------------------------------- integers ---


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("bits", [8, 16, 32, 64])
@settings(deadline=None)  # timing varies on shared machines
@given(data=st.data())
def test_ints_round_trip(signed: bool, bits: int, data: st.DataObject) -> None:
    values = data.draw(int_values(signed, bits))
    check_ints(values, signed, bits, enc_ints(values, signed))


@pytest.mark.parametrize(("signed", "bits"), sorted(INT_RANGES))
def test_int_boundaries(signed: bool, bits: int) -> None:
    lo, hi = INT_RANGES[signed, bits]
    values: list[int | None] = [lo, hi, 0, None, hi - 1, lo + 1]
    if signed:
        values += [-1, 1]
    check_ints(values, signed, bits, enc_ints(values, signed))


def test_int64_extremes_decode_from_zeds_bytes() -> None:
    # Zed's EncodeCountedVarint: -1 -> 03, 2**63-1 -> fe ff.. (8 bytes), -2**63 -> 01
    data = b"\x02\x03\x09" + b"\xfe" + b"\xff" * 7 + b"\x02\x01"
    assert enc_ints([-1, 2**63 - 1, -(2**63)], True) == data
    got, _ = D.decode_ints(data, signed=True)
    assert got.tolist() == [-1, 2**63 - 1, -(2**63)]


def test_empty_streams() -> None:
    for fn in (lambda b, c: D.decode_ints(b, c, signed=True),
               lambda b, c: D.decode_floats(b, c, width=8),
               D.decode_bools, D.decode_varbinary, D.decode_int32s, D.scan_tags):
        out = fn(b"", 0)
        first = out[0] if isinstance(out, tuple) else out
        assert len(first) in (0, 1)  # varbinary offsets are [0]
        with pytest.raises(FormatError, match="expected 1 values"):
            fn(b"", 1)
        fn(b"", None)


@pytest.mark.parametrize(("bits", "body"), [(8, b"\x01\x02\x03"), (16, b"\x01" * 4),
                                            (32, b"\x01" * 6), (64, b"\x01" * 9)])
def test_int_too_long(bits: int, body: bytes) -> None:
    data = enc_ints([1, 2], True) + tagged(body)
    with pytest.raises(FormatError, match=rf"int{bits} value of {len(body)} bytes "
                                          rf"at stream offset 4"):
        D.decode_ints(data, signed=True, bits=bits)


def test_unsupported_int_width() -> None:
    with pytest.raises(UnsupportedTypeError):
        D.decode_ints(b"", signed=True, bits=128)


# ---------------------------------------------------------------- floats ---


@pytest.mark.parametrize("width", [2, 4, 8])
@settings(deadline=None)  # timing varies on shared machines
@given(data=st.data())
def test_floats_round_trip(width: int, data: st.DataObject) -> None:
    fl = st.floats(width=16 * (width // 2) if width < 8 else 64, allow_nan=True)
    values = data.draw(st.lists(st.none() | fl, max_size=50))
    got, validity = D.decode_floats(enc_floats(values, width), len(values), width=width)
    dt = {2: np.float16, 4: np.float32, 8: np.float64}[width]
    assert got.dtype == dt and got.flags.c_contiguous
    want = np.array([0.0 if v is None else v for v in values], dtype=dt)
    assert got.view(f"u{width}").tolist() == want.view(f"u{width}").tolist()
    assert (validity is None) == all(v is not None for v in values)
    if validity is not None:
        assert validity.tolist() == [v is not None for v in values]


def test_float_wrong_width() -> None:
    data = enc_floats([1.0], 8) + tagged(b"\x00" * 4)
    with pytest.raises(FormatError, match="float64 value of 4 bytes at stream offset 9"):
        D.decode_floats(data, width=8)
    with pytest.raises(FormatError, match="float32 value of 0 bytes"):
        D.decode_floats(b"\x01", width=4)


def test_float_fast_path_is_exact_and_checked() -> None:
    values = np.random.default_rng(1).standard_normal(3000)
    data = b"".join(b"\x09" + struct.pack("<d", v) for v in values)
    got, validity = D.decode_floats(data, 3000, width=8)
    assert validity is None and np.array_equal(got, values)
    broken = bytearray(data)
    broken[9 * 2000] = 5  # one tag says 4 bytes: no longer a constant stride
    with pytest.raises(FormatError):
        D.decode_floats(bytes(broken), 3000, width=8)
    with pytest.raises(FormatError, match="expected 2999 values"):
        D.decode_floats(data, 2999, width=8)


# ----------------------------------------------------------------- bools ---


@settings(deadline=None)  # timing varies on shared machines
@given(st.lists(st.none() | st.booleans(), max_size=80))
def test_bools_round_trip(values: list[bool | None]) -> None:
    got, validity = D.decode_bools(enc_bools(values), len(values))
    assert got.dtype == bool
    assert got.tolist() == [bool(v) for v in values]
    assert (validity is None) == all(v is not None for v in values)


@pytest.mark.parametrize("data", [b"\x02\x02", b"\x02\x01\x02\xff", b"\x00\x02\x07"])
def test_bools_reject_other_bytes(data: bytes) -> None:
    with pytest.raises(FormatError, match="bool value"):
        D.decode_bools(data)


def test_bools_reject_wide_values() -> None:
    with pytest.raises(FormatError, match="bool value of 2 bytes at stream offset 2"):
        D.decode_bools(b"\x02\x01\x03\x00\x01")


# ------------------------------------------------------ strings and bytes ---

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
long_texts = st.text(min_size=120, max_size=400)


@settings(deadline=None)  # timing varies on shared machines
@given(st.lists(st.none() | texts | long_texts, max_size=30))
def test_strings_round_trip(values: list[str | None]) -> None:
    raw = [None if v is None else v.encode() for v in values]
    dec = D.decode_primitive(PRIMITIVE_BY_NAME["string"], enc_bin(raw), len(values))
    assert dec.offsets is not None and dec.offsets.dtype == np.int64
    assert dec.values.dtype == np.uint8
    out = [dec.values[a:b].tobytes().decode()
           for a, b in zip(dec.offsets[:-1], dec.offsets[1:], strict=True)]
    assert out == ["" if v is None else v for v in values]
    assert (dec.validity is None) == all(v is not None for v in values)


@settings(deadline=None)  # timing varies on shared machines
@given(st.lists(st.none() | st.binary(max_size=300), max_size=30))
def test_bytes_round_trip(values: list[bytes | None]) -> None:
    offsets, data, validity = D.decode_varbinary(enc_bin(values), len(values))
    assert offsets[0] == 0 and offsets.size == len(values) + 1
    assert data.tobytes() == b"".join(v or b"" for v in values)
    assert [data[a:b].tobytes() for a, b in itertools.pairwise(offsets)] == \
        [v or b"" for v in values]
    if validity is not None:
        assert validity.tolist() == [v is not None for v in values]


@pytest.mark.parametrize("size", [126, 127, 128, 16383, 16384, 70000])
def test_multibyte_tags(size: int) -> None:
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    data = enc_bin([b"x", body, None, b"yz"])
    assert len(uvarint(size + 1)) == (1 if size < 127 else 2 if size < 16383 else 3)
    offsets, got, _ = D.decode_varbinary(data, 4)
    assert offsets.tolist() == [0, 1, 1 + size, 1 + size, 3 + size]
    assert got.tobytes() == b"x" + body + b"yz"


def test_utf8_validation() -> None:
    good = ["héllo", "", "日本", "🙂"]
    offsets, data, _ = D.decode_varbinary(enc_bin([s.encode() for s in good]))
    D.validate_utf8(offsets, data)
    bad = [b"ok", b"caf\xc3", b"\xa9"]  # "é" split across two values: invalid each
    offsets, data, _ = D.decode_varbinary(enc_bin(bad))
    assert data.tobytes() == b"okcaf\xc3\xa9"  # valid as a whole
    with pytest.raises(FormatError, match="string value 2"):
        D.validate_utf8(offsets, data)
    offsets, data, _ = D.decode_varbinary(enc_bin([b"a", b"b\xffc"]))
    with pytest.raises(FormatError, match=r"string value 1 is not valid UTF-8"):
        D.validate_utf8(offsets, data)
    with pytest.raises(FormatError):
        D.decode_primitive(PRIMITIVE_BY_NAME["string"], enc_bin([b"\xed\xa0\x80"]))
    # bytes are not validated
    D.decode_primitive(PRIMITIVE_BY_NAME["bytes"], enc_bin([b"\xff"]))


# -------------------------------------------------------------- int32s ---


@settings(deadline=None)  # timing varies on shared machines
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=60))
def test_int32s_round_trip(values: list[int]) -> None:
    got = D.decode_int32s(enc_ints(values, True), len(values))
    assert got.dtype == np.int32 and got.tolist() == values


def test_int32s_reject_nulls_and_wide_values() -> None:
    with pytest.raises(FormatError, match="null at stream offset 2"):
        D.decode_int32s(enc_ints([1, None], True))
    with pytest.raises(FormatError, match="int32 value 2147483648 out of range at stream "
                                          "offset 2"):
        D.decode_int32s(enc_ints([1, 2**31], True))
    with pytest.raises(FormatError, match="int32 value of 6 bytes at stream offset 2"):
        D.decode_int32s(enc_ints([1, 2**40], True))
    with pytest.raises(FormatError, match="int32 value -9223372036854775808 out of range"):
        D.decode_int32s(b"\x02\x01")  # u = 1, Zed's int64 minimum


# ------------------------------------------------- scanning and structure ---


@settings(deadline=None)  # timing varies on shared machines
@given(st.binary(max_size=64))
def test_scan_matches_reference_on_any_bytes(data: bytes) -> None:
    assert_scan_matches(data)


def test_truncation_at_every_byte() -> None:
    data = enc_bin([b"abc", None, b"", b"x" * 200, b"q"])
    bounds = {0}
    for start, length in ref_scan(data) or []:
        bounds.add(start + max(length, 0))
    for cut in range(len(data) + 1):
        if cut in bounds:
            starts, _ = D.scan_tags(data[:cut])
            assert all(s <= cut for s in starts.tolist())
        else:
            with pytest.raises(TruncatedError):
                D.scan_tags(data[:cut])
            with pytest.raises(TruncatedError):
                D.decode_varbinary(data[:cut])


def test_count_mismatch_messages() -> None:
    data = enc_ints([1, 2, 3], True)
    with pytest.raises(FormatError, match="expected 4 values, the stream holds 3"):
        D.decode_ints(data, 4, signed=True)
    with pytest.raises(FormatError, match="expected 2 values, but 2 bytes follow"):
        D.decode_ints(data, 2, signed=True)
    with pytest.raises(FormatError, match="expected 2 values"):
        D.scan_tags(data + b"\x7f", 2)  # trailing garbage after the counted values
    with pytest.raises(FormatError):
        D.scan_tags(data, -1)


def test_tag_errors() -> None:
    with pytest.raises(FormatError, match="longer than 10 bytes"):
        D.scan_tags(b"\x80" * 11 + b"\x01")
    with pytest.raises(TruncatedError, match="cut by the end"):
        D.scan_tags(b"\x01\x80\x80")
    with pytest.raises(TruncatedError, match="value 1 at stream offset 1 claims 9 bytes"):
        D.scan_tags(b"\x01\x0a\x00")
    with pytest.raises(TruncatedError):
        D.scan_tags(b"\xff" * 9 + b"\x01")  # a 10-byte tag claiming ~2**63 bytes


def test_presence_to_validity() -> None:
    runs = np.array([2, 1, 0, 3, 1], np.int32)
    assert D.presence_to_validity(runs, 7).tolist() == [True, True, False, False, False,
                                                        False, True]
    assert D.presence_to_validity(np.array([0, 2, 1], np.int32), 3).tolist() == \
        [False, False, True]
    assert D.presence_to_validity(np.zeros(0, np.int32), 0).tolist() == []
    with pytest.raises(FormatError, match="sum to 6, expected 7"):
        D.presence_to_validity(np.array([2, 4], np.int32), 7)
    with pytest.raises(FormatError, match="negative"):
        D.presence_to_validity(np.array([2, -1, 6], np.int32), 7)


@settings(deadline=None)  # timing varies on shared machines
@given(st.lists(st.integers(0, 50), max_size=30), st.integers(0, 70))
def test_presence_round_trip(runs: list[int], extra: int) -> None:
    total = sum(runs)
    got = D.presence_to_validity(np.array(runs, np.int32), total)
    want = [i % 2 == 0 for i, r in enumerate(runs) for _ in range(r)]
    assert got.tolist() == want
    if extra:
        with pytest.raises(FormatError):
            D.presence_to_validity(np.array(runs, np.int32), total + extra)


def test_lengths_to_offsets() -> None:
    assert D.lengths_to_offsets(np.array([3, 0, 2], np.int32)).tolist() == [0, 3, 3, 5]
    assert D.lengths_to_offsets(np.zeros(0, np.int32)).tolist() == [0]
    with pytest.raises(FormatError, match="length 1 is -2"):
        D.lengths_to_offsets(np.array([3, -2], np.int32))
    with pytest.raises(LimitError, match="add up to 5"):
        D.lengths_to_offsets(np.array([3, 2], np.int32), max_total=4)
    big = np.full(4, 2**31 - 1, np.int32)
    assert D.lengths_to_offsets(big)[-1] == 4 * (2**31 - 1)  # no int32 overflow


# ---------------------------------------------------------------- segments ---


def seg(raw: bytes, mem: int, comp: int) -> Segment:
    return Segment(offset=100, length=len(raw), mem_length=mem, compression=comp)


def test_decompress_segment() -> None:
    data = enc_ints(list(range(1000)), True)
    packed = lz4.block.compress(data, store_size=False)
    assert bytes(D.decompress_segment(packed, seg(packed, len(data), 1))) == data
    assert D.decompress_segment(memoryview(data), seg(data, len(data), 0)).tobytes() == data
    assert bytes(D.decompress_segment(bytearray(packed), seg(packed, len(data), 1))) == data


def test_decompress_segment_rejects() -> None:
    data = b"abc" * 1000
    packed = lz4.block.compress(data, store_size=False)
    with pytest.raises(LimitError, match="max_mem_length"):
        D.decompress_segment(packed, seg(packed, 1 << 40, 1))  # a bomb
    with pytest.raises(LimitError):
        D.decompress_segment(packed, seg(packed, len(data), 1), max_mem_length=len(data) - 1)
    assert len(D.decompress_segment(packed, seg(packed, len(data), 1),
                                    max_mem_length=len(data))) == len(data)
    with pytest.raises(FormatError, match="cannot decompress to"):
        D.decompress_segment(packed, seg(packed, 100 << 20, 1))
    with pytest.raises(FormatError, match="decompressed to 3000 bytes"):
        D.decompress_segment(packed, seg(packed, len(data) + 10, 1))  # lies, too big
    with pytest.raises(FormatError, match="corrupt LZ4"):
        D.decompress_segment(packed, seg(packed, len(data) - 10, 1))  # lies, too small
    with pytest.raises(FormatError, match="corrupt LZ4"):
        D.decompress_segment(b"\xff" * 20, seg(b"\xff" * 20, 3000, 1))
    with pytest.raises(FormatError, match="unknown compression format 2"):
        D.decompress_segment(packed, seg(packed, len(data), 2))
    with pytest.raises(TruncatedError):
        D.decompress_segment(packed[:-1], seg(packed, len(data), 1))
    with pytest.raises(FormatError):
        D.decompress_segment(packed + b"x", seg(packed, len(data), 1))
    with pytest.raises(FormatError, match="mem_length 5 differs"):
        D.decompress_segment(b"abcd", seg(b"abcd", 5, 0))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.integers(0, 5000))
def test_decompress_garbage_only_format_errors(raw: bytes, mem: int) -> None:
    try:
        out = D.decompress_segment(raw, seg(raw, mem, 1))
    except FormatError:
        return
    assert len(out) == mem


# ---------------------------------------------------------------- dispatch ---


def test_decode_primitive_dispatch() -> None:
    p = PRIMITIVE_BY_NAME
    ints = enc_ints([1, None, -5], True)
    dec = D.decode_primitive(p["int16"], ints, 3)
    assert dec.values.tolist() == [1, 0, -5] and dec.offsets is None
    assert dec.validity is not None and dec.validity.tolist() == [True, False, True]
    dec = D.decode_primitive(p["time"], ints, 3)
    assert dec.values.dtype == np.dtype("datetime64[ns]")
    assert dec.values[2] == np.datetime64(-5, "ns")
    dec = D.decode_primitive(p["duration"], ints, 3)
    assert dec.values.dtype == np.dtype("timedelta64[ns]")
    dec = D.decode_primitive(p["uint8"], enc_ints([255, 0], False), 2)
    assert dec.values.dtype == np.uint64 and dec.values.tolist() == [255, 0]
    with pytest.raises(FormatError, match="uint8 value of 2 bytes"):
        D.decode_primitive(p["uint8"], enc_ints([256], False), 1)
    dec = D.decode_primitive(p["float32"], enc_floats([1.5], 4), 1)
    assert dec.values.dtype == np.float32 and dec.values.tolist() == [1.5]
    dec = D.decode_primitive(p["bool"], enc_bools([True, None]), 2)
    assert dec.values.tolist() == [True, False]
    dec = D.decode_primitive(p["bytes"], enc_bin([b"\xff", None]), 2)
    assert dec.offsets is not None and dec.offsets.tolist() == [0, 1, 1]
    dec = D.decode_primitive(p["null"], b"\x00\x00\x00", 3)
    assert dec.validity is not None and not dec.validity.any() and dec.values.size == 3
    with pytest.raises(FormatError, match="non-null value at stream offset 1"):
        D.decode_primitive(p["null"], b"\x00\x01", 2)
    for name in ("uint128", "int256", "ip", "net", "type", "decimal64", "float128"):
        with pytest.raises(UnsupportedTypeError, match=name):
            D.decode_primitive(p[name], b"", 0)
    with pytest.raises(dataclass_error()):
        dec.values = dec.values  # type: ignore[misc]  # Decoded is frozen


def dataclass_error() -> type[Exception]:
    import dataclasses
    return dataclasses.FrozenInstanceError


# --------------------------------------------- big streams: the lanes path ---


def mixed_ints(rng: random.Random, n: int, nulls: float, mags: list[int]) -> list[int | None]:
    return [None if rng.random() < nulls else rng.randint(-m, m)
            for m in (rng.choice(mags) for _ in range(n))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nulls=st.sampled_from([0.0, 0.01, 0.3, 0.9]),
       mags=st.sampled_from([[3], [100], [1000], [2**62], [0, 2**62], [1, 300, 2**40]]),
       size=st.integers(BIG // 3, 6 * BIG))
def test_big_ints_round_trip(seed: int, nulls: float, mags: list[int], size: int) -> None:
    rng = random.Random(seed)
    values = mixed_ints(rng, size, nulls, mags)
    data = enc_ints(values, True)
    check_ints(values, True, 64, data)
    assert_scan_matches(data)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nulls=st.sampled_from([0.0, 0.05, 0.5]),
       lens=st.sampled_from([(0, 3), (2, 18), (20, 60), (0, 200), (100, 140)]),
       long_every=st.sampled_from([0, 50, 400]), alphabet=st.sampled_from(["ascii", "utf8"]))
def test_big_strings_round_trip(seed: int, nulls: float, lens: tuple[int, int],
                                long_every: int, alphabet: str) -> None:
    rng = random.Random(seed)
    chars = "abcdefghij XYZ0123" if alphabet == "ascii" else "aé日本語🙂\x01\x7f"
    values: list[bytes | None] = []
    total = 0
    while total < 3 * BIG:
        if rng.random() < nulls:
            values.append(None)
            total += 1
            continue
        size = rng.randint(*lens)
        if long_every and rng.randrange(long_every) == 0:
            size = rng.choice([130, 5000, 20000])
        v = "".join(rng.choice(chars) for _ in range(size)).encode()
        values.append(v)
        total += len(v) + 2
    data = enc_bin(values)
    dec = D.decode_primitive(PRIMITIVE_BY_NAME["string"], data, len(values))
    assert dec.values.tobytes() == b"".join(v or b"" for v in values)
    assert dec.offsets is not None
    assert np.diff(dec.offsets).tolist() == [len(v or b"") for v in values]
    assert_scan_matches(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), nulls=st.sampled_from([0.01, 0.5]),
       width=st.sampled_from([2, 4, 8]))
def test_big_floats_and_bools(seed: int, nulls: float, width: int) -> None:
    rng = random.Random(seed)
    n = 2 * BIG
    fl: list[float | None] = [None if rng.random() < nulls else rng.uniform(-9, 9)
                              for _ in range(n)]
    got, validity = D.decode_floats(enc_floats(fl, width), n, width=width)
    dt = {2: np.float16, 4: np.float32, 8: np.float64}[width]
    assert np.array_equal(got, np.array([0.0 if v is None else v for v in fl], dt))
    assert validity is not None and validity.tolist() == [v is not None for v in fl]
    bo: list[bool | None] = [None if rng.random() < nulls else rng.random() < 0.5
                             for _ in range(n)]
    got, validity = D.decode_bools(enc_bools(bo), n)
    assert got.tolist() == [bool(v) for v in bo]
    i32 = [rng.randint(0, 1 << rng.choice([3, 9, 30])) for _ in range(n)]
    assert D.decode_int32s(enc_ints(i32, True), n).tolist() == i32


PERIODIC = [
    b"\x02\x02" * 5000,  # two interleaved chains that never meet
    b"\x03\x03\x03" * 4000,
    b"\x02\x04\x03\x02\x04" * 3000,
    (b"\x05" + b"\x05" * 4) * 3000,
    b"\x00" * 9000,
    (b"\x09" + b"\x09" * 8) * 1000 + b"\x02\x05",
    bytes(range(1, 10)) * 1500,
]


@pytest.mark.parametrize("data", PERIODIC, ids=range(len(PERIODIC)))
def test_periodic_streams(data: bytes) -> None:
    assert_scan_matches(data)
    ref = ref_scan(data)
    if ref is not None and all(length <= 8 for _, length in ref):
        got, _ = D.decode_ints(data, signed=False)
        want = [0 if ln < 0 else int.from_bytes(data[s:s + ln], "little") for s, ln in ref]
        assert got.tolist() == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), kind=st.sampled_from(["ints", "strings"]),
       flips=st.integers(1, 4), cut=st.integers(0, 50))
def test_big_corrupted_streams(seed: int, kind: str, flips: int, cut: int) -> None:
    rng = random.Random(seed)
    if kind == "ints":
        data = bytearray(enc_ints(mixed_ints(rng, 2 * BIG, 0.05, [100, 2**40]), True))
    else:
        data = bytearray(enc_bin([rng.randbytes(rng.randint(0, 30)) for _ in range(BIG // 4)]))
    for _ in range(flips):
        data[rng.randrange(len(data))] = rng.randrange(256)
    data = bytes(data[: len(data) - cut])
    assert_scan_matches(data)
    ref = ref_scan(data)
    for count in (None, len(ref) if ref else 7, (len(ref) + 1) if ref else None):
        assert_scan_matches(data, count)


# -------------------------------------------------------------- fuzzing ---

DECODERS = [
    lambda b: D.scan_tags(b),
    lambda b: D.decode_ints(b, signed=True),
    lambda b: D.decode_ints(b, signed=False, bits=8),
    lambda b: D.decode_int32s(b),
    lambda b: D.decode_floats(b, width=8),
    lambda b: D.decode_floats(b, width=2),
    lambda b: D.decode_bools(b),
    lambda b: D.decode_varbinary(b),
    lambda b: D.decode_primitive(PRIMITIVE_BY_NAME["string"], b),
    lambda b: D.decode_primitive(PRIMITIVE_BY_NAME["null"], b),
    lambda b: D.decode_primitive(PRIMITIVE_BY_NAME["time"], b, 3),
]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, len(DECODERS) - 1))
def test_fuzz_small(data: bytes, which: int) -> None:
    with contextlib.suppress(CsupError):  # anything else fails the test
        DECODERS[which](data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from([0, 16, 128, 256]),
       st.integers(0, len(DECODERS) - 1))
def test_fuzz_big(seed: int, below: int, which: int) -> None:
    rng = np.random.default_rng(seed)
    hi = below or 256
    data = rng.integers(0, hi, BIG + int(rng.integers(0, 3 * BIG)), dtype=np.uint8).tobytes()
    with contextlib.suppress(CsupError):
        DECODERS[which](data)
    if which == 0:
        assert_scan_matches(data)


def test_views_and_buffers() -> None:
    values = list(range(-500, 2500))
    data = enc_ints(values, True)
    for buf in (data, bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]):
        got, _ = D.decode_ints(buf, len(values), signed=True)
        assert got.tolist() == values
    odd = memoryview(data).cast("B")[::1]
    assert D.scan_tags(odd)[0].size == len(values)
    with pytest.raises(FormatError):
        D.scan_tags(12345)  # type: ignore[arg-type]


def test_error_offsets_on_the_lanes_path() -> None:
    values = list(range(5000))
    data = bytearray(enc_ints(values, True))
    assert len(data) > 2 * BIG
    where = len(enc_ints(values[:2500], True))
    data[where:where] = tagged(b"\x01\x02\x03\x04")  # a 4-byte value in an int16 column
    with pytest.raises(FormatError, match=f"int16 value of 4 bytes at stream offset {where}"):
        D.decode_ints(bytes(data), signed=True, bits=16)


def count_serial(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the values the serial scanner parses (the lanes' head sample aside)."""
    seen = [0]
    real = S.serial_scan

    def counting(buf, pos, index, count, out, limit=None):  # type: ignore[no-untyped-def]
        before = len(out[0])
        try:
            return real(buf, pos, index, count, out, limit)
        finally:
            seen[0] += len(out[0]) - before

    monkeypatch.setattr(S, "serial_scan", counting)
    return seen


@pytest.mark.numpy_only
def test_lanes_do_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The serial scanner is the fallback: on ordinary data it must see almost nothing."""
    seen = count_serial(monkeypatch)
    rng = random.Random(7)
    streams = [
        enc_ints(mixed_ints(rng, 20000, 0.05, [1000]), True),
        enc_ints(mixed_ints(rng, 20000, 0.0, [2**62]), True),
        enc_bin([rng.randbytes(rng.randint(2, 18)).hex().encode() for _ in range(8000)]),
        enc_bin(["日本語のテキスト".encode() * rng.randint(1, 3) for _ in range(8000)]),
        enc_floats([None if i % 7 == 0 else float(i) for i in range(20000)], 8),
        enc_bools([None if i % 5 == 0 else i % 3 == 0 for i in range(20000)]),
    ]
    total = 0
    for data in streams:
        total += len(D.scan_tags(data)[0])
    D.decode_ints(streams[0], signed=True)
    D.decode_varbinary(streams[3])
    assert seen[0] < total / 100




@pytest.mark.numpy_only
@pytest.mark.parametrize("chunk", [BIG, 3 * BIG + 7, 10 * BIG])
def test_chunked_lanes(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(S, "_CHUNK", chunk)
    seen = count_serial(monkeypatch)
    rng = random.Random(chunk)
    values = mixed_ints(rng, 30000, 0.1, [5, 1000, 2**40])
    data = enc_ints(values, True)
    check_ints(values, True, 64, data)
    texts = [rng.randbytes(rng.randint(0, 40)) for _ in range(6000)]
    texts[100] = b"L" * 3000  # longer than a lane may step: one value goes serially
    data2 = enc_bin(texts)
    _, got, _ = D.decode_varbinary(data2, len(texts))
    assert got.tobytes() == b"".join(texts)
    assert_scan_matches(data)
    assert seen[0] < 100


@pytest.mark.numpy_only
def test_errors_found_without_a_serial_rescan(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = count_serial(monkeypatch)
    rng = random.Random(3)
    data = enc_ints(mixed_ints(rng, 50000, 0.05, [1000, 2**50]), True)
    with pytest.raises(TruncatedError, match=r"value 49999 at stream offset \d+ claims"):
        D.decode_ints(data[:-1], signed=True)
    broken = bytearray(data)
    tag = (ref_scan(data) or [])[25000][0] - 1
    broken[tag] = 0x7F  # claims 126 bytes: too long for an int64, and misleads the lanes
    with pytest.raises(FormatError):
        D.decode_ints(bytes(broken), signed=True)
    assert seen[0] < 100
