"""Reading CSUP version 23 (``super`` main's files) against the same rows in this
library's own layout, local and over a simulated S3 (bench/netsim.py).

Makes ``--rows`` rows of 6 columns (bench_superdb.rows: int64 ids, a float, a
low-cardinality string, a free string, a bool, an int that is null one row in
ten), writes them as CSUP v23 with ``super -f csup`` (super main under
$CSUP_ASYNC_REAL_TOOLS or ~/.cache/csup-async/tools; without it, with
csup_async's own v23 writer) and with ``csup_async.write``, then times, median
of ``--runs``, alternating the two files in one process:

* local files: ``scan(all)``, ``scan(id, score)``;
* simulated S3 (nginx + the delay proxy, profile ``s3``, 50 ms, 100 MB/s): the
  same scans, each with its open, requests and bytes counted at the server.

    python bench/bench_v23.py --rows 200000 --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "bench"))

import netsim  # noqa: E402
from bench_superdb import rows  # noqa: E402

import csup_async  # noqa: E402

RESULTS = HERE / "bench" / "results"
SCANS = {"scan(all)": None, "scan(id,score)": ["id", "score"]}


def super_main() -> Path | None:
    root = Path(os.environ.get("CSUP_ASYNC_REAL_TOOLS")
                or Path.home() / ".cache" / "csup-async" / "tools")
    p = root / "super-main" / "super"
    return p if p.exists() else None


async def _scan(url: str, cols: list[str] | None, **opts) -> int:
    async with csup_async.open(url, **opts) as r:
        res = await r.scan(cols)
    return res.num_rows


MODES = {
    # a place not seen before, as every place is in a new process: the tail read with a
    # small head read beside it (readers/headhint)
    "cold": {"forget": True, "cold_head": True},
    # the same before this change (and with $CSUP_COLD_HEAD_READ=0): the tail read alone,
    # then the head read once the tail says v23
    "cold, no head read (before)": {"forget": True, "cold_head": False},
    # a place whose last file was opened in this process (same layout, same directory),
    # not this file (readers/openhint forgotten)
    "warm place": {"forget": False, "cold_head": True, "forget_file": True},
    # this file opened before in this process (same size and version): the reads that
    # open made go with the tail read (readers/openhint)
    "warm file": {"forget": False, "cold_head": True},
}


async def _open_scan(url: str, cols: list[str] | None, **opts) -> tuple[float, float]:
    t0 = time.perf_counter()
    async with csup_async.open(url, **opts) as r:
        t1 = time.perf_counter()
        await r.scan(cols)
    return t1 - t0, time.perf_counter() - t0


def opens(store, files: dict[str, str], opts: dict, runs: int) -> list[dict]:
    """Each file opened and scanned for 2 columns in each mode: GETs and bytes counted by
    nginx, the open's and the whole's wall time (medians of ``runs``); the connection pool
    is new each time (a new event loop), so setup is paid as a new process pays it."""
    from csup_async.readers import headhint, openhint

    rows = []
    for name, url in files.items():
        for mode, how in MODES.items():
            t_open, t_all, count = [], [], None
            for _ in range(runs):
                headhint.forget()
                headhint.cold_head_reads = how["cold_head"]
                if not how["forget"]:  # the place learnt from the file before
                    asyncio.run(_scan(url, ["id"], **opts))
                    if how.get("forget_file"):
                        openhint.forget()
                mark = netsim.log_mark(store.log)
                a, b = asyncio.run(_open_scan(url, ["id", "score"], **opts))
                count = netsim.log_count(store.log, mark)
                t_open.append(a)
                t_all.append(b)
            headhint.cold_head_reads = True
            rows.append({"file": name, "mode": mode, "requests": count.requests,
                         "bytes": count.bytes, "open": statistics.median(t_open),
                         "total": statistics.median(t_all)})
    return rows


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--same-place", action="store_true",
                    help="both files in one S3 directory (default: each in its own, as "
                         "a dataset's files are: see readers/headhint)")
    args = ap.parse_args()
    data = rows(args.rows)
    out: dict = {"rows": args.rows, "runs": args.runs}
    out["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "root" / "bench"
        places = {"v23": "", "own": ""} if args.same_place else {"v23": "v23/", "own": "own/"}
        for sub in places.values():
            (root / sub).mkdir(parents=True, exist_ok=True)
        v23, own = root / f"{places['v23']}v23.csup", root / f"{places['own']}own.csup"
        out["places"] = "one directory" if args.same_place else "a directory each"
        exe = super_main()
        if exe is not None:
            src = Path(d) / "rows.json"
            src.write_text("\n".join(json.dumps(r) for r in data) + "\n")
            subprocess.run([str(exe), "-f", "csup", "-o", str(v23), str(src)], check=True)
            out["v23_writer"] = "super main (492eab8)"
        else:
            from csup_async.model.values import Value, infer_type
            from csup_async.writers.superdb23 import write_values

            with open(v23, "wb") as f:
                write_values(f, (Value(infer_type(r), r) for r in data))
            out["v23_writer"] = "csup_async (v23write)"
        csup_async.write(str(own), data, target="csup-async")
        del data
        out["sizes"] = {"v23": v23.stat().st_size, "own": own.stat().st_size}
        print(f"{args.rows:,} rows: v23 ({out['v23_writer']}) {out['sizes']['v23']:,} B, "
              f"own layout {out['sizes']['own']:,} B")
        res: dict = {}
        for what, cols in SCANS.items():  # local: warm (the same files read before)
            ta, tb, ca, cb = [], [], [], []
            for _ in range(args.runs):
                for f, wall, cpu in ((v23, ta, ca), (own, tb, cb)):
                    c0 = time.process_time()
                    wall.append(timed(lambda c=cols, f=f: asyncio.run(_scan(str(f), c))))
                    cpu.append(time.process_time() - c0)
            res[f"local {what}"] = (statistics.median(ta), statistics.median(tb))
            res[f"local {what} CPU"] = (statistics.median(ca), statistics.median(cb))
        parts = root / f"{places['v23']}parts.csup"  # two parts: cat of the file twice
        parts.write_bytes(v23.read_bytes() * 2)
        out["sizes"]["v23 2 parts"] = parts.stat().st_size
        store = netsim.SimStore(Path(d) / "root", Path(d) / "nginx").start()
        try:
            opts = {"endpoint_url": store.endpoint("s3"), "region": "us-east-1",
                    "access_key_id": "bench-access-key", "secret_access_key": "bench-key"}
            for what, cols in SCANS.items():
                ta, tb, counts = [], [], {}
                for _ in range(args.runs):
                    for name, arr in (("v23", ta), ("own", tb)):
                        mark = netsim.log_mark(store.log)
                        arr.append(timed(lambda n=name, c=cols: asyncio.run(
                            _scan(f"s3://bench/{places[n]}{n}.csup", c, **opts))))
                        c = netsim.log_count(store.log, mark)
                        counts[name] = {"requests": c.requests, "bytes": c.bytes}
                res[f"s3 {what}"] = (statistics.median(ta), statistics.median(tb))
                out[f"s3 {what} counts"] = counts
            files = {"v23": f"s3://bench/{places['v23']}v23.csup",
                     "own": f"s3://bench/{places['own']}own.csup",
                     "v23 2 parts": f"s3://bench/{places['v23']}parts.csup"}
            out["opens"] = opens(store, files, opts, args.runs)
        finally:
            store.stop()
    print("| read | v23 file | own layout | ratio v23/own |")
    print("|---|---|---|---|")
    for k, (a, b) in res.items():
        print(f"| {k} | {a:.3f} s | {b:.3f} s | {a / b:.2f} |")
        out[k] = {"v23": a, "own": b, "ratio": a / b}
    for k in SCANS:
        print(f"s3 {k} counts: {out[f's3 {k} counts']}")
    print("\n| file | scan(id,score) opened | GETs | bytes | open s | open+scan s |")
    print("|---|---|---|---|---|---|")
    for row in out["opens"]:
        print(f"| {row['file']} | {row['mode']} | {row['requests']} | {row['bytes']:,} | "
              f"{row['open']:.3f} | {row['total']:.3f} |")
    out["load"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    tag = "-same-place" if args.same_place else ""
    (RESULTS / f"v23-{args.rows}{tag}.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
