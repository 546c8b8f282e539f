"""Stragglers: scan latency percentiles with and without hedged range reads.

``python bench/bench_hedge.py`` serves one ~2 MB CSUP file from the aiohttp
range server (bench/rangeservers.py) on 127.0.0.1 with every response's
headers held ``--rtt`` seconds (50 ms: an S3-like first byte) and, for a
random ``--straggle`` fraction of the data requests (1%), ``--delay`` seconds
more (1 s).  It opens the file once and runs ``--scans`` scans (300) of two
columns one after another, first with hedging off, then on (the default
HedgePolicy), and prints a markdown table: p50, p99, max, p99/p50, the
requests the server saw per scan, hedges and hedge wins, and whether every
scan returned the same columns as the first.  ``--json PATH`` also writes it.

The server runs in a thread of this process, so its work shares the GIL with
the reader: absolute times are those of a loaded client, ratios are the point.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import csup_async
from bench.rangeservers import RangeServer
from csup_async.stores import HedgePolicy, HTTPStore


class StragglerServer(RangeServer):
    """The range server with a first-byte latency, and a much later one now and then."""

    def __init__(self, root: Path, rtt: float, straggle: float, delay: float,
                 seed: int = 1) -> None:
        super().__init__(root)
        self.rtt, self.straggle, self.delay = rtt, straggle, delay
        self.rng = random.Random(seed)
        self.delayed = 0

    async def _handle(self, request: Any) -> Any:
        wait = self.rtt
        if request.method == "GET" and self.rng.random() < self.straggle:
            wait += self.delay
            self.delayed += 1
        await asyncio.sleep(wait)
        return await super()._handle(request)


def make_file() -> bytes:
    out = io.BytesIO()
    rng = random.Random(7)
    csup_async.write(out, [{"id": i, "name": f"user {rng.getrandbits(48):012x}",
                            "score": rng.random(), "n": rng.randrange(1000)}
                           for i in range(100_000)], target="csup-async")
    return out.getvalue()


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s)) - 1))]


async def run(server: StragglerServer, url: str, scans: int, hedge: HedgePolicy | None,
              columns: list[str]) -> dict[str, Any]:
    store = HTTPStore()
    store.hedge = hedge
    times: list[float] = []
    hedges = wins = 0
    same = True
    try:
        async with csup_async.open(url, store=store) as r:
            first = None
            before = len(server.seen())
            delayed = server.delayed
            loop = asyncio.get_running_loop()
            for _ in range(scans):
                t0 = loop.time()
                res = await r.scan(columns)
                times.append(loop.time() - t0)
                hedges += res.stats.hedges
                wins += res.stats.hedge_wins
                table = res.to_arrow()
                if first is None:
                    first = table
                else:
                    same = same and table.equals(first)
            requests = len(server.seen()) - before
            delayed = server.delayed - delayed
    finally:
        await store.close()
    p50, p99 = statistics.median(times), pct(times, 0.99)
    return {"hedging": hedge is not None, "scans": scans, "p50_ms": p50 * 1000,
            "p99_ms": p99 * 1000, "max_ms": max(times) * 1000, "p99_over_p50": p99 / p50,
            "requests": requests, "delayed": delayed, "hedges": hedges, "hedge_wins": wins,
            "extra_requests_pct": 100.0 * hedges / max(1, requests - hedges),
            "identical": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scans", type=int, default=300)
    ap.add_argument("--rtt", type=float, default=0.05)
    ap.add_argument("--straggle", type=float, default=0.01)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = StragglerServer(Path(tmp), args.rtt, args.straggle, args.delay).start()
        try:
            server.put("b/hedge.csup", make_file())
            url = server.url("b/hedge.csup")
            rows = [asyncio.run(run(server, url, args.scans, hedge, ["id", "name"]))
                    for hedge in (None, HedgePolicy())]
        finally:
            server.stop()
    print(f"{args.scans} scans of 2 columns; first byte {args.rtt * 1000:g} ms, "
          f"{args.straggle:.0%} of requests {args.delay:g} s later\n")
    print("| hedging | p50 ms | p99 ms | max ms | p99/p50 | requests | delayed | hedges "
          "| wins | extra | identical |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {'on' if r['hedging'] else 'off'} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} "
              f"| {r['max_ms']:.1f} | {r['p99_over_p50']:.2f} | {r['requests']} "
              f"| {r['delayed']} | {r['hedges']} | {r['hedge_wins']} "
              f"| {r['extra_requests_pct']:.1f}% | {r['identical']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
