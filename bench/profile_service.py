"""Per-scan work on the event loop of a service: cProfile call counts from a fixed load.

``python bench/profile_service.py`` runs ``--scans`` (400) requests, ``--clients``
(64) at a time, each ``async with csup_async.open(url) as r: await
r.scan(["id", "s"])`` on bench_service's small object served by nginx on
127.0.0.1 (no delay: the loop's own work is what is measured), with cProfile on
the loop thread.  Call counts are deterministic for a fixed number of scans, unlike
times on a shared machine; the report gives calls per scan of the functions the
service issue named, the total calls per scan, the loop thread's and the process's CPU
time per scan (from a second, unprofiled run) and the top functions by own time.
``--top N`` to show more, ``--json PATH`` to keep the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import csup_async
from bench.bench_service import BUCKET, COLUMNS, OBJECTS, write_objects
from bench.netsim import SimStore

#: (file suffix, function name) of the calls the service issue named.
WATCH = {
    "inspect.signature": ("inspect.py", "signature"),
    "Thread.start": ("threading.py", "start"),
    "_gather (join a response)": ("_ranged.py", "_gather"),
    "bytes joins (bytes.join)": ("~", "<method 'join' of 'bytes' objects>"),
}


#: The steps of one request, each the cumulative time of one function (file suffix, name),
#: nested as their indentation shows (a coroutine's time counts only while it runs).
STEPS = {
    "open() total": ("opening.py", "_open"),
    "  store lookup (shared_store)": ("shared.py", "shared_store"),
    "  Reader.load (tail + metadata)": ("reader.py", "load"),
    "    tail request (send + body)": ("_ranged.py", "_tail_once"),
    "    metadata parse (parse_reassembly)": ("csup.py", "parse_reassembly"),
    "scan() total": ("reader.py", "scan"),
    "  plan (Reader.plan)": ("reader.py", "plan"),
    "  read setup (start_read: cursors)": ("scan.py", "start_read"),
    "  data requests (SegmentSource._stream)": ("fetch.py", "_stream"),
    "    request sent, headers in (_open_until)": ("_ranged.py", "_open_until"),
    "    body into buffers (SegmentSource._copy)": ("fetch.py", "_copy"),
    "  walk + assembly (Read.whole)": ("scan.py", "whole"),
    "close (Reader.close)": ("reader.py", "close"),
}


async def load(url: str, scans: int, clients: int, rows: int = OBJECTS["small"],
               **options: object) -> int:
    sem = asyncio.Semaphore(clients)
    bad = 0

    async def one() -> None:
        nonlocal bad
        async with sem, csup_async.open(url, **options) as r:
            bad += (await r.scan(COLUMNS)).num_rows != rows

    await asyncio.gather(*(one() for _ in range(scans)))
    return bad


def _cpu_per_scan(url: str, scans: int, clients: int, rounds: int, rows: int,
                  **options: object) -> dict[str, float]:
    """The loop thread's and the process's CPU time per scan over ``scans`` scans, the
    median of ``rounds`` rounds in one loop (the machine's other work moves single ones)."""
    async def timed() -> list[tuple[float, float]]:
        await load(url, clients, clients, rows, **options)  # the pool's connections
        out = []
        for _ in range(rounds):
            loop0, cpu0 = time.thread_time(), time.process_time()
            await load(url, scans, clients, rows, **options)
            out.append((time.thread_time() - loop0, time.process_time() - cpu0))
        return out

    got = asyncio.run(timed())
    return {"loop_ms": statistics.median(g[0] for g in got) / scans * 1e3,
            "process_ms": statistics.median(g[1] for g in got) / scans * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scans", type=int, default=400)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--object", default="small", choices=sorted(OBJECTS))
    ap.add_argument("--cache", action="store_true", help="open(url, metadata_cache=True)")
    ap.add_argument("--rounds", type=int, default=3, help="unprofiled rounds (median)")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = OBJECTS[a.object]
    options: dict[str, object] = {"metadata_cache": True} if a.cache else {}
    with tempfile.TemporaryDirectory(prefix="csup-profile-") as tmp:
        root = Path(tmp) / "root"
        write_objects(root, [a.object])
        sim = SimStore(root, Path(tmp) / "nginx").start()
        try:
            url = f"{sim.endpoint('local')}/{BUCKET}/{a.object}.csup"
            asyncio.run(load(url, 8, 8, rows, **options))  # imports, first-use setup
            # unprofiled: cProfile inflates it
            cpu = _cpu_per_scan(url, a.scans, a.clients, a.rounds, rows, **options)
            prof = cProfile.Profile()

            async def profiled() -> int:
                await load(url, a.clients, a.clients, rows, **options)  # connections
                prof.enable()
                try:
                    return await load(url, a.scans, a.clients, rows, **options)
                finally:
                    prof.disable()

            bad = asyncio.run(profiled())
        finally:
            sim.stop()
    st = pstats.Stats(prof)
    stats = st.stats  # type: ignore[attr-defined]

    def matching(fname: str, func: str) -> list[tuple[int, float, float]]:
        return [(v[1], v[2], v[3]) for k, v in stats.items()
                if k[0].endswith(fname) and k[2] == func]

    per = {label: sum(c for c, _, _ in matching(*key)) / a.scans
           for label, key in WATCH.items()}
    steps = {label: sum(ct for _, _, ct in matching(*key)) / a.scans * 1e6
             for label, key in STEPS.items()}
    total = st.total_calls / a.scans  # type: ignore[attr-defined]
    print(f"{a.scans} scans of the {a.object} object, {a.clients} at a time"
          f"{', metadata_cache=True' if a.cache else ''}, wrong results: {bad}")
    print(f"function calls per scan on the loop thread: {total:.0f}")
    print(f"CPU per scan, unprofiled (median of {a.rounds}): loop thread "
          f"{cpu['loop_ms']:.2f} ms, process {cpu['process_ms']:.2f} ms")
    for label, v in per.items():
        print(f"  {label}: {v:.2f} per scan")
    print("\nsteps, profiled time per scan (cProfile roughly doubles it; compare runs):")
    for label, us in steps.items():
        print(f"  {us:8.0f} us  {label}")
    print(f"\ntop {a.top} by own time (calls per scan):")
    rows_ = sorted(stats.items(), key=lambda kv: -kv[1][2])
    for (fn, line, func), (_cc, nc, tt, _ct, _) in rows_[:a.top]:
        print(f"  {tt / a.scans * 1e6:8.0f} us  {nc / a.scans:7.2f}  "
              f"{Path(fn).name}:{line} {func}")
    if a.json:
        Path(a.json).write_text(json.dumps({"scans": a.scans, "clients": a.clients,
                                            "object": a.object, "cache": a.cache,
                                            "calls_per_scan": total, "watched": per,
                                            "steps_us_per_scan": steps,
                                            "cpu_ms_per_scan": cpu},
                                           indent=1) + "\n")


if __name__ == "__main__":
    main()
