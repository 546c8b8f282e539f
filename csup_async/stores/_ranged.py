"""Range-request logic shared by the stores that speak HTTP (S3, GCS, plain HTTP).

Each such store only knows how to send one GET (``_open``) and what its
version token is; everything a server can get wrong is handled here, once:
a suffix range answered with the whole object (200), a 416 for a suffix
longer than the object, a Content-Range that is not the one asked for, a
body shorter or longer than announced, a connection that breaks mid-body
(the stream resumes from the byte it reached, pinned to the same version),
and an object replaced between requests.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from ..model.errors import (
    AccessDeniedError,
    NotFoundError,
    ObjectChangedError,
    StoreError,
    StoreTimeoutError,
    TruncatedError,
)
from ..model.redact import redact_text
from .base import CHUNK_SIZE, ObjectInfo, StoreBase, TailRead, check_range
from .calibrate import Measurements, endpoint_of, measurements_for, watch_connections
from .hedge import DEFAULT_HEDGE, HedgePolicy, HedgeState, hedged
from .retry import DEFAULT_RETRY, Retryable, RetryPolicy, parse_retry_after
from .sizes import ListedSizes

__all__ = ["IF_NONE_MATCH", "NotModified", "RangedStore", "Reply", "Unsatisfiable",
           "parse_content_range", "status_error"]

#: An ETag a GET of this task is conditional on (``If-None-Match``): a 304 is NotModified.
IF_NONE_MATCH: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "csup_if_none_match", default=None)


DEFAULT_MIN_THROUGHPUT = 64 * 1024
DEFAULT_MAX_WHOLE_BODY = 64 << 20


@dataclass(slots=True)
class Reply:
    """A successful (200/206) response whose body has not been read yet."""

    status: int
    headers: Mapping[str, str]  # names in lower case
    body: AsyncGenerator[bytes, None]  # raises Retryable for network failures
    release: Callable[[], None]  # idempotent; closes the connection unless fully read

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def content_length(self) -> int | None:
        return parse_length(self.headers.get("content-length"))


class NotModified(StoreError):
    """A 304: the object is still the version a conditional request named."""


class Unsatisfiable(StoreError):
    """A 416: the range lies outside the object, whose size is ``total`` if the server said."""

    def __init__(self, total: int | None, path: str | None) -> None:
        super().__init__("range not satisfiable (416)", path=path)
        self.total = total


# At most 19 ASCII digits a number: every real size fits in an int64, and a longer
# run of digits would make int() raise (Python's digit limit) or cost quadratic time.
_NUMBER = r"([0-9]{1,19})"
_CONTENT_RANGE = re.compile(rf"\s*bytes\s+(?:{_NUMBER}-{_NUMBER}|\*)/(?:{_NUMBER}|\*)\s*$",
                            re.IGNORECASE | re.ASCII)
_LENGTH = re.compile(rf"\s*{_NUMBER}\s*$", re.ASCII)


def parse_length(value: str | None) -> int | None:
    """A Content-Length-like header as an int; None if absent or not a plain number."""
    if value is None:
        return None
    m = _LENGTH.match(value)
    return int(m.group(1)) if m else None


def parse_content_range(value: str | None) -> tuple[int | None, int | None, int | None] | None:
    """``(start, end, total)`` from ``bytes a-b/T`` (``None`` for ``*`` parts), or None
    if the value is not a byte Content-Range at all."""
    if not value:
        return None
    m = _CONTENT_RANGE.match(value)
    if m is None:
        return None
    start = int(m.group(1)) if m.group(1) is not None else None
    end = int(m.group(2)) if m.group(2) is not None else None
    total = int(m.group(3)) if m.group(3) is not None else None
    # An inverted range (end < start) is returned as is: it matches no request,
    # but its total still tells the caller the object's size.
    return start, end, total


_RETRIED_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def status_error(status: int, path: str | None, *, detail: str = "",
                 retry_after: str | None = None,
                 content_range: str | None = None) -> StoreError:
    """The typed error for an HTTP error status (a Retryable for transient ones)."""
    what = f"HTTP {status}" + (f" ({redact_text(detail)[:300]})" if detail else "")
    if status in (401, 403):
        return AccessDeniedError(f"access denied: {what}", path=path)
    if status in (404, 410):
        if "nosuchbucket" in detail.lower() or "bucket does not exist" in detail.lower():
            # S3's NoSuchBucket, GCS' "The specified bucket does not exist.": the bucket
            # is what is missing (a misspelt bucket, another account's or region's)
            return NotFoundError(f"the bucket does not exist: {what}", path=path)
        return NotFoundError(f"no such object: {what}", path=path)
    if status == 412:
        return ObjectChangedError(f"the object changed since its metadata was read: {what}",
                                  path=path)
    if status == 416:
        cr = parse_content_range(content_range)
        return Unsatisfiable(cr[2] if cr else None, path)
    err = StoreError(f"request failed: {what}", path=path)
    if status in _RETRIED_STATUS or (500 <= status < 600 and status not in (501, 505)):
        return Retryable(err, parse_retry_after(retry_after))
    return err


class RangedStore(StoreBase):
    """Tail reads, pinned ranged reads and streams over a store's single GET."""

    retry: RetryPolicy = DEFAULT_RETRY
    chunk_size: int = CHUNK_SIZE
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    #: The slowest body accepted, in bytes a second, averaged over the request.
    min_throughput: float = DEFAULT_MIN_THROUGHPUT
    #: Seconds one operation (a tail read, a ranged read, a stream) may take, retries included.
    timeout: float | None = None
    #: The most a whole-object body may be when a server ignores Range (a tail read then
    #: needs the whole object): past it the read is refused, never downloaded.
    max_whole_body: int = DEFAULT_MAX_WHOLE_BODY
    #: When a pinned range read is sent a second time (see stores/hedge.py); None: never.
    hedge: HedgePolicy | None = DEFAULT_HEDGE
    _hedge_state: HedgeState | None = None
    _measurements: Measurements | None = None
    #: Whether the store's connections fail a read silent for ``read_timeout`` on their
    #: own (aiohttp's ``sock_read``), so a body's reads need no timer while the request's
    #: deadline is further off than that.
    silence_timeout: bool = False
    _listed: ListedSizes | None = None

    @property
    def listed_sizes(self) -> ListedSizes:
        """The sizes this store's listings named (stores/sizes.py: a hint for opens)."""
        if self._listed is None:
            self._listed = ListedSizes()
        return self._listed

    # ----------------------------------------------------------- per store ---
    async def _open(self, key: str, range_: str | None, pin: str | None) -> Reply:
        """Send one GET (``Range: range_`` if given, pinned to ``pin`` if given).

        Raises the typed error for an error status (``status_error``), Retryable
        for transient failures, Unsatisfiable for a 416.
        """
        raise NotImplementedError

    def _version_of(self, reply: Reply, total: int | None) -> str | None:
        raise NotImplementedError

    def _pin_matches(self, pin: str, reply: Reply, total: int | None) -> bool | None:
        """Whether ``reply`` is of version ``pin``; None if it does not say (check after)."""
        raise NotImplementedError

    def _pinned_size(self, pin: str) -> int | None:
        """The object size a version token implies, if it records one."""
        return None

    async def version_lookup(self, key: str) -> ObjectInfo | None:
        """Size and version from a metadata request, for
        servers whose data responses do not name the version; None if the store has no
        such request.  The hook a ranged store overrides (HEAD for S3, the JSON API for
        GCS, a one-byte GET for HTTP); without one, a reply that does not show its
        version cannot be proven to be the pinned one, and the read is refused."""
        return None

    async def _info_once(self, key: str) -> ObjectInfo:
        raise NotImplementedError

    # -------------------------------------------------------------- shared ---
    def _op_deadline(self) -> float | None:
        """When the whole operation (retries included) must be over: ``timeout`` from now."""
        if self.timeout is None:
            return None
        return asyncio.get_running_loop().time() + self.timeout

    def _request_deadline(self, length: int | None, op_deadline: float | None) -> float:
        """When one request must have delivered its whole body.

        Silence is caught by ``read_timeout``; this also ends a body that keeps
        trickling (a byte now and then resets a silence timer forever): the
        time to connect and for a first byte, plus the body at ``min_throughput``.
        """
        n = self.max_whole_body if length is None else length
        budget = self.connect_timeout + self.read_timeout + n / self.min_throughput
        deadline = asyncio.get_running_loop().time() + budget
        return deadline if op_deadline is None else min(deadline, op_deadline)

    async def _open_until(self, key: str, range_: str | None, pin: str | None,
                          deadline: float, path: str) -> Reply:
        """``_open`` with a deadline on the response and on every read of its body."""
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        opened = watch_connections()
        try:
            async with asyncio.timeout_at(deadline):
                reply = await self._open(key, range_, pin)
        except TimeoutError:
            raise Retryable(self._late(path)) from None
        m = self.measurements_of(key)
        headers = loop.time()
        reply.body = self._timed(reply.body, deadline, path, headers - t0, m, headers,
                                 opened[0])
        return reply

    def endpoint_for(self, key: str) -> str:
        """Where requests for ``key`` go (``scheme://host:port``): what measurements are
        kept per.  Keys that are URLs (HTTP) name it; other stores override."""
        return endpoint_of(key)

    def measurements_of(self, key: str) -> Measurements:
        """The process's recent requests to ``key``'s endpoint, for a calibrated profile."""
        m = measurements_for(self.endpoint_for(key))
        self._measurements = m
        return m

    @property
    def measurements(self) -> Measurements:
        """The recent requests of the endpoint this store used last."""
        if self._measurements is None:
            self._measurements = Measurements()
        return self._measurements

    async def _open_pinned(self, key: str, range_: str, pin: str | None, deadline: float,
                           path: str) -> Reply:
        """``_open_until``, hedged when the read is pinned to a version and hedging is on."""
        policy = self.hedge
        if pin is None or policy is None:
            return await self._open_until(key, range_, pin, deadline, path)
        state = self._hedge_state
        if state is None or state.policy is not policy:
            state = self._hedge_state = HedgeState(policy)
        return await hedged(state, lambda: self._open_until(key, range_, pin, deadline, path),
                            self._drop_reply)

    def _drop_reply(self, reply: Reply | None) -> None:
        """Release the reply of a copy that lost the race (unread: its connection closes)."""
        if reply is not None:
            reply.release()

    @property
    def hedge_state(self) -> HedgeState | None:
        """This store's first-byte times and hedge counts (None before a hedgeable read)."""
        return self._hedge_state

    def _late(self, path: str) -> StoreTimeoutError:
        what = (f"the {self.timeout:g} s timeout" if self.timeout is not None else
                "its deadline (connect_timeout + read_timeout + size / min_throughput)")
        return StoreTimeoutError(f"the request did not finish within {what}", path=path)

    async def _timed(self, body: AsyncGenerator[bytes, None], deadline: float, path: str,
                     first_byte: float, m: Measurements, t0: float, fresh: bool
                     ) -> AsyncGenerator[bytes, None]:
        """The body, ended at ``deadline``, and measured (what it moved, how fast) for
        a calibrated profile, even when its reader stops taking it early.

        The timeout wraps each read only, never a yield: the consumer's own awaits
        between chunks must not be cancelled by it.  A store whose connections end a
        silent read after ``read_timeout`` (``silence_timeout``) needs no timer of
        its own while the deadline is further off than that: any read either
        returns or fails before the deadline.  That spares a timer armed and
        cancelled per chunk on the event loop, most of a body's chunks.

        The body's time runs from the headers' arrival (``t0``, ``first_byte`` after the
        request), not from when its reader first asks: bytes that arrived meanwhile
        would otherwise look free.  ``fresh``: the request opened its connection."""
        loop = asyncio.get_running_loop()
        silence = self.read_timeout if self.silence_timeout else None
        n = 0
        ticket = m.begin()
        try:
            async with aclosing(body) as chunks:
                while True:
                    try:
                        if silence is not None and deadline - loop.time() > silence:
                            chunk = await anext(chunks)
                        else:
                            async with asyncio.timeout_at(deadline):
                                chunk = await anext(chunks)
                    except StopAsyncIteration:
                        return
                    except TimeoutError:
                        raise Retryable(self._late(path)) from None
                    n += len(chunk)
                    yield chunk
        finally:
            shared = m.end(ticket)
            if n:
                m.record(first_byte, n, loop.time() - t0, fresh, shared)

    async def _within(self, coro: Any, op_deadline: float | None, path: str) -> Any:
        if op_deadline is None:
            return await coro
        try:
            async with asyncio.timeout_at(op_deadline):
                return await coro
        except TimeoutError:
            raise self._late(path) from None

    async def info(self, key: str) -> ObjectInfo:
        path = self._display(key)
        op = self._op_deadline()

        async def attempt() -> ObjectInfo:
            attempts = self.retry.start(path)
            while True:
                try:
                    return await self._info_once(key)
                except Retryable as e:
                    await attempts.failed(e)

        return await self._within(attempt(), op, path)

    async def read_tail(self, key: str, length: int) -> TailRead:
        path = self._display(key)
        check_range(0, length, path)
        if length == 0:
            return TailRead(b"", await self.info(key))
        op = self._op_deadline()

        async def attempt() -> TailRead:
            attempts = self.retry.start(path)
            while True:
                try:
                    return await self._tail_once(key, length, path, op)
                except Retryable as e:
                    await attempts.failed(e)

        return await self._within(attempt(), op, path)

    async def read_head(self, key: str, length: int) -> TailRead | None:
        """The first ``length`` bytes (all of a smaller object) with the object's size and
        version, or None when one response cannot give all three (a server that ignores
        Range, names no version, or fails before its body: no retries).

        A speculative read, sent beside the tail read before the object's version is
        known (a SuperDB v23 file keeps its objects' metadata at its head): the caller
        uses the bytes only when the version is the tail read's.  A body that breaks
        once the version is known resumes from the byte it reached, as every ranged
        read does (a ranged re-GET of the rest, pinned to that version)."""
        path = self._display(key)
        check_range(0, length, path)
        if length == 0:
            return None
        try:
            reply = await self._open_until(key, f"bytes=0-{length - 1}", None,
                                           self._request_deadline(length, self._op_deadline()),
                                           path)
        except (Unsatisfiable, Retryable, StoreError, StoreTimeoutError, OSError):
            return None
        parts: list[bytes] = []
        try:
            cr = parse_content_range(reply.header("content-range"))
            if reply.status != 206 or cr is None or None in cr:
                return None
            start, end, total = cr
            if start != 0 or total is None or end != min(length, total) - 1:
                return None
            version = self._version_of(reply, total)
            if version is None:
                return None
            try:
                async with aclosing(self._chunks(reply, 0, end + 1, path,
                                                 strict=True)) as body:
                    async for chunk in body:
                        parts.append(chunk)
            except Retryable:
                if not parts:
                    return None  # nothing to resume from: the open reads the head itself
        except (Retryable, StoreError, StoreTimeoutError, OSError):
            return None
        finally:
            reply.release()
        got = sum(map(len, parts))
        if got < end + 1:  # the body broke: the rest, pinned to the version
            try:
                parts.append(bytes(await self.read_range(key, got, end + 1 - got, version)))
            except (StoreError, StoreTimeoutError, OSError):
                return None
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        return TailRead(bytes(data), ObjectInfo(total, version))

    async def read_tail_unless(self, key: str, length: int, version: str) -> TailRead | None:
        """``read_tail``, unless the object is still ``version``: then None, and no body.

        Conditional on the version's ETag (``If-None-Match``); a version that is
        not a strong ETag, or a server that ignores the condition, gives the
        tail as ``read_tail`` would.
        """
        if not version.startswith('"'):
            return await self.read_tail(key, length)
        token = IF_NONE_MATCH.set(version)
        try:
            return await self.read_tail(key, length)
        except NotModified:
            return None
        finally:
            IF_NONE_MATCH.reset(token)

    async def _tail_once(self, key: str, n: int, path: str,
                         op: float | None = None) -> TailRead:
        deadline = self._request_deadline(n, op)
        try:
            reply = await self._open_until(key, f"bytes=-{n}", None, deadline, path)
        except Unsatisfiable:
            # An empty object, or a server that refuses a suffix longer than the
            # object: either way the object is smaller than n, so read it whole.
            reply = await self._open_until(key, None, None, self._request_deadline(None, op),
                                           path)
        try:
            if reply.status == 206:
                cr = parse_content_range(reply.header("content-range"))
                if cr is None or cr[0] is None or cr[1] is None:
                    raise Retryable(StoreError(
                        f"a suffix request got an unusable Content-Range "
                        f"{_shown(reply.header('content-range'))}", path=path))
                start, end, total = cr
                if total is None:
                    raise StoreError("the server did not report the object's size "
                                     "(Content-Range total '*')", path=path)
                want = min(n, total)
                if end != total - 1 or end - start + 1 != want:
                    raise Retryable(StoreError(
                        f"asked for the last {n} bytes, got Content-Range "
                        f"{_shown(reply.header('content-range'))}", path=path))
                data = await _joined(self._chunks(reply, 0, want, path, strict=True))
            else:  # 200: the server ignored the Range header and sent everything
                data, total = await self._last_bytes(reply, n, path)
            version = self._version_of(reply, total)
        finally:
            reply.release()
        if version is None:
            info = await self.version_lookup(key)
            if info is not None:
                if info.size != total:
                    raise Retryable(StoreError("the object changed during the tail read",
                                               path=path))
                version = info.version
        return TailRead(data if isinstance(data, bytes) else bytes(data),
                        ObjectInfo(total, version))

    async def _last_bytes(self, reply: Reply, n: int, path: str) -> tuple[bytearray, int]:
        """The last ``n`` bytes of a whole-object body, and its length (memory: ~2n).

        The body is read only up to ``max_whole_body``: a server that ignores
        Range on a large (or endless) object is refused, not downloaded.
        """
        announced = reply.content_length()
        limit = self.max_whole_body
        if announced is not None and announced > limit:
            raise StoreError(f"the server ignored the Range header and would send the whole "
                             f"{announced}-byte object; refused above {limit} bytes "
                             "(max_whole_body)", path=path)
        keep = bytearray()
        total = 0
        async with aclosing(reply.body) as body:
            async for chunk in body:
                total += len(chunk)
                if total > limit:
                    raise StoreError(f"the server ignored the Range header and sent more "
                                     f"than {limit} bytes (max_whole_body); refused",
                                     path=path)
                keep += chunk
                if len(keep) > 2 * n:
                    del keep[:-n]
        if announced is not None and announced != total:
            raise Retryable(StoreError(f"short response: the body ended after {total} of "
                                       f"its {announced} bytes", path=path))
        return keep[-n:] if len(keep) > n else keep, total

    async def _chunks(self, reply: Reply, skip: int, want: int, path: str, *,
                      strict: bool) -> AsyncGenerator[bytes, None]:
        """``want`` bytes of the body after ``skip``; ``strict``: no more may follow."""
        got = 0
        async with aclosing(reply.body) as body:
            async for chunk in body:
                if skip:
                    if len(chunk) <= skip:
                        skip -= len(chunk)
                        continue
                    chunk, skip = chunk[skip:], 0
                room = want - got
                if len(chunk) > room:
                    if strict:
                        raise Retryable(StoreError(
                            f"the response body is longer than the {want} bytes its "
                            "Content-Range announced", path=path))
                    chunk = chunk[:room]
                got += len(chunk)
                if chunk:
                    yield chunk
                if got == want and not strict:
                    return
        if got < want:
            raise Retryable(StoreError(f"short response: the body ended after {got} of "
                                       f"{want} bytes", path=path))

    def stream_range(self, key: str, offset: int, length: int,
                     version: str | None = None) -> AsyncIterator[bytes]:
        path = self._display(key)
        check_range(offset, length, path)
        return self._stream(key, offset, length, version, path)

    async def _stream(self, key: str, offset: int, length: int, pin: str | None,
                      path: str) -> AsyncGenerator[bytes, None]:
        end = offset + length
        pos = offset
        op = self._op_deadline()
        attempts = self.retry.start(path, deadline=op)
        while pos < end:
            try:
                deadline = self._request_deadline(end - pos, op)
                reply = await self._open_pinned(key, f"bytes={pos}-{end - 1}", pin, deadline,
                                                path)
                try:
                    skip, total = self._check_reply(reply, pos, end, pin, path)
                    chunks = self._chunks(reply, skip, end - pos, path,
                                          strict=reply.status == 206)
                    if pin is None:
                        # Later tries (a resumed body) must read this same version.
                        pin = self._version_of(reply, total)
                    elif self._pin_matches(pin, reply, total) is None:
                        # The response does not show its version (a proxy that drops
                        # ETag and ignores If-Match): hold every byte until a metadata
                        # request confirms it, and refuse if nothing can.
                        data = await _gather(chunks, end - pos)
                        info = await self._within(self.version_lookup(key), deadline, path)
                        if info is None or info.version != pin:
                            raise _changed(path, info.version if info else None, pin,
                                           unproven=info is None)
                        for i in range(0, len(data), self.chunk_size):
                            piece = bytes(data[i:i + self.chunk_size])
                            pos += len(piece)
                            yield piece
                        continue
                    async with aclosing(chunks) as stream:
                        async for chunk in stream:
                            pos += len(chunk)
                            yield chunk
                finally:
                    reply.release()
            except Unsatisfiable as e:
                raise self._outside(e.total, pos, end, pin, path) from None
            except Retryable as e:
                await attempts.failed(e)

    def _check_reply(self, reply: Reply, pos: int, end: int, pin: str | None,
                     path: str) -> tuple[int, int | None]:
        """Validate a ranged response: (bytes of the body to skip, object size if known)."""
        if reply.status == 206:
            cr = parse_content_range(reply.header("content-range"))
            if cr is None or cr[0] is None:
                raise Retryable(StoreError(
                    f"asked for bytes {pos}-{end - 1}, got an unusable Content-Range "
                    f"{_shown(reply.header('content-range'))}", path=path))
            start, last, total = cr
            skip = 0
        else:  # 200: the whole object; the range is cut out of it below
            start, last, total = pos, end - 1, reply.content_length()
            skip = pos
        if pin is not None:
            size = self._pinned_size(pin)
            if (size is not None and total is not None and size != total) or \
                    self._pin_matches(pin, reply, total) is False:
                raise _changed(path, self._version_of(reply, total), pin)
        if total is not None and end > total:
            raise self._outside(total, pos, end, pin, path)
        if start != pos or last != end - 1:
            raise Retryable(StoreError(
                f"asked for bytes {pos}-{end - 1}, got Content-Range "
                f"{_shown(reply.header('content-range'))}", path=path))
        announced = reply.content_length()
        if reply.status == 206 and announced is not None and announced != end - pos:
            raise Retryable(StoreError(
                f"short response: asked for {end - pos} bytes, the response "
                f"announced {announced}", path=path))
        return skip, total

    def _outside(self, total: int | None, pos: int, end: int, pin: str | None,
                 path: str) -> StoreError:
        size = self._pinned_size(pin) if pin is not None else None
        if size is not None and total is not None and size != total:
            return _changed(path, None, pin)
        of = f"the {total}-byte object" if total is not None else "the object"
        return TruncatedError(f"bytes {pos}-{end - 1} lie beyond the end of {of}", path=path)


