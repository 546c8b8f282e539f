"""Amazon S3 and S3-compatible stores (MinIO, R2, moto, ...) through aiobotocore.

aiobotocore is used rather than hand-signed aiohttp requests because it brings
botocore's whole credential chain (environment, profiles, SSO, IMDS, web
identity) and endpoint rules, which users of S3 expect to just work.  Its own
retries are switched off (``total_max_attempts=1``) so that one policy, ours,
governs every store.  The version is the ETag; reads are pinned with
``IfMatch`` (S3 and moto answer 412 for a replaced object).  One client per
store, created on first use inside the running loop, serves every bucket;
``close()`` closes it.

Ranged GETs to a path-style endpoint (MinIO, R2, moto, any S3-compatible
server: the usual case when ``endpoint_url`` is set) skip the client's
per-call machinery -- event hooks, parameter validation, user-agent building,
response parsing (its dateutil parse of Last-Modified alone costs ~0.1 ms) --
which costs ~1 ms of CPU a request on the event loop and made a driver that
opens 1,000 files CPU-bound.  They are signed with botocore's own S3 SigV4
signer from the client's (refreshable) credentials and sent through the
client's own aiohttp session (one connection pool, its proxy, TLS and timeout
settings), and mapped to the same typed errors.  AWS itself (virtual-hosted
buckets, region redirects, endpoint rules) keeps the full client path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp

from ..errors import AccessDeniedError, CsupError, StoreError, StoreTimeoutError
from ._aio import common_options, describe, error_detail
from ._ranged import RangedStore, Reply, Unsatisfiable, parse_content_range, status_error
from .base import CHUNK_SIZE, ObjectInfo
from .redact import redact_url
from .retry import DEFAULT_RETRY, Retryable, RetryPolicy

__all__ = ["S3Store", "split_s3_key"]

_ACCESS_CODES = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                           "ExpiredToken", "InvalidToken", "TokenRefreshRequired",
                           "AllAccessDisabled", "AccountProblem"})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "NotFound", "NoSuchVersion"})
_RETRY_CODES = frozenset({"RequestTimeout", "SlowDown", "InternalError", "ServiceUnavailable",
                          "RequestTimeTooSkewed", "OperationAborted", "Throttling"})


_SECRET = re.compile(r"(Credential|Signature|X-Amz-Security-Token|X-Amz-Signature|"
                     r"X-Amz-Credential)[=:]\s*[^,&\s'\"]+", re.I)


_MASKED_LOGGERS = ("botocore", "aiobotocore", "urllib3", "s3transfer")


def _install_log_mask() -> None:
    """Mask signed-header credentials in botocore's DEBUG records as they are created.

    botocore logs whole signed requests through many child loggers, and a
    logger's filters do not see records propagated from its children, so
    the mask sits in the record factory (chained, and only for those loggers).
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "_csup_mask", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name.startswith(_MASKED_LOGGERS):
            try:
                text = record.getMessage()
            except Exception:  # a record whose args do not format: leave it alone
                return record
            masked = _SECRET.sub(r"\1[redacted]", text)
            if masked != text:
                record.msg, record.args = masked, None
        return record

    factory._csup_mask = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


_install_log_mask()


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


