"""Every read verb parses its arguments once, where it is entered: a Reader's, a Fragment's,
a Dataset's and the sync faces' (``planner.request.ScanRequest.parse``), whatever layout
the files are in, and hands that one request down (Dataset → Fragment → Reader), so a
bad argument is refused alike by every face, with the same error class and message."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async import ArgumentError, CsupError, RowSelectionError
from csup_async.datasets.fragment import Fragment
from planner.filters import FilterError
from planner.request import ScanRequest

#: our layout, CSUP v23 (the default) and v16's header layout: three readers' verbs
TARGETS = ["csup-async", "super", "super-0.3"]
ROWS = 40


@pytest.fixture(scope="module", params=TARGETS)
def files(request: Any, tmp_path_factory: Any) -> list[str]:
    d = tmp_path_factory.mktemp(f"verbs-{request.param}")
    out = []
    for k in range(2):
        p = d / f"part-{k}.csup"
        csup_async.write(str(p), [{"id": k * ROWS + i, "s": f"s{i % 4}"} for i in range(ROWS)],
                         target=request.param)
        out.append(str(p))
    return out


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A count of ``ScanRequest.parse`` calls (the one place a verb's arguments are
    checked), reset by the test between verbs."""
    seen = [0]
    parse = ScanRequest.parse.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ScanRequest], *args: Any, **kwargs: Any) -> ScanRequest:
        seen[0] += 1
        return parse(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScanRequest, "parse", classmethod(counted))
    yield seen


async def _drain(it: Any) -> int:
    return sum([b.num_rows async for b in it])


def _async_calls(r: Any, frag: Fragment, ds: Any) -> dict[str, Callable[[], Any]]:
    """Each async verb with a filter, a limit, rows or indices and a budget given."""
    budget = {"max_requests": 1000, "max_bytes": 1 << 30}
    return {
        "reader.scan": lambda: r.scan(["id"], filter="id >= 3", limit=5, **budget),
        "reader.scan rows": lambda: r.scan(["s"], rows=slice(2, 9)),
        "reader.take": lambda: r.take([5, 1, 5], ["id", "s"], **budget),
        "reader.iter_batches": lambda: _drain(r.iter_batches(["id"], batch_rows=7,
                                                             filter="id < 30")),
        "reader.plan": lambda: r.plan(["id"], filter="id = 4"),
        "fragment.scan": lambda: frag.scan(["id"], filter="id >= 3", limit=5, **budget),
        "fragment.take": lambda: frag.take([0, 2], ["s"]),
        "fragment.iter_batches": lambda: _drain(frag.iter_batches(["id"], batch_rows=9,
                                                                  limit=20, **budget)),
        "fragment.count_rows": lambda: frag.count_rows("id > 10"),
        "dataset.scan": lambda: ds.scan(["id", "s"], filter="id >= 30", limit=25, **budget),
        "dataset.scan rows": lambda: ds.scan(["id"], rows=slice(35, 45)),
        "dataset.take": lambda: ds.take([79, 0, 41], ["id"], **budget),
        "dataset.iter_batches": lambda: _drain(ds.iter_batches(["id"], batch_rows=16,
                                                               filter="id > 10")),
        "dataset.iter_batches budget": lambda: _drain(ds.iter_batches(
            ["id"], batch_rows=16, limit=50, **budget)),
        "dataset.count_rows": lambda: ds.count_rows("id < 50"),
        "dataset.get_fragments": lambda: ds.get_fragments("id < 50"),
        "dataset.plan": lambda: ds.plan(["s"], filter="id < 50"),
    }


async def test_each_async_verb_parses_its_arguments_once(files: list[str],
                                                         parses: list[int]) -> None:
    async with (csup_async.open(files[0]) as r, csup_async.open_dataset(files) as ds):
        frag = Fragment(r.key, reader=r)
        for name, call in _async_calls(r, frag, ds).items():
            parses[0] = 0
            await call()
            assert parses[0] == 1, f"{name} parsed its arguments {parses[0]} times"


