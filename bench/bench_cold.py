"""How fast csup-async is the way users meet it: cold processes and the simple API.

``python bench/bench_cold.py [--runs N] [--profile s3] [--readers a,b]``

Three measurements on the wide table (1M rows x 24 columns, projection ``i3,s1``),
served by nginx behind the delay proxy of :mod:`netsim` (the ``s3`` profile: each
response's first byte held one 50 ms round trip, bytes paced at 100 MB/s per
connection), every reader in the same run so ratios survive a noisy machine:

* **cold process**: a fresh ``python -c`` that imports the reader, reads the
  projection and exits; whole-process wall time.  csup-async also as the CLI
  (``csup-async scan URL -c i3,s1 --format csv > /dev/null``: its output included).
* **warm, simple API**: in one process, ``async with csup_async.open(url)`` per scan
  with no store passed (what the README's first example does), against the same
  with one store passed by hand, and each peer's own simple call.
* **first vs tenth**: in a fresh process, the first scan against the tenth; for
  csup-async also with its reader and S3 store modules imported before the clock
  starts, which separates what the first scan pays for imports from the rest.

Cold runs report CPU seconds (user + system, the process and its children) beside
wall time: on a shared machine the wall time of a short process swings with the
load, its CPU time much less.

The URL is opened with nothing but the environment: ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``.
Results go to ``bench/results/cold.md`` and ``cold.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

COLUMNS = ["i3", "s1"]
RESULTS = HERE / "results"


def _env(endpoint: str) -> dict[str, str]:
    env = dict(os.environ)
    # Installed packages carry their bytecode; a source tree gets it on the first
    # (discarded) run.  With this set, every run would compile csup-async's ~45
    # modules again (about 70 ms) while the peers load theirs compiled.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": readers.KEY_ID,
                "AWS_SECRET_ACCESS_KEY": readers.SECRET, "AWS_DEFAULT_REGION": readers.REGION,
                "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)])})
    return env


def _csup_script(url: str, *, scans: int = 1, store: bool = False,
                 preload: bool = False, fresh: bool = False,
                 columns: list[str] = COLUMNS) -> str:
    """A program that opens ``url`` per scan (optionally through one store, optionally
    with the reader's and the S3 store's modules imported before the clock starts;
    ``fresh``: a new store per scan, closed after it, so every scan starts with a cold
    connection pool) and prints the time of every scan, as JSON."""
    return textwrap.dedent(f"""
        import asyncio, json, time
        import csup_async
        if {preload or fresh!r}:
            import csup_async.readers.reader, csup_async.scan.scan, csup_async.stores.s3

        async def main():
            times = []
            store = None
            from csup_async.stores.resolve import store_for
            if {store!r}:
                store, _ = store_for({url!r})
            for _ in range({scans}):
                t = time.perf_counter()
                if {fresh!r}:
                    store, _ = store_for({url!r})
                async with csup_async.open({url!r}, store=store) as r:
                    res = await r.scan({columns!r})
                if {fresh!r}:
                    await store.close()
                assert len(res) == {data.WIDE_ROWS}
                times.append(time.perf_counter() - t)
            if store is not None:
                await store.close()
            print(json.dumps(times))

        asyncio.run(main())
    """)


def _peer_script(name: str, endpoint: str, scans: int = 1,
                 columns: list[str] = COLUMNS) -> str:
    return textwrap.dedent(f"""
        import json, time
        import readers
        fn = readers.READERS[{name!r}][1]
        times = []
        for _ in range({scans}):
            t = time.perf_counter()
            rows, _ = fn({endpoint!r}, [{data.wide_key(readers.READERS[name][0])!r}],
                         {columns!r})
            assert rows == {data.WIDE_ROWS}
            times.append(time.perf_counter() - t)
        print(json.dumps(times))
    """)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], env: dict[str, str], shell_out: bool = False
         ) -> tuple[float, str, float]:
    """Wall seconds, stdout and CPU seconds (user + system) of one process."""
    cpu = _children_cpu()
    t = time.perf_counter()
    if shell_out:
        with open(os.devnull, "wb") as sink:
            got = subprocess.run(cmd, env=env, stdout=sink, stderr=subprocess.PIPE, check=False)
        out = ""
    else:
        got = subprocess.run(cmd, env=env, capture_output=True, check=False)
        out = got.stdout.decode()
    wall = time.perf_counter() - t
    if got.returncode:
        raise RuntimeError(f"{cmd[:3]} failed: {got.stderr.decode()[-2000:]}")
    return wall, out, _children_cpu() - cpu


def _cli_script() -> str:
    """The ``csup-async`` script installed beside this interpreter, as a virtualenv has it.

    A version manager's shim found first on PATH (pyenv's is two bash scripts and
    a ``pyenv exec``) would add its own start-up, about 0.1 s, to every run.
    """
    beside = Path(sys.executable).parent / "csup-async"
    return str(beside) if beside.exists() else "csup-async"


def _counted(cmd: list[str], env: dict[str, str], log: Path, shell_out: bool = False
             ) -> tuple[float, str, float, netsim.Count]:
    """:func:`_run`, plus the requests and connections nginx saw while it ran."""
    mark = netsim.log_mark(log)
    wall, out, cpu = _run(cmd, env, shell_out)
    return wall, out, cpu, netsim.log_count(log, mark)


def _spread(xs: list[float]) -> dict[str, float]:
    """Median and the p90/median ratio (nearest rank) of some timings."""
    med = statistics.median(xs)
    p90 = sorted(xs)[min(len(xs) - 1, max(0, -(-9 * len(xs) // 10) - 1))]
    return {"median_s": med, "p90_s": p90, "p90_over_median": p90 / med if med else 0.0}


def cold(name: str, endpoint: str, runs: int, log: Path) -> dict[str, Any]:
    env = _env(endpoint)
    url = f"s3://{data.BUCKET}/{data.wide_key('csup')}"
    if name == "csup-async":
        cmd = [sys.executable, "-c", _csup_script(url)]
    elif name == "csup-async CLI":
        cmd = [_cli_script(), "scan", url, "-c", ",".join(COLUMNS), "--format", "csv"]
    else:
        cmd = [sys.executable, "-c", _peer_script(name, endpoint)]
    got = [_counted(cmd, env, log, shell_out=name.endswith("CLI"))
           for _ in range(runs + 1)][1:]
    walls, cpus = [g[0] for g in got], [g[2] for g in got]
    return {"reader": name, **_spread(walls), "runs": walls,
            "cpu_median_s": statistics.median(cpus), "cpu_runs": cpus,
            "requests": got[-1][3].requests, "connections": got[-1][3].connections}


def _warm_entry(text: str, count: netsim.Count) -> dict[str, Any]:
    times = json.loads(text.strip().splitlines()[-1])
    tenth = times[min(9, len(times) - 1)]
    return {"first_s": times[0], "tenth_s": tenth, "median_s": statistics.median(times[1:]),
            "worst_of_ten_over_tenth": max(times[:10]) / tenth, "times": times,
            "requests_per_scan": count.requests / len(times),
            "connections_per_scan": count.connections / len(times)}


# (label, one store passed, modules preloaded, a new store per scan)
CSUP_WARM = (("no_store", False, False, False), ("store_passed", True, False, False),
             ("no_store_modules_preloaded", False, True, False),
             ("cold_pool_new_store_per_scan", False, True, True))


def warm(name: str, endpoint: str, scans: int, log: Path,
         projections: dict[str, list[str]]) -> dict[str, Any]:
    env = _env(endpoint)
    url = f"s3://{data.BUCKET}/{data.wide_key('csup')}"
    out: dict[str, Any] = {"reader": name}
    for proj, cols in projections.items():
        suffix = "" if cols == COLUMNS else f"|{proj}"
        if name == "csup-async":
            for label, store, preload, fresh in CSUP_WARM:
                if suffix and label in ("store_passed", "no_store_modules_preloaded"):
                    continue
                _, text, _, count = _counted(
                    [sys.executable, "-c", _csup_script(url, scans=scans, store=store,
                                                        preload=preload, fresh=fresh,
                                                        columns=cols)], env, log)
                out[label + suffix] = _warm_entry(text, count)
        else:
            _, text, _, count = _counted(
                [sys.executable, "-c", _peer_script(name, endpoint, scans, cols)], env, log)
            out["no_store" + suffix] = _warm_entry(text, count)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="cold processes per reader")
    ap.add_argument("--scans", type=int, default=10, help="scans per warm process")
    ap.add_argument("--profile", default="s3", choices=["s3", "far", "local"])
    ap.add_argument("--readers", default="csup-async,csup-async CLI,polars,"
                    "pyarrow S3FileSystem,duckdb httpfs,vortex")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    names = args.readers.split(",")
    data.ensure(log=lambda m: print("  " + m, flush=True))
    store = netsim.SimStore(data.ROOT / "root", data.ROOT / "nginx").start()
    res: dict[str, Any] = {"profile": args.profile, "columns": COLUMNS, "cold": [],
                           "warm": [], "command": " ".join(["python", *sys.argv])}
    try:
        endpoint = store.endpoint(args.profile)
        res["setup_s"] = netsim.PROFILES[args.profile].setup
        for name in names:
            r = cold(name, endpoint, args.runs, store.log)
            res["cold"].append(r)
            print(f"cold  {name:24s} {r['median_s']:.3f} s", flush=True)
        projections = {"2 cols": COLUMNS, "6 cols": data.PROJECTIONS["6 cols"]}
        for name in names:
            if name.endswith("CLI"):
                continue
            r = warm(name, endpoint, args.scans, store.log, projections)
            res["warm"].append(r)
            print(f"warm  {name:24s} " + ", ".join(
                f"{k}: median {v['median_s']:.3f} s, first {v['first_s']:.3f} s, "
                f"tenth {v['tenth_s']:.3f} s, {v['requests_per_scan']:.1f} requests and "
                f"{v['connections_per_scan']:.1f} connections per scan"
                for k, v in r.items() if k != "reader"),
                flush=True)
    finally:
        store.stop()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cold.json").write_text(json.dumps(res, indent=1))
    (out / "cold.md").write_text(report(res) + "\n")
    print(report(res))


def report(res: dict[str, Any]) -> str:
    """cold.md: the tables of :func:`cold_table` and :func:`warm_table` under a heading."""
    return "\n".join([f"# Cold processes and the simple API ({res['profile']} profile)", "",
                      f"Command: `{res['command']}`", "", cold_table(res), "",
                      warm_table(res)])


def cold_table(res: dict[str, Any]) -> str:
    """One-shot processes: wall (median, p90/median), CPU, requests and connections."""
    polars = next((r["median_s"] for r in res["cold"] if r["reader"] == "polars"), None)
    lines = [f"| cold one-shot process ({','.join(res['columns'])}) | median s | x polars | "
             "p90 / median | CPU s (user + sys) | requests | connections |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["cold"]:
        x = f"{r['median_s'] / polars:.2f}" if polars else "-"
        cpu = f"{r['cpu_median_s']:.3f}" if "cpu_median_s" in r else "-"
        spread = f"{r['p90_over_median']:.2f}" if "p90_over_median" in r else "-"
        lines.append(f"| {r['reader']} | {r['median_s']:.3f} | {x} | {spread} | {cpu} | "
                     f"{r.get('requests', '-')} | {r.get('connections', '-')} |")
    return "\n".join(lines)


def warm_table(res: dict[str, Any]) -> str:
    """Scans in one process: median of scans 2-10, first and tenth, against polars'."""
    base: dict[str, float] = {}
    for r in res["warm"]:
        if r["reader"] == "polars":
            base = {how.partition("|")[2]: v["median_s"] for how, v in r.items()
                    if how != "reader"}
    lines = ["| warm process, per scan | projection | how | median s | x polars | first s | "
             "tenth s | first / tenth | worst of ten / tenth | requests | connections |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["warm"]:
        for how, v in r.items():
            if how == "reader":
                continue
            label, _, proj = how.partition("|")
            ref = base.get(proj)
            x = f"{v['median_s'] / ref:.2f}" if ref else "-"
            worst = v.get("worst_of_ten_over_tenth")
            reqs, conns = v.get("requests_per_scan"), v.get("connections_per_scan")
            lines.append(
                f"| {r['reader']} | {proj or '2 cols'} | {label.replace('_', ' ')} | "
                f"{v['median_s']:.3f} | {x} | {v['first_s']:.3f} | {v['tenth_s']:.3f} | "
                f"{v['first_s'] / v['tenth_s']:.2f} | "
                + (f"{worst:.2f}" if worst is not None else "-") + " | "
                + (f"{reqs:.1f}" if reqs is not None else "-") + " | "
                + (f"{conns:.1f}" if conns is not None else "-") + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