class S3Store(RangedStore):
    """Range reads from S3; one store (one client, one connection pool) serves all buckets.

    Options: ``endpoint_url`` (else ``AWS_ENDPOINT_URL``/``AWS_ENDPOINT_URL_S3``
    or AWS), ``region`` (else botocore's configuration, else us-east-1),
    ``access_key_id``/``secret_access_key``/``session_token`` (else botocore's
    chain), ``aws_profile``, ``anonymous`` (unsigned requests, for public
    buckets), ``path_style`` (default: path-style when an endpoint URL is set),
    ``request_payer`` (True: this reader pays for requester-pays buckets; sent on
    every request),
    ``limit`` (connections, 64), ``connect_timeout`` (10 s), ``read_timeout``
    (30 s of silence), ``retry``, ``verify_ssl`` (True), ``chunk_size``.
    """

    name = "s3"
    default_profile = "s3"

    def __init__(self, *, endpoint_url: str | None = None, region: str | None = None,
                 access_key_id: str | None = None, secret_access_key: str | None = None,
                 session_token: str | None = None, aws_profile: str | None = None,
                 anonymous: bool = False, path_style: bool | None = None, limit: int = 64,
                 connect_timeout: float = 10.0, read_timeout: float = 30.0,
                 retry: RetryPolicy = DEFAULT_RETRY, verify_ssl: bool = True,
                 chunk_size: int = CHUNK_SIZE, request_payer: bool = False) -> None:
        common_options(limit, connect_timeout, read_timeout, chunk_size)
        if not isinstance(retry, RetryPolicy):
            raise CsupError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        if (access_key_id is None) != (secret_access_key is None):
            raise CsupError("pass both access_key_id and secret_access_key, or neither")
        self.endpoint_url = endpoint_url
        self.region = region
        self.anonymous = anonymous
        self.aws_profile = aws_profile
        self.request_payer = bool(request_payer)
        self._credential_source = ("anonymous (unsigned)" if anonymous else
                                   "the access_key_id option" if access_key_id is not None
                                   else "botocore's chain (not resolved yet)")
        has_endpoint = bool(endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3")
                            or os.environ.get("AWS_ENDPOINT_URL"))
        self.path_style = has_endpoint if path_style is None else path_style
        self.limit = limit
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retry = retry
        self.verify_ssl = verify_ssl
        self.chunk_size = chunk_size
        self._credentials = (access_key_id, secret_access_key, session_token)
        self._client_cm: Any = None
        self._client_obj: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._has_endpoint = has_endpoint
        self._boto_session: Any = None
        self._fast: _SignedGet | None = None

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

    # ------------------------------------------------------------- client ---
    async def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client_obj is not None and self._loop is not loop:
            raise StoreError("this s3 store's client belongs to another event loop; make "
                             "one store per loop (or close it first)")
        if self._client_obj is None:
            if self._lock is None or self._loop is not loop:
                self._lock, self._loop = asyncio.Lock(), loop
            async with self._lock:
                if self._client_obj is None:
                    cm = self._make_client()
                    client = await cm.__aenter__()
                    await self._note_credential_source()
                    self._fast = await self._signed_get(client)
                    self._client_obj, self._client_cm = client, cm
        return self._client_obj

    async def _signed_get(self, client: Any) -> _SignedGet | None:
        """The direct GET path for this client, or None where only the full client is right.

        Path-style endpoints only: their URL is ``endpoint/bucket/key`` whatever
        the bucket, and no endpoint rule or region redirect applies.  The HTTP
        session is the client's own (so one pool serves both paths); a client
        that does not expose it keeps the full path.
        """
        http = getattr(getattr(client, "_endpoint", None), "http_session", None)
        base = client.meta.endpoint_url
        if not (self.path_style and self._has_endpoint and base and hasattr(http, "send")):
            return None
        parts = urlsplit(base)
        host = (parts.hostname or "").lower()
        if host == "amazonaws.com" or host.endswith((".amazonaws.com", ".amazonaws.com.cn")):
            return None  # AWS itself: its endpoint rules and redirects stay with the client
        if parts.query or parts.fragment or "@" in parts.netloc:
            return None  # an unusual endpoint URL: leave its handling to botocore
        if self.anonymous:
            creds: Any = None
        elif self._credentials[0] is not None:
            from botocore.credentials import Credentials

            creds = Credentials(*self._credentials)
        else:
            creds = await self._boto_session.get_credentials()  # the client's (cached) chain
        return _SignedGet(http, base.rstrip("/"), client.meta.region_name, creds,
                          self.anonymous)

    async def _note_credential_source(self) -> None:
        """Which link of botocore's chain gave the credentials (its ``method``: env,
        shared-credentials-file, sso, assume-role, iam-role, ...), for refusals."""
        if self.anonymous or self._credentials[0] is not None:
            return
        try:
            creds = await self._boto_session.get_credentials()  # resolved by the client
        except Exception:  # the client reports a chain that fails, on its first request
            return
        method = getattr(creds, "method", None)
        self._credential_source = (f"botocore's chain ({method})" if creds is not None
                                   else "none found in botocore's chain")

    def _make_client(self) -> Any:
        import botocore
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession

        session = AioSession(profile=self.aws_profile)
        self._boto_session = session
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
        return session.create_client(
            "s3", region_name=region, endpoint_url=self.endpoint_url,
            aws_access_key_id=key_id, aws_secret_access_key=secret, aws_session_token=token,
            verify=self.verify_ssl, config=AioConfig(**config))

    async def close(self) -> None:
        cm, self._client_cm, self._client_obj = self._client_cm, None, None
        self._fast = None
        self._loop = None
        self._lock = None
        if cm is not None:
            await cm.__aexit__(None, None, None)

    async def list(self, prefix: str) -> list[str]:
        """``s3://bucket/key`` URLs of every object under ``prefix`` (ListObjectsV2 pages)."""
        bucket, name = split_s3_key(prefix) if "/" in prefix.removeprefix("s3://") else (
            prefix.removeprefix("s3://").rstrip("/"), "")
        path = f"s3://{bucket}/{name}"
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
                out += [f"s3://{bucket}/{o['Key']}" for o in page.get("Contents", ())
                        if not o["Key"].endswith("/")]
                token = page.get("NextContinuationToken")
                if not page.get("IsTruncated") or not token:
                    return out
        except CsupError:
            raise
        except Exception as e:
            raise self._error(e, path) from None

    # ----------------------------------------------------------- requests ---
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

    def _error(self, e: Exception, path: str) -> StoreError:
        from botocore import exceptions as bx

        if isinstance(e, StoreError):
            return e
        if isinstance(e, bx.ClientError):
            return self._client_error(e, path)
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

    def _client_error(self, e: Any, path: str) -> StoreError:
        return self._response_error(getattr(e, "response", None) or {}, path)

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
            if total is None and str(err.get("ActualObjectSize", "")).isdigit():
                total = int(err["ActualObjectSize"])
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

    async def _open(self, key: str, range_: str | None, pin: str | None) -> Reply:
        try:
            await self._client()  # also checks the loop
        except Exception as e:
            raise self._error(e, self._display(key)) from None
        if self._fast is not None:
            return await self._open_signed(self._fast, key, range_, pin)
        params: dict[str, Any] = {}
        if range_ is not None:
            params["Range"] = range_
        if pin is not None:
            params["IfMatch"] = pin
        resp = await self._call("get_object", key, **params)
        meta = resp["ResponseMetadata"]
        body = resp["Body"]
        return Reply(int(meta["HTTPStatusCode"]), meta.get("HTTPHeaders") or {},
                     self._body(body, self._display(key)), body.close)

    async def _open_signed(self, fast: _SignedGet, key: str, range_: str | None,
                           pin: str | None) -> Reply:
        """One GET through :class:`_SignedGet`, with the full path's error mapping."""
        path = self._display(key)
        bucket, name = split_s3_key(key)
        headers: dict[str, str] = {}
        if range_ is not None:
            headers["Range"] = range_
        if pin is not None:
            headers["If-Match"] = pin
        if self.request_payer:
            headers["x-amz-request-payer"] = "requester"  # signed with the rest
        try:
            resp = await fast.get(bucket, name, headers)
        except Exception as e:  # botocore's mapped aiohttp errors, credential errors
            raise self._error(e, path) from None
        raw = resp.raw
        status = int(resp.status_code)
        hdrs = dict(resp.headers)  # lower-case names
        if status in (200, 206):
            def release() -> None:
                if raw.content.at_eof():
                    raw.release()  # back to the pool
                else:
                    raw.close()  # unread bytes in flight: the connection cannot be reused

            return Reply(status, hdrs, self._raw_body(raw, path), release)
        try:
            body = b""
            with contextlib.suppress(Exception):
                body = await raw.content.read(4096)
        finally:
            raw.close()
        raise self._response_error(_error_response(status, hdrs, body), path)

    async def _raw_body(self, raw: Any, path: str) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in raw.content.iter_chunked(self.chunk_size):
                yield chunk
        except Exception as e:  # aiohttp/OS errors and timeouts: Retryable, as below
            raise self._error(e, path) from None

    async def _body(self, body: Any, path: str) -> AsyncGenerator[bytes, None]:
        try:
            while chunk := await body.read(self.chunk_size):
                yield chunk
        except Exception as e:  # mapped like request errors; CancelledError is not one
            raise self._error(e, path) from None

    def _version_of(self, reply: Reply, total: int | None) -> str | None:
        return reply.header("etag")

    def _pin_matches(self, pin: str, reply: Reply, total: int | None) -> bool | None:
        etag = reply.header("etag")
        return etag is None or etag == pin

    async def _info_once(self, key: str) -> ObjectInfo:
        resp = await self._call("head_object", key)
        return ObjectInfo(int(resp["ContentLength"]), resp.get("ETag"))


