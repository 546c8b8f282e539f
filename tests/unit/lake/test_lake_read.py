"""A pool scan reads its objects through the one scanner: BSUP objects opened on their
seek-index runs (``bsup.reader.open_runs``), merged in pool-key order (``lake.read``)."""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import ipaddress
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
import planner as P
from bench.lake_builder import LakeBuilder, rec
from csup_async import arrays as A
from csup_async.format import bsup
from csup_async.lake.keys import KeyRange, sort_key
from csup_async.lake.read import in_range, key_values, merge_ids
from csup_async.model.types import (
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
    UnionType,
)
from csup_async.model.values import Value, unify
from csup_async.readers.bsup import open_runs, reader_of_frames
from csup_async.stores import LocalStore

T1 = RecordType((Field("ts", INT64), Field("s", STRING)))
T2 = RecordType((Field("s", STRING), Field("ts", INT64), Field("x", INT64)))


def _object(tmp_path: Path) -> tuple[Path, list[tuple[int, int]], list[list[Any]]]:
    """A BSUP object of 5 streams of 20 rows (two record types), its stream offsets."""
    streams, rows = [], []
    for k in range(5):
        part = [(T1, {"ts": 20 * k + i, "s": f"r{20 * k + i}"}) if i % 3 else
                (T2, {"s": None, "ts": 20 * k + i, "x": -i}) for i in range(20)]
        streams.append(bsup.encode_stream(part, compress=k % 2 == 0))
        rows.append(part)
    offs, at = [], 0
    for s in streams:
        offs.append((at, len(s)))
        at += len(s)
    path = tmp_path / "obj.zng"
    path.write_bytes(b"".join(streams))
    return path, offs, rows


def test_open_runs_reads_only_the_runs_and_their_rows(tmp_path: Path) -> None:
    path, offs, rows = _object(tmp_path)
    runs = [offs[1], (offs[3][0], offs[3][1] + offs[4][1])]  # streams 1, and 3-4

    no_gaps = dataclasses.replace(P.get_profile("local"), max_gap=0)

    async def go() -> Any:
        r = await open_runs(LocalStore(), str(path), runs, profile=no_gaps)
        async with r:
            return r.open_stats, await r.scan(["ts", "s", "x"]), r.num_rows

    stats, res, n = asyncio.run(go())
    want = [v for k in (1, 3, 4) for _, v in rows[k]]
    assert n == res.num_rows == 60
    assert res.to_pylist() == [{"ts": v["ts"], "s": v["s"], "x": v.get("x")} for v in want]
    assert stats.bytes_read == sum(n for _, n in runs)  # nothing of streams 0 and 2


def test_open_runs_takes_the_given_requests_and_names_a_short_object(tmp_path: Path) -> None:
    path, offs, _ = _object(tmp_path)
    size = path.stat().st_size
    runs = [offs[0], offs[2]]
    one = [(0, offs[2][0] + offs[2][1])]  # one request covering both runs and the gap

    async def go(requests: Any, runs: Any = runs) -> Any:
        r = await open_runs(LocalStore(), str(path), runs, requests=requests)
        return r.open_stats.requests, r.open_stats.bytes_read, r.num_rows

    assert asyncio.run(go(one)) == (1, one[0][1], 40)
    with pytest.raises(csup_async.CsupError, match="do not cover"):
        asyncio.run(go([offs[0]]))
    with pytest.raises(csup_async.TruncatedError) as e:
        asyncio.run(go(None, [(0, size + 10)]))
    assert "obj.zng" in str(e.value)


def _keys_array(t: Type, vals: list[Any]) -> A.Array:
    return A.from_pylist(t, vals)


