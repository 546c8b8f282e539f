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

import csup_async
from tests.servers import MotoS3

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
    """Keys and region in the environment: the signed requests need nothing of botocore,
    and every connection the process opens goes to the endpoint (an instance metadata
    lookup would show as a connection to the address named here, a loopback port)."""
    key = moto_s3.put("cold/env.csup", _table(3000))
    env = {"AWS_ACCESS_KEY_ID": moto_s3.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": moto_s3.SECRET_KEY,
           "AWS_DEFAULT_REGION": moto_s3.REGION, "AWS_ENDPOINT_URL": moto_s3.endpoint,
           "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:9/"}
    got = _run(f"""
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
        print(json.dumps({{"modules": {_loaded(("botocore", "aiobotocore", "boto3"))},
                          "connects": connects}}))
        """, f"s3://{key}", env=env)
    host, port = moto_s3.endpoint.removeprefix("http://").rsplit(":", 1)
    assert got["modules"] == []
    assert got["connects"] and all(c == [host, int(port)] for c in got["connects"]), got


def test_the_cli_starts_without_numpy_or_the_lake() -> None:
    got = _run(f"""
        import json, sys
        from csup_async.cli import _parser
        _parser().parse_args(["scan", "x.csup", "-c", "a"])
        print(json.dumps({_loaded(("numpy", "pyarrow", "rich", *NETWORK))}
                         + sorted(m for m in sys.modules if m.startswith("csup_async.lake.")
                                  and m != "csup_async.lake.cli")))
        """)
    assert got == []
