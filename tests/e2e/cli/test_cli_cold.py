"""A cold ``csup-async`` process loads only what its command needs.

Start-up is most of a one-shot command's time: every module the first request
does not need is paid for on every invocation (bench/bench_cold.py measures it).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import csup_async

ROOT = Path(__file__).resolve().parents[3]

# Runs the CLI's main in a fresh interpreter; on stderr, its exit code and which of
# the modules asked about (the last argument) were imported.
PROBE = """
import json, sys
from csup_async.cli import main
code = main(sys.argv[1:-1])
sys.stdout.flush()
print(json.dumps({"code": code,
                  "loaded": [m for m in sys.argv[-1].split(",") if m in sys.modules]}),
      file=sys.stderr)
"""


def _cli(args: list[str], modules: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, *args, ",".join(modules)],
                       capture_output=True, text=True, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stderr
    return {**json.loads(r.stderr.splitlines()[-1]), "out": r.stdout}


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory) -> Path:
    """Columns of the kinds the text output converts, with nulls, NaN, infinities and
    strings that CSV must quote."""
    path = tmp_path_factory.mktemp("cold") / "kinds.csup"
    t0 = dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=dt.UTC)
    rows = [
        {"i": 1, "f": 1.0, "s": 'a "q", b', "t": t0, "d": dt.timedelta(seconds=3),
         "b": b"\x00\xff", "l": [1, 2], "r": {"x": "y"}, "u": 1},
        {"i": None, "f": float("nan"), "s": "", "t": None, "d": None, "b": None,
         "l": [], "r": None, "u": "one"},
        {"i": -7, "f": float("inf"), "s": None, "t": t0, "d": dt.timedelta(0),
         "b": b"", "l": None, "r": {"x": None}, "u": None},
        {"i": 2**40, "f": -np.inf, "s": " pad ", "t": t0, "d": dt.timedelta(days=1),
         "b": b"z", "l": [3], "r": {"x": "\n"}, "u": 2.5},
    ]
    csup_async.write(str(path), rows)
    return path


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_text_output_does_not_import_pandas(every_kind, fmt):
    """pyarrow's ``array``/``scalar`` import pandas on first use when it is installed
    (a third of a second of a cold command); the output is built without them."""
    pytest.importorskip("pandas")
    got = _cli(["scan", str(every_kind), "--format", fmt], ["pyarrow", "pandas"])
    assert got["code"] == 0
    assert got["loaded"] == ["pyarrow"]  # the output is Arrow's kernels...
    lines = got["out"].splitlines()
    assert len(lines) == 4 + (fmt == "csv")  # ...and all the rows came out
    if fmt == "json":
        rows = [json.loads(x) for x in lines]
        assert [r["i"] for r in rows] == [1, None, -7, 2**40]
        assert [r["f"] for r in rows] == [1.0, "NaN", "+Inf", "-Inf"]
        assert [r["s"] for r in rows] == ['a "q", b', "", None, " pad "]
        assert [r["b"] for r in rows] == ["0x00ff", None, "0x", "0x7a"]
        assert [r["l"] for r in rows] == [[1, 2], [], None, [3]]
        assert [r["u"] for r in rows] == [1, "one", None, 2.5]
        assert rows[0]["t"] == "2024-01-02T03:04:05.123Z"
        assert [r["d"] for r in rows] == [3_000_000_000, None, 0, 86_400_000_000_000]
    else:
        assert lines[0] == "i,f,s,t,d,b,l,r,u"
        assert lines[1].startswith('1,1.0,"a ""q"", b",')


def test_a_local_scan_does_not_import_the_network_side(every_kind):
    """A local file needs neither aiohttp nor the S3 signer."""
    got = _cli(["scan", str(every_kind), "-c", "i", "--format", "csv"],
               ["aiohttp", "botocore", "aiobotocore", "pandas"])
    assert got["code"] == 0 and got["loaded"] == []
