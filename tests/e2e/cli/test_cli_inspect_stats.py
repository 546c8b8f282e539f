"""``inspect`` and ``--stats`` say what is true: nulls held in presence runs and in
all-null super types are counted, an empty-string bound shows, plurals agree, and bytes
the tail read already held are not a read amplification below 1x."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import main
from csup_async.scan.result import ScanStats

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


N = 100


def run(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _stat_line(text: str, column: str) -> list[str]:
    return next(ln.split() for ln in text.splitlines() if ln.split()[:1] == [column])


@pytest.fixture
def arrow_file(tmp_path: Path) -> tuple[Path, list[Any], list[Any]]:
    """Nullable Arrow columns: the writer keeps their nulls as presence runs."""
    pa = pytest.importorskip("pyarrow")
    x = [None if i % 3 == 0 else i for i in range(N)]
    r = [None if i % 5 == 0 else {"y": None if i % 2 else i, "s": ""} for i in range(N)]
    path = tmp_path / "a.csup"
    csup_async.write(path, pa.table({
        "x": pa.array(x, pa.int64()),
        "r": pa.array(r, pa.struct([("y", pa.int64()), ("s", pa.string())]))}))
    return path, x, r


def test_nulls_in_presence_runs_are_counted(arrow_file: Any,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, x, r = arrow_file
    code, out, err = run(["inspect", path], capsys)
    assert code == 0, err
    present_r = [v for v in r if v is not None]
    y_nulls = sum(v["y"] is None for v in present_r)
    assert _stat_line(out, "x")[2:5] == ["1", f"{N}", f"{x.count(None)}"]
    assert _stat_line(out, "r.y")[3:5] == [f"{len(present_r)}", f"{y_nulls}"]
    assert _stat_line(out, "r.s")[5:7] == ['""', '""'], "an empty-string bound shows as \"\""
    code, out, _ = run(["inspect", "--json", path], capsys)
    cols = json.loads(out)["columns"]
    assert (cols["x"]["values"], cols["x"]["nulls"]) == (N, x.count(None))
    assert cols["r.s"]["min"] == ""


def test_nulls_in_all_null_super_types_are_counted(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Python rows whose field is None get a super type where it is null (no column)."""
    rows = [{"a": i, "x": None if i % 4 == 0 else i} for i in range(40)]
    path = tmp_path / "p.csup"
    csup_async.write(path, rows)
    code, out, err = run(["inspect", path], capsys)
    assert code == 0, err
    assert _stat_line(out, "x")[3:5] == ["40", "10"]


def test_stats_say_what_the_numbers_mean(arrow_file: Any,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path, _, _ = arrow_file
    code, _, err = run(["scan", path, "--format", "json", "--stats"], capsys)
    assert code == 0, err
    line = next(ln for ln in err.splitlines() if ln.startswith("stats: "))
    assert "the tail read held the data" in line, line
    assert not re.search(r"\b0\.\d+x\b", line) and not re.search(r"\b1 requests\b", line)
    code, out, _ = run(["plan", path], capsys)
    assert "0.000x" not in out and "the tail read held" in out
    assert not re.search(r"\b1 (segments|requests|streams)\b", out), out


@pytest.mark.parametrize(("stats", "text"), [
    (ScanStats(requests=1, bytes_read=100, bytes_needed=100), "1 request, "),
    (ScanStats(requests=2, bytes_read=150, bytes_needed=100), "(1.50x read amplification)"),
    (ScanStats(requests=1, bytes_read=40, bytes_needed=100), "(the tail read held the rest)"),
])
def test_scan_stats_text(stats: ScanStats, text: str) -> None:
    assert text in str(stats)
