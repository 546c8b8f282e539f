"""Retries, timeouts, cancellation and typed errors, against a server that misbehaves on cue.

The HTTP, S3 and GCS stores all talk to the aiohttp range server (tests/support/servers.py),
which counts the requests it really received, so "retried", "not retried" and
"resumed where it broke" are facts measured at the server.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from contextlib import aclosing

import pytest

from csup_async.model.errors import (
    AccessDeniedError,
    NotFoundError,
    ObjectChangedError,
    StoreError,
    StoreTimeoutError,
)
from csup_async.stores import GCSStore, HTTPStore, RetryPolicy, S3Store, Store
from csup_async.stores.retry import Retryable
from tests.support.servers import Fault, RangeServer

SIZE = 200_000
DATA = os.urandom(SIZE)
FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.01, total_timeout=10)

ACCESS_KEY = "AKIDCSUPTEST"
SECRET_KEY = "s3-secret-do-not-show"
GCS_TOKEN = "ya29.gcs-token-do-not-show"


class Client:
    """How one store kind addresses an object on the range server."""

    def __init__(self, kind: str, rs: RangeServer) -> None:
        self.kind, self.rs = kind, rs

    def make(self, **options: object) -> Store:
        options.setdefault("retry", FAST)
        if self.kind == "http":
            return HTTPStore(**options)  # type: ignore[arg-type]
        if self.kind == "s3":
            return S3Store(endpoint_url=self.rs.endpoint, region="us-east-1",
                           access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                           **options)  # type: ignore[arg-type]
        return GCSStore(endpoint=self.rs.endpoint, token=GCS_TOKEN, **options)  # type: ignore[arg-type]

    def key(self, name: str) -> str:
        return self.rs.url(name) if self.kind == "http" else name


@pytest.fixture(params=["http", "s3", "gcs"])
def client(request: pytest.FixtureRequest, range_server: RangeServer) -> Client:
    return Client(request.param, range_server)


def _put(client: Client, data: bytes = DATA) -> tuple[str, str]:
    name = f"bkt/{uuid.uuid4().hex[:12]}.bin"
    client.rs.put(name, data)
    return name, client.key(name)


def _range_start(headers: dict[str, str]) -> int:
    return int(headers["Range"].split("=")[1].split("-")[0])


# ------------------------------------------------------------ transient ---
@pytest.mark.parametrize("status", [503, 429, 500, 502])
async def test_transient_errors_are_retried(client: Client, status: int) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.error(status), Fault.error(status))
    async with client.make() as store:
        data = await store.read_range(key, 1000, 50_000)
    assert bytes(data) == DATA[1000:51_000]
    assert len(client.rs.seen(name)) == 3


@pytest.mark.parametrize("status", [503, 429])
async def test_retry_after_is_honoured(client: Client, status: int) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.error(status, retry_after="0.3"))
    async with client.make() as store:
        tail = await store.read_tail(key, 100)
    assert tail.data == DATA[-100:]
    seen = client.rs.seen(name)
    assert len(seen) == 2
    # The policy alone would wait at most 1 ms; the server asked for 0.3 s.
    assert seen[1].time - seen[0].time >= 0.3


async def test_retry_after_beyond_the_budget_gives_up_at_once(client: Client) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.error(503, retry_after="120"))
    t0 = time.monotonic()
    async with client.make(retry=RetryPolicy(attempts=5, total_timeout=5)) as store:
        with pytest.raises(StoreError) as info:
            await store.read_tail(key, 100)
    assert time.monotonic() - t0 < 2
    assert "budget" in str(info.value)
    assert not isinstance(info.value, Retryable)
    assert len(client.rs.seen(name)) == 1


async def test_persistent_errors_give_up_after_the_attempts(client: Client) -> None:
    name, key = _put(client)
    client.rs.inject(name, *[Fault.error(503)] * 10)
    async with client.make() as store:
        with pytest.raises(StoreError) as info:
            await store.read_range(key, 0, 100)
    assert type(info.value) is StoreError
    assert "503" in str(info.value) and "gave up after 4 tries" in str(info.value)
    assert name.split("/")[1] in str(info.value)
    assert len(client.rs.seen(name)) == 4


# ------------------------------------------------------------ permanent ---
@pytest.mark.parametrize(("status", "error"), [(403, AccessDeniedError), (401, AccessDeniedError),
                                               (404, NotFoundError), (400, StoreError)])
async def test_permanent_errors_are_not_retried(client: Client, status: int,
                                                error: type[StoreError]) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.error(status))
    async with client.make() as store:
        with pytest.raises(error) as info:
            await store.read_range(key, 0, 100)
    assert not isinstance(info.value, Retryable)
    assert name.split("/")[1] in str(info.value)
    assert len(client.rs.seen(name)) == 1


# -------------------------------------------------------- broken bodies ---
async def test_connection_reset_mid_body_resumes_where_it_broke(client: Client) -> None:
    name, key = _put(client)
    async with client.make() as store:
        version = (await store.read_tail(key, 10)).info.version
        client.rs.inject(name, Fault.reset(after_bytes=30_000))
        data = await store.read_range(key, 5000, 150_000, version)
    assert bytes(data) == DATA[5000:155_000]
    seen = client.rs.seen(name)
    assert len(seen) == 3  # tail, broken read, resumed read
    assert _range_start(seen[1].headers) == 5000
    assert _range_start(seen[2].headers) == 35_000  # not from the start again


# A broken body once is retried (resumed where it broke); every time, it is a typed error
# saying what broke, for ranged and tail reads alike.
BAD_BODIES = {
    "reset": (Fault.reset(after_bytes=100), "gave up after 4 tries"),
    "short": (Fault.short(), "short response"),
    "wrong-range": (Fault.wrong_range(), "Content-Range"),
}


@pytest.mark.parametrize("fault", BAD_BODIES)
async def test_bad_body_once_is_retried(client: Client, fault: str) -> None:
    name, key = _put(client)
    client.rs.inject(name, BAD_BODIES[fault][0])
    async with client.make() as store:
        data = await store.read_range(key, 100, 10_000)
    assert bytes(data) == DATA[100:10_100]
    assert len(client.rs.seen(name)) == 2


@pytest.mark.parametrize("fault", BAD_BODIES)
async def test_bad_body_every_time_is_a_typed_error(client: Client, fault: str) -> None:
    name, key = _put(client)
    bad, message = BAD_BODIES[fault]
    client.rs.inject(name, *[bad] * 10)
    async with client.make() as store:
        with pytest.raises(StoreError) as info:
            await store.read_range(key, 100, 10_000)
        assert message in str(info.value) and name.split("/")[1] in str(info.value)
        assert len(client.rs.seen(name)) == 4
        with pytest.raises(StoreError):
            await store.read_tail(key, 1000)
    assert len(client.rs.seen(name)) == 8


async def test_short_chunked_body_resumes_where_it_ended(client: Client) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.short(chunked=True))
    async with client.make() as store:
        data = await store.read_range(key, 100, 10_000)
    assert bytes(data) == DATA[100:10_100]
    seen = client.rs.seen(name)
    assert [_range_start(s.headers) for s in seen] == [100, 5100]


# --------------------------------------------------------------- stalls ---
@pytest.mark.parametrize("after_bytes", [0, 1000])
async def test_stall_is_a_timeout_within_bounded_time(client: Client, after_bytes: int) -> None:
    name, key = _put(client)
    client.rs.inject(name, *[Fault.stall(5, after_bytes=after_bytes)] * 3)
    policy = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01, total_timeout=10)
    t0 = time.monotonic()
    async with client.make(read_timeout=0.3, retry=policy) as store:
        with pytest.raises(StoreTimeoutError):
            await store.read_range(key, 0, 100_000)
    assert time.monotonic() - t0 < 3
    assert len(client.rs.seen(name)) == 2


# ------------------------------------------------------ odd but correct ---
async def test_server_ignoring_range_still_reads_correctly(client: Client) -> None:
    name, key = _put(client)
    client.rs.mode(name, ignore_range=True)
    async with client.make() as store:
        tail = await store.read_tail(key, 1000)
        assert tail.data == DATA[-1000:]
        assert tail.info.size == SIZE
        data = await store.read_range(key, 70_000, 1234, tail.info.version)
    assert bytes(data) == DATA[70_000:71_234]


async def test_416_for_a_long_suffix_falls_back_to_the_whole_object(client: Client) -> None:
    name, key = _put(client, DATA[:5000])
    client.rs.mode(name, suffix_416=True)
    async with client.make() as store:
        short = await store.read_tail(key, 100)
        assert len(client.rs.seen(name)) == 1
        whole = await store.read_tail(key, 1 << 20)
    assert short.data == DATA[4900:5000]
    assert whole.data == DATA[:5000] and whole.info.size == 5000
    assert len(client.rs.seen(name)) == 3  # the 416, then one plain GET
    assert "Range" not in client.rs.seen(name)[2].headers


async def test_object_replaced_between_requests(client: Client) -> None:
    name, key = _put(client)
    async with client.make() as store:
        tail = await store.read_tail(key, 1000)
        client.rs.inject(name, Fault.replace(DATA[::-1]))
        with pytest.raises(ObjectChangedError) as info:
            await store.read_range(key, 0, 1000, tail.info.version)
        assert name.split("/")[1] in str(info.value)
        unpinned = await store.read_range(key, 0, 1000)
    assert bytes(unpinned) == DATA[::-1][:1000]
    pinned_request = client.rs.seen(name)[1]
    if client.kind == "gcs":
        assert pinned_request.query["ifGenerationMatch"] == tail.info.version
    else:
        assert pinned_request.headers["If-Match"] == tail.info.version


# --------------------------------------------------------- cancellation ---
async def test_cancelled_read_leaves_no_connection_or_task(client: Client) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.slow(0.05))  # ~1.2 s for 200 kB
    async with client.make() as store:
        task = asyncio.create_task(store.read_range(key, 0, SIZE))
        deadline = time.monotonic() + 5
        while client.rs.streaming == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert client.rs.streaming == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The server sees the connection go away long before the body would end.
        while client.rs.aborted == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert client.rs.aborted == 1 and client.rs.streaming == 0
        assert asyncio.all_tasks() == {asyncio.current_task()}
        connector = getattr(store, "connector", None)
        if connector is not None:  # the aiohttp stores: nothing checked out of the pool
            assert not connector._acquired
        # The store still works afterwards.
        assert bytes(await store.read_range(key, 0, 10)) == DATA[:10]


async def test_abandoned_stream_releases_its_connection(client: Client) -> None:
    name, key = _put(client)
    client.rs.inject(name, Fault.slow(0.05))
    async with client.make(chunk_size=4096) as store:
        async with aclosing(store.stream_range(key, 0, SIZE)) as stream:
            async for chunk in stream:
                assert chunk == DATA[:len(chunk)]
                break
        deadline = time.monotonic() + 5
        while client.rs.aborted == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert client.rs.aborted == 1


# -------------------------------------------------------------- secrets ---
async def test_secrets_never_show(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="csup_async")
    name, key = _put(client)
    secrets = [SECRET_KEY, GCS_TOKEN, "sig-do-not-show", "pw-do-not-show"]
    if client.kind == "http":
        key = key.replace("://", "://user:pw-do-not-show@") + "?X-Amz-Signature=sig-do-not-show"
    client.rs.inject(name, Fault.error(503), Fault.error(403))
    store = client.make()
    async with store:
        with pytest.raises(AccessDeniedError) as info:
            await store.read_range(key, 0, 10)
    auth = client.rs.seen(name)[0].headers.get("Authorization", "")
    if client.kind == "s3":
        assert auth.startswith("AWS4-HMAC-SHA256") and ACCESS_KEY in auth
    elif client.kind == "gcs":
        assert auth == f"Bearer {GCS_TOKEN}"
    else:
        assert auth.startswith("Basic ")  # the URL's userinfo was used, not shown
    shown = [str(info.value), repr(info.value), str(info.value.path), repr(store), caplog.text]
    assert "retrying" in caplog.text  # the 503 was logged...
    for secret in secrets:  # ...without any secret
        for text in shown:
            assert secret not in text


# ------------------------------------------------------------- options ---
async def test_s3_anonymous_requests_are_unsigned(range_server: RangeServer) -> None:
    range_server.put("bkt/anon.bin", DATA)
    async with S3Store(endpoint_url=range_server.endpoint, anonymous=True) as store:
        assert (await store.read_tail("s3://bkt/anon.bin", 10)).data == DATA[-10:]
    seen = range_server.seen("bkt/anon.bin")
    assert "Authorization" not in seen[0].headers
    assert seen[0].query == {}  # path style: /bkt/anon.bin on the endpoint's host


async def test_gcs_token_from_environment_and_provider(range_server: RangeServer,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    range_server.put("bkt/tok.bin", DATA)
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "env-token")
    async with GCSStore(endpoint=range_server.endpoint) as store:
        await store.read_tail("gs://bkt/tok.bin", 10)
    calls = []

    async def provider() -> str:
        calls.append(1)
        return "fresh-token"

    async with GCSStore(endpoint=range_server.endpoint, token=provider) as store:
        await store.read_tail("bkt/tok.bin", 10)
    async with GCSStore(endpoint=range_server.endpoint, anonymous=True) as store:
        await store.read_tail("bkt/tok.bin", 10)
    auth = [s.headers.get("Authorization") for s in range_server.seen("bkt/tok.bin")]
    assert auth == ["Bearer env-token", "Bearer fresh-token", None]
    assert calls == [1]


async def test_gcs_failing_token_provider_is_access_denied() -> None:
    def provider() -> str:
        raise RuntimeError("cannot refresh refresh-token-do-not-show")

    async with GCSStore(endpoint="http://127.0.0.1:9", token=provider, retry=FAST) as store:
        with pytest.raises(AccessDeniedError) as info:
            await store.read_tail("gs://bkt/k.bin", 10)
    assert "gs://bkt/k.bin" in str(info.value)
    assert "refresh-token-do-not-show" not in str(info.value)


async def test_gcs_pinned_read_is_one_request_when_the_server_names_generations(
        range_server: RangeServer) -> None:
    range_server.put("bkt/one.bin", DATA)
    async with GCSStore(endpoint=range_server.endpoint) as store:
        tail = await store.read_tail("bkt/one.bin", 1000)
        await store.read_range("bkt/one.bin", 0, 1000, tail.info.version)
    assert len(range_server.seen("bkt/one.bin")) == 2
    assert range_server.seen("bkt/one.bin", kind="meta") == []


async def test_gcs_without_generation_headers_checks_metadata(range_server: RangeServer) -> None:
    range_server.put("bkt/nogen.bin", DATA)
    range_server.mode("bkt/nogen.bin", gcs_generation=False)
    async with GCSStore(endpoint=range_server.endpoint) as store:
        tail = await store.read_tail("bkt/nogen.bin", 1000)
        assert tail.info.version is not None
        range_server.inject("bkt/nogen.bin", Fault.replace(DATA[::-1]))
        with pytest.raises(ObjectChangedError):
            await store.read_range("bkt/nogen.bin", 0, 1000, tail.info.version)
    assert len(range_server.seen("bkt/nogen.bin", kind="meta")) == 2


@pytest.mark.parametrize("modes", [{"no_etag": True}, {"no_validators": True}])
async def test_http_without_etag_pins_on_size_and_last_modified(
        range_server: RangeServer, modes: dict[str, bool]) -> None:
    name = f"bkt/{uuid.uuid4().hex[:8]}.bin"
    range_server.put(name, DATA)
    range_server.mode(name, **modes)
    async with HTTPStore(retry=FAST) as store:
        url = range_server.url(name)
        tail = await store.read_tail(url, 1000)
        assert tail.info.version is not None and tail.info.version.startswith("size=200000")
        assert bytes(await store.read_range(url, 0, 10, tail.info.version)) == DATA[:10]
        range_server.inject(name, Fault.replace(DATA + b"more"))
        with pytest.raises(ObjectChangedError):
            await store.read_range(url, 0, 1000, tail.info.version)
    if "no_etag" in modes:  # Last-Modified known: the server was asked to check it too
        assert "If-Unmodified-Since" in range_server.seen(name)[-1].headers


async def test_http_extra_headers_and_pool_limit(range_server: RangeServer) -> None:
    range_server.put("bkt/h.bin", DATA)
    async with HTTPStore(headers={"X-Api-Key": "k-do-not-show"}, limit=3) as store:
        await store.read_tail(range_server.url("bkt/h.bin"), 10)
        assert store.connector is not None and store.connector.limit == 3
        assert "k-do-not-show" not in repr(store)
    assert range_server.seen("bkt/h.bin")[0].headers["X-Api-Key"] == "k-do-not-show"


async def test_connection_refused_is_retried_then_typed(unused_tcp_port: int) -> None:
    url = f"http://127.0.0.1:{unused_tcp_port}/x.bin?token=tok-do-not-show"
    async with HTTPStore(retry=FAST) as store:
        with pytest.raises(StoreError) as info:
            await store.read_tail(url, 10)
    assert "connection failed" in str(info.value) and "gave up after 4" in str(info.value)
    assert "tok-do-not-show" not in str(info.value)



async def test_s3_direct_gets_are_signed_exactly_as_the_client_signs(
        range_server: RangeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The signed requests send what the full aiobotocore client
    sends, header for header and signature for signature (same clock), for a suffix read
    and a pinned ranged read of a key that needs escaping, with a session token."""
    import datetime

    import botocore.auth

    from csup_async.stores import sigv4

    fixed = datetime.datetime(2026, 1, 2, 3, 4, 5)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: fixed)
    monkeypatch.setattr(sigv4, "utc_timestamp", lambda: fixed.strftime("%Y%m%dT%H%M%SZ"))
    name = "bkt/dir/a b+c~d%e.bin"
    range_server.put(name, DATA)
    signed = ("authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token",
              "range", "if-match")

    async def both(store: S3Store) -> list[dict[str, str]]:
        tail = await store.read_tail(f"s3://{name}", 10)
        assert tail.data == DATA[-10:]
        got = await store.read_range(f"s3://{name}", 5, 20, tail.info.version)
        assert got == DATA[5:25]
        return [{k.lower(): v for k, v in s.headers.items() if k.lower() in signed}
                for s in range_server.seen(name)[-2:]]

    async with S3Store(endpoint_url=range_server.endpoint, region="eu-west-3",
                       access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                       session_token="session-token", retry=FAST) as store:
        direct = await both(store)
        assert not store.client_built  # the signed requests served those: no client
        store.use_client = True  # the full aiobotocore client from here on
        full = await both(store)
        assert store.client_built
    assert direct == full
    assert direct[1]["if-match"] and direct[0]["authorization"].startswith("AWS4-HMAC-SHA256")


