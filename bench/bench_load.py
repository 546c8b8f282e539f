"""Load: many concurrent whole scans through one shared store against a local server.

``python bench/bench_load.py`` (defaults: 1,000 scans of 50 distinct small
files, at most 64 in flight, one shared HTTPStore with a 64-connection pool,
against nginx on 127.0.0.1, or the aiohttp range server with ``--server
aiohttp``) prints a markdown summary: throughput (scans/s, MB/s of objects),
latency percentiles (median, p99, max, and max/median: starvation would show
there), peak memory (RSS growth, sampled every 20 ms) and that every scan
returned exactly the rows written.  ``--json PATH`` also writes the figures.

``tests/e2e/load/test_load.py`` runs a smaller version of ``run_load`` in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import csup_async
from csup_async.stores import HTTPStore, RetryPolicy


def make_rows(i: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(i)
    return [{"id": i * 1_000_000 + j, "user": f"u{rng.getrandbits(40):010x}",
             "score": rng.random(), "tags": [rng.randrange(100) for _ in range(j % 3)],
             "ok": None if j % 11 == 0 else bool(j % 2)} for j in range(n)]


def make_files(count: int, rows: int) -> list[tuple[bytes, list[dict[str, Any]]]]:
    """``count`` distinct small CSUP objects (sizes vary) and the rows each holds."""
    out = []
    for i in range(count):
        data = make_rows(i, rows + (i % 7) * rows // 7)
        buf = io.BytesIO()
        csup_async.write(buf, data, segment_thresh=8 << 10, target="csup-async")
        out.append((buf.getvalue(), data))
    return out


@dataclass
class LoadResult:
    scans: int
    concurrency: int
    files: int
    ok: int = 0
    wrong: int = 0
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0
    bytes_read: int = 0
    latencies: list[float] = field(default_factory=list, repr=False)
    rss_growth: int = 0
    max_in_flight: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) if self.latencies else 0.0

    @property
    def p99(self) -> float:
        if not self.latencies:
            return 0.0
        s = sorted(self.latencies)
        return s[min(len(s) - 1, int(len(s) * 0.99))]

    @property
    def max(self) -> float:
        return max(self.latencies, default=0.0)

    def summary(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("latencies", "errors")}
        d.update(errors=self.errors[:5], median_ms=round(self.median * 1000, 2),
                 p99_ms=round(self.p99 * 1000, 2), max_ms=round(self.max * 1000, 2),
                 max_over_median=round(self.max / self.median, 2) if self.median else None,
                 scans_per_s=round(self.scans / self.wall, 1) if self.wall else None,
                 mb_per_s=round(self.bytes_read / self.wall / 1e6, 2) if self.wall else None)
        return d

    def markdown(self) -> str:
        s = self.summary()
        return "\n".join([
            "| scans | in flight | files | correct | throughput | median | p99 | max | "
            "max/median | RSS growth |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {self.scans:,} | {self.concurrency} | {self.files} | {self.ok:,} | "
            f"{s['scans_per_s']} scans/s, {s['mb_per_s']} MB/s | {s['median_ms']} ms | "
            f"{s['p99_ms']} ms | {s['max_ms']} ms | {s['max_over_median']} | "
            f"{self.rss_growth / 2**20:.0f} MiB |"])


def rss() -> int:
    """Resident set size of this process, in bytes (Linux)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def expected_tables(files: list[tuple[bytes, list[dict[str, Any]]]]) -> list[Any]:
    """Each file scanned locally (checked once against the rows written), as an Arrow
    table: a scan under load is then checked exactly with a C-speed comparison."""
    async def one(data: bytes, rows: list[dict[str, Any]], tmp: str) -> Any:
        p = Path(tmp) / "f.csup"
        p.write_bytes(data)
        async with csup_async.open(str(p)) as r:
            res = await r.scan()
        assert res.to_pylist() == rows, "the local scan is wrong"
        return res.to_arrow()

    with tempfile.TemporaryDirectory() as tmp:
        return [asyncio.run(one(d, rows, tmp)) for d, rows in files]


