"""The S3 store's own signed requests: region redirects, listing, errors.

A small aiohttp server on 127.0.0.1 plays a bucket that lives in another
region (it answers 301 with ``x-amz-bucket-region`` unless the request was
signed for that region, as S3 does); moto checks listing with awkward keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bench.net import HOST
from csup_async.model.errors import AccessDeniedError, NotFoundError, StoreError
from csup_async.stores import RetryPolicy, S3Store
from tests.support.servers import MotoS3

DATA = os.urandom(5000)
QUICK = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02, total_timeout=5)
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([a-z0-9-]+)/s3/aws4_request")


class RegionBucket:
    """Requests to /far/* must be signed for eu-west-2; everything else is us-east-1."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []  # method, path, signed region
        self.redirect_header = True

    async def handle(self, request: Any) -> Any:
        from aiohttp import web

        m = _SCOPE.search(request.headers.get("Authorization", ""))
        region = m.group(1) if m else None
        self.seen.append((request.method, request.path, region))
        home = "eu-west-2" if request.path.startswith("/far/") else "us-east-1"
        if region != home:
            headers = {"x-amz-bucket-region": home} if self.redirect_header else {}
            body = ("<Error><Code>PermanentRedirect</Code><Message>The bucket you are "
                    "attempting to access must be addressed using the specified "
                    "endpoint.</Message></Error>")
            return web.Response(status=301, headers=headers,
                                body=b"" if request.method == "HEAD" else body.encode())
        if request.path.endswith("/denied.bin"):
            return web.Response(status=403, body=b"<Error><Code>AccessDenied</Code></Error>")
        if request.path.endswith("/missing.bin"):
            return web.Response(status=404, body=b"<Error><Code>NoSuchKey</Code></Error>")
        headers = {"ETag": '"e1"'}
        if request.method == "HEAD":
            return web.Response(status=200, headers={**headers,
                                                     "Content-Length": str(len(DATA))})
        rng = request.headers.get("Range", "")
        first, _, last = rng.removeprefix("bytes=").partition("-")
        start = len(DATA) - int(last) if not first else int(first)
        end = len(DATA) - 1 if not first else int(last)
        headers["Content-Range"] = f"bytes {start}-{end}/{len(DATA)}"
        return web.Response(status=206, body=DATA[start:end + 1], headers=headers)


@pytest.fixture
async def region_server() -> AsyncIterator[tuple[RegionBucket, str]]:
    from aiohttp import web

    bucket = RegionBucket()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", bucket.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, HOST, 0).start()
    yield bucket, f"http://{HOST}:{runner.addresses[0][1]}"
    await runner.cleanup()


def _store(endpoint: str, **options: Any) -> S3Store:
    return S3Store(endpoint_url=endpoint, region="us-east-1", access_key_id="AKIDREGION",
                   secret_access_key="region-secret", retry=QUICK, **options)


async def test_a_bucket_in_another_region_is_followed_once_and_remembered(
        region_server: tuple[RegionBucket, str]) -> None:
    server, endpoint = region_server
    async with _store(endpoint) as store:
        tail = await store.read_tail("far/obj.bin", 100)
        assert tail.data == DATA[-100:]
        assert [r for _, _, r in server.seen] == ["us-east-1", "eu-west-2"]
        assert await store.read_range("far/obj.bin", 10, 20, tail.info.version) == DATA[10:30]
        assert (await store.info("far/obj.bin")).size == len(DATA)  # HEAD, same region
        assert [r for _, _, r in server.seen[2:]] == ["eu-west-2", "eu-west-2"]
        assert server.seen[3][0] == "HEAD"
        # another bucket of the same store keeps the default region
        assert (await store.read_tail("near/obj.bin", 10)).data == DATA[-10:]
        assert server.seen[-1][2] == "us-east-1"


async def test_redirect_without_a_region_and_error_statuses_are_typed(
        region_server: tuple[RegionBucket, str]) -> None:
    server, endpoint = region_server
    server.redirect_header = False
    async with _store(endpoint) as store:
        with pytest.raises(StoreError, match=r"HTTP 301.*region"):
            await store.read_tail("far/obj.bin", 100)
        with pytest.raises(AccessDeniedError):
            await store.read_tail("near/denied.bin", 100)
        with pytest.raises(NotFoundError) as info:
            await store.info("near/missing.bin")
        assert info.value.path == "s3://near/missing.bin"
        assert "region-secret" not in str(info.value)


async def test_listing_signed_with_awkward_keys(moto_s3: MotoS3) -> None:
    names = ["list/a b.csup", "list/c+d.csup", "list/é~.csup", "list/sub/", "list/sub/x.csup"]
    for n in names:
        moto_s3.put(n, b"x")
    async with S3Store(**moto_s3.store_options()) as store:
        got = await store.list(f"s3://{moto_s3.BUCKET}/list/")
        assert not store.client_built  # signed ListObjectsV2, no client
    assert got == sorted(f"s3://{moto_s3.BUCKET}/{n}" for n in names if not n.endswith("/"))


async def test_listing_follows_continuation_tokens(moto_s3: MotoS3,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import csup_async.stores.s3 as s3mod

    for i in range(5):
        moto_s3.put(f"pages/{i}.bin", b"x")
    seen: list[str] = []
    real = s3mod.canonical_query

    def small_pages(params: dict[str, str]) -> str:
        seen.append(params.get("continuation-token", ""))
        return real({**params, "max-keys": "2"})

    monkeypatch.setattr(s3mod, "canonical_query", small_pages)
    async with S3Store(**moto_s3.store_options()) as store:
        got = await store.list(f"s3://{moto_s3.BUCKET}/pages/")
    assert got == [f"s3://{moto_s3.BUCKET}/pages/{i}.bin" for i in range(5)]
    assert len(seen) == 3 and seen[0] == "" and all(seen[1:])
