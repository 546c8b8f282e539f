"""Datasets, globs, prefixes and the CLI read every format ``open()`` reads (issue #39,
item 1): this library's CSUP, Zed's VNG, SuperDB's header-layout CSUP and BSUP (ZNG).

A file with no column index (SuperDB, BSUP) is listed in a dataset plan's ``whole``
(its reader's own scan reads it); every verb gives the rows ``open()`` gives."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import main

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


REAL = Path(__file__).resolve().parents[2] / "data" / "real"
FORMATS = {
    "csup": None,  # written by this library (below)
    "vng": REAL / "zed1.12-all.vng",
    "superdb": REAL / "super" / "primitives.csup",
    "superdb-nested": REAL / "super" / "nulls.csup",
    "bsup": REAL / "zed1.12-all.zng",
}


def _file(kind: str, d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    if FORMATS[kind] is None:
        out = d / "ours.csup"
        csup_async.write(out, [{"a": i, "s": f"v{i}"} for i in range(10)])
        return out
    src = FORMATS[kind]
    out = d / f"{kind}{src.suffix}"  # type: ignore[union-attr]
    shutil.copy(src, out)  # type: ignore[arg-type]
    return out


def _alone(path: Path) -> Any:
    with csup_async.open_sync(str(path)) as r:
        return r.scan().to_arrow()


@pytest.mark.parametrize("kind", list(FORMATS))
def test_a_dataset_of_one_file_plans_and_reads_as_open_does(kind: str, tmp_path: Path) -> None:
    path = _file(kind, tmp_path)
    want = _alone(path)

    async def go() -> tuple[Any, Any, int]:
        async with csup_async.open_dataset(str(path)) as ds:
            plan = await ds.plan()
            return plan, await ds.to_arrow(), await ds.count_rows()

    plan, got, n = asyncio.run(go())
    assert got.equals(want) and n == want.num_rows
    planned = [f.name for f in plan.files] + [f.name for f in plan.whole]
    assert planned == [str(path)]
    assert str(path) in plan.explain()


@pytest.mark.parametrize("kind", list(FORMATS))
def test_a_glob_and_a_directory_read_every_format(kind: str, tmp_path: Path) -> None:
    d = tmp_path / "d"
    a = _file(kind, d)
    b = d / f"copy{a.suffix}"
    shutil.copy(a, b)
    one = _alone(a)
    for src in (str(d / f"*{a.suffix}"), str(d) + "/"):
        ds = csup_async.open_dataset_sync(src, match=f"*{a.suffix}")
        try:
            t = ds.scan().to_arrow()
            assert t.num_rows == 2 * one.num_rows
            assert t.slice(0, one.num_rows).equals(one.select(t.column_names))
            plan = ds.plan(t.column_names[:2])
            assert len(plan.files) + len(plan.whole) == 2
        finally:
            ds.close()


@pytest.mark.parametrize("kind", list(FORMATS))
def test_the_cli_scans_and_plans_a_glob_and_a_directory(kind: str, tmp_path: Path,
                                                        capsys: Any) -> None:
    d = tmp_path / "d"
    a = _file(kind, d)
    shutil.copy(a, d / f"copy{a.suffix}")
    n = _alone(a).num_rows
    assert main(["scan", str(d / f"*{a.suffix}")]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 * n and "Traceback" not in err
    assert main(["plan", str(d) + "/", "--match", f"*{a.suffix}"]) == 0
    out, err = capsys.readouterr()
    assert "copy" in out and "Traceback" not in err


def test_a_directory_of_every_format_reads_as_one(tmp_path: Path) -> None:
    """One dataset over all four formats: rows in file order, each file's as open gives."""
    d = tmp_path / "mixed"
    paths = sorted(_file(k, d) for k in FORMATS)
    ds = csup_async.open_dataset_sync(str(d) + "/", match="*")
    try:
        assert ds.count_rows() == sum(_alone(p).num_rows for p in paths)
        plan = ds.plan()
        assert {f.name for f in plan.files} | {f.name for f in plan.whole} == set(map(str, paths))
        assert len(plan.whole) == 1  # the BSUP stream: no plan but its reader's scan
        superdb = [f for f in plan.files if f.meta is None]  # planned by their readers
        assert len(superdb) == 2 and all(f.plan.request_count >= 0 for f in superdb)
        assert sum(len(t.files) for t in plan.tasks) == len(plan.files)
    finally:
        ds.close()
