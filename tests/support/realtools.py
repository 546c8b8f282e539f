"""The real Zed and SuperDB binaries, used by the tests as oracles.

A test that compares this library with the program that defines the format asks
:func:`require` for a binary; it gets a path, or the test skips with one line that
says why.  Binaries are looked for, in order:

1. in ``$CSUP_ASYNC_REAL_TOOLS/<project>-<version>/<command>`` (a folder of binaries
   built some other way, e.g. on a developer's machine);
2. in the cache folder ``$CSUP_ASYNC_TOOLS_CACHE`` (default
   ``~/.cache/csup-async/tools``), laid out the same way;
3. built from a local snapshot of the project's git repository (a bare clone under
   ``$CSUP_ASYNC_SNAPSHOTS/<owner>+<name>/repo``, default ``/work/.mirror``): the
   tool's commit is exported blob by blob (a snapshot may lack its largest blobs,
   which ``git archive`` cannot skip) and ``go build ./cmd/<command>`` writes the
   binary into the cache.  The Go module proxy refuses these two modules but serves
   their dependencies, which is why the sources come from a snapshot;
4. by ``go install <module>/cmd/<command>@<version>`` into that cache, when no
   snapshot is there and the version is a tag (should the proxy serve it some day).

A refusal is remembered for the process and becomes the skip reason; a failed
snapshot build is also remembered on disk (``<folder>/BUILD-FAILED``, naming the
commit), so a test run does not spend minutes on it again.  Only one process builds
at a time (a lock in the cache folder): a test that finds another process building
skips rather than starting a second build on a small machine.  Where there is no
snapshot and no ``go`` (CI), every tool is simply absent and its tests skip.

Nothing of the tools' code is kept in the repository: only what they print and the
files they write, under ``tests/data/real/`` (see its README), which the tests that
run without the binaries compare against.

``python -m tests.support.realtools`` builds (or finds) every tool and prints how long
each took, for CI's log.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tool:
    project: str  # the folder name: zed or super
    module: str   # the Go module that holds cmd/<command>
    version: str  # a tag, or a name such as "main" for an untagged commit
    commit: str | None = None  # the commit to build when ``version`` is not a tag

    @property
    def repo(self) -> str:
        """The GitHub owner/name of the module (``brimdata/super``)."""
        return self.module.removeprefix("github.com/")

    @property
    def rev(self) -> str:
        """What to export from the snapshot: the pinned commit, else the tag."""
        return self.commit or f"{self.version}^{{commit}}"


ZED_1_7 = Tool("zed", "github.com/brimdata/zed", "v1.7.0")
ZED_1_12 = Tool("zed", "github.com/brimdata/zed", "v1.12.0")
SUPER_0_2 = Tool("super", "github.com/brimdata/super", "v0.2.0")
SUPER_0_3 = Tool("super", "github.com/brimdata/super", "v0.3.0")
#: SuperDB's main branch as of August 2026 (writes CSUP version 23 and BSUP version 5).
SUPER_MAIN = Tool("super", "github.com/brimdata/super", "main",
                  "492eab8ede208c4d2f6b78cbc9cce2715a898814")

#: Which commands each tool has, in the order :func:`main` builds them (newest first:
#: the Go build cache is shared, so the later builds are faster).
COMMANDS = {SUPER_MAIN: ("super",), SUPER_0_3: ("super",), ZED_1_12: ("zed", "zq"),
            SUPER_0_2: ("super",), ZED_1_7: ("zed", "zq")}

_refused: dict[tuple[Tool, str], str] = {}


def cache_dir() -> Path:
    return Path(os.environ.get("CSUP_ASYNC_TOOLS_CACHE")
                or Path.home() / ".cache" / "csup-async" / "tools")


def snapshot(tool: Tool) -> Path | None:
    """The bare git snapshot of the tool's repository, if there is one here."""
    root = Path(os.environ.get("CSUP_ASYNC_SNAPSHOTS") or "/work/.mirror")
    path = root / tool.repo.replace("/", "+") / "repo"
    return path if (path / "objects").is_dir() or (path / "HEAD").is_file() else None


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


