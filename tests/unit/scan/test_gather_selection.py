"""Late materialization by gathers (issue 38): a filtered scan, ``rows=``, ``take`` and


``limit=`` of a log-shaped file give exactly the rows of the unfiltered read, for every
kind of column (strings, nested optional records, unions, arrays, nulls, missing fields),
in files of one fused super type and of many (``fuse=False``), in small segments so a
selection spans many of them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import logshape

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")

ROWS = 3000
COLUMNS = ["ts", "level", "u.name", "u", "u.geo.city", "code", "dur", "tags", "req",
           "trace", "msg"]


@pytest.fixture(scope="module", params=["fused", "types"])
def logfile(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[str, list[dict[str, Any]]]:
    recs = list(logshape.records(ROWS, seed=7))
    path = tmp_path_factory.mktemp("gather") / f"logs-{request.param}.csup"
    csup_async.write(str(path), recs, fuse=request.param == "fused", segment_thresh=4096)
    full = csup_async.read(str(path), COLUMNS)
    rows = [{c: full.columns[c][i] for c in COLUMNS} for i in range(full.num_rows)]
    return str(path), rows


def _rows(res: Any, cols: list[str]) -> list[dict[str, Any]]:
    return [{c: res.columns[c][i] for c in cols} for i in range(res.num_rows)]


def _value(row: dict[str, Any], path: str) -> Any:
    return row[path]


FILTERS: list[tuple[str, str, Any]] = [
    ("level = 'error'", "level", lambda v: v == "error"),
    ("level != 'info'", "level", lambda v: v is not None and v != "info"),
    ("u.geo.city = 'Tokyo'", "u.geo.city", lambda v: v == "Tokyo"),
    ("trace is null", "trace", lambda v: v is None),
    ("u.name >= 'sara'", "u.name", lambda v: v is not None and v >= "sara"),
    ("msg < 'GET /v1/orders'", "msg", lambda v: v is not None and v < "GET /v1/orders"),
    ("ts >= '2026-11-18T11:06:45' and ts < '2026-11-18T11:06:47'", "ts",
     lambda v: v is not None and "2026-11-18T11:06:45" <= v < "2026-11-18T11:06:47"),
]


@pytest.mark.parametrize("expr,col,pred", FILTERS, ids=[f[0] for f in FILTERS])
def test_filtered_scan_is_the_unfiltered_read_filtered(logfile: Any, expr: str, col: str,
                                                      pred: Any) -> None:
    path, rows = logfile
    want = [r for r in rows if pred(r[col])]
    assert 0 < len(want) < len(rows)
    got = csup_async.read(path, COLUMNS, filter=expr)
    assert got.num_rows == len(want)
    assert _rows(got, COLUMNS) == want
    # the same rows through limit=
    lim = csup_async.read(path, COLUMNS, filter=expr, limit=7)
    assert _rows(lim, COLUMNS) == want[:7]


def test_filtered_scan_of_strings_only(logfile: Any) -> None:
    """The issue's case: strings projected, the filter's column not among them."""
    path, rows = logfile
    got = csup_async.read(path, ["ts", "u.name"], filter="level = 'error'")
    want = [{"ts": r["ts"], "u.name": r["u.name"]} for r in rows if r["level"] == "error"]
    assert _rows(got, ["ts", "u.name"]) == want


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rows_and_take_are_the_unfiltered_rows(logfile: Any, data: st.DataObject) -> None:
    path, rows = logfile
    cols = data.draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=4, unique=True))
    a = data.draw(st.integers(0, ROWS))
    b = data.draw(st.integers(a, ROWS))
    got = csup_async.read(path, cols, rows=slice(a, b))
    assert _rows(got, cols) == [{c: r[c] for c in cols} for r in rows[a:b]]
    idx = data.draw(st.lists(st.integers(0, ROWS - 1), max_size=60))
    with csup_async.open_sync(path) as r:
        took = r.take(idx, cols)
    assert _rows(took, cols) == [{c: rows[i][c] for c in cols} for i in idx]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_sparse_and_clustered_selections(logfile: Any, data: st.DataObject) -> None:
    """Selections of every density (one row, runs, every other row, all but a few)."""
    path, rows = logfile
    cols = data.draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=3, unique=True))
    density = data.draw(st.sampled_from([0.001, 0.05, 0.5, 0.99]))
    seed = data.draw(st.integers(0, 1000))
    picked = np.flatnonzero(np.random.default_rng(seed).random(ROWS) < density).tolist()
    with csup_async.open_sync(path) as r:
        took = r.take(picked, cols)
    assert _rows(took, cols) == [{c: rows[i][c] for c in cols} for i in picked]


def test_polars_duckdb_and_dataset_give_the_filtered_rows(logfile: Any) -> None:
    """The same late materialization behind ``scan_polars`` (predicate pushed down),
    ``to_duckdb(filter=)`` and a dataset's filtered scan."""
    import duckdb
    import polars as pl

    path, rows = logfile
    want = [(r["ts"], r["u.name"]) for r in rows if r["level"] == "error"]
    df = (csup_async.scan_polars(path).filter(pl.col("level") == "error")
          .select("ts", pl.col("u").struct.field("name")).collect())
    assert list(zip(df["ts"].to_list(), df["name"].to_list(), strict=True)) == want
    rel = csup_async.to_duckdb(path, ["ts", "u.name"], filter="level = 'error'",
                               connection=duckdb.connect())
    assert [tuple(r) for r in rel.fetchall()] == want
    got = csup_async.read([path], ["ts", "u.name"], filter="level = 'error'")
    assert [(got.columns["ts"][i], got.columns["u.name"][i])
            for i in range(got.num_rows)] == want