async def test_s3_direct_gets_map_errors_like_the_client(range_server: RangeServer) -> None:
    """404, 403, 412 and a retried 503 come out as the same typed errors either way."""
    range_server.put("bkt/e.bin", DATA)
    results = []
    for direct in (True, False):
        async with S3Store(endpoint_url=range_server.endpoint, region="us-east-1",
                           access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                           retry=FAST) as store:
            await store.read_tail("s3://bkt/e.bin", 10)
            store.use_client = not direct
            got = []
            for call in (lambda: store.read_tail("s3://bkt/missing.bin", 10),
                         lambda: store.read_range("s3://bkt/e.bin", 0, 10, '"stale"')):
                with pytest.raises(StoreError) as info:
                    await call()
                got.append((type(info.value).__name__, info.value.path))
            range_server.inject("bkt/e.bin", Fault.error(403))
            with pytest.raises(AccessDeniedError):
                await store.read_tail("s3://bkt/e.bin", 10)
            range_server.inject("bkt/e.bin", Fault.error(503))
            assert (await store.read_tail("s3://bkt/e.bin", 10)).data == DATA[-10:]
            results.append(got)
    assert results[0] == results[1] == [("NotFoundError", "s3://bkt/missing.bin"),
                                        ("ObjectChangedError", "s3://bkt/e.bin")]
