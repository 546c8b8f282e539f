"""The ``csup`` Spark data source in local mode: reads and writes on local disk and moto's S3."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

import csup_async
from csup_async.model import types as ST
from csup_async.model.values import Value
from csup_async.spark import PUSHDOWN_CONF
from csup_async.spark.listing import is_hidden
from csup_async.spark.session import local_session
from csup_async.spark.write import STAGING

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


UTC = dt.UTC


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-tests", cores=2)
    yield session
    session.stop()


def _s3_options(moto_s3: Any) -> dict[str, str]:
    o = moto_s3.store_options()
    return {"endpoint": o["endpoint_url"], "region": o["region"],
            "accessKeyId": o["access_key_id"], "secretAccessKey": o["secret_access_key"]}


def _visible_local(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*") if p.is_file()
                  and not is_hidden(str(d) + "/", str(p)))


# ------------------------------------------------------------------- read ---
def test_types_and_schema_merge_across_files(spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "types"
    d.mkdir()
    t = np.datetime64("2026-01-02T03:04:05.123456789", "ns")
    csup_async.write(str(d / "1.csup"), [
        {"i8": Value(ST.INT8, -3), "u": 2**64 - 1, "f": Value(ST.FLOAT32, 1.5), "t": t,
         "dur": np.timedelta64(7, "ns"), "b": b"\x01", "ok": True,
         "ip": ipaddress.ip_address("::1"), "e": Value(ST.EnumType(("lo", "hi")), "hi"),
         "r": {"x": 1}, "a": [1, 2], "s": {3}, "m": Value(ST.MapType(ST.STRING, ST.INT64),
                                                        {"k": 9}), "mix": 1}])
    csup_async.write(str(d / "2.csup"), [
        {"r": {"y": "q"}, "mix": "one", "a": [2.5], "extra": None},
        {"r": None, "mix": None}])
    df = spark.read.format("csup").load(str(d))
    assert df.schema.simpleString() == (
        "struct<i8:tinyint,u:decimal(20,0),f:float,t:timestamp,dur:bigint,b:binary,"
        "ok:boolean,ip:string,e:string,r:struct<x:bigint,y:string>,a:array<double>,"
        "s:array<bigint>,m:map<string,bigint>,mix:string,extra:void>")
    rows = [r.asDict(recursive=True) for r in df.collect()]
    assert rows[0] == {
        "i8": -3, "u": 2**64 - 1, "f": 1.5,
        "t": dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC).replace(tzinfo=None),
        "dur": 7, "b": bytearray(b"\x01"), "ok": True, "ip": "::1", "e": "hi",
        "r": {"x": 1, "y": None}, "a": [1.0, 2.0], "s": [3], "m": {"k": 9}, "mix": "1",
        "extra": None}
    assert rows[1]["mix"] == "one" and rows[1]["r"] == {"x": None, "y": "q"}
    assert rows[1]["a"] == [2.5] and rows[1]["u"] is None
    assert rows[2]["r"] is None and len(rows) == 3


def _dataset(root: Path) -> Path:
    d = root / "ds"
    d.mkdir()
    csup_async.write(str(d / "a.csup"), [{"k": "a", "v": i} for i in range(100)])
    csup_async.write(str(d / "b.csup"), [{"k": "b"}] * 7)  # no v
    csup_async.write(str(d / "c.csup"), [{"k": "c", "v": None}] * 5)  # v all null
    csup_async.write(str(d / "e.csup"), [{"z": 1}, 2])  # neither k nor v
    (d / "_SUCCESS").write_text("{}")
    return d


def test_user_schema_is_the_projection_and_keeps_rows(spark: Any, tmp_path: Path) -> None:
    d = _dataset(tmp_path)
    report = tmp_path / "report.json"
    df = (spark.read.format("csup").schema("v long, nope string")
          .option("planReport", str(report)).load(str(d)))
    rows = df.collect()
    assert len(rows) == 114  # files without v still give their rows, as nulls
    assert sum(r.v for r in rows if r.v is not None) == sum(range(100))
    assert all(r.nope is None for r in rows)
    plan = json.loads(report.read_text())
    assert plan["files_listed"] == 4 and plan["metadata_requests"] == 4
    assert plan["files_null_rows"] == 3 and plan["files_read"] == 1
    assert plan["requests"] == 0  # small files: the tail read already holds the bytes
    assert df.where("v > 97").count() == 2


def test_pushdown_prunes_files_and_agrees_with_spark(spark: Any, tmp_path: Path) -> None:
    d = _dataset(tmp_path)
    report = tmp_path / "pushed.json"
    spark.conf.set(PUSHDOWN_CONF, "true")
    query = "v IS NOT NULL AND k <> 'zz'"
    pushed = (spark.read.format("csup").option("pushdown", "true")
              .option("planReport", str(report)).load(str(d)).where(query))
    got = sorted(tuple(r) for r in pushed.collect())
    plain = spark.read.format("csup").load(str(d)).where(query)
    assert got == sorted(tuple(r) for r in plain.collect()) and len(got) == 100
    plan = json.loads(report.read_text())
    assert plan["pruned_by"] == {"filter": 3} and plan["files_read"] == 1
    assert set(plan["pushed_filters"]) == {"v IS NOT NULL", "k IS NOT NULL",
                                           "NOT (k = 'zz')"}
    # a.csup's statistics prove all three for every row (v 0..99, k 'a'): Spark need not
    # check them (tests/test_spark_filters.py has filters that stay with Spark)
    assert plan["filters_for_spark"] == []


def test_pushdown_stays_opt_in_because_spark_reuses_a_filtered_plan(
        spark: Any, tmp_path: Path) -> None:
    """Why pushdown is not the default, shown on this PySpark (4.3.0).

    Its ``PythonScanBuilder.pushFilters`` stores the read plan made with the
    pushed filters on the relation (``PythonDataSourceV2.setReadInfo``), and
    ``getOrCreateReadInfo`` hands it to every later scan of that relation.  A
    later query that pushes no filter then reads only the files the filter
    kept.  Handing every filter back to Spark does not help: the *partitions*
    are what is reused.  Without pushdown (the default) the same sequence of
    queries is right.  If the pushed case ever comes out right, this Spark has
    scoped the plan to its scan (as Spark's master does) and pushdown could
    become the default.
    """
    d = _dataset(tmp_path)
    spark.conf.set(PUSHDOWN_CONF, "true")
    query = "v IS NOT NULL"
    plain = spark.read.format("csup").load(str(d))
    assert plain.where(query).count() == 100 and plain.count() == 114
    pushed = spark.read.format("csup").option("pushdown", "true").load(str(d))
    assert pushed.where(query).count() == 100
    stale = pushed.count()  # PySpark 4.3.0: the filtered query's partitions, reused
    assert stale in (100, 114)
    if stale == 114:
        pytest.xfail("this Spark no longer reuses a filtered read plan: pushdown could "
                     "be made the default")


def test_s3_prefix_glob_and_counted_requests(spark: Any, moto_s3: Any,
                                             tmp_path: Path) -> None:
    import io

    for i in range(5):
        buf = io.BytesIO()
        csup_async.write(buf, [{"n": i, "s": f"row{j}"} for j in range(50)])
        moto_s3.put(f"spark-src/p/f{i}.csup", buf.getvalue())
    moto_s3.put("spark-src/p/_SUCCESS", b"")
    opts = _s3_options(moto_s3)
    base = f"s3://{moto_s3.BUCKET}/spark-src/p"
    report = tmp_path / "s3.json"
    df = spark.read.format("csup").options(**opts).option("planReport", str(report)).load(base)
    assert df.count() == 250
    plan = json.loads(report.read_text())
    assert plan["files_listed"] == 5 and plan["metadata_requests"] == 5
    assert plan["requests"] == 0 and plan["bytes_shipped"] > 0
    glob = spark.read.format("csup").options(**opts).load(base + "/f[13].csup")
    assert sorted({r.n for r in glob.collect()}) == [1, 3]
    one = spark.read.format("csup").options(**opts).schema("s string").load(base + "/f4.csup")
    assert one.count() == 50


def _csup_bytes(rows: list[Any]) -> bytes:
    import io

    buf = io.BytesIO()
    csup_async.write(buf, rows)
    return buf.getvalue()


def test_http_list_and_gcs_prefix(spark: Any, range_server: Any, gcs_emulator: Any) -> None:
    urls = [range_server.url(range_server.put(f"spark-http/h{i}.csup",
                                              _csup_bytes([{"h": i}] * 3))) for i in range(3)]
    df = spark.read.format("csup").option("paths", json.dumps(urls)).load()
    assert sorted(r.h for r in df.collect()) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # one tail read per object for schema inference, one for planning; none from executors
    assert [s.headers["Range"][:7] for s in range_server.seen()] == ["bytes=-"] * 6
    for i in range(2):
        gcs_emulator.put(f"spark-gcs/g{i}.csup", _csup_bytes([{"g": i, "s": "x"}] * 4))
    gs = (spark.read.format("csup").option("endpoint", gcs_emulator.endpoint)
          .option("anonymous", "true").load(f"gs://{gcs_emulator.BUCKET}/spark-gcs/"))
    assert gs.schema.simpleString() == "struct<g:bigint,s:string>" and gs.count() == 8


def test_credentials_stay_out_of_errors_and_plans(spark: Any, moto_s3: Any) -> None:
    import io

    buf = io.BytesIO()
    csup_async.write(buf, [{"a": 1}])
    moto_s3.put("spark-secret/x.csup", buf.getvalue())
    secret = "not-the-real-secret-7f3a"
    opts = {**_s3_options(moto_s3), "secretAccessKey": secret}
    df = (spark.read.format("csup").options(**opts).schema("a long")
          .load(f"s3://{moto_s3.BUCKET}/spark-secret/x.csup"))
    assert df.count() == 1  # moto does not check signatures: the secret is only carried
    assert secret not in df._jdf.queryExecution().toString()
    missing = (spark.read.format("csup").options(**opts).schema("a long")
               .load(f"s3://{moto_s3.BUCKET}/spark-secret/gone.csup"))
    with pytest.raises(Exception, match=r"gone\.csup") as err:
        missing.collect()
    assert secret not in str(err.value)


def test_limit_and_empty_location(spark: Any, tmp_path: Path) -> None:
    d = _dataset(tmp_path)
    assert len(spark.read.format("csup").load(str(d)).limit(3).collect()) == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    assert spark.read.format("csup").schema("a long").load(str(empty)).count() == 0
    with pytest.raises(Exception, match="no CSUP files"):
        spark.read.format("csup").load(str(empty))


# ------------------------------------------------------------------ write ---
def _frame(spark: Any) -> Any:
    from pyspark.sql import Row

    rows = [Row(id=i, name=f"n{i}" if i % 3 else None, score=i / 4, ok=i % 2 == 0,
                ts=dt.datetime(2026, 5, 1, tzinfo=UTC) + dt.timedelta(seconds=i),
                tags=[f"t{i}", "x"], geo=Row(lat=float(i), cc="de"), attrs={"k": i},
                raw=bytes([i % 256])) for i in range(200)]
    return spark.createDataFrame(rows).repartition(4)


def _normal(rows: list[Any]) -> list[Any]:
    return sorted((r.asDict(recursive=True) for r in rows), key=lambda r: r["id"])


def test_write_then_read_local_and_s3(spark: Any, moto_s3: Any, tmp_path: Path) -> None:
    df = _frame(spark)
    expected = _normal(df.collect())
    local = tmp_path / "out"
    df.write.format("csup").mode("overwrite").save(str(local))
    files = _visible_local(local)
    assert len(files) == 4 and all(f.endswith(".csup") for f in files)
    assert not (local / STAGING).exists() and (local / "_SUCCESS").exists()
    back = spark.read.format("csup").schema(df.schema).load(str(local))
    assert _normal(back.collect()) == expected
    opts = _s3_options(moto_s3)
    dest = f"s3://{moto_s3.BUCKET}/spark-write/out"
    df.write.format("csup").options(**opts).mode("overwrite").save(dest)
    df.limit(10).write.format("csup").options(**opts).mode("append").save(dest)
    s3 = spark.read.format("csup").options(**opts).schema(df.schema).load(dest)
    assert s3.count() == 210
    df.limit(5).write.format("csup").options(**opts).mode("overwrite").save(dest)
    assert spark.read.format("csup").options(**opts).load(dest).count() == 5


def test_failed_job_leaves_no_visible_file(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    def boom(x):  # type: ignore[no-untyped-def]  (hints would make Spark try Arrow UDFs)
        if x == 150:
            raise ValueError("task failure on purpose")
        return x

    df = _frame(spark).withColumn("id", F.udf(boom, LongType(), useArrow=False)("id"))
    dest = tmp_path / "failed"
    with pytest.raises(Exception, match="on purpose"):
        df.write.format("csup").mode("append").save(str(dest))
    assert not dest.exists() or _visible_local(dest) == []
    # abort deleted the staging prefix; a task killed with the job may still finish its
    # upload after that, but its file stays hidden: a later job and its readers ignore it
    _frame(spark).limit(20).write.format("csup").mode("append").save(str(dest))
    assert len(_visible_local(dest)) >= 1
    assert spark.read.format("csup").load(str(dest)).count() == 20
