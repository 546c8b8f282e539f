"""Amazon S3 and S3-compatible stores (MinIO, R2, moto, ...): SigV4-signed aiohttp requests.

Building an aiobotocore client costs about 0.2 s of CPU (botocore loads the
S3 service model and endpoint rules) plus its imports, which was the largest
part of a cold one-shot scan.  A reader needs only GET with a Range, HEAD and
ListObjectsV2, so those are built here, signed by :mod:`.sigv4` (the
signature botocore's ``S3SigV4Auth`` makes, header for header, without
importing botocore's signer stack on the first request) and sent through the
store's one aiohttp session.  Credentials are the options', the
environment's (read as botocore's first link reads them) or, for anything
else, botocore's chain (profiles, SSO, web identity, IMDS), resolved once per
process in a worker thread since it may block (:mod:`.aws_credentials`).
aiobotocore's full client is made only for what needs endpoint rules this
module does not write: access-point ARNs, S3 Express directory buckets, FIPS
and dual-stack endpoints.

Addressing: ``endpoint_url`` (or ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``)
defaults to path-style, AWS to virtual-hosted ``https://BUCKET.s3.REGION.amazonaws.com``
(path-style for bucket names that are not DNS labels).  A bucket in another
region answers 301 (or 400) with ``x-amz-bucket-region``: the request is
signed again for that region, and the region is remembered for the bucket.
The version is the ETag; reads are pinned with ``If-Match`` (a replaced
object gives 412).  Every request is built and signed in one place,
:meth:`S3Store._request`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import AsyncGenerator, Mapping
from typing import Any
from urllib.parse import quote, unquote_plus, urlsplit

from ..model.errors import AccessDeniedError, CsupError, StoreError, StoreTimeoutError
from ..model.redact import redact_url
from ._aio import AiohttpStore, describe, error_detail, to_url
from ._ranged import (
    DEFAULT_MIN_THROUGHPUT,
    Reply,
    Unsatisfiable,
    parse_content_range,
    parse_length,
    status_error,
)
from .aws_credentials import StaticCredentials, chain, env_credentials
from .base import CHUNK_SIZE, ObjectInfo
from .calibrate import endpoint_of
from .logmask import install_log_mask
from .retry import DEFAULT_RETRY, Retryable, RetryPolicy
from .sigv4 import SigV4Signer
from .tls import aiohttp  # its CA certificates read on the first TLS connection

__all__ = ["S3Store", "object_url", "split_s3_key"]


_ACCESS_CODES = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                           "ExpiredToken", "InvalidToken", "TokenRefreshRequired",
                           "AllAccessDisabled", "AccountProblem"})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "NotFound", "NoSuchVersion"})
_RETRY_CODES = frozenset({"RequestTimeout", "SlowDown", "InternalError", "ServiceUnavailable",
                          "RequestTimeTooSkewed", "OperationAborted", "Throttling"})


def split_s3_key(key: str) -> tuple[str, str]:
    """``(bucket, key)`` from ``s3://b/key``, ``s3a://b/key`` or ``b/key``."""
    for prefix in ("s3://", "s3a://"):
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    bucket, _, name = key.partition("/")
    if not bucket or not name:
        raise CsupError("an S3 key is 'bucket/key' (or s3://bucket/key)", path=redact_url(key))
    return bucket, name


_REGION = re.compile(r"[a-z0-9][a-z0-9-]{0,40}", re.ASCII)
_DNS_BUCKET = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]", re.ASCII)
_LIST_BODY_LIMIT = 16 << 20
_TRUE = ("1", "true", "yes", "on")


def object_url(bucket: str, key: str | None, *, region: str, endpoint: str | None,
               path_style: bool, query: str = "") -> str:
    """The URL of ``bucket/key`` (``key=None``: the bucket itself, for listing).

    Keys are escaped as botocore escapes them for signing (``/`` and ``~``
    kept), so the URL sent is the URL signed.
    """
    if endpoint:
        parts = urlsplit(endpoint)
        scheme, host, base = parts.scheme, parts.netloc, parts.path.rstrip("/")
    else:
        scheme, base = "https", ""
        host = f"s3.{region}.amazonaws.com" + (".cn" if region.startswith("cn-") else "")
    tail = "" if key is None else quote(key, safe="/~")
    # Virtual-hosted needs a bucket that is one DNS label (dots break TLS wildcards).
    if path_style or not _DNS_BUCKET.fullmatch(bucket) or "--" in bucket:
        path = f"{base}/{quote(bucket, safe='')}" + ("" if key is None else f"/{tail}")
    else:
        host = f"{bucket}.{host}"
        path = f"{base}/{tail}"
    return f"{scheme}://{host}{path}" + (f"?{query}" if query else "")


