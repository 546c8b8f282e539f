"""Servers on 127.0.0.1 that the benchmarks and the tests both start (the tests' others are
in tests/support/servers.py, which re-exports these).

- ``Nginx``: Debian's nginx with a generated config serving a temporary directory
  (strong ETags, range requests, If-Match), as a foreground subprocess.
- ``RangeServer``: an aiohttp server in its own thread and event loop that serves
  files with ``web.FileResponse`` (aiohttp's own Range/If-Match handling), also
  answers S3 path-style and GCS JSON-API URLs for the same files, and injects
  faults on request: error statuses with or without Retry-After, a connection
  closed mid-body, short bodies, wrong Content-Range, stalls, ignored ranges,
  slow bodies and objects replaced between requests.  It logs every request,
  so tests can count what the server really saw.

Nothing here talks to anything but 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from bench.net import HOST, FaultSpec, LoopThread, free_port, stop_process, wait_for_port


# ----------------------------------------------------------------- nginx ---
def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


_NGINX_CONF = """\
worker_processes 1;
{user}
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    default_type application/octet-stream;
    server {{
        listen {host}:{port};
        root {root};
        etag on;
    }}
}}
"""


class Nginx:
    """nginx serving ``root`` on a free port (foreground master, our own config)."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary = binary
        self.prefix = workdir
        self.root = workdir / "root"
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Nginx:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.prefix / "tmp").mkdir(exist_ok=True)
        conf = self.prefix / "nginx.conf"
        # As root, workers would switch to "nobody", which cannot read a 0700 tmp dir.
        user = "user root;" if os.geteuid() == 0 else ""
        conf.write_text(_NGINX_CONF.format(user=user, prefix=self.prefix, host=HOST,
                                           port=self.port, root=self.root))
        self._proc = subprocess.Popen(
            [self.binary, "-p", str(self.prefix), "-c", str(conf), "-e",
             str(self.prefix / "error.log"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, proc=self._proc, what="nginx")
        return self

    def stop(self) -> None:
        stop_process(self._proc)

    def url(self, name: str) -> str:
        return f"http://{HOST}:{self.port}/{quote(name)}"

    def put(self, name: str, data: bytes) -> str:
        p = self.root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        existed = p.exists()
        old = p.stat().st_mtime if existed else 0.0
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(data)
        if existed:  # nginx's ETag is mtime (seconds) and size: make a replacement show
            os.utime(tmp, (old + 10, old + 10))
        tmp.replace(p)
        return self.url(name)

    def delete(self, name: str) -> None:
        (self.root / name).unlink()


# ---------------------------------------------------------- range server ---
@dataclass(frozen=True)
class Fault(FaultSpec):
    """One misbehaviour, applied to one request of one object (see RangeServer.inject)."""

    data: bytes | None = None
    chunked: bool = False

    @staticmethod
    def reset(after_bytes: int = 1000) -> Fault:
        """Send the headers and ``after_bytes`` of the body, then close the connection."""
        return Fault("reset", after_bytes=after_bytes)

    @staticmethod
    def short(chunked: bool = False) -> Fault:
        """A well-framed 206 whose body is half of what its Content-Range says (with a
        Content-Length that says so too, or ``chunked`` with none)."""
        return Fault("short", chunked=chunked)

    @staticmethod
    def wrong_range() -> Fault:
        """A 206 whose Content-Range (and body) start one byte after the request."""
        return Fault("wrong_range")

    @staticmethod
    def ignore_range() -> Fault:
        return Fault("ignore_range")

    @staticmethod
    def slow(seconds_per_chunk: float) -> Fault:
        """Send the body in 8 KiB pieces with a pause between them."""
        return Fault("slow", seconds=seconds_per_chunk)

    @staticmethod
    def replace(data: bytes) -> Fault:
        """Replace the object with ``data`` just before answering this request."""
        return Fault("replace", data=data)


@dataclass
class Seen:
    kind: str  # "data" (file or GCS media) or "meta" (GCS metadata)
    method: str
    name: str
    headers: dict[str, str]
    query: dict[str, str]
    time: float


@dataclass
class _Modes:
    no_etag: bool = False  # no ETag (Last-Modified stays)
    no_validators: bool = False  # neither ETag nor Last-Modified
    suffix_416: bool = False  # 416 for a suffix longer than the object
    ignore_range: bool = False  # always 200 with the whole object
    gcs_generation: bool = True  # x-goog-generation header and ifGenerationMatch


_S3_CODES = {400: "BadRequest", 401: "Unauthorized", 403: "AccessDenied", 404: "NoSuchKey",
             429: "TooManyRequests", 500: "InternalError", 503: "SlowDown"}


@dataclass
class _State:
    faults: dict[str, deque[Fault]] = field(default_factory=lambda: defaultdict(deque))
    modes: dict[str, _Modes] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    aborted: int = 0
    streaming: int = 0


class RangeServer:
    """Files under ``root`` over HTTP on 127.0.0.1, plus fault injection.

    URLs: ``/NAME`` (plain HTTP and S3 path style, where NAME is ``bucket/key``),
    ``/download/storage/v1/b/B/o/N?alt=media`` and ``/storage/v1/b/B/o/N`` (GCS
    JSON API, for the object ``B/N``).  It answers like real GCS: the media
    response names its generation (``x-goog-generation``, the file's mtime in
    ns) and honours ``ifGenerationMatch``.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = 0
        self._lock = threading.Lock()
        self._state = _State()
        self._loop = LoopThread("range-server")
        self._runner: Any = None

    # ---------------------------------------------------------- control ---
    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, name: str) -> str:
        return f"{self.endpoint}/{quote(name)}"

    def put(self, name: str, data: bytes) -> str:
        p = self.root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(p)
        return name

    def inject(self, name: str, *faults: Fault) -> None:
        """Misbehave on the next ``len(faults)`` data requests for ``name``, in order."""
        with self._lock:
            self._state.faults[name].extend(faults)

    def mode(self, name: str, **modes: bool) -> None:
        with self._lock:
            self._state.modes[name] = _Modes(**modes)

    def seen(self, name: str | None = None, kind: str | None = "data") -> list[Seen]:
        with self._lock:
            return [s for s in self._state.seen
                    if (name is None or s.name == name) and (kind is None or s.kind == kind)]

    @property
    def aborted(self) -> int:
        """Responses whose client went away before the body was sent."""
        with self._lock:
            return self._state.aborted

    @property
    def streaming(self) -> int:
        """Responses whose body is being sent right now."""
        with self._lock:
            return self._state.streaming

    def reset(self) -> None:
        with self._lock:
            self._state = _State()

    # -------------------------------------------------------- lifecycle ---
    def start(self) -> RangeServer:
        from aiohttp import web

        self.root.mkdir(parents=True, exist_ok=True)
        self._loop.start()

        async def boot() -> int:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                                   shutdown_timeout=1.0)
            await runner.setup()
            site = web.TCPSite(runner, HOST, 0)
            await site.start()
            self._runner = runner
            return int(runner.addresses[0][1])

        self.port = self._loop.run(boot())
        return self

    def stop(self) -> None:
        if self._loop.loop is None:
            return
        if self._runner is not None:
            self._loop.run(self._runner.cleanup())
        self._loop.stop()

    # --------------------------------------------------------- handling ---
    def _route(self, raw_path: str) -> tuple[str, str]:
        for prefix, kind in (("/download/storage/v1/b/", "gcs-media"),
                             ("/storage/v1/b/", "gcs-meta")):
            if raw_path.startswith(prefix):
                bucket, _, name = raw_path[len(prefix):].partition("/o/")
                return kind, unquote(bucket) + "/" + unquote(name)
        return "file", unquote(raw_path.lstrip("/"))

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        kind, name = self._route(request.raw_path.split("?", 1)[0])
        query = {k: v for k, v in request.query.items()}
        if kind == "gcs-media" and query.get("alt") != "media":
            kind = "gcs-meta"
        with self._lock:
            self._state.seen.append(Seen("meta" if kind == "gcs-meta" else "data",
                                         request.method, name, dict(request.headers), query,
                                         time.monotonic()))
            queue = self._state.faults.get(name)
            fault = queue.popleft() if queue and kind != "gcs-meta" else None
            modes = self._state.modes.get(name, _Modes())
        if fault is not None and fault.kind == "replace":
            assert fault.data is not None
            self.put(name, fault.data)
            fault = None
        if fault is not None and fault.kind == "status":
            headers = {"Content-Type": "application/xml"}
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            code = _S3_CODES.get(fault.status, str(fault.status))
            body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                    f"<Message>injected {fault.status}</Message></Error>")
            return web.Response(status=fault.status, text=body, headers=headers)
        if fault is not None and fault.kind == "stall" and fault.after_bytes == 0:
            await asyncio.sleep(fault.seconds)
            fault = None
        path = self.root / name
        if not path.is_file():
            return web.Response(status=404, content_type="application/xml",
                                text="<Error><Code>NoSuchKey</Code>"
                                     "<Message>no such object</Message></Error>")
        st = path.stat()
        if kind == "gcs-meta":
            bucket, _, obj = name.partition("/")
            return web.json_response({"bucket": bucket, "name": obj, "size": str(st.st_size),
                                      "generation": str(st.st_mtime_ns)})
        extra: dict[str, str] = {}
        if kind == "gcs-media" and modes.gcs_generation:
            generation = str(st.st_mtime_ns)
            wanted = query.get("ifGenerationMatch")
            if wanted is not None and wanted != generation:
                return web.Response(status=412, text="precondition failed")
            extra["x-goog-generation"] = generation
        if fault is None and kind == "file" and modes == _Modes():
            return web.FileResponse(path)  # aiohttp's own Range / If-Match handling
        return await self._serve(request, path, st, fault, modes, extra)

    async def _serve(self, request: Any, path: Path, st: os.stat_result, fault: Fault | None,
                     modes: _Modes, extra: dict[str, str]) -> Any:
        from aiohttp import web

        data = path.read_bytes()
        size = len(data)
        etag = f'"{st.st_mtime_ns:x}-{size:x}"'
        last_modified = formatdate(st.st_mtime, usegmt=True)
        headers = dict(extra)
        if not (modes.no_etag or modes.no_validators):
            headers["ETag"] = etag
        if not modes.no_validators:
            headers["Last-Modified"] = last_modified
        if_match = request.headers.get("If-Match")
        if if_match is not None and etag not in [t.strip() for t in if_match.split(",")]:
            return web.Response(status=412, text="precondition failed")
        ius = request.headers.get("If-Unmodified-Since")
        if ius is not None and int(st.st_mtime) > parsedate_to_datetime(ius).timestamp():
            return web.Response(status=412, text="precondition failed")
        rng = request.headers.get("Range")
        status, start, end = 200, 0, size
        if rng and not modes.ignore_range and not (fault and fault.kind == "ignore_range"):
            spec = rng.split("=", 1)[1]
            first, _, last = spec.partition("-")
            if first == "":
                n = int(last)
                if n == 0 or size == 0 or (modes.suffix_416 and n > size):
                    return web.Response(status=416, headers={"Content-Range": f"bytes */{size}"})
                start, end = max(0, size - n), size
            else:
                start = int(first)
                end = min(size, int(last) + 1) if last else size
                if start >= size:
                    return web.Response(status=416, headers={"Content-Range": f"bytes */{size}"})
            status = 206
        body = data[start:end]
        if status == 206:
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
            if fault is not None and fault.kind == "wrong_range":
                headers["Content-Range"] = f"bytes {start + 1}-{end}/{size}"
                body = data[start + 1:end + 1]
            if fault is not None and fault.kind == "short":
                body = body[:len(body) // 2]
        resp = web.StreamResponse(status=status, headers=headers)
        if not (fault is not None and fault.chunked):
            resp.content_length = len(body)
        await resp.prepare(request)
        if fault is not None and fault.kind == "reset":
            await resp.write(body[:fault.after_bytes])
            request.transport.close()  # mid-body: the client sees the connection drop
            return resp
        state = self._state  # a request outliving its test must not count in the next
        with self._lock:
            state.streaming += 1
        try:
            await self._send(resp, body, fault)
        except (ConnectionError, asyncio.CancelledError):
            with self._lock:
                state.aborted += 1
            raise
        finally:
            with self._lock:
                state.streaming -= 1
        return resp

    async def _send(self, resp: Any, body: bytes, fault: Fault | None) -> None:
        if fault is not None and fault.kind == "stall":
            await resp.write(body[:fault.after_bytes])
            await asyncio.sleep(fault.seconds)
            body = body[fault.after_bytes:]
        if fault is not None and fault.kind == "slow":
            for i in range(0, len(body), 8192):
                await resp.write(body[i:i + 8192])
                await asyncio.sleep(fault.seconds)
            await resp.write_eof()
            return
        await resp.write(body)
        await resp.write_eof()
