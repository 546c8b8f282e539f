"""Filters and row selection against the peers: ``python bench/bench_filter.py [--quick]``.

About 5 minutes (``--quick``: 2 rounds, about 2); ``--cases abf`` runs a subset,
``--readers``, ``--runs`` and ``--out DIR`` as in ``bench/run.py``.

The benchmark of issue 16's targets.  Data: the wide table of :mod:`data`
(1M rows x 24 columns) plus a clustered key ``ts`` (sorted int64), as CSUP
written with our writer's defaults and as Parquet with 64k-row row groups and
statistics (pyarrow's defaults otherwise), generated once into
``bench/.data/filter-v1/``.  The store is the ``s3`` profile of :mod:`netsim`
(nginx behind the delay proxy: 50 ms per round trip, 100 MB/s per connection);
requests, bytes and request waves are counted from nginx's access log.

Readers, each in a process of its own, the same filter and projection:
csup-async (``csup_async.open(url)`` with no store passed, credentials and
endpoint from the environment, one event loop for the process), polars
(``scan_parquet`` + ``filter``), DuckDB (httpfs, ``WHERE``) and
``pyarrow.dataset`` (``to_table(filter=)``).  Each case: one warm-up per reader,
then N rounds in which every reader runs once (the order rotated), so a shared
machine's changing load falls on all readers alike; the median time, requests
and bytes of the last run, and the fewest request waves seen.

Cases (the targets of issue 16):

a. ``ts`` range selecting 1 % of rows, 6 columns; bytes read against the bytes
   of the segments that hold matching rows (:func:`holding_bytes`);
b. point lookup ``ts == x``, all 25 columns: request waves (round trips) and time;
c. ``i1 < 90`` (90 % of rows, a column the data is not sorted by) against the
   unfiltered scan of the same 6 columns, per reader;
d. ``limit=10``: round trips; ``take`` of 100 random rows and ``rows=slice(a, b)``
   of 1 %: bytes read against the segments holding them;
e. checksum verification: a full local scan of every column with
   ``verify_checksums`` on and off (no proxy);
f. the writer's ``segment_thresh`` (256 KiB, 1 MiB, 4 MiB and the writer's
   default): metadata bytes, open and plan time, and cases (a), (b) and the
   unfiltered scan of (c) on each file (csup-async only).

Cached CSUP files are rewritten when the writer's sources change (a merged
writer may cut segments or write statistics differently).

A csup-async feature that is not there yet (``rows=``, ``limit=``, ``take``,
``verify_checksums``) is detected and reported as "not available", never
emulated.  Results: ``bench/results/filter.md`` and ``filter.json``.

Request waves: nginx logs each request's arrival (``$msec - $request_time``);
requests that arrive within 0.6 RTT of the first request of a wave belong to
it, a later one starts the next wave.  A request issued only after an earlier
response arrived is at least one RTT later, so the waves count the round trips
a reader waited for in sequence (one issued late for other reasons, such as
CPU work, counts too: it is waited for all the same).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402
from filter_bytes import column_segments, crc_estimate, holding_bytes, metadata_bytes  # noqa: E402
from filter_cases import (  # noqa: E402
    BUDGET,
    DEFAULT_THRESH,
    POINT_ROW,
    PROFILE,
    RANGE_ROW,
    RANGE_ROWS,
    READERS,
    RESULTS,
    ROOT,
    ROWS,
    RTT,
    SEGMENT_THRESHES,
    SIX,
    SLOW,
    TAKE_ROWS,
    TAKE_SEED,
    TIMEOUT,
    cases,
    csup_name,
    key,
    local,
    segment_cases,
    selections,
)
from filter_readers import (  # noqa: E402
    CsupRunner,
    DuckRunner,
    PolarsRunner,
    PyarrowRunner,
    Unavailable,
    csup_features,
    csup_filter,
)
from filter_report import analyse, report  # noqa: E402

# --------------------------------------------------------------- data ---

def make_ts(n: int) -> np.ndarray:
    """A clustered key: millisecond stamps, strictly increasing (so a row is one value)."""
    rng = np.random.default_rng(4242)
    return 1_700_000_000_000 + np.cumsum(rng.integers(1, 200, n))


def writer_fingerprint() -> str:
    """A hash of the writer's sources: cached CSUP files are rewritten when it changes
    (a merged writer may cut segments or write statistics differently)."""
    import hashlib

    import csup_async

    base = Path(csup_async.__file__).parent / "writers"
    h = hashlib.sha256()
    for name in ("writer.py", "writing.py", "arrow_write.py", "segstats.py", "tagenc.py",
                 "batch.py"):
        if (base / name).exists():
            h.update(name.encode() + (base / name).read_bytes())
    return h.hexdigest()[:16]


def ensure(log: Any = print) -> dict[str, Any]:
    """Generate what is missing or stale; return the files' sizes and the cases' constants."""
    info_path = ROOT / "info.json"
    info: dict[str, Any] = json.loads(info_path.read_text()) if info_path.exists() else {}
    fingerprint = writer_fingerprint()
    csup_stale = info.get("writer") != fingerprint or not all(
        local(csup_name(label)).exists() for label in SEGMENT_THRESHES)
    parquet_stale = "constants" not in info or not local("wide.parquet").exists()
    if not (csup_stale or parquet_stale):
        return info
    import pyarrow as pa
    import pyarrow.parquet as pq

    import csup_async

    t0 = time.perf_counter()
    table = data.make_table(ROWS, seed=42)
    ts = make_ts(ROWS)
    table = table.append_column("ts", pa.array(ts, pa.int64()))
    log(f"generated {ROWS:,} rows x {table.num_columns} columns in "
        f"{time.perf_counter() - t0:.1f} s")
    local("x").parent.mkdir(parents=True, exist_ok=True)
    info.setdefault("write_s", {})
    info.setdefault("size", {})
    written = []
    if csup_stale:
        for label, thresh in SEGMENT_THRESHES.items():
            t = time.perf_counter()
            opts = {} if label == DEFAULT_THRESH else {"segment_thresh": thresh}
            csup_async.write(str(local(csup_name(label))), table, **opts, target="csup-async")
            info["write_s"][csup_name(label)] = time.perf_counter() - t
            written.append(csup_name(label))
        info["writer"] = fingerprint
    if parquet_stale:
        t = time.perf_counter()
        pq.write_table(table, str(local("wide.parquet")), row_group_size=65536,
                       write_statistics=True)
        info["write_s"]["wide.parquet"] = time.perf_counter() - t
        written.append("wide.parquet")
    for name in written:
        info["size"][name] = local(name).stat().st_size
        log(f"  wrote {name}: {info['size'][name] / 1e6:.1f} MB in "
            f"{info['write_s'][name]:.1f} s")
    take = np.sort(np.random.default_rng(TAKE_SEED).choice(ROWS, TAKE_ROWS, replace=False))
    i1 = table.column("i1").to_numpy()
    info["constants"] = {
        "range": [int(ts[RANGE_ROW]), int(ts[RANGE_ROW + RANGE_ROWS])],
        "point": int(ts[POINT_ROW]),
        "take": take.tolist(),
        "i1_lt_90_rows": int(np.count_nonzero(i1 < 90)),
        "i1_lt_90_i0_sum": int(np.flatnonzero(i1 < 90).sum()),
    }
    info_path.write_text(json.dumps(info, indent=1))
    return info


# ------------------------------------------- segments holding the rows ---


# ----------------------------------------------------------- the cases ---


# -------------------------------------------------------------- readers ---


# --------------------------------------------------------- nginx's log ---

def timed_log_format() -> None:
    """Have nginx log each request's time too (appended after the fields netsim counts)."""
    import netsim

    plain = "$uri';"
    if "$msec" not in netsim._NGINX_CONF:
        if plain not in netsim._NGINX_CONF:
            raise RuntimeError("netsim's nginx log format changed: cannot add request times")
        netsim._NGINX_CONF = netsim._NGINX_CONF.replace(plain, "$uri $msec $request_time';")


