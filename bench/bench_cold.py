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
                 preload: bool = False) -> str:
    """A program that opens ``url`` per scan (optionally through one store, optionally
    with the reader's and the S3 store's modules imported before the clock starts) and
    prints the time of every scan, as JSON."""
    return textwrap.dedent(f"""
        import asyncio, json, time
        import csup_async
        if {preload!r}:
            import csup_async.reader, csup_async.read.scan, csup_async.stores.s3

        async def main():
            times = []
            store = None
            if {store!r}:
                from csup_async.stores.resolve import store_for
                store, _ = store_for({url!r})
            for _ in range({scans}):
                t = time.perf_counter()
                async with csup_async.open({url!r}, store=store) as r:
                    res = await r.scan({COLUMNS!r})
                assert len(res) == {data.WIDE_ROWS}
                times.append(time.perf_counter() - t)
            if store is not None:
                await store.close()
            print(json.dumps(times))

        asyncio.run(main())
    """)


def _peer_script(name: str, endpoint: str, scans: int = 1) -> str:
    return textwrap.dedent(f"""
        import json, time
        import readers
        fn = readers.READERS[{name!r}][1]
        times = []
        for _ in range({scans}):
            t = time.perf_counter()
            rows, _ = fn({endpoint!r}, [{data.wide_key(readers.READERS[name][0])!r}],
                         {COLUMNS!r})
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


def cold(name: str, endpoint: str, runs: int) -> dict[str, Any]:
    env = _env(endpoint)
    url = f"s3://{data.BUCKET}/{data.wide_key('csup')}"
    if name == "csup-async":
        cmd = [sys.executable, "-c", _csup_script(url)]
    elif name == "csup-async CLI":
        cmd = [_cli_script(), "scan", url, "-c", ",".join(COLUMNS), "--format", "csv"]
    else:
        cmd = [sys.executable, "-c", _peer_script(name, endpoint)]
    got = [_run(cmd, env, shell_out=name.endswith("CLI")) for _ in range(runs + 1)][1:]
    walls, cpus = [g[0] for g in got], [g[2] for g in got]
    return {"reader": name, "median_s": statistics.median(walls), "runs": walls,
            "cpu_median_s": statistics.median(cpus), "cpu_runs": cpus}


def warm(name: str, endpoint: str, scans: int) -> dict[str, Any]:
    env = _env(endpoint)
    url = f"s3://{data.BUCKET}/{data.wide_key('csup')}"
    out: dict[str, Any] = {"reader": name}
    if name == "csup-async":
        for label, store, preload in (("no_store", False, False), ("store_passed", True, False),
                                      ("no_store_modules_preloaded", False, True)):
            _, text, _ = _run([sys.executable, "-c",
                               _csup_script(url, scans=scans, store=store, preload=preload)],
                              env)
            times = json.loads(text.strip().splitlines()[-1])
            out[label] = {"first_s": times[0], "tenth_s": times[min(9, len(times) - 1)],
                          "median_s": statistics.median(times[1:])}
    else:
        _, text, _ = _run([sys.executable, "-c", _peer_script(name, endpoint, scans)], env)
        times = json.loads(text.strip().splitlines()[-1])
        out["no_store"] = {"first_s": times[0], "tenth_s": times[min(9, len(times) - 1)],
                           "median_s": statistics.median(times[1:])}
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
        for name in names:
            r = cold(name, endpoint, args.runs)
            res["cold"].append(r)
            print(f"cold  {name:24s} {r['median_s']:.3f} s", flush=True)
        for name in names:
            if name.endswith("CLI"):
                continue
            r = warm(name, endpoint, args.scans)
            res["warm"].append(r)
            print(f"warm  {name:24s} " + ", ".join(
                f"{k}: median {v['median_s']:.3f} s, first {v['first_s']:.3f} s, "
                f"tenth {v['tenth_s']:.3f} s" for k, v in r.items() if k != "reader"),
                flush=True)
    finally:
        store.stop()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cold.json").write_text(json.dumps(res, indent=1))
    (out / "cold.md").write_text(report(res) + "\n")
    print(report(res))


def report(res: dict[str, Any]) -> str:
    peers = [r for r in res["cold"] if not r["reader"].startswith("csup")]
    polars = next((r["median_s"] for r in peers if r["reader"] == "polars"), None)
    lines = [f"# Cold processes and the simple API ({res['profile']} profile, columns "
             f"{','.join(res['columns'])})", "", f"Command: `{res['command']}`", "",
             "| cold one-shot process | median s | x polars | CPU s (user + sys) |",
             "|---|---:|---:|---:|"]
    for r in res["cold"]:
        x = f"{r['median_s'] / polars:.2f}" if polars else "-"
        cpu = f"{r['cpu_median_s']:.3f}" if "cpu_median_s" in r else "-"
        lines.append(f"| {r['reader']} | {r['median_s']:.3f} | {x} | {cpu} |")
    wpolars = next((r["no_store"]["median_s"] for r in res["warm"] if r["reader"] == "polars"),
                   None)
    lines += ["", "| warm process, per scan | how | median s | first s | tenth s | x polars |",
              "|---|---|---:|---:|---:|---:|"]
    for r in res["warm"]:
        for how, v in r.items():
            if how == "reader":
                continue
            x = f"{v['median_s'] / wpolars:.2f}" if wpolars else "-"
            lines.append(f"| {r['reader']} | {how.replace('_', ' ')} | {v['median_s']:.3f} | "
                         f"{v['first_s']:.3f} | {v['tenth_s']:.3f} | {x} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
