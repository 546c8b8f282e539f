"""The stores' pure parts: redaction, Retry-After, Content-Range, the retry policy,
version tokens and URL resolution."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate

import pytest

from csup_async.model.errors import CsupError, StoreError, StoreTimeoutError
from csup_async.stores import (
    FsspecStore,
    GCSStore,
    HTTPStore,
    LocalStore,
    RetryPolicy,
    S3Store,
    redact_text,
    redact_url,
    store_for,
)
from csup_async.stores._ranged import parse_content_range, status_error
from csup_async.stores.fsspec_store import fsspec_version
from csup_async.stores.http import http_version, parse_http_version
from csup_async.stores.retry import Retryable, parse_retry_after
from tests.support.servers import RangeServer


# -------------------------------------------------------------- redaction ---
@pytest.mark.parametrize(("url", "expected"), [
    ("https://host/a/b.csup?X-Amz-Signature=abc&X-Amz-Credential=AKID",
     "https://host/a/b.csup?***"),
    ("https://user:pw@host:8443/p#frag", "https://***@host:8443/p#***"),
    ("s3://bucket/key.csup", "s3://bucket/key.csup"),
    ("/local/path.csup", "/local/path.csup"),
    ("bucket/key?sig=1", "bucket/key?***"),
])
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_text_finds_urls_inside_messages() -> None:
    text = "404, message='Not Found', url='https://h/x?token=t0p-secret' (after https://u:p@h/y)"
    out = redact_text(text)
    assert "t0p-secret" not in out and "u:p@" not in out
    assert "https://h/x?***" in out and "https://***@h/y" in out


# ------------------------------------------------------------ Retry-After ---
def test_parse_retry_after() -> None:
    now = time.time()
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    later = formatdate(now + 30, usegmt=True)
    assert 28 <= (parse_retry_after(later, now=now) or 0) <= 31
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


# ----------------------------------------------------------- Content-Range ---
def test_parse_content_range() -> None:
    assert parse_content_range("bytes 0-9/100") == (0, 9, 100)
    assert parse_content_range("bytes 90-99/*") == (90, 99, None)
    assert parse_content_range("bytes */100") == (None, None, 100)
    assert parse_content_range("bytes 200-21/22") == (200, 21, 22)  # kept: its total matters
    assert parse_content_range("items 0-9/100") is None
    assert parse_content_range("") is None


def test_status_errors_are_typed() -> None:
    from csup_async.model.errors import AccessDeniedError, NotFoundError, ObjectChangedError

    assert isinstance(status_error(403, "p"), AccessDeniedError)
    assert isinstance(status_error(404, "p"), NotFoundError)
    assert isinstance(status_error(412, "p"), ObjectChangedError)
    slow = status_error(503, "p", retry_after="2")
    assert isinstance(slow, Retryable) and slow.retry_after == 2.0
    assert not isinstance(status_error(400, "p"), Retryable)
    assert not isinstance(status_error(501, "p"), Retryable)


# ------------------------------------------------------------ retry policy ---
def test_retry_policy_validates() -> None:
    with pytest.raises(CsupError):
        RetryPolicy(attempts=0)
    with pytest.raises(CsupError):
        RetryPolicy(total_timeout=0)
    with pytest.raises(Exception, match=r"frozen|cannot assign"):
        RetryPolicy().attempts = 3  # type: ignore[misc]


async def test_attempts_use_full_jitter_within_the_cap() -> None:
    attempts = RetryPolicy(attempts=50, base_delay=0.001, max_delay=0.002).start("p")
    delays = []
    for _ in range(20):
        await attempts.failed(Retryable(StoreError("x", path="p")))
        delays.append(attempts.last_delay)
    assert all(0 <= d <= 0.002 for d in delays)
    assert len(set(delays)) > 10  # random, not a fixed schedule


async def test_attempts_give_up_with_the_typed_error() -> None:
    attempts = RetryPolicy(attempts=2, base_delay=0, max_delay=0).start("obj")
    err = Retryable(StoreTimeoutError("stalled", path="obj"))
    await attempts.failed(err)
    with pytest.raises(StoreTimeoutError, match="gave up after 2 tries") as info:
        await attempts.failed(err)
    assert info.value.path == "obj" and not isinstance(info.value, Retryable)


async def test_retry_after_sets_a_floor_on_the_wait() -> None:
    attempts = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001).start("p")
    t0 = time.monotonic()
    await attempts.failed(Retryable(StoreError("x"), retry_after=0.2))
    assert time.monotonic() - t0 >= 0.2 and attempts.last_delay == 0.2


# ---------------------------------------------------------- version tokens ---
def test_http_version_tokens() -> None:
    assert http_version('"abc"', "Mon, 01 Jan 2024 00:00:00 GMT", 10) == '"abc"'
    weak = http_version('W/"abc"', "Mon, 01 Jan 2024 00:00:00 GMT", 10)
    assert weak == 'size=10;lm=Mon, 01 Jan 2024 00:00:00 GMT;etag=W/"abc"'
    assert parse_http_version(weak) == (None, 10, "Mon, 01 Jan 2024 00:00:00 GMT", 'W/"abc"')
    assert parse_http_version('"abc"') == ('"abc"', None, None, None)
    assert http_version(None, None, 7) == "size=7"
    assert http_version(None, None, None) is None


def test_fsspec_version_prefers_content_identity() -> None:
    v = fsspec_version({"size": 5, "ETag": '"e"', "mtime": 1.5, "created": 1.0, "ino": 9})
    assert v == 'size=5;ETag="e";mtime=1.5;ino=9'
    assert fsspec_version({"size": 5, "created": 2}) == "size=5;created=2"


# ------------------------------------------------------------- resolution ---
@pytest.mark.parametrize(("url", "cls", "key"), [
    ("s3://bkt/dir/f.csup", S3Store, "bkt/dir/f.csup"),
    ("s3a://bkt/f.csup", S3Store, "bkt/f.csup"),
    ("gs://bkt/dir/f.csup", GCSStore, "bkt/dir/f.csup"),
    ("gcs://bkt/f.csup", GCSStore, "bkt/f.csup"),
    ("https://h/f.csup?sig=1", HTTPStore, "https://h/f.csup?sig=1"),
    ("http://h/f.csup", HTTPStore, "http://h/f.csup"),
    ("file:///tmp/f.csup", LocalStore, "file:///tmp/f.csup"),
    ("/tmp/f.csup", LocalStore, "/tmp/f.csup"),
    ("memory://bkt/f.csup", FsspecStore, "memory://bkt/f.csup"),
])
def test_store_for_picks_the_store(url: str, cls: type, key: str) -> None:
    store, k = store_for(url)
    assert isinstance(store, cls) and k == key
    assert store.default_profile in ("s3", "gcs", "http", "local")


def test_store_for_rejects_unknown_options_and_schemes() -> None:
    with pytest.raises(CsupError, match=r"unknown option 'acess_key_id'.*access_key_id"):
        store_for("s3://b/k", acess_key_id="x")
    with pytest.raises(CsupError, match="unknown option 'limit' for local files"):
        store_for("/tmp/x.csup", limit=3)
    with pytest.raises(CsupError, match="no store for the nope:// scheme"):
        store_for("nope://x/y")
    with pytest.raises(CsupError, match="bucket/key"):
        store_for("s3://only-a-bucket")
    with pytest.raises(CsupError, match="unknown option 'protocol'"):
        store_for("memory://x/y", protocol="file")


def test_store_for_passes_options() -> None:
    policy = RetryPolicy(attempts=2)
    store, _ = store_for("s3://b/k", endpoint_url="http://127.0.0.1:1", anonymous=True,
                         retry=policy, max_connections=5)
    assert isinstance(store, S3Store)
    assert store.retry == policy and store.limit == 5 and store.path_style
    store, _ = store_for("memory://b/k", storage_options={})
    assert isinstance(store, FsspecStore) and store.default_profile == "local"


def test_opening_per_request_reads_a_store_signature_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A service opens a reader per request: checking options must not re-inspect the class."""
    import inspect

    calls: list[object] = []
    real = inspect.signature

    def counting(obj: object, *a: object, **k: object) -> inspect.Signature:
        calls.append(obj)
        return real(obj, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(inspect, "signature", counting)
    for _ in range(50):
        store, _k = store_for("http://127.0.0.1:1/x.csup", max_connections=4)
        assert store.limit == 4
    with pytest.raises(CsupError, match="unknown option 'limt'"):
        store_for("http://127.0.0.1:1/x.csup", limt=4)
    assert len(calls) <= 1


def test_reprs_hide_credentials() -> None:
    s3 = S3Store(access_key_id="AKIDVISIBLE", secret_access_key="hidden-secret",
                 session_token="hidden-token", endpoint_url="https://u:p@h:9000/?x=1")
    gcs = GCSStore(token="hidden-gcs-token", endpoint="http://127.0.0.1:1")
    http = HTTPStore(headers={"Authorization": "Bearer hidden-bearer"})
    text = repr(s3) + repr(gcs) + repr(http)
    for secret in ("hidden-secret", "hidden-token", "hidden-gcs-token", "hidden-bearer", "u:p@"):
        assert secret not in text


def test_a_store_belongs_to_one_loop_at_a_time(range_server: RangeServer) -> None:
    store = HTTPStore()
    url = range_server.url(range_server.put("loop/obj.bin", b"0123456789"))

    async def use() -> None:
        assert (await store.read_tail(url, 4)).data == b"6789"

    async def close() -> None:
        await store.close()

    async def use_and_close() -> None:
        await use()
        await close()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(use())
        with pytest.raises(StoreError, match="another event loop"):
            asyncio.run(use())
        loop.run_until_complete(close())
    finally:
        loop.close()
    asyncio.run(use_and_close())  # once closed, a store may move to another loop


@pytest.mark.parametrize(("bucket", "key", "options", "expected"), [
    # AWS: virtual-hosted by default, in the bucket's region
    ("logs", "a/b.csup", {"region": "eu-west-3"},
     "https://logs.s3.eu-west-3.amazonaws.com/a/b.csup"),
    ("logs", "a b+c~d%e", {"region": "us-east-1"},
     "https://logs.s3.us-east-1.amazonaws.com/a%20b%2Bc~d%25e"),
    ("logs", "k", {"region": "cn-north-1"}, "https://logs.s3.cn-north-1.amazonaws.com.cn/k"),
    # names that are not one DNS label fall back to path-style
    ("my.dotted.bucket", "k", {"region": "us-west-2"},
     "https://s3.us-west-2.amazonaws.com/my.dotted.bucket/k"),
    ("Upper_Case", "k", {"region": "us-west-2"},
     "https://s3.us-west-2.amazonaws.com/Upper_Case/k"),
    ("logs", "k", {"region": "us-west-2", "path_style": True},
     "https://s3.us-west-2.amazonaws.com/logs/k"),
    # an endpoint: path-style by default, virtual-hosted when asked, base path kept
    ("logs", "k", {"endpoint": "http://127.0.0.1:9000", "path_style": True},
     "http://127.0.0.1:9000/logs/k"),
    ("logs", "k", {"endpoint": "https://minio.example:9000/s3/", "path_style": True},
     "https://minio.example:9000/s3/logs/k"),
    ("logs", "k/x", {"endpoint": "https://r2.example", "path_style": False},
     "https://logs.r2.example/k/x"),
    # the bucket itself, for listing
    ("logs", None, {"region": "eu-west-1"}, "https://logs.s3.eu-west-1.amazonaws.com/"),
    ("logs", None, {"endpoint": "http://127.0.0.1:9", "path_style": True},
     "http://127.0.0.1:9/logs"),
])
def test_s3_object_urls(bucket: str, key: str | None, options: dict[str, object],
                        expected: str) -> None:
    from csup_async.stores.s3 import object_url

    options = {"region": "us-east-1", "endpoint": None, "path_style": False, **options}
    assert object_url(bucket, key, **options) == expected  # type: ignore[arg-type]


async def test_s3_reads_sign_without_building_a_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """Explicit keys and a region: nothing of botocore's session or aiobotocore is needed;
    FIPS/dual-stack settings, ARNs and directory buckets keep the full client."""
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_USE_FIPS_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    store = S3Store(region="us-east-1", access_key_id="AKIDX", secret_access_key="not-shown")
    assert not store.needs_client("logs")
    assert store.needs_client("arn:aws:s3:us-east-1:123:accesspoint/ap")
    assert store.needs_client("data--use1-az4--x-s3")

    def no_chain(*args: object) -> None:
        raise AssertionError("botocore's chain was asked")

    monkeypatch.setattr("csup_async.stores.s3.chain", no_chain)
    await store.resolve_credentials("s3://logs/k")  # the option's keys: no chain, no client
    assert store.credential_source == "the access_key_id option" and not store.client_built
    assert "not-shown" not in repr(store)
    monkeypatch.setenv("AWS_USE_FIPS_ENDPOINT", "true")
    assert S3Store(region="us-east-1", anonymous=True).needs_client("logs")
