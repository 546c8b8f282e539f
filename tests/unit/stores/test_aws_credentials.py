"""Environment credentials read without botocore's session, held to botocore's.

A cold S3 read with keys in the environment never builds botocore's session
(its import and chain cost a cold process most of its time): the keys must be
the ones botocore's environment provider returns, or left to its chain, and the
chain is asked once per configuration.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from botocore.credentials import EnvProvider
from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.stores import aws_credentials
from tests.support.servers import RangeServer

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
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          range_server: RangeServer) -> None:
    """Keys from a shared credentials file: the second store reuses what the first found;
    another configuration (a different file) is asked again."""
    from csup_async.stores import S3Store

    range_server.put("b/k", b"CSUP")
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
        store = S3Store(endpoint_url=range_server.endpoint)
        await store.read_tail("s3://b/k", 4)  # signed with the keys the store resolved
        signed = range_server.seen("b/k", kind=None)[-1].headers["Authorization"]
        seen.append((store.default_region, re.search(r"Credential=(\w+)/", signed)[1],
                     store.credential_source))
        await store.close()
    assert seen == [("eu-west-3", "AKID0", "botocore's chain (shared-credentials-file)"),
                    ("eu-west-3", "AKID0", "botocore's chain (shared-credentials-file)"),
                    ("eu-west-3", "AKID1", "botocore's chain (shared-credentials-file)")]
    assert calls[0][1] is calls[1][1] and calls[2][1] is not calls[0][1]
    aws_credentials.forget()