def canonical_query(params: Mapping[str, str]) -> str:
    """A SigV4 canonical query string (sorted, RFC 3986 escaping): sent as signed."""
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
                    for k, v in sorted(params.items()))


def _env_endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


class S3Store(AiohttpStore):
    """Range reads from S3; one store (one connection pool) serves all buckets.

    Options: ``endpoint_url`` (else ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``
    or AWS), ``region`` (else botocore's configuration, else us-east-1; a
    bucket elsewhere is found by its redirect), ``access_key_id``/
    ``secret_access_key``/``session_token`` (else botocore's chain),
    ``aws_profile``, ``anonymous`` (unsigned requests, for public buckets),
    ``path_style`` (default: path-style when an endpoint URL is set),
    ``request_payer`` (True: this reader pays for requester-pays buckets; sent, signed,
    on every request), ``limit`` (connections, 64), ``connect_timeout`` (10 s), ``read_timeout``
    (30 s of silence), ``timeout`` (whole operation), ``min_throughput``,
    ``retry``, ``verify_ssl`` (True), ``chunk_size``, ``trust_env`` (proxies
    from the environment), ``preconnect`` (connections opened beside a cold
    pool's first tail read, 15: the ``s3`` profile's 16 in all; 0: none).
    """

    name = "s3"
    default_profile = "s3"
    follow_redirects = False  # a signature is for one host; region redirects are ours
    encoding_is_metadata = True  # S3 returns the stored bytes with their stored encoding
    # beside a cold pool's tail read: the s3 profile's 16 connections warm for the data
    default_preconnect = 15

    def __init__(self, *, endpoint_url: str | None = None, region: str | None = None,
                 access_key_id: str | None = None, secret_access_key: str | None = None,
                 session_token: str | None = None, aws_profile: str | None = None,
                 anonymous: bool = False, path_style: bool | None = None, limit: int = 64,
                 connect_timeout: float = 10.0, read_timeout: float = 30.0,
                 retry: RetryPolicy = DEFAULT_RETRY, verify_ssl: bool = True,
                 chunk_size: int = CHUNK_SIZE, trust_env: bool = False,
                 timeout: float | None = None,
                 min_throughput: float = DEFAULT_MIN_THROUGHPUT,
                 request_payer: bool = False, preconnect: int | None = None) -> None:
        super().__init__(limit=limit, connect_timeout=connect_timeout,
                         read_timeout=read_timeout, retry=retry, verify_ssl=verify_ssl,
                         chunk_size=chunk_size, trust_env=trust_env, timeout=timeout,
                         min_throughput=min_throughput, preconnect=preconnect)
        if (access_key_id is None) != (secret_access_key is None):
            raise CsupError("pass both access_key_id and secret_access_key, or neither")
        if region is not None and not _REGION.fullmatch(region):
            raise CsupError(f"not an AWS region name: {region!r}")
        self.endpoint_url = endpoint_url
        self.region = region
        self.anonymous = anonymous
        self.aws_profile = aws_profile
        self.request_payer = bool(request_payer)
        # which credentials a refusal was for (never the credentials themselves)
        self._credential_source = ("anonymous (unsigned)" if anonymous else
                                   "the access_key_id option" if access_key_id is not None
                                   else "botocore's chain (not resolved yet)")
        self._endpoint = endpoint_url or _env_endpoint()
        self.path_style = bool(self._endpoint) if path_style is None else path_style
        self._credentials = (access_key_id, secret_access_key, session_token)
        self._regions: dict[str, str] = {}  # bucket -> region its redirect named
        self._default_region: str | None = region
        self._creds: Any = None  # StaticCredentials, or botocore's (maybe refreshable)
        self._signers: dict[tuple[str, str, str | None, str], SigV4Signer] = {}
        self._prepared = False
        self._prepare_lock: asyncio.Lock | None = None
        #: every request through aiobotocore's full client (its endpoint rules and
        #: signing) instead of the store's own signed requests: on with
        #: ``AWS_USE_FIPS_ENDPOINT``/``AWS_USE_DUALSTACK_ENDPOINT``, and a caller may set
        #: it for a server that the direct requests do not suit
        self.use_client = (os.environ.get("AWS_USE_FIPS_ENDPOINT", "").lower() in _TRUE or
                           os.environ.get("AWS_USE_DUALSTACK_ENDPOINT", "").lower() in _TRUE)
        self._client_cm: Any = None
        self._client_obj: Any = None
        self._client_lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        creds = ("anonymous" if self.anonymous else
                 "explicit" if self._credentials[0] is not None else "default chain")
        endpoint = redact_url(self.endpoint_url) if self.endpoint_url else None
        payer = ", request_payer=True" if self.request_payer else ""
        return (f"S3Store(endpoint_url={endpoint!r}, region={self.region!r}, "
                f"credentials={creds}, path_style={self.path_style}, limit={self.limit}"
                f"{payer})")

    def _display(self, key: str) -> str:
        try:
            bucket, name = split_s3_key(key)
        except CsupError:
            return redact_url(key)
        return f"s3://{bucket}/{name}"

    def endpoint_for(self, key: str) -> str:
        """The endpoint URL, or AWS's regional one: what measurements are kept per."""
        if self._endpoint:
            return endpoint_of(self._endpoint)
        region = self.region or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        return endpoint_of(f"https://s3.{region}.amazonaws.com")

    def identity(self) -> tuple[Any, ...]:
        """The endpoint, however it was given (option, ``AWS_ENDPOINT_URL_S3``,
        ``AWS_ENDPOINT_URL``, or AWS's for the region and partition) and the
        addressing: the same bucket and key at another endpoint is another object."""
        return ("s3", self.endpoint_for(""), self.path_style)

    @property
    def credential_source(self) -> str:
        """Where the credentials in use come from ("the access_key_id option", "botocore's
        chain (shared-credentials-file)", ...), never the credentials themselves: refusals
        name it."""
        return self._credential_source

    @property
    def default_region(self) -> str | None:
        """The region of a bucket whose region is not known otherwise (the ``region``
        option, else the one botocore's configuration names, once resolved)."""
        return self._default_region

    def needs_client(self, bucket: str) -> bool:
        """Whether only aiobotocore's endpoint rules can address ``bucket``."""
        return self.use_client or ":" in bucket or bucket.endswith("--x-s3")

    @property
    def client_built(self) -> bool:
        """Whether aiobotocore's full client has been built (it costs ~100 ms and a
        botocore session): only for :meth:`needs_client`'s buckets or ``use_client``;
        every other request is signed and sent by the store itself."""
        return self._client_obj is not None

    async def resolve_credentials(self, url: str) -> None:
        """Resolve the region and credentials now, as the first request to ``url``
        would: a service can fail fast at start-up (AccessDeniedError when none are
        found) instead of at its first read."""
        await self._prepare(url)

    # -------------------------------------------------------- credentials ---
    async def _prepare(self, path: str) -> None:
        """Resolve the region and credentials once.

        Keys given as options or found in the environment (where botocore's
        chain would stop too) and a region given or in ``AWS_DEFAULT_REGION``
        need nothing of botocore; anything else asks botocore's chain
        (profiles, SSO, web identity, IMDS...) in a worker thread, since it
        may block, and the answer is kept for the process (:mod:`.aws_credentials`).
        """
        if self._prepared:
            return
        if self._prepare_lock is None:
            self._prepare_lock = asyncio.Lock()
        async with self._prepare_lock:
            if self._prepared:
                return
            key_id, secret, token = self._credentials
            creds: Any = None
            if key_id is not None:
                creds = StaticCredentials(key_id, secret, token, "option")
            elif not self.anonymous and self.aws_profile is None:
                creds = env_credentials()
                if creds is not None:
                    self._credential_source = "the environment (AWS_ACCESS_KEY_ID)"
            region = self.region or os.environ.get("AWS_DEFAULT_REGION") or None
            need_creds = creds is None and not self.anonymous
            if need_creds or region is None:
                found, chain_creds = await asyncio.to_thread(self._from_botocore, need_creds,
                                                             path)
                region = region or found
                if need_creds:
                    creds = chain_creds
            self._default_region = region or "us-east-1"
            self._creds = creds
            self._prepared = True

    def _from_botocore(self, want_credentials: bool, path: str) -> tuple[str | None, Any]:
        """The configured region and (if wanted) the credential chain's credentials."""
        region, creds = chain(self.aws_profile, want_credentials, path)
        if want_credentials and creds is None:
            self._credential_source = "none found in botocore's chain"
            raise AccessDeniedError(self._no_credentials_message(), path=path)
        if want_credentials:  # which link of the chain: env, sso, assume-role, iam-role...
            self._credential_source = f"botocore's chain ({getattr(creds, 'method', '?')})"
        return region, creds

    def _no_credentials_message(self) -> str:
        return ("no usable AWS credentials (none in the environment, the shared config "
                "and credentials files, SSO, web identity or instance metadata); pass "
                "anonymous=True for public buckets")

    async def _signer(self, region: str, path: str) -> SigV4Signer:
        """A signer for the credentials now (refreshed first if about to expire)."""
        creds = self._creds
        try:
            if getattr(creds, "refresh_needed", None) is not None and creds.refresh_needed():
                frozen = await asyncio.to_thread(creds.get_frozen_credentials)
            else:
                frozen = creds.get_frozen_credentials()
        except Exception as e:  # a refresh that failed; its message may hold a secret
            raise AccessDeniedError(f"refreshing the AWS credentials failed "
                                    f"({type(e).__name__})", path=path) from None
        if frozen.access_key is None or frozen.secret_key is None:
            raise AccessDeniedError(self._no_credentials_message(), path=path)
        ident = (frozen.access_key, frozen.secret_key, frozen.token, region)
        signer = self._signers.get(ident)
        if signer is None:
            install_log_mask(frozen.secret_key, frozen.token)
            if len(self._signers) > 64:
                self._signers.clear()
            signer = self._signers[ident] = SigV4Signer(frozen.access_key, frozen.secret_key,
                                                        frozen.token, region)
        return signer

    # ----------------------------------------------------------- requests ---
    async def _request(self, method: str, bucket: str, name: str | None,
                       headers: Mapping[str, str], path: str,
                       query: str = "") -> aiohttp.ClientResponse:
        """Build, sign and send one request; follow a region redirect once.

        Every S3 request goes through here: its URL, headers and signature are
        made in this one place.
        """
        await self._prepare(path)
        for _ in range(2):
            region = self._regions.get(bucket) or self._default_region or "us-east-1"
            url = object_url(bucket, name, region=region, endpoint=self._endpoint,
                             path_style=self.path_style, query=query)
            sent = dict(headers)
            if self.request_payer:
                sent["x-amz-request-payer"] = "requester"  # signed with the rest
            if not self.anonymous:
                sent = (await self._signer(region, path)).sign(method, url, sent)
            resp = await self._send(method, to_url(url), sent, path)
            moved = resp.headers.get("x-amz-bucket-region", "")
            if resp.status in (301, 307, 400) and moved != region and _REGION.fullmatch(moved):
                resp.close()
                self._regions[bucket] = moved
                continue
            return resp
        return resp

    async def _failure(self, resp: aiohttp.ClientResponse, path: str) -> StoreError:
        """The typed error of a non-2xx response (its bounded body read), connection closed."""
        try:
            body = b""
            if resp.status >= 400 and resp.request_info.method != "HEAD":
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    body = await resp.content.read(4096)
            return self._status_error(resp, body, path)
        finally:
            resp.close()

    def _status_error(self, resp: aiohttp.ClientResponse, body: bytes, path: str) -> StoreError:
        headers = {k.lower(): v for k, v in resp.headers.items()}
        if 300 <= resp.status < 400:
            where = headers.get("x-amz-bucket-region", "")
            hint = f"; it is in {where}" if _REGION.fullmatch(where) else ""
            return StoreError(f"HTTP {resp.status}: the bucket is not served by this endpoint "
                              f"or region{hint} (pass region=)", path=path)
        return self._response_error(_error_response(resp.status, headers, body), path)

    async def _open(self, key: str, range_: str | None, pin: str | None) -> Reply:
        path = self._display(key)
        bucket, name = split_s3_key(key)
        if self.needs_client(bucket):
            return await self._open_client(key, range_, pin)
        headers: dict[str, str] = {}
        if range_ is not None:
            headers["Range"] = range_
        if pin is not None:
            headers["If-Match"] = pin
        resp = await self._request("GET", bucket, name, headers, path)
        if resp.status not in (200, 206):
            raise await self._failure(resp, path)
        return self._reply(await self._checked(resp, path), path)

    async def _head(self, key: str) -> ObjectInfo:
        path = self._display(key)
        bucket, name = split_s3_key(key)
        if self.needs_client(bucket):
            resp = await self._call("head_object", key)
            return ObjectInfo(int(resp["ContentLength"]), resp.get("ETag"))
        reply = await self._request("HEAD", bucket, name, {}, path)
        if reply.status != 200:
            raise await self._failure(reply, path)
        try:
            size = parse_length(reply.headers.get("Content-Length"))
            if size is None:
                raise StoreError("a HEAD response without a usable Content-Length", path=path)
            return ObjectInfo(size, reply.headers.get("ETag"))
        finally:
            reply.release()

    async def _info_once(self, key: str) -> ObjectInfo:
        return await self._head(key)

    async def version_lookup(self, key: str) -> ObjectInfo:
        return await self._head(key)

    def _version_of(self, reply: Reply, total: int | None) -> str | None:
        return reply.header("etag")

    def _pin_matches(self, pin: str, reply: Reply, total: int | None) -> bool | None:
        etag = reply.header("etag")
        return None if etag is None else etag == pin

    # ------------------------------------------------------------ listing ---
    async def list(self, prefix: str) -> list[str]:
        """``s3://bucket/key`` URLs of every object under ``prefix`` (ListObjectsV2 pages)."""
        bucket, name = split_s3_key(prefix) if "/" in prefix.removeprefix("s3://") else (
            prefix.removeprefix("s3://").rstrip("/"), "")
        path = f"s3://{bucket}/{name}"
        if self.needs_client(bucket):
            return await self._list_client(bucket, name, path)
        out: list[str] = []
        token = ""
        while True:
            params = {"list-type": "2", "prefix": name, "encoding-type": "url"}
            if token:
                params["continuation-token"] = token
            attempts = self.retry.start(path)
            while True:
                try:
                    keys, token = await self._list_page(bucket, canonical_query(params), path)
                    break
                except Retryable as e:
                    await attempts.failed(e)
            for k, size in keys:
                if not k.endswith("/"):
                    out.append(f"s3://{bucket}/{k}")
                    self.listed_sizes.note(out[-1], size)
            if not token:
                return out

    async def _list_page(self, bucket: str, query: str, path: str
                         ) -> tuple[list[tuple[str, str | None]], str]:
        resp = await self._request("GET", bucket, None, {}, path, query)
        if resp.status != 200:
            raise await self._failure(resp, path)
        try:
            body = await resp.content.read(_LIST_BODY_LIMIT + 1)
        except TimeoutError:
            raise Retryable(StoreTimeoutError("the listing stalled", path=path)) from None
        except (aiohttp.ClientError, OSError) as e:
            raise Retryable(StoreError(f"the connection broke mid-body: {describe(e)}",
                                       path=path)) from None
        finally:
            resp.release()
        if len(body) > _LIST_BODY_LIMIT:
            raise StoreError("a listing page longer than 16 MiB was refused", path=path)
        return parse_listing(body, path)

    # ------------------------------------------- aiobotocore (rare cases) ---
    async def _client(self) -> Any:
        if self._client_obj is None:
            if self._client_lock is None:
                self._client_lock = asyncio.Lock()
            async with self._client_lock:
                if self._client_obj is None:
                    cm = self._make_client()
                    self._client_obj = await cm.__aenter__()
                    self._client_cm = cm
        return self._client_obj

    def _make_client(self) -> Any:
        import botocore
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession

        session = AioSession(profile=self.aws_profile)
        region = self.region or session.get_config_variable("region") or "us-east-1"
        config: dict[str, Any] = {
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_pool_connections": self.limit,
            "retries": {"total_max_attempts": 1, "mode": "standard"},  # ours, not botocore's
            "response_checksum_validation": "when_required",
            "request_checksum_calculation": "when_required",
        }
        if self.path_style:
            config["s3"] = {"addressing_style": "path"}
        if self.anonymous:
            config["signature_version"] = botocore.UNSIGNED
        key_id, secret, token = self._credentials
        install_log_mask(secret, token)
        return session.create_client(
            "s3", region_name=region, endpoint_url=self.endpoint_url,
            aws_access_key_id=key_id, aws_secret_access_key=secret, aws_session_token=token,
            verify=self.verify_ssl, config=AioConfig(**config))

    async def close(self) -> None:
        cm, self._client_cm, self._client_obj = self._client_cm, None, None
        self._client_lock = None
        self._prepare_lock = None
        try:
            if cm is not None:
                await cm.__aexit__(None, None, None)
        finally:
            await super().close()

    async def _call(self, op: str, key: str, **params: Any) -> Any:
        path = self._display(key)
        bucket, name = split_s3_key(key)
        if self.request_payer:
            params["RequestPayer"] = "requester"
        try:
            client = await self._client()
            return await getattr(client, op)(Bucket=bucket, Key=name, **params)
        except Exception as e:  # botocore, aiohttp and OS errors, mapped below
            raise self._error(e, path) from None

    async def _open_client(self, key: str, range_: str | None, pin: str | None) -> Reply:
        params: dict[str, Any] = {}
        if range_ is not None:
            params["Range"] = range_
        if pin is not None:
            params["IfMatch"] = pin
        resp = await self._call("get_object", key, **params)
        meta = resp["ResponseMetadata"]
        body = resp["Body"]
        return Reply(int(meta["HTTPStatusCode"]), meta.get("HTTPHeaders") or {},
                     self._client_body(body, self._display(key)), body.close)

    async def _client_body(self, body: Any, path: str) -> AsyncGenerator[bytes, None]:
        try:
            while chunk := await body.read(self.chunk_size):
                yield chunk
        except Exception as e:  # mapped like request errors; CancelledError is not one
            raise self._error(e, path) from None

    async def _list_client(self, bucket: str, name: str, path: str) -> list[str]:
        out: list[str] = []
        try:
            client = await self._client()
            token: str | None = None
            while True:
                params: dict[str, Any] = {"Bucket": bucket, "Prefix": name}
                if self.request_payer:
                    params["RequestPayer"] = "requester"
                if token:
                    params["ContinuationToken"] = token
                page = await client.list_objects_v2(**params)
                for o in page.get("Contents", ()):
                    if not o["Key"].endswith("/"):
                        out.append(f"s3://{bucket}/{o['Key']}")
                        self.listed_sizes.note(out[-1], o.get("Size"))
                token = page.get("NextContinuationToken")
                if not page.get("IsTruncated") or not token:
                    return out
        except CsupError:
            raise
        except Exception as e:
            raise self._error(e, path) from None

    def _error(self, e: Exception, path: str) -> StoreError:
        from botocore import exceptions as bx

        if isinstance(e, StoreError):
            return e
        if isinstance(e, bx.ClientError):
            return self._response_error(getattr(e, "response", None) or {}, path)
        if isinstance(e, (bx.NoCredentialsError, bx.PartialCredentialsError,
                          bx.CredentialRetrievalError)):
            return AccessDeniedError(f"no usable AWS credentials ({type(e).__name__}); pass "
                                     "anonymous=True for public buckets", path=path)
        if isinstance(e, (bx.ReadTimeoutError, bx.ConnectTimeoutError, TimeoutError)):
            return Retryable(StoreTimeoutError(f"request timed out: {describe(e)}", path=path))
        if isinstance(e, (bx.ConnectionError, bx.HTTPClientError, bx.IncompleteReadError,
                          aiohttp.ClientError, OSError)):
            return Retryable(StoreError(f"connection failed: {describe(e)}", path=path))
        if isinstance(e, bx.ParamValidationError):
            return StoreError(f"invalid request: {describe(e)}", path=path)
        return StoreError(f"request failed: {describe(e)}", path=path)

    # ----------------------------------------------------- error mapping ---
    def _response_error(self, response: dict[str, Any], path: str) -> StoreError:
        """The typed error for an S3 error response (botocore's parsed form)."""
        err = response.get("Error") or {}
        meta = response.get("ResponseMetadata") or {}
        headers = meta.get("HTTPHeaders") or {}
        code = str(err.get("Code") or "")
        status = int(meta.get("HTTPStatusCode") or 0)
        detail = code + (f": {err['Message']}" if err.get("Message") else "")
        if code == "InvalidRange" or status == 416:
            cr = parse_content_range(headers.get("content-range"))
            total = cr[2] if cr else None
            if total is None:
                total = parse_length(str(err.get("ActualObjectSize", "")))
            return Unsatisfiable(total, path)
        if code in _ACCESS_CODES:
            status = 403
        elif code in _NOT_FOUND_CODES:
            status = 404
        elif code == "PreconditionFailed":
            status = 412
        elif code in _RETRY_CODES and status < 500:
            status = 503
        err = status_error(status or 500, path, detail=detail,
                           retry_after=headers.get("retry-after"))
        if isinstance(err, AccessDeniedError):  # which credentials were refused (not them)
            err = AccessDeniedError(f"{err.message} (credentials: {self._credential_source}"
                                    f"{'; request_payer' if self.request_payer else ''})",
                                    path=err.path)
        return err

    async def write_object(self, key: str, data: bytes, if_absent: bool, path: str) -> bool:
        """One ``PutObject`` (``If-None-Match: *`` when ``if_absent``); False when the
        object exists and ``if_absent`` was asked (``stores.put.put_object``)."""
        from botocore.exceptions import ClientError

        bucket, name = split_s3_key(key)
        params: dict[str, Any] = {"Bucket": bucket, "Key": name, "Body": data}
        if if_absent:
            params["IfNoneMatch"] = "*"
        client = await self._client()
        try:
            await client.put_object(**params)
        except ClientError as e:
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = e.response.get("Error", {}).get("Code")
            if if_absent and (status == 412 or code in ("PreconditionFailed",
                                                         "ConditionalRequestConflict")):
                return False
            raise self._error(e, path) from None
        except Exception as e:
            raise self._error(e, path) from None
        return True

