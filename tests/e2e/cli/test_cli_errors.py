"""CLI errors in the CLI's words: flags (not Python keywords), the sub-command's usage,
and the documented exit codes for lakes too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.lake_builder import LakeBuilder, PoolInfo, rec
from csup_async.cli import EXIT_DATA, EXIT_NOT_FOUND, EXIT_USAGE, main
from csup_async.cli.messages import cli_message
from tests.support.paths import ROOT

ROW = rec(("ts", "int64"), ("msg", "string"))


def run(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as e:  # argparse's usage errors
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_missing_credentials_name_the_flag(moto_s3: Any, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(PYTHONPATH=str(ROOT), AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"))
    r = subprocess.run([sys.executable, "-m", "csup_async.cli", "inspect",
                        f"s3://{moto_s3.BUCKET}/absent.csup", "--endpoint-url",
                        moto_s3.endpoint, "--region", "us-east-1"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode != 0 and "credentials" in r.stderr, r.stderr
    assert "--anonymous" in r.stderr and "anonymous=True" not in r.stderr


def test_python_spellings_become_flags() -> None:
    assert cli_message("pass anonymous=True for public buckets (or region=)") == (
        "pass --anonymous for public buckets (or --region)")
    assert cli_message("concurrency=5 is too many") == "concurrency=5 is too many"


@pytest.mark.parametrize(("args", "usage"), [
    (["scan", "x.csup", "-c", " "], "usage: csup-async scan "),
    (["plan", "x.csup", "--where", "a >"], "usage: csup-async plan "),
    (["scan", "x.csup", "--bogus"], "usage: csup-async scan "),
    (["lake", "scan", "/nowhere", "--pool", "p", "--limit", "-1"],
     "usage: csup-async lake scan "),
    (["lake", "load", "/nowhere", "--pool", "p", "in.ndjson", "--at", "3"],
     "usage: csup-async lake load "),
])
def test_usage_errors_show_the_sub_commands_usage(args: list[str], usage: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(args, capsys)
    assert code == EXIT_USAGE and err.startswith(usage), err


@pytest.fixture
def lake(tmp_path: Path) -> tuple[LakeBuilder, PoolInfo]:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", stride=16)
    b.load(p, "main", [{"ts": i, "msg": f"a{i}"} for i in range(10)], ROW)
    return b, p


def test_lake_errors_exit_with_the_documented_codes(lake: Any, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    b, p = lake
    for args in (["ls", tmp_path / "nolake"], ["ls", b.root, "--pool", "nope"],
                 ["ls", b.root, "--pool", "logs@nobranch"],
                 ["scan", b.root, "--pool", "logs", "--at", "99"]):
        code, _, err = run(["lake", *args], capsys)
        assert code == EXIT_NOT_FOUND and len(err.splitlines()) == 1, (args, err)
    (b.root / p.dir / "branches" / "2.zng").write_bytes(b"\x00torn")
    code, _, err = run(["lake", "ls", b.root, "--pool", "logs"], capsys)
    assert code == EXIT_DATA and "2.zng" in err and len(err.splitlines()) == 1
