"""The read pipeline's own targets, measured locally in one run (ratios, not seconds, matter).

* scan per byte of a 1M-row file of four super types (written with ``fuse=False``;
  fused, the writer would make it one) and nested record
  paths, against the flat wide table (1M x 24);
* ``iter_batches`` throughput against ``scan`` on both files;
* peak memory of ``iter_batches`` over all 24 columns of the wide file in
  50k-row batches (and of a whole ``scan``), each in a fresh process;
* the local, warm scan of 2 and 24 columns against
  ``pyarrow.parquet.read_table(columns=...)``.

``python bench/pipeline.py [--runs N] [--out FILE.json]``; the data is made once
into ``bench/.data/v1/pipeline/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import data  # noqa: E402

DIR = BENCH / ".data" / "v1" / "pipeline"
WIDE = DIR / "wide.csup"
WIDE_PQ = DIR / "wide.parquet"
# written with fuse=False: the fused writer (the default) would make these rows one super
# type, and the case would no longer measure several (issue 38)
MIXED = DIR / "mixed-types.csup"
MIXED_ROWS = 1_000_000


def _mixed_rows(n: int) -> Any:
    """Four super types (unfused) with nested record paths (user.name, user.geo.lat, ...)."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for i in range(n):
        k = i % 3
        w = words[(i * 7) % 8]
        if k == 0:
            yield {"id": i, "kind": "click", "user": {"name": w, "uid": i * 31 % 100_003},
                   "score": i * 0.25}
        elif k == 1:
            yield {"id": i, "kind": "view",
                   "user": {"name": w + "x", "geo": {"lat": i * 1e-6, "lon": -i * 1e-6}},
                   "ms": i % 5000}
        else:
            yield {"id": str(i), "kind": "log", "msg": f"request {i} took {i % 977} ms",
                   "user": None if i % 10 == 2 else {"name": w}}


def ensure() -> None:
    DIR.mkdir(parents=True, exist_ok=True)
    import csup_async

    if not WIDE.exists() or not WIDE_PQ.exists():
        import pyarrow.parquet as pq

        table = data.make_table(data.WIDE_ROWS, seed=42)
        csup_async.write(str(WIDE), table, target="csup-async")
        pq.write_table(table, str(WIDE_PQ))
    if not MIXED.exists():
        t = time.perf_counter()
        csup_async.write(str(MIXED), _mixed_rows(MIXED_ROWS), fuse=False, target="csup-async")
        print(f"wrote {MIXED.name} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    with csup_async.open_sync(str(MIXED)) as r:
        types = len(r.reader.meta.super_types)
    if types < 3:
        raise SystemExit(f"{MIXED} holds {types} super types, the case needs 3 or more")


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


CPU: dict[str, float] = {}  # median CPU seconds (all threads) of each timed case


def _best(fn: Any, runs: int, label: str | None = None) -> float:
    """The median wall time of ``runs`` runs (and, under ``label``, the median CPU time:
    on a busy shared machine the figure that other processes disturb least)."""
    times, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), _cpu()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    if label:
        CPU[label] = statistics.median(cpus)
    return statistics.median(times)


async def _scan(path: Path, cols: list[str] | None) -> int:
    import csup_async

    async with csup_async.open(str(path)) as r:
        res = await r.scan(cols)
        return res.stats.bytes_needed


async def _decompressed(path: Path) -> int:
    """Bytes a scan of every column decodes (segments' decompressed sizes)."""
    import csup_async

    async with csup_async.open(str(path)) as r:
        return sum(s.mem_length for s in (await r.plan()).segments)


async def _batches(path: Path, cols: list[str] | None, rows: int) -> int:
    import csup_async

    n = 0
    async with csup_async.open(str(path)) as r:
        async for b in r.iter_batches(cols, batch_rows=rows):
            n += b.num_rows
    return n


# Peak RSS is the child's VmHWM: ru_maxrss would carry the parent's peak across exec.
_HWM = ("int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
        " * 1024")
