"""S3 requester-pays buckets, and refusals that name the credential source.

moto accepts a bucket's requester-pays setting but neither enforces it nor
reports it back (moto 5.2), so the
header is checked on the wire: every request goes through the recording proxy
(tests/support/fault_proxy.py) in front of moto's server.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import pytest

import csup_async
from csup_async import AccessDeniedError
from csup_async.stores import S3Store
from tests.support.fault_proxy import Fault, FaultProxy

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = [{"id": i, "name": f"n{i}"} for i in range(2000)]


def _csup(rows: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    csup_async.write(out, rows, target="csup-async")  # at import: no fixture yet
    return out.getvalue()


DATA = _csup(ROWS)


@pytest.fixture
def proxy(moto_s3: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(moto_s3.endpoint.rsplit(":", 1)[1])).start()
    yield p
    p.stop()


@pytest.fixture
def payer_bucket(moto_s3: Any) -> str:
    client = moto_s3.client
    bucket = "csup-requester-pays"
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=bucket)
    client.put_bucket_request_payment(Bucket=bucket,
                                      RequestPaymentConfiguration={"Payer": "Requester"})
    for i in range(2):
        client.put_object(Bucket=bucket, Key=f"d/part{i}.csup", Body=DATA)
    return bucket


def _options(moto_s3: Any, proxy: FaultProxy, **extra: Any) -> dict[str, Any]:
    return {**moto_s3.store_options(), "endpoint_url": proxy.endpoint, **extra}


async def test_request_payer_is_sent_on_every_request(moto_s3: Any, proxy: FaultProxy,
                                                      payer_bucket: str) -> None:
    opts = _options(moto_s3, proxy, request_payer=True, profile="s3")
    async with csup_async.open(f"s3://{payer_bucket}/d/part0.csup",
                               concurrency=4, **opts) as r:
        res = await r.scan(["id"])
    assert res.column("id").to_pylist() == list(range(2000))
    async with csup_async.open_dataset(f"s3://{payer_bucket}/d/", **opts) as ds:
        assert (await ds.scan(["name"])).num_rows == 4000
    async with S3Store(**_options(moto_s3, proxy, request_payer=True)) as store:
        assert (await store.info(f"{payer_bucket}/d/part1.csup")).size == len(DATA)
    seen = proxy.requests()
    assert any(q.kind == "tail" for q in seen)  # the tail read too
    assert any("list-type=2" in q.target for q in seen)  # the listing too
    assert any(q.method == "HEAD" for q in seen)
    missing = [(q.method, q.target, q.kind) for q in seen
               if q.headers.get("x-amz-request-payer") != "requester"]
    assert not missing, missing


async def test_without_request_payer_no_header_is_sent(moto_s3: Any, proxy: FaultProxy,
                                                       payer_bucket: str) -> None:
    async with csup_async.open(f"s3://{payer_bucket}/d/part0.csup",
                               **_options(moto_s3, proxy)) as r:
        await r.scan(["id"])
    assert proxy.requests() and not any("x-amz-request-payer" in q.headers
                                        for q in proxy.requests())


async def test_access_denied_names_the_credential_source(moto_s3: Any, proxy: FaultProxy,
                                                         payer_bucket: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    o = moto_s3.store_options()
    key = f"s3://{payer_bucket}/d/part0.csup"
    proxy.inject(Fault.error(403))
    with pytest.raises(AccessDeniedError) as info:
        async with csup_async.open(key, **_options(moto_s3, proxy)):
            pass
    assert "credentials: the access_key_id option" in str(info.value)
    # from the environment: read there, as the first link of botocore's chain reads them
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", o["access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", o["secret_access_key"])
    proxy.inject(Fault.error(403))
    with pytest.raises(AccessDeniedError) as info:
        async with csup_async.open(key, endpoint_url=proxy.endpoint, region=o["region"],
                                   request_payer=True):
            pass
    msg = str(info.value)
    assert "credentials: the environment (AWS_ACCESS_KEY_ID); request_payer" in msg
    assert o["secret_access_key"] not in msg and o["access_key_id"] not in msg


def test_the_cli_sends_request_payer(moto_s3: Any, proxy: FaultProxy, payer_bucket: str,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capfd: pytest.CaptureFixture[str]) -> None:
    from csup_async import cli

    o = moto_s3.store_options()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", o["access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", o["secret_access_key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", o["region"])
    code = cli.main(["scan", f"s3://{payer_bucket}/d/part0.csup", "--endpoint-url",
                     proxy.endpoint, "--request-payer", "--format", "json", "-c", "id"])
    out = capfd.readouterr().out
    assert code == 0 and len(out.splitlines()) == 2000
    assert proxy.requests() and all(q.headers.get("x-amz-request-payer") == "requester"
                                    for q in proxy.requests())
