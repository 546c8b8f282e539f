"""The C kernels against the numpy decoders, on any bytes.

``csup_async.decode``'s public functions use the C loops (``_kernels.c``)
when they are built and numpy otherwise.  Here both run on the same inputs:
valid streams of every type (bodies encoded by the BSUP codec, values from the
shared strategies), the same streams corrupted (bytes flipped, cut, inserted),
random bytes, and wrong counts.  Both must give identical arrays (dtype,
bytes, validity) or both raise the same error.  The kernels must also be
strict: whatever they refuse, numpy refuses too, apart from the inputs they
leave to numpy by design.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from csup_async import decode as D
from csup_async.decode import columns as ref_columns
from csup_async.decode import kernels as K
from csup_async.format import bsup
from csup_async.model.errors import FormatError
from csup_async.model.types import PRIMITIVE_BY_NAME
from tests.support.kernel_pairs import (
    NATIVE,
    check_agree,
    edits,
    has_long_tag,
    mutate,
    outcome,
    some_byte,
)
from tests.support.strategies import primitive_values

needs_native = pytest.mark.skipif(NATIVE is None, reason="the C kernels are not built "
                                  "(or CSUP_ASYNC_NATIVE=0)")

FAST_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "time", "duration", "float16", "float32", "float64", "bool", "string", "bytes"]


# ------------------------------------------------------------ the build ---


def test_extension_is_built_where_a_compiler_exists() -> None:
    """CI's guard: a machine with a C compiler must have built and be using the kernels,
    unless CSUP_ASYNC_NATIVE=0 says to use numpy."""
    if os.environ.get(K.ENV_VAR, "1") == "0":
        assert not D.native_available()
        return
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on this machine")
    import csup_async.decode._kernels as kernels  # fails if the build was skipped

    assert kernels.__file__.endswith(sysconfig.get_config_var("EXT_SUFFIX"))
    assert D.native_available()


def test_env_var_forces_numpy() -> None:
    code = ("from csup_async import decode as D\n"
            "print(D.native_available(), D.decode_ints(b'\\x02\\x03', signed=True)[0].tolist())")
    env = {**os.environ, K.ENV_VAR: "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split(maxsplit=1)
    assert out == ["False", "[-1]\n"]


@needs_native
def test_kernels_do_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """On valid input the numpy decoders are never called: the speed is the kernels'."""
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the numpy decoder was called")

    for name in ("decode_ints", "decode_int32s", "decode_floats", "decode_bools",
                 "decode_varbinary", "validate_utf8", "presence_to_validity",
                 "lengths_to_offsets", "decode_primitive"):
        monkeypatch.setattr(ref_columns, name, refuse)
    monkeypatch.setattr(K, "_ref_scan_tags", refuse)
    for name in FAST_TYPES:
        t = PRIMITIVE_BY_NAME[name]
        values = {"string": ["é", None, "abc" * 50], "bytes": [b"\xff", None, b""],
                  "bool": [True, None, False]}.get(name, [1, None, 0])
        if name.startswith("float"):
            values = [1.5, None, -0.0]
        stream = encode(name, values)
        for count in (None, 3):
            dec = D.decode_primitive(t, stream, count)
            assert dec.validity is not None and dec.validity.tolist() == [True, False, True]
    assert D.decode_int32s(encode("int32", [5, -2**31]), 2).tolist() == [5, -2**31]
    assert D.scan_tags(b"\x00\x02\x07", None)[1].tolist() == [-1, 1]
    runs = np.array([2, 1, 3], np.int32)
    assert D.presence_to_validity(runs, 6).tolist() == [1, 1, 0, 1, 1, 1]
    assert D.lengths_to_offsets(runs).tolist() == [0, 2, 3, 6]


# ------------------------------------------------------------- helpers ---


def encode(name: str, values: list[Any]) -> bytes:
    """A column stream of these values, bodies by the BSUP codec (Zed's encoding)."""
    t = PRIMITIVE_BY_NAME[name]
    out = bytearray()
    for v in values:
        bsup.append_tagged(out, None if v is None else bsup.encode_primitive(t, v))
    return bytes(out)