@st.composite
def sorted_parts(draw: Any) -> tuple[str, list[A.Array]]:
    """2-4 parts of keys, each in pool-key order (nulls last ascending, first
    descending), all ints, all times, all strings, or ints and strings mixed."""
    order = draw(st.sampled_from(["asc", "desc"]))
    kind = draw(st.sampled_from(["int", "time", "string", "mixed"]))
    parts = []
    for _ in range(draw(st.integers(2, 4))):
        ks = draw(st.lists(st.integers(-5, 30), max_size=12))
        nulls = draw(st.integers(0, 2))
        if kind == "mixed":
            t: Type = UnionType((INT64, STRING))
            vals = [Value(INT64, k) if k % 2 else Value(STRING, str(k)) for k in ks]
        else:
            t = {"int": INT64, "time": TIME, "string": STRING}[kind]
            vals = [Value(t, np.datetime64(k, "ns") if kind == "time" else
                          str(k) if kind == "string" else k) for k in ks]
        vals.sort(key=sort_key, reverse=order == "desc")  # nulls: sort_key puts them max
        plain: list[Any] = [v.value for v in vals]
        plain = ([None] * nulls + plain) if order == "desc" else (plain + [None] * nulls)
        if kind == "mixed":
            tags = [0 if v is not None and not isinstance(v, str) else 1 if v is not None
                    else -1 for v in plain]
            ints = [v for v in plain if v is not None and not isinstance(v, str)]
            strs = [v for v in plain if isinstance(v, str)]
            parts.append(A.UnionArray(t, tags, [A.from_pylist(INT64, ints),
                                                A.from_pylist(STRING, strs)]))
        else:
            parts.append(_keys_array(t, plain))
    return order, parts


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sorted_parts())
def test_merge_ids_merge_as_heapq_merges_keys_in_zed_order(drawn: Any) -> None:
    order, parts = drawn
    tagged = [[(v, p, i) for i, v in enumerate(key_values(a))] for p, a in enumerate(parts)]
    want = [p for _, p, _ in heapq.merge(*tagged, key=lambda x: sort_key(x[0]),
                                         reverse=order == "desc")]
    assert merge_ids(parts, order).tolist() == want


def test_in_range_is_zed_order_across_families() -> None:
    keys = A.from_pylist(INT64, [1, 5, None, 9])
    assert in_range(keys, KeyRange(Value(INT64, 2), Value(INT64, 9), True, False)).tolist() \
        == [False, True, False, False]
    # every int sorts below every string in Zed's order (by type name)
    assert in_range(keys, KeyRange(None, Value(STRING, "a"), True, True)).tolist() == \
        [True, True, False, True]


