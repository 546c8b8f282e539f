"""A simulated object store on 127.0.0.1: nginx behind a latency/bandwidth proxy.

nginx (Debian's ``nginx-light``) serves the data directory with sendfile, so
``GET /bucket/key`` and ``HEAD /bucket/key`` answer like S3 path-style reads
(ranges, suffix ranges, ETag, If-Match), and writes one access-log line per
request with its body bytes: requests and bytes are counted at the server,
not trusted from any client.

No netem on these kernels, so the network is simulated in user space by
:func:`serve_proxy`, an asyncio TCP proxy in its own process (so its work
never holds a reader's GIL), one listener per profile.  Each client
connection gets its own upstream connection to nginx, and:

* every time the client sends a request (a read from the client after the
  previous response began, i.e. the next HTTP/1.1 request on the connection;
  clients here do not pipeline), the response's first byte is held until
  ``RTT`` after the request reached the proxy: one full round trip, the
  request's way there and the first byte's way back;
* the response's bytes are then released in chunks of at most 128 KiB, each
  only once ``start + bytes_so_far / bandwidth`` has passed (an absolute
  schedule per response, so scheduler jitter does not accumulate): a B-byte
  response completes ``RTT + B / bandwidth`` after its request, per
  connection.  Connections do not share a cap, as S3's per-connection
  throughput does not; opening a connection costs nothing (a warm pool).

Profiles: ``s3`` 50 ms / 100 MB/s with TLS 1.3 (a new connection: 2 round
trips before its request), ``far`` 150 ms / 50 MB/s with TLS 1.2 (3 round
trips), ``local`` direct to nginx with no proxy.

Counted at the server: requests, body bytes, and connections opened (nginx's
``$connection_requests`` is 1 on a connection's first request, and every
client connection gets its own upstream connection).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The port helpers the test servers use (bench/net.py): one copy for both.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.net import HOST, free_port, stop_process, wait_for_port

CHUNK = 128 << 10
FIRST_PACKET = 1460  # one TCP segment: what arrives first after the round trip


@dataclass(frozen=True)
class NetProfile:
    name: str
    rtt: float  # seconds
    bandwidth: float  # bytes per second per connection; 0 = unlimited
    tls: int = 0  # round trips of a TLS handshake: 0 plain HTTP, 1 TLS 1.3, 2 TLS 1.2

    @property
    def setup(self) -> float:
        """Seconds a new connection costs before its first request can be sent."""
        return (1 + self.tls) * self.rtt if self.rtt else 0.0

    def floor(self, nbytes: int, round_trips: int = 2, connections: int = 16,
              cold: bool = False) -> float:
        """Two round trips (metadata, then data) plus the bytes over ``connections``;
        ``cold``: plus one connection's setup (a pool with no open connection)."""
        if not self.bandwidth:
            return 0.0
        return (round_trips * self.rtt + nbytes / (self.bandwidth * connections)
                + (self.setup if cold else 0.0))


PROFILES = {
    "s3": NetProfile("s3", 0.050, 100e6, tls=1),
    "far": NetProfile("far", 0.150, 50e6, tls=2),
    "local": NetProfile("local", 0.0, 0.0),
}


# ------------------------------------------------------------------ proxy ---

class _Conn:
    """Per-connection schedule: when the current response may start, and its bytes so far."""

    __slots__ = ("fresh", "gate", "last", "port", "ready", "sent", "start")

    def __init__(self, ready: float) -> None:
        self.ready = ready  # when a real client could send its first request (setup done)
        self.gate = 0.0
        self.start = 0.0
        self.sent = 0
        self.fresh = False
        self.last = 0.0  # when the current response's latest bytes were written
        self.port = 0  # the listener (profile) this connection came in on


async def _pipe_requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         conn: _Conn, rtt: float) -> None:
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(65536):
            if not conn.fresh:  # the first bytes of a new request
                conn.gate = max(loop.time(), conn.ready) + rtt
                conn.fresh = True
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if not writer.is_closing():
            writer.close()


async def _sleep_until(loop: asyncio.AbstractEventLoop, when: float) -> None:
    now = loop.time()
    if when > now:
        await asyncio.sleep(when - now)


async def _pipe_responses(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          conn: _Conn, bandwidth: float) -> None:
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(CHUNK):
            now = loop.time()
            if conn.fresh:  # the first bytes of the response to the latest request
                conn.fresh = False
                _delivered(conn)
                conn.start = max(now, conn.gate)
                conn.sent = 0
                if bandwidth and len(data) > FIRST_PACKET:
                    # the headers (and the first packet) go out after the round trip;
                    # held until the whole read's bytes were due, they would arrive a
                    # read's transfer late, as no network delivers them
                    conn.sent = FIRST_PACKET
                    await _sleep_until(loop, conn.start + FIRST_PACKET / bandwidth)
                    writer.write(data[:FIRST_PACKET])
                    data = data[FIRST_PACKET:]
            conn.sent += len(data)
            due = conn.start + conn.sent / bandwidth if bandwidth else conn.start
            await _sleep_until(loop, due)
            writer.write(data)
            await writer.drain()
            conn.last = loop.time()
    except (ConnectionError, OSError):
        pass
    finally:
        _delivered(conn)
        if not writer.is_closing():
            writer.close()


_LOG: list[Any] = []  # the open response log, if the proxy was given one


def _delivered(conn: _Conn) -> None:
    """Log the response just finished: listener port, bytes, seconds from its first byte
    to its last (what the simulated connection really delivered, under this machine's
    load), for benchmarks that check a client's measurement against it."""
    if _LOG and conn.sent and conn.last > conn.start:
        _LOG[0].write(f"{conn.port} {conn.sent} {conn.last - conn.start:.6f}\n")
        _LOG[0].flush()
    conn.sent = 0


