"""Partitioned datasets in Spark: the layout Spark's own Parquet writer makes, read as csup."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import pyarrow.parquet as pq

import csup_async
from csup_async.spark.session import local_session

ROWS = [(i, f"s{i}", 2023 + i % 2, ["push", "pull", None, "a/b=c"][i % 4]) for i in range(40)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-partitions", cores=2)
    yield session
    session.stop()


def _mirror(spark: Any, tmp_path: Path, target: str | None = None) -> tuple[Path, Path]:
    """Spark writes Parquet partitioned by year and kind; each file is rewritten as CSUP at
    the same relative path (the directory names are Spark's own), in ``target``'s layout."""
    pq_dir, csup_dir = tmp_path / "pq", tmp_path / "csup"
    df = spark.createDataFrame(ROWS, "id long, name string, year int, kind string")
    df.repartition(3).write.partitionBy("year", "kind").parquet(str(pq_dir))
    for f in pq_dir.rglob("*.parquet"):
        rel = f.relative_to(pq_dir).with_suffix(".csup")
        (csup_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        csup_async.write(str(csup_dir / rel), pq.read_table(f).to_pylist(), target=target)
    return pq_dir, csup_dir


def test_reads_what_sparks_parquet_writer_laid_out(spark: Any, tmp_path: Path) -> None:
    pq_dir, csup_dir = _mirror(spark, tmp_path)
    names = {p.name for p in pq_dir.iterdir()} | {p.name for p in pq_dir.glob("*/*")}
    assert "year=2023" in names and "kind=a%2Fb%3Dc" in names  # Spark's own escaping
    assert "kind=__HIVE_DEFAULT_PARTITION__" in names
    ours = spark.read.format("csup").load(str(csup_dir))
    theirs = spark.read.parquet(str(pq_dir))
    assert ours.columns == theirs.columns == ["id", "name", "year", "kind"]
    assert sorted(ours.collect()) == sorted(theirs.collect())
    q = "year = 2024 AND kind = 'a/b=c'"
    assert sorted(ours.where(q).collect()) == sorted(theirs.where(q).collect())
    assert ours.where("kind IS NULL").count() == 10
    # a path below the root, with basePath: only that partition is listed (path pruning)
    part = (spark.read.format("csup").option("basePath", str(csup_dir))
            .load(str(csup_dir / "year=2023")))
    assert sorted(r.id for r in part.collect()) == [i for i, *_ in ROWS if i % 2 == 0]
    assert part.columns == ["id", "name", "year", "kind"]
    off = spark.read.format("csup").option("partitioning", "none").load(str(csup_dir))
    assert off.columns == ["id", "name"]


def test_pushed_partition_filters_open_only_matching_objects(spark: Any, tmp_path: Path,
                                                             range_server: Any) -> None:
    # our layout: the driver ships a small file's bytes to the task (a v23 file's reader,
    # a SuperDB one, opens it again in the task: two reads per object)
    _, csup_dir = _mirror(spark, tmp_path, target="csup-async")
    names = [range_server.put(f"sparkparts/{p.relative_to(csup_dir)}", p.read_bytes())
             for p in sorted(csup_dir.rglob("*.csup"))]
    urls = [range_server.url(n) for n in names]
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        df = (spark.read.format("csup").option("paths", json.dumps(urls))
              .option("basePath", range_server.url("sparkparts/")).option("pushdown", "true")
              .schema("id long, name string, year long, kind string").load())
        range_server.reset()
        got = df.where("kind = 'pull' AND year = 2024").collect()
        assert sorted(r.id for r in got) == [i for i, _, y, k in ROWS if k == "pull"
                                             and y == 2024]
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
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def test_partition_by_writes_sparks_directories_and_reads_back(spark: Any,
                                                                tmp_path: Path) -> None:
    pq_dir, _ = _mirror(spark, tmp_path)
    out = tmp_path / "written"
    df = spark.createDataFrame(ROWS, "id long, name string, year int, kind string")
    df.repartition(2).write.format("csup").option("partitionBy", "year,kind").mode("append").save(
        str(out))

    def dirs(root: Path, suffix: str) -> set[str]:
        return {str(p.parent.relative_to(root)) for p in root.rglob(f"*{suffix}")}

    assert dirs(out, ".csup") == dirs(pq_dir, ".parquet")  # the same names as Spark's
    back = spark.read.format("csup").load(str(out))
    assert back.columns == ["id", "name", "year", "kind"]
    assert sorted(tuple(r) for r in back.collect()) == sorted(ROWS)
    # the files hold no partition column: the directories do
    plain = spark.read.format("csup").option("partitioning", "none").load(str(out))
    assert plain.columns == ["id", "name"]
    with pytest.raises(Exception, match="partitionBy column"):
        df.write.format("csup").option("partitionBy", "nope").mode("overwrite").save(str(out))
