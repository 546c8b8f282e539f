"""How the real tools are found and built (tests/support/realtools.py), without Go or
the real snapshots: a small git repository stands in for a snapshot."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import realtools


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def test_export_writes_the_tree_and_skips_blobs_the_snapshot_lacks(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "cmd" / "tool").mkdir(parents=True)
    (work / "cmd" / "tool" / "main.go").write_text("package main\n")
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "big.json").write_text("[" + "1," * 1000 + "1]\n")
    os.symlink("run.sh", work / "link")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "x")
    bare = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    _git(bare, "repack", "-a", "-d", "-q")
    big = _git(bare, "rev-parse", "HEAD:big.json")
    # a snapshot without its largest blob: unpack all but that one, drop the pack
    for pack in (bare / "objects" / "pack").glob("*.pack"):
        data = pack.read_bytes()
        for f in pack.parent.glob(pack.stem + ".*"):
            f.unlink()
        subprocess.run(["git", "-C", str(bare), "unpack-objects", "-q"], input=data, check=True)
    (bare / "objects" / big[:2] / big[2:]).unlink()
    out = tmp_path / "out"
    out.mkdir()
    assert realtools.export(bare, "HEAD", out) == 1
    assert (out / "cmd" / "tool" / "main.go").read_text() == "package main\n"
    assert os.access(out / "run.sh", os.X_OK)
    assert os.readlink(out / "link") == "run.sh"
    assert not (out / "big.json").exists()


def test_without_a_snapshot_an_untagged_tool_is_absent_at_once(tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("CSUP_ASYNC_TOOLS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CSUP_ASYNC_SNAPSHOTS", str(tmp_path / "none"))
    monkeypatch.delenv("CSUP_ASYNC_REAL_TOOLS", raising=False)
    monkeypatch.setattr(realtools, "_refused", {})
    got = realtools.build(realtools.SUPER_MAIN, "super")
    assert isinstance(got, str)
    assert "snapshot" in got or "go is not installed" in got
    assert realtools.find(realtools.SUPER_MAIN, "super") is None


def test_a_failed_build_is_remembered_for_its_commit(tmp_path: Path, monkeypatch) -> None:
    """A snapshot build that failed is not tried again for the same commit (minutes on
    a small machine); another commit is tried."""
    if subprocess.run(["git", "--version"], capture_output=True).returncode:
        pytest.skip("git is not installed")
    monkeypatch.setenv("CSUP_ASYNC_TOOLS_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "go.mod").write_text("module example.com/x\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "x")
    rev = _git(work, "rev-parse", "HEAD")
    tool = realtools.Tool("x", "example.com/x", "main", rev)
    folder = tmp_path / "cache" / "x-main"
    folder.mkdir(parents=True)
    (folder / "BUILD-FAILED.x").write_text(f"{rev}\nit failed before\n")
    got = realtools.build_from_snapshot(tool, "x", work, "/bin/false")
    assert got == "it failed before"