_XML_FIELD = re.compile(r"<(Code|Message|ActualObjectSize)>([^<]{0,300})</\1>")


def _error_response(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """An S3 error response in botocore's parsed shape, from its status, headers and XML."""
    err = dict(_XML_FIELD.findall(body.decode("utf-8", "replace")))
    if "Code" not in err and (detail := error_detail(body)):
        err["Message"] = detail
    return {"Error": err, "ResponseMetadata": {"HTTPStatusCode": status,
                                               "HTTPHeaders": headers}}


class _SignedGet:
    """Signed S3 GETs without the client's per-call machinery (see the module docstring).

    Signing is botocore's ``S3SigV4Auth``, so the canonical request is exactly
    what the client would send; credentials are frozen per request, which is
    free for static keys and refreshes expiring ones (SSO, IMDS, web identity)
    as the client would.  Nothing here logs: botocore's signer logs at DEBUG,
    through the masked loggers.
    """

    def __init__(self, http: Any, base: str, region: str, credentials: Any,
                 anonymous: bool) -> None:
        self.http = http
        self.base = base
        self.region = region
        self.credentials = credentials
        self.anonymous = anonymous
        self._auth: tuple[Any, Any] | None = None  # (frozen credentials, signer)

    def __repr__(self) -> str:
        return f"_SignedGet({redact_url(self.base)!r})"

    async def _signer(self) -> Any:
        from botocore.auth import S3SigV4Auth
        from botocore.exceptions import NoCredentialsError

        if self.credentials is None:
            raise NoCredentialsError()
        frozen = self.credentials.get_frozen_credentials()
        if asyncio.iscoroutine(frozen):  # aiobotocore's (refreshable) credentials
            frozen = await frozen
        if frozen.access_key is None or frozen.secret_key is None:
            raise NoCredentialsError()
        if self._auth is None or self._auth[0] != frozen:
            self._auth = (frozen, S3SigV4Auth(frozen, "s3", self.region))
        return self._auth[1]

    async def get(self, bucket: str, key: str, headers: dict[str, str]) -> Any:
        """Send one GET of ``bucket/key``; the response's body is not read yet."""
        from botocore.awsrequest import AWSRequest

        url = f"{self.base}/{quote(bucket, safe='')}/{quote(key, safe='/~')}"
        request = AWSRequest("GET", url, headers=headers, stream_output=True)
        if not self.anonymous:
            (await self._signer()).add_auth(request)
        return await self.http.send(request.prepare())
