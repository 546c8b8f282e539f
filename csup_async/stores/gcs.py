"""Google Cloud Storage over its JSON API, with aiohttp.

Data comes from the media download (``/download/storage/v1/b/B/o/NAME?alt=media``)
with a ``Range`` header.  The version is the object's *generation*: GCS names it
in the ``x-goog-generation`` response header, so the tail read costs one
request, and later reads send ``ifGenerationMatch`` (a replaced object gives
412).  The tail read stays a single suffix request rather than a metadata
lookup followed by ``bytes=a-b``: GCS honours suffix ranges, and a server that
does not (the emulator answers 200 with the whole object) is still handled by
the shared code, at the price of a larger body.

Servers that name no generation on data responses (gcp-storage-emulator, and
it also ignores ``ifGenerationMatch``) are checked with a metadata request
(``/storage/v1/b/B/o/NAME``) after each data response; a ranged read then
holds its bytes until that check passes.  The remaining gap, only on such
servers: a tail read whose object is replaced by one *of the same size* in the
instant between its two requests.

Credentials, the first that applies: ``anonymous=True`` (none); ``token`` (a
string, or a function returning one, sync or async, called per request so it
can refresh); with ``STORAGE_EMULATOR_HOST`` set (``host:port`` or a URL, and
no ``endpoint`` given) everything goes to that emulator over plain HTTP,
anonymously; the ``GOOGLE_OAUTH_ACCESS_TOKEN`` environment variable;
Application Default Credentials (:mod:`.gcs_auth`: a key file named by
``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's application-default login, the
metadata server), found on first use and refreshed before they expire.  ADC
go only over TLS (Google's endpoint or an ``https://`` one): a plain-HTTP
``endpoint`` gets them only with ``adc=True`` (``adc=False`` never looks for
them).  With nothing found requests go anonymously (public objects), and a
refusal says which sources were tried.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..model.errors import AccessDeniedError, CsupError, StoreError
from ..model.redact import redact_url
from ._aio import AiohttpStore, to_url
from ._ranged import DEFAULT_MIN_THROUGHPUT, Reply
from .base import CHUNK_SIZE, ObjectInfo
from .calibrate import endpoint_of
from .gcs_auth import (
    SOURCES_TRIED,
    DefaultCredentials,
    service_account_credentials,
    shared_credentials,
)
from .retry import DEFAULT_RETRY, RetryPolicy
from .tls import aiohttp  # its CA certificates read on the first TLS connection

if TYPE_CHECKING:
    import yarl

__all__ = ["GCSStore", "TOKEN_ENV"]

TOKEN_ENV = "GOOGLE_OAUTH_ACCESS_TOKEN"
_DEFAULT_ENDPOINT = "https://storage.googleapis.com"

Token = str | Callable[[], str | Awaitable[str]]


def split_gcs_key(key: str) -> tuple[str, str]:
    """``(bucket, object name)`` from ``gs://b/name``, ``gcs://b/name`` or ``b/name``."""
    for prefix in ("gs://", "gcs://"):
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    bucket, _, name = key.partition("/")
    if not bucket or not name:
        raise CsupError("a GCS key is 'bucket/object' (or gs://bucket/object)",
                        path=redact_url(key))
    return bucket, name


