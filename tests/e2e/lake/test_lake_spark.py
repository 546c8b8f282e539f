"""Spark reads a lake pool: ``.option("pool", "logs@main")``, pruning on the driver."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

from bench.lake_builder import LakeBuilder, ksuid_str, rec
from csup_async.spark import PUSHDOWN_CONF
from csup_async.spark.session import local_session

ROW = rec(("ts", "int64"), ("msg", "string"))
T0 = 1_700_000_000_000_000_000


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-lake-tests", cores=2)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[LakeBuilder, list[Any]]:
    b = LakeBuilder(tmp_path_factory.mktemp("sparklake") / "lake")
    p = b.create_pool("logs", stride=16)
    objs = []
    for k in range(6):
        _, o = b.load(p, "main", [{"ts": k * 100 + i, "msg": f"m{k * 100 + i}"}
                                  for i in range(100)], ROW)
        objs.append(o)
    b.create_branch(p, "dev")
    b.load(p, "dev", [{"ts": 5000, "msg": "dev"}], ROW)
    t = b.create_pool("times", key="ts", key_type="time", stride=64)
    b.load(t, "main", [{"ts": T0 + i * 10**9, "n": i} for i in range(60)],
           rec(("ts", "time"), ("n", "int64")))
    return b, objs


def test_read_pool_and_branch(spark: Any, lake: Any) -> None:
    b, _ = lake
    df = spark.read.format("csup").option("pool", "logs").load(str(b.root))
    assert df.schema.simpleString() == "struct<ts:bigint,msg:string>"
    assert df.count() == 600
    got = sorted(r.ts for r in df.collect())
    assert got == list(range(600))
    dev = spark.read.format("csup").option("pool", "logs@dev").load(str(b.root))
    assert dev.count() == 601 and dev.where("msg = 'dev'").count() == 1


def test_where_option_prunes_on_the_driver(spark: Any, lake: Any, tmp_path: Path) -> None:
    b, objs = lake
    report = tmp_path / "plan.json"
    df = (spark.read.format("csup").option("pool", "logs@main").option("where", "ts>=250;ts<260")
          .option("planReport", str(report)).load(str(b.root)))
    rows = sorted((r.ts, r.msg) for r in df.collect())
    assert rows == [(t, f"m{t}") for t in range(250, 260)]
    d = json.loads(report.read_text())
    assert [k["id"] for k in d["kept"]] == [objs[2].name]
    assert sorted(d["pruned_by_min_max"]) == sorted(o.name for o in objs if o is not objs[2])
    assert d["kept"][0]["bytes"] < objs[2].size


def test_where_option_takes_the_filter_grammar(spark: Any, lake: Any) -> None:
    """A conjunct on another column (or an or) is evaluated on the rows, not dropped."""
    b, _ = lake
    df = (spark.read.format("csup").option("pool", "logs@main")
          .option("where", "ts >= 250 and ts < 400 and (msg = 'm251' or ts = 399)")
          .load(str(b.root)))
    assert sorted(r.ts for r in df.collect()) == [251, 399]


def test_pushed_key_filters_prune(spark: Any, lake: Any, tmp_path: Path) -> None:
    b, objs = lake
    session = spark
    session.conf.set(PUSHDOWN_CONF, "true")
    try:
        report = tmp_path / "plan.json"
        df = (session.read.format("csup").option("pool", "logs").option("pushdown", "true")
              .option("planReport", str(report)).load(str(b.root)))
        got = sorted(r.ts for r in df.where("ts >= 410 and ts < 420 and msg != 'x'").collect())
        assert got == list(range(410, 420))
        d = json.loads(report.read_text())
        assert [k["id"] for k in d["kept"]] == [objs[4].name]
        times = (session.read.format("csup").option("pool", "times").option("pushdown", "true")
                 .load(str(b.root)))
        t = dt.datetime.fromtimestamp(T0 / 1e9 + 30, dt.UTC).replace(tzinfo=None)
        assert [r.n for r in times.where(times.ts >= t).orderBy("n").collect()] == list(
            range(30, 60))
    finally:
        session.conf.unset(PUSHDOWN_CONF)


def test_pool_by_id_and_commit(spark: Any, lake: Any) -> None:
    b, objs = lake
    pool_id = next(iter(b.branches))[0]
    first_commit = next(c for c, live in b.live.items() if set(live) == {objs[0].id})
    df = (spark.read.format("csup").option("pool", f"{pool_id}@main")
          .option("at", ksuid_str(first_commit)).load(str(b.root)))
    assert df.count() == 100


def test_read_pool_from_s3(spark: Any, lake: Any, moto_s3: Any) -> None:
    b, objs = lake
    prefix = f"spark-{objs[0].name}"
    b.upload(moto_s3.put, prefix)
    o = moto_s3.store_options()
    df = (spark.read.format("csup").option("pool", "logs@main")
          .option("endpoint", o["endpoint_url"]).option("region", o["region"])
          .option("accessKeyId", o["access_key_id"])
          .option("secretAccessKey", o["secret_access_key"])
          .option("where", "ts>=95;ts<=104").load(f"s3://{moto_s3.BUCKET}/{prefix}"))
    assert sorted(r.ts for r in df.collect()) == list(range(95, 105))
