"""The sync face, ``read``, ``scan_polars`` and ``to_duckdb`` take the read's budget and
progress as the async verbs do (issue #39, item 14); another library's names are
answered with ours (item 18); SyncReader's methods are documented and take
``count_rows(filter=)`` (item 21)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async import BudgetError, ConfigError, CsupError

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


REAL = Path(__file__).resolve().parents[2] / "data" / "real"
ROWS = [{"i": i * 7919 % 100003, "s": f"v{i % 7}"} for i in range(60000)]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = str(tmp_path_factory.mktemp("sync") / "t.csup")
    csup_async.write(p, ROWS, segment_thresh=4096)
    return p


SOURCES = {"csup": None, "superdb": REAL / "super" / "primitives.csup",
           "bsup": REAL / "zed1.12-all.zng"}


def _src(kind: str, path: str) -> str:
    return path if SOURCES[kind] is None else str(SOURCES[kind])


@pytest.mark.parametrize("kind", list(SOURCES))
def test_sync_reader_verbs_take_a_budget_and_progress(path: str, kind: str) -> None:
    src = _src(kind, path)
    seen: list[Any] = []
    with csup_async.open_sync(src) as r:
        n = r.count_rows()
        assert r.scan(max_requests=100, max_bytes=1 << 30,
                      on_progress=seen.append).num_rows == n
        assert seen, "on_progress was called"
        assert r.take([0, 1], max_requests=100).num_rows == 2
        assert sum(b.num_rows for b in r.iter_batches(batch_rows=100, max_bytes=1 << 30)) == n
        assert r.count_rows(max_requests=100) == n


def test_a_budget_refuses_the_read_before_it_starts(path: str) -> None:
    with csup_async.open_sync(path) as r:
        with pytest.raises(BudgetError):
            r.scan(max_bytes=10)
        with pytest.raises(BudgetError):
            r.take([0, 59999], max_requests=0)
        with pytest.raises(BudgetError):
            list(r.iter_batches(max_bytes=10))
    with pytest.raises(BudgetError):
        csup_async.read(path, max_bytes=10)


def test_read_scan_polars_and_to_duckdb_take_a_budget(path: str, tmp_path: Path) -> None:
    seen: list[Any] = []
    assert csup_async.read(path, ["i"], max_requests=50, on_progress=seen.append
                           ).num_rows == len(ROWS)
    assert seen
    many = [path, path]
    assert csup_async.read(many, ["i"], max_bytes=1 << 30).num_rows == 2 * len(ROWS)
    pl = pytest.importorskip("polars")
    lf = csup_async.scan_polars(path, max_requests=50)
    assert lf.select(pl.len()).collect().item() == len(ROWS)
    with pytest.raises(Exception, match="max_bytes"):  # polars wraps the BudgetError
        csup_async.scan_polars(path, max_bytes=10).collect()
    duckdb = pytest.importorskip("duckdb")
    rel = csup_async.to_duckdb(path, ["i"], max_requests=50, connection=duckdb.connect())
    assert rel.aggregate("count(*)").fetchall() == [(len(ROWS),)]


def test_batch_rows_none_is_a_clear_error(path: str) -> None:
    with (csup_async.open_sync(path) as r,
          pytest.raises(CsupError, match="batch_rows must be an integer >= 1, not None")):
        r.iter_batches(batch_rows=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["n_rows", "nrows"])
def test_row_counts_of_other_libraries_point_to_limit(path: str, name: str) -> None:
    with pytest.raises(ConfigError, match="limit="):
        csup_async.read(path, **{name: 5})
    with pytest.raises(ConfigError, match="limit="):
        csup_async.open_sync(path, **{name: 5})


def test_a_read_argument_given_to_open_says_so(path: str) -> None:
    with pytest.raises(ConfigError, match="argument of the read verbs"):
        csup_async.open_sync(path, max_requests=3)


def test_metadata_cache_takes_a_str_as_a_path_does(path: str, tmp_path: Path) -> None:
    where = str(tmp_path / "cache")
    assert csup_async.read(path, ["i"], metadata_cache=where).num_rows == len(ROWS)
    assert csup_async.read(path, ["i"], metadata_cache=where, immutable=True
                           ).num_rows == len(ROWS)
    assert Path(where).is_dir() and any(Path(where).rglob("*"))


def test_count_rows_takes_a_filter(path: str) -> None:
    with csup_async.open_sync(path) as r:
        small = sum(1 for x in ROWS if x["i"] < 10)
        assert r.count_rows(filter="i < 10") == small
        assert r.count_rows("s = 'v3'") == sum(1 for x in ROWS if x["s"] == "v3")
        assert r.count_rows(filters=[("i", ">=", 99990)]) == sum(
            1 for x in ROWS if x["i"] >= 99990)
        assert r.count_rows(filter="i < 10", max_requests=100) == small
    with csup_async.open_sync(str(REAL / "zed1.12-all.zng")) as r:
        assert r.count_rows(filter="i64 > 0") == r.scan(filter="i64 > 0").num_rows


def test_every_public_sync_method_has_a_docstring() -> None:
    from csup_async.sync import SyncDataset, SyncReader

    for cls in (SyncReader, SyncDataset):
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_"):
                assert inspect.getdoc(fn), f"{cls.__name__}.{name} has no docstring"
