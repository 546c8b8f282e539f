"""Filters on SuperDB files: exact rows (SQL semantics), and objects whose metadata
min/max rule the filter out are not read."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest

import csup_async

DATA = Path(__file__).resolve().parents[2] / "data" / "real" / "super"
ROWS = [json.loads(x) for x in gzip.decompress(
    (DATA / "objects.json.gz").read_bytes()).decode().splitlines()]

CASES = [  # filter text, the same as a Python predicate, objects the metadata rules out
    ("n >= 2450", lambda r: r["n"] >= 2450, 2),
    ("n < 5", lambda r: r["n"] < 5, 2),
    ("b = true and n > 2000", lambda r: r.get("b") is True and r["n"] > 2000, 1),
    ("s = 'a'", lambda r: r.get("s") == "a", 1),
    ("n = 1300 or n = 10", lambda r: r["n"] in (1300, 10), 1),
    ("b is null", lambda r: r.get("b") is None, 1),
]


async def _scan(f: str, **kw):
    async with csup_async.open(str(DATA / "objects.csup")) as r:
        plan = await r.plan(["n", "b"], filter=f)
        res = await r.scan(["n", "b"], filter=f, **kw)
        batches = [b async for b in r.iter_batches(["n", "b"], filter=f, batch_rows=9000)]
        return plan, res, batches


@pytest.mark.parametrize(("text", "pred", "pruned"), CASES)
def test_filtered_rows_are_exact(text, pred, pruned):
    plan, res, batches = asyncio.run(_scan(text))
    want = [r for r in ROWS if pred(r)]
    assert res.column("n").to_pylist() == [r["n"] for r in want]
    assert res.column("b").to_pylist() == [r.get("b") for r in want]
    assert [v for b in batches for v in b.column("n").to_pylist()] == [r["n"] for r in want]
    assert plan.pruned == pruned
    assert f"{pruned} of 3 objects ruled out" in plan.explain()


def test_a_pruned_object_is_not_read():
    plan, res, _ = asyncio.run(_scan("n >= 2450"))
    # only the last object (rows 240,000...) is read: its segments, not the others'
    assert res.stats.bytes_needed == plan.bytes_needed < 15_000


def test_filter_with_limit():
    _, res, _ = asyncio.run(_scan("b = false", limit=3))
    assert res.column("n").to_pylist() == [r["n"] for r in ROWS if r.get("b") is False][:3]


def test_a_bad_filter_names_the_file():
    with pytest.raises(csup_async.CsupError, match=r"objects\.csup"):
        asyncio.run(_scan("n >= 'text'"))
