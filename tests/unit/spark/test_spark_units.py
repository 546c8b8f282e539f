"""The Spark data source's parts without a SparkSession: types, conversion, filters, planning,
options, pickling and the write commit rule (local disk and moto's S3)."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    Not,
    StringStartsWith,
)
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type

import csup_async
from csup_async import CsupError
from csup_async.model import types as ST
from csup_async.model.values import Value
from csup_async.spark import convert, filters, listing, planning
from csup_async.spark.options import parse_options
from csup_async.spark.schema import (
    UINT64,
    column_paths,
    infer_schema,
    merge_types,
    spark_type,
)
from csup_async.spark.write import STAGING, CsupCommitMessage, CsupWriter
from csup_async.stores import S3Store

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _meta(path: Path, rows: list[Any]) -> Any:
    csup_async.write(str(path), rows)

    async def go() -> Any:
        async with csup_async.open(str(path)) as r:
            return r.meta

    return asyncio.run(go())


async def _scan(path: Path, rows: list[Any], columns: list[str]) -> Any:
    csup_async.write(str(path), rows)
    async with csup_async.open(str(path)) as r:
        return await r.scan(columns)


# ------------------------------------------------------------------ types ---
def test_super_types_map_to_exact_spark_types() -> None:
    assert spark_type(ST.INT8) == T.ByteType()
    assert spark_type(ST.UINT32) == T.LongType()
    assert spark_type(ST.UINT64) == T.DecimalType(20, 0)
    assert spark_type(ST.INT128) == T.StringType()
    assert spark_type(ST.TIME) == T.TimestampType()
    assert spark_type(ST.DURATION) == T.LongType()
    assert spark_type(ST.IP) == T.StringType()
    assert spark_type(ST.EnumType(("a", "b"))) == T.StringType()
    assert spark_type(ST.NamedType("port", ST.UINT16)) == T.IntegerType()
    assert spark_type(ST.SetType(ST.STRING)) == T.ArrayType(T.StringType(), True)
    assert spark_type(ST.MapType(ST.STRING, ST.FLOAT32)) == \
        T.MapType(T.StringType(), T.FloatType(), True)
    assert spark_type(ST.UnionType((ST.INT32, ST.INT64, ST.NULL))) == T.LongType()
    assert spark_type(ST.UnionType((ST.INT64, ST.FLOAT32))) == T.DoubleType()
    assert spark_type(ST.UnionType((ST.INT64, ST.STRING))) == T.StringType()
    with pytest.raises(csup_async.UnsupportedTypeError, match="decimal"):
        spark_type(ST.DECIMAL64)


def test_merge_rule() -> None:
    a = T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())])
    b = T.StructType([T.StructField("z", T.BooleanType()), T.StructField("x", T.LongType())])
    merged = merge_types(a, b)
    assert [(f.name, f.dataType) for f in merged.fields] == [
        ("x", T.LongType()), ("y", T.StringType()), ("z", T.BooleanType())]
    assert merge_types(T.LongType(), UINT64) == UINT64
    assert merge_types(T.NullType(), T.BinaryType()) == T.BinaryType()
    assert merge_types(T.ArrayType(T.ByteType()), T.ArrayType(T.DoubleType())) == \
        T.ArrayType(T.DoubleType(), True)
    assert merge_types(T.TimestampType(), T.LongType()) == T.StringType()
    assert merge_types(a, T.ArrayType(T.LongType())) == T.StringType()


def test_schema_inferred_across_files_and_this(tmp_path: Path) -> None:
    m1 = _meta(tmp_path / "1.csup", [{"a": 1, "r": {"x": 1}}, {"a": 2, "r": {"x": 2}}])
    m2 = _meta(tmp_path / "2.csup", [{"a": "s", "r": {"y": "q"}, "l": [1.5]}])
    schema = infer_schema([m1, m2])
    assert schema.simpleString() == \
        "struct<a:string,r:struct<x:bigint,y:string>,l:array<double>>"
    assert column_paths(schema, [m1, m2]) == {"a": "a", "r": "r", "l": "l"}
    m3 = _meta(tmp_path / "3.csup", [1, {"a": 2}])
    schema = infer_schema([m3])
    assert schema.simpleString() == "struct<a:bigint,this:string>"
    assert column_paths(schema, [m3]) == {"a": "a", "this": ""}
    odd = _meta(tmp_path / "4.csup", [{"a.b": 1}])
    assert column_paths(infer_schema([odd]), [odd]) == {"a.b": "`a.b`"}


# ------------------------------------------------------------- conversion ---
def _target(spark_t: T.DataType) -> pa.DataType:
    return to_arrow_type(spark_t, timezone="UTC")


async def test_conform_primitives_times_and_unions(tmp_path: Path) -> None:
    t0 = np.datetime64("1969-12-31T23:59:59.999999999", "ns")
    rows = [{"t": t0, "u": 2**64 - 1, "d": np.timedelta64(1500, "ns"), "e": 1,
             "ip": ipaddress.ip_address("10.0.0.1"), "b": b"\x00\xff"},
            {"t": None, "u": 5, "d": None, "e": "x", "ip": None, "b": None}]
    res = await _scan(tmp_path / "p.csup", rows, ["t", "u", "d", "e", "ip", "b"])
    got = {
        "t": convert.conform(res.column("t"), _target(T.TimestampType()), "t").to_pylist(),
        "u": convert.conform(res.column("u"), _target(UINT64), "u").to_pylist(),
        "d": convert.conform(res.column("d"), _target(T.LongType()), "d").to_pylist(),
        "e": convert.conform(res.column("e"), _target(T.StringType()), "e").to_pylist(),
        "ip": convert.conform(res.column("ip"), _target(T.StringType()), "ip").to_pylist(),
        "b": convert.conform(res.column("b"), _target(T.BinaryType()), "b").to_pylist(),
    }
    utc = dt.UTC
    # floored, not truncated: 1 ns before the epoch is 1 µs before it
    assert got["t"] == [dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc), None]
    assert [int(x) if x is not None else None for x in got["u"]] == [2**64 - 1, 5]
    assert got["d"] == [1500, None]
    assert got["e"] == ["1", "x"]  # a union of int64 and string, as strings
    assert got["ip"] == ["10.0.0.1", None]
    assert got["b"] == [b"\x00\xff", None]
    with pytest.raises(CsupError, match="out of range"):
        convert.conform(res.column("u"), _target(T.LongType()), "u")
    with pytest.raises(csup_async.UnsupportedTypeError, match="cannot read"):
        convert.conform(res.column("b"), _target(T.LongType()), "b")


async def test_conform_nested_to_the_exact_arrow_schema(tmp_path: Path) -> None:
    rows = [{"r": {"x": 1, "z": "drop"}, "l": [1, 2], "m": Value(
                ST.MapType(ST.STRING, ST.INT64), {"k": 1}), "j": {"a": [1, "two"]}},
            {"r": None, "l": None, "m": None, "j": 3},
            {"r": {"x": None, "z": "q"}, "l": [], "m": Value(
                ST.MapType(ST.STRING, ST.INT64), {}), "j": None}]
    res = await _scan(tmp_path / "n.csup", rows, ["r", "l", "m", "j"])
    schema = T.StructType([
        T.StructField("r", T.StructType([T.StructField("x", T.LongType()),
                                         T.StructField("y", T.StringType())])),
        T.StructField("l", T.ArrayType(T.DoubleType())),
        T.StructField("m", T.MapType(T.StringType(), T.LongType())),
        T.StructField("j", T.StringType())])
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    arrays = [convert.conform(res.column(f.name), f.type, f.name) for f in arrow_schema]
    batch = pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
    assert batch.schema.equals(arrow_schema)
    assert batch.to_pylist() == [
        {"r": {"x": 1, "y": None}, "l": [1.0, 2.0], "m": [("k", 1)], "j": '{"a":[1,"two"]}'},
        {"r": None, "l": None, "m": None, "j": "3"},
        {"r": {"x": None, "y": None}, "l": [], "m": [], "j": None}]


# ---------------------------------------------------------------- filters ---
def test_filters_decided_by_metadata(tmp_path: Path) -> None:
    has = _meta(tmp_path / "has.csup", [{"a": 1, "b": None}, {"a": None, "b": None}])
    lacks = _meta(tmp_path / "lacks.csup", [{"b": "x"}])
    paths = {"a": "a", "b": "b", "r": "r"}
    metas = [has, lacks]

    def run(*fs: Any) -> tuple[list[int], list[Any]]:
        kept, _, remaining = filters.decide(list(fs), metas, paths)
        return kept, remaining

    for f in (IsNotNull(("a",)), EqualTo(("a",), 1), GreaterThan(("a",), 0),
              In(("a",), (1, 2)), StringStartsWith(("a",), "x"), Not(EqualTo(("a",), 1)),
              Not(IsNull(("a",))), EqualNullSafe(("a",), 1), IsNotNull(("r", "x"))):
        kept, remaining = run(f)
        # NOT (a = 1): `has`'s statistics say a is 1 wherever it is not null, so never true
        ruled_out = f in (IsNotNull(("r", "x")), Not(EqualTo(("a",), 1)))
        assert kept == ([] if ruled_out else [0]), f
    kept, remaining = run(IsNotNull(("b",)))  # b is all null in `has`, a string in `lacks`
    assert kept == [1] and remaining == []  # `lacks`'s statistics: b is never null there
    kept, remaining = run(IsNull(("a",)))  # unknown in `has`: stays with Spark
    assert kept == [0, 1] and len(remaining) == 1
    only_lacks_null = IsNull(("a",))
    kept, _, remaining = filters.decide([only_lacks_null], [lacks], paths)
    assert kept == [0] and remaining == []  # true in every row of every file left
    kept, remaining = run(EqualNullSafe(("a",), None), Not(IsNotNull(("a",))))
    assert kept == [0, 1]
    assert filters.describe(Not(EqualTo(("a", "b"), "x"))) == "NOT (a.b = 'x')"


def test_hidden_names() -> None:
    assert listing.is_hidden("s3://b/p/", "s3://b/p/_csup_staging/j/part.csup")
    assert listing.is_hidden("s3://b/p/", "s3://b/p/_SUCCESS")
    assert listing.is_hidden("s3://b/p/*.csup", "s3://b/p/.x.csup")
    assert not listing.is_hidden("s3://b/p/", "s3://b/p/day=1/part.csup")
    assert not listing.is_hidden("s3://b/_p/", "s3://b/_p/part.csup")  # above the prefix
    assert not listing.is_hidden("/d/_x.csup", "/d/_x.csup")  # named explicitly
    assert listing.is_hidden("file:///d", "/d/_tmp/a.csup")


# ---------------------------------------------------------------- options ---
def test_options_parse_validate_and_hide_secrets() -> None:
    s = parse_options({"path": "s3://b/p/", "endpoint": "http://127.0.0.1:1",
                       "accesskeyid": "AKID", "secretaccesskey": "TOPSECRET",
                       "anonymous": "false", "targetpartitionbytes": "1_000_000",
                       "pushdown": "true", "profile": "s3"})
    assert s.store_options("s3://b/p/") == {
        "endpoint": "http://127.0.0.1:1", "access_key_id": "AKID",
        "secret_access_key": "TOPSECRET"}  # anonymous=False is the default
    assert s.target_partition_bytes == 1_000_000 and s.pushdown
    assert "TOPSECRET" not in repr(s) and "AKID" not in repr(s)
    with pytest.raises(CsupError, match="region do not apply to local"):
        parse_options({"path": "/x", "region": "eu"}).store_options("/x")
    with pytest.raises(CsupError, match=r"unknown option 'colums'.*accepted"):
        parse_options({"path": "/x", "colums": "a"})
    with pytest.raises(CsupError, match="true or false"):
        parse_options({"path": "/x", "pushdown": "maybe"})
    with pytest.raises(csup_async.CsupError, match="profile"):
        parse_options({"path": "/x", "profile": "mars"})
    assert parse_options({"paths": '["/a", "/b"]'}).paths == ["/a", "/b"]


# --------------------------------------------------------------- planning ---
def _local_files(root: Path) -> Path:
    d = root / "ds"
    d.mkdir()
    csup_async.write(str(d / "a.csup"), [{"k": "a", "v": i} for i in range(100)])
    csup_async.write(str(d / "b.csup"), [{"k": "b"}] * 7)  # no v
    csup_async.write(str(d / "c.csup"), [{"k": "c", "v": None}] * 5)  # v all null
    csup_async.write(str(d / "d.csup"), [])  # no rows
    csup_async.write(str(d / "e.csup"), [{"z": 1}, 2])  # neither, and 2 super types
    (d / "_SUCCESS").write_text("")
    (d / "_csup_staging").mkdir()
    csup_async.write(str(d / "_csup_staging" / "x.csup"), [{"k": "hidden"}])
    return d


def test_plan_prunes_ships_packs_and_pickles_small(tmp_path: Path) -> None:
    d = _local_files(tmp_path)
    settings = parse_options({"path": str(d), "secretAccessKey": "S3CR3T"})
    settings.store = {}
    loaded = listing.load_sync(settings)
    assert [Path(f.url).name for f in loaded.files] == [
        "a.csup", "b.csup", "c.csup", "d.csup", "e.csup"]
    assert loaded.metadata_requests == 5
    cols = (("k", "k"), ("v", "v"))
    plan = planning.plan_read(loaded, cols, [], settings)
    parts = [fp for p in plan.partitions for fp in p.files]
    assert [Path(fp.url).name for fp in parts] == ["a.csup", "b.csup", "c.csup", "e.csup"]
    assert plan.report["pruned_by"] == {"no rows": 1}
    only_v = planning.plan_read(loaded, (("v", "v"),), [], settings)
    nulls = {Path(fp.url).name: fp.rows for p in only_v.partitions for fp in p.files
             if fp.plan is None}
    # rows kept, no reads (e's two super types: its super column's counts say 2)
    assert nulls == {"b.csup": 7, "c.csup": 5, "e.csup": 2}
    assert only_v.report["files_null_rows"] == 3 and only_v.report["requests"] == 0
    pushed = planning.plan_read(loaded, cols, [IsNotNull(("v",))], settings)
    assert [Path(fp.url).name for p in pushed.partitions for fp in p.files] == ["a.csup"]
    assert pushed.report["pruned_by"] == {"filter": 4}  # the empty file too
    a = next(fp for p in plan.partitions for fp in p.files if fp.url.endswith("a.csup"))
    assert a.served and a.plan is not None and a.plan.request_count == 0  # all served
    assert sum(len(b) for _, b in a.served) == a.plan.bytes_needed  # only what is needed
    blob = pickle.dumps(plan.partitions)
    assert b"S3CR3T" not in blob and len(blob) < 20_000
    assert "S3CR3T" not in repr(plan.partitions) and "files=" in repr(plan.partitions[0])
    from csup_async.spark.source import CsupFilteringReader

    reader = CsupFilteringReader(T.StructType([T.StructField("k", T.StringType())]),
                                 settings)
    planned = [Path(fp.url).name for p in reader.read_plan().partitions for fp in p.files]
    assert planned == ["a.csup", "b.csup", "c.csup", "e.csup"]
    shipped = pickle.dumps(reader)  # executors get partitions only: no planned file
    assert not [name for name in planned if name.encode() in shipped]


async def test_shipped_bytes_serve_the_executor_and_results_repr_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition's shipped bytes reach the fragment's reader (``reader_from_meta(available=)``)
    (a small file costs the executor no request), and what ``asyncio.run`` returns on the
    driver has a short repr: Python 3.11's ``asyncio.run`` builds the result's repr
    (twice) while restoring the SIGINT handler."""
    from csup_async.spark import executor
    from csup_async.stores import store_for

    d = _local_files(tmp_path)
    settings = parse_options({"path": str(d)})
    loaded = await asyncio.to_thread(listing.load_sync, settings)
    plan = planning.plan_read(loaded, (("k", "k"), ("v", "v")), [], settings)
    assert len(repr(loaded)) < 40 and len(repr(plan)) < 100
    assert all(len(repr(p)) < 60 for p in plan.partitions)
    a = next(fp for p in plan.partitions for fp in p.files if fp.url.endswith("a.csup"))
    store, _ = store_for(a.url)

    async def no_reads(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the executor read bytes the driver shipped")

    monkeypatch.setattr(store, "read_range", no_reads)
    monkeypatch.setattr(store, "read_tail", no_reads)
    try:
        res = await executor.fragment_of(a, ["k", "v"], store, {}).scan(["k", "v"])
    finally:
        await store.close()
    assert res.num_rows == 100 and res.column("v").to_pylist() == list(range(100))


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A count of ``ScanRequest.parse`` calls (where a read's arguments are checked)."""
    from planner.request import ScanRequest

    seen = [0]
    parse = ScanRequest.parse.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ScanRequest], *args: Any, **kwargs: Any) -> ScanRequest:
        seen[0] += 1
        return parse(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScanRequest, "parse", classmethod(counted))
    return seen


