"""Files the Spark source writes get the mode ``write`` and ``convert`` give (0666 less
the umask), not the 0600 of the temporary file they are built in."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable():
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

import pyarrow as pa

import csup_async
from csup_async.spark.options import parse_options
from csup_async.spark.write import CsupWriter


def test_committed_files_have_the_writers_mode(tmp_path: Path) -> None:
    plain = tmp_path / "plain.csup"
    csup_async.write(str(plain), [{"i": 1}])
    want = stat.S_IMODE(plain.stat().st_mode)
    assert want == 0o666 & ~_umask()
    dest = str(tmp_path / "out")
    w = CsupWriter(dest, parse_options({"path": dest}, write=True), overwrite=False)
    batch = pa.table({"i": pa.array([1, 2], pa.int64())}).to_batches()
    m = w.write_task(batch, 0, 0)
    w.commit([m])
    written = Path(w.final_name(0))
    assert stat.S_IMODE(written.stat().st_mode) == want


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