def _changed(path: str, now: str | None, pin: str | None, *,
             unproven: bool = False) -> ObjectChangedError:
    if unproven:
        return ObjectChangedError(f"a response did not name its version and the store has no "
                                  f"other way to check it is still {pin}; refused", path=path)
    found = f", found {now}" if now else ""
    return ObjectChangedError(f"the object was replaced since its metadata was read "
                              f"(expected version {pin}{found})", path=path)


def _shown(value: str | None) -> str:
    """A header value for an error message, cut short (a hostile one may be huge)."""
    return repr(value if value is None or len(value) <= 80 else value[:80] + "...")


async def _gather(chunks: AsyncGenerator[bytes, None], want: int) -> bytearray:
    buf = bytearray(want)
    view = memoryview(buf)
    got = 0
    async with aclosing(chunks) as stream:
        async for chunk in stream:
            view[got:got + len(chunk)] = chunk
            got += len(chunk)
    return buf


async def _joined(chunks: AsyncGenerator[bytes, None]) -> bytes:
    """The chunks as one immutable bytes object, copied once (not at all for one chunk).

    A tail read becomes TailRead's bytes: gathering it into a preallocated
    bytearray and then converting that to bytes copied it twice, on the event
    loop, on every open (the tail is often the whole object).
    """
    parts: list[bytes] = []
    async with aclosing(chunks) as stream:
        async for chunk in stream:
            parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)
