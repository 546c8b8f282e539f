"""The aiohttp plumbing shared by the HTTP and GCS stores.

One ``ClientSession`` per store, made on first use inside the running loop
(a session made outside it would bind to the wrong loop), with a bounded
connector so a wide scan cannot open thousands of sockets, and closed by
``close()``.  Responses are never decompressed: a byte range of a compressed
representation is not a byte range of the object.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncGenerator, Iterator, Mapping
from typing import Any

import yarl

from ..model.errors import CsupError, StoreError, StoreTimeoutError
from ..model.redact import redact_text
from ._ranged import (
    DEFAULT_MIN_THROUGHPUT,
    IF_NONE_MATCH,
    NotModified,
    RangedStore,
    Reply,
    status_error,
)
from .base import CHUNK_SIZE
from .calibrate import note_connection_opened
from .pacing import pacer_for
from .retry import DEFAULT_RETRY, Retryable, RetryPolicy
from .tls import aiohttp  # its CA certificates read on the first TLS connection

_USER_AGENT = "csup-async"
_ERROR_BODY_LIMIT = 4096
_JSON_BODY_LIMIT = 16 << 20  # a metadata or listing page; more is refused, not buffered
_MAX_REDIRECTS = 10
_KEEPALIVE = 15.0  # seconds an idle connection is kept (aiohttp's default, stated here)
_READ_BUFSIZE = 1 << 20  # a response's buffer before aiohttp pauses the socket (twice this)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_THROTTLED = frozenset({429, 503})
# What a request keeps when a redirect leaves its origin: what the protocol needs, nothing else.
_KEPT_ACROSS_ORIGINS = frozenset({"range", "if-match", "if-unmodified-since", "if-none-match",
                                  "accept-encoding"})


def _origin(url: yarl.URL) -> tuple[str, str, int | None]:
    return url.scheme.lower(), (url.host or "").lower(), url.port


def to_url(url: str) -> yarl.URL:
    """A yarl URL that keeps the caller's encoding byte for byte when it is already
    encoded (signed URLs sign their exact query; object names may contain %2F)."""
    if url.isascii() and url.isprintable() and " " not in url:
        return yarl.URL(url, encoded=True)
    return yarl.URL(url)


def describe(e: BaseException) -> str:
    """A short, secret-free description of a library exception."""
    text = redact_text(str(e)) or type(e).__name__
    return f"{type(e).__name__}: {text}"[:300]


def error_detail(body: bytes) -> str:
    """The code/message of an S3 (XML) or GCS (JSON) error body, if there is one."""
    text = body.decode("utf-8", "replace")
    code = re.search(r"<Code>([^<]{1,100})</Code>", text)
    if code:
        msg = re.search(r"<Message>([^<]{1,200})</Message>", text)
        return code.group(1) + (f": {msg.group(1)}" if msg else "")
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:200]
    except (ValueError, AttributeError):
        pass
    return ""


def common_options(limit: int, connect_timeout: float, read_timeout: float,
                   chunk_size: int, timeout: float | None = None,
                   min_throughput: float = DEFAULT_MIN_THROUGHPUT) -> None:
    if limit < 1:
        raise CsupError(f"limit must be at least 1, not {limit}")
    if connect_timeout <= 0 or read_timeout <= 0:
        raise CsupError("connect_timeout and read_timeout must be positive")
    if timeout is not None and not timeout > 0:
        raise CsupError(f"timeout must be positive (or None), not {timeout}")
    if not min_throughput > 0:
        raise CsupError(f"min_throughput must be positive, not {min_throughput}")
    if chunk_size < 1:
        raise CsupError(f"chunk_size must be positive, not {chunk_size}")


class AiohttpStore(RangedStore):
    """A RangedStore that sends its requests with aiohttp."""

    #: Whether redirects are followed (S3 signs for one host: it handles its own).
    follow_redirects = True
    #: Whether Content-Encoding only describes the stored bytes (S3 object metadata)
    #: rather than an encoding the server applied to this response.
    encoding_is_metadata = False
    #: Connections opened beside a cold pool's first tail read (see :meth:`_warm_up`);
    #: 0: none.  Stores set ``preconnect`` per instance.
    default_preconnect = 0
    #: The session's ``sock_read`` timeout ends any read silent for ``read_timeout``.
    silence_timeout = True

    def __init__(self, *, limit: int = 64, connect_timeout: float = 10.0,
                 read_timeout: float = 30.0, retry: RetryPolicy = DEFAULT_RETRY,
                 verify_ssl: bool = True, chunk_size: int = CHUNK_SIZE,
                 trust_env: bool = False, timeout: float | None = None,
                 min_throughput: float = DEFAULT_MIN_THROUGHPUT,
                 preconnect: int | None = None) -> None:
        common_options(limit, connect_timeout, read_timeout, chunk_size, timeout,
                       min_throughput)
        if preconnect is not None and (not isinstance(preconnect, int) or preconnect < 0):
            raise CsupError(f"preconnect must be an integer >= 0, not {preconnect!r}")
        self.timeout = timeout
        self.min_throughput = min_throughput
        if not isinstance(retry, RetryPolicy):
            raise CsupError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        self.limit = limit
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retry = retry
        self.verify_ssl = verify_ssl
        self.chunk_size = chunk_size
        self.trust_env = trust_env
        self._session_obj: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opened = 0  # connections the session has made (aiohttp's trace signal)
        self._last_used = 0.0  # loop time a request last ended
        self.preconnect = self.default_preconnect if preconnect is None else preconnect
        self._warming: set[asyncio.Task[None]] = set()

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        s = self._session_obj
        if s is not None and not s.closed:
            if self._loop is not loop:
                raise StoreError(f"this {self.name} store's connections belong to another "
                                 "event loop; make one store per loop (or close it first)")
            return s
        self._loop = loop
        self._opened = 0
        trace = aiohttp.TraceConfig()
        trace.on_connection_create_end.append(self._connection_opened)
        trace.on_request_end.append(self._request_ended)
        self._session_obj = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.limit, ssl=bool(self.verify_ssl),
                                           keepalive_timeout=_KEEPALIVE),
            trace_configs=[trace],
            # No total timeout: a large range may legitimately take long.  A peer
            # that goes silent is caught by sock_read, a dead host by sock_connect.
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout,
                                          sock_read=self.read_timeout),
            auto_decompress=False,
            trust_env=self.trust_env,
            headers={"User-Agent": _USER_AGENT},
        )
        return self._session_obj

    async def _connection_opened(self, *_: object) -> None:
        self._opened += 1
        note_connection_opened()  # this request's first byte paid the setup (calibration)

    async def _request_ended(self, *_: object) -> None:
        if self._loop is not None:
            self._last_used = self._loop.time()

    def _drop_reply(self, reply: Reply | None) -> None:
        super()._drop_reply(reply)
        # A copy that lost a race closes its connection (if it had one): the planner
        # must not count it as warm.  Counting one too few only costs a little setup.
        self._opened = max(0, self._opened - 1)

    def warm_connections(self) -> int:
        """About how many connections the pool holds open: those it made, while it has
        been used within the keep-alive time (the planner charges new ones their setup).

        An estimate: a connection the server closed early is still counted.
        """
        s, loop = self._session_obj, self._loop
        if s is None or s.closed or loop is None or not self._opened:
            return 0
        if loop.time() - self._last_used > _KEEPALIVE:
            return 0
        return min(self._opened, self.limit)

    def _warm_up(self, session: aiohttp.ClientSession, url: yarl.URL) -> bool:
        """Open ``preconnect`` connections to ``url``'s origin while a cold pool's tail read
        is in flight.

        Every reader's first request is a tail read, and the data requests follow
        it one round trip later; on a cold pool each of them would first pay a new
        connection's setup (TCP, and TLS's one or two round trips).  Opened beside
        the tail read, the connections are ready when the data requests go, and the
        planner counts them as warm.  Best effort: a connection that fails to open
        is simply not there (its request opens its own, as before).  True if it
        started any.
        """
        # Only a cold pool: aiohttp's connect() hands out an idle connection when the
        # pool has one, so on a warm pool this would open nothing and count it.
        n = min(self.preconnect, self.limit - 1)
        if (n <= 0 or self._warming or self.warm_connections() or self.trust_env
                or session.connector is None):
            return False
        connector = session.connector
        try:  # the key of the pool the session's own requests use (no proxy, default ssl)
            req = aiohttp.ClientRequest("GET", url, loop=asyncio.get_running_loop())
        except Exception:  # an aiohttp without this constructor: no warm-up
            return False
        timeout = session.timeout

        async def open_one() -> None:
            try:
                conn = await connector.connect(req, [], timeout)
            except (Exception, asyncio.CancelledError):
                return
            self._opened += 1
            conn.release()  # idle in the pool, for the next request to this origin

        for _ in range(n):
            task = asyncio.get_running_loop().create_task(open_one())
            self._warming.add(task)
            task.add_done_callback(self._warming.discard)
        return True

    async def _stop_warming(self) -> None:
        """Cancel connections still opening (the request they were for failed)."""
        warming, self._warming = self._warming, set()
        for task in warming:
            task.cancel()
        if warming:
            await asyncio.gather(*warming, return_exceptions=True)

    @property
    def connector(self) -> aiohttp.BaseConnector | None:
        """The live connection pool, if any (for diagnostics and tests)."""
        s = self._session_obj
        return None if s is None or s.closed else s.connector

    def abandon(self) -> None:
        """Forget the session of a loop that is gone, touching nothing of that loop: its
        connections are marked closed (no "unclosed" warning at exit) and detached."""
        s, self._session_obj = self._session_obj, None
        self._loop = None
        self._warming = set()  # tasks of that loop: gone with it
        if s is None:
            return
        connector = s.connector
        s.detach()
        if connector is not None:
            with contextlib.suppress(Exception):
                connector._close()  # aiohttp's synchronous close: no await on a dead loop

    async def close(self) -> None:
        s, self._session_obj = self._session_obj, None
        self._loop = None
        await self._stop_warming()
        if s is not None and not s.closed:
            await s.close()

    async def _send(self, method: str, url: yarl.URL, headers: Mapping[str, str],
                    path: str) -> aiohttp.ClientResponse:
        """One request, redirects followed here (not by aiohttp), any status returned.

        A redirect to another origin (scheme, host or port) carries only the
        protocol headers (Range, preconditions): every header a user or a
        credential supplied -- Authorization, an API key, a cookie -- stays
        with the origin it was meant for.  aiohttp alone drops Authorization only.
        """
        session = self._session()
        origin = _origin(url)
        sent = dict(headers)
        # a tail read: the data requests come next (if it fails, so do they)
        if (method == "GET" and str(sent.get("Range", "")).startswith("bytes=-")
                and self._warm_up(session, url)):
            try:
                return await self._send_from(session, method, url, sent, path, origin)
            except NotModified:  # the metadata held is current: data requests follow
                raise
            except BaseException:
                await self._stop_warming()
                raise
        return await self._send_from(session, method, url, sent, path, origin)

    async def _send_from(self, session: aiohttp.ClientSession, method: str, url: yarl.URL,
                         sent: dict[str, str], path: str, origin: tuple[str, str, int | None]
                         ) -> aiohttp.ClientResponse:
        """:meth:`_send`'s redirect loop."""
        unless = IF_NONE_MATCH.get() if method == "GET" else None
        if unless is not None:
            sent["If-None-Match"] = unless
        for _ in range(_MAX_REDIRECTS + 1):
            resp = await self._send_once(session, method, url, sent, path)
            if resp.status == 304 and unless is not None:
                resp.close()
                raise NotModified(f"not modified since version {unless}", path=path)
            if resp.status not in _REDIRECTS or not self.follow_redirects:
                return resp
            location = resp.headers.get("Location")
            resp.close()
            if not location:
                raise StoreError(f"HTTP {resp.status} redirect without a Location", path=path)
            try:
                url = url.join(to_url(location))
            except ValueError:
                raise StoreError("a redirect to an invalid URL", path=path) from None
            if url.scheme not in ("http", "https") or not url.host:
                raise StoreError(f"a redirect to a {url.scheme or 'relative'}: URL was refused",
                                 path=path)
            if _origin(url) != origin:
                sent = {k: v for k, v in sent.items() if k.lower() in _KEPT_ACROSS_ORIGINS}
        raise StoreError(f"more than {_MAX_REDIRECTS} redirects", path=path)

    async def _send_once(self, session: aiohttp.ClientSession, method: str, url: yarl.URL,
                         headers: Mapping[str, str], path: str) -> aiohttp.ClientResponse:
        pacer = pacer_for(url.scheme, url.host or "", url.port, url.raw_path)
        await pacer.wait()
        try:
            resp = await session.request(method, url, headers=headers, allow_redirects=False,
                                         read_bufsize=_READ_BUFSIZE)
            pacer.record(resp.status in _THROTTLED)
            return resp
        except TimeoutError:
            raise Retryable(StoreTimeoutError(
                f"no response within {self.read_timeout:g} s (read_timeout)", path=path)
            ) from None
        except (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError) as e:
            # a certificate that fails verification will fail again: not transient
            raise StoreError(f"TLS verification failed: {describe(e)}", path=path) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as e:
            raise Retryable(StoreError(f"connection failed: {describe(e)}", path=path)) from None
        except (aiohttp.InvalidURL, ValueError) as e:
            raise StoreError(f"invalid URL: {describe(e)}", path=path) from None
        except aiohttp.ClientError as e:
            raise StoreError(f"request failed: {describe(e)}", path=path) from None

    async def _get(self, url: yarl.URL, headers: Mapping[str, str],
                   path: str) -> aiohttp.ClientResponse:
        """One GET; error statuses become typed errors (Retryable when transient)."""
        return await self._checked(await self._send("GET", url, headers, path), path)

    async def _checked(self, resp: aiohttp.ClientResponse, path: str) -> aiohttp.ClientResponse:
        """``resp`` if it is a 200 or 206 whose bytes are the object's; else its typed error."""
        if resp.status in (200, 206):
            enc = resp.headers.get("Content-Encoding", "identity").strip().lower()
            if enc not in ("identity", "") and not self.encoding_is_metadata:
                resp.close()
                raise StoreError(f"the server compressed the response (Content-Encoding: "
                                 f"{enc[:40]}); byte ranges need the identity encoding",
                                 path=path)
            return resp
        try:
            body = b""
            if resp.status >= 400:
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    body = await resp.content.read(_ERROR_BODY_LIMIT)
            raise self._status_error(resp, body, path)
        finally:
            resp.close()

    def _status_error(self, resp: aiohttp.ClientResponse, body: bytes, path: str) -> StoreError:
        """The typed error for a response that is neither 200 nor 206."""
        return status_error(resp.status, path, detail=error_detail(body) or (resp.reason or ""),
                            retry_after=resp.headers.get("Retry-After"),
                            content_range=resp.headers.get("Content-Range"))

    def _reply(self, resp: aiohttp.ClientResponse, path: str) -> Reply:
        def release() -> None:
            if resp.content.at_eof():
                resp.release()  # back to the pool
            else:
                resp.close()  # unread bytes in flight: the connection cannot be reused

        return Reply(resp.status, {k.lower(): v for k, v in resp.headers.items()},
                     self._body(resp, path), release)

    @contextlib.contextmanager
    def _reading_body(self, path: str) -> Iterator[None]:
        """A stall or a broken connection while a body arrives: retryable store errors."""
        try:
            yield
        except TimeoutError:
            raise Retryable(StoreTimeoutError(
                f"the response stalled for {self.read_timeout:g} s (read_timeout)", path=path)
            ) from None
        except (aiohttp.ClientError, OSError) as e:
            raise Retryable(StoreError(f"the connection broke mid-body: {describe(e)}",
                                       path=path)) from None

    async def _body(self, resp: aiohttp.ClientResponse, path: str) -> AsyncGenerator[bytes, None]:
        # The chunks as the socket delivered them (no join of several into one); the
        # request's read buffer (_READ_BUFSIZE) is large enough that a reader which copies
        # each chunk away at once never pauses the transport (each pause and resume is an
        # epoll_ctl on the loop thread, about one per 128 KiB at aiohttp's default).
        size = self.chunk_size
        with self._reading_body(path):
            async for chunk, _ in resp.content.iter_chunks():
                if len(chunk) <= size:
                    if chunk:
                        yield chunk
                    continue
                for i in range(0, len(chunk), size):
                    yield chunk[i:i + size]

    async def _get_json(self, url: yarl.URL, headers: Mapping[str, str],
                        path: str) -> dict[str, Any]:
        resp = await self._get(url, headers, path)
        try:
            with self._reading_body(path):
                body = await resp.content.read(_JSON_BODY_LIMIT + 1)
            if len(body) > _JSON_BODY_LIMIT:
                raise StoreError(f"a metadata response longer than {_JSON_BODY_LIMIT} bytes "
                                 "was refused", path=path)
        finally:
            resp.release()
        try:
            doc = json.loads(body)
        except ValueError:
            raise StoreError("the server's metadata response is not JSON", path=path) from None
        if not isinstance(doc, dict):
            raise StoreError("the server's metadata response is not a JSON object", path=path)
        return doc
