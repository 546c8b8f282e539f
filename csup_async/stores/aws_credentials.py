"""Where the S3 store's credentials and region come from, at the least cost.

Keys in the environment are the first link of botocore's credential chain,
and the chain stops there (unless a profile is named explicitly): reading
them here gives the same keys without importing ``botocore.session``
(about 40 ms, and 0.1 s more with what it pulls in) and without any chance
of a later link -- the instance metadata service above all -- being asked.

Anything else goes to botocore's chain once per process and per
configuration (the ``AWS_*`` environment and the profile), as boto3's
default session would: refreshable credentials (SSO, assumed roles, IMDS)
refresh themselves; static keys read from the shared files stay those the
process first found.  :func:`forget` drops what is kept.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ..model.errors import AccessDeniedError


@dataclass(frozen=True, slots=True)
class StaticCredentials:
    """Keys that never change (given as options or found in the environment).

    Shaped like botocore's credentials where the S3 store uses them:
    ``get_frozen_credentials()`` is the keys themselves.
    """

    access_key: str
    secret_key: str
    token: str | None = None
    method: str = "static"

    def __repr__(self) -> str:  # never the keys
        return f"StaticCredentials(method={self.method!r})"

    def get_frozen_credentials(self) -> StaticCredentials:
        return self

__all__ = ["chain", "env_credentials", "forget"]

_TOKEN_VARS = ("AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN")  # botocore's order
_cache: dict[Hashable, tuple[str | None, Any]] = {}
_lock = threading.Lock()


def env_credentials() -> StaticCredentials | None:
    """The keys botocore's environment provider would return, if they are static.

    None when there are none, when only one of the pair is set (botocore
    reports that as an error: its chain says so), or when
    ``AWS_CREDENTIAL_EXPIRATION`` makes them refreshable (botocore re-reads them).
    """
    env = os.environ
    key_id, secret = env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")
    if not key_id or not secret or env.get("AWS_CREDENTIAL_EXPIRATION"):
        return None
    token = next((env[v] for v in _TOKEN_VARS if env.get(v)), None)
    return StaticCredentials(key_id, secret, token, "env")


def chain(profile: str | None, want_credentials: bool, path: str) -> tuple[str | None, Any]:
    """The configured region and (if wanted) the chain's credentials, None if it found none."""
    ident = (profile, want_credentials,
             tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))
    with _lock:
        hit = _cache.get(ident)
    if hit is not None:
        return hit
    import botocore.exceptions
    import botocore.session

    try:
        session = botocore.session.Session(profile=profile)
        region = session.get_config_variable("region")
        creds = session.get_credentials() if want_credentials else None
    except botocore.exceptions.BotoCoreError as e:
        from ._aio import describe

        raise AccessDeniedError(f"cannot load the AWS configuration: {describe(e)}",
                                path=path) from None
    if want_credentials and creds is None:
        return region, None  # not kept: credentials may appear (a login) before the next try
    with _lock:
        if len(_cache) >= 16:
            _cache.clear()
        _cache[ident] = (region, creds)
    return region, creds


def forget() -> None:
    """Drop the regions and credentials kept from botocore's chain."""
    with _lock:
        _cache.clear()
