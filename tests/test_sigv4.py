"""The S3 store's own SigV4 signer and environment credentials, held to botocore's.

``csup_async.stores.sigv4`` signs without importing botocore (issue 13: a cheap
first S3 request); what it sends must be exactly what botocore's
``S3SigV4Auth`` sends for the same request and clock, for any key, query,
header value, endpoint, region and session token.  Environment credentials
must be the ones botocore's environment provider returns, or left to its chain.
"""

from __future__ import annotations

import datetime
from typing import Any

import botocore.auth
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, EnvProvider
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.stores import aws_credentials, sigv4
from csup_async.stores.s3 import _query, object_url

_printable = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)
_header_values = st.lists(st.sampled_from([" ", "\t", "  "]) | _printable,
                          max_size=4).map("".join)
_keys = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
_buckets = st.sampled_from(["bkt", "my.dotted.bucket", "UPPER", "a--b", "x" * 63, "b_1"])
_endpoints = st.sampled_from([None, "http://127.0.0.1:9000", "http://[::1]:8080/base",
                              "https://minio.example:443", "http://Host.Example"])
_regions = st.sampled_from(["us-east-1", "eu-west-3", "cn-north-1", "ap-south-2"])
_times = st.datetimes(min_value=datetime.datetime(2000, 1, 1),
                      max_value=datetime.datetime(2099, 12, 31))


def _botocore_headers(method: str, url: str, headers: dict[str, str], creds: Credentials,
                      region: str, when: datetime.datetime,
                      monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: when)
    request = AWSRequest(method, url, headers=dict(headers))
    botocore.auth.S3SigV4Auth(creds.get_frozen_credentials(), "s3", region).add_auth(request)
    return dict(request.headers.items())


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from(["GET", "HEAD"]), bucket=_buckets, key=st.none() | _keys,
       endpoint=_endpoints, path_style=st.booleans(), region=_regions,
       query=st.dictionaries(st.sampled_from(["prefix", "continuation-token", "list-type",
                                              "encoding-type"]), _keys, max_size=3),
       headers=st.dictionaries(st.sampled_from(["Range", "If-Match", "x-amz-request-payer"]),
                               _header_values, max_size=3),
       access=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1,
                      max_size=20),
       secret=_keys, token=st.none() | _keys, when=_times)
def test_signatures_equal_botocores(method: str, bucket: str, key: str | None,
                                    endpoint: str | None, path_style: bool, region: str,
                                    query: dict[str, str], headers: dict[str, str],
                                    access: str, secret: str, token: str | None,
                                    when: datetime.datetime) -> None:
    url = object_url(bucket, key, region=region, endpoint=endpoint, path_style=path_style,
                     query=_query(query))
    ours = sigv4.sign(method, url, headers, sigv4.StaticCredentials(access, secret, token),
                      region, now=when)
    with pytest.MonkeyPatch.context() as mp:
        theirs = _botocore_headers(method, url, headers, Credentials(access, secret, token),
                                   region, when, mp)
    assert ours == theirs


def test_the_clock_is_utc_now() -> None:
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    signed = sigv4.sign("GET", "http://127.0.0.1:1/b/k", {},
                        sigv4.StaticCredentials("AKID", "s"), "us-east-1")
    stamp = datetime.datetime.strptime(signed["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
    assert before <= stamp <= before + datetime.timedelta(seconds=60)
    shown = repr(sigv4.StaticCredentials("AKID-shown", "secret-shown", "token-shown"))
    assert "shown" not in shown


_ENV_NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
              "AWS_SECURITY_TOKEN", "AWS_CREDENTIAL_EXPIRATION")


@settings(max_examples=200, deadline=None)
@given(env=st.fixed_dictionaries({}, optional={
    n: st.sampled_from(["", "v1", "v2"]) if n != "AWS_CREDENTIAL_EXPIRATION"
    else st.sampled_from(["", "2099-01-01T00:00:00Z"]) for n in _ENV_NAMES}))
def test_environment_credentials_are_botocores(env: dict[str, str]) -> None:
    """Whenever the keys are read here, botocore's environment provider returns the same
    keys, static; otherwise (none, half a pair, an expiry) botocore's chain decides."""
    with pytest.MonkeyPatch.context() as mp:
        for name in _ENV_NAMES:
            mp.delenv(name, raising=False)
        for name, value in env.items():
            mp.setenv(name, value)
        ours = aws_credentials.env_credentials()
        try:
            theirs: Any = EnvProvider().load()
        except Exception:  # half a pair: botocore's error, reported by its chain
            theirs = "error"
    if ours is None:
        assert theirs is None or theirs == "error" or hasattr(theirs, "refresh_needed")
        return
    assert theirs not in (None, "error") and not hasattr(theirs, "refresh_needed")
    frozen = theirs.get_frozen_credentials()
    assert (ours.access_key, ours.secret_key, ours.token) == (frozen.access_key,
                                                             frozen.secret_key, frozen.token)


async def test_the_chain_is_asked_once_per_configuration(tmp_path: Any,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Keys from a shared credentials file: the second store reuses what the first found;
    another configuration (a different file) is asked again."""
    from csup_async.stores import S3Store

    for name in (*_ENV_NAMES, "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never off loopback
    files = []
    for i in range(2):
        f = tmp_path / f"credentials{i}"
        f.write_text(f"[default]\naws_access_key_id = AKID{i}\n"
                     f"aws_secret_access_key = secret{i}\n")
        files.append(f)
    (tmp_path / "config").write_text("[default]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    aws_credentials.forget()
    calls = []
    real = aws_credentials.chain

    def counted(*args: Any) -> Any:
        got = real(*args)
        calls.append(got)
        return got

    monkeypatch.setattr("csup_async.stores.s3.chain", counted)
    seen = []
    for f in (files[0], files[0], files[1]):
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(f))
        store = S3Store(endpoint_url="http://127.0.0.1:1")
        await store._prepare("s3://b/k")
        seen.append((store._default_region, store._creds.get_frozen_credentials().access_key,
                     store._credential_source))
        await store.close()
    assert seen == [("eu-west-3", "AKID0", "botocore's chain (shared-credentials-file)"),
                    ("eu-west-3", "AKID0", "botocore's chain (shared-credentials-file)"),
                    ("eu-west-3", "AKID1", "botocore's chain (shared-credentials-file)")]
    assert calls[0][1] is calls[1][1] and calls[2][1] is not calls[0][1]
    aws_credentials.forget()
