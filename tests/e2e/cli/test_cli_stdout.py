"""When stdout fails the command says so in one line with a nonzero exit code; when the
reader of a pipe stops early (``| head -1``) the command exits quietly, as Unix tools
do (issue #39 item 15)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import csup_async
from csup_async.cli import EXIT_OTHER
from tests.support.paths import ROOT

COMMANDS = (["cat"], ["scan"], ["scan", "--format", "csv"], ["scan", "--format", "table"],
            ["inspect"], ["plan"])


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("stdout") / "rows.csup"
    csup_async.write(p, [{"a": i, "s": "x" * (i % 50)} for i in range(20_000)])
    return p


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _cmd(args: list[str], path: Path) -> list[str]:
    return [sys.executable, "-m", "csup_async.cli", args[0], str(path), *args[1:]]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_failing_stdout_is_one_line_and_a_nonzero_exit(data: Path, args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        r = subprocess.run(_cmd(args, data), stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120, env=_env())
    assert r.returncode == EXIT_OTHER, r.stderr
    assert r.stderr == "csup-async: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_stdout_is_one_line_and_a_nonzero_exit(data: Path, args: list[str]) -> None:
    r = subprocess.run(_cmd(args, data), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=120, env=_env(),
                       preexec_fn=lambda: os.close(1))
    assert r.returncode == EXIT_OTHER, r.stderr
    assert r.stderr.count("\n") == 1 and "standard output is closed" in r.stderr, r.stderr


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_reader_that_stops_early_ends_the_command_quietly(data: Path,
                                                            args: list[str]) -> None:
    """``csup-async cat x | head -1``: exit 0 and nothing on stderr."""
    proc = subprocess.Popen(_cmd(args, data), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` exits
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert first and err == b""
