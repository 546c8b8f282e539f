"""``--max-requests``/``--max-bytes`` on scan, cat and convert: a plan over the budget is
refused with one line and exit code 6, before any data request (the range server's log
shows only the open's tail reads); within it the command's output is unchanged.  The
progress bar follows the plan's exact bytes."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import EXIT_BUDGET, main

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = 60_000


def _blob(seed: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": seed * ROWS + i, "name": f"name {(i * 7919) % 100_003}",
                            "x": i * 0.5} for i in range(ROWS)])
    return out.getvalue()


@pytest.fixture(scope="module")
def blobs() -> list[bytes]:
    return [_blob(0), _blob(1)]


def _urls(range_server: Any, blobs: list[bytes], prefix: str) -> list[str]:
    names = [f"{prefix}/part-{k}.csup" for k in range(len(blobs))]
    for n, b in zip(names, blobs, strict=True):
        range_server.put(n, b)
    return [range_server.url(n) for n in names]


def _data_requests(range_server: Any) -> int:
    """Requests other than the open's suffix reads (``Range: bytes=-N``)."""
    return sum(1 for s in range_server.seen()
               if not s.headers.get("Range", "").startswith("bytes=-"))


def run(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", [
    ["scan", "-c", "id,name", "--format", "json"],
    ["scan", "-c", "name", "--where", "id >= 100 and id < 200", "--format", "json"],
    ["scan", "--limit", "70000", "--format", "csv"],
    ["cat"],
    ["cat", "--limit", "5"],
])
def test_scan_and_cat_over_budget_exit_6_with_no_data_request(
        range_server: Any, blobs: list[bytes], capsys: pytest.CaptureFixture[str],
        command: list[str]) -> None:
    urls = _urls(range_server, blobs, "cli-budget")
    verb, *flags = command
    code, out, err = run([verb, *urls, *flags, "--max-bytes", 1], capsys)
    assert code == EXIT_BUDGET == 6, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("csup-async: error: ")
    assert "refused before any data request" in lines[0] and "max_bytes=1)" in lines[0]
    assert _data_requests(range_server) == 0
    # the same command within a budget large enough prints what it prints without one
    code, free, _ = run([verb, *urls, *flags], capsys)
    assert code == 0
    code, budgeted, err = run([verb, *urls, *flags, "--max-bytes", 10**9,
                               "--max-requests", 10**6], capsys)
    assert code == 0, err
    assert budgeted == free and free


def test_convert_over_budget_writes_nothing(range_server: Any, blobs: list[bytes],
                                            tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    urls = _urls(range_server, blobs, "cli-budget-convert")
    for out_name in ("out.parquet", "out.bsup", "out.csup", "out.ndjson"):
        target = tmp_path / out_name
        code, _, err = run(["convert", *urls, target, "--max-requests", 0], capsys)
        assert code == EXIT_BUDGET, (out_name, err)
        assert "max_requests=0" in err and len(err.strip().splitlines()) == 1
        assert not target.exists(), out_name
    assert _data_requests(range_server) == 0
    code, _, err = run(["convert", *urls, tmp_path / "ok.ndjson", "--max-requests", 10**6],
                       capsys)
    assert code == 0, err
    lines = (tmp_path / "ok.ndjson").read_text().splitlines()
    assert len(lines) == 2 * ROWS and json.loads(lines[-1])["id"] == 2 * ROWS - 1


def test_negative_budgets_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["scan", "x.csup", "--max-bytes", -1], capsys)
    assert code == 2 and "--max-bytes must be 0 or more" in err
    code, _, err = run(["cat", "x.csup", "--max-requests", "ten"], capsys)
    assert code == 2 and "--max-requests" in err


def test_the_progress_bar_counts_the_planned_bytes(
        range_server: Any, blobs: list[bytes], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar is driven by on_progress: its last update is every planned byte read."""
    import rich.progress

    urls = _urls(range_server, blobs, "cli-budget-bar")
    updates: list[tuple[Any, Any]] = []
    real = rich.progress.Progress.update

    def update(self: Any, task: Any, **kw: Any) -> None:
        if "completed" in kw:
            updates.append((kw["completed"], kw.get("total")))
        real(self, task, **kw)

    monkeypatch.setattr(rich.progress.Progress, "update", update)
    code, out, err = run(["--progress", "scan", *urls, "-c", "id,name", "--format", "json"],
                         capsys)
    assert code == 0, err
    assert len(out.splitlines()) == 2 * ROWS
    assert updates and updates[0][0] == 0
    done, total = updates[-1]
    assert done == total and total > 0
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(updates))
    fetched = 0  # what the data requests asked the server for (a hedge's copy once)
    for _name, rng in {(s.name, s.headers.get("Range", "")) for s in range_server.seen()}:
        if rng.startswith("bytes=") and not rng.startswith("bytes=-"):
            a, b = rng[len("bytes="):].split("-")
            fetched += int(b) - int(a) + 1
    assert total == fetched
