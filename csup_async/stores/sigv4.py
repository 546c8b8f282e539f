"""AWS Signature Version 4 for the S3 store's GET, HEAD and list requests.

botocore's ``S3SigV4Auth`` signs the same requests, but importing it brings
``botocore.compat`` with urllib3 and dateutil (about 80 modules, 40-100 ms of
CPU), paid by every process on its first signed request, before any byte of
the file can move.  The signature itself is a few SHA-256 hashes and HMACs
(the algorithm is AWS's published one); :mod:`hashlib` and :mod:`hmac` are
already loaded by then.  This module produces the headers botocore would add
for an S3 request with an empty body -- ``X-Amz-Date``, ``X-Amz-Content-SHA256``
(the empty body's hash, as botocore sends it for bodiless requests),
``X-Amz-Security-Token`` and ``Authorization`` -- and the tests hold it to
botocore's signatures for arbitrary keys, headers, queries and times.

Scope of use: bodiless requests only (the store's writes go through
aiobotocore's client, which signs its own).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["EMPTY_SHA256", "SigV4Signer", "utc_timestamp"]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_ALGORITHM = "AWS4-HMAC-SHA256"
# headers botocore leaves unsigned (a proxy or the HTTP client may change them)
_UNSIGNED = frozenset({"baggage", "connection", "expect", "keep-alive", "proxy-authenticate",
                       "proxy-authorization", "te", "traceparent", "tracestate", "trailer",
                       "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def utc_timestamp() -> str:
    """Now, as SigV4 writes it (``YYYYMMDDTHHMMSSZ``, UTC)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def _host(url_netloc: str, scheme: str, port: int | None, hostname: str) -> str:
    """The ``host`` header value: the netloc without a default port (as botocore signs it
    and as aiohttp sends it)."""
    if port is not None and _DEFAULT_PORTS.get(scheme) == port:
        return hostname if ":" not in hostname else f"[{hostname}]"
    return url_netloc.rpartition("@")[2]


def _canonical_query(query: str) -> str:
    """The query's ``key=value`` pairs sorted (the store sends them already escaped)."""
    if not query:
        return ""
    pairs = []
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        pairs.append((key, value))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


class SigV4Signer:
    """Signs requests for one set of keys, one region and one service.

    The derived signing key is kept per day, so a request costs two hashes
    and one HMAC beyond the canonical strings.
    """

    __slots__ = ("_access_key", "_day", "_key", "_region", "_secret", "_service", "_token")

    def __init__(self, access_key: str, secret_key: str, token: str | None, region: str,
                 service: str = "s3") -> None:
        self._access_key = access_key
        self._secret = secret_key
        self._token = token
        self._region = region
        self._service = service
        self._day = ""
        self._key = b""

    def __repr__(self) -> str:  # never the keys
        return f"SigV4Signer(region={self._region!r}, service={self._service!r})"

    def _signing_key(self, day: str) -> bytes:
        if day != self._day:
            k = _hmac(("AWS4" + self._secret).encode("utf-8"), day)
            k = _hmac(k, self._region)
            k = _hmac(k, self._service)
            self._key, self._day = _hmac(k, "aws4_request"), day
        return self._key

    def sign(self, method: str, url: str, headers: Mapping[str, str],
             timestamp: str | None = None) -> dict[str, str]:
        """``headers`` plus the signature's headers, for a bodiless request to ``url``.

        ``url`` must be escaped as it will be sent (its path is signed as is,
        as S3 wants: no normalisation).  ``timestamp``: ``YYYYMMDDTHHMMSSZ``
        (default: now, UTC).
        """
        if timestamp is None:
            timestamp = utc_timestamp()
        day = timestamp[:8]
        out = {k: v for k, v in headers.items()
               if k.lower() not in ("authorization", "x-amz-date", "date",
                                    "x-amz-content-sha256", "x-amz-security-token")}
        out["X-Amz-Date"] = timestamp
        if self._token:
            out["X-Amz-Security-Token"] = self._token
        out["X-Amz-Content-SHA256"] = EMPTY_SHA256
        parts = urlsplit(url)
        signed: dict[str, list[str]] = {}
        for name, value in out.items():
            low = name.lower()
            if low not in _UNSIGNED:
                signed.setdefault(low, []).append(" ".join(str(value).split()))
        if "host" not in signed:
            signed["host"] = [_host(parts.netloc, parts.scheme, parts.port,
                                    parts.hostname or "")]
        names = sorted(signed)
        canonical = "\n".join([
            method.upper(), parts.path or "/", _canonical_query(parts.query),
            "".join(f"{n}:{','.join(signed[n])}\n" for n in names),
            ";".join(names), EMPTY_SHA256])
        scope = f"{day}/{self._region}/{self._service}/aws4_request"
        to_sign = "\n".join([_ALGORITHM, timestamp, scope,
                             hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
        signature = hmac.new(self._signing_key(day), to_sign.encode("utf-8"),
                             hashlib.sha256).hexdigest()
        out["Authorization"] = (f"{_ALGORITHM} Credential={self._access_key}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={signature}")
        return out