def _duck(source: Any, columns: list[str], **kw: Any) -> int:
    """``to_duckdb``'s relation, counted (its stream read by DuckDB)."""
    duckdb = pytest.importorskip("duckdb")
    rel = csup_async.to_duckdb(source, columns, connection=duckdb.connect(), **kw)
    return int(rel.aggregate("count(*)").fetchall()[0][0])


def test_each_sync_verb_parses_its_arguments_once(files: list[str], parses: list[int]) -> None:
    calls: dict[str, Callable[[Any, Any], Any]] = {
        "sync.scan": lambda r, ds: r.scan(["id"], filter="id > 3", limit=2, max_bytes=1 << 30),
        "sync.take": lambda r, ds: r.take([3, 1], ["id"], max_requests=100),
        "sync.iter_batches": lambda r, ds: list(r.iter_batches(["id"], batch_rows=8,
                                                                filter="id > 3")),
        "sync.count_rows": lambda r, ds: r.count_rows("id > 3", max_requests=100),
        "sync.plan": lambda r, ds: r.plan(["id"], limit=3),
        "sync dataset.scan": lambda r, ds: ds.scan(["id"], filter="id > 3", limit=50),
        "sync dataset.take": lambda r, ds: ds.take([60, 2], ["s"], on_progress=print),
        "sync dataset.count_rows": lambda r, ds: ds.count_rows(filters=[("id", ">", 3)]),
        "read": lambda r, ds: csup_async.read(files[0], ["id"], filter="id > 3"),
        "read many": lambda r, ds: csup_async.read(files, ["id"], limit=45, max_requests=99),
        "to_duckdb": lambda r, ds: _duck(files[0], ["id"], batch_rows=8, max_requests=99),
        "to_duckdb filter": lambda r, ds: _duck(files[0], ["id"], filter="id > 3", limit=9),
        "to_duckdb many": lambda r, ds: _duck(files, ["s"], limit=45, max_bytes=1 << 30),
    }
    with csup_async.open_sync(files[0]) as r, csup_async.open_dataset_sync(files) as ds:
        for name, call in calls.items():
            parses[0] = 0
            call(r, ds)
            assert parses[0] == 1, f"{name} parsed its arguments {parses[0]} times"


BAD: list[tuple[dict[str, Any], type[CsupError], str]] = [
    ({"limit": -1}, RowSelectionError, "limit must be an integer >= 0, not -1"),
    ({"filter": "id >"}, FilterError, ""),
    ({"filter": "id > 1", "filters": [("id", ">", 1)]}, FilterError,
     "pass filter= or filters=, not both"),
    ({"max_bytes": -5}, ArgumentError, "max_bytes must be None or an integer >= 0, not -5"),
    ({"on_progress": 7}, ArgumentError, "on_progress must be callable, not int"),
    ({"columns": b"id"}, CsupError, "a column list is a string or a sequence of paths"),
]


def _takes(verb: Callable[..., Any], kw: dict[str, Any]) -> bool:
    """Whether ``verb``'s public signature has every keyword of ``kw`` (the faces' verbs
    keep theirs: ``Reader.iter_batches`` has no ``limit``, a Fragment's no ``filters``)."""
    return set(kw) <= set(inspect.signature(verb).parameters)


def _refusal(call: Callable[[], Any]) -> tuple[type, str]:
    try:
        call()
    except CsupError as e:
        return type(e), e.message
    return type(None), "no error"