def test_verb_options_are_parsed_once_into_a_request(tmp_path: Path) -> None:
    """``batchRows``, ``maxRequests`` and ``maxBytes`` are a read's arguments: checked as
    a verb's are (``ScanRequest.parse``), once, refused in the options' own words."""
    s = parse_options({"path": "/x", "batchRows": "7", "maxBytes": "1_000", "maxRequests": 3})
    assert (s.batch_rows, s.max_bytes, s.max_requests) == (7, 1000, 3)
    assert s.request.batch_rows == 7 and s.request.budget.max_bytes == 1000
    assert parse_options({"path": "/x"}).request.budget.given is False
    for bad, message in [({"batch_rows": "0"}, "option batch_rows must be at least 1"),
                         ({"maxBytes": "-1"}, "option maxBytes must be >= 0"),
                         ({"maxrequests": "-5"}, "option maxRequests must be >= 0"),
                         ({"batchRows": "x"}, "option 'batchRows' must be a number")]:
        with pytest.raises(CsupError, match=message):
            parse_options({"path": "/x", **bad})


@pytest.mark.parametrize("on_executors", [False, True])
def test_the_driver_parses_a_read_once_and_tasks_parse_nothing(
        tmp_path: Path, parses: list[int], on_executors: bool) -> None:
    """The driver's request (the columns' paths, ``batchRows``; not the query's budget,
    checked on the driver) travels pickled with every partition, planned on the driver
    or by the tasks; planning (SuperDB files' own plans too) and the tasks' reads run
    it and parse nothing: the rows are every file's, in batches of ``batchRows``."""
    from csup_async.spark import executor, scaleout

    d = _local_files(tmp_path)
    csup_async.write(str(d / "f.csup"), [{"k": "f", "v": i} for i in range(9)],
                     target="super")  # a SuperDB file: its reader plans its own reads
    csup_async.write(str(d / "g.csup"), [{"k": "g", "v": 1}] * 3, target="super-0.3")
    settings = parse_options({"path": str(d), "batchRows": "7", "maxBytes": "1_000_000_000"})
    cols = (("k", "k"), ("v", "v"))
    parses[0] = 0
    if on_executors:
        plan = scaleout.plan_unopened(listing.load_sync(settings, (), 0), cols, [], settings)
    else:
        plan = planning.plan_read(listing.load_sync(settings), cols, [], settings)
    parts = pickle.loads(pickle.dumps(plan.partitions))
    assert {type(p) for p in parts} == {scaleout.UnopenedPartition if on_executors
                                        else planning.CsupPartition}
    req = parts[0].request
    assert (req.columns, req.batch_rows, req.budget.given) == (("k", "v"), 7, False)
    schema = T.StructType([T.StructField("k", T.StringType()),
                           T.StructField("v", T.LongType())])
    batches = [b for p in parts for b in executor.read_partition(p, schema, settings)]
    assert parses[0] == 0
    assert max(b.num_rows for b in batches) <= 7
    got = sorted((r["k"] or "", r["v"] or 0) for b in batches for r in b.to_pylist())
    assert len(got) == 100 + 7 + 5 + 2 + 9 + 3
    assert [v for k, v in got if k == "f"] == list(range(9))


