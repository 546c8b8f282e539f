"""The network simulator charges what its docstring says: a round trip per request, a
connection's setup (TCP, plus TLS round trips) once per new connection, and bandwidth
per connection; and it counts requests and connections opened at the server.

Benchmark figures of a cold pool against a warm one mean nothing unless the
simulator makes a new connection cost more than a reused one, so these tests time
raw HTTP requests through it (lower bounds are what the proxy guarantees; the upper
bounds leave room for a loaded machine).
"""

from __future__ import annotations

import http.client
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import netsim

from bench.net import HOST
from tests.support import servers

RTT = 0.15
PROFILES = {
    "plain": netsim.NetProfile("plain", RTT, 0.0),
    "tls13": netsim.NetProfile("tls13", RTT, 0.0, tls=1),
    "tls12": netsim.NetProfile("tls12", RTT, 0.0, tls=2),
    "slow": netsim.NetProfile("slow", RTT, 4e6),
}
SLACK = 0.25  # seconds a loaded 2-core machine may add to one exchange


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[netsim.SimStore]:
    if servers.nginx_binary() is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    root = tmp_path_factory.mktemp("data")
    (root / "b").mkdir()
    (root / "b" / "small").write_bytes(b"x" * 1000)
    (root / "b" / "big").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    store = netsim.SimStore(root, tmp_path_factory.mktemp("sim"), PROFILES).start()
    yield store
    store.stop()


def _get(conn: http.client.HTTPConnection, path: str = "/b/small") -> tuple[float, bytes]:
    t = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()
    first = time.perf_counter() - t
    body = resp.read()
    assert resp.status == 200
    return first, body


def _exchanges(sim: netsim.SimStore, profile: str) -> tuple[float, float]:
    """Seconds from connecting to the first response, and of a second request on the
    same (now warm) connection."""
    conn = http.client.HTTPConnection(HOST, sim.ports[profile], timeout=30)
    t = time.perf_counter()
    conn.connect()
    _get(conn)
    cold = time.perf_counter() - t
    warm, _ = _get(conn)
    conn.close()
    return cold, warm


@pytest.mark.parametrize(("profile", "tls"), [("plain", 0), ("tls13", 1), ("tls12", 2)])
def test_new_connection_pays_tcp_and_tls_round_trips(sim: netsim.SimStore, profile: str,
                                                     tls: int) -> None:
    cold, warm = _exchanges(sim, profile)
    setup = (1 + tls) * RTT
    assert PROFILES[profile].setup == pytest.approx(setup)
    assert RTT <= warm < RTT + SLACK  # a reused connection: one round trip
    assert setup + RTT <= cold < setup + RTT + SLACK  # a new one: its setup first


def test_setup_is_charged_per_connection_not_per_request(sim: netsim.SimStore) -> None:
    conn = http.client.HTTPConnection(HOST, sim.ports["tls13"], timeout=30)
    conn.connect()
    _get(conn)
    times = [_get(conn)[0] for _ in range(3)]
    conn.close()
    assert all(RTT <= t < RTT + SLACK for t in times)


def test_bandwidth_is_paced_per_connection(sim: netsim.SimStore) -> None:
    conn = http.client.HTTPConnection(HOST, sim.ports["slow"], timeout=30)
    conn.connect()
    _get(conn)  # setup out of the way
    t = time.perf_counter()
    _, body = _get(conn, "/b/big")
    took = time.perf_counter() - t
    conn.close()
    assert body == bytes(range(256)) * 4096
    assert RTT + len(body) / 4e6 <= took + 0.01  # 1 MiB at 4 MB/s: 0.26 s after the first byte


def test_counts_requests_and_connections_opened(sim: netsim.SimStore) -> None:
    mark = netsim.log_mark(sim.log)
    conns = [http.client.HTTPConnection(HOST, sim.ports["plain"], timeout=30) for _ in range(2)]
    for c in conns:
        _get(c)
    _get(conns[0])
    _get(conns[0], "/b/big")
    for c in conns:
        c.close()
    direct = http.client.HTTPConnection(HOST, sim.ports["local"], timeout=30)
    _get(direct)
    direct.close()
    count = netsim.log_count(sim.log, mark, settle=0.3)
    assert (count.requests, count.gets, count.connections) == (5, 5, 3)
    assert count.bytes == 4 * 1000 + (1 << 20)


def test_cold_floor_adds_one_setup() -> None:
    p = netsim.PROFILES["s3"]
    assert p.setup == pytest.approx(2 * p.rtt)  # TCP + TLS 1.3
    assert p.floor(16_000_000, cold=True) - p.floor(16_000_000) == pytest.approx(p.setup)
