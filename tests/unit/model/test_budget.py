"""Budgets and the bill: a plan over budget is refused before any data request (counted at
the server), and explain() prices the plan."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model.errors import ArgumentError, BudgetError
from csup_async.stores import HTTPStore
from planner.bill import GCS_PRICES, S3_PRICES, Prices, bill, prices_for

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _file() -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "name": f"user {i * 7919 % 100_003}", "x": i * 0.5}
                           for i in range(100_000)])
    return out.getvalue()


def test_a_scan_over_budget_is_refused_with_no_data_request(range_server: Any) -> None:
    range_server.put("budget/a.csup", _file())
    url = range_server.url("budget/a.csup")

    async def main() -> tuple[Any, int, Any]:
        store = HTTPStore()
        store.hedge = None
        try:
            async with csup_async.open(url, store=store) as r:
                plan = await r.plan(["id", "name"])
                assert plan.request_count >= 1 and plan.bytes_to_read > 0
                opened = len(range_server.seen("budget/a.csup"))
                with pytest.raises(BudgetError) as by_requests:
                    await r.scan(["id", "name"], max_requests=plan.request_count - 1)
                with pytest.raises(BudgetError) as by_bytes:
                    await r.scan(["id", "name"], max_bytes=plan.bytes_to_read - 1)
                refused = len(range_server.seen("budget/a.csup")) - opened
                ok = await r.scan(["id", "name"], max_requests=plan.request_count,
                                  max_bytes=plan.bytes_to_read)
                return (by_requests.value, by_bytes.value), refused, (plan, ok)
        finally:
            await store.close()

    (e_req, e_bytes), refused, (plan, ok) = asyncio.run(main())
    assert refused == 0, "a refused scan sent no request"
    assert f"{plan.request_count:,} requests" in str(e_req)
    assert f"max_requests={plan.request_count - 1:,}" in str(e_req)
    assert f"{plan.bytes_to_read:,} bytes" in str(e_bytes)
    assert "budget/a.csup" in str(e_req)
    assert ok.num_rows == 100_000 and ok.stats.requests == plan.request_count


def test_budget_arguments_are_checked(range_server: Any) -> None:
    range_server.put("budget/b.csup", _file())

    async def main() -> None:
        async with csup_async.open(range_server.url("budget/b.csup")) as r:
            with pytest.raises(ArgumentError, match="max_requests"):
                await r.scan(["id"], max_requests=-1)
            with pytest.raises(ArgumentError, match="max_bytes"):
                await r.scan(["id"], max_bytes=1.5)  # type: ignore[arg-type]
            with pytest.raises(ArgumentError, match="max_requests"):
                await r.take([1], ["id"], max_requests=True)  # type: ignore[arg-type]
            with pytest.raises(ArgumentError, match="on_progress must be callable"):
                await r.scan(["id"], limit=3, on_progress=5)  # type: ignore[arg-type]
            # a row selection takes a budget now: its plan is checked like a whole scan's
            with pytest.raises(BudgetError, match="before any data request"):
                await r.scan(["id"], max_bytes=10, limit=3)

    asyncio.run(main())


def test_explain_shows_the_estimated_cost(range_server: Any) -> None:
    range_server.put("budget/c.csup", _file())

    async def main() -> Any:
        async with csup_async.open(range_server.url("budget/c.csup"), profile="s3") as r:
            return await r.plan(["id", "name"])

    plan = asyncio.run(main())
    text = plan.explain()
    expected = (plan.request_count * 0.0004 / 1000 + plan.bytes_to_read * 0.09 / 1e9)
    assert f"estimated cost ${expected:.6f}" in text
    assert "S3 list prices" in text and "an estimate" in text
    mine = plan.explain(prices=Prices(get_per_1000=5.0, egress_per_gb=0.0, name="mine"))
    assert f"estimated cost ${plan.request_count * 5.0 / 1000:.6f}" in mine


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**7), st.integers(0, 10**13),
       st.floats(0, 10, allow_nan=False), st.floats(0, 10, allow_nan=False))
def test_a_bill_adds_requests_and_egress(requests: int, nbytes: int, per_k: float,
                                         per_gb: float) -> None:
    b = bill(requests, nbytes, Prices(per_k, per_gb))
    assert b.total == pytest.approx(requests / 1000 * per_k + nbytes / 1e9 * per_gb)
    assert b.total >= 0


def test_default_prices_by_store() -> None:
    assert prices_for("s3") is S3_PRICES and prices_for("gcs") is GCS_PRICES
    assert prices_for("http").get_per_1000 == 0
    with pytest.raises(ArgumentError):
        Prices(get_per_1000=-1)
