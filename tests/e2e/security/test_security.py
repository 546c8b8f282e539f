"""Security: secrets never shown, TLS verified by default, no shell or eval,
and a cap on everything a file can make the reader allocate.

Secrets are planted where users put them (a signed URL's query string, a
``user:password@`` in the URL, an ``Authorization`` header option, S3 keys,
a GCS token) and looked for, after successful and failed scans, in the
exception (``str``, ``repr``, the formatted traceback), in every log record
at DEBUG from every logger, in the reprs of the reader, store, result, stats
and plan, and in the CLI's stdout and stderr (run as a subprocess, with and
without ``--debug``).
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import datetime as dt
import io
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import csup_async
import planner as P
from csup_async import CsupError, LimitError, StoreError, cli
from csup_async.stores import GCSStore, HTTPStore, RetryPolicy, S3Store
from tests.support.paths import ROOT
from tests.support.servers import Fault, RangeServer

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


FAST = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.01, total_timeout=5)
SIG = "Sig0123456789abcdefSECRET"
CRED = "AKIAQUERYSECRET"
QUERY = (f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={CRED}%2F20260101%2Fus-east-1"
         f"%2Fs3%2Faws4_request&X-Amz-Signature={SIG}&token=tok-SECRET-42")
USERINFO = "alice:pw-SECRET-77"
HEADER = "Bearer hdr-SECRET-99"
S3_KEY_ID = "AKIDS3SECRETKEY"
S3_SECRET = "s3-secret-SECRET-55"
GCS_TOKEN = "ya29.gcs-SECRET-66"
# a small first read, so scans make requests of their own (and meet the faults)
SMALL_TAIL = dataclasses.replace(P.get_profile("http"), tail_min=1024, tail_max=1024)
SECRETS = [SIG, CRED, "tok-SECRET-42", "pw-SECRET-77", "hdr-SECRET-99", S3_SECRET,
           GCS_TOKEN, "SECRET"]


def _csup(rows: list[Any]) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, rows, target="csup-async")  # at import: before any fixture
    return out.getvalue()


DATA = _csup([{"id": i, "name": f"n{i}"} for i in range(500)])


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _assert_clean(where: str, text: str) -> None:
    found = _leaks(text)
    assert not found, f"{where} shows {found}: ...{text[:2000]}"


def _error_texts(e: BaseException) -> str:
    return "\n".join([str(e), repr(e), *traceback.format_exception(e)])


# ------------------------------------------------------------ scenarios ---
def _put(rs: RangeServer, data: bytes = DATA) -> str:
    name = f"bkt/{uuid.uuid4().hex[:10]}.csup"
    rs.put(name, data)
    return name


SCENARIOS = ["ok", "404", "403", "503-persistent", "reset", "corrupt", "replaced",
             "missing-column"]


async def _scenario(rs: RangeServer, kind: str, scenario: str) -> tuple[list[str], str]:
    """Run one scan (open, plan, scan, iter_batches) with secrets planted; return the
    texts it produced (reprs, explanations, error texts)."""
    name = _put(rs, DATA if scenario != "corrupt" else DATA[:-40] + bytes(40))
    if scenario == "404":
        name = name.replace(".csup", "-missing.csup")
    faults = {"403": [Fault.error(403)], "503-persistent": [Fault.error(503)] * 10,
              "reset": [Fault.reset(10)] * 10}.get(scenario, [])
    texts: list[str] = []
    opts: dict[str, Any] = {"retry": FAST, "profile": SMALL_TAIL}
    if kind == "http":  # a signed URL with user:password@ too
        host = rs.endpoint.replace("http://", f"http://{USERINFO}@")
        url = f"{host}/{name}{QUERY}"
    elif kind == "http-header":  # a signed URL and an Authorization header option
        url = f"{rs.endpoint}/{name}{QUERY}"
        opts["headers"] = {"Authorization": HEADER}
    elif kind == "s3":
        url = f"s3://{name}"
        opts.update(endpoint_url=rs.endpoint, region="us-east-1", access_key_id=S3_KEY_ID,
                    secret_access_key=S3_SECRET)
    else:
        url = f"gs://{name}"
        opts.update(endpoint=rs.endpoint, token=GCS_TOKEN)
    try:
        async with csup_async.open(url, **opts) as r:
            texts += [repr(r), repr(r.store), str(r.schema), repr(r.schema), str(r.path)]
            if scenario == "replaced":
                rs.inject(name, Fault.replace(DATA[::-1]))
            rs.inject(name, *faults)
            cols = ["nope"] if scenario == "missing-column" else None
            plan = await r.plan(cols)
            texts += [plan.explain(), repr(plan)]
            res = await r.scan(cols)
            texts += [repr(res), str(res.stats), repr(res.stats)]
            async for b in r.iter_batches(cols, batch_rows=100):
                texts.append(repr(b))
        assert scenario == "ok", f"{scenario} did not fail"
    except CsupError as e:
        assert scenario != "ok", e
        texts.append(_error_texts(e))
        return texts, type(e).__name__
    return texts, "ok"


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("kind", ["http", "http-header", "s3", "gcs"])
async def test_secrets_never_shown(range_server: RangeServer, caplog: pytest.LogCaptureFixture,
                                   kind: str, scenario: str) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, ours and the libraries'
    texts, outcome = await _scenario(range_server, kind, scenario)
    assert outcome != "ok" or scenario == "ok"
    for i, text in enumerate(texts):
        _assert_clean(f"{kind}/{scenario} text {i}", text)
    for rec in caplog.records:
        msg = rec.getMessage()
        if rec.name.startswith("botocore"):
            # botocore logs each signed request's Authorization header at DEBUG (the
            # access key ID and a signature; see test_botocore_debug_logs_hide_...):
            # the secret key itself must still never show
            assert S3_SECRET not in msg, f"{kind}/{scenario} log {rec.name}"
            continue
        _assert_clean(f"{kind}/{scenario} log {rec.name}", msg)
    if scenario == "503-persistent":  # the retries were logged, so logs were looked at
        assert any("retrying" in rec.getMessage() for rec in caplog.records)


async def test_botocore_debug_logs_hide_s3_credentials(range_server: RangeServer,
                                                       caplog: pytest.LogCaptureFixture
                                                       ) -> None:
    caplog.set_level(logging.DEBUG)
    await _scenario(range_server, "s3", "ok")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert S3_KEY_ID not in text and "Signature=" not in text


def test_store_reprs_hide_credentials() -> None:
    stores = [HTTPStore(headers={"Authorization": HEADER}),
              S3Store(access_key_id=S3_KEY_ID, secret_access_key=S3_SECRET,
                      endpoint_url=f"http://{USERINFO}@127.0.0.1:9{QUERY}"),
              GCSStore(token=GCS_TOKEN)]
    for s in stores:
        _assert_clean(type(s).__name__, repr(s) + str(s))
        assert S3_KEY_ID not in repr(s)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_"))}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "csup_async.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=_env())


def _cli_all(commands: list[list[str]]) -> list[tuple[list[str], int, str, str]]:
    """Run CLI commands side by side (start-up dominates): (command, code, out, err)."""
    procs = [(cmd, subprocess.Popen([sys.executable, "-m", "csup_async.cli", *cmd], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=_env())) for cmd in commands]
    out = []
    for cmd, p in procs:
        stdout, stderr = p.communicate(timeout=60)
        out.append((cmd, p.returncode, stdout, stderr))
    return out


def test_cli_never_prints_the_signed_url(range_server: RangeServer,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    """scan / inspect / plan of a signed URL with user:password@, succeeding and failing
    (404, corrupt, unknown column), with and without --debug's traceback.  The first
    two run as subprocesses (``python -m csup_async.cli``), the rest in-process through
    ``cli.main`` (the same code, without a second of start-up each)."""
    ok = _put(range_server)
    corrupt = _put(range_server, DATA[:-40] + bytes(40))
    host = range_server.endpoint.replace("http://", f"http://{USERINFO}@")

    def url(name: str) -> str:
        return f"{host}/{name}{QUERY}"

    scan = ["scan", "--format", "json", "--stats", "--explain"]
    cases = [  # (command, expected exit code, the object the error must name)
        ([*scan, url(ok)], 0, ""),
        (["--debug", *scan, url("bkt/none.csup")], 3, "none.csup"),
        (["inspect", url(ok)], 0, ""),
        (["--debug", "plan", url(ok)], 0, ""),
        ([*scan, url(corrupt)], 4, corrupt.split("/")[1]),
        (["--debug", "inspect", url(corrupt)], 4, corrupt.split("/")[1]),
        (["--debug", *scan, url(ok), "-c", "nope"], 3, "nope"),
    ]
    runs = _cli_all([c for c, _, _ in cases[:2]])
    for cmd, _, _ in cases[2:]:
        code = cli.main(cmd)
        captured = capfd.readouterr()
        runs.append((cmd, code, captured.out, captured.err))
    for (cmd, code, stdout, stderr), (_, want, named) in zip(runs, cases, strict=True):
        _assert_clean(f"cli {cmd} stdout", stdout)
        _assert_clean(f"cli {cmd} stderr", stderr)
        assert code == want, (cmd, code, stderr)
        if want:
            assert named in stderr  # the error still names the object (or column)
            if "--debug" in cmd:
                assert "Traceback" in stderr  # the traceback was printed, and checked
    assert '"id":499' in runs[0][2].replace(" ", "")


# ------------------------------------------------------------------ TLS ---
def _self_signed(tmp: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    import ipaddress

    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[str]:
    """An HTTPS file server on 127.0.0.1 with a self-signed certificate."""
    from aiohttp import web

    cert, key = _self_signed(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "x.csup").write_bytes(DATA)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def boot() -> tuple[Any, int]:
        app = web.Application()
        app.router.add_static("/", root)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx).start()
        return runner, port

    runner, port = asyncio.run_coroutine_threadsafe(boot(), loop).result(10)
    yield f"https://127.0.0.1:{port}/x.csup"
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def test_tls_verification_is_on_by_default() -> None:
    assert HTTPStore().verify_ssl is True
    assert S3Store().verify_ssl is True
    assert GCSStore().verify_ssl is True


async def test_self_signed_https_fails_unless_verification_is_off(https_server: str) -> None:
    with pytest.raises(StoreError) as info:
        await csup_async.open(https_server, retry=FAST)
    assert "certificate" in str(info.value).lower()
    async with csup_async.open(https_server, verify_ssl=False, retry=FAST) as r:
        assert (await r.scan(["id"])).column("id").to_pylist() == list(range(500))
    proc = _cli("scan", https_server, "-c", "id", "--format", "json")
    assert proc.returncode == 5 and "certificate" in proc.stderr.lower()
    proc = _cli("scan", https_server, "-c", "id", "--format", "json", "--no-verify-ssl")
    assert proc.returncode == 0 and proc.stdout.count("\n") == 500


# ------------------------------------------------------ no shell or eval ---
_FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "os.system", "os.popen",
                    "os.spawnl", "os.spawnv", "os.execv", "os.execl", "pickle.loads",
                    "pickle.load", "marshal.loads", "marshal.load", "yaml.load",
                    "shelve.open", "subprocess.getoutput", "subprocess.getstatusoutput"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _sources() -> list[Path]:
    return sorted(p for d in ("csup_async", "planner") for p in (ROOT / d).rglob("*.py"))


def test_no_shell_eval_or_unpickling_in_the_package() -> None:
    """Every call in the package's source: none evaluates code, runs a shell or unpickles."""
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if name in _FORBIDDEN_CALLS or (name.split(".")[-1] in ("system", "popen")
                                            and name.startswith("os")):
                found.append(f"{where} {name}()")
            if any(k.arg == "shell" and not (isinstance(k.value, ast.Constant)
                                             and k.value.value is False)
                   for k in node.keywords):
                found.append(f"{where} {name}(shell=...)")
    assert not found, found
    text = "\n".join(p.read_text() for p in _sources())
    for needle in ("eval(", "exec(", "shell=True", "os.system", "pickle.loads"):
        hits = [line for line in text.splitlines() if needle in line
                and not line.lstrip().startswith("#")
                and f".{needle}" not in line.replace(f"_{needle}", "")]
        assert not hits, (needle, hits[:3])


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The AST check is not vacuous: it flags each forbidden form."""
    bad = "import os, pickle, subprocess\neval('1')\nos.system('x')\npickle.loads(b'')\n" \
          "subprocess.run('x', shell=True)\n"
    tree = ast.parse(bad)
    names = [_dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert {"eval", "os.system", "pickle.loads"} <= set(names) & _FORBIDDEN_CALLS
    shell = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and any(k.arg == "shell" for k in n.keywords)]
    assert len(shell) == 1


# ------------------------------------------------- what a file can claim ---
async def test_reader_caps_are_options(tmp_path: Path) -> None:
    """max_metadata and max_mem_length are open() options, and they bind."""
    from csup_async.format import bsup
    from csup_async.scan import options

    data = _csup([{"s": "x" * 2000} for _ in range(200)])
    p = tmp_path / "c.csup"
    p.write_bytes(data)
    with pytest.raises(LimitError, match="max_metadata"):
        await csup_async.open(str(p), max_metadata=16)
    async with csup_async.open(str(p), max_mem_length=1024) as r:
        with pytest.raises(LimitError, match="max_mem_length"):
            await r.scan()
    async with csup_async.open(str(p)) as r:
        assert len(await r.scan()) == 200
    # the caps a file meets, documented in docs/reliability.md
    assert options.DEFAULT_MAX_ROWS == 1 << 28 and options.DEFAULT_MAX_VALUES == 1 << 30
    assert (bsup.MAX_FRAME, bsup.MAX_DEPTH, bsup.MAX_TYPES, bsup.MAX_TYPE_SIZE) == (
        1 << 30, 100, 1 << 18, 1 << 16)


# --------------------------------------------------- Google's own credentials ---
@pytest.fixture(scope="module")
def google_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.google_local import GoogleLocal

    server = GoogleLocal(tmp_path_factory.mktemp("google-sec")).start()
    yield server
    server.stop()


ADC_SCENARIOS = ["ok", "404", "revoked-token", "refused-grant"]


@pytest.mark.parametrize("source", ["service-account", "external-account"])
@pytest.mark.parametrize("scenario", ADC_SCENARIOS)
async def test_adc_secrets_never_shown(google_local: Any, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture, tmp_path: Path,
                                       source: str, scenario: str) -> None:
    """A service-account key and an external account's subject token, used through
    Application Default Credentials: the key, the subject token and every token minted
    stay out of errors, reprs, every DEBUG log record and the pickled store."""
    import pickle

    from tests.support.google_local import SUBJECT_TOKEN

    g = google_local
    g.reset()
    caplog.set_level(logging.DEBUG)
    for name in ("GOOGLE_OAUTH_ACCESS_TOKEN", "STORAGE_EMULATOR_HOST", "HTTPS_PROXY",
                 "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "gcloud").mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    creds = (g.service_account_file(tmp_path / "sa.json") if source == "service-account"
             else g.external_account_file(tmp_path / "wif.json"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    url = g.put("bkt/sec/data.csup", DATA)
    if scenario == "404":
        url = url.replace("data.csup", "missing.csup")
    if scenario == "refused-grant":
        g.revoked_grants = True
    texts: list[str] = []
    store = GCSStore(endpoint=g.https, verify_ssl=False, retry=FAST)
    try:
        async with csup_async.open(url, store=store, profile=SMALL_TAIL) as r:
            texts += [repr(r), repr(r.store), str(r.store)]
            if scenario == "revoked-token":
                g.revoke_tokens()
            res = await r.scan()
            texts += [repr(res), str(res.stats)]
        assert scenario == "ok", scenario
    except CsupError as e:
        assert scenario != "ok", e
        texts.append(_error_texts(e))
    finally:
        await store.close()
    texts.append(repr(store))
    blob = pickle.dumps(store)
    secrets = [*g.tokens(), g.key_id, g.key_pem.splitlines()[1], SUBJECT_TOKEN]
    for i, text in enumerate(texts):
        for s in secrets:
            assert s not in text, f"{source}/{scenario} text {i} shows a secret: {text[:500]}"
    for rec in caplog.records:
        msg = rec.getMessage()
        for s in secrets:
            assert s not in msg, f"{source}/{scenario} log {rec.name}: {msg[:500]}"
    for s in secrets:
        assert s.encode() not in blob, f"{source}/{scenario}: the pickled store holds a secret"
    if scenario == "ok":
        assert g.tokens() and caplog.records  # tokens were minted, logs were looked at


def test_gcloud_user_credentials_never_shown(google_local: Any, tmp_path: Path) -> None:
    """An authorized user's client secret and refresh token (gcloud's file), through the
    CLI with --debug, succeeding and refused: stdout and stderr stay clean."""
    from tests.support.google_local import CLIENT_SECRET, REFRESH_TOKEN, ConnectProxy

    g = google_local
    g.reset()
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir()
    g.authorized_user_file(gcloud / "application_default_credentials.json")
    g.put("bkt/sec/user.csup", DATA)
    proxy = ConnectProxy(tmp_path, g.http_port).start()
    env = {**_env(), "CLOUDSDK_CONFIG": str(gcloud), "HTTPS_PROXY": proxy.url,
           "REQUESTS_CA_BUNDLE": str(proxy.cert), "NO_GCE_CHECK": "true",
           "PYTHONPATH": str(ROOT)}
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    runs = []
    try:
        for refuse in (False, True):
            g.revoked_grants = refuse
            runs.append(subprocess.run(
                [sys.executable, "-m", "csup_async.cli", "--debug", "scan",
                 "gs://bkt/sec/user.csup", "--endpoint-url", g.https, "--no-verify-ssl",
                 "--format", "json"], cwd=ROOT, env=env, capture_output=True, text=True,
                timeout=120))
    finally:
        proxy.stop()
    ok, refused = runs
    assert ok.returncode == 0, ok.stderr
    assert refused.returncode != 0 and "invalid_grant" in refused.stderr
    assert "Traceback" in refused.stderr
    for run in runs:
        for s in [CLIENT_SECRET, REFRESH_TOKEN, *g.tokens()]:
            assert s not in run.stdout + run.stderr
