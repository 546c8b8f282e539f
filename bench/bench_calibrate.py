"""Calibration: does a reader that measures its endpoint plan as well as one told the truth?

``python bench/bench_calibrate.py`` serves one CSUP file (80 float columns of 64k
rows, 47 MB) from nginx behind the delay proxy of bench/netsim.py, which charges
a new connection its TCP and TLS 1.3 round trips, on two simulated networks:

* ``true``: 150 ms to the first byte, 30 MB/s per connection: not what the
  static ``s3`` profile (50 ms, 100 MB/s) assumes;
* ``s3``: 50 ms, 100 MB/s: what it assumes.

The scan reads 20 of the columns, each 1.8 MB from the next: 20 requests on
both profiles' gap rules.  With the static profile's 16 connections that is two
waves of requests; measured, 30 MB/s connections call for more of them
(planner/calibration.py), and one wave.

Each round, on each network, three readers each open the file (a fresh store,
so a cold connection pool) and run six scans one after another:
``calibrated`` (static ``s3`` to start, ``calibrate=True``), ``static``
(``calibrate=False``) and ``true`` (``calibrate=False`` with the true profile
given by hand: planner.calibration.derived from the simulator's figures).
Measurements are forgotten before each reader, so every calibrated reader
starts from nothing.  Reported, as medians over ``--rounds`` rounds: the
latency and bandwidth the calibrated reader measured in its first five scans
against the simulator's (target: within 25 %), and each reader's sixth scan
(target: calibrated within 1.1x of ``true``).  ``--json`` / ``--md`` write
the results (bench/results/calibrate.json / .md).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import netsim
import numpy as np
import pyarrow as pa

import csup_async
from csup_async.stores import HTTPStore
from csup_async.stores.calibrate import forget
from planner.calibration import derived
from planner.profiles import PROFILES

NETS = {
    "true": netsim.NetProfile("true", 0.150, 30e6, tls=1),
    "s3": netsim.NetProfile("s3", 0.050, 100e6, tls=1),
}
ROWS = 65_536
SCANNED = [f"a{i}" for i in range(20)]
KEY = "bench/calibrate.csup"


def make_file() -> bytes:
    rng = np.random.default_rng(1)
    cols: dict[str, Any] = {}
    for i in range(len(SCANNED)):
        cols[f"a{i}"] = rng.random(ROWS)
        for k in "xyz":  # three unread columns between two read ones: a 1.8 MB gap
            cols[f"p{i}{k}"] = rng.random(ROWS)
    out = io.BytesIO()
    csup_async.write(out, pa.table(cols), target="csup-async")
    return out.getvalue()


async def scans(url: str, profile: Any, calibrate: bool, n: int = 6,
                measure_after: int = 5) -> dict[str, Any]:
    """Open with a cold pool, run ``n`` scans; the times, requests and profile of each,
    and the profile measured after ``measure_after`` of them."""
    forget()
    store = HTTPStore()
    out: dict[str, Any] = {"times": [], "requests": [], "profiles": []}
    try:
        r = csup_async.Reader(store, url, owns_store=False, profile=profile,
                              calibrate=calibrate)
        await r.load()
        for i in range(n):
            if i == measure_after:
                m = r.profile
                out["measured"] = {"latency": m.latency, "bandwidth": m.bandwidth,
                                   "connect_latency": m.connect_latency,
                                   "concurrency": m.concurrency, "name": m.name}
            p = r.profile
            t0 = time.perf_counter()
            res = await r.scan(SCANNED)
            out["times"].append(time.perf_counter() - t0)
            out["requests"].append(res.stats.requests)
            out["profiles"].append({"latency": p.latency, "bandwidth": p.bandwidth,
                                    "concurrency": p.concurrency, "name": p.name})
            assert res.num_rows == ROWS
    finally:
        await store.close()
    return out


def delivered(sim: netsim.SimStore, name: str, mark: int) -> float | None:
    """The median rate the simulator really delivered per connection (responses of at
    least 256 KiB since ``mark``, as the proxy logged them): under a loaded machine's
    CPU it may fall short of the profile's figure, and a client can only measure what
    it was given."""
    time.sleep(0.2)  # the proxy logs a response when its connection's next one starts
    assert sim.response_log is not None
    with open(sim.response_log, encoding="ascii") as f:
        f.seek(mark)
        rates = []
        for line in f:
            port, n, secs = line.split()
            if int(port) == sim.ports[name] and int(n) >= 256 << 10 and float(secs) > 0:
                rates.append(int(n) / float(secs))
    return statistics.median(rates) if rates else None


def run_round(sim: netsim.SimStore) -> dict[str, Any]:
    res: dict[str, Any] = {}
    s3 = PROFILES["s3"]
    assert sim.response_log is not None
    for name, net in NETS.items():
        url = f"{sim.endpoint(name)}/{KEY}"
        true = derived(s3, net.rtt, net.bandwidth, net.setup)
        mark = sim.response_log.stat().st_size
        calibrated = asyncio.run(scans(url, s3, True, measure_after=5))
        calibrated["delivered"] = delivered(sim, name, mark)
        res[name] = {
            "calibrated": calibrated,
            "static": asyncio.run(scans(url, s3, False)),
            "true": asyncio.run(scans(url, true, False)),
        }
    return res


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, net in NETS.items():
        per = [r[name] for r in rounds]
        lat = [p["calibrated"]["measured"]["latency"] for p in per]
        bw = [p["calibrated"]["measured"]["bandwidth"] for p in per]
        got = [p["calibrated"]["delivered"] for p in per if p["calibrated"]["delivered"]]
        given = statistics.median(got) if got else net.bandwidth
        sixth = {k: [p[k]["times"][5] for p in per] for k in ("calibrated", "static", "true")}
        med = {k: statistics.median(v) for k, v in sixth.items()}
        out[name] = {
            "simulator": {"latency_ms": net.rtt * 1e3, "bandwidth_mb_s": net.bandwidth / 1e6,
                          "setup_ms": net.setup * 1e3},
            "measured_latency_ms": statistics.median(lat) * 1e3,
            "measured_bandwidth_mb_s": statistics.median(bw) / 1e6,
            "latency_error_pct": 100 * (statistics.median(lat) / net.rtt - 1),
            "bandwidth_error_pct": 100 * (statistics.median(bw) / net.bandwidth - 1),
            "delivered_bandwidth_mb_s": given / 1e6,
            "bandwidth_error_vs_delivered_pct": 100 * (statistics.median(bw) / given - 1),
            "measured_connections": statistics.median(
                p["calibrated"]["measured"]["concurrency"] for p in per),
            "sixth_scan_ms": {k: v * 1e3 for k, v in med.items()},
            "sixth_scan_spread_ms": {k: [round(x * 1e3, 1) for x in v] for k, v in sixth.items()},
            "requests_sixth": {k: per[0][k]["requests"][5] for k in sixth},
            "calibrated_over_true": med["calibrated"] / med["true"],
            "calibrated_over_static": med["calibrated"] / med["static"],
            "scan_ms_by_scan": {k: [round(statistics.median(p[k]["times"][i] for p in per) * 1e3,
                                          1) for i in range(6)] for k in sixth},
        }
    return out


def markdown(summary: dict[str, Any], rounds: int, command: str, load: str) -> str:
    lines = [
        "# Calibration: measured profile vs the truth (bench/bench_calibrate.py)", "",
        f"Command: `{command}` ({rounds} rounds; medians). netsim behind nginx; a new "
        "connection pays TCP + TLS 1.3 (2 round trips). Each reader: a cold pool, six "
        "scans of 20 of 80 float columns (20 x 0.6 MB, 1.8 MB apart). `calibrated` "
        "starts from the static s3 profile with `calibrate=True`; `static` keeps it; "
        "`true` is given the simulator's figures by hand (`planner.calibration.derived`). "
        "`measured` is the calibrated reader's profile after its fifth scan; `delivered` "
        "is the median rate the delay proxy really delivered per connection over those "
        "scans (its log), against which the measured bandwidth is also compared: one "
        "Python proxy on a loaded machine cannot always keep every connection at the "
        f"profile's rate. Load average {load}.",
        "",
        "| network | measured first byte | measured bandwidth | delivered | connections | "
        "6th scan: calibrated | static | true | calibrated / true | calibrated / static |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        sim = s["simulator"]
        t = s["sixth_scan_ms"]
        lines.append(
            f"| {name} ({sim['latency_ms']:g} ms, {sim['bandwidth_mb_s']:g} MB/s) "
            f"| {s['measured_latency_ms']:.0f} ms ({s['latency_error_pct']:+.0f}%) "
            f"| {s['measured_bandwidth_mb_s']:.1f} MB/s ({s['bandwidth_error_pct']:+.0f}%) "
            f"| {s['delivered_bandwidth_mb_s']:.1f} MB/s "
            f"({s['bandwidth_error_vs_delivered_pct']:+.0f}%) "
            f"| {s['measured_connections']:g} "
            f"| {t['calibrated']:.0f} ms | {t['static']:.0f} ms | {t['true']:.0f} ms "
            f"| {s['calibrated_over_true']:.2f}x | {s['calibrated_over_static']:.2f}x |")
    lines += ["", "Scan times by scan number (ms, medians over rounds):", ""]
    for name, s in summary.items():
        for k, v in s["scan_ms_by_scan"].items():
            lines.append(f"- {name} / {k}: {', '.join(f'{x:g}' for x in v)} "
                         f"(requests in the 6th: {s['requests_sixth'][k]})")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    command = "python bench/bench_calibrate.py " + " ".join(sys.argv[1:])
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "bench").mkdir(parents=True)
        (root / KEY).write_bytes(make_file())
        sim = netsim.SimStore(root, Path(tmp) / "nginx", NETS,
                              response_log=Path(tmp) / "responses.log").start()
        sim.response_log.touch()  # type: ignore[union-attr]
        try:
            rounds = [run_round(sim) for _ in range(args.rounds)]
        finally:
            sim.stop()
    summary = summarize(rounds)
    load = f"{before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores"
    text = markdown(summary, args.rounds, command.strip(), load)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"command": command.strip(), "summary": summary},
                                        indent=1))
    if args.md:
        args.md.write_text(text)


if __name__ == "__main__":
    main()