_MEM = """
import asyncio, sys, tracemalloc
sys.path.insert(0, {root!r})
import csup_async
async def main():
    async with csup_async.open({path!r}) as r:
        if {mode!r} == "scan":
            res = await r.scan()
            n = res.num_rows
            del res
        else:
            n = 0
            async for b in r.iter_batches(batch_rows=50_000):
                n += b.num_rows
    return n
if {trace!r}:
    tracemalloc.start()
n = asyncio.run(main())
peak = tracemalloc.get_traced_memory()[1]
print(n, {hwm}, peak)
"""


def _memory(path: Path, mode: str) -> dict[str, float]:
    def child(trace: bool) -> list[str]:
        code = _MEM.format(root=str(BENCH.parent), path=str(path), mode=mode, hwm=_HWM,
                           trace=trace)
        return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                              text=True).stdout.split()

    out = child(False)  # the RSS run: tracemalloc's own tables would count
    out[2] = child(True)[2]
    base = subprocess.run([sys.executable, "-c",
                           f"import sys; sys.path.insert(0, {str(BENCH.parent)!r}); "
                           f"import csup_async, numpy, lz4.block; print({_HWM})"],
                          check=True, capture_output=True, text=True).stdout.split()
    return {"rows": int(out[0]), "peak_rss_mb": int(out[1]) / 2**20,
            "import_rss_mb": int(base[0]) / 2**20, "traced_peak_mb": int(out[2]) / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--memory-only", action="store_true")
    args = ap.parse_args()
    ensure()
    if args.memory_only:
        print(json.dumps({"iter_batches_wide_50k": _memory(WIDE, "batches"),
                          "scan_wide": _memory(WIDE, "scan")}, indent=2))
        return
    import pyarrow.parquet as pq

    runs = args.runs
    res: dict[str, Any] = {"runs": runs}
    run = asyncio.run
    wide_all = [f"{k}{i}" for k in "ifs" for i in range(8)]
    nbytes = {"wide": run(_scan(WIDE, None)), "mixed": run(_scan(MIXED, None))}
    res["bytes_needed"] = nbytes
    # warm-up (page cache, imports, pools)
    run(_scan(WIDE, None))
    pq.read_table(str(WIDE_PQ))
    t_wide = _best(lambda: run(_scan(WIDE, None)), runs, "scan wide")
    t_mixed = _best(lambda: run(_scan(MIXED, None)), runs, "scan mixed")
    t_wide_b = _best(lambda: run(_batches(WIDE, None, 65536)), runs, "iter_batches wide")
    t_mixed_b = _best(lambda: run(_batches(MIXED, None, 65536)), runs, "iter_batches mixed")
    res["scan_s"] = {"wide": t_wide, "mixed": t_mixed}
    res["iter_batches_s"] = {"wide": t_wide_b, "mixed": t_mixed_b}
    per_byte = {k: res["scan_s"][k] / nbytes[k] * 1e9 for k in nbytes}
    res["scan_ns_per_byte"] = per_byte
    res["mixed_over_wide_per_byte"] = per_byte["mixed"] / per_byte["wide"]
    mem = {"wide": run(_decompressed(WIDE)), "mixed": run(_decompressed(MIXED))}
    per_mem = {k: res["scan_s"][k] / mem[k] * 1e9 for k in mem}
    res["decompressed_bytes"] = mem
    res["scan_ns_per_decompressed_byte"] = per_mem
    res["mixed_over_wide_per_decompressed_byte"] = per_mem["mixed"] / per_mem["wide"]
    res["batches_over_scan_throughput"] = {"wide": t_wide / t_wide_b, "mixed": t_mixed / t_mixed_b}
    res["cpu_s"] = dict(CPU)
    res["load_average"] = os.getloadavg()[0]
    local: dict[str, Any] = {}
    for label, cols in (("2 cols", ["i3", "s1"]), ("all 24", wide_all)):
        t_c = _best(lambda c=cols: run(_scan(WIDE, c)), runs)
        t_p = _best(lambda c=cols: pq.read_table(str(WIDE_PQ), columns=c), runs)
        local[label] = {"csup_async_s": t_c, "pyarrow_s": t_p, "ratio": t_c / t_p}
    res["local_warm"] = local
    res["memory"] = {"iter_batches_wide_50k": _memory(WIDE, "batches"),
                     "scan_wide": _memory(WIDE, "scan")}
    text = json.dumps(res, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
