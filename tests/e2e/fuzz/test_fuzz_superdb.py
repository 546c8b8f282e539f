"""Real SuperDB CSUP files with one byte changed (issue #39 item 10).

The files ``super`` wrote (tests/data/real/super/*.csup) are changed one byte at a
time and read every way a user reads them (``read_rows``, ``scan``, ``iter_batches``,
``to_arrow``) in a child process whose address space is capped at 1 GiB (RLIMIT_AS):
only values or a ``CsupError`` may come out, never a ``MemoryError`` (a run length
trusted before it was checked against its segment allocated what it claimed), another
exception or a hang (each case has 30 s).

Size: 25 random changes per file per run, or ``CSUP_FUZZ_EXAMPLES``; the changes that
once allocated gigabytes always.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT

FILES = sorted((DATA / "real" / "super").glob("*.csup"))
EXAMPLES = int(os.environ.get("CSUP_FUZZ_EXAMPLES") or 25)
LIMIT = 1 << 30
#: (file, byte offset, new value) that allocated a list of a damaged run length
KNOWN = [("fusion.csup", 1063, 0xFE), ("fusion.csup", 1115, 0x00),
         ("fusion.csup", 1063, 0x7F)]

CHILD = r"""
import asyncio, json, resource, signal, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, (__LIMIT__, __LIMIT__))
import csup_async
from csup_async import CsupError

class Hang(BaseException):
    pass

def alarm(*_):
    raise Hang()

signal.signal(signal.SIGALRM, alarm)

async def reads(path):
    async with csup_async.open(path) as r:
        await r.read_rows()
        await r.scan()
        async for _ in r.iter_batches():
            pass
        (await r.scan()).to_arrow()

bad = []
for case in json.loads(sys.stdin.read()):
    name, pos, value = case
    data = bytearray(open(__DIR__ + "/" + name, "rb").read())
    data[pos] = value
    path = __TMP__ + "/case.csup"
    open(path, "wb").write(data)
    signal.alarm(30)
    try:
        asyncio.run(reads(path))
    except CsupError:
        pass
    except BaseException as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        bad.append([name, pos, value, type(e).__name__, f"{where.filename}:{where.lineno}"])
    finally:
        signal.alarm(0)
print(json.dumps(bad))
"""


def _run(cases: list[tuple[str, int, int]], tmp: Path) -> list[list[object]]:
    code = (CHILD.replace("__LIMIT__", str(LIMIT))
            .replace("__DIR__", repr(str(DATA / "real" / "super")))
            .replace("__TMP__", repr(str(tmp))))
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is Linux's")
def test_a_damaged_run_length_allocates_nothing(tmp_path: Path) -> None:
    assert _run(KNOWN, tmp_path) == []


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is Linux's")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_one_changed_byte_gives_values_or_a_csup_error(tmp_path: Path, path: Path) -> None:
    size = path.stat().st_size
    rng = random.Random(f"{path.name}-{os.environ.get('CSUP_FUZZ_SEED', '')}")
    original = path.read_bytes()
    cases = []
    for _ in range(EXAMPLES):
        pos = rng.randrange(size)
        value = rng.choice([0x00, 0xFF, 0x7F, 0x80, original[pos] ^ (1 << rng.randrange(8)),
                            rng.randrange(256)])
        if value != original[pos]:
            cases.append((path.name, pos, value))
    assert _run(cases, tmp_path) == []
