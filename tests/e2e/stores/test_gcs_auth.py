"""GCS credentials that just work, from every Application Default Credentials source.

Everything runs on 127.0.0.1 (tests/support/google_local.py): a token endpoint that
checks the service account's signed JWT (a fresh RSA key made here), an STS
endpoint, a metadata server reached through ``GCE_METADATA_HOST`` /
``GCE_METADATA_IP`` (the variables google-auth reads), and a GCS-shaped server
that accepts only current tokens.  An authorized user's token URI is always
Google's, so that test reaches the local token endpoint through an HTTPS
proxy (``HTTPS_PROXY``) that terminates TLS itself.  google-auth is real
throughout; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async import AccessDeniedError
from csup_async.stores import GCSStore
from tests.support.google_local import (
    SA_EMAIL,
    STATIC_TOKEN,
    ConnectProxy,
    GoogleLocal,
)
from tests.support.paths import ROOT

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = [{"id": i, "name": f"n{i}"} for i in range(300)]
_ENV_DROPPED = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN",
                "STORAGE_EMULATOR_HOST", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
                "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
                "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GCE_METADATA_ROOT")


def _csup(rows: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, rows, target="csup-async")  # at import: no fixture yet
    return out.getvalue()


DATA = _csup(ROWS)


@pytest.fixture(scope="module")
def google_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoogleLocal]:
    server = GoogleLocal(tmp_path_factory.mktemp("google")).start()
    yield server
    server.stop()


@pytest.fixture
def g(google_server: GoogleLocal, monkeypatch: pytest.MonkeyPatch,
      tmp_path: Path) -> GoogleLocal:
    """The server with fresh counters, and an environment with no Google credentials in it
    (an empty gcloud directory; the metadata server, should anything look, on a closed
    loopback port)."""
    google_server.reset()
    for name in _ENV_DROPPED:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "gcloud").mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    return google_server


def _sa(g: GoogleLocal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                       str(g.service_account_file(tmp_path / "sa.json")))


async def _read_all(url: str, **options: Any) -> tuple[list[Any], str]:
    async with csup_async.open(url, verify_ssl=False, **options) as r:
        res = await r.scan()
        return res.to_pylist(), r.store.credential_source  # type: ignore[attr-defined]


# ----------------------------------------------------------- the sources ---
async def test_service_account_key_file(g: GoogleLocal, monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    url = g.put("bkt/sa/data.csup", DATA)
    rows, source = await _read_all(url, endpoint=g.https)
    assert rows == ROWS
    assert source == f"a service-account key ({SA_EMAIL}) from GOOGLE_APPLICATION_CREDENTIALS"
    rows, _ = await _read_all(url, endpoint=g.https)  # another store shares the token
    assert rows == ROWS
    # one token, minted for a JWT the endpoint verified, sent on every request
    assert g.stats.refused_grants == [] and len(g.tokens()) == 1
    assert g.stats.gcs_refused == [] and g.stats.gcs_ok >= 1
    assert set(g.stats.gcs_auth) == {f"Bearer {g.tokens()[0]}"}


async def test_authorized_user_from_gcloud_login(g: GoogleLocal,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """``gcloud auth application-default login`` leaves an authorized-user file in gcloud's
    directory; its token URI is Google's, reached here through a local HTTPS proxy."""
    proxy = ConnectProxy(tmp_path, g.http_port).start()
    try:
        g.authorized_user_file(tmp_path / "gcloud" / "application_default_credentials.json")
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(proxy.cert))
        url = g.put("bkt/user/data.csup", DATA)
        rows, source = await _read_all(url, endpoint=g.https)
    finally:
        proxy.stop()
    assert rows == ROWS
    assert source == "authorized-user credentials from gcloud's application-default credentials"
    assert proxy.connects == ["oauth2.googleapis.com:443"]
    assert [i.grant for i in g.stats.issued] == ["refresh_token"]
    assert g.stats.gcs_refused == []