def count_log(log: Path, mark: int, quiet: float = 0.3, most: float = 15.0) -> dict[str, Any]:
    """Requests, body bytes and request waves nginx logged since ``mark``, once the log
    has been quiet for ``quiet`` seconds: some readers keep fetching ahead after they
    have returned (pyarrow's readahead after ``head``), and those requests are theirs,
    not the next reader's."""
    size, since, deadline = log.stat().st_size, time.monotonic(), time.monotonic() + most
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = log.stat().st_size
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    starts, requests, nbytes, heads, errors = [], 0, 0, 0, 0
    with open(log, "rb") as f:
        f.seek(mark)
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            requests += 1
            heads += parts[0] == b"HEAD"
            errors += not parts[1].startswith(b"2")
            nbytes += int(parts[2])
            if len(parts) >= 7:
                starts.append(float(parts[-2]) - float(parts[-1]))
    return {"requests": requests, "bytes": nbytes, "heads": heads, "errors": errors,
            "waves": request_waves(starts) if len(starts) == requests else None}


def request_waves(starts: Sequence[float], rtt: float = RTT) -> int:
    """How many rounds of requests, by arrival time (see the module's docstring)."""
    waves, first = 0, None
    for s in sorted(starts):
        if first is None or s - first >= 0.6 * rtt:
            waves += 1
            first = s
    return waves


