"""``csup-async lake create`` and ``lake create-pool``: a new lake from the shell alone.

A lake and a pool made by the CLI take a ``lake load`` and scan back the rows in key
order; with the real ``zed`` at hand (``CSUP_ASYNC_REAL_TOOLS``), ``zed`` itself reads
that lake: a real Zed file loaded into it comes back from ``zed query`` value for value
as ``zq`` printed the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from csup_async.cli import main
from csup_async.format import bsup
from tests.support import realtools

REAL = Path(__file__).resolve().parents[3] / "tests" / "data" / "real"


def run(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_create_a_lake_and_a_pool_then_load_and_scan(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "new" / "lake"
    code, out, err = run(capsys, "lake", "create", root)
    assert code == 0, err
    assert out.strip() == f"lake created: {root}"
    assert (root / "lake.zng").is_file()
    code, out, err = run(capsys, "lake", "create-pool", root, "logs", "--order", "n:asc",
                         "--seek-stride", "256")
    assert code == 0, err
    assert out.startswith("pool created: logs ")
    code, out, _ = run(capsys, "lake", "ls", root)
    assert out.split()[0] == "logs" and out.strip().endswith("key n order asc")
    rows = [{"n": (i * 37) % 101, "s": f"v{i}"} for i in range(101)]
    src = tmp_path / "rows.ndjson"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(capsys, "lake", "load", root, "--pool", "logs", src, "-m", "first")
    assert code == 0, err
    assert out.startswith("committed ")
    code, out, err = run(capsys, "lake", "scan", root, "--pool", "logs", "--where", "n < 10")
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == sorted(
        (r for r in rows if r["n"] < 10), key=lambda r: r["n"])


def test_a_new_lake_is_what_zed_init_wrote(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The magic record and the two empty journals (``zed`` refuses a lake without its
    ``index_rules`` journal), byte for byte as in the lake the real ``zed`` made."""
    root = tmp_path / "lake"
    assert run(capsys, "lake", "create", root)[0] == 0
    for rel in ("lake.zng", "index_rules/HEAD", "index_rules/TAIL"):
        assert (root / rel).read_bytes() == (REAL / "lake" / rel).read_bytes(), rel
    assert (root / "pools" / "HEAD").read_bytes() == b"0"
    assert (root / "pools" / "TAIL").read_bytes() == b"1 0"


def test_the_default_order_is_zeds_ts_descending(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "lake"
    assert run(capsys, "lake", "create", root)[0] == 0
    assert run(capsys, "lake", "create-pool", root, "p")[0] == 0
    out = run(capsys, "lake", "ls", root)[1]
    assert out.strip().endswith("key ts order desc")


def test_create_errors_have_their_exit_codes(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "lake"
    code, _, err = run(capsys, "lake", "create-pool", root, "p")
    assert code == 3 and "not a Zed lake" in err  # no lake there yet
    assert run(capsys, "lake", "create", root)[0] == 0
    code, _, err = run(capsys, "lake", "create", root)
    assert code == 1 and "a lake already exists here" in err and "lake.zng" in err
    assert run(capsys, "lake", "create-pool", root, "p", "--order", "k:asc")[0] == 0
    code, _, err = run(capsys, "lake", "create-pool", root, "p")
    assert code == 1 and "pool 'p' already exists" in err
    for bad in ("k:up", ":asc", "k:"):
        code, _, err = run(capsys, "lake", "create-pool", root, "q", "--order", bad)
        assert code == 2 and "--order takes KEY, KEY:asc or KEY:desc" in err, (bad, err)
    code, _, err = run(capsys, "lake", "create-pool", root, "q", "--seek-stride", "0")
    assert code == 2 and "--seek-stride" in err
    code, _, err = run(capsys, "lake", "create-pool", root, "a@b")
    assert code == 1 and "cannot name a pool" in err
    assert len(err.strip().splitlines()) == 1


def _load_real_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "lake"
    assert run(capsys, "lake", "create", root)[0] == 0
    assert run(capsys, "lake", "create-pool", root, "all", "--order", "ts:asc")[0] == 0
    code, _, err = run(capsys, "lake", "load", root, "--pool", "all",
                       REAL / "zed1.7-all.zng", "-m", "a real Zed file")
    assert code == 0, err
    return root


def test_a_real_zed_file_loads_into_a_lake_made_by_the_cli(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    root = _load_real_file(tmp_path, capsys)
    values = bsup.read_values((REAL / "zed1.7-all.zng").read_bytes(), typed=False)
    records = [v.value for v in values if isinstance(v.value, dict)]
    code, out, err = run(capsys, "lake", "scan", root, "--pool", "all", "-c", "ts,s")
    assert code == 0, err
    got = [json.loads(x) for x in out.splitlines()]
    assert len(got) == len(values)
    # every record's string comes back, and the keys come in ascending order, nulls last
    assert sorted(str(r["s"]) for r in got if r["s"] is not None) == sorted(
        str(r["s"]) for r in records if r.get("s") is not None)
    ts = [r["ts"] for r in got]
    present = [t for t in ts if t is not None]
    assert present == sorted(present) and len(present) == sum(
        1 for r in records if r.get("ts") is not None)
    assert ts[len(present):] == [None] * (len(ts) - len(present))


def test_real_zed_reads_a_lake_made_by_the_cli(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    zed = realtools.require(realtools.ZED_1_7, "zed")
    root = _load_real_file(tmp_path, capsys)
    home = tmp_path / "home"
    home.mkdir()
    env_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # zed keeps its config there
    try:
        listed = realtools.run(zed, "-lake", str(root), "ls").decode()
        printed = realtools.run(zed, "-lake", str(root), "query", "-j", "from all").decode()
        log = realtools.run(zed, "-lake", str(root), "log", "-use", "all").decode()
    finally:
        if env_home is not None:
            os.environ["HOME"] = env_home
    assert listed.split()[0] == "all" and "key ts order asc" in listed
    want = (REAL / "zed1.7-all.json").read_text().splitlines()
    assert sorted(printed.splitlines()) == sorted(want)
    assert "a real Zed file" in log