async def test_external_account(g: GoogleLocal, monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path) -> None:
    """Workload identity federation: a subject token from a file, exchanged at STS."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                       str(g.external_account_file(tmp_path / "wif.json")))
    url = g.put("bkt/wif/data.csup", DATA)
    rows, source = await _read_all(url, endpoint=g.https)
    assert rows == ROWS
    assert source.startswith("an external account (workload identity federation)")
    assert [i.grant for i in g.stats.issued] == [
        "urn:ietf:params:oauth:grant-type:token-exchange"]
    assert g.stats.gcs_refused == []


def _cli_env(g: GoogleLocal, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in _ENV_DROPPED and not k.startswith(("GOOGLE_", "GCE_"))}
    env.update(CLOUDSDK_CONFIG=str(tmp_path / "gcloud"), PYTHONPATH=str(ROOT), **extra)
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "csup_async.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_metadata_server_from_the_cli(g: GoogleLocal, tmp_path: Path) -> None:
    """GCE/GKE/Cloud Run: no file anywhere, the metadata server mints the token.  A cold
    CLI process (google-auth reads GCE_METADATA_HOST when imported)."""
    g.put("bkt/md/data.csup", DATA)
    host = f"127.0.0.1:{g.http_port}"
    env = _cli_env(g, tmp_path, GCE_METADATA_HOST=host, GCE_METADATA_IP=host)
    out = _cli(env, "scan", "gs://bkt/md/data.csup", "--endpoint-url", g.https,
               "--no-verify-ssl", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == ROWS
    assert [i.grant for i in g.stats.issued] == ["metadata"]
    assert any(p.endswith("/token") for p in g.stats.metadata_paths)
    assert g.stats.gcs_refused == []


def test_service_account_from_the_cli(g: GoogleLocal, tmp_path: Path) -> None:
    g.put("bkt/cli/data.csup", DATA)
    env = _cli_env(g, tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(
        g.service_account_file(tmp_path / "sa.json")), NO_GCE_CHECK="true")
    out = _cli(env, "scan", "gs://bkt/cli/data.csup", "--endpoint-url", g.https,
               "--no-verify-ssl", "--format", "json", "-c", "id")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["id"] for line in out.stdout.splitlines()] == list(range(300))
    assert len(g.tokens()) == 1 and g.stats.gcs_refused == []
    for token in g.tokens():
        assert token not in out.stdout + out.stderr


def test_no_credentials_found_is_one_line_naming_the_sources(g: GoogleLocal,
                                                             tmp_path: Path) -> None:
    g.put("bkt/private/data.csup", DATA)
    g.put("bkt/public/data.csup", DATA)
    env = _cli_env(g, tmp_path, NO_GCE_CHECK="true")
    denied = _cli(env, "scan", "gs://bkt/private/data.csup", "--endpoint-url", g.https,
                  "--no-verify-ssl")
    assert denied.returncode != 0
    lines = denied.stderr.strip().splitlines()
    assert len(lines) == 1, denied.stderr
    for source in ("GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
                   "gcloud", "metadata server", "gs://bkt/private/data.csup", "401"):
        assert source in lines[0], lines[0]
    # with nothing found, public objects still read anonymously
    public = _cli(env, "scan", "gs://bkt/public/data.csup", "--endpoint-url", g.https,
                  "--no-verify-ssl", "--format", "json", "-c", "id")
    assert public.returncode == 0, public.stderr
    assert len(public.stdout.splitlines()) == 300
    assert g.stats.token_requests == 0 and set(g.stats.gcs_auth) == {None}


def test_google_auth_is_imported_only_when_a_gs_url_needs_credentials(
        g: GoogleLocal, tmp_path: Path) -> None:
    local = tmp_path / "x.csup"
    local.write_bytes(DATA)
    g.put("bkt/public/lazy.csup", DATA)
    code = f"""
import asyncio, sys
import csup_async
assert "google.auth" not in sys.modules, "import csup_async"
async def main():
    async with csup_async.open({str(local)!r}) as r:
        assert (await r.scan()).num_rows == 300
    async with csup_async.open({g.https + "/storage/v1/b/bkt/o/public%2Flazy.csup?alt=media"!r},
                               verify_ssl=False) as r:
        assert (await r.scan()).num_rows == 300
    assert "google.auth" not in sys.modules, "local and HTTP reads"
    async with csup_async.open("gs://bkt/public/lazy.csup", endpoint={g.http!r}) as r:
        assert (await r.scan()).num_rows == 300
    assert "google.auth" not in sys.modules, "gs:// over plain HTTP without adc"
    async with csup_async.open("gs://bkt/public/lazy.csup", endpoint={g.https!r},
                               verify_ssl=False) as r:
        assert (await r.scan()).num_rows == 300
    assert "google.auth" in sys.modules, "gs:// with ADC"