# -------------------------------------------------------------- worker ---


def _check(table: Any, case: dict[str, Any]) -> str | None:
    """What is wrong with a reader's answer, or None."""
    import pyarrow.compute as pc

    if table.num_rows != case["rows"]:
        return f"{table.num_rows} rows, expected {case['rows']}"
    if list(table.column_names) != list(case["columns"]):
        return f"columns {table.column_names}"
    if "i0_sum" in case and pc.sum(table.column("i0")).as_py() != case["i0_sum"]:
        return "the wrong rows (sum of the row ids differs)"
    return None


def csup_local_verify(path: str, runs: int) -> dict[str, Any]:
    """Case (e): full local scan of every column, checksums verified and not."""
    import csup_async

    async def scan(**opts: Any) -> float:
        t = time.perf_counter()
        async with csup_async.open(path, **opts) as r:
            res = await r.scan(None)
        assert res.num_rows == ROWS
        return time.perf_counter() - t

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        try:
            await scan(verify_checksums=False)
        except (csup_async.CsupError, TypeError) as e:
            if "verify_checksums" not in str(e):
                raise
            out["unavailable"] = f"open(..., verify_checksums=) not accepted ({e})"[:200]
        await scan()  # warm-up (page cache, thread pool)
        plain, on, off = [], [], []
        for _ in range(max(runs, 5)):  # cheap, and a few percent needs several pairs
            if "unavailable" in out:
                plain.append(await scan())
            else:
                on.append(await scan(verify_checksums=True))
                off.append(await scan(verify_checksums=False))
        if plain:
            out["default_s"] = statistics.median(plain)
        else:
            out.update(on_s=statistics.median(on), off_s=statistics.median(off),
                       on=on, off=off)
        return out

    return asyncio.run(go())


def csup_open_plan(url: str, path: str, pred: list[list[Any]], runs: int) -> dict[str, Any]:
    """Case (f): open at s3 (metadata requests), open of the local copy (reading and
    parsing the metadata, no network) and planning case (a), per file."""
    import csup_async

    feats = csup_features()

    async def go() -> dict[str, Any]:
        opens, plans, parses = [], [], []
        for _ in range(runs + 1):
            t = time.perf_counter()
            async with csup_async.open(path):
                parses.append(time.perf_counter() - t)
            t = time.perf_counter()
            async with csup_async.open(url) as r:
                t1 = time.perf_counter()
                if feats["plan_filter"]:
                    await r.plan(SIX, filter=csup_filter(pred))
                else:
                    await r.plan([*SIX, "ts"])
                t2 = time.perf_counter()
                reqs, got = r.open_stats.requests, r.open_stats.bytes_read
            opens.append(t1 - t)
            plans.append(t2 - t1)
        # CPU alone (local open, plan): the best of the runs, the least disturbed by a
        # shared machine; the open at s3 waits on the network: the median
        return {"open_s": statistics.median(opens[1:]), "plan_s": min(plans[1:]),
                "local_open_s": min(parses[1:]), "open_requests": reqs,
                "open_bytes": got,
                "plan_with_filter": feats["plan_filter"]}

    return asyncio.run(go())


