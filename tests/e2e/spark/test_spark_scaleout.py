"""Planning on the executors (``planOnExecutorsThreshold``): the same rows as driver planning.

A threshold of 0 makes every read plan on the executors; the default plans these few
files on the driver, so each query is run both ways and compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
import planner as P
from csup_async.model.errors import CsupError
from csup_async.spark.options import parse_options
from csup_async.spark.session import local_session

ROWS = [(i, f"s{i}", 2023 + i % 2, ["push", "pull", None][i % 3]) for i in range(60)]
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-scaleout", cores=2)
    yield session
    session.stop()


def _layout(spark: Any, root: Path) -> Path:
    """Spark's own partitioned Parquet layout rewritten as CSUP, plus files that lack a
    column, hold it all null, or hold no rows."""
    pq_dir, csup_dir = root / "pq", root / "csup"
    df = spark.createDataFrame(ROWS, "id long, name string, year int, kind string")
    df.repartition(3).write.partitionBy("year", "kind").parquet(str(pq_dir))
    for f in pq_dir.rglob("*.parquet"):
        rel = f.relative_to(pq_dir).with_suffix(".csup")
        (csup_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        csup_async.write(str(csup_dir / rel), pq.read_table(f).to_pylist())
    odd = csup_dir / "year=2025" / "kind=push"
    odd.mkdir(parents=True)
    csup_async.write(str(odd / "no-name.csup"), [{"id": 100 + i, "extra": i} for i in range(5)])
    csup_async.write(str(odd / "null-name.csup"), [{"id": 200 + i, "name": None}
                                                   for i in range(4)])
    csup_async.write(str(odd / "empty.csup"), [])
    return csup_dir


def _both(spark: Any, path: Path, schema: str | None = None,
          **options: str) -> tuple[Any, Any]:
    def read(threshold: str) -> Any:
        r = spark.read.format("csup").option("planOnExecutorsThreshold", threshold)
        r = r.options(**options)
        return (r.schema(schema) if schema else r).load(str(path))

    return read("0"), read("100000")


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_executor_planning_reads_what_driver_planning_reads(spark: Any, tmp_path: Path) -> None:
    root = _layout(spark, tmp_path)
    report = tmp_path / "plan.json"
    on_exec, on_driver = _both(spark, root)
    assert on_exec.columns == on_driver.columns == ["id", "name", "extra", "year", "kind"]
    rows = _rows(on_exec)
    assert rows == _rows(on_driver)
    assert len(rows) == len(ROWS) + 9
    assert {r[0] for r in rows} >= {100, 104, 200, 203}
    assert next(r for r in rows if r[0] == 100)[1] is None  # missing column: nulls
    assert on_exec.count() == on_driver.count() == len(ROWS) + 9
    (spark.read.format("csup").option("planOnExecutorsThreshold", "0")
     .option("planReport", str(report)).load(str(root)).collect())
    plan = json.loads(report.read_text())
    assert plan["planned_on"] == "executors" and plan["files_to_open"] > plan["partitions"]
    for q in ("year = 2024 AND kind = 'pull'", "kind IS NULL", "year >= 2024",
              "name IS NULL", "extra > 2"):
        assert _rows(on_exec.where(q)) == _rows(on_driver.where(q)), q
    for cols in (["extra"], ["kind", "name"], ["year"]):
        assert _rows(on_exec.select(*cols)) == _rows(on_driver.select(*cols)), cols


def test_user_schema_missing_column_and_pushdown(spark: Any, tmp_path: Path) -> None:
    root = _layout(spark, tmp_path)
    schema = "id long, name string, nowhere double, year long, kind string"
    spark.conf.set(PUSHDOWN, "true")
    try:
        on_exec, on_driver = _both(spark, root, schema, pushdown="true")
        for q in ("name IS NULL", "nowhere IS NULL AND year = 2025", "name = 's7'",
                  "nowhere > 1"):
            got = _rows(on_exec.where(q))
            assert got == _rows(on_driver.where(q)), q
        assert [r.id for r in on_exec.where("name = 's7'").collect()] == [7]
        assert on_exec.where("nowhere > 1").count() == 0
        assert sorted(r.id for r in on_exec.where("nowhere IS NULL AND year = 2025")
                      .collect()) == [*range(100, 105), *range(200, 204)]
    finally:
        spark.conf.unset(PUSHDOWN)


def test_partition_filter_opens_only_matching_objects_once(spark: Any, tmp_path: Path,
                                                            range_server: Any) -> None:
    root = _layout(spark, tmp_path)
    names = [range_server.put(f"scaleout/{p.relative_to(root)}", p.read_bytes())
             for p in sorted(root.rglob("*.csup"))]
    urls = json.dumps([range_server.url(n) for n in names])
    spark.conf.set(PUSHDOWN, "true")
    try:
        df = (spark.read.format("csup").option("paths", urls).option("pushdown", "true")
              .option("basePath", range_server.url("scaleout/"))
              .option("planOnExecutorsThreshold", "0")
              .schema("id long, name string, year long, kind string").load())
        range_server.reset()
        got = df.where("kind = 'pull' AND year = 2024").collect()
        assert sorted(r.id for r in got) == [i for i, _, y, k in ROWS if (y, k) == (2024, "pull")]
        matching = sorted(n for n in names if "year=2024/kind=pull/" in n)
        assert matching and sorted({s.name for s in range_server.seen()}) == matching
        # a small file costs its task one round trip: one tail read, which holds the whole
        # object (in a process that has not seen the place, with a small head read beside
        # it, unused: readers/headhint), no other
        seen = [x.headers.get("Range", "") for x in range_server.seen()]
        tails = [x for x in seen if x.startswith("bytes=-")]
        assert len(tails) == len(matching) < len(names)
        assert set(seen) - set(tails) <= {"bytes=0-65535"}
    finally:
        spark.conf.unset(PUSHDOWN)


def test_unopened_files_are_packed_by_estimated_bytes() -> None:
    from csup_async.spark.listing import Loaded
    from csup_async.spark.scaleout import UnopenedPartition, file_weight, plan_unopened

    urls = [f"s3://b/k/part-{i:05d}.csup" for i in range(5000)]
    settings = parse_options({"paths": json.dumps(urls), "profile": "s3",
                              "minPartitions": "4"})
    loaded = Loaded([], P.get_profile("s3"), 0, 0.0, None, [], urls)
    plan = plan_unopened(loaded, (("id", "id"),), [], settings)
    parts = plan.partitions
    assert all(isinstance(p, UnopenedPartition) for p in parts)
    assert [u for p in parts for u in p.urls] == urls  # every file once, in order
    weight = file_weight(P.get_profile("s3"), settings)
    # tens of tasks, not thousands: as few as the target size allows, at least minPartitions
    assert len(parts) == max(4, -(-len(urls) * weight // settings.target_partition_bytes))
    sizes = [len(p.urls) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    with pytest.raises(CsupError, match="planOnExecutorsThreshold"):
        parse_options({"path": "x", "planOnExecutorsThreshold": "-1"})


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.sampled_from([(2023, "a"), (2023, "b"), (2024, None)]),
                       min_size=1, max_size=300),
       min_partitions=st.integers(1, 8), target=st.integers(1, 1 << 24),
       profile=st.sampled_from(["s3", "local", "gcs"]))
def test_unopened_packing_keeps_every_file_once_with_its_partition_values(
        values: list[tuple[int, str | None]], min_partitions: int, target: int,
        profile: str) -> None:
    from csup_async.spark.listing import Loaded
    from csup_async.spark.scaleout import file_weight, plan_unopened
    from planner.partitions import PartitionColumn, Partitions

    urls = [f"s3://b/year={y}/kind={k}/f{i}.csup" for i, (y, k) in enumerate(values)]
    opts = {"paths": json.dumps(urls), "profile": profile,
            "minPartitions": str(min_partitions), "targetPartitionBytes": str(target)}
    conf = parse_options(opts)
    parts = Partitions((PartitionColumn("year", "int64"), PartitionColumn("kind", "string")),
                       tuple(values))
    prof = P.get_profile(profile)
    plan = plan_unopened(Loaded([], prof, 0, 0.0, parts, [], urls), (("id", "id"),), [], conf)
    got = sorted(u for p in plan.partitions for u in p.urls)
    assert got == sorted(urls) and all(p.urls for p in plan.partitions)
    by_url = dict(zip(urls, values, strict=True))
    weight = file_weight(prof, conf)
    for p in plan.partitions:
        assert {by_url[u] for u in p.urls} == {tuple(v for _, v in p.partition_values)}
        # no partition is more than one file over the target (or holds just one file)
        cap = min(target, max(weight, -(-weight * len(urls) // min_partitions)))
        assert len(p.urls) == 1 or (len(p.urls) - 1) * weight <= cap
    runs = len(set(values))
    assert len(plan.partitions) >= min(len(urls), runs)
