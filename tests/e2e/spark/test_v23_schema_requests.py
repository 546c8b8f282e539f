"""Spark's schema inference over CSUP v23 files costs one request per file, counted at the
server (moto's S3 on 127.0.0.1 behind a counting proxy): the tail read holds each file's
trailer and footer, whose fused type is the file's type; opening the file would read its
head too (the objects' metadata), a second request.

The files are super main's ``wide.csup`` (87 KB): with the ``local`` profile (64 KiB tail
reads) the tail does not hold the head, as for a file of more than the ``s3`` profile's
1 MiB.  Files whose footer would not give the schema their metadata gives (several record
types, a v16 file) are opened on the same tail read: no request more than before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from csup_async.spark.listing import load_sync, load_types_sync
from csup_async.spark.options import parse_options
from csup_async.spark.schema import infer_schema
from tests.support.fault_proxy import FaultProxy

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
WIDE = REAL / "super-main" / "wide" / "wide.csup"


@pytest.fixture
def proxy(moto_s3: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(moto_s3.endpoint.rsplit(":", 1)[1])).start()
    yield p
    p.stop()


def _options(moto_s3: Any, proxy: FaultProxy, path: str) -> dict[str, str]:
    o = moto_s3.store_options()
    return {"path": f"s3://{moto_s3.BUCKET}/{path}/", "endpoint": proxy.endpoint,
            "region": o["region"], "accessKeyId": o["access_key_id"],
            "secretAccessKey": o["secret_access_key"], "profile": "local"}


def _reads(proxy: FaultProxy) -> list[str]:
    return [q.kind for q in proxy.requests() if q.method == "GET"
            and "list-type=2" not in q.target]


def test_v23_files_cost_one_request_each_and_give_the_same_schema(moto_s3, proxy):
    for i in range(3):
        moto_s3.put(f"v23-schema/part-{i}.csup", WIDE.read_bytes())
    settings = parse_options(_options(moto_s3, proxy, "v23-schema"))

    opened = load_sync(settings)  # what schema() did before: open every file
    before = _reads(proxy)
    proxy.reset()
    typed = load_types_sync(settings)
    after = _reads(proxy)
    print("reads to infer the schema: opening", before, "footers", after)

    assert sorted(before) == ["data"] * 3 + ["tail"] * 3  # a tail and a head read each
    assert after == ["tail"] * 3 and typed.requests == 3
    assert all(f.footer for f in typed.files)
    want = infer_schema(f.meta for f in opened.files)
    assert infer_schema(typed.files) == want and len(want.fields) == 6

    # the data source's own schema() (what spark.read.format("csup").load(p) calls on
    # the driver), without starting Spark
    proxy.reset()
    from csup_async.spark.source import CsupDataSource

    assert CsupDataSource(_options(moto_s3, proxy, "v23-schema")).schema() == want
    assert _reads(proxy) == ["tail"] * 3


def test_files_the_footer_cannot_type_are_opened_on_the_same_tail_read(moto_s3, proxy):
    """Several record types (their columns' order is their first appearance, which only
    the metadata has) and v16 files: opened as before, the tail read not repeated."""
    several = REAL / "super-main" / "parts.csup"  # two record types
    v16 = REAL / "super" / "nested.csup"
    moto_s3.put("mixed/a.csup", WIDE.read_bytes())
    moto_s3.put("mixed/b.csup", several.read_bytes())
    moto_s3.put("mixed/c.csup", v16.read_bytes())
    settings = parse_options(_options(moto_s3, proxy, "mixed"))

    opened = load_sync(settings)
    before = len(_reads(proxy))
    proxy.reset()
    typed = load_types_sync(settings)
    after = _reads(proxy)

    assert [f.footer for f in typed.files] == [True, False, False]
    assert len(after) == typed.requests == before - 1  # wide.csup: its footer only
    assert after.count("tail") == 3
    assert infer_schema(typed.files) == infer_schema(f.meta for f in opened.files)


def test_spark_reads_v23_files_with_the_footers_schema(tmp_path: Path) -> None:
    """Through Spark: the schema from the footers reads the rows (super main's JSON input
    file holds ``[none]`` and absent fields, which the schema gives as nulls)."""
    from csup_async.spark.session import local_session, spark_unavailable

    if spark_unavailable() is not None:
        pytest.skip(spark_unavailable() or "")
    (tmp_path / "wide").mkdir()
    (tmp_path / "json").mkdir()
    for i in range(2):
        (tmp_path / "wide" / f"part-{i}.csup").write_bytes(WIDE.read_bytes())
    (tmp_path / "json" / "json.csup").write_bytes((REAL / "super-main" / "json.csup")
                                                  .read_bytes())
    spark = local_session("csup-v23-schema", cores=1)
    try:
        wide = spark.read.format("csup").load(str(tmp_path / "wide"))
        assert wide.columns == ["id", "name", "score", "flag", "tag", "n"]
        assert wide.count() == 8000
        rows = spark.read.format("csup").load(str(tmp_path / "json")).collect()
    finally:
        spark.stop()
    assert [r["a"] for r in rows] == ["1", "s", None, None]
    assert rows[2]["b"] == [] and rows[2]["c"]["d"] == 2
