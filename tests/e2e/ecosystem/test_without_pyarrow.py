"""polars and DuckDB read results and batch streams by capsule, with pyarrow blocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import csup_async
from tests.support.paths import ROOT

pytest.importorskip("polars")
pytest.importorskip("duckdb")


def _run(code: str, *args: str) -> str:
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], text=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       timeout=180)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_polars_and_duckdb_without_pyarrow(tmp_path: Path) -> None:
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [{"id": i, "name": f"n{i}", "tags": ["a"] * (i % 3)}
                            for i in range(10_000)])
    out = _run("""
        import sys
        sys.modules["pyarrow"] = None  # any import of pyarrow now fails
        import duckdb, polars as pl, csup_async
        res = csup_async.read(sys.argv[1], ["id", "name", "tags"])
        df = pl.DataFrame(res)
        print(df.shape, df["tags"].list.len().sum(), df.schema["tags"])
        print(duckdb.sql("select count(*), sum(id) from res where name like 'n1%'").fetchall())
        with csup_async.open_sync(sys.argv[1]) as r:
            batches = r.iter_batches(["id"], batch_rows=1000)
            print(duckdb.sql("select max(id), count(*) from batches").fetchall())
            print(pl.DataFrame(r.iter_batches(["name"], batch_rows=3000)).height)
        print(res.to_polars().equals(df))
        print("pyarrow" in sys.modules and sys.modules["pyarrow"] is not None)
        """, path)
    want_like = sum(i for i in range(10_000) if str(i).startswith("1"))
    assert out.splitlines() == [
        f"(10000, 3) {sum(i % 3 for i in range(10_000))} List(String)",
        f"[({sum(str(i).startswith('1') for i in range(10_000))}, {want_like})]",
        "[(9999, 10000)]", "10000", "True", "False"]


def test_import_and_read_load_no_dataframe_library(tmp_path: Path) -> None:
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [{"id": 1}])
    out = _run("""
        import sys, csup_async
        csup_async.read(sys.argv[1])
        with csup_async.open_sync(sys.argv[1]) as r:
            r.scan()
        print(sorted(m for m in ("pyarrow", "polars", "duckdb", "pandas", "nanoarrow",
                                 "arro3") if m in sys.modules))
        """, path)
    assert out.strip() == "[]"
