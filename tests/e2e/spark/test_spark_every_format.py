"""Spark reads every format ``open()`` reads (issue #39, item 1): this library's CSUP,
Zed's VNG, SuperDB's header-layout CSUP and BSUP (ZNG), alone and in one directory,
planned on the driver and on the executors: the rows ``open()`` gives."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

import csup_async
from csup_async.spark import PUSHDOWN_CONF
from csup_async.spark.session import local_session

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


REAL = Path(__file__).resolve().parents[2] / "data" / "real"
FILES = {
    "vng": REAL / "zed1.12-all.vng",
    "superdb": REAL / "super" / "primitives.csup",
    "bsup": REAL / "zed1.12-all.zng",
}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-every-format", cores=1)
    yield session
    session.stop()


def _rows(path: Path, column: str) -> list[Any]:
    with csup_async.open_sync(str(path)) as r:
        return r.scan([column]).to_arrow().column(column).to_pylist()


@pytest.mark.parametrize("threshold", ["1000", "0"])  # planned on the driver / executors
@pytest.mark.parametrize("kind", list(FILES))
def test_one_file_of_each_format(spark: Any, tmp_path: Path, kind: str, threshold: str
                                 ) -> None:
    path = tmp_path / f"f{FILES[kind].suffix}"
    shutil.copy(FILES[kind], path)
    df = (spark.read.format("csup").option("planOnExecutorsThreshold", threshold)
          .load(str(path)))
    want = _rows(path, "s")  # a string column every one of these files has
    assert df.count() == len(want)
    assert [r["s"] for r in df.select("s").collect()] == want


def test_a_directory_of_every_format(spark: Any, tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    d.mkdir()
    for kind, src in FILES.items():
        shutil.copy(src, d / f"{kind}.csup")  # one suffix: the directory lists .csup
    csup_async.write(d / "ours.csup", [{"s": "mine", "u8": 1}])
    df = spark.read.format("csup").load(str(d))
    want = 0
    for p in sorted(d.iterdir()):
        with csup_async.open_sync(str(p)) as r:
            want += r.count_rows()
    assert df.count() == want
    got = [r["s"] for r in df.select("s").collect()]
    assert len(got) == want and "mine" in got
    assert df.where("s = 'mine'").count() == 1


@pytest.mark.parametrize("kind", list(FILES))
def test_pushed_filters_leave_files_without_statistics_to_spark(spark: Any, tmp_path: Path,
                                                                kind: str) -> None:
    """With pushdown on, a file with no column index proves nothing: it is read, and
    Spark evaluates the filter on its rows (beside a CSUP file the filter does prune)."""
    d = tmp_path / "p"
    d.mkdir()
    shutil.copy(FILES[kind], d / f"{kind}.csup")
    csup_async.write(d / "ours.csup", [{"s": "mine"}])
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        df = spark.read.format("csup").option("pushdown", "true").load(str(d))
        got = [r["s"] for r in df.where("s > 'm'").select("s").collect()]
    finally:
        spark.conf.set(PUSHDOWN_CONF, "false")
    want = [v for v in _rows(d / f"{kind}.csup", "s") if v is not None and v > "m"]
    assert sorted(got) == sorted([*want, "mine"])