def worker(reader: str, endpoint: str) -> None:
    """Serve one reader: a JSON command per stdin line, a JSON answer per stdout line.

    ``{"op": "run", "case": ...}`` runs a case once and answers its time (or why it
    could not run); ``verify`` and ``open_plan`` run csup-async's local cases whole.
    """
    if reader == "csup-async":
        fn: Any = CsupRunner()
        hello: dict[str, Any] = {"features": fn.features}
    elif reader == "polars":
        fn, hello = PolarsRunner(endpoint), {}
    elif reader == "duckdb httpfs":
        fn, hello = DuckRunner(endpoint), {}
    else:
        fn, hello = PyarrowRunner(endpoint), {}
    print(json.dumps({"ready": True, **hello}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "exit":
                return
            if cmd["op"] == "verify":
                res = csup_local_verify(cmd["path"], cmd["runs"])
            elif cmd["op"] == "open_plan":
                res = csup_open_plan(cmd["url"], cmd["path"], cmd["pred"], cmd["runs"])
            else:
                t = time.perf_counter()
                table = fn(cmd["case"])
                res = {"s": time.perf_counter() - t}
                bad = _check(table, cmd["case"])
                if bad:
                    res = {"error": f"wrong answer: {bad}"}
        except Unavailable as e:
            res = {"unavailable": str(e)}
        except Exception as e:  # reported in the results, not hidden
            res = {"error": f"{type(e).__name__}: {e}"[:300],
                   "trace": traceback.format_exc()[-1200:]}
        print(json.dumps(res), flush=True)


class Worker:
    """A reader's process, driven one command at a time."""

    def __init__(self, reader: str, endpoint: str) -> None:
        import queue
        import threading

        import readers

        env = dict(os.environ)
        env.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": readers.KEY_ID,
                    "AWS_SECRET_ACCESS_KEY": readers.SECRET,
                    "AWS_DEFAULT_REGION": readers.REGION, "AWS_EC2_METADATA_DISABLED": "true"})
        self.reader = reader
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", reader, "--endpoint", endpoint],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.err: list[str] = []

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.put(line)
            self.lines.put(None)

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.err = [*self.err[-20:], line]

        threading.Thread(target=pump, daemon=True).start()
        threading.Thread(target=drain, daemon=True).start()
        self.hello = self._answer()
        self.dead = "error" in self.hello

    def _answer(self) -> dict[str, Any]:
        import queue

        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                self.proc.kill()
                return {"error": f"no answer within {TIMEOUT:.0f} s"}
            if line is None:
                return {"error": f"worker exited: {''.join(self.err)[-300:]}"}
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue  # a library's own print

    def ask(self, cmd: dict[str, Any]) -> dict[str, Any]:
        if self.dead:
            return {"error": "worker not running"}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        res = self._answer()
        if res.get("error", "").startswith(("no answer", "worker exited")):
            self.dead = True
        return res

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask({"op": "exit"})
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def run_case(workers: list[Worker], case: dict[str, Any], runs: int, log: Path
             ) -> dict[str, dict[str, Any]]:
    """One warm-up per reader, then ``runs`` rounds with every reader once per round
    (the order rotated each round), so a machine's changing load falls on all alike."""
    import netsim

    out: dict[str, dict[str, Any]] = {}
    live: list[Worker] = []
    for w in workers:
        mark = netsim.log_mark(log)
        res = w.ask({"op": "run", "case": case})
        count_log(log, mark)  # let its reads ahead end before the next reader starts
        if "s" not in res:
            out[w.reader] = res
            _print_row(w.reader, case["id"], res)
            continue
        out[w.reader] = {"warm": res["s"], "times": [], "counts": []}
        live.append(w)
    for i in range(runs):
        for w in live[i % len(live):] + live[: i % len(live)] if live else []:
            r = out[w.reader]
            if "error" in r or (r["times"] and (r["warm"] >= SLOW
                                                or sum(r["times"]) + r["warm"] > BUDGET)):
                continue
            mark = netsim.log_mark(log)
            res = w.ask({"op": "run", "case": case})
            if "s" not in res:
                out[w.reader] = res
                continue
            r["times"].append(res["s"])
            r["counts"].append(count_log(log, mark))
    for w in live:
        r = out[w.reader]
        if "times" not in r:
            _print_row(w.reader, case["id"], r)
            continue
        if not r["times"]:  # a warm-up over SLOW seconds is its one sample
            r["times"] = [r["warm"]]
        last = r["counts"][-1] if r["counts"] else {"requests": 0, "bytes": 0, "heads": 0,
                                                      "errors": 0, "waves": None}
        waves = [c["waves"] for c in r["counts"] if c["waves"] is not None]
        r.update(median=statistics.median(r["times"]), requests=last["requests"],
                 bytes=last["bytes"], heads=last["heads"], errors=last["errors"],
                 waves=min(waves) if waves else None, waves_each=waves)
        _print_row(w.reader, case["id"], r)
    return out


def _print_row(reader: str, case: str, r: dict[str, Any]) -> None:
    head = f"  {case:14} {reader:16}"
    if "median" in r:
        print(f"{head} {r['median']:7.3f} s {r['requests']:5d} req "
              f"{r['waves'] if r['waves'] is not None else '-':>3} waves "
              f"{r['bytes'] / 1e6:8.2f} MB", flush=True)
    elif "unavailable" in r and "default_s" not in r:
        print(f"{head} not available: {r['unavailable']}", flush=True)
    elif "error" in r:
        print(f"{head} ERROR {r['error'][:200]}", flush=True)
    else:
        print(f"{head} " + json.dumps({k: v for k, v in r.items() if k not in ("on", "off")}),
              flush=True)


# ----------------------------------------------------------- analysis ---


# --------------------------------------------------------------- main ---