async def _proxy_main(listen: list[tuple[int, float, float, float]], upstream: int) -> None:
    servers = []
    for port, rtt, bw, setup in listen:
        async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter,
                         rtt: float = rtt, bw: float = bw, setup: float = setup,
                         port: int = port) -> None:
            ready = asyncio.get_running_loop().time() + setup
            try:
                ur, uw = await asyncio.open_connection(HOST, upstream)
            except OSError:
                cw.close()
                return
            for w in (cw, uw):
                sock = w.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(ready)
            conn.port = port
            await asyncio.gather(_pipe_requests(cr, uw, conn, rtt),
                                 _pipe_responses(ur, cw, conn, bw))

        servers.append(await asyncio.start_server(handle, HOST, port, backlog=1024,
                                                  limit=CHUNK))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    for s in servers:
        s.close()


def serve_proxy(args: list[str]) -> None:
    """``upstream_port port:rtt:bw:setup [...]`` (the proxy process's command line);
    ``$NETSIM_RESPONSE_LOG``: a file to log each response's delivery to."""
    upstream = int(args[0])
    where = os.environ.get("NETSIM_RESPONSE_LOG")
    if where:
        _LOG.append(open(where, "a", encoding="ascii"))  # noqa: SIM115 (lives with the process)
    listen = []
    for spec in args[1:]:
        port, rtt, bw, setup = spec.split(":")
        listen.append((int(port), float(rtt), float(bw), float(setup)))
    asyncio.run(_proxy_main(listen, upstream))


# ------------------------------------------------------------------ nginx ---

_NGINX_CONF = """\
worker_processes 2;
{user}
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format counted '$request_method $status $body_bytes_sent $connection_requests '
                       '"$http_range" $uri';
    access_log {prefix}/access.log counted;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    default_type application/octet-stream;
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 100000;
    keepalive_timeout 120s;
    open_file_cache max=4096 inactive=600s;
    server {{
        listen {host}:{port} backlog=1024;
        root {root};
        etag on;
    }}
}}
"""


@dataclass
class Count:
    requests: int = 0
    gets: int = 0
    heads: int = 0
    other: int = 0
    bytes: int = 0
    errors: int = 0
    connections: int = 0  # connections opened (their first request is in the window)


class SimStore:
    """nginx + the delay proxy, started and stopped by the benchmark."""

    ACCESS_KEY = "bench-access-key"
    SECRET_KEY = "bench-secret-key"
    REGION = "us-east-1"

    def __init__(self, root: Path, workdir: Path,
                 profiles: dict[str, NetProfile] | None = None,
                 response_log: Path | None = None) -> None:
        self.root = root
        self.work = workdir
        self.profiles = PROFILES if profiles is None else profiles
        self.nginx_port = free_port()
        self.ports = {"local": self.nginx_port}
        self._procs: list[subprocess.Popen[bytes]] = []
        self.response_log = response_log

    def start(self) -> SimStore:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.access(binary, os.X_OK):
            raise SystemExit("nginx is needed: apt-get update && apt-get install -y nginx-light")
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "tmp").mkdir(exist_ok=True)
        conf = self.work / "nginx.conf"
        user = "user root;" if os.geteuid() == 0 else ""
        conf.write_text(_NGINX_CONF.format(user=user, prefix=self.work, host=HOST,
                                           port=self.nginx_port, root=self.root))
        self.log = self.work / "access.log"
        self.log.touch()
        ng = subprocess.Popen([binary, "-p", str(self.work), "-c", str(conf), "-e",
                               str(self.work / "error.log"), "-g", "daemon off;"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._procs.append(ng)
        wait_for_port(self.nginx_port, proc=ng, what="nginx")
        specs = []
        for name, p in self.profiles.items():
            if name == "local":
                continue
            self.ports[name] = free_port()
            specs.append(f"{self.ports[name]}:{p.rtt}:{p.bandwidth}:{p.setup}")
        env = dict(os.environ)
        if self.response_log is not None:
            env["NETSIM_RESPONSE_LOG"] = str(self.response_log)
        px = subprocess.Popen([sys.executable, __file__, "proxy", str(self.nginx_port), *specs],
                              env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._procs.append(px)
        for name in self.profiles:
            if name != "local":
                wait_for_port(self.ports[name], proc=px, what="delay proxy")
        return self

    def stop(self) -> None:
        for p in reversed(self._procs):
            stop_process(p)

    def endpoint(self, profile: str) -> str:
        return f"http://{HOST}:{self.ports[profile]}"


def log_mark(log: Path) -> int:
    return log.stat().st_size


def log_count(log: Path, mark: int, settle: float = 0.05) -> Count:
    """Requests and body bytes nginx logged since ``mark`` (after letting it finish writing)."""
    time.sleep(settle)
    c = Count()
    with open(log, "rb") as f:
        f.seek(mark)
        for line in f:
            parts = line.split(b" ", 4)
            if len(parts) < 4:
                continue
            c.requests += 1
            method = parts[0]
            if method == b"GET":
                c.gets += 1
            elif method == b"HEAD":
                c.heads += 1
            else:
                c.other += 1
            if not parts[1].startswith(b"2"):
                c.errors += 1
            c.bytes += int(parts[2])
            c.connections += parts[3] == b"1"
    return c


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "proxy":
        serve_proxy(sys.argv[2:])
    else:
        print(__doc__)
