"""What a fresh process pays for: imports only what the URL needs, requests only to the store.

Issue 13 (cold one-shot processes): ``import csup_async`` and a local scan
import no networking or cloud library; an S3 scan with keys in the
environment imports no botocore and connects to nothing but the endpoint
(no credential-chain lookups, the instance metadata service above all);
the CLI builds its parser without numpy or the lake machinery.  Each
check runs in a fresh interpreter, as users meet it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import csup_async
from tests.support.servers import MotoS3, RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROOT = Path(__file__).resolve().parents[1]
NETWORK = ("aiohttp", "yarl", "multidict", "botocore", "aiobotocore", "urllib3", "boto3")


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run ``script`` in a fresh interpreter; what it prints last, as JSON."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**base, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _loaded(prefixes: tuple[str, ...]) -> str:
    return (f"sorted({{m.split('.')[0] for m in sys.modules}} & set({list(prefixes)!r}))")


def _table(n: int) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, [{"id": i, "name": f"n{i % 7}"} for i in range(n)])
    return out.getvalue()


def test_import_alone_loads_nothing_heavy() -> None:
    got = _run(f"""
        import json, sys
        import csup_async
        print(json.dumps({_loaded(("numpy", "planner", "pyarrow", *NETWORK))}))
        """)
    assert got == []


def test_a_local_scan_imports_no_network_or_arrow_library(tmp_path: Path) -> None:
    path = tmp_path / "t.csup"
    path.write_bytes(_table(1000))
    got = _run(f"""
        import asyncio, json, sys
        import csup_async

        async def main():
            async with csup_async.open(sys.argv[1]) as r:
                assert (await r.scan(["id"])).column("id").to_pylist() == list(range(1000))

        asyncio.run(main())
        print(json.dumps({_loaded(("pyarrow", "hypothesis", "fsspec", *NETWORK))}))
        """, str(path))
    assert got == []


def test_an_s3_scan_with_environment_keys_asks_only_the_endpoint(moto_s3: MotoS3) -> None:
    """Keys and region in the environment: the signed requests need nothing of botocore
    (the store signs them itself), and every connection the process opens goes to
    the endpoint (no credential chain: an instance metadata lookup would show as a
    connection to the address named here, a loopback port)."""
    key = moto_s3.put("cold/env.csup", _table(3000))
    env = {"AWS_ACCESS_KEY_ID": moto_s3.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": moto_s3.SECRET_KEY,
           "AWS_DEFAULT_REGION": moto_s3.REGION, "AWS_ENDPOINT_URL": moto_s3.endpoint,
           "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:9/"}
    got = _run("""
        import asyncio, json, sys

        connects = []

        def audit(event, args):
            if event == "socket.connect":
                connects.append(list(args[1][:2]))

        sys.addaudithook(audit)
        import csup_async

        async def main():
            async with csup_async.open(sys.argv[1]) as r:
                got = await r.scan(["id", "name"])
                assert got.column("id").to_pylist() == list(range(3000))

        asyncio.run(main())
        chain = ("aiobotocore", "boto3", "botocore", "urllib3", "dateutil")
        print(json.dumps({"modules": sorted(m for m in chain if m in sys.modules),
                          "connects": connects}))
        """, f"s3://{key}", env=env)
    host, port = moto_s3.endpoint.removeprefix("http://").rsplit(":", 1)
    assert got["modules"] == []
    assert got["connects"] and all(c == [host, int(port)] for c in got["connects"]), got


def test_the_cli_starts_without_numpy_or_the_lake() -> None:
    got = _run(f"""
        import json, sys
        from csup_async.cli import build_parser
        build_parser().parse_args(["scan", "x.csup", "-c", "a"])
        print(json.dumps({_loaded(("numpy", "pyarrow", "rich", *NETWORK))}
                         + sorted(m for m in sys.modules if m.startswith("csup_async.lake."))))
        """)
    assert got == []


# A meta path finder that holds the execution of the reader module (numpy, the planner
# and the read pipeline come with it) until the process has opened a connection (or 20 s
# have passed): it says whether the first request went out while the decoding side was
# still being imported.  (It waits in the loader: finders run under the global import lock.)
_HOLD_DECODING = """
import sys, threading
from importlib.machinery import PathFinder

connected = threading.Event()
held = []

def audit(event, args):
    if event == "socket.connect":
        connected.set()

sys.addaudithook(audit)

class HeldLoader:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        held.append(connected.wait(20))
        self.loader.exec_module(module)

class Hold:
    def find_spec(self, name, path=None, target=None):
        if name != "csup_async.readers.reader" or held:
            return None
        spec = PathFinder.find_spec(name, path, target)
        spec.loader = HeldLoader(spec.loader)
        return spec

sys.meta_path.insert(0, Hold())
"""


def test_a_cold_open_sends_the_tail_request_while_the_decoders_import(
        range_server: RangeServer) -> None:
    """In a fresh process the tail request goes out before the read pipeline has finished
    importing (it is imported in a worker thread meanwhile), and the reads are the same
    as a warm process makes: one tail request, then the data."""
    range_server.put("cold/t.csup", _table(5000))
    got = _run(_HOLD_DECODING + """
import asyncio, json
import csup_async

async def main():
    counts = []
    for _ in range(2):  # cold, then warm
        async with csup_async.open(sys.argv[1]) as r:
            res = await r.scan(["id", "name"])
            assert res.column("id").to_pylist() == list(range(5000))
            counts.append([r.open_stats.requests, res.stats.requests])
    return counts

counts = asyncio.run(main())
print(json.dumps({"held": held, "counts": counts}))
""", range_server.url("cold/t.csup"))
    assert got["held"] == [True], "the decoders were imported before the first request"
    assert got["counts"][0] == got["counts"][1] and got["counts"][0][0] == 1
    tails = [s for s in range_server.seen("cold/t.csup")
             if s.headers.get("Range", "").startswith("bytes=-")]
    assert len(tails) == 2  # one tail read per open, cold or warm


def test_a_cold_open_that_fails_or_is_cancelled_leaves_nothing_behind(
        range_server: RangeServer) -> None:
    """An open cancelled while its early tail read is in flight and the reader is still
    importing leaves no task, connection or warning, and the import goes on for the next
    open; a missing object gives NotFoundError."""
    range_server.put("cold/ok.csup", _table(100))
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", _HOLD_DECODING + """
import asyncio
import csup_async

async def main():
    task = asyncio.ensure_future(csup_async.open(sys.argv[1]).__aenter__())
    await asyncio.to_thread(connected.wait, 20)  # the tail request is out
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled", "csup_async.readers.reader" in sys.modules and
              not hasattr(sys.modules["csup_async.readers.reader"], "Reader"))
    try:
        async with csup_async.open(sys.argv[1] + ".missing"):
            raise AssertionError("opened a missing object")
    except csup_async.NotFoundError as e:
        print("missing:", type(e).__name__)
    async with csup_async.open(sys.argv[1]) as r:
        print("rows:", len(await r.scan(["id"])))
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    print("tasks left:", len(left))

asyncio.run(main())
""", range_server.url("cold/ok.csup")], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:4] == ["cancelled True", "missing: NotFoundError",
                                           "rows: 100", "tasks left: 0"], proc.stdout
    for bad in ("Unclosed", "was destroyed", "never awaited", "Traceback", "Exception"):
        assert bad not in proc.stderr, proc.stderr
