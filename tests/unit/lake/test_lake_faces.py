"""The lake package is a source: its CLI and Spark faces live in ``cli/`` and ``spark/``.

``csup_async.lake`` imports neither ``csup_async.cli`` nor ``csup_async.spark`` (and
so neither pyspark nor argparse plumbing), so the faces depend on the lake and never
the other way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import csup_async

LAKE = Path(csup_async.__file__).parent / "lake"


def _imports(path: Path) -> set[str]:
    """Modules a file of the lake package imports, resolved to absolute names."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ["csup_async", "lake"][: max(0, 2 - node.level + 1)] if node.level else []
            mod = ".".join([*base, node.module] if node.module else base)
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def test_the_lake_package_imports_no_face() -> None:
    files = sorted(LAKE.glob("*.py"))
    assert files
    bad = {f.name: sorted(m for m in _imports(f)
                          if m.split(".")[:2] in (["csup_async", "cli"], ["csup_async", "spark"])
                          or m.split(".")[0] == "pyspark")
           for f in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_faces_are_where_the_cli_and_spark_find_them() -> None:
    from csup_async.cli.lake import add_parser, run

    pytest.importorskip("pyspark")
    from csup_async.spark.lake import LakeReader, lake_schema

    assert callable(add_parser) and callable(run) and callable(lake_schema)
    assert LakeReader.__module__ == "csup_async.spark.lake"
    assert not (LAKE / "cli.py").exists() and not (LAKE / "spark.py").exists()
