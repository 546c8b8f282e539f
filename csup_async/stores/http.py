"""Any HTTP(S) server that answers range requests: nginx, a CDN, a signed URL.

The key is the full URL.  The version is the strong ETag when the server sends
one (reads are then pinned with ``If-Match``: a replaced object gives 412).  A
weak ETag cannot be used with If-Match (RFC 9110 compares strongly), so then,
and when there is no ETag at all, the version records the size, Last-Modified
and weak ETag, sends ``If-Unmodified-Since``, and every response is compared
with it.  ``info`` is a one-byte GET rather than a HEAD: a signed URL is signed
for one method, and a HEAD would be refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..model.errors import CsupError
from ..model.redact import redact_url
from ._aio import AiohttpStore, to_url
from ._ranged import DEFAULT_MIN_THROUGHPUT, Reply
from .base import CHUNK_SIZE, ObjectInfo
from .retry import DEFAULT_RETRY, RetryPolicy

__all__ = ["HTTPStore", "http_version", "parse_http_version"]

_COMPOSITE = re.compile(r"size=(\d+)(?:;lm=([^;]*))?(?:;etag=(.*))?$", re.DOTALL)


def http_version(etag: str | None, last_modified: str | None, size: int | None) -> str | None:
    """The version token for a response: a strong ETag, else ``size=N;lm=...;etag=W/...``."""
    if etag and not etag.startswith("W/"):
        return etag
    if size is None:
        return None
    token = f"size={size}"
    if last_modified:
        token += f";lm={last_modified}"
    if etag:
        token += f";etag={etag}"
    return token


def parse_http_version(token: str) -> tuple[str | None, int | None, str | None, str | None]:
    """``(strong etag, size, last-modified, weak etag)`` of a version token."""
    m = _COMPOSITE.match(token)
    if m is None:
        return token, None, None, None
    return None, int(m.group(1)), m.group(2), m.group(3)


class HTTPStore(AiohttpStore):
    """Range reads from plain HTTP(S) URLs.

    Options: ``headers`` (sent with every request, e.g. an Authorization; never
    shown), ``limit`` (connections, 64), ``connect_timeout`` (10 s),
    ``read_timeout`` (30 s of silence), ``retry`` (a RetryPolicy),
    ``verify_ssl`` (True; False only for tests), ``chunk_size``, ``trust_env``
    (proxies and .netrc from the environment, off by default).
    """

    name = "http"
    default_profile = "http"

    def __init__(self, *, headers: Mapping[str, str] | None = None, limit: int = 64,
                 connect_timeout: float = 10.0, read_timeout: float = 30.0,
                 retry: RetryPolicy = DEFAULT_RETRY, verify_ssl: bool = True,
                 chunk_size: int = CHUNK_SIZE, trust_env: bool = False,
                 timeout: float | None = None,
                 min_throughput: float = DEFAULT_MIN_THROUGHPUT) -> None:
        super().__init__(limit=limit, connect_timeout=connect_timeout,
                         read_timeout=read_timeout, retry=retry, verify_ssl=verify_ssl,
                         chunk_size=chunk_size, trust_env=trust_env, timeout=timeout,
                         min_throughput=min_throughput)
        if headers is not None and not isinstance(headers, Mapping):
            raise CsupError("headers must be a mapping of header names to values")
        self._headers = dict(headers or {})

    def __repr__(self) -> str:
        hidden = f", headers=<{len(self._headers)} hidden>" if self._headers else ""
        return f"HTTPStore(limit={self.limit}{hidden})"

    def _display(self, key: str) -> str:
        return redact_url(key)

    async def _open(self, key: str, range_: str | None, pin: str | None) -> Reply:
        path = self._display(key)
        headers = {"Accept-Encoding": "identity", **self._headers}
        if range_ is not None:
            headers["Range"] = range_
        if pin is not None:
            strong, _, last_modified, _ = parse_http_version(pin)
            if strong is not None:
                headers["If-Match"] = strong
            elif last_modified:
                headers["If-Unmodified-Since"] = last_modified
        resp = await self._get(to_url(key), headers, path)
        return self._reply(resp, path)

    def _version_of(self, reply: Reply, total: int | None) -> str | None:
        return http_version(reply.header("etag"), reply.header("last-modified"), total)

    def _pin_matches(self, pin: str, reply: Reply, total: int | None) -> bool | None:
        strong, size, last_modified, weak = parse_http_version(pin)
        etag = reply.header("etag")
        if strong is not None:
            return None if etag is None else etag == strong
        if size is not None and total is not None and size != total:
            return False
        lm = reply.header("last-modified")
        if (last_modified and lm and lm != last_modified) or (weak and etag and etag != weak):
            return False
        if (last_modified and not lm) or (weak and not etag):
            return None  # a validator the pin holds is missing: check another way
        return True

    def _pinned_size(self, pin: str) -> int | None:
        return parse_http_version(pin)[1]

    async def _info_once(self, key: str) -> ObjectInfo:
        return (await self._tail_once(key, 1, self._display(key))).info

    async def version_lookup(self, key: str) -> ObjectInfo:
        # A one-byte GET (see the module docstring); its version, if it names none
        # either, is the size-and-dates token, which never equals a strong pin.
        return await self._info_once(key)
