"""A real pipeline: NDJSON events -> Spark -> CSUP on S3 -> pruned projection read -> aggregate.

Six days of NDJSON events go through one Spark job into a CSUP dataset on S3,
one file per day.  The event schema evolved: days 1-3 predate the ``amount``
field, and on day 5 nobody bought anything, so in four of the six daily files
``amount`` is null throughout.  Revenue per kind and
country is then computed from the CSUP files with a two-column-plus-struct
projection and ``amount IS NOT NULL`` pushed down: the driver reads each file's
metadata once, drops the four files that cannot match without reading their
data, and executors read only the projected columns of the other two.  The
same aggregate computed by Spark straight from the NDJSON must be equal.

    python examples/spark_events_pipeline.py            # moto's S3 on 127.0.0.1
    python examples/spark_events_pipeline.py --dest /tmp/events-csup   # local disk

Needs pyspark and Java; ``--dest s3://...`` without ``--endpoint`` starts moto's
server (``pip install 'moto[server]'``) on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DAYS = 6
V2_FROM_DAY = 4  # the day ``amount`` was added to the events
NO_SALES_DAY = 5  # a day without purchases: its file has no ``amount`` either
COUNTRIES = ("de", "fr", "jp", "us")
KINDS = ("view", "click", "purchase")


def make_events(directory: Path, rows_per_day: int = 2000, seed: int = 7) -> list[Path]:
    """One NDJSON file per day; ``amount`` (cents) only on purchases from V2_FROM_DAY on."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    files = []
    for day in range(1, DAYS + 1):
        path = directory / f"events-day{day}.ndjson"
        with open(path, "w") as f:
            for i in range(rows_per_day):
                ts = start + timedelta(days=day - 1, seconds=i * 40)
                kind = rng.choice(KINDS)
                if day == NO_SALES_DAY and kind == "purchase":
                    kind = "view"
                event: dict[str, Any] = {
                    "ts": ts.isoformat().replace("+00:00", "Z"),
                    "user": f"u{rng.randrange(500)}",
                    "kind": kind,
                    "geo": {"country": rng.choice(COUNTRIES), "city": f"c{rng.randrange(40)}"},
                }
                if day >= V2_FROM_DAY:
                    event["tags"] = rng.sample(["new", "mobile", "promo", "ad"], 2)
                    if kind == "purchase":
                        event["amount"] = rng.randrange(100, 50_000)
                f.write(json.dumps(event) + "\n")
        files.append(path)
    return files


def write_events(spark: Any, files: list[Path], dest: str, options: dict[str, str]) -> None:
    """One Spark job: all days' NDJSON in, one CSUP file per day out.

    Spark merges the days' JSON schemas, so the files of days without any
    ``amount`` get an ``amount`` column that is null throughout: CSUP stores no
    values for it, and that lets a read skip those files.  Making each input
    file "cost" a whole partition (``openCostInBytes``) gives one task, and so
    one CSUP file, per day.
    """
    from pyspark.sql import functions as F

    key = "spark.sql.files.openCostInBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, spark.conf.get("spark.sql.files.maxPartitionBytes"))
    try:
        events = spark.read.json([str(p) for p in files]).withColumn("ts", F.to_timestamp("ts"))
        # csup-async's own layout: its statistics let a read skip whole files (files of
        # the default target, super's CSUP v23, are planned one by one, not skipped)
        (events.write.format("csup").options(**options).option("target", "csup-async")
         .mode("overwrite").save(dest))
    finally:
        spark.conf.set(key, before)


PROJECTION = "kind string, amount long, geo struct<country: string>"


def revenue(df: Any) -> list[tuple[str, str, int, int]]:
    """Revenue and purchase count per kind and country, sorted."""
    from pyspark.sql import functions as F

    rows = (df.where("amount IS NOT NULL")
            .groupBy("kind", F.col("geo.country").alias("country"))
            .agg(F.sum("amount").alias("revenue"), F.count("*").alias("n"))
            .collect())
    return sorted((r["kind"], r["country"], int(r["revenue"]), int(r["n"])) for r in rows)


def revenue_from_csup(spark: Any, dest: str, options: dict[str, str],
                      report: str | None = None) -> list[tuple[str, str, int, int]]:
    """The aggregate over the CSUP files: projection, pushdown, file pruning."""
    from csup_async.spark import PUSHDOWN_CONF

    spark.conf.set(PUSHDOWN_CONF, "true")
    reader = spark.read.format("csup").options(**options).option("pushdown", "true")
    if report:
        reader = reader.option("planReport", report)
    # one query per load(): the safe way to use pushdown (see csup_async.spark.filters)
    return revenue(reader.schema(PROJECTION).load(dest))


def revenue_from_ndjson(spark: Any, files: list[Path]) -> list[tuple[str, str, int, int]]:
    return revenue(spark.read.json([str(p) for p in files]))


def run(spark: Any, workdir: Path, dest: str, options: dict[str, str],
        read_options: dict[str, str] | None = None) -> dict[str, Any]:
    """The whole pipeline; returns both aggregates and the driver's plan report."""
    files = make_events(workdir / "ndjson")
    write_events(spark, files, dest, options)
    report = str(workdir / "plan-report.json")
    from_csup = revenue_from_csup(spark, dest, {**options, **(read_options or {})}, report)
    with open(report) as f:
        plan = json.load(f)
    return {"csup": from_csup, "ndjson": revenue_from_ndjson(spark, files), "plan": plan,
            "files": files}


def _moto() -> tuple[Any, dict[str, str], str]:
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    opts = {"endpoint": f"http://{host}:{port}", "region": "us-east-1",
            "accessKeyId": "example-key", "secretAccessKey": "example-secret"}
    boto3.client("s3", endpoint_url=opts["endpoint"], region_name="us-east-1",
                 aws_access_key_id="example-key",
                 aws_secret_access_key="example-secret").create_bucket(Bucket="events")
    return server, opts, "s3://events/daily"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", help="CSUP dataset location (default: a bucket on moto's S3)")
    ap.add_argument("--endpoint", help="S3 endpoint URL for an s3:// --dest")
    args = ap.parse_args(argv)
    from csup_async.spark.session import local_session, spark_unavailable

    why = spark_unavailable()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 2
    server = None
    options: dict[str, str] = {}
    dest = args.dest
    if dest is None or (dest.startswith("s3://") and not args.endpoint):
        server, options, moto_dest = _moto()
        dest = dest or moto_dest
    elif args.endpoint:
        options = {"endpoint": args.endpoint}
    spark = local_session("csup-events-pipeline")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = run(spark, Path(tmp), dest, options)
    finally:
        spark.stop()
        if server is not None:
            server.stop()
    plan = out["plan"]
    print(f"dataset: {dest}")
    print(f"driver: {plan['files_listed']} files, {plan['metadata_requests']} metadata "
          f"requests, {plan['files_pruned']} pruned ({plan['pruned_by']}), "
          f"{plan['files_read']} read in {plan['partitions']} partitions")
    for row in out["csup"]:
        print("  ", row)
    same = out["csup"] == out["ndjson"]
    print("equal to the aggregate over the NDJSON:", same)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
