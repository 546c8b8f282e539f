"""What opening costs the way users open: a cold one-shot process, and ``open(url)`` per scan.

Against the simulated S3 of ``bench/netsim.py`` (nginx behind the delay proxy,
``s3`` profile: 50 ms round trip, 100 MB/s a connection), scanning ``i3,s1``
of the wide table:

* ``cold``: a fresh ``python -c`` that imports csup_async, opens
  ``s3://bench/wide/wide.csup`` (no store passed), scans 2 columns and exits;
  whole-process wall time, median of ``--runs``.  The peer is polars'
  ``scan_parquet(...).select(...).collect()`` in the same kind of process.
* ``warm``: one process, ``async with csup_async.open(url)`` per scan with no
  store passed, against the same with one store passed by hand (both after a
  first untimed scan), median of ``--runs``.
* ``metadata cache`` (this tree only): a warm open alone, without a cache, with
  ``metadata_cache=`` (tail read, no parse) and with ``immutable=True`` too.

``--tree DIR`` runs the csup-async of another checkout (``PYTHONPATH=DIR``)
in the same run, for before/after ratios.  ``--data DIR`` is a directory
holding ``wide.csup`` and ``wide.parquet`` (made by bench/data.py).

    python bench/bench_open.py --data bench/.data/v2/root/bench/wide --tree /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netsim import SimStore

HERE = Path(__file__).resolve().parents[1]
COLUMNS = ["i3", "s1"]

_CSUP_COLD = """
import asyncio, json, sys
import csup_async

async def main():
    async with csup_async.open(sys.argv[1], **json.loads(sys.argv[2])) as r:
        res = await r.scan({columns!r})
    assert res.num_rows == 1_000_000, res.num_rows

asyncio.run(main())
"""

_CSUP_OPEN_ONLY = """
import asyncio, json, sys
import csup_async

async def main():
    async with csup_async.open(sys.argv[1], **json.loads(sys.argv[2])) as r:
        assert r.num_rows == 1_000_000

asyncio.run(main())
"""

_POLARS_COLD = """
import sys, json
import polars as pl
df = pl.scan_parquet(sys.argv[1], storage_options=json.loads(sys.argv[2])).select(
    {columns!r}).collect()
assert df.height == 1_000_000
"""

_CSUP_WARM = """
import asyncio, json, statistics, sys, time
import csup_async
from csup_async.stores import store_for

url, opts, runs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])

async def per_open():
    async with csup_async.open(url, **opts) as r:
        await r.scan({columns!r})

async def main():
    store, _ = store_for(url, **opts)

    async def passed():
        async with csup_async.open(url, store=store) as r:
            await r.scan({columns!r})

    await per_open(); await passed()  # first scans: imports, pools, kernels
    times = {{"open(url)": [], "store passed": []}}
    for _ in range(runs):
        for name, fn in (("open(url)", per_open), ("store passed", passed)):
            t = time.perf_counter(); await fn(); times[name].append(time.perf_counter() - t)
    await store.close()
    print(json.dumps({{k: statistics.median(v) for k, v in times.items()}}))

asyncio.run(main())
"""


CPU: dict[str, list[float]] = {}  # label -> CPU seconds (user + system) of each process


_CSUP_CACHE = """
import asyncio, json, statistics, sys, time
import csup_async

url, opts, runs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
cache = csup_async.MetadataCache()

async def opened(**extra):
    async with csup_async.open(url, **opts, **extra) as r:
        return r.open_stats.requests

async def main():
    await opened(); await opened(metadata_cache=cache)  # warm: pool, imports, the cache
    times, reqs = {}, {}
    variants = {"open, no cache": {}, "metadata_cache": {"metadata_cache": cache},
                "metadata_cache + immutable": {"metadata_cache": cache, "immutable": True}}
    for name, extra in variants.items():
        ts = []
        for _ in range(runs):
            t = time.perf_counter(); reqs[name] = await opened(**extra)
            ts.append(time.perf_counter() - t)
        times[name] = statistics.median(ts)
    print(json.dumps({"open_s": times, "requests": reqs}))