def test_min_partitions_split_data_over_the_cores(tmp_path: Path) -> None:
    d = tmp_path / "many"
    d.mkdir()
    rng = np.random.default_rng(0)
    for i in range(6):  # ~300 KB each: more than the local profile's cost of a request
        xs = rng.integers(0, 2**62, 40_000).tolist()
        csup_async.write(str(d / f"{i}.csup"), [{"x": x} for x in xs])
    settings = parse_options({"path": str(d), "minPartitions": "3"})
    plan = planning.plan_read(listing.load_sync(settings), (("x", "x"),), [], settings)
    assert len(plan.partitions) == 3
    settings.min_partitions = 1
    assert len(planning.plan_read(listing.load_sync(settings), (("x", "x"),), [],
                                  settings).partitions) == 1


# ------------------------------------------------------------------ write ---
def _batches(n: int, tag: str) -> list[pa.RecordBatch]:
    t = pa.table({"i": pa.array(range(n), pa.int64()), "tag": [tag] * n,
                  "ts": pa.array([i * 1_000_000 for i in range(n)],
                                 pa.timestamp("us", tz="UTC"))})
    return t.to_batches(max_chunksize=max(1, n // 2))


def _visible(names: list[str], base: str) -> list[str]:
    return sorted(n for n in names if not listing.is_hidden(base, n))


async def _rows(urls: list[str], options: dict[str, Any]) -> list[dict[str, Any]]:
    async with csup_async.open_dataset(urls, **options) as ds:
        return (await ds.scan(["i", "tag"])).to_pylist()


def test_commit_rule_local(tmp_path: Path) -> None:
    dest = str(tmp_path / "out")
    w = CsupWriter(dest, parse_options({"path": dest}, write=True), overwrite=False)
    lost = w.write_task(_batches(10, "lost"), 0, 0)  # the attempt Spark did not accept
    m0 = w.write_task(_batches(10, "p0"), 0, 1)
    m1 = w.write_task(_batches(4, "p1"), 1, 0)
    empty = w.write_task([], 2, 0)
    assert lost.staged and m0.staged and m1.staged and empty.staged is None
    # nothing is visible before the commit: staged files are hidden
    listed = [str(p) for p in Path(dest).rglob("*") if p.is_file()]
    assert _visible(listed, dest + "/") == []
    w.commit([m0, m1, empty, None])
    listed = [str(p) for p in Path(dest).rglob("*") if p.is_file()]
    assert _visible(listed, dest + "/") == [w.final_name(0), w.final_name(1)]
    assert not (Path(dest) / STAGING).exists()
    rows = asyncio.run(_rows([w.final_name(0), w.final_name(1)], {}))
    assert [r["tag"] for r in rows] == ["p0"] * 10 + ["p1"] * 4
    # a second job that fails leaves nothing; overwrite replaces the first job's files
    w2 = CsupWriter(dest, w.settings, overwrite=True)
    w2.write_task(_batches(3, "x"), 0, 0)
    w2.abort([None])
    listed = [str(p) for p in Path(dest).rglob("*") if p.is_file()]
    assert _visible(listed, dest + "/") == [w.final_name(0), w.final_name(1)]
    m = w2.write_task(_batches(3, "new"), 5, 0)
    w2.commit([m])
    listed = [str(p) for p in Path(dest).rglob("*") if p.is_file()]
    assert _visible(listed, dest + "/") == [w2.final_name(5)]


def test_commit_rule_s3_with_multipart(moto_s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from csup_async.spark import sinks

    monkeypatch.setattr(sinks, "PART_SIZE", 5 << 20)  # S3's smallest part
    monkeypatch.setattr(sinks, "COPY_LIMIT", 1 << 20)  # copy in parts above 1 MiB
    opts = {k.replace("_", ""): v for k, v in moto_s3.store_options().items()}
    opts["endpoint"] = opts.pop("endpointurl")
    opts = {"accessKeyId" if k == "accesskeyid" else "secretAccessKey"
            if k == "secretaccesskey" else k: v for k, v in opts.items()}
    dest = f"s3://{moto_s3.BUCKET}/spark-units/out"
    settings = parse_options({"path": dest, **opts, "compress": "false"}, write=True)
    w = CsupWriter(dest, settings, overwrite=False)
    rng = np.random.default_rng(1)
    big = pa.table({"i": pa.array(range(700), pa.int64()), "tag": ["big"] * 700,
                    "blob": [rng.bytes(10_000) for _ in range(700)]})  # ~7 MB: 2 parts
    lost = w.write_task(_batches(5, "lost"), 1, 0)
    m0 = w.write_task(big.to_batches(), 0, 0)
    m1 = w.write_task(_batches(5, "p1"), 1, 1)
    assert m0.size > 5 << 20 and lost.staged != m1.staged
    w.commit([m0, m1])

    async def listing() -> list[str]:  # what a reader of the bucket sees
        async with S3Store(**moto_s3.store_options()) as store:
            return await store.list(dest + "/")

    names = asyncio.run(listing())
    assert _visible(names, dest + "/") == [w.final_name(0), w.final_name(1)]
    assert not [n for n in names if STAGING in n]
    store = moto_s3.store_options()
    rows = asyncio.run(_rows([w.final_name(0), w.final_name(1)], store))
    assert len(rows) == 705 and rows[-1]["tag"] == "p1"
    assert isinstance(CsupCommitMessage(0, 0, None, 0, 0), CsupCommitMessage)