def decoders(name: str) -> list[Callable[[bytes, int | None], Any]]:
    t = PRIMITIVE_BY_NAME[name]
    out: list[Callable[[bytes, int | None], Any]] = [
        lambda b, c: D.decode_primitive(t, b, c)]
    if name in ("int32",):
        out.append(lambda b, c: D.decode_int32s(b, c))
    if name in ("string", "bytes"):
        out.append(lambda b, c: D.decode_varbinary(b, c))
    out.append(lambda b, c: D.scan_tags(b, c))
    return out


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, bytes, int | None]:
    """(type name, stream, count): valid, corrupted or random."""
    name = draw(st.sampled_from(FAST_TYPES))
    how = draw(st.sampled_from(["valid", "valid", "corrupt", "random"]))
    if how == "random":
        data = draw(st.binary(max_size=80) | st.lists(some_byte, max_size=80).map(bytes))
        n = None
    else:
        values = draw(st.lists(st.none() | primitive_values(name), max_size=40))
        data = encode(name, values)
        n = len(values)
        if how == "corrupt":
            data = mutate(data, draw(edits), draw(st.integers(0, 3)))
    count = draw(st.sampled_from([None, n, None if n is None else n + 1,
                                  None if not n else n - 1, 0]))
    return name, data, count


# --------------------------------------------------- the property tests ---


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_native_equals_numpy(case: tuple[str, bytes, int | None]) -> None:
    name, data, count = case
    for fn in decoders(name):
        check_agree(lambda fn=fn: fn(data, count))  # type: ignore[misc]


@needs_native
@settings(max_examples=200, deadline=None)
@given(streams(), st.sampled_from([(True, 8), (True, 16), (True, 32), (True, 64),
                                   (False, 8), (False, 16), (False, 32), (False, 64)]),
       st.sampled_from([2, 4, 8]))
def test_every_decoder_on_every_stream(case: tuple[str, bytes, int | None],
                                       ints: tuple[bool, int], width: int) -> None:
    """Each stream, whatever type it was made for, through each decoder."""
    _, data, count = case
    signed, bits = ints
    check_agree(lambda: D.decode_ints(data, count, signed=signed, bits=bits))
    check_agree(lambda: D.decode_floats(data, count, width=width))
    check_agree(lambda: D.decode_bools(data, count))
    check_agree(lambda: D.decode_int32s(data, count))
    check_agree(lambda: D.decode_varbinary(data, count))
    check_agree(lambda: D.decode_primitive(PRIMITIVE_BY_NAME["string"], data, count))


@needs_native
@settings(max_examples=300, deadline=None)
@given(streams())
def test_kernels_refuse_only_what_numpy_refuses(case: tuple[str, bytes, int | None]) -> None:
    """The raw kernels: a refusal means bad data (numpy raises), except for tags of ten
    bytes or more, which the kernels leave to numpy."""
    _, data, _ = case
    m = NATIVE.count(data)
    numpy_scan = outcome(lambda: ref_scan(data))
    if m is None:
        assert numpy_scan[0] == "error" or has_long_tag(data)
        return
    assert numpy_scan[0] == "ok" and len(numpy_scan[1][0]) == m
    cases = [
        (lambda: NATIVE.ints(data, np.empty(m, np.int64), np.empty(m, bool), 8, True),
         lambda: ref_columns.decode_ints(data, m, signed=True, bits=64)),
        (lambda: NATIVE.ints(data, np.empty(m, np.int64), np.empty(m, bool), 2, True),
         lambda: ref_columns.decode_ints(data, m, signed=True, bits=16)),
        (lambda: NATIVE.ints(data, np.empty(m, np.uint64), np.empty(m, bool), 1, False),
         lambda: ref_columns.decode_ints(data, m, signed=False, bits=8)),
        (lambda: NATIVE.int32s(data, np.empty(m, np.int32)),
         lambda: ref_columns.decode_int32s(data, m)),
        (lambda: NATIVE.floats(data, np.empty(m, np.float32), np.empty(m, bool), 4),
         lambda: ref_columns.decode_floats(data, m, width=4)),
        (lambda: NATIVE.bools(data, np.empty(m, bool), np.empty(m, bool)),
         lambda: ref_columns.decode_bools(data, m)),
    ]
    for kernel, numpy in cases:
        if kernel() is None and not has_long_tag(data):
            assert outcome(numpy)[0] == "error"


def ref_scan(data: bytes) -> Any:
    from csup_async.decode.scan import scan_tags
    return scan_tags(data)


@needs_native
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), name=st.sampled_from(FAST_TYPES),
       nulls=st.sampled_from([0.0, 0.05, 0.6]), flips=st.integers(0, 3))
