"""The example pipeline (examples/spark_events_pipeline.py) on moto's S3, with the requests
counted at a proxy in front of the server: what the driver pruned, and what it cost."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

from csup_async.spark.session import local_session
from tests.support.fault_proxy import FaultProxy
from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "examples"))
import spark_events_pipeline as example


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-pipeline", cores=2)
    yield session
    session.stop()


@pytest.fixture
def proxy(moto_s3: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(moto_s3.endpoint.rsplit(":", 1)[1])).start()
    yield p
    p.stop()


def test_ndjson_to_csup_on_s3_then_pruned_aggregate(spark: Any, moto_s3: Any,
                                                    proxy: FaultProxy, tmp_path: Path) -> None:
    o = moto_s3.store_options()
    direct = {"endpoint": o["endpoint_url"], "region": o["region"],
              "accessKeyId": o["access_key_id"], "secretAccessKey": o["secret_access_key"]}
    options = {**direct, "endpoint": proxy.endpoint}  # reads are counted at the proxy
    dest = f"s3://{moto_s3.BUCKET}/pipeline/events"
    files = example.make_events(tmp_path / "ndjson")
    example.write_events(spark, files, dest, direct)
    listed = [k for k in moto_s3.client.list_objects_v2(
        Bucket=moto_s3.BUCKET, Prefix="pipeline/events/")["Contents"]]
    names = sorted(k["Key"].rsplit("/", 1)[1] for k in listed)
    assert names[0] == "_SUCCESS" and len(names) == example.DAYS + 1  # no staging left
    assert all(n.startswith("part-") and n.endswith(".csup") for n in names[1:])

    report = tmp_path / "plan.json"
    got = example.revenue_from_csup(spark, dest, options, str(report))
    expected = example.revenue_from_ndjson(spark, files)
    assert got == expected and len(got) == len(example.COUNTRIES)

    plan = json.loads(report.read_text())
    assert plan["files_listed"] == example.DAYS
    assert plan["pruned_by"] == {"filter": 4}  # days 1-3 and the day without sales
    assert plan["files_read"] == 2 and plan["metadata_requests"] == example.DAYS
    # at the server: one LIST and one suffix read per file, on the driver; the executors
    # needed nothing more because the projected bytes came with the tail reads
    seen = proxy.requests()
    assert sum("list-type=2" in r.target for r in seen) == 1
    assert len(proxy.requests("tail")) == example.DAYS
    assert proxy.requests("data") == [] and len(seen) == example.DAYS + 1

    # without shipping the tail bytes, executors read the two kept files and nothing else
    proxy.reset()
    again = example.revenue_from_csup(spark, dest, {**options, "shipTailBytes": "0"},
                                      str(report))
    assert again == expected
    pruned = {p["file"].rsplit("/", 1)[1] for p in json.loads(report.read_text())[
        "pruned_files"]}
    data_keys = {r.target.split("?")[0].rsplit("/", 1)[1] for r in proxy.requests("data")}
    tail_keys = {r.target.split("?")[0].rsplit("/", 1)[1] for r in proxy.requests("tail")}
    assert len(pruned) == 4 and len(data_keys) == 2
    assert data_keys == tail_keys - pruned
