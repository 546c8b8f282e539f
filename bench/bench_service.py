"""A service under load: N concurrent clients in one process, each scanning one object.

This is how a web service uses the library: one event loop, every request doing
``async with csup_async.open(url) as r: await r.scan(["id", "s"])`` (mode
``open()``; ``open(cache)`` adds ``metadata_cache=True``: the tail read still asks
for the object's version, the parse and the plan of an unchanged one are reused;
``open(immutable)`` also skips the tail read of an object opened before), or every
request scanning one long-lived reader (mode ``reader``); ``open(cache) x2`` is the
pattern past one core, two worker processes with a loop each.
The peers read the same rows as Parquet the way a service would with them:
polars ``scan_parquet(...).select(...).collect()`` and pyarrow
``parquet.read_table(..., columns=...)`` (one shared ``S3FileSystem``), each in a
thread pool with as many threads as there are clients.

The store is nginx behind bench/netsim.py's delay proxy (profile ``s3``: 50 ms
round trip, 100 MB/s per connection), so the client is the only thing that
changes between engines.  Each cell runs ``--seconds`` of closed-loop requests
after a short warm-up and reports scans/s, latency p50/p99/p99.9, CPU per scan
(the event-loop thread's, from ``time.thread_time`` sampled in the loop, and
the process's), peak OS threads and peak RSS (both sampled every 20 ms from
/proc/self/status), and checks every scan returned all rows.

    python bench/bench_service.py --quick            # ~1 min: small object, 1/16/64 clients
    python bench/bench_service.py                    # full: 1,16,64,128,256 x small, medium
    python bench/bench_service.py --clients 16,64,128 --objects small

Results go to bench/results/service.md and .json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import csup_async
from bench.netsim import PROFILES, SimStore

BUCKET = "bench"
COLUMNS = ["id", "s"]
OBJECTS = {"small": 50_000, "medium": 500_000}
KEY_ID, SECRET, REGION = SimStore.ACCESS_KEY, SimStore.SECRET_KEY, SimStore.REGION
RESULTS = Path(__file__).resolve().parent / "results"


def make_table(rows: int, seed: int) -> Any:
    """Event-like rows: an id, a short string, a count and a price (~14 bytes a row as CSUP)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    lengths = rng.integers(4, 12, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    chars = letters[rng.integers(0, letters.size, int(offsets[-1]))]
    s = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets.tobytes()),
                                    pa.py_buffer(chars.tobytes()))
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "s": s,
                     "n": pa.array(rng.integers(0, 100, rows)),
                     "price": pa.array(np.round(rng.random(rows) * 1000, 2))})


def write_objects(root: Path, names: list[str]) -> dict[str, dict[str, int]]:
    import pyarrow.parquet as pq

    sizes: dict[str, dict[str, int]] = {}
    (root / BUCKET).mkdir(parents=True, exist_ok=True)
    for name in names:
        table = make_table(OBJECTS[name], seed=len(name))
        csup = root / BUCKET / f"{name}.csup"
        parquet = root / BUCKET / f"{name}.parquet"
        csup_async.write(str(csup), table, target="csup-async")
        pq.write_table(table, str(parquet))
        sizes[name] = {"rows": table.num_rows, "csup": csup.stat().st_size,
                       "parquet": parquet.stat().st_size}
    return sizes


# ------------------------------------------------------------- sampling ---

