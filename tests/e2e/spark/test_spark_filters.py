"""Spark's pushed filters as ``planner.filters`` expressions: files pruned by their segment
statistics on the driver, results equal to Spark filtering every row itself."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringStartsWith,
)

import csup_async
from csup_async.spark import PUSHDOWN_CONF
from csup_async.spark.filters import to_expr
from csup_async.spark.session import local_session, spark_unavailable
from planner import filters as F

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


PATHS = {"n": "n", "s": "s", "t": "t", "r": "r", "f": "f"}
T = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def test_filters_map_to_expressions() -> None:
    n, s = ("n",), ("s",)
    m = to_expr(EqualTo(("n",), 7), PATHS)
    assert m is not None and m.exact and m.expr == F.Compare("==", n, 7)
    m = to_expr(Not(GreaterThan(("n",), 7)), PATHS)
    assert m.exact and m.expr == F.Compare("<=", n, 7)
    assert to_expr(LessThanOrEqual(("n",), 1), PATHS).expr == F.Compare("<=", n, 1)
    assert to_expr(GreaterThanOrEqual(("n",), 1), PATHS).expr == F.Compare(">=", n, 1)
    assert to_expr(LessThan(("n",), 1), PATHS).expr == F.Compare("<", n, 1)
    assert to_expr(IsNull(("n",)), PATHS).expr == F.IsNull(n, False)
    assert to_expr(Not(IsNotNull(("n",))), PATHS).expr == F.IsNull(n, False)
    assert to_expr(StringStartsWith(("s",), "ab"), PATHS).expr == F.StartsWith(s, "ab")
    assert to_expr(In(("n",), (1, 2)), PATHS).expr == F.IsIn(n, (1, 2))
    # NOT (n IN (1, NULL)) is never true in SQL; ours without the null is wider: not exact
    m = to_expr(Not(In(("n",), (1, None))), PATHS)
    assert m.expr == F.Not(F.IsIn(n, (1,))) and not m.exact
    m = to_expr(Not(EqualNullSafe(("n",), 3)), PATHS)
    assert m.exact and F.matches(m.expr, {"n": None}) and not F.matches(m.expr, {"n": 3})
    # a nested column: Spark's attribute path becomes the CSUP path
    assert to_expr(EqualTo(("r", "x"), 1), PATHS).expr == F.Compare("==", ("r", "x"), 1)


def test_what_is_not_mapped_stays_with_spark() -> None:
    assert to_expr(GreaterThan(("f",), 1.5), PATHS) is None  # Spark orders NaN above all
    assert to_expr(EqualTo(("n",), __import__("decimal").Decimal(1)), PATHS) is None
    assert to_expr(EqualTo(("t",), dt.datetime(2024, 1, 1)), PATHS) is None  # naive
    assert to_expr(StringContains(("s",), "a"), PATHS) is None
    assert to_expr(EqualTo(("nope",), 1), PATHS) is None  # not a column of the schema


def test_timestamps_are_widened_by_a_microsecond() -> None:
    """Spark sees CSUP's nanosecond times floored to microseconds: 00:00:00.0000005 is
    ``= '00:00:00'`` to Spark, so pruning must not rule it out."""
    inside = np.datetime64("2024-01-01T00:00:00.000000500", "ns")
    for f in (EqualTo(("t",), T), LessThanOrEqual(("t",), T), Not(GreaterThan(("t",), T)),
              In(("t",), (T,)), GreaterThanOrEqual(("t",), T)):
        m = to_expr(f, PATHS)
        assert m is not None and not m.exact
        typed = F.bind(m.expr, {("t",): "time"})
        assert F.matches(typed, {"t": inside}), f
    m = to_expr(Not(EqualTo(("t",), T)), PATHS)
    assert m.expr == F.IsNull(("t",), True)


@dataclass(frozen=True)
class And:  # PySpark 4.3 pushes no And/Or; a later one may (matched by class name)
    left: Any
    right: Any


@dataclass(frozen=True)
class Or:
    left: Any
    right: Any


def test_and_or_under_not_follow_de_morgan() -> None:
    a, b = EqualTo(("n",), 1), StringContains(("s",), "x")  # b cannot be mapped
    assert to_expr(And(a, b), PATHS).expr == F.Compare("==", ("n",), 1)
    assert not to_expr(And(a, b), PATHS).exact
    assert to_expr(Or(a, b), PATHS) is None
    m = to_expr(Not(Or(a, EqualTo(("n",), 2))), PATHS)  # NOT a AND NOT b
    assert m.exact and m.expr == F.And((F.Compare("!=", ("n",), 1),
                                        F.Compare("!=", ("n",), 2)))
    assert to_expr(Not(And(a, b)), PATHS) is None  # NOT a OR <unknown>


# ----------------------------------------------------------- local Spark ---
if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

ROWS = 30_000  # larger than the HTTP tail read, so a kept file needs requests of its own

@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-filters", cores=2)
    session.conf.set(PUSHDOWN_CONF, "true")
    yield session
    session.stop()


def _file(k: int) -> bytes:
    rng = np.random.default_rng(k)
    n = np.arange(k * ROWS, (k + 1) * ROWS, dtype=np.int64)
    t = (np.datetime64("2024-01-01T00:00:00", "ns") + np.timedelta64(k, "D")
         + n % ROWS * np.timedelta64(1, "s") + np.timedelta64(500, "ns"))
    kind = np.array(["push", "pull", "fork"])[n % 3]
    v = pa.array(np.where(n % 7 == 0, np.nan, rng.normal(size=ROWS)))
    table = pa.table({"n": n, "t": t, "kind": kind, "v": v,
                      "opt": pa.array([None if i % 5 else int(i) for i in n], pa.int64())})
    buf = io.BytesIO()
    csup_async.write(buf, table)
    return buf.getvalue()


EXPECT = {  # query -> files read of the 3 (file k holds n in [k*ROWS, (k+1)*ROWS))
    f"n >= {2 * ROWS} AND n < {2 * ROWS + 10}": 1,
    f"n IN (5, {3 * ROWS - 1})": 2,
    f"NOT (n < {2 * ROWS + ROWS // 2})": 1,
    "kind = 'push' AND n <= 20": 1,
    f"kind LIKE 'pu%' AND n > {3 * ROWS - 10}": 1,
    "t = '2024-01-03 00:00:00'": 1,  # 500 ns past it in the file: floored, Spark matches
    "t <= '2024-01-01 00:00:00'": 1,
    "t > '2024-01-03 08:19:58'": 1,
    "opt IS NOT NULL AND n < 10": 1,
    "opt IS NULL AND n = 3": 1,
    "v > 5 AND n < 100": 1,  # a double: not mapped (NaN), Spark filters every row
    f"n = {2 * ROWS - 1} OR kind = 'zz'": 3,  # Spark pushes no OR
}


def _rows(df: Any) -> list[tuple[Any, ...]]:
    """Rows in order, NaN as a marker (it equals nothing, itself included)."""
    return sorted(tuple("nan" if isinstance(x, float) and x != x else x for x in r)
                  for r in df.collect())


def test_pushdown_prunes_files_and_equals_spark(spark: Any, range_server: Any,
                                                tmp_path: Path) -> None:
    names = [range_server.put(f"sparkfilters/f{k}.csup", _file(k)) for k in range(3)]
    urls = [range_server.url(n) for n in names]
    # Spark filtering every row itself (read once, without pushdown; checkpointed, as
    # cache() would prune its batches by statistics that leave NaN out: v > 5 loses NaN)
    every = spark.read.format("csup").option("paths", json.dumps(urls)).load()
    every = every.localCheckpoint()
    assert every.count() == 3 * ROWS
    for q, files_read in EXPECT.items():
        report = tmp_path / "report.json"
        want = _rows(every.where(q))
        range_server.reset()
        pushed = (spark.read.format("csup").option("paths", json.dumps(urls))
                  .option("pushdown", "true").option("planReport", str(report)).load()
                  .where(q))
        got = _rows(pushed)
        assert got == want and got, q
        plan = json.loads(report.read_text())
        pruned = {p["file"] for p in plan["pruned_files"]}
        # a pruned object is asked only for its tail (the metadata reads: suffix ranges)
        for name, url in zip(names, urls, strict=True):
            data = [s for s in range_server.seen(name)
                    if not s.headers.get("Range", "").startswith("bytes=-")]
            assert (not data) if url in pruned else data, (q, name, len(data))
        assert plan["files_read"] == files_read, (q, plan["pruned_files"])


def test_a_filter_proven_true_everywhere_is_not_handed_back(spark: Any, tmp_path: Path
                                                            ) -> None:
    d = tmp_path / "true"
    d.mkdir()
    for k in range(2):
        csup_async.write(str(d / f"{k}.csup"), [{"n": k * 10 + i} for i in range(10)])
    report = tmp_path / "r.json"
    df = (spark.read.format("csup").option("pushdown", "true")
          .option("planReport", str(report)).load(str(d)).where("n >= 5 AND n < 100"))
    assert sorted(r.n for r in df.collect()) == list(range(5, 20))
    plan = json.loads(report.read_text())
    assert plan["files_read"] == 2
    assert plan["filters_for_spark"] == ["n >= 5"]  # n < 100 holds in every row
