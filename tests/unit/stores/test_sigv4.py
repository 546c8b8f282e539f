"""The S3 store's own SigV4 signatures are botocore's, for any request it can make.

botocore's ``S3SigV4Auth`` is the reference: for arbitrary keys (escaped as the
store escapes them), regions, endpoints, query strings, headers, session
tokens and times, the headers :class:`SigV4Signer` adds must be the ones
botocore adds, byte for byte.
"""

from __future__ import annotations

import datetime
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.stores.s3 import canonical_query, object_url
from csup_async.stores.sigv4 import EMPTY_SHA256, SigV4Signer

botocore_auth = pytest.importorskip("botocore.auth")
awsrequest = pytest.importorskip("botocore.awsrequest")
credentials = pytest.importorskip("botocore.credentials")

_SIGNED = ("authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token")

keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
               max_size=40)
regions = st.sampled_from(["us-east-1", "eu-west-3", "ap-southeast-2", "cn-north-1"])
endpoints = st.sampled_from([None, "http://127.0.0.1:9000", "https://minio.example:443",
                             "https://s3.example.com", "http://[::1]:8080/base",
                             "http://localhost:80"])
buckets = st.sampled_from(["bkt", "my-bucket", "dotted.bucket", "UPPER"])
ranges = st.one_of(st.none(), st.integers(1, 10**9).map(lambda n: f"bytes=-{n}"),
                   st.tuples(st.integers(0, 10**9), st.integers(0, 10**6)).map(
                       lambda t: f"bytes={t[0]}-{t[0] + t[1]}"))
values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=20)
times = st.datetimes(min_value=datetime.datetime(2000, 1, 1),
                     max_value=datetime.datetime(2099, 12, 31))
secrets = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1,
                  max_size=40)


def _botocore(method: str, url: str, headers: dict[str, str], creds: tuple[str, str, str | None],
              region: str, when: datetime.datetime, monkeypatch: pytest.MonkeyPatch
              ) -> dict[str, str]:
    monkeypatch.setattr(botocore_auth, "get_current_datetime", lambda *a, **k: when)
    request = awsrequest.AWSRequest(method, url, headers=dict(headers))
    botocore_auth.S3SigV4Auth(credentials.ReadOnlyCredentials(*creds), "s3",
                              region).add_auth(request)
    return dict(request.headers.items())


def _signed(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from(["GET", "HEAD"]), key=keys, bucket=buckets, region=regions,
       endpoint=endpoints, rng=ranges, pin=st.one_of(st.none(), values),
       extra=st.dictionaries(st.sampled_from(["x-amz-request-payer", "User-Agent",
                                              "X-Custom", "Accept"]), values, max_size=3),
       token=st.one_of(st.none(), secrets), secret=secrets, when=times,
       listing=st.one_of(st.none(), st.dictionaries(
           st.sampled_from(["prefix", "continuation-token", "list-type", "encoding-type"]),
           values, max_size=4)))
def test_signatures_match_botocore(method: str, key: str, bucket: str, region: str,
                                   endpoint: str | None, rng: str | None, pin: str | None,
                                   extra: dict[str, str], token: str | None, secret: str,
                                   when: datetime.datetime, listing: dict[str, str] | None
                                   ) -> None:
    url = object_url(bucket, None if listing is not None else key, region=region,
                     endpoint=endpoint, path_style=endpoint is not None,
                     query=canonical_query(listing) if listing else "")
    headers = dict(extra)
    if rng is not None:
        headers["Range"] = rng
    if pin is not None:
        headers["If-Match"] = pin
    creds = ("AKIDEXAMPLE", secret, token)
    with pytest.MonkeyPatch.context() as mp:
        want = _botocore(method, url, headers, creds, region, when, mp)
    got = SigV4Signer(*creds, region).sign(method, url, headers,
                                           when.strftime("%Y%m%dT%H%M%SZ"))
    assert _signed(got) == _signed(want)


def test_known_signature() -> None:
    """AWS's documented example (GET of a range of ``test.txt`` in ``examplebucket``)."""
    signer = SigV4Signer("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                         None, "us-east-1")
    got = signer.sign("GET", "https://examplebucket.s3.amazonaws.com/test.txt",
                      {"Range": "bytes=0-9"}, "20130524T000000Z")
    assert got["X-Amz-Content-SHA256"] == EMPTY_SHA256
    assert got["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


def test_the_signing_key_follows_the_day_and_repr_hides_keys() -> None:
    signer = SigV4Signer("AKID", "secret-do-not-show", "tok-do-not-show", "eu-west-1")
    url = "https://b.s3.eu-west-1.amazonaws.com/" + quote("k", safe="/~")
    one = signer.sign("GET", url, {}, "20260101T235959Z")["Authorization"]
    two = signer.sign("GET", url, {}, "20260102T000000Z")["Authorization"]
    again = signer.sign("GET", url, {}, "20260101T235959Z")["Authorization"]
    assert one == again != two and "/20260102/eu-west-1/" in two
    assert "secret" not in repr(signer) and "tok" not in repr(signer)