def test_a_lake_of_overlapping_objects_of_two_shapes_scans_in_key_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end on a lake the tests' own writer built: overlapping objects of two row
    types (nulls, a nested field), both pool orders, with and without the C decoders:
    the rows written, in key order, narrowed to the key range."""
    from csup_async.decode import kernels

    t1 = rec(("ts", "time"), ("host", "string"), ("n", "int64"))
    t2 = rec(("n", "string"), ("ts", "time"), ("inner", rec(("x", "int64"))))
    b = LakeBuilder(tmp_path / "lake")
    written: list[dict[str, Any]] = []
    for order in ("asc", "desc"):
        p = b.create_pool(f"p{order}", key="ts", key_type="time", order=order, stride=64)
        for start in (0, 40, 40, 300):
            one = [{"ts": start + 3 * i, "host": None if i % 5 == 0 else f"h{i}", "n": i}
                   for i in range(30)]
            two = [{"n": str(i), "ts": start + 3 * i + 1,
                    "inner": None if i % 4 else {"x": i}} for i in range(20)]
            b.load(p, "main", one, t1)
            b.load(p, "main", two, t2)
            if order == "asc":
                written += one + two

    async def scan(pool: str, cols: Any, kr: Any) -> Any:
        async with csup_async.open_lake(str(tmp_path / "lake")) as lake:
            return await (await lake.pool(f"{pool}@main")).scan(cols, key_range=kr)

    def ns(x: Any) -> int:
        return int(np.datetime64(x, "ns").astype(np.int64))

    lo, hi = np.datetime64(45, "ns"), np.datetime64(330, "ns")
    for native in (True, False):
        if not native:
            monkeypatch.setattr(kernels, "_K", None)
        for pool in ("pasc", "pdesc"):
            for kr in (None, (lo, hi)):
                got = asyncio.run(scan(pool, None, kr))
                keep = [r for r in written if kr is None or 45 <= r["ts"] <= 330]
                assert got.num_rows == len(keep) > 0
                assert set(got.columns) == {"ts", "host", "n", "inner"}
                ts = [ns(r["ts"]) for r in got.to_pylist()]
                assert ts == sorted(ts, reverse=pool == "pdesc")
                have = sorted(((ns(r["ts"]), r["host"], r["n"], r["inner"])
                               for r in got.to_pylist()), key=repr)
                want = sorted(((r["ts"], r.get("host"), r["n"], r.get("inner"))
                               for r in keep), key=repr)
                assert have == want
                part = asyncio.run(scan(pool, ["inner.x", "ts"], kr))
                assert sorted(x for x in part.columns["inner.x"].to_pylist()
                              if x is not None) == sorted(
                    r["inner"]["x"] for r in keep if r.get("inner"))


def test_a_damaged_data_object_is_a_lake_error_naming_it(tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", key="ts", key_type="int64")
    _, o = b.load(p, "main", [{"ts": i, "s": "abc"} for i in range(50)],
                  rec(("ts", "int64"), ("s", "string")))
    data = b.root / p.dir / "data" / f"{o.name}.zng"
    raw = bytearray(data.read_bytes())
    raw[raw.index(b"abc")] = 0xFF  # not UTF-8 in a string
    data.write_bytes(bytes(raw))

    async def go() -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            return await (await lake.pool("logs")).scan(["ts", "s"])

    with pytest.raises(csup_async.LakeError, match="not valid ZNG") as e:
        asyncio.run(go())
    assert o.name in (e.value.path or "")


# --------------------------------------------- the column-wise BSUP decoding ---
NESTED = RecordType((Field("x", INT64), Field("y", STRING)))
FIELD_TYPES: list[Type] = [INT64, INT8, UINT32, TIME, DURATION, FLOAT64, BOOL, STRING, BYTES,
                           IP, NamedType("port", UINT16), NESTED, ArrayType(INT64)]
NAMES = ["a", "b", "c", "ts"]


def value_of(t: Type) -> st.SearchStrategy[Any]:
    simple: dict[Type, st.SearchStrategy[Any]] = {
        INT64: st.integers(-(2**63), 2**63 - 1), INT8: st.integers(-127, 127),
        UINT32: st.integers(0, 2**32 - 1),
        TIME: st.integers(-(2**62), 2**62).map(lambda x: np.datetime64(x, "ns")),
        DURATION: st.integers(-(2**62), 2**62).map(lambda x: np.timedelta64(x, "ns")),
        FLOAT64: st.floats(allow_nan=False), BOOL: st.booleans(),
        STRING: st.text(max_size=200),  # some bodies need a two-byte tag
        BYTES: st.binary(max_size=20),
        IP: st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)}
    if t in simple:
        return simple[t]
    if isinstance(t, NamedType):
        return st.integers(0, 65535)
    if t == NESTED:
        return st.fixed_dictionaries({"x": st.one_of(st.none(), value_of(INT64)),
                                      "y": st.one_of(st.none(), value_of(STRING))})
    return st.lists(st.integers(-5, 5), max_size=4)


@st.composite
def streams(draw: Any) -> tuple[bytes, list[RecordType]]:
    """Streams of 1-3 record types (a field's type differing between them, null fields,
    null records), cut into several streams, some compressed."""
    types = []
    for _ in range(draw(st.integers(1, 3))):
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
        types.append(RecordType(tuple(Field(n, draw(st.sampled_from(FIELD_TYPES)))
                                      for n in names)))
    rows: list[tuple[RecordType, Any]] = []
    for _ in range(draw(st.integers(0, 40))):
        t = draw(st.sampled_from(types))
        if draw(st.integers(0, 15)) == 0:
            rows.append((t, None))
            continue
        rows.append((t, {f.name: None if draw(st.integers(0, 5)) == 0
                         else draw(value_of(f.type)) for f in t.fields}))
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]
    data = b"".join(bsup.encode_stream(rows[a:b], compress=draw(st.booleans()))
                    for a, b in itertools.pairwise(bounds) if b > a or a == 0)
    return data, types


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.data())
def test_columnwise_bsup_scans_equal_the_codecs_values(drawn: Any, data: Any) -> None:
    """What a pool scan's objects go through: the frames walked once, the columns
    decoded column-wise, against the BSUP codec's values of the same bytes (each column
    typed as the union of its field's types)."""
    raw, _ = drawn
    cols = data.draw(st.one_of(st.none(), st.lists(st.sampled_from([*NAMES, "zz"]),
                                                   unique=True, min_size=1)))
    r = reader_of_frames(LocalStore(), "x.zng", raw)
    values = bsup.read_values(raw, typed=False)
    types = list(dict.fromkeys(v.type for v in values))  # those the rows have
    present = [c for c in (cols or NAMES) if any(t.field(c) for t in types)]
    if cols is not None and len(present) < len(cols):
        with pytest.raises(csup_async.ColumnNotFoundError):
            asyncio.run(r.scan(cols))
        cols = present or None
        if cols is None:
            return
    res = asyncio.run(r.scan(cols))
    assert res.num_rows == len(values) == r.num_rows
    for c in cols or present:
        ft = unify([f.type for t in types if (f := t.field(c)) is not None])
        want = A.from_pylist(ft, [v.value.get(c) if isinstance(v.value, dict) else None
                                  for v in values])
        got = res.columns[c]
        assert got.type == want.type
        assert got.to_pylist() == want.to_pylist()