asyncio.run(main())
print("ok")
"""
    env = _cli_env(g, tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(
        g.service_account_file(tmp_path / "sa.json")))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert len(g.tokens()) == 1


# ------------------------------------------------------- what wins, what not ---
async def test_anonymous_and_an_explicit_token_win_over_adc(
        g: GoogleLocal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    g.static_tokens.add(STATIC_TOKEN)
    public = g.put("bkt/public/a.csup", DATA)
    private = g.put("bkt/private/a.csup", DATA)
    rows, source = await _read_all(public, endpoint=g.https, anonymous=True)
    assert rows == ROWS and source == "anonymous"
    assert set(g.stats.gcs_auth) == {None}
    rows, source = await _read_all(private, endpoint=g.https, token=STATIC_TOKEN)
    assert rows == ROWS and source == "the token option"
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", STATIC_TOKEN)
    rows, source = await _read_all(private, endpoint=g.https)
    assert rows == ROWS and source == "GOOGLE_OAUTH_ACCESS_TOKEN"
    assert set(g.stats.gcs_auth) == {None, f"Bearer {STATIC_TOKEN}"}
    assert g.stats.token_requests == 0  # ADC was never asked


async def test_the_emulator_needs_no_credentials(g: GoogleLocal,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"127.0.0.1:{g.http_port}")
    rows, source = await _read_all(g.put("bkt/public/emu.csup", DATA))
    assert rows == ROWS and source == "anonymous (STORAGE_EMULATOR_HOST)"
    assert set(g.stats.gcs_auth) == {None} and g.stats.token_requests == 0
    with pytest.raises(AccessDeniedError, match="STORAGE_EMULATOR_HOST"):
        await _read_all(g.put("bkt/private/emu.csup", DATA))
    # adc=True sends them to a plain-HTTP endpoint too
    rows, _ = await _read_all(g.put("bkt/private/emu2.csup", DATA), adc=True)
    assert rows == ROWS and len(g.tokens()) == 1


async def test_plain_http_endpoints_get_no_adc_unless_asked(
        g: GoogleLocal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    url = g.put("bkt/private/http.csup", DATA)
    with pytest.raises(AccessDeniedError, match=r"https:// endpoints \(pass adc=True\)"):
        await _read_all(url, endpoint=g.http)
    assert g.stats.token_requests == 0
    rows, _ = await _read_all(url, endpoint=g.http, adc=True)
    assert rows == ROWS
    with pytest.raises(AccessDeniedError):
        await _read_all(url, endpoint=g.https, adc=False)
    assert len(g.tokens()) == 1


# ------------------------------------------------------------- refreshing ---
async def test_refresh_before_expiry_under_50_concurrent_reads(
        g: GoogleLocal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tokens live 4 s; 50 readers read for 9 s.  The server refuses expired tokens, so any
    request sent with a stale one fails the test; refreshes are shared, never parallel."""
    _sa(g, monkeypatch, tmp_path)
    g.lifetime = 4.0
    g.token_delay = 0.2  # a refresh takes a while, so concurrent readers meet it in flight
    g.put("bkt/refresh/data.csup", DATA)
    reads = 0
    async with GCSStore(endpoint=g.https, verify_ssl=False) as store:
        stop = time.monotonic() + 9.0

        async def reader(i: int) -> None:
            nonlocal reads
            while time.monotonic() < stop:
                got = await store.read_range("bkt/refresh/data.csup", i, 100)
                assert bytes(got) == DATA[i:i + 100]
                reads += 1
                await asyncio.sleep(0.02)

        await asyncio.gather(*(reader(i) for i in range(50)))
    assert g.stats.gcs_refused == []  # no request ever left with an expired token
    assert reads > 500
    issued = len(g.tokens())
    assert 3 <= issued <= 6, issued  # refreshed every ~3 s (a quarter early), not per read
    assert g.stats.token_requests == issued
    assert g.stats.max_token_in_flight == 1  # one refresh shared by all 50


async def test_refresh_runs_off_the_event_loop(g: GoogleLocal,
                                               monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """The token endpoint holds its answer until this test's loop opens a gate: were the
    refresh blocking the loop, the gate could never open and the reads would fail."""
    _sa(g, monkeypatch, tmp_path)
    g.gate = threading.Event()
    g.put("bkt/gate/data.csup", DATA)
    async with GCSStore(endpoint=g.https, verify_ssl=False) as store:
        reads = [asyncio.create_task(store.read_range("bkt/gate/data.csup", 0, 10))
                 for _ in range(50)]
        while g.stats.token_in_flight == 0:
            await asyncio.sleep(0.01)  # runs while the refresh is in flight
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in reads)
        g.gate.set()
        assert [bytes(b) for b in await asyncio.gather(*reads)] == [DATA[:10]] * 50
    assert g.stats.token_requests == 1


# --------------------------------------------------------------- refusals ---
async def test_an_expired_static_token_is_denied_not_retried(g: GoogleLocal) -> None:
    url = g.put("bkt/private/static.csup", DATA)
    with pytest.raises(AccessDeniedError) as info:
        await _read_all(url, endpoint=g.https, token="ya29.long-expired")
    msg = str(info.value)
    assert "401" in msg and "the token option" in msg and "not retried" in msg
    assert "ya29.long-expired" not in msg
    assert len(g.stats.gcs_refused) == 1  # one request, no retry loop