asyncio.run(main())
"""


def _wall(argv: list[str], env: dict[str, str], label: str = "") -> float:
    """Whole-process wall time; its CPU time goes to ``CPU[label]`` (steadier when the
    machine is shared: other processes stretch wall time, not CPU time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # cwd "/": with ``-c`` the working directory comes first on sys.path, before PYTHONPATH
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd="/")
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv[:3])}...\n{proc.stderr[-3000:]}")
    CPU.setdefault(label, []).append(after.ru_utime - before.ru_utime
                                     + after.ru_stime - before.ru_stime)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path,
                    help="directory with wide.csup and wide.parquet")
    ap.add_argument("--tree", action="append", default=[], type=Path,
                    help="another csup-async checkout to compare (repeatable)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profile", default="s3")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--no-numba", action="store_true", help="CSUP_ASYNC_NUMBA=0 everywhere")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "bench" / "wide").mkdir(parents=True)
        for fmt in ("csup", "parquet"):
            (root / "bench" / "wide" / f"wide.{fmt}").symlink_to(
                (args.data / f"wide.{fmt}").resolve())
        sim = SimStore(root, Path(tmp) / "work").start()
        try:
            results = _run(sim, args)
        finally:
            sim.stop()
    print(json.dumps({k: v for k, v in results.items() if not k.endswith("_all_s")},
                     indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def _run(sim: SimStore, args: argparse.Namespace) -> dict[str, object]:
    endpoint = sim.endpoint(args.profile)
    csup_opts = {"endpoint_url": endpoint, "region": sim.REGION,
                 "access_key_id": sim.ACCESS_KEY, "secret_access_key": sim.SECRET_KEY}
    polars_opts = {"aws_endpoint_url": endpoint, "aws_access_key_id": sim.ACCESS_KEY,
                   "aws_secret_access_key": sim.SECRET_KEY, "aws_region": sim.REGION,
                   "aws_allow_http": "true"}
    trees = {"this": HERE, **{str(t): t.resolve() for t in args.tree}}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    if args.no_numba:
        base_env["CSUP_ASYNC_NUMBA"] = "0"
    cold: dict[str, list[float]] = {name: [] for name in [*trees, "polars"]}
    opened: dict[str, list[float]] = {name: [] for name in trees}
    url = "s3://bench/wide/wide.csup"
    for _ in range(args.runs):  # interleaved, so drift on a shared machine hits all alike
        for name, tree in trees.items():
            env = {**base_env, "PYTHONPATH": str(tree)}
            cold[name].append(_wall([sys.executable, "-c", _CSUP_COLD.format(columns=COLUMNS),
                                     url, json.dumps(csup_opts)], env, f"cold {name}"))
            opened[name].append(_wall([sys.executable, "-c", _CSUP_OPEN_ONLY, url,
                                       json.dumps(csup_opts)], env, f"open only {name}"))
        cold["polars"].append(_wall([sys.executable, "-c", _POLARS_COLD.format(columns=COLUMNS),
                                     "s3://bench/wide/wide.parquet", json.dumps(polars_opts)],
                                    base_env, "cold polars"))
    out: dict[str, object] = {
        "profile": args.profile, "runs": args.runs, "columns": COLUMNS,
        "cold_process_s": {k: statistics.median(v) for k, v in cold.items()},
        "cold_process_all_s": cold,
        "cold_open_only_s": {k: statistics.median(v) for k, v in opened.items()},
        "process_cpu_s": {k: statistics.median(v) for k, v in CPU.items()},
    }
    warm = {}
    for name, tree in trees.items():
        env = {**base_env, "PYTHONPATH": str(tree)}
        proc = subprocess.run([sys.executable, "-c", _CSUP_WARM.format(columns=COLUMNS), url,
                               json.dumps(csup_opts), str(args.runs)], env=env,
                              capture_output=True, text=True, timeout=600, cwd="/")
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        warm[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["warm_scan_s"] = warm
    env = {**base_env, "PYTHONPATH": str(HERE)}
    proc = subprocess.run([sys.executable, "-c", _CSUP_CACHE, url, json.dumps(csup_opts),
                           str(args.runs)], env=env, capture_output=True, text=True,
                          timeout=600, cwd="/")
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    out["warm_open_metadata_cache"] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


if __name__ == "__main__":
    main()
