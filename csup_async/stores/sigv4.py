"""AWS Signature Version 4 for S3's bodiless requests (GET, HEAD, ListObjectsV2).

Why not ``botocore.auth``: importing it (it pulls in ``botocore.compat``,
``botocore.utils``, urllib3 and dateutil) costs about 75 ms of CPU, a sixth
of a whole cold one-shot scan, and the ranged reads need only what fits here:
HMAC-SHA256 over a canonical request.  The canonical form is exactly the one
botocore's ``S3SigV4Auth`` builds for a request without a body (the path
taken as sent, the query's pairs sorted as sent, header values trimmed,
``X-Amz-Content-SHA256`` the hash of the empty body), which
``tests/test_sigv4.py`` checks header for header against botocore on random
keys, queries, headers, endpoints and clocks.  Requests that need more
(uploads, S3 Express sessions) go through aiobotocore's client.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

__all__ = ["EMPTY_SHA256", "StaticCredentials", "sign"]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
#: Headers a proxy or the HTTP layer may change: never signed (as botocore).
UNSIGNED_HEADERS = frozenset({
    "baggage", "connection", "expect", "keep-alive", "proxy-authenticate",
    "proxy-authorization", "te", "traceparent", "tracestate", "trailer", "transfer-encoding",
    "upgrade", "user-agent", "x-amzn-trace-id"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Headers the signature sets (a caller's own are dropped, as botocore drops them).
_REPLACED = frozenset({"authorization", "x-amz-date", "x-amz-security-token",
                       "x-amz-content-sha256"})


class Keys(Protocol):
    """What signing needs of a set of credentials (botocore's frozen credentials fit)."""

    access_key: str
    secret_key: str
    token: str | None


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


def utcnow() -> datetime.datetime:
    """The signing clock (a function of its own, so tests can fix it)."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _host(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


def _canonical_query(query: str) -> str:
    if not query:
        return ""
    pairs = [pair.partition("=")[::2] for pair in query.split("&")]
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


_signing_keys: dict[tuple[str, str, str, str], bytes] = {}


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    ident = (secret, day, region, service)
    key = _signing_keys.get(ident)
    if key is None:
        key = hmac.new(f"AWS4{secret}".encode(), day.encode(), hashlib.sha256).digest()
        for part in (region, service, "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        if len(_signing_keys) >= 64:
            _signing_keys.clear()
        _signing_keys[ident] = key
    return key


def sign(method: str, url: str, headers: Mapping[str, str], creds: Keys, region: str,
         service: str = "s3", now: datetime.datetime | None = None) -> dict[str, str]:
    """``headers`` plus the date, token, payload hash and Authorization of a signed,
    bodiless ``method`` request to ``url`` (sent exactly as given: already escaped)."""
    stamp = (now or utcnow()).strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    out: dict[str, str] = {k: v for k, v in headers.items()
                           if k.lower() not in _REPLACED}
    out["X-Amz-Date"] = stamp
    if creds.token:
        out["X-Amz-Security-Token"] = creds.token
    out["X-Amz-Content-SHA256"] = EMPTY_SHA256
    signed: dict[str, list[str]] = {}
    for name, value in out.items():
        lname = name.lower()
        if lname not in UNSIGNED_HEADERS:
            signed.setdefault(lname, []).append(value)
    signed.setdefault("host", [_host(url)])
    names = sorted(signed)
    canonical_headers = "".join(
        f"{n}:{','.join(' '.join(v.split()) for v in signed[n])}\n" for n in names)
    signed_headers = ";".join(names)
    parts = urlsplit(url)
    canonical = "\n".join((method.upper(), parts.path, _canonical_query(parts.query),
                           canonical_headers, signed_headers, EMPTY_SHA256))
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(("AWS4-HMAC-SHA256", stamp, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()))
    signature = hmac.new(_signing_key(creds.secret_key, day, region, service),
                         to_sign.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.access_key}/{scope}, "
                            f"SignedHeaders={signed_headers}, Signature={signature}")
    return out
