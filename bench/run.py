"""csup-async against its peers on a simulated object store: ``python bench/run.py [--quick]``.

One command: generates the data once (``bench/.data``, seeded), starts nginx
and the delay proxy (:mod:`netsim`), runs every reader in a process of its
own (:mod:`worker`) for every projection and network profile, adds the
decoder, writer and cold-start measurements, and writes
``bench/results/results.md``, ``results.json`` and PNG plots.

Readers (``bench/readers.py``): csup-async (``Reader.scan``: the one read
pipeline, segments decoded by the compiled decoders in a thread pool as they
land), csup-async (numpy only) (the same with ``CSUP_ASYNC_NATIVE=0``, what an
install without a C compiler gets), polars, pyarrow's S3FileSystem, DuckDB
httpfs, Vortex, and pyarrow over s3fs.

Every number is a median of several runs after a warm-up (one run for
readers slower than 30 s); requests and bytes are counted by nginx.  The
floor is what physics allows the projection in CSUP: two round trips
(metadata, then data) plus the bytes needed over 16 connections at the
profile's per-connection bandwidth; for many files ``ceil(files / 64) x 2``
round trips plus the bytes over 64 connections.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402
import netsim  # noqa: E402
import readers  # noqa: E402

RESULTS = HERE / "results"
TASK_TIMEOUT = 150.0  # seconds without any output before a reader is stopped
FILE_CONCURRENCY = 64


def log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------- floors ---

def bytes_needed(files: list[str], columns: list[str]) -> int:
    """What the projection needs in CSUP, from the planner on the local copies."""
    import csup_async

    async def go() -> int:
        total = 0
        for f in files:
            async with csup_async.open(f, profile="s3") as r:
                total += (await r.plan(columns)).bytes_needed
        return total

    return asyncio.run(go())


def floor(profile: str, nbytes: int, files: int = 1) -> float | None:
    p = netsim.PROFILES[profile]
    if not p.bandwidth:
        return None
    if files == 1:
        return p.floor(nbytes)
    trips = math.ceil(files / FILE_CONCURRENCY) * 2
    return p.floor(nbytes, round_trips=trips, connections=FILE_CONCURRENCY)


# ------------------------------------------------------------ workers ---

def run_job(reader: str, tasks: list[dict[str, Any]], runs: int, store: netsim.SimStore
            ) -> dict[str, dict[str, Any]]:
    """Run a reader's tasks in a worker process; a silent worker is stopped."""
    job = {"reader": reader, "tasks": tasks, "runs": runs, "log": str(store.log)}
    proc = subprocess.Popen([sys.executable, str(HERE / "worker.py"), json.dumps(job)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(HERE.parent))
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def drain_err() -> None:
        assert proc.stderr is not None
        for _ in proc.stderr:
            pass

    threading.Thread(target=pump, daemon=True).start()
    threading.Thread(target=drain_err, daemon=True).start()
    out: dict[str, dict[str, Any]] = {}
    while len(out) < len(tasks):
        try:
            line = lines.get(timeout=TASK_TIMEOUT)
        except queue.Empty:
            proc.kill()
            break
        if line is None:
            break
        try:
            res = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[res["task"]] = res
        t = next(t for t in tasks if t["id"] == res["task"])
        if "error" in res:
            log(f"  {reader:34} {t['label']:32} ERROR {res['error'][:150]}")
        else:
            log(f"  {reader:34} {t['label']:32} {res['median']:8.3f} s  "
                f"{res['requests']:4d} req  {res['bytes'] / 1e6:8.1f} MB  rows {res['rows']:,}")
    proc.wait(timeout=30) if proc.poll() is None else None
    for t in tasks:
        if t["id"] not in out:
            out[t["id"]] = {"task": t["id"], "error": f"no result within {TASK_TIMEOUT:.0f} s"}
            log(f"  {reader:34} {t['label']:32} TIMEOUT")
    return out


def tasks_for(dataset: str, profiles: list[str], projections: list[str], fmt: str,
              store: netsim.SimStore, files: int) -> list[dict[str, Any]]:
    keys = [data.wide_key(fmt)] if dataset == "wide" else data.many_keys(fmt, files)
    return [{"id": f"{dataset}|{prof}|{proj}", "label": f"{dataset} {prof} {proj}",
             "endpoint": store.endpoint(prof), "keys": keys,
             "columns": data.PROJECTIONS[proj]} for prof in profiles for proj in projections]


# ------------------------------------------------------------- extras ---

def decode_throughput(runs: int) -> list[dict[str, Any]]:
    """Per-core decode speed of whole column streams of the wide file, next to pyarrow
    decoding the same column from an in-memory Parquet file (one thread)."""
    import pyarrow.parquet as pq

    import csup_async
    from csup_async import decode as D

    path = str(data.ROOT / "root" / data.BUCKET / data.wide_key("csup"))
    raw = Path(path).read_bytes()

    async def meta() -> Any:
        async with csup_async.open(path) as r:
            return r.meta

    m = asyncio.run(meta())
    rtype, rcol = m.super_types[0], m.columns[0]
    table = pq.read_table(str(data.ROOT / "root" / data.BUCKET / data.wide_key("parquet")))

    def timed(fn: Any) -> float:
        fn()
        ts = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    rows = []
    for name in ("i3", "i5", "f0", "s1", "s4"):
        ptype = rtype.field(name).type
        segs = rcol.field(name).column.segmap
        stream = b"".join(bytes(D.decompress_segment(raw[s.offset:s.end], s)) for s in segs)
        mb = len(stream) / 1e6
        t_np = timed(lambda p=ptype, s=stream: D.decode_primitive(p, s))
        sink = io.BytesIO()
        pq.write_table(table.select([name]), sink)
        blob = sink.getvalue()
        t_pa = timed(lambda b=blob: pq.read_table(io.BytesIO(b), use_threads=False))
        rows.append({"column": f"{name} ({ptype})", "stream_mb": mb, "decode_mbs": mb / t_np,
                     "pyarrow_mbs": mb / t_pa, "mvalues": data.WIDE_ROWS / t_np / 1e6})
        log(f"  decode {name}: {mb / t_np:.0f} MB/s, pyarrow Parquet {mb / t_pa:.0f} MB/s")
    return rows


def cold_start(runs: int) -> dict[str, Any]:
    """A small local scan from a cold process, and what it imported."""
    small = str(data.ROOT / "root" / data.BUCKET / data.many_keys("csup")[0])
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(["csup-async", "scan", small, "-c", "i3,s1", "--limit", "3"],
                       check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    probe = ("import asyncio, sys, csup_async\n"
             "async def m():\n"
             f"    async with csup_async.open({small!r}) as r:\n"
             "        await r.scan(['i3', 's1'])\n"
             "asyncio.run(m())\n"
             "print(json.dumps(sorted(k for k in ('pyarrow', 'polars', 'aiobotocore')"
             " if k in sys.modules)))\n")
    got = subprocess.run([sys.executable, "-c", "import json\n" + probe], check=True,
                         capture_output=True, text=True)
    res = {"file_kb": os.path.getsize(small) / 1e3, "median_s": statistics.median(times),
           "heavy_imports": json.loads(got.stdout.strip().splitlines()[-1])}
    log(f"  cold CLI scan of a {res['file_kb']:.0f} kB file: {res['median_s']:.2f} s; "
        f"heavy imports: {res['heavy_imports']}")
    return res


def one_time_costs(store: netsim.SimStore) -> dict[str, Any]:
    """Costs a long-lived process pays once and the medians above exclude: opening
    with a fresh S3Store (its aiobotocore client) instead of a kept one."""
    import csup_async
    from csup_async.stores import S3Store

    url = f"s3://{data.BUCKET}/{data.wide_key('csup')}"
    opts = readers._csup_opts(store.endpoint("s3"))

    async def go() -> tuple[float, float]:
        fresh, kept = [], []
        keep = S3Store(**opts)
        for _ in range(4):
            st = S3Store(**opts)
            t = time.perf_counter()
            async with csup_async.open(url, store=st):
                fresh.append(time.perf_counter() - t)
            await st.close()
            t = time.perf_counter()
            async with csup_async.open(url, store=keep):
                kept.append(time.perf_counter() - t)
        await keep.close()
        return statistics.median(fresh[1:]), statistics.median(kept[1:])

    fresh, kept = asyncio.run(go())
    res = {"open_fresh_store_s": fresh, "open_kept_store_s": kept}
    log(f"  open at s3: {fresh:.3f} s with a fresh S3Store, {kept:.3f} s with a kept one")
    return res


def writer_speed(info: dict[str, Any]) -> dict[str, Any]:
    """The vectorised writer against the value-by-value path on the same rows."""
    from csup_async.writers.arrow_input import arrow_values
    from csup_async.writers.writer import Writer

    n = 20_000
    t = data.make_table(n, seed=7)
    start = time.perf_counter()
    w = Writer(io.BytesIO())
    for v in arrow_values(t):
        w.write(v)
    w.close()
    slow = (time.perf_counter() - start) * data.WIDE_ROWS / n
    res = {"fast_s": info["write_s"]["csup"], "python_path_s_extrapolated": slow,
           "parquet_s": info["write_s"]["parquet"], "vortex_s": info["write_s"]["vortex"]}
    log(f"  writer, 1M x 24: vectorised {res['fast_s']:.1f} s, Python path ~{slow:.0f} s "
        f"(from {n:,} rows), pyarrow Parquet {res['parquet_s']:.1f} s")
    return res


# ------------------------------------------------------------- report ---

def _fmt_s(x: float | None) -> str:
    return "-" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def _mark(r: dict[str, Any]) -> str:
    if r.get("warm_only"):
        return "**"
    return "*" if len(r["times"]) == 1 else ""


def _fmt_x(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def report(res: dict[str, Any]) -> str:
    out = ["# csup-async benchmark results", ""]
    cfg = res["config"]
    out += [f"Machine: {cfg['cpus']} cores. Command: `{cfg['command']}` "
            f"({cfg['elapsed_s'] / 60:.1f} min). Data: {data.WIDE_ROWS:,} rows x 24 columns "
            f"(8 int64, 8 float64, 8 strings; CSUP {cfg['wide_size']['csup'] / 1e6:.0f} MB, "
            f"Parquet {cfg['wide_size']['parquet'] / 1e6:.0f} MB, Vortex "
            f"{cfg['wide_size']['vortex'] / 1e6:.0f} MB) and {cfg['many_files']} files of "
            f"{data.MANY_ROWS:,} rows.", "",
            "Store: nginx (S3 path-style GET/HEAD) behind an asyncio proxy that holds each "
            "response's first byte until one RTT after its request arrived and then releases "
            "its bytes on an absolute schedule at the profile's per-connection bandwidth "
            "(`bench/netsim.py`); a new connection's first response waits (1 + TLS) round "
            "trips more (its TCP and TLS handshakes). Profiles: s3 = 50 ms / 100 MB/s, "
            "TLS 1.3; far = 150 ms / 50 MB/s, TLS 1.2; local = nginx directly. Median of "
            "several runs after a warm-up in the same process (a warm connection pool; one "
            "run if slower than 30 s). Requests (GET+HEAD), connections opened (in the last "
            "run) and MB are counted by nginx. "
            "Floor = 2 RTT + CSUP bytes needed / (16 x bandwidth); many files: "
            "ceil(files/64) x 2 RTT + bytes / (64 x bandwidth).", ""]
    for dataset, title in (("wide", "Wide table (1M x 24)"),
                           ("many", f"Many files ({cfg['many_files']} x {data.MANY_ROWS:,})")):
        rows = [r for r in res["runs"] if r["dataset"] == dataset]
        if not rows:
            continue
        out += [f"## {title}", "",
                "| profile | projection | reader | median s | requests (HEAD) | connections "
                "| MB read | x best peer | x floor |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            if "error" in r:
                out.append(f"| {r['profile']} | {r['projection']} | {r['reader']} | "
                           f"{r['error'][:60]} | | | | | |")
                continue
            out.append(
                f"| {r['profile']} | {r['projection']} | {r['reader']} | {_fmt_s(r['median'])}"
                f"{_mark(r)} | {r['requests']} ({r['heads']}) | {r.get('connections', '-')} | "
                f"{r['bytes'] / 1e6:.1f} | {r['x_best_peer']:.2f} | "
                f"{_fmt_x(r['x_floor'])} |")
        out += ["", "`*` one run (slower than 30 s).", ""]
    if res.get("decode"):
        out += ["## Decode throughput per core (whole column streams of the wide file)", "",
                "MB/s of CSUP stream bytes; pyarrow decodes the same column from an in-memory "
                "Parquet file, one thread.", "",
                "| column | stream MB | csup_async.decode | M values/s | pyarrow Parquet |",
                "|---|---:|---:|---:|---:|"]
        for d in res["decode"]:
            out.append(f"| {d['column']} | {d['stream_mb']:.1f} | {d['decode_mbs']:.0f} | "
                       f"{d['mvalues']:.0f} | {d['pyarrow_mbs']:.0f} |")
        out.append("")
    if res.get("cold"):
        c = res["cold"]
        out += ["## Cold start", "", f"`csup-async scan` of a {c['file_kb']:.0f} kB local file "
                f"(2 columns) from a cold process: {c['median_s']:.2f} s wall (median); "
                f"heavy modules imported by a small scan: {c['heavy_imports'] or 'none'}.", ""]
    if res.get("once"):
        o = res["once"]
        out += ["## One-time costs (excluded from the medians above)", "",
                f"Opening the wide file at s3 with a fresh `S3Store`: {o['open_fresh_store_s']:.3f}"
                f" s, with a kept one: {o['open_kept_store_s']:.3f} s (the csup-async rows keep "
                f"one store per worker, as DuckDB keeps its connection).", ""]
    if res.get("writer"):
        w = res["writer"]
        out += ["## Writer (1M x 24)", "", f"Vectorised (`arrow_write`): {w['fast_s']:.1f} s; "
                f"value-by-value path: ~{w['python_path_s_extrapolated']:.0f} s (extrapolated "
                f"from 20,000 rows); pyarrow Parquet {w['parquet_s']:.1f} s; Vortex "
                f"{w['vortex_s']:.1f} s.", ""]
    return "\n".join(out)


def plots(res: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    ok = [r for r in res["runs"] if "error" not in r]
    names = list(dict.fromkeys(r["reader"] for r in ok))
    for dataset in ("wide", "many"):
        rows = [r for r in ok if r["dataset"] == dataset]
        profs = list(dict.fromkeys(r["profile"] for r in rows))
        if not rows:
            continue
        fig, axes = plt.subplots(1, len(profs), figsize=(5.5 * len(profs), 4.6), squeeze=False)
        for ax, prof in zip(axes[0], profs, strict=True):
            sub = [r for r in rows if r["profile"] == prof]
            projs = list(dict.fromkeys(r["projection"] for r in sub))
            width = 0.8 / max(1, len(names))
            for i, name in enumerate(names):
                ys = [next((r["median"] for r in sub if r["reader"] == name
                            and r["projection"] == p), float("nan")) for p in projs]
                ax.bar([j + i * width for j in range(len(projs))], ys, width, label=name)
            fl = [next((r["floor"] for r in sub if r["projection"] == p and r["floor"]), None)
                  for p in projs]
            for j, f in enumerate(fl):
                if f:
                    ax.hlines(f, j - width / 2, j + 0.8 - width / 2, colors="black",
                              linestyles="dashed", label="floor" if j == 0 else None)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(projs))], projs)
            ax.set_yscale("log")
            ax.set_ylabel("seconds (median, log)")
            ax.set_title(f"{dataset}: {prof}")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        p = RESULTS / f"{dataset}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(str(p))
    return made


# --------------------------------------------------------------- main ---

def result_rows(results: dict[str, dict[str, Any]], names: list[str], needed: dict[str, int],
                many_needed: int, files: int) -> list[dict[str, Any]]:
    """One row per measurement, with its floor and its ratio to the best peer, in the
    report's order (wide first, then by profile, projection and reader)."""
    rows = []
    for key, r in results.items():
        name, dataset, prof, proj = key.split("|")
        nb = many_needed if dataset == "many" else needed[proj]
        row = {"reader": name, "dataset": dataset, "profile": prof, "projection": proj,
               "bytes_needed_csup": nb,
               "floor": floor(prof, nb, files if dataset == "many" else 1), **r}
        rows.append(row)
    for r in rows:
        if "error" in r:
            continue
        peers = [x["median"] for x in rows if "error" not in x and x["reader"] in readers.PEERS
                 and (x["dataset"], x["profile"], x["projection"]) == (
                     r["dataset"], r["profile"], r["projection"])]
        r["x_best_peer"] = r["median"] / min(peers) if peers else float("nan")
        r["x_floor"] = r["median"] / r["floor"] if r["floor"] else None
    order = {n: i for i, n in enumerate(names)}
    rows.sort(key=lambda r: (r["dataset"] != "wide", ["s3", "far", "local"].index(r["profile"]),
                             list(data.PROJECTIONS).index(r["projection"]), order[r["reader"]]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="s3 and local only, 2 timed runs, 100 small files")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per measurement")
    ap.add_argument("--readers", default=None, help="comma-separated subset of readers")
    ap.add_argument("--profiles", default=None, help="comma-separated subset: s3,far,local")
    ap.add_argument("--no-many", action="store_true", help="skip the many-files variant")
    ap.add_argument("--no-extras", action="store_true", help="skip decode/cold/writer")
    ap.add_argument("--out", default=None,
                    help="results directory (default bench/results): focused runs can "
                    "write elsewhere and leave the published results alone")
    args = ap.parse_args()
    global RESULTS
    if args.out:
        RESULTS = Path(args.out)
    t_start = time.perf_counter()
    runs = args.runs or (2 if args.quick else 5)
    profiles = (args.profiles.split(",") if args.profiles
                else ["s3", "local"] if args.quick else ["s3", "far", "local"])
    names = args.readers.split(",") if args.readers else readers.DEFAULT
    files = 100 if args.quick else data.MANY_FILES
    RESULTS.mkdir(parents=True, exist_ok=True)

    log("data:")
    info = data.ensure(log=lambda m: log("  " + m))
    bucket = data.ROOT / "root" / data.BUCKET
    needed = {p: bytes_needed([str(bucket / data.wide_key("csup"))], c)
              for p, c in data.PROJECTIONS.items()}
    many_needed = bytes_needed([str(bucket / k) for k in data.many_keys("csup", files)],
                               data.PROJECTIONS["2 cols"])

    store = netsim.SimStore(data.ROOT / "root", data.ROOT / "nginx").start()
    results: dict[str, dict[str, Any]] = {}
    try:
        log(f"wide table, profiles {profiles}:")
        for name in names:
            fmt, _ = readers.READERS[name]
            tasks = tasks_for("wide", profiles, list(data.PROJECTIONS), fmt, store, files)
            for k, v in run_job(name, tasks, runs, store).items():
                results[f"{name}|{k}"] = v
        if not args.no_many:
            first = [p for p in profiles if p != "far"]
            log(f"many files ({files}), 2 columns, profiles {first}:")
            for name in names:
                fmt, _ = readers.READERS[name]
                tasks = tasks_for("many", first, ["2 cols"], fmt, store, files)
                for k, v in run_job(name, tasks, runs, store).items():
                    results[f"{name}|{k}"] = v
            if "far" in profiles:
                log("many files at far, for readers under 10 s at s3:")
                for name in names:
                    s3 = results.get(f"{name}|many|s3|2 cols", {})
                    if "error" in s3 or s3.get("median", 1e9) > 10:
                        results[f"{name}|many|far|2 cols"] = {
                            "task": "many|far|2 cols",
                            "error": "not run: over 10 s at s3 (time budget)"}
                        continue
                    fmt, _ = readers.READERS[name]
                    tasks = tasks_for("many", ["far"], ["2 cols"], fmt, store, files)
                    for k, v in run_job(name, tasks, runs, store).items():
                        results[f"{name}|{k}"] = v
        once = one_time_costs(store) if not args.no_extras else None
    finally:
        store.stop()

    rows = result_rows(results, names, needed, many_needed, files)
    res: dict[str, Any] = {"runs": rows}
    if not args.no_extras:
        log("extras:")
        res["decode"] = decode_throughput(3 if args.quick else 7)
        res["cold"] = cold_start(3)
        res["writer"] = writer_speed(info)
        res["once"] = once
    res["config"] = {"cpus": os.cpu_count(), "quick": args.quick, "runs": runs,
                     "command": " ".join(["python", "bench/run.py", *sys.argv[1:]]),
                     "wide_size": info["wide_size"], "many_files": files,
                     "elapsed_s": time.perf_counter() - t_start}
    (RESULTS / "results.json").write_text(json.dumps(res, indent=1))
    (RESULTS / "results.md").write_text(report(res) + "\n")
    made = plots(res)
    log(f"wrote {RESULTS / 'results.md'}, results.json, {', '.join(Path(p).name for p in made)} "
        f"in {(time.perf_counter() - t_start) / 60:.1f} min")


if __name__ == "__main__":
    main()
