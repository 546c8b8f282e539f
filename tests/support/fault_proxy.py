"""A fault-injecting HTTP/1.1 proxy on 127.0.0.1, in front of nginx, moto or the range server.

It is a plain asyncio TCP proxy that understands just enough HTTP/1.1 to know
where one request and one response end (GET/HEAD/PUT with Content-Length or
chunked bodies, keep-alive), so a fault can be aimed at one request of a
connection the client reuses.  It runs in its own thread and event loop, so a
test's loop, a subprocess (the CLI) and a benchmark can all go through it.

Faults (``Fault.*``), queued with :meth:`FaultProxy.inject` and applied in
order to the next requests that ``match``:

- ``reset(after_bytes)``: send the response head and ``after_bytes`` of the
  body, then reset the connection (RST, SO_LINGER 0).
- ``truncate(after_bytes)``: the same, but a clean close (FIN): a short body.
- ``stall(seconds, after_bytes)``: go silent after ``after_bytes`` of the body.
- ``error(status, retry_after)``: answer with an error status (an S3-style XML
  body) without asking the upstream.
- ``wrong_range(shift)``: move the start and end of the response's
  ``Content-Range`` by ``shift`` bytes (the body is unchanged).
- ``refuse()``: reset the connection as soon as the request arrives.
- ``call(fn)``: run ``fn()`` (in the proxy's thread) before forwarding, e.g.
  to replace the object between two requests.
- ``delay(seconds)``: wait before forwarding the request.

``refuse_connections(n)`` resets the next ``n`` connections at accept.  The
proxy counts open connections (``open_connections`` must go back to 0 once
a client has closed), logs every request head, and how often each fault fired.

Nothing here talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.net import HOST, FaultSpec, LoopThread

_HEAD_LIMIT = 64 * 1024
_STATUS_TEXT = {408: "Request Timeout", 429: "Too Many Requests", 500: "Internal Server Error",
                502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
                403: "Forbidden", 404: "Not Found"}
_S3_CODES = {429: "SlowDown", 500: "InternalError", 503: "SlowDown", 403: "AccessDenied",
             404: "NoSuchKey"}


@dataclass(frozen=True)
class Fault(FaultSpec):
    """One misbehaviour of the proxy (the constructors are listed in the module docstring)."""

    shift: int = 1
    fn: Callable[[], object] | None = None

    @staticmethod
    def reset(after_bytes: int = 0) -> Fault:
        return Fault("reset", after_bytes=after_bytes)

    @staticmethod
    def truncate(after_bytes: int = 0) -> Fault:
        return Fault("truncate", after_bytes=after_bytes)

    @staticmethod
    def wrong_range(shift: int = 1) -> Fault:
        return Fault("wrong_range", shift=shift)

    @staticmethod
    def refuse() -> Fault:
        return Fault("refuse")

    @staticmethod
    def call(fn: Callable[[], object]) -> Fault:
        return Fault("call", fn=fn)

    @staticmethod
    def delay(seconds: float) -> Fault:
        return Fault("delay", seconds=seconds)


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]  # lower-case names
    time: float
    fault: str | None = None

    @property
    def range(self) -> str | None:
        return self.headers.get("range")

    @property
    def kind(self) -> str:
        """``tail`` (a suffix range), ``data`` (a ranged read), ``whole`` or ``other``."""
        r = self.range
        if r is None:
            return "whole" if self.method == "GET" else "other"
        return "tail" if r.split("=", 1)[-1].startswith("-") else "data"


def _matches(match: str | Callable[[Request], bool] | None, req: Request) -> bool:
    if match is None:
        return True
    if callable(match):
        return bool(match(req))
    return req.kind == match


@dataclass
class _Rule:
    fault: Fault
    match: str | Callable[[Request], bool] | None


@dataclass
class _Stats:
    opened: int = 0
    open: int = 0
    upstream_open: int = 0
    next_id: int = 0
    live: set[int] = field(default_factory=set)  # ids of open client connections
    fired: Counter[str] = field(default_factory=Counter)
    requests: list[Request] = field(default_factory=list)


class _Closed(Exception):
    """The client or the upstream went away."""


class FaultProxy:
    """An HTTP/1.1-aware TCP proxy from 127.0.0.1:port to ``upstream`` with fault injection."""

    def __init__(self, upstream_port: int, upstream_host: str = HOST) -> None:
        if upstream_host != HOST:
            raise ValueError("the fault proxy only forwards to 127.0.0.1")
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self._lock = threading.Lock()
        self._rules: deque[_Rule] = deque()
        self._refuse = 0
        self._stats = _Stats()
        self._loop = LoopThread("fault-proxy")
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------ control ---
    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.endpoint}/{path.lstrip('/')}"

    def inject(self, *faults: Fault, match: str | Callable[[Request], bool] | None = None
               ) -> None:
        """Apply ``faults`` in order to the next requests that ``match`` (a Request.kind,
        a predicate, or None for any request)."""
        with self._lock:
            self._rules.extend(_Rule(f, match) for f in faults)

    def refuse_connections(self, n: int) -> None:
        with self._lock:
            self._refuse += n

    def reset(self) -> None:
        """Forget queued faults and the request log (open connections are kept)."""
        with self._lock:
            self._rules.clear()
            self._refuse = 0
            self._stats.fired = Counter()
            self._stats.requests = []
            self._stats.opened = 0

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._rules)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._stats.open

    @property
    def upstream_connections(self) -> int:
        with self._lock:
            return self._stats.upstream_open

    @property
    def connections_made(self) -> int:
        with self._lock:
            return self._stats.opened

    @property
    def fired(self) -> Counter[str]:
        with self._lock:
            return Counter(self._stats.fired)

    def requests(self, kind: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self._stats.requests if kind is None or r.kind == kind]

    def mark(self) -> int:
        """A mark: ``wait_idle(since=mark)`` ignores connections opened before it."""
        with self._lock:
            return self._stats.next_id

    def open_since(self, mark: int) -> int:
        with self._lock:
            return sum(1 for i in self._stats.live if i >= mark)

    def wait_idle(self, timeout: float = 5.0, since: int | None = None) -> bool:
        """Wait until no connection is open (either side; with ``since``, none opened
        after that mark); True if that happened."""
        deadline = time.monotonic() + timeout
        while True:
            if since is not None:
                if self.open_since(since) == 0:
                    return True
            elif self.open_connections == 0 and self.upstream_connections == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    # ---------------------------------------------------------- lifecycle ---
    def start(self) -> FaultProxy:
        self._loop.start()

        async def boot() -> int:
            self._server = await asyncio.start_server(self._accept, HOST, 0)
            return int(self._server.sockets[0].getsockname()[1])

        self.port = self._loop.run(boot())
        return self

    def stop(self) -> None:
        if self._loop.loop is None:
            return

        async def down() -> None:
            if self._server is not None:
                self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        self._loop.run(down())
        self._loop.stop()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------- handling ---
    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._connection(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _next_rule(self, req: Request) -> Fault | None:
        with self._lock:
            self._stats.requests.append(req)
            for i, rule in enumerate(self._rules):
                if _matches(rule.match, req):
                    del self._rules[i]
                    req.fault = rule.fault.kind
                    self._stats.fired[rule.fault.kind] += 1
                    return rule.fault
        return None

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self._stats.open += 1
            self._stats.opened += 1
            conn_id = self._stats.next_id
            self._stats.next_id += 1
            self._stats.live.add(conn_id)
            refuse = self._refuse > 0
            if refuse:
                self._refuse -= 1
                self._stats.fired["refuse_connection"] += 1
        up_writer: asyncio.StreamWriter | None = None
        try:
            if refuse:
                _abort(writer)
                return
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            with self._lock:
                self._stats.upstream_open += 1
            while await self._exchange(reader, writer, up_reader, up_writer):
                pass
        except (_Closed, ConnectionError, OSError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError):
            pass
        finally:
            if up_writer is not None:
                _abort(up_writer)
                with self._lock:
                    self._stats.upstream_open -= 1
            if not writer.is_closing():
                writer.close()
            with self._lock:
                self._stats.open -= 1
                self._stats.live.discard(conn_id)

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter
                        ) -> bool:
        """One request and its response; False when the connection is done."""
        head = await _read_head(reader)
        if head is None:
            return False
        method, target, headers = _parse_request(head)
        req = Request(method, target, headers, time.monotonic())
        fault = self._next_rule(req)
        body = await _read_body(reader, headers)
        if fault is not None:
            if fault.kind == "refuse":
                _abort(writer)
                return False
            if fault.kind == "status":
                writer.write(_error_response(fault))
                await writer.drain()
                return headers.get("connection", "").lower() != "close"
            if fault.kind == "call" and fault.fn is not None:
                fault.fn()
            if fault.kind == "delay":
                await _sleep_unless_gone(reader, fault.seconds)
        up_writer.write(head + body)
        await up_writer.drain()
        rhead = await _read_head(up_reader)
        if rhead is None:
            raise _Closed
        status, rheaders = _parse_response(rhead)
        if fault is not None and fault.kind == "wrong_range":
            rhead = _shift_content_range(rhead, fault.shift)
        writer.write(rhead)
        no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        keep = await self._relay_body(up_reader, writer, reader, rheaders, no_body, fault)
        return keep and rheaders.get("connection", "").lower() != "close" and \
            headers.get("connection", "").lower() != "close"

    async def _relay_body(self, up: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          client: asyncio.StreamReader, rheaders: dict[str, str],
                          no_body: bool, fault: Fault | None) -> bool:
        if no_body:
            await writer.drain()
            return True
        limit = fault.after_bytes if fault is not None and fault.kind in (
            "reset", "truncate", "stall") else None
        sent = 0

        async def out(chunk: bytes) -> bool:
            """Forward a piece of the body, applying the fault; False to stop."""
            nonlocal sent, limit
            if limit is not None and sent + len(chunk) >= limit:
                assert fault is not None
                first = chunk[: limit - sent]
                writer.write(first)
                await writer.drain()
                sent += len(first)
                if fault.kind == "reset":
                    _abort(writer)
                    return False
                if fault.kind == "truncate":
                    writer.close()
                    return False
                limit = None  # stall: once
                await _sleep_unless_gone(client, fault.seconds)
                chunk = chunk[len(first):]
            writer.write(chunk)
            await writer.drain()
            sent += len(chunk)
            return True

        if "chunked" in rheaders.get("transfer-encoding", "").lower():
            while True:
                line = await up.readuntil(b"\r\n")
                size = int(line.split(b";")[0].strip(), 16)
                data = await up.readexactly(size + 2) if size else b""
                if not await out(line + data):
                    return False
                if size == 0:
                    trailer = await up.readuntil(b"\r\n")
                    while trailer != b"\r\n":
                        writer.write(trailer)
                        trailer = await up.readuntil(b"\r\n")
                    writer.write(b"\r\n")
                    await writer.drain()
                    return True
        length = rheaders.get("content-length")
        if length is None:  # until the upstream closes
            while chunk := await up.read(65536):
                if not await out(chunk):
                    return False
            writer.close()
            return False
        left = int(length)
        if left == 0 and limit is not None and not await out(b""):
            return False
        while left:
            chunk = await up.read(min(left, 65536))
            if not chunk:
                raise _Closed
            left -= len(chunk)
            if not await out(chunk):
                return False
        return True


# -------------------------------------------------------------- helpers ---
def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), not a clean FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _sleep_unless_gone(client: asyncio.StreamReader, seconds: float) -> None:
    """Sleep, but stop as soon as the client has closed its side."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if client.at_eof() or client.exception() is not None:
            raise _Closed
        await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise _Closed from None
    if len(head) > _HEAD_LIMIT:
        raise _Closed
    return head


