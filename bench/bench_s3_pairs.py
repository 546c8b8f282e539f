"""Warm and cold S3 reads against polars, in pairs, so a noisy machine cancels out.

``python bench/bench_s3_pairs.py [--pairs 15] [--cold 5] [--projections 2,6]``

bench_cold.py runs each reader's processes one after the other; on a shared
2-core machine the load moves between them and a 1.5x swing in either reader's
median is common (the same tree measured 0.91x and then 0.73x polars on the
2-column scan, minutes apart).  Here the two readers take turns:

* **warm**: two long-lived worker processes (csup-async: ``async with
  csup_async.open(url)`` per scan, no store passed, the simple API; polars:
  ``scan_parquet(...).select(...).collect()``) wait on stdin; the driver asks
  one for a scan, then the other, ``--pairs`` times per projection (after one
  untimed scan each).  Each pair gives a ratio; the report gives the median
  ratio, the medians of both, and the requests and bytes nginx counted for
  each scan (exact: only one scan runs at a time).
* **cold**: a fresh csup-async one-shot process (import, open, scan 2
  columns, exit), then a fresh polars one, ``--cold`` times.

The store is bench/netsim.py's nginx behind the delay proxy (``s3`` profile:
50 ms round trip, 100 MB/s per connection, TLS 1.3 setup), the data
bench/data.py's wide table (1M rows x 24 columns; ``i3,s1`` and the 6-column
projection).  The load average before and after is in the report.  Results go
to ``bench/results/s3_pairs.{md,json}`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import netsim  # noqa: E402
import readers  # noqa: E402

RESULTS = HERE / "results"

_CSUP_WORKER = textwrap.dedent("""
    import asyncio, json, sys, time
    import csup_async

    async def main():
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line.strip():
                return
            cols = json.loads(line)
            t, c = time.perf_counter(), time.process_time()
            async with csup_async.open(sys.argv[1]) as r:
                res = await r.scan(cols)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            assert res.num_rows == int(sys.argv[2]), res.num_rows
            print(json.dumps([dt, dc]), flush=True)

    asyncio.run(main())
""")

_POLARS_WORKER = textwrap.dedent("""
    import json, sys, time
    import polars as pl
    opts = json.loads(sys.argv[3])
    for line in sys.stdin:
        if not line.strip():
            break
        cols = json.loads(line)
        t, c = time.perf_counter(), time.process_time()
        df = pl.scan_parquet(sys.argv[1], storage_options=opts).select(cols).collect()
        dt, dc = time.perf_counter() - t, time.process_time() - c
        assert df.height == int(sys.argv[2]), df.height
        print(json.dumps([dt, dc]), flush=True)
""")

_CSUP_COLD = textwrap.dedent("""
    import asyncio, sys
    import csup_async

    async def main():
        async with csup_async.open(sys.argv[1]) as r:
            res = await r.scan(["i3", "s1"])
        assert res.num_rows == int(sys.argv[2])

    asyncio.run(main())
""")

_POLARS_COLD = textwrap.dedent("""
    import json, sys
    import polars as pl
    df = pl.scan_parquet(sys.argv[1], storage_options=json.loads(sys.argv[3])).select(
        ["i3", "s1"]).collect()
    assert df.height == int(sys.argv[2])
""")


def _env(endpoint: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": readers.KEY_ID,
                "AWS_SECRET_ACCESS_KEY": readers.SECRET, "AWS_DEFAULT_REGION": readers.REGION,
                "PYTHONPATH": str(HERE.parent)})
    return env


def _polars_opts(endpoint: str) -> str:
    return json.dumps({"aws_endpoint_url": endpoint, "aws_access_key_id": readers.KEY_ID,
                       "aws_secret_access_key": readers.SECRET,
                       "aws_region": readers.REGION, "aws_allow_http": "true"})


class Worker:
    """A long-lived reader process that scans when asked (one JSON line of columns)."""

    def __init__(self, script: str, url: str, endpoint: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, url, str(data.WIDE_ROWS), _polars_opts(endpoint)],
            env=_env(endpoint), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.cpu: list[float] = []

    def scan(self, cols: list[str]) -> float:
        """Seconds of one scan (its CPU seconds are appended to ``self.cpu``)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cols) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker died")
        wall, cpu = json.loads(line)
        self.cpu.append(float(cpu))
        return float(wall)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _timed(fn: Any, log: Path) -> tuple[float, netsim.Count]:
    mark = netsim.log_mark(log)
    t = fn()
    return t, netsim.log_count(log, mark, settle=0.02)


