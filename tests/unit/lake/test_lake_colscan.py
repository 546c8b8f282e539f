"""The column-wise decoding of ``.zng`` ranges (``lake.colscan``) gives exactly what the
row-by-row reference gives: same rows, same columns, same types, on random pools of
several record types with nulls, null records, nested fields and key filters."""

from __future__ import annotations

import heapq
import ipaddress
import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csup_async import arrays as A
from csup_async import bsup
from csup_async.lake import scan as S
from csup_async.lake.colscan import Part, decode_part, merge_parts
from csup_async.lake.keys import KeyRange, sort_key
from csup_async.lake.pool import _rows_result, scan_result
from csup_async.reader import ScanStats
from csup_async.types import (
    BOOL,
    BYTES,
    DURATION,
    FLOAT64,
    INT8,
    INT64,
    IP,
    STRING,
    TIME,
    UINT16,
    UINT32,
    ArrayType,
    Field,
    NamedType,
    RecordType,
    Type,
)
from csup_async.values import Value

NESTED = RecordType((Field("x", INT64), Field("y", STRING)))
PORT = NamedType("port", UINT16)
FIELD_TYPES: list[Type] = [INT64, INT8, UINT32, TIME, DURATION, FLOAT64, BOOL, STRING, BYTES,
                           IP, PORT, NESTED, ArrayType(INT64)]
NAMES = ["a", "b", "c", "d"]
KEY = "ts"
KEY_SPAN = 1000


def value_of(t: Type) -> st.SearchStrategy[Any]:
    if t == INT64:
        return st.integers(-(2**63), 2**63 - 1)
    if t == INT8:
        return st.integers(-127, 127)
    if t == UINT32:
        return st.integers(0, 2**32 - 1)
    if t == TIME:
        return st.integers(-(2**62), 2**62).map(lambda x: np.datetime64(x, "ns"))
    if t == DURATION:
        return st.integers(-(2**62), 2**62).map(lambda x: np.timedelta64(x, "ns"))
    if t == FLOAT64:
        return st.floats(allow_nan=False)
    if t == BOOL:
        return st.booleans()
    if t == STRING:
        return st.text(max_size=200)  # some bodies need a two-byte tag
    if t == BYTES:
        return st.binary(max_size=20)
    if t == IP:
        return st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)
    if t == PORT:
        return st.integers(0, 65535)
    if t == NESTED:
        return st.fixed_dictionaries({"x": st.one_of(st.none(), value_of(INT64)),
                                      "y": st.one_of(st.none(), value_of(STRING))})
    return st.lists(st.integers(-5, 5), max_size=4)


@st.composite
def record_types(draw: Any) -> RecordType:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    fields = [Field(n, draw(st.sampled_from(FIELD_TYPES))) for n in names]
    key_t = draw(st.sampled_from([TIME, INT64, STRING, None]))
    if key_t is not None:
        fields.insert(draw(st.integers(0, len(fields))), Field(KEY, key_t))
    return RecordType(tuple(fields))


def key_value(t: Type, k: int) -> Any:
    return np.datetime64(k, "ns") if t == TIME else str(k) if t == STRING else k


