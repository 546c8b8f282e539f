"""BSUP written by this library read by the real ``zq`` (skips without the binaries).

The values are those of zq's own files under ``tests/data/real/``: read by this
library, written back as BSUP (by the encoder and by ``csup-async convert``, also
through a CSUP file), then printed by zq, whose JSON must equal its JSON of the
original file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from csup_async.format.bsup import encode_stream, read_values
from tests.support import realtools

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "data" / "real"

TOOLS = [(realtools.ZED_1_12, "zed1.12"), (realtools.ZED_1_7, "zed1.7")]


@pytest.mark.parametrize(("tool", "v"), TOOLS)
def test_zq_reads_bsup_encoded_here(tool: realtools.Tool, v: str, tmp_path: Path) -> None:
    zq = realtools.require(tool, "zq")
    values = read_values((REAL / f"{v}-all.zng").read_bytes())
    ours = tmp_path / "ours.bsup"
    ours.write_bytes(encode_stream([(x.type, x.value) for x in values]))
    assert realtools.run(zq, "-j", str(ours)) == (REAL / f"{v}-all.json").read_bytes()
    assert realtools.run(zq, "-z", str(ours)) == realtools.run(zq, "-z", str(REAL / f"{v}-all.zng"))


def _convert(src: Path, dst: Path) -> None:
    """``convert`` for zq: ``--target zed-1.12`` (BSUP version 0, VNG; the default target
    is super's, whose BSUP no zq reads)."""
    subprocess.run([sys.executable, "-m", "csup_async.cli", "convert", str(src), str(dst),
                    "--target", "zed-1.12"],
                   check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_zq_reads_bsup_from_the_cli_and_through_csup(tmp_path: Path) -> None:
    zq = realtools.require(realtools.ZED_1_12, "zq")
    direct = tmp_path / "direct.bsup"
    _convert(REAL / "zed1.12-all.zng", direct)
    want = (REAL / "zed1.12-all.json").read_bytes()
    assert realtools.run(zq, "-j", str(direct)) == want
    csup, back = tmp_path / "mid.csup", tmp_path / "back.bsup"
    _convert(REAL / "zed1.12-all.zng", csup)
    _convert(csup, back)
    assert realtools.run(zq, "-j", str(back)) == want


@pytest.mark.parametrize(("tool", "v"), TOOLS)
def test_zq_reads_bsup_converted_here_from_its_own_vng(tool: realtools.Tool, v: str,
                                                        tmp_path: Path) -> None:
    """zq's VNG, read by this library and written back as BSUP, prints as zq's JSON."""
    zq = realtools.require(tool, "zq")
    out = tmp_path / "from-vng.bsup"
    _convert(REAL / f"{v}-all.vng", out)
    assert realtools.run(zq, "-j", str(out)) == (REAL / f"{v}-all.json").read_bytes()