async def test_a_revoked_token_is_denied_naming_its_source(
        g: GoogleLocal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    g.put("bkt/revoke/data.csup", DATA)
    async with GCSStore(endpoint=g.https, verify_ssl=False) as store:
        await store.read_range("bkt/revoke/data.csup", 0, 10)
        g.revoke_tokens()
        with pytest.raises(AccessDeniedError) as info:
            await store.read_range("bkt/revoke/data.csup", 0, 10)
    assert f"a service-account key ({SA_EMAIL})" in str(info.value)
    assert g.stats.gcs_refused == ["unknown or revoked token"]
    assert g.stats.token_requests == 1


async def test_a_refused_grant_is_access_denied(g: GoogleLocal,
                                                monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    g.revoked_grants = True
    with pytest.raises(AccessDeniedError) as info:
        await _read_all(g.put("bkt/grant/data.csup", DATA), endpoint=g.https)
    msg = str(info.value)
    assert "service-account key" in msg and "invalid_grant" in msg and "\n" not in msg
    assert g.stats.token_requests == 1 and g.stats.gcs_ok == 0


async def test_an_unusable_credentials_file_is_an_error_not_anonymous(
        g: GoogleLocal, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(AccessDeniedError, match=r"unusable Google credentials.*not found"):
        await _read_all(g.put("bkt/public/x.csup", DATA), endpoint=g.https)
    assert g.stats.gcs_auth == []


# ---------------------------------------------------------------- pickles ---
async def test_a_pickled_store_carries_no_token(g: GoogleLocal,
                                                monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    _sa(g, monkeypatch, tmp_path)
    g.put("bkt/pickle/data.csup", DATA)
    store = GCSStore(endpoint=g.https, verify_ssl=False)
    await store.read_range("bkt/pickle/data.csup", 0, 10)
    await store.close()
    blob = pickle.dumps(store)
    (token,) = g.tokens()
    assert token.encode() not in blob and b"PRIVATE KEY" not in blob
    copy = pickle.loads(blob)
    async with copy:
        assert bytes(await copy.read_range("bkt/pickle/data.csup", 0, 10)) == DATA[:10]
    # the copy uses the receiving process's credentials: here, the same process's
    # (another process mints its own: see the Spark test)
    assert len(g.tokens()) == 1


# ------------------------------------------------------------------ Spark ---
def test_spark_executors_find_their_own_credentials(g: GoogleLocal,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """The driver plans with its own token, each worker process mints its own, and no token
    or key is in the pickled reader, partitions or plan."""
    from csup_async.spark.session import spark_unavailable

    if spark_unavailable() is not None:
        pytest.skip(spark_unavailable() or "")
    from csup_async.spark.session import local_session
    from csup_async.spark.source import CsupDataSource

    sa = str(g.service_account_file(tmp_path / "sa.json"))
    for i in range(3):
        g.put(f"bkt/spark/p{i}.csup", _csup([{"id": i * 100 + j} for j in range(100)]))
    options = {"path": "gs://bkt/spark/", "endpoint": g.https, "verifySsl": "false",
               "shipTailBytes": "0"}  # executors must read, so need tokens

    # Spark's Python workers (planning and reading) get the variable from Spark's
    # executor environment, not from this process (whose JVM may predate this test)
    env = {f"spark.executorEnv.{k}": v for k, v in (
        ("GOOGLE_APPLICATION_CREDENTIALS", sa), ("CLOUDSDK_CONFIG", str(tmp_path / "gcloud")),
        ("GCE_METADATA_HOST", "127.0.0.1:9"), ("GCE_METADATA_IP", "127.0.0.1:9"))}
    spark = local_session("csup-gcs-auth", cores=2, **env)
    try:
        df = spark.read.format("csup").options(**options).load()
        assert sorted(r.id for r in df.collect()) == list(range(300))
    finally:
        spark.stop()
    assert g.tokens() and all(i.grant.endswith("jwt-bearer") for i in g.stats.issued)
    assert g.stats.gcs_refused == []

    # what Spark pickles for executors, planned here with this process's own token
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", sa)
    g.reset()
    source = CsupDataSource(options)
    reader = source.reader(source.schema())
    parts = reader.partitions()
    plan = reader.read_plan()
    assert g.tokens() and parts  # schema() and planning: a store each
    blob = pickle.dumps((reader, parts, plan))
    for secret in [*g.tokens(), g.key_id, "PRIVATE KEY"]:
        assert secret.encode() not in blob, secret
