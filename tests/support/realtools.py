"""The real Zed and SuperDB binaries, used by the tests as oracles.

A test that compares this library with the program that defines the format asks
:func:`require` for a binary; it gets a path, or the test skips with one line that
says why.  Binaries are looked for, in order:

1. in ``$CSUP_ASYNC_REAL_TOOLS/<project>-<version>/<command>`` (a folder of binaries
   built some other way, e.g. on a developer's machine);
2. in the cache folder ``$CSUP_ASYNC_TOOLS_CACHE`` (default
   ``~/.cache/csup-async/tools``), laid out the same way;
3. by ``go install <module>/cmd/<command>@<version>`` into that cache, once per
   process and tool, when ``go`` is on the PATH.  A refusal (the module proxy may not
   serve a version) is remembered for the process and becomes the skip reason.

Nothing of the tools' code is kept in the repository: only what they print and the
files they write, under ``tests/data/real/`` (see its README), which the tests that
run without the binaries compare against.

``python -m tests.support.realtools`` builds (or finds) every tool and prints how long
each took, for CI's log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tool:
    project: str  # the folder name: zed or super
    module: str   # the Go module that holds cmd/<command>
    version: str


ZED_1_7 = Tool("zed", "github.com/brimdata/zed", "v1.7.0")
ZED_1_12 = Tool("zed", "github.com/brimdata/zed", "v1.12.0")
SUPER_0_2 = Tool("super", "github.com/brimdata/super", "v0.2.0")
SUPER_0_3 = Tool("super", "github.com/brimdata/super", "v0.3.0")

#: Which commands each tool has.
COMMANDS = {ZED_1_7: ("zed", "zq"), ZED_1_12: ("zed", "zq"), SUPER_0_2: ("super",),
            SUPER_0_3: ("super",)}

_refused: dict[tuple[Tool, str], str] = {}


def cache_dir() -> Path:
    return Path(os.environ.get("CSUP_ASYNC_TOOLS_CACHE")
                or Path.home() / ".cache" / "csup-async" / "tools")


def _folder(root: Path, tool: Tool) -> Path:
    return root / f"{tool.project}-{tool.version}"


def find(tool: Tool, command: str) -> Path | None:
    """The binary if it is already built somewhere we look; never builds."""
    roots = [Path(p) for p in (os.environ.get("CSUP_ASYNC_REAL_TOOLS"),) if p]
    for root in [*roots, cache_dir()]:
        path = _folder(root, tool) / command
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def build(tool: Tool, command: str, timeout: float = 900) -> Path | str:
    """The binary's path, building it with ``go install`` if need be, or why not."""
    found = find(tool, command)
    if found is not None:
        return found
    key = (tool, command)
    if key in _refused:
        return _refused[key]
    go = shutil.which("go")
    if go is None:
        _refused[key] = "go is not installed, so the real tools cannot be built"
        return _refused[key]
    out = _folder(cache_dir(), tool)
    out.mkdir(parents=True, exist_ok=True)
    target = f"{tool.module}/cmd/{command}@{tool.version}"
    env = dict(os.environ, GOBIN=str(out), CGO_ENABLED="0")
    try:
        done = subprocess.run([go, "install", target], env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        _refused[key] = f"go install {target} took over {timeout:.0f} s"
        return _refused[key]
    path = out / command
    if done.returncode == 0 and path.is_file():
        return path
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    why = lines[-1].strip() if lines else f"exit {done.returncode}"
    _refused[key] = f"go install {target} failed: {why}"
    return _refused[key]


def require(tool: Tool, command: str) -> Path:
    """The binary, or skip the calling test with the reason."""
    import pytest

    got = build(tool, command)
    if isinstance(got, str):
        pytest.skip(f"real {command} {tool.version} not available: {got}")
    return got


def run(binary: Path, *args: str, input: bytes | None = None, cwd: Path | None = None,
        timeout: float = 120) -> bytes:
    """Run a real tool; its stderr goes into the error when it fails."""
    done = subprocess.run([str(binary), *args], input=input, capture_output=True, cwd=cwd,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{binary.name} {' '.join(args)} exited {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def main() -> int:
    for tool, commands in COMMANDS.items():
        for command in commands:
            start = time.perf_counter()
            got = build(tool, command)
            took = time.perf_counter() - start
            what = got if isinstance(got, str) else f"ready at {got}"
            print(f"{command} {tool.version}: {what} ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