def _versions() -> str:
    import duckdb
    import polars
    import pyarrow

    import csup_async

    return (f"csup-async {csup_async.__version__}, polars {polars.__version__}, "
            f"duckdb {duckdb.__version__}, pyarrow {pyarrow.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 timed runs per case")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per case (default 5)")
    ap.add_argument("--readers", default=",".join(READERS), help="comma-separated subset")
    ap.add_argument("--cases", default="abcdef", help="which of the cases a-f to run")
    ap.add_argument("--out", default=str(RESULTS), help="results directory")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.endpoint)
        return
    import netsim

    t_start = time.perf_counter()
    load = os.getloadavg()
    runs = args.runs or (2 if args.quick else 5)
    names = args.readers.split(",")
    print("data:", flush=True)
    info = ensure(log=lambda m: print("  " + m, flush=True))
    all_cases = [c for c in cases(info, args.quick) if c["id"][0] in args.cases]
    seg_cases = segment_cases(info, args.quick) if "f" in args.cases else []
    print("yardsticks and metadata:", flush=True)
    main_csup = local(csup_name())
    yard = {k: holding_bytes(main_csup, cols, sel)
            for k, (cols, sel) in selections(info).items()}
    segments: dict[str, Any] = {}
    for label in SEGMENT_THRESHES:
        p = local(csup_name(label))
        segs = column_segments(p)
        segments[label] = {
            "file_bytes": p.stat().st_size, "metadata_bytes": metadata_bytes(p),
            "segments": sum(len(s["values"]) + len(s["presence"]) for s in segs.values()),
            "holding": {k: holding_bytes(p, cols, sel)["bytes"]
                        for k, (cols, sel) in selections(info).items() if k in ("a", "b")}}
        print(f"  {label}: {segments[label]}", flush=True)
    timed_log_format()
    store = netsim.SimStore(ROOT / "root", ROOT / "nginx").start()
    rows: dict[str, dict[str, Any]] = {n: {} for n in names}
    verify: dict[str, Any] = {}
    workers: list[Worker] = []
    try:
        endpoint = store.endpoint(PROFILE)
        for name in names:
            workers.append(Worker(name, endpoint))
            if "features" in workers[-1].hello:
                rows[name]["features"] = workers[-1].hello["features"]
        csup = [w for w in workers if w.reader == "csup-async"]
        print("cases (interleaved: every reader once per round):", flush=True)
        for case in all_cases:
            for name, r in run_case(workers, case, runs, store.log).items():
                rows[name][case["id"]] = r
        for case in seg_cases:
            for name, r in run_case(csup, case, runs, store.log).items():
                rows[name][case["id"]] = r
        for w in csup if "f" in args.cases else []:
            for label in SEGMENT_THRESHES:
                got = w.ask({"op": "open_plan", "pred": seg_cases[0]["pred"],
                             "path": str(local(csup_name(label))),
                             "url": f"s3://{data.BUCKET}/{key(csup_name(label))}",
                             "runs": runs})
                segments[label]["open_plan"] = got
                _print_row(w.reader, f"open {label}", got)
        for w in csup if "e" in args.cases else []:
            verify = w.ask({"op": "verify", "path": str(main_csup), "runs": runs})
            _print_row(w.reader, "e (local)", verify)
    finally:
        for w in workers:
            w.close()
        store.stop()
    est: dict[str, Any] = {}
    if "e" in args.cases:
        print("crc32 estimate:", flush=True)
        est = crc_estimate(main_csup)
    res: dict[str, Any] = {
        "rows": rows, "cases": [{k: v for k, v in x.items() if k != "indices"}
                                for x in all_cases + seg_cases],
        "yardsticks": {k: {"bytes": v["bytes"], "columns": {
            n: {kk: vv for kk, vv in col.items() if kk == "bytes" or kk == "of_segments"}
            | {"segments": len(col["value_segments"]) + len(col["presence_segments"])}
            for n, col in v["columns"].items()}} for k, v in yard.items()},
        "segments": segments, "verify": verify, "crc_estimate": est, "info": info}
    analyse(res)
    res["config"] = {"command": " ".join(["python", "bench/bench_filter.py", *sys.argv[1:]]),
                     "runs": runs, "quick": args.quick,
                     "machine": f"{os.cpu_count()} cores, {platform.machine()}, "
                                f"Python {platform.python_version()}, {platform.system()}",
                     "versions": _versions(), "elapsed_s": time.perf_counter() - t_start,
                     "load": " ".join(f"{x:.1f}" for x in load)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "filter.json").write_text(json.dumps(res, indent=1, default=str))
    text = report(res)
    (out / "filter.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