def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def _runq_waits() -> dict[str, int]:
    """Per thread of this process, nanoseconds it has waited on a run queue for a core
    (/proc/self/task/*/schedstat, second field)."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            out[task.name] = int((task / "schedstat").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return out


class Sampler:
    """Peak OS threads and RSS of this process, every 20 ms, from a thread of its own; and
    the time its threads waited for a core (a machine busy with other work starves a
    process of few threads more than one of many: the kernel shares by thread)."""

    def __init__(self) -> None:
        self.threads = 0
        self.rss_kb = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._first: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self._t0 = self._t1 = 0.0

    def _waits(self) -> None:
        for tid, ns in _runq_waits().items():
            self._first.setdefault(tid, 0)  # a thread started since: all of its wait
            self._last[tid] = ns

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.threads = max(self.threads, _status("Threads:"))
            self.rss_kb = max(self.rss_kb, _status("VmRSS:"))
            self._waits()

    @property
    def waiting(self) -> float | None:
        """How many of this process's threads waited for a core, on average (None when
        not measured)."""
        if not self._t1:
            return None
        ns = sum(v - self._first.get(k, 0) for k, v in self._last.items())
        return ns / 1e9 / max(self._t1 - self._t0, 1e-9)

    def __enter__(self) -> Sampler:
        self._first = _runq_waits()
        self._t0 = time.perf_counter()
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self._waits()
        self._t1 = time.perf_counter()


@dataclass
class Cell:
    engine: str
    object: str
    clients: int
    scans: int
    seconds: float
    scans_per_s: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    loop_cpu_ms_per_scan: float | None
    process_cpu_ms_per_scan: float
    peak_threads: int
    peak_rss_mb: float
    wrong: int
    #: cores the simulated store (nginx and the delay proxy) kept busy over the cell: near
    #: the machine's free cores, the store, not the client, sets the pace
    store_cores: float | None = None
    #: this process's threads waiting for a core, on average over the cell (warm-up
    #: included): CPU the client wanted and the machine did not give it
    waiting_threads: float | None = None


def _cell(engine: str, obj: str, clients: int, lat: list[float], elapsed: float,
          loop_cpu: float | None, cpu: float, sampler: Sampler, wrong: int) -> Cell:
    n = len(lat)
    q = np.percentile(np.array(lat) * 1000, [50, 99, 99.9]) if n else [float("nan")] * 3
    return Cell(engine, obj, clients, n, round(elapsed, 2), round(n / elapsed, 1),
                round(float(q[0]), 1), round(float(q[1]), 1), round(float(q[2]), 1),
                None if loop_cpu is None else round(loop_cpu / max(n, 1) * 1000, 3),
                round(cpu / max(n, 1) * 1000, 3), sampler.threads,
                round(sampler.rss_kb / 1024, 1), wrong,
                waiting_threads=None if sampler.waiting is None else round(sampler.waiting, 2))


def _cpu_of(pid: int) -> float:
    """CPU seconds of a process and its live children (nginx's workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def store_cpu(sim: SimStore) -> float:
    """CPU seconds the simulated store's processes have used so far."""
    return sum(_cpu_of(p.pid) for p in sim._procs)


# --------------------------------------------------------------- engines ---

async def _async_cell(scan: Callable[[], Any], clients: int, seconds: float,
                      rows: int) -> tuple[list[float], float, float, float, int]:
    lat: list[float] = []
    wrong = 0

    async def client(until: float, keep: bool) -> None:
        nonlocal wrong
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            n = await scan()
            if keep:
                lat.append(time.perf_counter() - t0)
                wrong += n != rows

    # Warm-up: connections, thread pools, imports.
    await asyncio.gather(*(client(time.perf_counter() + min(1.0, seconds / 3), False)
                           for _ in range(clients)))
    loop0, cpu0, t0 = time.thread_time(), time.process_time(), time.perf_counter()
    await asyncio.gather(*(client(t0 + seconds, True) for _ in range(clients)))
    elapsed = time.perf_counter() - t0
    return lat, elapsed, time.thread_time() - loop0, time.process_time() - cpu0, wrong


def _options(engine: str) -> dict[str, Any]:
    """The open() options an engine's name asks for: ``open(cache)`` the process's metadata
    cache, ``open(immutable)`` that and no tail read for an object opened before."""
    if "immutable" in engine:
        return {"metadata_cache": True, "immutable": True}
    return {"metadata_cache": True} if "cache" in engine else {}


def run_csup(url: str, rows: int, clients: int, seconds: float, long_lived: bool,
             opts: dict[str, Any] | None = None) -> tuple[list[float], float, float, float, int]:
    async def main() -> tuple[list[float], float, float, float, int]:
        if long_lived:
            async with csup_async.open(url) as reader:
                async def scan() -> int:
                    return (await reader.scan(COLUMNS)).num_rows
                return await _async_cell(scan, clients, seconds, rows)

        async def scan_open() -> int:
            async with csup_async.open(url, **(opts or {})) as r:
                return (await r.scan(COLUMNS)).num_rows
        return await _async_cell(scan_open, clients, seconds, rows)

    return asyncio.run(main())


def _worker(url: str, rows: int, clients: int, seconds: float, start_at: float,
            opts: dict[str, Any]) -> tuple[list[float], float, float, float, int, int, int]:
    """One worker process of ``csup open(cache) xN``: its own loop, from ``start_at``
    (epoch seconds, so that every worker's window is the same)."""
    time.sleep(max(0.0, start_at - time.time()))
    with Sampler() as sampler:
        out = run_csup(url, rows, clients, seconds, long_lived=False, opts=opts)
    return (*out, sampler.threads, sampler.rss_kb)


def run_workers(url: str, rows: int, clients: int, seconds: float, workers: int,
                opts: dict[str, Any]) -> tuple[list[float], float, float, float, int, int, int]:
    """The pattern of a service past one core: ``workers`` processes, each one event loop
    serving ``clients / workers`` of the clients."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    share = [clients // workers + (i < clients % workers) for i in range(workers)]
    start_at = time.time() + 4.0  # the workers import csup_async meanwhile
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as ex:
        got = list(ex.map(_worker, [url] * workers, [rows] * workers, share,
                          [seconds] * workers, [start_at] * workers, [opts] * workers))
    lat = [x for g in got for x in g[0]]
    return (lat, max(g[1] for g in got), sum(g[2] for g in got), sum(g[3] for g in got),
            sum(g[4] for g in got), sum(g[5] for g in got), sum(g[6] for g in got))


def _threaded(scan: Callable[[], int], clients: int, seconds: float,
              rows: int) -> tuple[list[float], float, float, float, int]:
    lat: list[float] = []
    wrong = [0]
    lock = threading.Lock()

    def client(until: float, keep: bool) -> None:
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            n = scan()
            if keep:
                with lock:
                    lat.append(time.perf_counter() - t0)
                    wrong[0] += n != rows

    with ThreadPoolExecutor(clients) as pool:
        warm = time.perf_counter() + min(1.0, seconds / 3)
        list(pool.map(lambda _: client(warm, False), range(clients)))
        cpu0, t0 = time.process_time(), time.perf_counter()
        list(pool.map(lambda _: client(t0 + seconds, True), range(clients)))
        elapsed = time.perf_counter() - t0
    return lat, elapsed, 0.0, time.process_time() - cpu0, wrong[0]


def polars_scan(endpoint: str, key: str) -> Callable[[], int]:
    import polars as pl

    opts = {"aws_endpoint_url": endpoint, "aws_access_key_id": KEY_ID,
            "aws_secret_access_key": SECRET, "aws_region": REGION, "aws_allow_http": "true"}
    url = f"s3://{BUCKET}/{key}"
    return lambda: pl.scan_parquet(url, storage_options=opts).select(COLUMNS).collect().height


def pyarrow_scan(endpoint: str, key: str) -> Callable[[], int]:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    fs = pafs.S3FileSystem(access_key=KEY_ID, secret_key=SECRET, region=REGION,
                           endpoint_override=endpoint.split("://", 1)[1], scheme="http")
    path = f"{BUCKET}/{key}"
    return lambda: pq.read_table(path, columns=COLUMNS, filesystem=fs).num_rows


ENGINES = ("csup open()", "csup open(cache)", "csup open(immutable)", "csup reader",
           "csup open() x2",
           "csup open(cache) x2", "polars", "pyarrow")


def csup_url(endpoint: str, obj: str, scheme: str) -> str:
    """The URL csup-async opens: ``s3://`` (the S3 store, its SigV4 and the ``s3``
    profile, as the peers read it; the endpoint comes from ``AWS_ENDPOINT_URL``, set by
    :func:`main`) or the plain ``http://`` URL of the object (the HTTP store, the
    ``http`` profile)."""
    return (f"s3://{BUCKET}/{obj}.csup" if scheme == "s3"
            else f"{endpoint}/{BUCKET}/{obj}.csup")


def run_cell(engine: str, endpoint: str, obj: str, rows: int, clients: int,
             seconds: float, scheme: str = "http") -> Cell:
    if engine.startswith("csup open") and " x" in engine:
        workers = int(engine.rsplit("x", 1)[1])
        lat, elapsed, loop_cpu, cpu, wrong, threads, rss = run_workers(
            csup_url(endpoint, obj, scheme), rows, clients, seconds, workers,
            _options(engine))
        sampler = Sampler()
        sampler.threads, sampler.rss_kb = threads, rss
        return _cell(engine, obj, clients, lat, elapsed, loop_cpu, cpu, sampler, wrong)
    with Sampler() as sampler:
        if engine.startswith("csup"):
            r = run_csup(csup_url(endpoint, obj, scheme), rows, clients, seconds,
                         long_lived=engine == "csup reader", opts=_options(engine))
        else:
            make = polars_scan if engine == "polars" else pyarrow_scan
            r = _threaded(make(endpoint, f"{obj}.parquet"), clients, seconds, rows)
    lat, elapsed, loop_cpu, cpu, wrong = r
    return _cell(engine, obj, clients, lat, elapsed,
                 loop_cpu if engine.startswith("csup") else None, cpu, sampler, wrong)


# ---------------------------------------------------------------- report ---

def render(cells: list[Cell], meta: dict[str, Any]) -> str:
    out = ["# Service benchmark: concurrent scans in one process", "",
           f"Command: `{meta['command']}`  ", f"When: {meta['when']}; load before the run: "
           f"{meta['load']}; {meta['cpus']} CPUs  ",
           f"Store: nginx behind bench/netsim.py profile `{meta['profile']}` "
           f"({meta['rtt_ms']} ms round trip, {meta['mbps']} MB/s per connection); "
           f"{meta['seconds']} s per cell after warm-up; columns {COLUMNS}; csup-async "
           f"opens {meta.get('scheme', 'http')}:// URLs.  ",
           "Objects: " + ", ".join(f"{k}: {v['rows']:,} rows, CSUP {v['csup'] / 1e6:.2f} MB, "
                                   f"Parquet {v['parquet'] / 1e6:.2f} MB"
                                   for k, v in meta["objects"].items()), "",
           "| object | clients | engine | scans/s | vs polars | p50 ms | p99 ms | p99.9 ms "
           "| loop CPU ms/scan | process CPU ms/scan | peak threads | peak RSS MB | wrong "
           "| store cores | threads waiting for a core |",
           "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    polars = {(c.object, c.clients): c.scans_per_s for c in cells if c.engine == "polars"}
    for c in cells:
        ref = polars.get((c.object, c.clients))
        ratio = f"{c.scans_per_s / ref:.2f}x" if ref else ""
        loop = "" if c.loop_cpu_ms_per_scan is None else f"{c.loop_cpu_ms_per_scan:.2f}"
        out.append(f"| {c.object} | {c.clients} | {c.engine} | {c.scans_per_s} | {ratio} | "
                   f"{c.p50_ms} | {c.p99_ms} | {c.p999_ms} | {loop} | "
                   f"{c.process_cpu_ms_per_scan:.2f} | {c.peak_threads} | {c.peak_rss_mb} | "
                   f"{c.wrong} | {'' if c.store_cores is None else c.store_cores} | "
                   f"{'' if c.waiting_threads is None else c.waiting_threads} |")
    out += ["", "Loop CPU is the event-loop thread's CPU time over the cell divided by scans "
            "(csup only: the peers have no loop). Peak threads and RSS are the whole "
            "process's, sampled every 20 ms, so they include earlier cells' pools. "
            "`csup open(cache) x2`: two worker processes, each one event loop serving half "
            "the clients (CPU, threads and RSS summed over the workers). Store cores: the CPU "
            "the simulated store (nginx and the Python delay proxy) used over the cell, "
            "warm-up included, divided by its wall time. Threads waiting for a core: the "
            "time this process's threads spent runnable but not running (/proc schedstat) "
            "over the cell's wall time; near or above 1, the machine's other work, not "
            "the engine, set the pace (the kernel shares cores by thread, so an engine of "
            "many threads gets more of a busy machine)."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small object, clients 1,16,64, 3 s per cell (~1 min)")
    ap.add_argument("--clients", default=None, help="comma-separated (default 1,16,64,128,256)")
    ap.add_argument("--objects", default=None, help="small,medium (default both)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--seconds", type=float, default=None, help="per cell (default 10, quick 3)")
    ap.add_argument("--profile", default="s3", choices=[p for p in PROFILES if p != "local"])
    ap.add_argument("--scheme", default="s3", choices=["s3", "http"],
                    help="csup-async opens s3:// (default: the S3 store, as the peers) "
                         "or the object's http:// URL (the HTTP store)")
    ap.add_argument("--out", default=str(RESULTS / "service"), help="writes OUT.md and OUT.json")
    a = ap.parse_args()
    clients = [int(c) for c in (a.clients or ("1,16,64" if a.quick else "1,16,64,128,256"))
               .split(",")]
    objects = (a.objects or ("small" if a.quick else "small,medium")).split(",")
    seconds = a.seconds or (3.0 if a.quick else 10.0)
    engines = a.engines.split(",")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="csup-service-") as tmp:
        root, work = Path(tmp) / "root", Path(tmp) / "nginx"
        sizes = write_objects(root, objects)
        sim = SimStore(root, work).start()
        try:
            endpoint = sim.endpoint(a.profile)
            # s3:// URLs name no endpoint: the environment does, for the worker processes too
            os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=KEY_ID,
                              AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION=REGION)
            cells = []
            for obj in objects:
                for n in clients:
                    for engine in engines:
                        used0, wall0 = store_cpu(sim), time.perf_counter()
                        cell = run_cell(engine, endpoint, obj, OBJECTS[obj], n, seconds,
                                        a.scheme)
                        cell.store_cores = round((store_cpu(sim) - used0)
                                                 / (time.perf_counter() - wall0), 2)
                        print(json.dumps(asdict(cell)), flush=True)
                        cells.append(cell)
        finally:
            sim.stop()
    p = PROFILES[a.profile]
    meta = {"command": "python bench/bench_service.py " + " ".join(sys.argv[1:]),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load": " ".join(f"{x:.2f}" for x in load), "cpus": os.cpu_count(),
            "profile": a.profile, "rtt_ms": p.rtt * 1000, "mbps": p.bandwidth / 1e6,
            "seconds": seconds, "objects": sizes, "scheme": a.scheme}
    Path(a.out + ".json").write_text(json.dumps({"meta": meta, "cells": [asdict(c)
                                                                         for c in cells]},
                                                indent=1) + "\n")
    Path(a.out + ".md").write_text(render(cells, meta))
    print(render(cells, meta))


if __name__ == "__main__":
    main()