def _header_map(lines: list[bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        name, _, value = line.decode("latin-1").partition(":")
        out[name.strip().lower()] = value.strip()
    return out


def _parse_request(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.split(b"\r\n")
    parts = lines[0].decode("latin-1").split(" ")
    method, target = (parts[0], parts[1]) if len(parts) >= 2 else ("?", "?")
    return method, target, _header_map([x for x in lines[1:] if x])


def _parse_response(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.split(b"\r\n")
    parts = lines[0].decode("latin-1").split(" ")
    return int(parts[1]), _header_map([x for x in lines[1:] if x])


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        while True:
            line = await reader.readuntil(b"\r\n")
            out += line
            size = int(line.split(b";")[0].strip(), 16)
            out += await reader.readexactly(size + 2)
            if size == 0:
                return bytes(out)
    n = int(headers.get("content-length", "0") or 0)
    return await reader.readexactly(n) if n else b""


def _error_response(fault: Fault) -> bytes:
    code = _S3_CODES.get(fault.status, "InternalError")
    body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
            f"<Message>injected {fault.status}</Message></Error>").encode()
    head = [f"HTTP/1.1 {fault.status} {_STATUS_TEXT.get(fault.status, 'Error')}",
            "Content-Type: application/xml", f"Content-Length: {len(body)}"]
    if fault.retry_after is not None:
        head.append(f"Retry-After: {fault.retry_after}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_CR = re.compile(rb"(?im)^(content-range:\s*bytes\s+)(\d+)-(\d+)(/\S+)\r$")


def _shift_content_range(head: bytes, shift: int) -> bytes:
    def repl(m: re.Match[bytes]) -> bytes:
        a, b = int(m.group(2)) + shift, int(m.group(3)) + shift
        return m.group(1) + f"{a}-{b}".encode() + m.group(4) + b"\r"

    return _CR.sub(repl, head)