def test_big_streams_agree(seed: int, name: str, nulls: float, flips: int) -> None:
    """Streams long enough for numpy's lockstep lanes (its other code path)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1500, 6000))
    if name in ("string", "bytes"):
        pool: list[Any] = ["abc", "", "日本語", "x" * 200, "é" * 3]
        values = [None if rng.random() < nulls else pool[int(rng.integers(len(pool)))]
                  for _ in range(n)]
        if name == "bytes":
            values = [None if v is None else v.encode() for v in values]
    elif name == "bool":
        values = [None if rng.random() < nulls else bool(rng.integers(2)) for _ in range(n)]
    elif name.startswith("float"):
        dt = {"float16": np.float16, "float32": np.float32, "float64": np.float64}[name]
        values = [None if rng.random() < nulls else float(dt(rng.standard_normal()))
                  for _ in range(n)]
    else:
        bits = 64 if name in ("time", "duration") else int(name.lstrip("uint"))
        lo, hi = (0, 2**bits - 1) if name.startswith("u") else (-(2**(bits - 1)),
                                                                 2**(bits - 1) - 1)
        scale = [100, 2**20, hi][int(rng.integers(3))]
        pick = random.Random(seed)
        values = [None if rng.random() < nulls else
                  min(max(pick.randint(-scale, scale), lo), hi) for _ in range(n)]
        if name == "time":
            values = [None if v is None else np.datetime64(v, "ns") for v in values]
        if name == "duration":
            values = [None if v is None else np.timedelta64(v, "ns") for v in values]
    data = bytearray(encode(name, values))
    for _ in range(flips):
        data[int(rng.integers(len(data)))] = int(rng.integers(256))
    t = PRIMITIVE_BY_NAME[name]
    for count in (n, None, n - 1):
        got = check_agree(lambda c=count: D.decode_primitive(t, bytes(data), c))
        if not flips and count == n:
            assert got == "ok"
    # without a count, streams above OVERALLOCATE_BELOW are counted first
    saved = K.OVERALLOCATE_BELOW
    try:
        K.OVERALLOCATE_BELOW = len(data) - 1
        check_agree(lambda: D.decode_primitive(t, bytes(data), None))
        check_agree(lambda: D.scan_tags(bytes(data), None))
        check_agree(lambda: D.decode_int32s(bytes(data), None))
    finally:
        K.OVERALLOCATE_BELOW = saved


# ------------------------------------------------------ awkward inputs ---


@needs_native
@pytest.mark.parametrize("count", [None, 0, 2, 3, 4, -1, 2**62, 2.0, "3", True])
def test_counts(count: Any) -> None:
    data = encode("int64", [1, None, -3])
    for name in FAST_TYPES:
        check_agree(lambda n=name: D.decode_primitive(PRIMITIVE_BY_NAME[n], data, count))
    check_agree(lambda: D.decode_int32s(b"\x02\x04\x02\x00\x02\x02", count))
    check_agree(lambda: D.scan_tags(data, count))


@needs_native
def test_buffers_of_every_kind() -> None:
    data = encode("int64", list(range(-300, 3000)))
    padded = b"zz" + data + b"zz"
    inputs: list[Any] = [data, bytearray(data), memoryview(data), memoryview(padded)[2:-2],
                         np.frombuffer(data, np.uint8), memoryview(data).cast("B", (len(data),)),
                         memoryview(padded)[2:-2:1], 12345, "text", None,
                         np.frombuffer(padded, np.uint8)[2::2], memoryview(padded)[::2]]
    for stream in inputs:
        assert check_agree(lambda s=stream: D.decode_ints(s, signed=True)) in ("ok", "error")
        check_agree(lambda s=stream: D.decode_varbinary(s))
        check_agree(lambda s=stream: D.decode_floats(s, width=8))
    got, _ = D.decode_ints(memoryview(padded)[2:-2], signed=True)
    assert got.tolist() == list(range(-300, 3000))


@needs_native
def test_results_never_alias_the_input() -> None:
    data = bytearray(encode("bytes", [b"abc", b"de"] * 100))
    offsets, values, _ = D.decode_varbinary(data)
    data[:] = b"\x00" * len(data)
    assert values[:5].tobytes() == b"abcde"
    assert offsets[:3].tolist() == [0, 3, 5]


@needs_native
@pytest.mark.parametrize("width", [2, 4, 8])
def test_float_bits_kept(width: int) -> None:
    """NaN payloads, -0.0 and subnormals come out bit for bit."""
    dt = {2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
    bits = np.array([0, 1, 2**(8 * width) - 1, 1 << (8 * width - 1), 0x7C01,
                     (1 << (8 * width - 1)) - 1], dt)
    data = b"".join(bytes([width + 1]) + b.tobytes() for b in bits) + b"\x00"
    check_agree(lambda: D.decode_floats(data, width=width))
    got, validity = D.decode_floats(data, width=width)
    assert got[:-1].view(dt).tolist() == bits.tolist()
    assert validity is not None and validity.tolist() == [True] * len(bits) + [False]


@needs_native
@settings(deadline=None)
@given(st.lists(st.binary(max_size=12) | st.text(max_size=6).map(str.encode), max_size=12),
       st.lists(st.integers(-3, 40), max_size=14))
@example([b"\xd6\x8a"], [-3, 9, 8])  # offsets outside the data: a FormatError, not IndexError
def test_utf8_agrees(values: list[bytes], offsets: list[int]) -> None:
    data = np.frombuffer(b"".join(values), np.uint8)
    ends = np.cumsum([0] + [len(v) for v in values]).astype(np.int64)
    check_agree(lambda: D.validate_utf8(ends, data))
    check_agree(lambda: D.validate_utf8(np.array(offsets, np.int64), data))
    check_agree(lambda: D.validate_utf8(ends.astype(np.int32), data))


@needs_native
@pytest.mark.parametrize("text", ["\ud800", "\udfff", "\U0010ffff", "\x7f\x80", "€𝄞"])
def test_utf8_edges(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    data = np.frombuffer(raw, np.uint8)
    ends = np.array([0, len(raw)], np.int64)
    assert check_agree(lambda: D.validate_utf8(ends, data)) == (
        "error" if "\ud800" <= text[0] <= "\udfff" else "ok")
    for bad in (b"\xc0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
                b"\xed\xa0\x80", b"\xf0\x8f\xbf\xbf", b"\xe2\x82", b"\x80"):
        arr = np.frombuffer(bad, np.uint8)
        assert check_agree(lambda a=arr: D.validate_utf8(
            np.array([0, a.size], np.int64), a)) == "error"


@needs_native
@settings(deadline=None)
@given(st.lists(st.integers(-2, 40), max_size=20), st.integers(-1, 3),
       st.sampled_from([np.int32, np.int64]))
def test_presence_and_lengths_agree(runs: list[int], extra: int, dtype: Any) -> None:
    arr = np.array(runs, dtype)
    total = sum(runs) + extra
    check_agree(lambda: D.presence_to_validity(arr, total))
    check_agree(lambda: D.lengths_to_offsets(arr))
    check_agree(lambda: D.lengths_to_offsets(arr, max_total=sum(runs) - extra))


@needs_native
def test_threads_decode_at_once() -> None:
    """Threads decode the same bytes at once (the kernels drop the GIL while they
    walk, holding their buffers) and each gets the right answer."""
    values = [None if i % 11 == 0 else i * 7919 - 10**6 for i in range(200_000)]
    data = encode("int64", values)
    want = [0 if v is None else v for v in values]
    results: list[Any] = [None] * 4

    def work(k: int) -> None:
        results[k] = D.decode_ints(data, len(values), signed=True)[0].tolist()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(r == want for r in results)


@needs_native
def test_strings_non_ascii_byte_found_at_any_position() -> None:
    """The kernel's ASCII shortcut must see a high byte wherever it sits in a value
    (short values are read as two words, long ones byte by byte)."""
    t = PRIMITIVE_BY_NAME["string"]
    for size in (*range(1, 34), 100):
        for at in range(size):
            body = bytearray(b"a" * size)
            body[at] = 0xFF
            stream = encode("bytes", [b"xy", bytes(body), b"z" * 20])
            with pytest.raises(FormatError, match="string value 1 is not valid UTF-8"):
                D.decode_primitive(t, stream, 3)
            body[at] = 0xC3  # a valid "é" needs its continuation byte next
            if at + 1 < size:
                body[at + 1] = 0xA9
                got = D.decode_primitive(t, encode("bytes", [bytes(body)]), 1)
                assert got.values.tobytes() == bytes(body)
