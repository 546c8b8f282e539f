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


async def load(url: str, scans: int, clients: int) -> int:
    sem = asyncio.Semaphore(clients)
    bad = 0

    async def one() -> None:
        nonlocal bad
        async with sem, csup_async.open(url) as r:
            bad += (await r.scan(COLUMNS)).num_rows != OBJECTS["small"]

    await asyncio.gather(*(one() for _ in range(scans)))
    return bad


def _cpu_per_scan(url: str, scans: int, clients: int) -> dict[str, float]:
    """The loop thread's and the process's CPU time per scan over ``scans`` scans."""
    async def timed() -> tuple[float, float]:
        loop0, cpu0 = time.thread_time(), time.process_time()
        await load(url, scans, clients)
        return time.thread_time() - loop0, time.process_time() - cpu0

    loop_s, cpu_s = asyncio.run(timed())
    return {"loop_ms": loop_s / scans * 1e3, "process_ms": cpu_s / scans * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scans", type=int, default=400)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="csup-profile-") as tmp:
        root = Path(tmp) / "root"
        write_objects(root, ["small"])
        sim = SimStore(root, Path(tmp) / "nginx").start()
        try:
            url = f"{sim.endpoint('local')}/{BUCKET}/small.csup"
            asyncio.run(load(url, 8, 8))  # imports and first-use setup, not profiled
            cpu = _cpu_per_scan(url, a.scans, a.clients)  # unprofiled: cProfile inflates it
            prof = cProfile.Profile()
            prof.enable()
            bad = asyncio.run(load(url, a.scans, a.clients))
            prof.disable()
        finally:
            sim.stop()
    st = pstats.Stats(prof)
    per = {}
    for label, (fname, func) in WATCH.items():
        calls = sum(v[1] for k, v in st.stats.items()  # type: ignore[attr-defined]
                    if k[0].endswith(fname) and k[2] == func)
        per[label] = calls / a.scans
    total = st.total_calls / a.scans  # type: ignore[attr-defined]
    print(f"{a.scans} scans, {a.clients} at a time, wrong results: {bad}")
    print(f"function calls per scan on the loop thread: {total:.0f}")
    print(f"CPU per scan, unprofiled: loop thread {cpu['loop_ms']:.2f} ms, "
          f"process {cpu['process_ms']:.2f} ms")
    for label, v in per.items():
        print(f"  {label}: {v:.2f} per scan")
    print(f"\ntop {a.top} by own time (calls per scan):")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])  # type: ignore[attr-defined]
    for (fn, line, func), (_cc, nc, tt, _ct, _) in rows[:a.top]:
        print(f"  {tt / a.scans * 1e6:8.0f} us  {nc / a.scans:7.2f}  "
              f"{Path(fn).name}:{line} {func}")
    if a.json:
        Path(a.json).write_text(json.dumps({"scans": a.scans, "clients": a.clients,
                                            "calls_per_scan": total, "watched": per,
                                            "cpu_ms_per_scan": cpu},
                                           indent=1) + "\n")


if __name__ == "__main__":
    main()
