"""Every Python example in the README runs, and the Quick start is what CI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, re.S)


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_readme_python_example_runs(index, tmp_path):
    code = _python_blocks()[index]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def test_quick_start_has_two_commands_and_ci_runs_the_second():
    m = re.search(r"^## Quick start.*?```[^\n]*\n(.*?)```", README, re.S | re.M)
    assert m
    cmds = [c for c in m.group(1).splitlines() if c.strip()]
    assert len(cmds) == 2
    assert cmds[1] in (ROOT / ".ci" / "run").read_text()


def test_demo_command(capsys):
    from csup_async.cli import main

    assert main(["demo", "--rows", "3000"]) == 0
    out = capsys.readouterr().out
    assert "scan plan" in out and "first rows:" in out and "requests" in out
    assert "3,000 rows" in out
