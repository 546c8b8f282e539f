"""docs/performance.md's and README.md's tables are what ``bench/report.py`` makes from
bench/results/.

Nobody types a benchmark number into the docs: each table sits between markers,
and this test fails when a table differs from what the committed results give
(rerun ``python bench/report.py`` after a benchmark).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
import report  # noqa: E402


def test_docs_tables_are_generated_from_the_committed_results():
    page = (ROOT / "docs" / "performance.md").read_text()
    found = report.blocks(page)
    assert sorted(found) == sorted(set(report.TABLES) - {"headline"})  # each in the page
    assert report.blocks(report.render(page)) == found, (
        "docs/performance.md is stale: run python bench/report.py")


def test_the_readme_numbers_are_generated_from_the_committed_results():
    page = (ROOT / "README.md").read_text()
    found = report.blocks(page)
    assert list(found) == ["headline"]
    assert "| service, `open()` per request, 64 clients |" in found["headline"]
    assert report.blocks(report.render(page)) == found, (
        "README.md's numbers are stale: run python bench/report.py")


def test_tables_follow_the_results_files(tmp_path: Path):
    cold = {"profile": "s3", "columns": ["i3", "s1"], "command": "python bench/bench_cold.py",
            "cold": [{"reader": "csup-async", "median_s": 0.5, "p90_over_median": 1.1,
                      "cpu_median_s": 0.45, "requests": 3, "connections": 2},
                     {"reader": "polars", "median_s": 0.4, "p90_over_median": 1.05,
                      "cpu_median_s": 0.2, "requests": 4, "connections": 4}],
            "warm": [{"reader": "csup-async",
                      "no_store": {"first_s": 0.3, "tenth_s": 0.15, "median_s": 0.15,
                                   "worst_of_ten_over_tenth": 2.0, "requests_per_scan": 2.0,
                                   "connections_per_scan": 0.1}},
                     {"reader": "polars",
                      "no_store": {"first_s": 0.3, "tenth_s": 0.2, "median_s": 0.2}}]}
    (tmp_path / "cold.json").write_text(json.dumps(cold))
    assert "| csup-async | 0.500 | 1.25 | 1.10 | 0.450 | 3 | 2 |" in report.cold(tmp_path)
    assert ("| csup-async | 2 cols | no store | 0.150 | 0.75 | 0.300 | 0.150 | 2.00 | 2.00 "
            "| 2.0 | 0.1 |") in report.warm(tmp_path)
    page = "intro\n<!-- bench/report.py: cold -->\n| old |\n<!-- end bench/report.py -->\nend\n"
    new = report.render(page, tmp_path)
    assert new.startswith("intro\n<!-- bench/report.py: cold -->\n| cold one-shot")
    assert new.endswith("<!-- end bench/report.py -->\nend\n") and "| old |" not in new


def test_the_local_table_gives_wall_spread_and_cpu(tmp_path: Path):
    def side(walls: list[float], cpus: list[float]) -> dict:
        return {"median_s": sorted(walls)[len(walls) // 2], "p90_over_median": 1.2,
                "cpu_runs": cpus}

    local = {"cases": [{"name": "all 24 columns", "runs": 3,
                        "csup-async": side([0.3, 0.4, 0.5], [0.25, 0.2, 0.3]),
                        "pyarrow": side([0.4, 0.5, 0.6], [0.5, 0.4, 0.45])}]}
    (tmp_path / "local.json").write_text(json.dumps(local))
    assert report.local(tmp_path).splitlines()[-1] == (
        "| all 24 columns (3 alternating runs) | 0.400 | 1.20 | 0.500 | 1.20 | 0.80 "
        "| 0.250 / 0.450 |")


def test_an_unknown_table_is_refused(tmp_path: Path):
    page = "<!-- bench/report.py: nosuch -->\n<!-- end bench/report.py -->\n"
    with pytest.raises(SystemExit, match="nosuch"):
        report.render(page, tmp_path)