@st.composite
def pools(draw: Any, desc: bool = False, types: list[RecordType] | None = None
          ) -> tuple[list[bytes], list[tuple[RecordType, Any]]]:
    """One object read: its ZNG streams (chunks) grouped into 1-3 byte ranges; keys
    ascending (``desc``: descending) as in a pool's data object."""
    if types is None:
        types = draw(st.lists(record_types(), min_size=1, max_size=3))
    rows: list[tuple[RecordType, Any]] = []
    k = KEY_SPAN if desc else 0
    for _ in range(draw(st.integers(0, 40))):
        t = draw(st.sampled_from(types))
        if draw(st.integers(0, 15)) == 0:
            rows.append((t, None))  # a null record
            continue
        k += -draw(st.integers(0, 60)) if desc else draw(st.integers(0, 60))
        v = {}
        for f in t.fields:
            if draw(st.integers(0, 5)) == 0:
                v[f.name] = None
            elif f.name == KEY:
                v[f.name] = key_value(f.type, k)
            else:
                v[f.name] = draw(value_of(f.type))
        rows.append((t, v))
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]
    streams = [bsup.encode_stream(rows[a:b], compress=draw(st.booleans()))
               for a, b in itertools.pairwise(bounds) if b > a or a == 0]
    split = draw(st.integers(1, min(3, len(streams))))
    per = -(-len(streams) // split)
    bufs = [b"".join(streams[i:i + per]) for i in range(0, len(streams), per)]
    return bufs, rows


@st.composite
def key_ranges(draw: Any) -> KeyRange:
    kind = draw(st.sampled_from(["none", "time", "int", "string"]))
    if kind == "none":
        return KeyRange()

    def bound() -> Value | None:
        if draw(st.booleans()):
            return None
        x = draw(st.integers(-10, KEY_SPAN))
        t = {"time": TIME, "int": INT64, "string": STRING}[kind]
        return Value(t, str(x) if kind == "string" else x)

    return KeyRange(bound(), bound(), draw(st.booleans()), draw(st.booleans()))


def columns_of(draw: Any) -> list[str] | None:
    cols = draw(st.one_of(st.none(), st.lists(st.sampled_from([*NAMES, KEY, "zz"]),
                                              unique=True, min_size=1)))
    return cols


def reference(bufs: list[bytes], kr: KeyRange, columns: list[str] | None) -> Any:
    fields = None if columns is None else frozenset(columns)
    rows: list[Any] = []
    for b in bufs:
        rows += S.decode_rows(b, (KEY,), kr, "t.zng", fields)
    return rows, _rows_result(rows, columns, ScanStats(), None)


def same_array(a: A.Array, b: A.Array) -> None:
    assert a.type == b.type
    assert type(a) is type(b)
    assert len(a) == len(b)
    assert a.to_pylist() == b.to_pylist()
    va = None if a.validity is None else a.validity.tolist()
    vb = None if b.validity is None else b.validity.tolist()
    assert va == vb


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools(), key_ranges(), st.data())
def test_columnwise_decoding_equals_the_row_reference(pool: Any, kr: KeyRange,
                                                      data: Any) -> None:
    bufs, _ = pool
    columns = data.draw(st.one_of(st.none(), st.lists(st.sampled_from([*NAMES, KEY, "zz"]),
                                                      unique=True, min_size=1)))
    ref_rows, ref = reference(bufs, kr, columns)
    part = decode_part(bufs, (KEY,), kr, None if columns is None else frozenset(columns))
    assert isinstance(part, Part)  # these pools are all the fast path's to take
    got = scan_result([part], columns, ScanStats(), None)
    assert got.num_rows == ref.num_rows
    assert list(got.columns) == list(ref.columns)
    for c in ref.columns:
        same_array(got.columns[c], ref.columns[c])
    # the rows a merge of overlapping objects uses are the reference's too
    assert part.to_rows() == ref_rows


def test_the_decoded_rows_are_the_written_ones() -> None:
    """A fixed pool against what was written (not only against the reference)."""
    t1 = RecordType((Field("ts", TIME), Field("host", STRING), Field("n", INT64)))
    t2 = RecordType((Field("host", STRING), Field("ts", TIME)))
    rows = [(t1, {"ts": np.datetime64(i, "ns"), "host": f"h{i % 3}", "n": -i})
            if i % 4 else (t2, {"host": None, "ts": np.datetime64(i, "ns")})
            for i in range(100)]
    buf = bsup.encode_stream(rows[:50]) + bsup.encode_stream(rows[50:])
    kr = KeyRange(Value(TIME, 10), Value(TIME, 89), True, False)
    part = decode_part([buf], ("ts",), kr, frozenset({"ts", "host", "n"}))
    assert isinstance(part, Part)
    res = scan_result([part], ["ts", "host", "n"], ScanStats(), None)
    assert res.num_rows == 79
    assert res.columns["ts"].to_pylist() == [np.datetime64(i, "ns") for i in range(10, 89)]
    assert res.columns["host"].to_pylist() == [None if i % 4 == 0 else f"h{i % 3}"
                                               for i in range(10, 89)]
    assert res.columns["n"].to_pylist() == [None if i % 4 == 0 else -i for i in range(10, 89)]


@pytest.mark.parametrize("damage", ["field count", "truncated", "bad utf-8"])
def test_bad_data_goes_to_the_reference_and_its_error(damage: str) -> None:
    t = RecordType((Field("ts", INT64), Field("s", STRING)))
    good = bsup.encode_stream([(t, {"ts": i, "s": "abc"}) for i in range(5)], compress=False)
    raw = bytearray(good)
    if damage == "field count":
        # a values frame whose third row's body holds one field and fourth three (the
        # total is right: only the per-row check sees it), their type two
        frames = list(bsup.read_frames(good))
        assert frames[0][0] == bsup.FRAME_TYPES
        tid = 30  # the stream's first typedef
        payload = bytearray()
        for i in range(5):
            body = bytearray()
            bsup.append_tagged(body, bsup.encode_int(i))
            for _ in range({2: 0, 3: 2}.get(i, 1)):
                bsup.append_tagged(body, b"abc")
            payload += bsup.uvarint(tid)
            bsup.append_tagged(payload, bytes(body))
        n = len(payload)
        raw = bytearray(good[:frames[0][2]])
        raw += bytes([0x10 | (n & 0x0F)]) + bsup.uvarint(n >> 4) + payload + b"\xff"
    elif damage == "truncated":
        raw = raw[:-3]
    else:
        raw[raw.index(b"abc")] = 0xFF
    buf = bytes(raw)
    assert decode_part([buf], ("ts",), KeyRange(), None) is None
    with pytest.raises(Exception) as e:
        S.decode_rows(buf, ("ts",), KeyRange(), "x.zng", None)
    assert "x.zng" in str(e.value)