def _summary(pairs: list[tuple[float, netsim.Count, float, netsim.Count]]) -> dict[str, Any]:
    ratios = [a / b for a, _, b, _ in pairs]
    return {"pairs": len(pairs), "ratio_median": statistics.median(ratios),
            "ratio_q25": statistics.quantiles(ratios, n=4)[0] if len(ratios) > 1 else ratios[0],
            "ratio_q75": statistics.quantiles(ratios, n=4)[2] if len(ratios) > 1 else ratios[0],
            "csup_median_s": statistics.median(a for a, _, _, _ in pairs),
            "polars_median_s": statistics.median(b for _, _, b, _ in pairs),
            "csup_requests": statistics.median(c.requests for _, c, _, _ in pairs),
            "polars_requests": statistics.median(c.requests for _, _, _, c in pairs),
            "csup_bytes": statistics.median(c.bytes for _, c, _, _ in pairs),
            "polars_bytes": statistics.median(c.bytes for _, _, _, c in pairs),
            "csup_connections": sum(c.connections for _, c, _, _ in pairs) / len(pairs),
            "polars_connections": sum(c.connections for _, _, _, c in pairs) / len(pairs),
            "ratios": ratios}


def warm(endpoint: str, log: Path, pairs: int, projections: dict[str, list[str]]
         ) -> dict[str, Any]:
    csup = Worker(_CSUP_WORKER, f"s3://{data.BUCKET}/{data.wide_key('csup')}", endpoint)
    pol = Worker(_POLARS_WORKER, f"s3://{data.BUCKET}/{data.wide_key('parquet')}", endpoint)
    out: dict[str, Any] = {}
    try:
        for name, cols in projections.items():
            csup.scan(cols)
            pol.scan(cols)
            csup.cpu.clear()
            pol.cpu.clear()
            got = []
            for i in range(pairs):
                order = [csup, pol] if i % 2 == 0 else [pol, csup]
                res = {w: _timed(lambda w=w, c=cols: w.scan(c), log) for w in order}
                got.append((*res[csup], *res[pol]))
            out[name] = s = _summary(got)
            s["csup_cpu_median_s"] = statistics.median(csup.cpu)
            s["polars_cpu_median_s"] = statistics.median(pol.cpu)
            print(f"warm {name}: csup/polars median {s['ratio_median']:.2f} "
                  f"(q25 {s['ratio_q25']:.2f}, q75 {s['ratio_q75']:.2f}); csup "
                  f"{s['csup_median_s']:.3f} s (CPU {s['csup_cpu_median_s']:.3f} s), "
                  f"{s['csup_requests']} requests; polars {s['polars_median_s']:.3f} s (CPU "
                  f"{s['polars_cpu_median_s']:.3f} s), {s['polars_requests']} requests",
                  flush=True)
    finally:
        csup.close()
        pol.close()
    return out


def cold(endpoint: str, log: Path, runs: int) -> dict[str, Any]:
    env = _env(endpoint)
    cmds = {"csup": [sys.executable, "-c", _CSUP_COLD,
                     f"s3://{data.BUCKET}/{data.wide_key('csup')}", str(data.WIDE_ROWS)],
            "polars": [sys.executable, "-c", _POLARS_COLD,
                       f"s3://{data.BUCKET}/{data.wide_key('parquet')}", str(data.WIDE_ROWS),
                       _polars_opts(endpoint)]}

    def run(name: str) -> float:
        t = time.perf_counter()
        subprocess.run(cmds[name], env=env, check=True, capture_output=True)
        return time.perf_counter() - t

    run("csup"), run("polars")  # bytecode compiled, page cache warm
    got = []
    for i in range(runs):
        order = ["csup", "polars"] if i % 2 == 0 else ["polars", "csup"]
        res = {n: _timed(lambda n=n: run(n), log) for n in order}
        got.append((*res["csup"], *res["polars"]))
    s = _summary(got)
    print(f"cold: csup/polars median {s['ratio_median']:.2f} (q25 {s['ratio_q25']:.2f}, "
          f"q75 {s['ratio_q75']:.2f}); csup {s['csup_median_s']:.3f} s, "
          f"{s['csup_requests']} requests; polars {s['polars_median_s']:.3f} s, "
          f"{s['polars_requests']} requests", flush=True)
    return s


