"""The first read or write asks glibc to keep freed memory for the next scan, unless told
not to; importing ``csup_async`` or ``planner`` changes nothing in the process.

Each case runs in a fresh interpreter (the settings are made once per process).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PROBE = ("import json, os, sys, tempfile, csup_async\n"
         "from csup_async.model import heap\n"
         "assert not heap.kept(), 'import made the malloc settings'\n"
         "csup_async.write(os.path.join(tempfile.mkdtemp(), 't.csup'), [{'a': 1}])\n"
         "print(json.dumps(heap.kept()))\n")

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")


def _kept(**env: str) -> bool:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("MALLOC_", "GLIBC_TUNABLES", "CSUP_ASYNC_MALLOC"))}
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                       cwd=ROOT, env={**clean, **env}, check=True, timeout=60)
    return bool(json.loads(r.stdout))


@glibc
def test_the_first_write_keeps_freed_memory_on_glibc():
    assert _kept() is True


PURE = """
import sys, threading
import planner
assert "csup_async.model.heap" not in sys.modules, "import planner ran csup_async's setup"
import csup_async
from csup_async.model import heap
assert not heap.kept(), "import csup_async changed malloc's settings"
assert threading.active_count() == 1, "an import started a thread"
assert not [m for m in sys.modules if m.startswith(("csup_async.stores", "csup_async.scan",
                                                    "asyncio", "aiohttp"))], "heavy imports"
print("pure")
"""


def test_importing_runs_nothing_but_definitions():
    """``import planner`` (a Spark driver that only plans) and ``import csup_async`` set no
    malloc option, start no thread and load no store or event loop."""
    r = subprocess.run([sys.executable, "-c", PURE], capture_output=True, text=True,
                       cwd=ROOT, check=False, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "pure", r.stderr


@glibc
def test_csup_async_malloc_system_leaves_malloc_alone():
    assert _kept(CSUP_ASYNC_MALLOC="system") is False


@glibc
@pytest.mark.parametrize("setting", [{"MALLOC_ARENA_MAX": "4"},
                                     {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}])
def test_the_users_own_malloc_settings_win(setting):
    assert _kept(**setting) is False


def test_a_scan_after_the_settings_reads_the_same_rows(tmp_path):
    """The settings change where memory comes from, never what a scan returns."""
    import numpy as np

    import csup_async

    rng = np.random.default_rng(5)
    cols = {"a": rng.random(300_000), "b": rng.integers(-2**40, 2**40, 300_000)}
    path = tmp_path / "t.csup"
    csup_async.write(str(path), cols)
    reader = csup_async.open_sync(str(path))
    try:
        for _ in range(3):
            got = reader.scan().to_numpy()
            assert np.array_equal(got["a"], cols["a"])
            assert np.array_equal(got["b"], cols["b"])
    finally:
        reader.close()