@st.composite
def groups(draw: Any) -> tuple[str, list[Any]]:
    """2-3 overlapping objects of one pool (types shared, as a pool's objects mostly are)."""
    order = draw(st.sampled_from(["asc", "desc"]))
    types = draw(st.lists(record_types(), min_size=1, max_size=2))
    n = draw(st.integers(2, 3))
    return order, [draw(pools(desc=order == "desc", types=types)) for _ in range(n)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), key_ranges(), st.data())
def test_merging_columnwise_parts_equals_merging_rows(group: Any, kr: KeyRange,
                                                      data: Any) -> None:
    order, objects = group
    columns = data.draw(st.one_of(st.none(), st.lists(st.sampled_from([*NAMES, KEY]),
                                                      unique=True, min_size=1)))
    fields = None if columns is None else frozenset(columns)
    ref_rows = [reference(bufs, kr, columns)[0] for bufs, _ in objects]
    merged_rows = list(heapq.merge(*ref_rows, key=lambda r: sort_key(r[0]),
                                   reverse=order == "desc"))
    ref = _rows_result(merged_rows, columns, ScanStats(), None)
    parts = [decode_part(bufs, (KEY,), kr, fields) for bufs, _ in objects]
    assert all(isinstance(p, Part) for p in parts)
    merged = merge_parts(parts, order)  # type: ignore[arg-type]
    if merged is None:  # keys of several families, strings, ...: rows are merged instead
        return
    got = scan_result([merged], columns, ScanStats(), None)
    assert got.num_rows == ref.num_rows
    assert list(got.columns) == list(ref.columns)
    for c in ref.columns:
        same_array(got.columns[c], ref.columns[c])
    assert merged.to_rows() == merged_rows


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_overlapping_time_keyed_objects_merge_columnwise(order: str) -> None:
    t = RecordType((Field("ts", TIME), Field("n", INT64)))
    step = -1 if order == "desc" else 1

    def obj(start: int) -> bytes:
        ks = sorted(range(start, start + 50, 3), reverse=order == "desc")
        return bsup.encode_stream([(t, {"ts": np.datetime64(k, "ns"), "n": start})
                                   for k in ks])

    parts = [decode_part([obj(s)], ("ts",), KeyRange(), None) for s in (0, 10, 10)]
    merged = merge_parts(parts, order)  # type: ignore[arg-type]
    assert merged is not None
    res = scan_result([merged], ["ts", "n"], ScanStats(), None)
    want = sorted([(k, s) for s in (0, 10, 10) for k in range(s, s + 50, 3)],
                  key=lambda x: x[0] * step)  # stable: ties keep object order
    assert res.columns["ts"].to_pylist() == [np.datetime64(k, "ns") for k, _ in want]
    assert res.columns["n"].to_pylist() == [s for _, s in want]


def test_a_lake_scans_the_same_column_wise_and_row_by_row(tmp_path: Any,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """End to end on a lake the tests' own writer built: overlapping objects of two row
    types (nulls, a nested field), both pool orders, with and without the C decoders."""
    import asyncio

    import csup_async
    from csup_async.decode import kernels
    from tests.support.lake_builder import LakeBuilder, rec

    t1 = rec(("ts", "time"), ("host", "string"), ("n", "int64"))
    t2 = rec(("n", "string"), ("ts", "time"), ("inner", rec(("x", "int64"))))
    b = LakeBuilder(tmp_path / "lake")
    for order in ("asc", "desc"):
        p = b.create_pool(f"p{order}", key="ts", key_type="time", order=order, stride=64)
        for start in (0, 40, 40, 300):
            b.load(p, "main", [{"ts": start + 3 * i, "host": None if i % 5 == 0 else f"h{i}",
                                "n": i} for i in range(30)], t1)
            b.load(p, "main", [{"n": str(i), "ts": start + 3 * i + 1,
                                "inner": None if i % 4 else {"x": i}} for i in range(20)], t2)

    async def scan(pool: str, cols: Any, kr: Any) -> Any:
        async with csup_async.open_lake(str(tmp_path / "lake")) as lake:
            return await (await lake.pool(f"{pool}@main")).scan(cols, key_range=kr)

    lo, hi = np.datetime64(45, "ns"), np.datetime64(330, "ns")
    for native in (True, False):
        if not native:
            monkeypatch.setattr(kernels, "_K", None)
        for pool in ("pasc", "pdesc"):
            for cols in (None, ["ts", "host"], ["n", "inner"], ["inner.x", "ts"]):
                for kr in (None, (lo, hi)):
                    monkeypatch.setattr(S, "COLUMNAR", True)
                    got = asyncio.run(scan(pool, cols, kr))
                    monkeypatch.setattr(S, "COLUMNAR", False)
                    ref = asyncio.run(scan(pool, cols, kr))
                    assert got.num_rows == ref.num_rows > 0
                    assert list(got.columns) == list(ref.columns)
                    for c in ref.columns:
                        same_array(got.columns[c], ref.columns[c])
