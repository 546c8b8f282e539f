"""polars and DuckDB sources read only what the query needs: bytes counted at a real server."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import csup_async
from tests.support.servers import RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


pl = pytest.importorskip("polars")

ROWS = 120_000
COLS = [f"c{i}" for i in range(24)]


def _bytes_seen(server: RangeServer, name: str) -> int:
    """Bytes the server was asked for (Range headers; a plain GET is the whole file)."""
    size = os.path.getsize(server.root / name)
    total = 0
    for s in server.seen(name):
        rng = {k.lower(): v for k, v in s.headers.items()}.get("range")
        if rng is None:
            total += size
            continue
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng)
        assert m, rng
        a, b = m.groups()
        if a == "":
            total += min(int(b), size)
        else:
            total += min(int(b) if b else size - 1, size - 1) - int(a) + 1
    return total


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    cols = {c: rng.integers(0, 1_000_000, ROWS) for c in COLS}
    cols["c0"] = np.arange(ROWS)  # the filter's column: 1% is one zone of rows
    return cols


@pytest.fixture
def served(range_server: RangeServer, wide: dict[str, np.ndarray]) -> str:
    path = range_server.root / "wide.csup"
    if not path.exists():
        csup_async.write(str(path), wide, segment_thresh=64 << 10)
    return range_server.url("wide.csup")


def test_polars_projection_and_filter_read_what_scan_reads(
        served: str, range_server: RangeServer, wide: dict[str, np.ndarray]) -> None:
    cut = ROWS // 100
    lf = csup_async.scan_polars(served)
    range_server.reset()
    got = lf.filter(pl.col("c0") < cut).select("c5", "c17").collect()
    polars_bytes = _bytes_seen(range_server, "wide.csup")

    with csup_async.open_sync(served) as r:  # opened before counting, as the LazyFrame is
        range_server.reset()
        ref = r.scan(["c5", "c17"], filter=csup_async.col("c0") < cut)
        scan_bytes = _bytes_seen(range_server, "wide.csup")

    eager = pl.DataFrame(csup_async.read(served)).filter(pl.col("c0") < cut).select("c5", "c17")
    assert got.equals(eager) and got.height == cut
    assert got.equals(pl.DataFrame(ref))
    assert polars_bytes <= 1.3 * scan_bytes, (polars_bytes, scan_bytes)

    range_server.reset()
    lf.select("c5").collect()  # one column of 24, no filter
    one_column = _bytes_seen(range_server, "wide.csup")
    range_server.reset()
    lf.collect()
    everything = _bytes_seen(range_server, "wide.csup")
    assert polars_bytes < one_column < everything / 10


def test_duckdb_reads_the_given_columns_and_filter(
        served: str, range_server: RangeServer, wide: dict[str, np.ndarray]) -> None:
    pytest.importorskip("duckdb")
    # opened once before counting, so that each count below has the same (warm) tail
    # read: a process's first open of an object reads a larger tail than later ones
    with csup_async.open_sync(served):
        pass
    range_server.reset()
    rel = csup_async.to_duckdb(served, ["c0", "c3"], filter="c0 < 1200")
    got = rel.query("t", "select count(*), sum(c3) from t").fetchall()
    filtered = _bytes_seen(range_server, "wide.csup")
    assert got == [(1200, int(wide["c3"][:1200].sum()))]

    range_server.reset()
    rel = csup_async.to_duckdb(served, ["c3"])
    assert rel.query("t", "select sum(c3) from t").fetchall() == [(int(wide["c3"].sum()),)]
    projected = _bytes_seen(range_server, "wide.csup")

    range_server.reset()
    assert csup_async.to_duckdb(served).aggregate("count(*)").fetchall() == [(ROWS,)]
    everything = _bytes_seen(range_server, "wide.csup")
    assert filtered < projected < everything / 10