def test_a_column_null_on_every_row_keeps_its_declared_type() -> None:
    """A field whose rows are all null (or whose record is null) is still of its type,
    as the schema says; and a field of two types is their union though one is null."""
    t1 = RecordType((Field("a", INT64), Field("b", STRING)))
    t2 = RecordType((Field("b", INT64),))
    raw = bsup.encode_stream([(t1, None), (t1, {"a": None, "b": None}), (t2, {"b": 7})])
    r = reader_of_frames(LocalStore(), "x.zng", raw)
    res = asyncio.run(r.scan(["a", "b"]))
    assert res.columns["a"].type == INT64
    assert res.columns["b"].type == unify([STRING, INT64])
    assert res.to_pylist() == [{"a": None, "b": None}, {"a": None, "b": None},
                               {"a": None, "b": 7}]
    import pyarrow as pa

    assert pa.schema(r.schema.arrow(["a", "b"])) == res.to_arrow().schema


def test_a_filter_of_the_wrong_type_is_a_filter_error_not_a_damaged_object(
        tmp_path: Path) -> None:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", key="ts", key_type="int64")
    b.load(p, "main", [{"ts": i, "s": "abc"} for i in range(50)],
           rec(("ts", "int64"), ("s", "string")))

    async def go(where: str) -> Any:
        async with csup_async.open_lake(str(b.root)) as lake:
            return await (await lake.pool("logs")).scan(["ts"], filter=where)

    with pytest.raises(csup_async.FilterError) as e:
        asyncio.run(go("s > 5"))
    assert not isinstance(e.value, csup_async.LakeError)
    assert asyncio.run(go("ts >= 10 and s = 'abc'")).columns["ts"].to_pylist() == \
        list(range(10, 50))


def test_a_pool_scan_parses_its_arguments_once_whatever_its_objects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Pool.scan`` and ``iter_batches`` parse their columns and filter once (a
    ``planner.request.ScanRequest``); each object's scan narrows that request and parses
    nothing (it was once per object); the rows are those of the filter, in key order."""
    from planner.request import ScanRequest

    t = rec(("ts", "int64"), ("s", "string"))
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", key="ts", key_type="int64", stride=16)
    for start in (0, 20, 100, 200):  # two overlapping objects, two apart: three groups
        b.load(p, "main", [{"ts": start + i, "s": f"s{i % 3}"} for i in range(30)], t)
    seen = [0]
    parse = ScanRequest.parse.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ScanRequest], *args: Any, **kwargs: Any) -> ScanRequest:
        seen[0] += 1
        return parse(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScanRequest, "parse", classmethod(counted))

    async def go() -> list[Any]:
        out = []
        async with csup_async.open_lake(str(b.root)) as lake:
            pool = await lake.pool("logs")
            for cols in (["ts"], None):
                seen[0] = 0
                res = await pool.scan(cols, filter="s = 's1'")
                out.append((seen[0], res.column("ts").to_pylist()))
            seen[0] = 0
            got = [r async for r in pool.iter_batches(["ts", "s"], filter="s = 's1'")]
            out.append((seen[0], [v for r in got for v in r.column("ts").to_pylist()]))
        return out

    want = sorted(s + i for s in (0, 20, 100, 200) for i in range(30) if i % 3 == 1)
    for parses, ts in asyncio.run(go()):
        assert (parses, ts) == (1, want)