def parse_listing(body: bytes, path: str) -> tuple[list[tuple[str, str | None]], str]:
    """Keys (each with the size the page names, or None) and the continuation token of a
    ListObjectsV2 page."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        raise StoreError("the listing is not XML", path=path) from None
    fields: dict[str, str] = {}
    keys: list[tuple[str, str | None]] = []
    for el in root:
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "Contents":
            found = {sub.tag.rsplit("}", 1)[-1]: sub.text for sub in el}
            if found.get("Key"):
                keys.append((found["Key"], found.get("Size")))  # type: ignore[arg-type]
        else:
            fields[tag] = el.text or ""
    if fields.get("EncodingType") == "url":
        keys = [(unquote_plus(k), n) for k, n in keys]
    token = fields.get("NextContinuationToken", "")
    if fields.get("IsTruncated", "false").lower() != "true":
        token = ""
    elif not token:
        raise StoreError("a truncated listing without a continuation token", path=path)
    return keys, token


_XML_FIELD = re.compile(r"<(Code|Message|ActualObjectSize)>([^<]{0,300})</\1>")


def _error_response(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """An S3 error response in botocore's parsed shape, from its status, headers and XML."""
    err = dict(_XML_FIELD.findall(body.decode("utf-8", "replace")))
    if "Code" not in err and (detail := error_detail(body)):
        err["Message"] = detail
    return {"Error": err, "ResponseMetadata": {"HTTPStatusCode": status,
                                               "HTTPHeaders": headers}}


