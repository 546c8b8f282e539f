"""The CA certificates are read when a TLS connection needs them, not when aiohttp loads.

Each of aiohttp's two default SSL contexts reads the system CA bundle at import;
a process that reads ``http://`` or local files never needs them, and one that
reads ``https://`` must still verify against exactly the same certificates.
Every check runs in a fresh interpreter: this one imported aiohttp long ago.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web

import csup_async
from bench.net import LoopThread

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


trustme = pytest.importorskip("trustme")

ROOT = Path(__file__).resolve().parents[3]
HOST = "127.0.0.1"

# Opens argv[1] (verify_ssl from argv[2]) and prints how many of aiohttp's contexts
# still wait for their certificates before and after, and the rows or the error.
PROBE = """
import asyncio, json, sys
import csup_async
from csup_async.stores.http import HTTPStore
from csup_async.stores.tls import certificates_pending

async def main():
    before = certificates_pending()
    store = HTTPStore(verify_ssl=sys.argv[2] == "1")
    try:
        async with csup_async.open(sys.argv[1], store=store) as r:
            got = {"rows": len(await r.scan())}
    except csup_async.CsupError as e:
        got = {"error": type(e).__name__, "message": str(e)}
    finally:
        await store.close()
    print(json.dumps({"before": before, "after": certificates_pending(), **got}))

asyncio.run(main())
"""


def _probe(url: str, *, verify: bool = True, cafile: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    if cafile is not None:  # what the default contexts load (OpenSSL's default paths)
        env["SSL_CERT_FILE"] = cafile
        env["SSL_CERT_DIR"] = str(Path(cafile).parent / "no-such-dir")
    r = subprocess.run([sys.executable, "-c", PROBE, url, "1" if verify else "0"],
                       capture_output=True, text=True, cwd=ROOT, env=env, check=False,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One CSUP file served over plain HTTP and over TLS (a certificate of a test CA)."""
    root = tmp_path_factory.mktemp("tls")
    csup_async.write(str(root / "f.csup"), [{"a": i, "s": str(i)} for i in range(100)])
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST).configure_cert(server_ctx)
    loop = LoopThread("tls-server")
    loop.start()

    async def boot() -> tuple[web.AppRunner, int, int]:
        app = web.Application()
        app.router.add_static("/", root)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        plain, tls = web.TCPSite(runner, HOST, 0), web.TCPSite(runner, HOST, 0,
                                                             ssl_context=server_ctx)
        await plain.start()
        await tls.start()
        ports = [s._server.sockets[0].getsockname()[1] for s in (plain, tls)]  # type: ignore[union-attr]
        return runner, ports[0], ports[1]

    runner, http_port, https_port = loop.run(boot())
    yield {"http": f"http://{HOST}:{http_port}/f.csup",
           "https": f"https://{HOST}:{https_port}/f.csup", "ca": str(root / "ca.pem")}
    loop.run(runner.cleanup())
    loop.stop()


def test_plain_http_reads_no_certificates(servers):
    got = _probe(servers["http"])
    assert got == {"before": 2, "after": 2, "rows": 100}


def test_https_loads_the_default_certificates_on_its_first_connection(servers):
    got = _probe(servers["https"], cafile=servers["ca"])
    assert got == {"before": 2, "after": 1, "rows": 100}  # the verified context loaded


def test_https_still_refuses_a_certificate_the_defaults_do_not_trust(servers):
    got = _probe(servers["https"], cafile=str(Path(servers["ca"]).with_name("none.pem")))
    assert got["error"] == "StoreError" and "certificate" in got["message"].lower()
    assert "rows" not in got


def test_verify_ssl_false_needs_no_certificates(servers):
    got = _probe(servers["https"], verify=False)
    assert got["rows"] == 100 and got["after"] == 2