def _cpu(s: dict[str, Any], who: str) -> str:
    v = s.get(f"{who}_cpu_median_s")
    return "" if v is None else f"{v:.3f}"


def render(res: dict[str, Any]) -> str:
    out = ["# Warm and cold S3 reads against polars, in pairs", "",
           f"Command: `{res['command']}`  ",
           f"When: {res['when']}; load average before {res['load_before']}, after "
           f"{res['load_after']}; {os.cpu_count()} CPUs  ",
           "Store: nginx behind bench/netsim.py profile `s3` (50 ms round trip, 100 MB/s per "
           "connection); wide table 1M rows x 24 columns.", "",
           "| case | pairs | csup / polars (median of pairs) | q25-q75 | csup median s | "
           "polars median s | csup CPU s | polars CPU s | csup requests | polars requests | "
           "csup MB | polars MB |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [(f"warm {k}", v) for k, v in res["warm"].items()]
    if res.get("cold"):
        rows.append(("cold one-shot process, 2 cols", res["cold"]))
    for name, s in rows:
        out.append(f"| {name} | {s['pairs']} | {s['ratio_median']:.2f} | "
                   f"{s['ratio_q25']:.2f}-{s['ratio_q75']:.2f} | {s['csup_median_s']:.3f} | "
                   f"{s['polars_median_s']:.3f} | {_cpu(s, 'csup')} | {_cpu(s, 'polars')} | "
                   f"{s['csup_requests']:g} | "
                   f"{s['polars_requests']:g} | {s['csup_bytes'] / 1e6:.1f} | "
                   f"{s['polars_bytes'] / 1e6:.1f} |")
    out += ["", "Each pair is one csup-async scan and one polars scan, back to back, the "
            "order alternating; the ratio is taken per pair, so load that moves between "
            "pairs cancels out. Requests and bytes are nginx's count for one scan (the "
            "median scan). CPU: the worker process's CPU time (all threads) for one warm scan, "
            "median; the peers' thread counts differ, so on a busy machine wall time "
            "follows CPU share as much as CPU need."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=15, help="warm pairs per projection")
    ap.add_argument("--cold", type=int, default=5, help="cold process pairs (0: none)")
    ap.add_argument("--projections", default="2,6", help="of 2,6")
    ap.add_argument("--out", default=str(RESULTS / "s3_pairs"))
    a = ap.parse_args()
    stem = data.ROOT / "root" / data.BUCKET / "wide" / "wide"
    if not (stem.with_suffix(".csup").exists() and stem.with_suffix(".parquet").exists()):
        data.ensure(log=lambda m: print("  " + m, flush=True))
    projections = {f"{n} cols": data.PROJECTIONS[f"{n} cols"] for n in a.projections.split(",")}
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    store = netsim.SimStore(data.ROOT / "root", data.ROOT / "nginx").start()
    try:
        endpoint = store.endpoint("s3")
        res: dict[str, Any] = {"command": "python bench/bench_s3_pairs.py " +
                               " ".join(sys.argv[1:]),
                               "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "load_before": load0,
                               "warm": warm(endpoint, store.log, a.pairs, projections)}
        if a.cold:
            res["cold"] = cold(endpoint, store.log, a.cold)
    finally:
        store.stop()
    res["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    Path(a.out + ".json").write_text(json.dumps(res, indent=1) + "\n")
    Path(a.out + ".md").write_text(render(res))
    print(render(res))


if __name__ == "__main__":
    main()
