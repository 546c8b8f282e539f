"""Spark over CSUP v23 files (the default target, super main's layout), over HTTP (the
range server on 127.0.0.1, counting requests): the driver prunes files by the min/max
super keeps per object, the results equal Spark filtering every row itself, and a task
opens no file again (the driver's metadata bytes travel with it; a small file's data
too, so it costs the task no request at all).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThan, StringEndsWith

import csup_async
from csup_async.spark import PUSHDOWN_CONF
from csup_async.spark.filters import decide
from csup_async.spark.session import local_session, spark_unavailable

REAL = Path(__file__).resolve().parents[2] / "data" / "real" / "super-main"
SMALL = 5_000  # rows: a file the HTTP profile's tail read holds whole
LARGE = 400_000  # rows: larger than the tail read (its head and data are read apart)


def _file(k: int, rows: int) -> bytes:
    ids = np.arange(k * SMALL, k * SMALL + rows, dtype=np.int64)
    table = pa.table({"id": ids, "s": pa.array([f"s{i % 11}" for i in ids])})
    buf = io.BytesIO()
    csup_async.write(buf, table)  # target "super": CSUP v23
    return buf.getvalue()


def test_decide_rules_out_v23_files_by_their_objects_min_max() -> None:
    """The driver's proof, without Spark: a SuperDB file is ruled out when every object's
    min/max is, a path no super type has is null, a filter true everywhere goes back."""
    import asyncio

    async def metas() -> list[Any]:
        out = []
        for k in range(3):
            async with csup_async.open(_tmp(k)) as r:
                out.append(r.meta)
        return out

    ms = asyncio.run(metas())
    paths = {"id": "id", "s": "s", "x": "x"}
    kept, reasons, left = decide([GreaterThanOrEqual(("id",), 2 * SMALL)], ms, paths)
    assert kept == [2] and reasons[0] and reasons[0].startswith("statistics of id >=")
    assert left == []  # true on every row of the file kept: not handed back
    kept, _, left = decide([EqualTo(("x",), 1)], ms, paths)  # no file has x: null
    assert kept == []
    f = [LessThan(("id",), 10), StringEndsWith(("s",), "1")]
    kept, _, left = decide(f, ms, paths)
    assert kept == [0] and left == f


def test_a_task_planning_its_own_files_skips_v23_files_by_min_max() -> None:
    """Past ``planOnExecutorsThreshold`` a task opens and prunes its files itself
    (:func:`csup_async.spark.scaleout.open_and_read`): the same proof."""
    import asyncio

    from csup_async.spark.scaleout import open_and_read
    from csup_async.stores import shared_store

    async def run() -> list[int]:
        out = []
        for k in range(3):
            store, key, _ = await shared_store(_tmp(k))
            _, n, _ = await open_and_read(key, ["id", "s"],
                                          [GreaterThanOrEqual(("id",), 2 * SMALL + 990)],
                                          store, {})
            out.append(n)
        return out

    assert asyncio.run(run()) == [0, 0, 1000]  # a kept file's rows: Spark filters them


_DIR: list[Path] = []


def _tmp(k: int) -> str:
    import tempfile

    if not _DIR:
        _DIR.append(Path(tempfile.mkdtemp(prefix="v23-decide-")))
    p = _DIR[0] / f"f{k}.csup"
    if not p.exists():
        p.write_bytes(_file(k, 1000))
    return str(p)


if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-v23-pruning", cores=2)
    session.conf.set(PUSHDOWN_CONF, "true")
    yield session
    session.stop()


def _sorted(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_pruned_files_no_second_open_and_rows_equal(spark: Any, range_server: Any,
                                                   tmp_path: Path) -> None:
    sizes = [SMALL, SMALL, SMALL, LARGE]
    names = [range_server.put(f"v23spark/f{k}.csup", _file(k, n))
             for k, n in enumerate(sizes)]
    urls = [range_server.url(n) for n in names]

    def load(pushdown: bool, report: Path | None = None) -> Any:
        r = (spark.read.format("csup").schema("id long, s string")
             .option("paths", json.dumps(urls)).option("pushdown", str(pushdown).lower()))
        if report is not None:
            r = r.option("planReport", str(report))
        return r.load()

    every = load(False).localCheckpoint()  # Spark filtering every row itself
    assert every.count() == 3 * SMALL + LARGE
    for q, read in {f"id >= {SMALL} AND id < {2 * SMALL}": [1],
                    f"id >= {3 * SMALL + 10} AND s = 's3'": [3],
                    f"id < 7 OR id > {10 ** 9}": [0, 1, 2, 3],  # no OR is pushed
                    "s = 's55'": [0, 1, 2, 3],  # within every file's min/max, s0 to s9
                    "s = 'nope'": []}.items():  # below every file's min
        want = _sorted(every.where(q))
        report = tmp_path / "report.json"
        range_server.reset()
        got = _sorted(load(True, report).where(q))
        assert got == want, q
        plan = json.loads(report.read_text())
        assert plan["files_read"] == len(read), (q, plan)
        for k, name in enumerate(names):
            seen = range_server.seen(name)
            tails = [s for s in seen if s.headers.get("Range", "").startswith("bytes=-")]
            assert len(tails) == 1, (q, name, len(tails))  # the driver's only: no reopen
            if sizes[k] == SMALL:  # pruned, or the driver's tail read held it all
                # (shipped with the task): no data request, only the driver's open (its
                # tail, and a head read sent beside it once a large file came first)
                rest = [s.headers.get("Range") for s in seen if s not in tails]
                assert all(r.startswith("bytes=0-") for r in rest), (q, name, rest)


def test_a_file_of_two_parts_written_by_super_main(spark: Any, tmp_path: Path) -> None:
    """super main's ``cat`` of two files (two parts, six objects): pruned and read."""
    d = tmp_path / "parts"
    d.mkdir()
    (d / "a.csup").write_bytes((REAL / "minmax" / "parts.csup").read_bytes())
    (d / "b.csup").write_bytes((REAL / "minmax" / "parts.csup").read_bytes())
    counts = {r["g"]: r["count"] for r in map(json.loads, (
        REAL / "minmax" / "parts.counts.json.out").read_text().splitlines())}
    report = tmp_path / "r.json"
    df = (spark.read.format("csup").option("pushdown", "true")
          .option("planReport", str(report)).load(str(d)))
    assert df.count() == 2 * sum(counts.values())
    assert sorted(r.g for r in df.where("g >= 2 AND g < 4").collect()) == (
        [2] * 2 * counts[2] + [3] * 2 * counts[3])
    plan = json.loads(report.read_text())  # objects 2 and 3 of six kept in each file
    assert plan["files_read"] == 2 and plan["objects_pruned"] == 8, plan
    assert df.where("g > 5").count() == 0
    plan = json.loads(report.read_text())
    assert plan["files_read"] == 0 and plan["files_pruned"] == 2
