"""Filters beyond ``Reader.scan``: ``iter_batches(filter=)`` and the CLI's ``--where``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import ColumnNotFoundError
from csup_async.cli import EXIT_USAGE, main
from planner.filters import FilterError, matches
from planner.filtertext import parse_filter
from tests.support.rowpaths import named_by_no_row

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


rows_st = st.lists(st.fixed_dictionaries(
    {"id": st.integers(-5, 5)},
    optional={"v": st.one_of(st.none(), st.floats(-3, 3), st.just(math.nan)),
              "s": st.one_of(st.none(), st.text(alphabet="ab", max_size=3)),
              "u": st.fixed_dictionaries({"n": st.one_of(st.none(), st.integers(0, 3))})}),
    min_size=1, max_size=80)
filters_st = st.sampled_from([
    "id = 1", "id >= 0 and v < 1.5", "not (id = 2)", "s startswith 'a' or v is null",
    "u.n in (1, 2)", "missing = 3", "not (missing = 3)", "v != 0.5"])


def _norm(rows: list[Any]) -> list[Any]:
    return [{k: ("nan" if isinstance(v, float) and math.isnan(v) else v)
             for k, v in r.items()} for r in rows]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, text=filters_st, batch_rows=st.sampled_from([1, 7, 1000]),
       project=st.sampled_from([None, "id"]))
async def test_batches_hold_only_matching_rows_in_file_order(
        tmp_path_factory: Any, rows: list[Any], text: str, batch_rows: int, project: Any
) -> None:
    p = tmp_path_factory.mktemp("batches") / "f.csup"
    csup_async.write(str(p), rows)
    f = parse_filter(text)
    async with csup_async.open(str(p)) as r:
        if named_by_no_row(rows, f):  # a misspelling is refused, never "no match"
            with pytest.raises(ColumnNotFoundError, match="the filter names"):
                async for _ in r.iter_batches(project, batch_rows=batch_rows, filter=f):
                    pass
            return
        every = (await r.scan(project)).to_pylist()
        got: list[Any] = []
        async for b in r.iter_batches(project, batch_rows=batch_rows, filter=f):
            assert 0 < b.num_rows <= batch_rows
            assert list(b.columns) == list((await r.scan(project)).columns)  # filter cols dropped
            got += b.to_pylist()
    want = [every[i] for i, row in enumerate(rows) if matches(f, row)]
    assert _norm(got) == _norm(want)


async def test_iter_batches_text_filter_on_times(tmp_path: Path) -> None:
    p = tmp_path / "t.csup"
    ts = np.datetime64("2024-01-01T00:00:00", "ns") + np.arange(100) * np.timedelta64(1, "h")
    csup_async.write(str(p), pa.table({"ts": ts, "kind": ["push", "pull"] * 50}))
    async with csup_async.open(str(p)) as r:
        got = [b.to_pylist() async for b in r.iter_batches(
            ["kind"], batch_rows=16, filter="ts >= '2024-01-04T00:00:00Z' and kind = 'push'")]
        assert sum(len(b) for b in got) == 14 and all(x == {"kind": "push"}
                                                       for b in got for x in b)
        with pytest.raises(FilterError, match="RFC 3339"):
            async for _ in r.iter_batches(["kind"], filter="ts > 'yesterday'"):
                pass


@pytest.mark.parametrize("text", ["id ==", "id = 'x'", "ts > 'yesterday'"])
async def test_iter_batches_filter_errors_name_the_file_as_scan_does(
        tmp_path: Path, text: str) -> None:
    p = tmp_path / "named.csup"
    csup_async.write(str(p), [{"id": i, "ts": np.datetime64(i, "s")} for i in range(5)])
    async with csup_async.open(str(p)) as r:
        with pytest.raises(FilterError) as scan_err:
            await r.scan(["id"], filter=text)
        with pytest.raises(FilterError) as batch_err:
            async for _ in r.iter_batches(["id"], filter=text):
                pass
    assert scan_err.value.path == batch_err.value.path == str(p)
    assert str(p) in str(batch_err.value)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"batch_rows": "3"}, "batch_rows"), ({"batch_rows": None}, "batch_rows"),
    ({"batch_rows": 2.5}, "batch_rows"), ({"batch_rows": True}, "batch_rows"),
    ({"batch_rows": 0}, "batch_rows"), ({"prefetch": "2"}, "prefetch"),
    ({"prefetch": -1}, "prefetch")])
async def test_iter_batches_refuses_counts_that_are_not_integers(
        tmp_path: Path, kwargs: dict[str, Any], name: str) -> None:
    p = tmp_path / "f.csup"
    csup_async.write(str(p), [{"id": i} for i in range(5)])
    async with csup_async.open(str(p)) as r:
        with pytest.raises(csup_async.ArgumentError, match=name) as err:
            async for _ in r.iter_batches(["id"], **kwargs):
                pass
    assert isinstance(err.value, ValueError) and err.value.path == str(p)
    async with csup_async.open(str(p)) as r:  # a numpy integer is an integer
        got = [b.num_rows async for b in r.iter_batches(["id"], batch_rows=np.int64(2))]
    assert got == [2, 2, 1]


def run(args: list[Any], capsys: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def events(tmp_path: Path) -> Path:
    d = tmp_path / "events"
    d.mkdir()
    for day in range(3):
        ts = (np.datetime64("2024-01-01T00:00:00", "ns") + np.timedelta64(day, "D")
              + np.arange(24) * np.timedelta64(1, "h"))
        csup_async.write(str(d / f"day{day}.csup"),
                         pa.table({"ts": ts, "kind": ["push", "pull", "fork"] * 8,
                                   "n": np.arange(24) + 100 * day}))
    return d


WHERE = "ts >= '2024-01-02T12:00:00Z' and kind = 'push'"


def test_scan_where_is_the_python_filter(events: Path, capsys: Any) -> None:
    code, out, _ = run(["scan", events, "-c", "n", "--format", "json", "--where", WHERE], capsys)
    assert code == 0
    got = [json.loads(line)["n"] for line in out.splitlines()]
    want = [100 * d + h for d in range(3) for h in range(24)
            if h % 3 == 0 and (d, h) >= (1, 12)]
    assert got == want
    code, out, _ = run(["scan", events / "day2.csup", "--format", "csv", "--where",
                        "n in (200, 203) or n < 0"], capsys)
    assert code == 0 and out.splitlines()[0] == "ts,kind,n" and len(out.splitlines()) == 3
    code, out, _ = run(["scan", events, "-c", "n", "--format", "json", "--limit", "2",
                        "--where", WHERE], capsys)
    assert [json.loads(line)["n"] for line in out.splitlines()] == want[:2]


def test_cat_and_plan_where(events: Path, capsys: Any) -> None:
    code, out, _ = run(["cat", events, "--where", "n = 205"], capsys)
    assert code == 0 and [json.loads(x)["kind"] for x in out.splitlines()] == ["fork"]
    code, out, _ = run(["plan", events, "-c", "n", "--where", WHERE], capsys)
    assert code == 0
    assert "1 pruned" in out and "day0.csup: filter false by statistics" in out
    assert "columns: n, ts, kind" in out  # the filter's columns are read too


def test_where_errors_are_usage_errors_with_the_position(events: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit) as e:
        main(["scan", str(events), "--where", "n >= and"])
    assert e.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--where" in err and "position 5" in err
    code, _, err = run(["scan", str(events), "--where", "ts > 3"], capsys)
    assert code == EXIT_USAGE and "column ts is a time" in err


def test_help_documents_the_grammar(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["scan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--where FILTER" in out and "startswith" in out and "is [not] null" in out


def test_where_on_a_file_without_the_projected_column(tmp_path: Path, capsys: Any) -> None:
    """A file lacking the projected column still gives its matching rows, as nulls."""
    csup_async.write(str(tmp_path / "a.csup"), [{"x": i, "ts": i} for i in range(5)])
    csup_async.write(str(tmp_path / "b.csup"), [{"ts": i} for i in range(5, 10)])
    code, out, _ = run(["scan", tmp_path, "-c", "x", "--format", "json", "--where",
                        "ts >= 3 and ts != 8"], capsys)
    assert code == 0
    assert [json.loads(line)["x"] for line in out.splitlines()] == [3, 4] + [None] * 4


@pytest.mark.parametrize("target", [None, "super-0.3", "super"])
async def test_streamed_batches_bind_the_filter_once_per_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str | None) -> None:
    """``iter_batches(filter=)`` read the streamed way (with a budget: every zone; or by
    a reader of SuperDB's layouts) binds the filter for the batches' types once per
    file, not once per batch; the rows kept are those of the filter."""
    import csup_async.readers.execution as E
    import csup_async.readers.wholeobject as W

    p = tmp_path / "f.csup"
    csup_async.write(str(p), [{"id": i, "t": i % 3} for i in range(100)],
                     **({} if target is None else {"target": target}))
    calls = [0]
    real = E.bind

    def counted(*a: Any, **k: Any) -> Any:
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(E, "bind", counted)
    monkeypatch.setattr(W, "bind", counted)
    async with csup_async.open(str(p)) as r:
        got = [b async for b in r.iter_batches(["id"], batch_rows=10, filter="t = 1",
                                                 max_requests=1000)]
    assert [v for b in got for v in b.column("id").to_pylist()] == list(range(1, 100, 3))
    # once for the batches (and, for SuperDB's layouts, once more by the types their
    # metadata says, to prune objects): never once per batch (ten here)
    assert len(got) == 10 and calls[0] <= (1 if target is None else 2)
