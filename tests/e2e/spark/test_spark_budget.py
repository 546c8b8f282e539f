"""A Spark query's budget (``maxRequests``/``maxBytes``) is checked on the driver against
every task's plan: over it, the query fails before any task sends a data request (the
range server's log shows only the driver's tail reads); at it, the query runs."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

import csup_async
from csup_async.spark.session import local_session

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = 40_000


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-budget-tests", cores=2)
    yield session
    session.stop()


def _blob(k: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": k * ROWS + i, "name": f"n{(i * 7919) % 100_003}",
                            "x": i * 0.25} for i in range(ROWS)])
    return out.getvalue()


def _data_requests(range_server: Any) -> int:
    return sum(1 for s in range_server.seen()
               if not s.headers.get("Range", "").startswith("bytes=-"))


def test_a_query_over_budget_fails_on_the_driver_before_any_task(
        spark: Any, range_server: Any, tmp_path: Path) -> None:
    urls = [range_server.url(range_server.put(f"sparkbudget/{k}.csup", _blob(k)))
            for k in range(3)]
    report = tmp_path / "plan.json"

    def read(**options: Any) -> Any:
        r = (spark.read.format("csup").option("paths", json.dumps(urls))
             .option("profile", "s3").option("shipTailBytes", "0")
             .schema("id long, name string"))
        for k, v in options.items():
            r = r.option(k, str(v))
        return r.load()

    rows = read(planReport=report).collect()
    assert len(rows) == 3 * ROWS
    planned = json.loads(report.read_text())
    assert planned["requests"] > 0 and planned["bytes_to_read"] > 0

    for options, figure in (({"maxBytes": planned["bytes_to_read"] - 1}, "bytes"),
                            ({"maxRequests": 0}, "requests")):
        range_server.reset()
        with pytest.raises(Exception) as refused:  # Spark wraps the driver's error
            read(**options).collect()
        text = str(refused.value)
        assert "BudgetError" in text or "refused" in text
        assert "on the driver, before any task ran" in text
        assert f"{planned['bytes_to_read']:,} bytes" in text if figure == "bytes" else (
            f"{planned['requests']:,} requests" in text)
        assert _data_requests(range_server) == 0, "no task sent a data request"

    range_server.reset()
    exact = read(maxBytes=planned["bytes_to_read"], maxRequests=planned["requests"]).collect()
    assert sorted(r.id for r in exact) == list(range(3 * ROWS))
    assert _data_requests(range_server) >= planned["requests"]


def test_budget_options_are_checked(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "a.csup"
    path.write_bytes(_blob(0))
    with pytest.raises(Exception, match="maxBytes must be >= 0"):
        spark.read.format("csup").option("maxBytes", "-1").load(str(path)).collect()