def same(result: Any, want: Any) -> bool:
    """Exactly the expected rows: Arrow table equality, or Python values without pyarrow."""
    if isinstance(want, list):
        return bool(result.to_pylist() == want)
    return bool(result.to_arrow().equals(want))


async def run_load(urls: list[str], expected: list[Any], sizes: list[int],
                   *, scans: int, concurrency: int, store: Any,
                   check: Callable[[Any, Any], bool] = same,
                   profile: str = "http") -> LoadResult:
    """``scans`` whole scans (``open`` + ``scan()``), file ``i % len(urls)`` each, at most
    ``concurrency`` at a time, all through ``store``; every result checked with ``check``
    (after its latency is taken: the figures measure the reads, not the checking)."""
    result = LoadResult(scans, concurrency, len(urls))
    sem = asyncio.Semaphore(concurrency)
    in_flight = 0
    base = rss()
    peak = base
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss())
            await asyncio.sleep(0.02)

    async def one(i: int) -> None:
        nonlocal in_flight
        k = i % len(urls)
        async with sem:
            in_flight += 1
            result.max_in_flight = max(result.max_in_flight, in_flight)
            t0 = time.perf_counter()
            got = None
            try:
                async with csup_async.open(urls[k], store=store, profile=profile) as r:
                    got = await r.scan()
            except csup_async.CsupError as e:
                result.errors.append(f"{type(e).__name__}: {e}")
            finally:
                result.latencies.append(time.perf_counter() - t0)
                result.bytes_read += sizes[k]
                in_flight -= 1
        if got is not None:
            if check(got, expected[k]):
                result.ok += 1
            else:
                result.wrong += 1

    sampler = asyncio.create_task(sample())
    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(one(i) for i in range(scans)))
    finally:
        result.wall = time.perf_counter() - t0
        done.set()
        await sampler
    result.rss_growth = peak - base
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scans", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--rows", type=int, default=2000, help="rows per file (sizes vary)")
    ap.add_argument("--server", choices=("nginx", "aiohttp"), default="nginx")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()

    from bench import rangeservers as servers

    files = make_files(args.files, args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        if args.server == "nginx" and servers.nginx_binary():
            server: Any = servers.Nginx(servers.nginx_binary() or "", Path(tmp)).start()
            put = server.put
        else:
            server = servers.RangeServer(Path(tmp)).start()

            def put(name: str, data: bytes) -> str:
                server.put(name, data)
                return str(server.url(name))
        try:
            urls = [put(f"load/f{i}.csup", data) for i, (data, _) in enumerate(files)]
            want = expected_tables(files)

            async def go() -> LoadResult:
                retry = RetryPolicy(attempts=4, base_delay=0.05, max_delay=0.5,
                                    total_timeout=30)
                async with HTTPStore(limit=args.concurrency, retry=retry) as store:
                    res = await run_load(urls, want,
                                         [len(d) for d, _ in files], scans=args.scans,
                                         concurrency=args.concurrency, store=store)
                    connector = store.connector
                    leaked = len(connector._acquired) if connector is not None else 0
                assert leaked == 0, f"{leaked} connections still checked out"
                assert asyncio.all_tasks() == {asyncio.current_task()}
                return res

            res = asyncio.run(go())
        finally:
            server.stop()
    size = sum(len(d) for d, _ in files)
    print(f"{args.files} files, {size / 1e6:.2f} MB in all, {args.rows}+ rows each; "
          f"server: {args.server}; python {sys.version.split()[0]}, {os.cpu_count()} CPUs\n")
    print(res.markdown())
    if res.errors:
        print("\nerrors:", *res.errors[:5], sep="\n  ")
    if args.json:
        Path(args.json).write_text(json.dumps(res.summary(), indent=2))
    sys.exit(0 if res.ok == res.scans else 1)


if __name__ == "__main__":
    main()
