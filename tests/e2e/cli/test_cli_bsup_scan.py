"""``csup-async scan`` and ``plan`` on BSUP files: read whole at open, then projected.

A BSUP stream has no column index, so the open reads all of it and a scan decodes its
columns from those bytes.  The files here are the real tools' own: super main's BSUP 5
beside the CSUP v23 file it wrote of the same values (``tests/data/real/super-main/``),
super v0.3.0's BSUP 2 with optional fields and fusion values (which version 0 cannot
say), and zq's ZNG.  A scan of the BSUP file must print what the scan of its CSUP
sibling prints (that reader is judged against the real tool elsewhere).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from csup_async.cli import main

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
#: (BSUP file, its CSUP sibling) written by the same real tool from the same input
PAIRS = [(p, p.with_suffix(".csup")) for p in sorted((REAL / "super-main").glob("*.bsup"))
         if p.stem != "recursive"]  # (recursive types have no column form in either)
PAIRS += [(REAL / "super" / f"{n}.bsup", REAL / "super" / f"{n}.csup")
          for n in ("fusion", "optional", "nulls", "nested", "primitives")]


def run(args: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(("bsup", "csup"), PAIRS, ids=[f"{b.parent.name}/{b.stem}"
                                                       for b, _ in PAIRS])
def test_scan_of_a_bsup_file_prints_what_its_csup_sibling_does(
        bsup: Path, csup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, want, err = run(["scan", csup, "--format", "json"], capsys)
    assert code == 0, err
    code, got, err = run(["scan", bsup, "--format", "json"], capsys)
    assert code == 0, err
    assert got == want and got


def test_a_projection_and_a_filter_of_a_zng_file(capsys: pytest.CaptureFixture[str]) -> None:
    zng = REAL / "zed1.12-all.zng"
    code, whole, _ = run(["cat", zng], capsys)
    assert code == 0
    rows = [json.loads(x) for x in whole.splitlines()]
    want = [{"i64": r.get("i64"), "s": r.get("s")} for r in rows
            if isinstance(r, dict) and "u8" in r and r.get("i64") is not None
            and r["i64"] > 0]
    code, out, err = run(["scan", zng, "-c", "i64,s", "--where", "i64 > 0",
                          "--format", "json"], capsys)
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == want and want


def test_plan_and_explain_say_the_object_is_read_whole(
        capsys: pytest.CaptureFixture[str]) -> None:
    f = REAL / "super" / "optional.bsup"
    code, out, err = run(["plan", f, "-c", "x,y"], capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("BSUP version 2, 90 values")
    assert "read whole at open" in out and "columns: x, y" in out
    assert "data: 0 requests" in out
    code, out, err = run(["scan", REAL / "super-main" / "enum.bsup", "--explain", "--limit",
                          "1", "--format", "json"], capsys)
    assert code == 0
    assert "BSUP version 5" in err and [json.loads(x) for x in out.splitlines()] == [{"e": "b"}]


def test_a_missing_column_of_a_bsup_file_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["scan", REAL / "super-main" / "enum.bsup", "-c", "nope"], capsys)
    assert code != 0 and "nope" in err and "Traceback" not in err


@pytest.mark.parametrize(("path", "version", "writer"), [
    (REAL / "zed1.12-all.zng", 0, "Zed (zq/zed v1.x) or csup-async"),
    (next((REAL / "conformance" / "super-0.2").glob("*.bsup")), 1, "super v0.2.0"),
    (REAL / "super" / "optional.bsup", 2, "super v0.3.0"),
    (REAL / "super-main" / "fusion.bsup", 5, "super main (2026)")],
    ids=["v0", "v1", "v2", "v5"])
def test_inspect_names_the_bsup_version_and_its_writer(
        path: Path, version: int, writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["inspect", path], capsys)
    assert code == 0, err
    assert f"layout: BSUP version {version} (a row stream" in out and f"written by {writer}" in out
    code, out, err = run(["inspect", "--json", "--verify", path], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["version"], doc["writer"], doc["layout"]) == (version, writer, "bsup")
    assert doc["rows"] > 0 and doc["super_types"]