class GCSStore(AiohttpStore):
    """Range reads from Google Cloud Storage (or its emulator); one store serves all buckets.

    Options: ``token``, ``anonymous`` (never send a token), ``adc`` (Application
    Default Credentials: None = over TLS only, True = also to a plain-HTTP
    endpoint, False = never), ``endpoint`` (default https://storage.googleapis.com,
    or ``STORAGE_EMULATOR_HOST``), and the HTTP options ``limit``,
    ``connect_timeout``, ``read_timeout``, ``retry``, ``verify_ssl``,
    ``chunk_size``, ``trust_env``.
    """

    name = "gcs"
    default_profile = "gcs"

    def __init__(self, *, token: Token | None = None, anonymous: bool = False,
                 adc: bool | None = None, endpoint: str | None = None, limit: int = 64,
                 connect_timeout: float = 10.0, read_timeout: float = 30.0,
                 retry: RetryPolicy = DEFAULT_RETRY, verify_ssl: bool = True,
                 chunk_size: int = CHUNK_SIZE, trust_env: bool = False,
                 timeout: float | None = None,
                 min_throughput: float = DEFAULT_MIN_THROUGHPUT,
                 service_account: str | None = None,
                 service_account_key: str | None = None) -> None:
        super().__init__(limit=limit, connect_timeout=connect_timeout,
                         read_timeout=read_timeout, retry=retry, verify_ssl=verify_ssl,
                         chunk_size=chunk_size, trust_env=trust_env, timeout=timeout,
                         min_throughput=min_throughput)
        emulator = os.environ.get("STORAGE_EMULATOR_HOST") if endpoint is None else None
        if emulator:
            endpoint = emulator if "://" in emulator else "http://" + emulator
        self.endpoint = (endpoint or _DEFAULT_ENDPOINT).rstrip("/")
        if token is not None and not (isinstance(token, str) or callable(token)):
            raise CsupError("token must be a string or a function returning one")
        if adc not in (None, True, False):
            raise CsupError("adc must be True, False or None")
        self._token: Token | None = None
        self._adc: DefaultCredentials | None = None
        self._tried = ""  # what was looked at, when nothing was found
        if anonymous:
            self._credentials = "anonymous"
        elif service_account is not None or service_account_key is not None:
            self._adc = service_account_credentials(service_account, service_account_key)
            self._credentials = "service-account"
        elif token is not None:
            self._token, self._credentials = token, "the token option"
        elif emulator and not adc:
            self._credentials = "anonymous (STORAGE_EMULATOR_HOST)"
        elif os.environ.get(TOKEN_ENV):
            self._token, self._credentials = os.environ[TOKEN_ENV], TOKEN_ENV
        elif adc or (adc is None and self.endpoint.lower().startswith("https://")):
            self._adc, self._credentials = shared_credentials(), "application-default"
        else:
            self._credentials = "anonymous"
            self._tried = (f"{TOKEN_ENV} is not set, and Application Default Credentials "
                           "go only to https:// endpoints (pass adc=True)")

    def identity(self) -> tuple[Any, ...]:
        """The endpoint, however it was given (option, ``STORAGE_EMULATOR_HOST``, or
        Google's): the same bucket and name at another endpoint is another object."""
        return ("gcs", self.endpoint)

    def __repr__(self) -> str:
        auth = ("token=<hidden>" if self._token is not None else
                repr(self._adc) if self._adc is not None else self._credentials)
        return f"GCSStore(endpoint={redact_url(self.endpoint)!r}, {auth}, limit={self.limit})"

    def endpoint_for(self, key: str) -> str:
        """The JSON API's endpoint: what measurements are kept per."""
        return endpoint_of(self.endpoint)

    def _display(self, key: str) -> str:
        try:
            bucket, name = split_gcs_key(key)
        except CsupError:
            return redact_url(key)
        return f"gs://{bucket}/{name}"

    @property
    def credential_source(self) -> str:
        """Where this store's credentials come from (never the credentials themselves)."""
        adc = self._adc
        if adc is None:
            return self._credentials
        if adc.found is None:
            return "Application Default Credentials (not looked for yet)"
        return adc.source or "anonymous"

    async def _headers(self, path: str) -> dict[str, str]:
        headers = {"Accept-Encoding": "identity"}
        if self._adc is not None:
            headers.update(await self._adc.headers(path))
            return headers
        token = self._token
        if token is not None:
            try:
                value = token if isinstance(token, str) else token()
                if inspect.isawaitable(value):
                    value = await value
            except Exception as e:  # the message might quote the credential: name only
                raise AccessDeniedError(f"the GCS token provider failed ({type(e).__name__})",
                                        path=path) from None
            if not isinstance(value, str) or not value:
                raise AccessDeniedError("the GCS token provider returned no token", path=path)
            headers["Authorization"] = f"Bearer {value}"
        return headers

    def _denied(self, e: AccessDeniedError) -> AccessDeniedError:
        """``e`` saying which credentials were refused, or which sources found none."""
        adc = self._adc
        if adc is not None and adc.found is False:
            why = f"no credentials found (tried {SOURCES_TRIED}); the request went anonymously"
        elif self._tried:
            why = f"no credentials sent: {self._tried}"
        else:
            why = f"credentials: {self.credential_source}"
            if (self._token is not None or adc is not None) and "HTTP 401" in e.message:
                why += "; an expired or revoked token is not retried"
        return AccessDeniedError(f"{e.message} ({why})", path=e.path)

    async def _get(self, url: yarl.URL, headers: Mapping[str, str],
                   path: str) -> aiohttp.ClientResponse:
        try:
            return await super()._get(url, headers, path)
        except AccessDeniedError as e:
            raise self._denied(e) from None

    def _object_path(self, key: str) -> str:
        bucket, name = split_gcs_key(key)
        return f"/b/{quote(bucket, safe='')}/o/{quote(name, safe='')}"

    async def _open(self, key: str, range_: str | None, pin: str | None) -> Reply:
        path = self._display(key)
        url = f"{self.endpoint}/download/storage/v1{self._object_path(key)}?alt=media"
        if pin is not None:
            url += f"&ifGenerationMatch={quote(pin, safe='')}"
        headers = await self._headers(path)
        if range_ is not None:
            headers["Range"] = range_
        resp = await self._get(to_url(url), headers, path)
        return self._reply(resp, path)

    def _version_of(self, reply: Reply, total: int | None) -> str | None:
        return reply.header("x-goog-generation")

    def _pin_matches(self, pin: str, reply: Reply, total: int | None) -> bool | None:
        generation = reply.header("x-goog-generation")
        return None if generation is None else generation == pin

    async def version_lookup(self, key: str) -> ObjectInfo:
        path = self._display(key)
        url = f"{self.endpoint}/storage/v1{self._object_path(key)}?fields=size%2Cgeneration"
        doc = await self._get_json(to_url(url), await self._headers(path), path)
        try:
            return ObjectInfo(int(doc["size"]), str(doc["generation"]))
        except (KeyError, TypeError, ValueError):
            raise StoreError("the object's metadata has no size or generation",
                             path=path) from None

    async def _info_once(self, key: str) -> ObjectInfo:
        return await self.version_lookup(key)

    async def list(self, prefix: str) -> list[str]:
        """``gs://bucket/name`` URLs of every object under ``prefix`` (JSON API pages)."""
        rest = prefix.split("://", 1)[1] if "://" in prefix else prefix
        bucket, _, name = rest.partition("/")
        path = f"gs://{bucket}/{name}"
        out: list[str] = []
        token = ""
        while True:
            url = (f"{self.endpoint}/storage/v1/b/{quote(bucket, safe='')}/o?prefix="
                   f"{quote(name, safe='')}&fields=items(name%2Csize)%2CnextPageToken")
            if token:
                url += f"&pageToken={quote(token, safe='')}"
            doc = await self._get_json(to_url(url), await self._headers(path), path)
            for it in doc.get("items", ()):
                if not it["name"].endswith("/"):
                    out.append(f"gs://{bucket}/{it['name']}")
                    self.listed_sizes.note(out[-1], it.get("size"))  # a decimal string
            token = doc.get("nextPageToken") or ""
            if not token:
                return out

    async def write_object(self, key: str, data: bytes, if_absent: bool, path: str) -> bool:
        """One media upload (``ifGenerationMatch=0`` when ``if_absent``); False when the
        object exists and ``if_absent`` was asked (``stores.put.put_object``)."""
        bucket, name = split_gcs_key(key)
        url = (f"{self.endpoint}/upload/storage/v1/b/{quote(bucket, safe='')}/o?uploadType=media"
               f"&name={quote(name, safe='')}")
        if if_absent:
            url += "&ifGenerationMatch=0"
        headers = await self._headers(path)
        headers["Content-Type"] = "application/octet-stream"
        try:
            async with self._session().post(url, data=data, headers=headers) as resp:
                if resp.status == 412 and if_absent:
                    return False
                if resp.status >= 300:
                    body = (await resp.read())[:300].decode("utf-8", "replace")
                    raise StoreError(f"upload failed with HTTP {resp.status}: {body}", path=path)
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise StoreError(f"upload failed: {type(e).__name__}: {e}", path=path) from None
        return True