@contextmanager
def _build_lock() -> Iterator[bool]:
    """Whether this process may build now: one build at a time on the machine."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".build.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def export(repo: Path, rev: str, dest: Path) -> int:
    """Write the tree of ``rev`` in the bare ``repo`` into ``dest``; blobs missing.

    Reads every blob through one ``git cat-file --batch``; a blob the snapshot lacks
    (it keeps only the smaller ones of some repositories) is skipped: those are data
    files, never the Go sources a build needs.  Returns the number skipped.
    """
    listing = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", rev],
                             capture_output=True, check=True).stdout
    entries = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode.decode(), sha.decode(), path.decode()))
    missing = 0
    with subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat:
        assert cat.stdin is not None and cat.stdout is not None
        for mode, sha, path in entries:
            cat.stdin.write(sha.encode() + b"\n")
            cat.stdin.flush()
            header = cat.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":
                missing += 1
                continue
            data = cat.stdout.read(int(header[2]))
            cat.stdout.read(1)  # the newline after each object
            out = dest / path
            out.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                out.symlink_to(data.decode())
                continue
            out.write_bytes(data)
            if mode == "100755":
                out.chmod(0o755)
        cat.stdin.close()
    return missing


def _go_env(extra: dict[str, str]) -> dict[str, str]:
    # GOTOOLCHAIN=local keeps the installed Go (never downloads another one); no VCS
    # stamping (the export is not a git work tree)
    return {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false",
            "GOTOOLCHAIN": "local", **extra}


def build_from_snapshot(tool: Tool, command: str, repo: Path, go: str,
                        timeout: float = 1800) -> Path | str:
    """Export the tool's commit from the snapshot and ``go build`` the command."""
    out = _folder(cache_dir(), tool)
    out.mkdir(parents=True, exist_ok=True)
    failed = out / f"BUILD-FAILED.{command}"
    rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", tool.rev],
                         capture_output=True, text=True).stdout.strip()
    if not rev:
        return f"the snapshot {repo} has no {tool.rev}"
    if failed.is_file():
        said = failed.read_text().splitlines()
        if said and said[0] == rev:
            return " ".join(said[1:]) or f"building {command} from {rev[:12]} failed before"
    src = cache_dir() / "src" / f"{tool.project}-{tool.version}"
    marker = src / ".exported"
    if not (marker.is_file() and marker.read_text().strip() == rev):
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        export(repo, rev, src)
        marker.write_text(rev + "\n")
    path = out / command
    partial = out / f".{command}.building"
    try:
        done = subprocess.run([go, "build", "-o", str(partial), f"./cmd/{command}"], cwd=src,
                              env=_go_env({"GOFLAGS": "-mod=mod -buildvcs=false"}),
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"go build ./cmd/{command} of {tool.version} took over {timeout:.0f} s"
    if done.returncode == 0 and partial.is_file():
        partial.replace(path)  # whole or nothing: find() never sees half a binary
        return path
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    why = (f"go build ./cmd/{command} of {tool.version} ({rev[:12]}) failed: "
           + (lines[-1].strip() if lines else f"exit {done.returncode}"))
    failed.write_text(f"{rev}\n{why}\n")
    return why


def _go_install(tool: Tool, command: str, go: str, timeout: float) -> Path | str:
    out = _folder(cache_dir(), tool)
    out.mkdir(parents=True, exist_ok=True)
    target = f"{tool.module}/cmd/{command}@{tool.version}"
    try:
        done = subprocess.run([go, "install", target], env=_go_env({"GOBIN": str(out)}),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"go install {target} took over {timeout:.0f} s"
    path = out / command
    if done.returncode == 0 and path.is_file():
        return path
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    why = lines[-1].strip() if lines else f"exit {done.returncode}"
    return f"go install {target} failed: {why}"


def build(tool: Tool, command: str, timeout: float = 1800) -> Path | str:
    """The binary's path, building it if need be, or why not (see the module's doc)."""
    found = find(tool, command)
    if found is not None:
        return found
    key = (tool, command)
    if key in _refused:
        return _refused[key]
    go = shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go",) if os.access(p, os.X_OK)), None)
    repo = snapshot(tool)
    if go is None:
        got: Path | str = "go is not installed, so the real tools cannot be built"
    elif repo is None and tool.commit is not None:
        got = (f"no snapshot of {tool.repo} (CSUP_ASYNC_SNAPSHOTS) to build "
               f"{tool.commit[:12]} from")
    else:
        with _build_lock() as mine:
            found = find(tool, command)  # built by the process that held the lock
            if found is not None:
                return found
            if not mine:
                # not remembered: the other process may finish while this one runs
                return f"another process is building the real tools; {command} " \
                       f"{tool.version} is not ready yet"
            if repo is not None:
                got = build_from_snapshot(tool, command, repo, go, timeout)
            else:
                got = _go_install(tool, command, go, min(timeout, 300))
    if isinstance(got, str):
        _refused[key] = got
    return got


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


def main(argv: list[str] | None = None) -> int:
    """Build (or find) every tool; ``--ready FILE`` appends each binary's path to FILE."""
    args = sys.argv[1:] if argv is None else argv
    ready = Path(args[args.index("--ready") + 1]) if "--ready" in args else None
    for tool, commands in COMMANDS.items():
        for command in commands:
            start = time.perf_counter()
            got = build(tool, command)
            took = time.perf_counter() - start
            what = got if isinstance(got, str) else f"ready at {got}"
            print(f"{command} {tool.version}: {what} ({took:.1f} s)", flush=True)
            if ready is not None and not isinstance(got, str):
                with ready.open("a") as handle:
                    handle.write(f"{got}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