@pytest.mark.parametrize(("kw", "cls", "message"), BAD)
def test_a_bad_argument_is_refused_alike_by_every_face(files: list[str], kw: dict[str, Any],
                                                      cls: type, message: str) -> None:
    kw = dict(kw)
    columns = kw.pop("columns", ["id"])

    async def each_async() -> list[tuple[type, str]]:
        async with csup_async.open(files[0]) as r, csup_async.open_dataset(files) as ds:
            got = []
            for verbs in (r, Fragment(r.key, reader=r), ds):
                calls = []
                if _takes(verbs.scan, kw):
                    calls.append(verbs.scan(columns, **kw))
                if _takes(verbs.iter_batches, kw):
                    calls.append(_drain(verbs.iter_batches(columns, **kw)))
                for call in calls:
                    try:
                        await call
                    except CsupError as e:
                        got.append((type(e), e.message))
                    else:
                        got.append((type(None), "no error"))
            return got

    got = asyncio.run(each_async())
    with csup_async.open_sync(files[0]) as r, csup_async.open_dataset_sync(files) as ds:
        got += [_refusal(lambda: r.scan(columns, **kw)),
                _refusal(lambda: ds.scan(columns, **kw)),
                _refusal(lambda: csup_async.read(files[0], columns, **kw)),
                _refusal(lambda: csup_async.read(files, columns, **kw))]
        if _takes(r.iter_batches, kw):
            got.append(_refusal(lambda: r.iter_batches(columns, **kw)))  # at the call
        if _takes(csup_async.to_duckdb, kw):
            got += [_refusal(lambda: _duck(files[0], columns, **kw)),
                    _refusal(lambda: _duck(files, columns, **kw))]
    assert len(got) >= 8 and len(set(got)) == 1, got
    assert issubclass(got[0][0], cls) and message in got[0][1]


@pytest.mark.parametrize(("indices", "message"), [
    ([-1], "row index -1 is negative"),
    ([0.5], "row indices must be integers, not float (0.5)"),
    ("01", "take() needs a sequence of row indices, not str"),
])
def test_bad_row_indices_are_refused_alike_by_every_face(files: list[str], indices: Any,
                                                         message: str) -> None:
    async def each_async() -> list[tuple[type, str]]:
        async with csup_async.open(files[0]) as r, csup_async.open_dataset(files) as ds:
            got = []
            for verbs in (r, Fragment(r.key, reader=r), ds):
                with pytest.raises(RowSelectionError) as e:
                    await verbs.take(indices, ["id"])
                got.append((type(e.value), e.value.message))
            return got

    got = asyncio.run(each_async())
    with csup_async.open_sync(files[0]) as r, csup_async.open_dataset_sync(files) as ds:
        got += [_refusal(lambda: r.take(indices, ["id"])),
                _refusal(lambda: ds.take(indices, ["id"]))]
    assert set(got) == {(RowSelectionError, message)}


def test_to_duckdb_names_the_object_of_a_bad_argument(files: list[str]) -> None:
    """One object's arguments are parsed once, with the path its reader names (as
    ``read``'s); the stream's batch size among them."""
    for kw in ({"limit": -1}, {"batch_rows": 0}, {"filter": "id >"}):
        with pytest.raises(CsupError) as e:
            _duck(files[0], ["id"], **kw)
        assert e.value.path == files[0], kw


def test_the_files_are_read_by_different_readers(files: list[str]) -> None:
    """(The parity above compares three readers, not one reader three times.)"""
    with csup_async.open_sync(files[0]) as r:
        assert r.scan(["id"], filter="id >= 38").column("id").to_pylist() == [38, 39]
    assert Path(files[0]).stat().st_size > 0


@pytest.mark.parametrize("many", [False, True])
def test_a_polars_collect_checks_nothing_again(files: list[str], parses: list[int],
                                               many: bool) -> None:
    """``scan_polars`` checks its arguments when called; each collect then narrows that
    request (the columns, the pushed filter and limit polars asks for) and parses none."""
    pl = pytest.importorskip("polars")
    lf = csup_async.scan_polars(files if many else files[0], max_requests=100, batch_rows=8)
    parses[0] = 0
    got = lf.filter(pl.col("id") > 3).select("id").collect()
    assert got.height == (2 * ROWS if many else ROWS) - 4
    assert lf.select("s").head(3).collect().height == 3
    assert parses[0] == 0
