"""Real-shaped data: log records read by csup-async, polars, DuckDB and ``super`` itself.

``python bench/bench_realshape.py [--runs N] [--cold-runs N] [--out bench/results/realshape]``

About 3 minutes.  The data is :mod:`logshape`'s (200,000 seeded log records, ~55 MB of
NDJSON: nested optional records, int|string and int|float unions, RFC 3339 string
timestamps, arrays, nulls and missing fields), as

* ``logs.csup``: csup-async's ``write`` (fused: one super type);
* ``logs.nofuse.csup``: ``write(fuse=False)``: one super type per record shape (191);
* ``logs.parquet``: polars' ``read_ndjson`` + ``write_parquet`` (the peers' own file);
* ``logs.ndjson``: the source, read by polars as it is;
* ``logs.super-v0.3.0.csup`` / ``logs.super-main.csup``: ``super -f csup`` of the NDJSON,
  by the real binaries (``tests/support/realtools``; a version not built is left out,
  as is a file this reader cannot read yet).

Warm (one process, every reader warmed up first, the readers alternated within each
round, median of ``--runs`` rounds; wall and CPU seconds, the CPU of every thread):

* ``2 cols``: ``ts`` and ``u.name`` (strings; ``u`` is optional) of every row;
* ``filtered``: the same columns where ``level = 'error'`` (1.5 % of rows, spread over
  the file), against the unfiltered read of the same file (the issue's first target)
  and against polars ``scan_parquet(...).filter(...).collect()``;
* ``ordered``: ``u.name >= 'sara'`` (an ordered comparison of strings, 9 % of rows);
* ``6 cols``: ``ts, level, u, code, dur, tags`` (records, unions, arrays);
* ``many types``: ``2 cols`` of the files of many super types, per file byte against
  the fused file (the issue's target: at most 1.5x);
* super main's file (CSUP v23, issue 37): ``2 cols`` (in ``many types``), ``6 cols`` and
  the whole process against the same rows in our layout, at most 1.1x.

Whole process (``--cold-runs`` fresh interpreters per reader, alternated; bytecode
written and used as a user's install has it, ``PYTHONDONTWRITEBYTECODE`` unset):
import + the first read of ``2 cols``, against polars on Parquet, DuckDB on Parquet and
``super`` on its own file (``super -c 'cut ts,u.name' -f bsup -o /dev/null``).

Requests and bytes: csup-async's own count (``ScanStats``); for the peers, the bytes
their ``read`` system calls returned (``rchar`` of ``/proc/self/io``: 0 for a reader
that maps the file).  Writes ``OUT.json`` and ``OUT.md``.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import logshape  # noqa: E402

RESULTS = HERE / "results"
COLS = ["ts", "u.name"]
SIX = ["ts", "level", "u", "code", "dur", "tags"]
TOOLS = Path(os.environ.get("CSUP_ASYNC_TOOLS_CACHE",
                            Path.home() / ".cache" / "csup-async" / "tools"))
SUPERS = {"super-v0.3.0": TOOLS / "super-v0.3.0" / "super",
          "super-main": TOOLS / "super-main" / "super"}
SUPER_QUERY = "cut ts,u.name"


# ------------------------------------------------------------------ files ---

def files(log: bool = True) -> dict[str, Path]:
    """Every file of the suite (made when missing): the log shape's, then SuperDB's."""
    paths = logshape.ensure(log=log, nofuse=True)
    for name, exe in SUPERS.items():
        out = logshape.ROOT / f"logs.{name}.csup"
        if not out.exists() and exe.exists():
            tmp = out.with_suffix(".tmp")
            subprocess.run([str(exe), "-f", "csup", "-o", str(tmp), str(paths["ndjson"])],
                           check=True)
            tmp.replace(out)
        if out.exists():
            paths[name] = out
    return paths


def readable(path: Path) -> str | None:
    """None if csup-async reads ``path``, else why not (a SuperDB version not read yet)."""
    import csup_async

    try:
        csup_async.read(str(path), ["ts"], limit=1)
    except csup_async.CsupError as e:
        return str(e).split(": ", 1)[-1][:160]
    return None


# ---------------------------------------------------------------- readers ---

def _rchar() -> int:
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Case:
    """One reader of one case: a callable answering (rows, requests, bytes)."""

    def __init__(self, case: str, reader: str, fn: Callable[[], tuple[int, int | None, int]],
                 file: Path | None = None) -> None:
        self.case, self.reader, self.fn, self.file = case, reader, fn, file
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.rows = 0
        self.requests: int | None = None
        self.bytes = 0

    def run(self) -> None:
        r0 = _rchar()
        c0, t0 = time.process_time(), time.perf_counter()
        rows, requests, nbytes = self.fn()
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)
        self.rows, self.requests = rows, requests
        self.bytes = nbytes if requests is not None else _rchar() - r0

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case": self.case, "reader": self.reader, "rows": self.rows,
                               "median_s": statistics.median(self.wall),
                               "cpu_median_s": statistics.median(self.cpu),
                               "runs": len(self.wall), "requests": self.requests,
                               "bytes": self.bytes}
        if self.file is not None:
            out["file_bytes"] = self.file.stat().st_size
        return out


def _ours(path: Path, cols: list[str], **kw: Any) -> Callable[[], tuple[int, int | None, int]]:
    import csup_async

    def fn() -> tuple[int, int | None, int]:
        r = csup_async.read(str(path), cols, **kw)
        return r.num_rows, r.stats.requests, r.stats.bytes_read
    return fn


def _polars(path: Path, cols: list[str], where: Any = None, ndjson: bool = False
            ) -> Callable[[], tuple[int, int | None, int]]:
    import polars as pl

    def col(c: str) -> Any:
        head, *rest = c.split(".")
        e = pl.col(head)
        for name in rest:
            e = e.struct.field(name)
        return e.alias(c)

    def fn() -> tuple[int, int | None, int]:
        lf = pl.scan_ndjson(path, infer_schema_length=None) if ndjson else pl.scan_parquet(path)
        if where is not None:
            lf = lf.filter(where)
        return lf.select([col(c) for c in cols]).collect().height, None, 0
    return fn


def _duckdb(path: Path, cols: list[str], where: str | None = None
            ) -> Callable[[], tuple[int, int | None, int]]:
    import duckdb

    con = duckdb.connect()
    sql = (f"SELECT {', '.join(cols)} FROM read_parquet('{path}')"
           + (f" WHERE {where}" if where else ""))

    def fn() -> tuple[int, int | None, int]:
        return con.sql(sql).to_arrow_table().num_rows, None, 0
    return fn


def warm_cases(paths: dict[str, Path]) -> list[Case]:
    import polars as pl

    csup, pq, nd = paths["csup"], paths["parquet"], paths["ndjson"]
    err = pl.col("level") == "error"
    sara = pl.col("u").struct.field("name") >= "sara"
    cases = [
        Case("2 cols", "csup-async", _ours(csup, COLS), csup),
        Case("2 cols", "polars parquet", _polars(pq, COLS), pq),
        Case("2 cols", "polars ndjson", _polars(nd, COLS, ndjson=True), nd),
        Case("2 cols", "duckdb parquet", _duckdb(pq, COLS), pq),
        Case("filtered", "csup-async", _ours(csup, COLS, filter=logshape.FILTER), csup),
        Case("filtered", "csup-async unfiltered", _ours(csup, COLS), csup),
        Case("filtered", "polars parquet", _polars(pq, COLS, err), pq),
        Case("filtered", "polars ndjson", _polars(nd, COLS, err, ndjson=True), nd),
        Case("filtered", "duckdb parquet", _duckdb(pq, COLS, "level = 'error'"), pq),
        Case("ordered", "csup-async", _ours(csup, COLS, filter="u.name >= 'sara'"), csup),
        Case("ordered", "polars parquet", _polars(pq, COLS, sara), pq),
        Case("ordered", "duckdb parquet", _duckdb(pq, COLS, "u.name >= 'sara'"), pq),
        Case("6 cols", "csup-async", _ours(csup, SIX), csup),
        Case("6 cols", "polars parquet", _polars(pq, SIX), pq),
        Case("6 cols", "duckdb parquet", _duckdb(pq, SIX), pq),
        Case("many types", "csup-async fused", _ours(csup, COLS), csup),
        Case("many types", "csup-async --no-fuse", _ours(paths["nofuse"], COLS),
             paths["nofuse"]),
    ]
    for name in SUPERS:
        if name in paths and readable(paths[name]) is None:
            cases.append(Case("many types", f"csup-async on {name}'s file",
                              _ours(paths[name], COLS), paths[name]))
    if "super-main" in paths and readable(paths["super-main"]) is None:  # CSUP v23
        cases.append(Case("6 cols", "csup-async on super-main's file",
                          _ours(paths["super-main"], SIX), paths["super-main"]))
    return cases


def run_warm(cases: list[Case], runs: int) -> list[dict[str, Any]]:
    for c in cases:  # warm-up: imports, first-use work, page cache
        c.run()
        c.wall.clear()
        c.cpu.clear()
    for i in range(runs):
        order = cases if i % 2 == 0 else cases[::-1]
        for c in order:
            c.run()
    return [c.result() for c in cases]


# ------------------------------------------------------------ whole process ---

COLD_SCRIPTS = {
    "csup-async": """
        import csup_async
        r = csup_async.read({path!r}, ["ts", "u.name"])
        assert r.num_rows == {rows}
    """,
    "polars parquet": """
        import polars as pl
        df = pl.scan_parquet({path!r}).select(pl.col("ts"),
                                              pl.col("u").struct.field("name")).collect()
        assert df.height == {rows}
    """,
    "duckdb parquet": """
        import duckdb
        t = duckdb.sql("SELECT ts, u.name FROM read_parquet('{path}')").to_arrow_table()
        assert t.num_rows == {rows}
    """,
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has bytecode
    env["PYTHONPATH"] = str(ROOT)
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold_commands(paths: dict[str, Path], rows: int) -> dict[str, tuple[list[str], Path]]:
    cmds: dict[str, tuple[list[str], Path]] = {}
    for name, script in COLD_SCRIPTS.items():
        path = paths["csup"] if name == "csup-async" else paths["parquet"]
        code = textwrap.dedent(script).format(path=str(path), rows=rows)
        cmds[name] = ([sys.executable, "-c", code], path)
    for name, exe in SUPERS.items():
        if name in paths:
            cmds[f"{name} (own file)"] = ([str(exe), "-c", SUPER_QUERY, "-f", "bsup", "-o",
                                          os.devnull, str(paths[name])], paths[name])
            if readable(paths[name]) is None:
                code = textwrap.dedent(COLD_SCRIPTS["csup-async"]).format(
                    path=str(paths[name]), rows=rows)
                cmds[f"csup-async on {name}'s file"] = ([sys.executable, "-c", code],
                                                        paths[name])
    return cmds


def run_cold(cmds: dict[str, tuple[list[str], Path]], runs: int) -> list[dict[str, Any]]:
    env = _env()
    for cmd, _ in cmds.values():  # bytecode written once, files in the page cache
        _timed(cmd, env)
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    names = list(cmds)
    for i in range(runs):
        for name in names if i % 2 == 0 else names[::-1]:
            w, c = _timed(cmds[name][0], env)
            walls[name].append(w)
            cpus[name].append(c)
    return [{"case": "whole process", "reader": k, "median_s": statistics.median(walls[k]),
             "cpu_median_s": statistics.median(cpus[k]), "runs": runs,
             "file_bytes": cmds[k][1].stat().st_size} for k in names]


# ----------------------------------------------------------------- report ---

def _find(res: list[dict[str, Any]], case: str, reader: str) -> dict[str, Any] | None:
    return next((r for r in res if r["case"] == case and r["reader"] == reader), None)


def targets(res: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets as ratios (at most ``limit`` is met), from one run's numbers."""
    out = []

    def add(what: str, a: tuple[str, str], b: tuple[str, str], limit: float,
            per_byte: bool = False) -> None:
        x, y = _find(res, *a), _find(res, *b)
        if x is None or y is None:
            return
        ratio = x["median_s"] / y["median_s"]
        cpu = x["cpu_median_s"] / y["cpu_median_s"] if y["cpu_median_s"] else float("nan")
        if per_byte:
            ratio *= y["file_bytes"] / x["file_bytes"]
            cpu *= y["file_bytes"] / x["file_bytes"]
        out.append({"target": what, "ours": f"{a[1]} ({a[0]})", "peer": f"{b[1]} ({b[0]})",
                    "ratio": round(ratio, 3), "cpu_ratio": round(cpu, 3), "limit": limit,
                    "met": ratio <= limit})

    add("filtered scan <= unfiltered read", ("filtered", "csup-async"),
        ("filtered", "csup-async unfiltered"), 1.0)
    add("filtered scan <= polars parquet filter", ("filtered", "csup-async"),
        ("filtered", "polars parquet"), 1.0)
    add("warm 2 cols <= polars parquet", ("2 cols", "csup-async"),
        ("2 cols", "polars parquet"), 1.0)
    add("warm 6 cols <= polars parquet", ("6 cols", "csup-async"),
        ("6 cols", "polars parquet"), 1.0)
    add("whole process <= polars parquet", ("whole process", "csup-async"),
        ("whole process", "polars parquet"), 1.0)
    add("whole process <= super main on its file", ("whole process", "csup-async"),
        ("whole process", "super-main (own file)"), 1.0)
    for name in SUPERS:
        add(f"{name}'s file per byte <= 1.5x fused", ("many types", f"csup-async on {name}'s file"),
            ("many types", "csup-async fused"), 1.5, per_byte=True)
        add(f"{name}'s file whole process <= {name} itself",
            ("whole process", f"csup-async on {name}'s file"),
            ("whole process", f"{name} (own file)"), 1.0)
    add("--no-fuse file per byte <= 1.5x fused", ("many types", "csup-async --no-fuse"),
        ("many types", "csup-async fused"), 1.5, per_byte=True)
    # issue 37: super main's CSUP v23 against the same rows in our layout (not per byte)
    add("v23 (super main's file) 2 cols <= 1.1x our layout",
        ("many types", "csup-async on super-main's file"), ("many types", "csup-async fused"),
        1.1)
    add("v23 (super main's file) 6 cols <= 1.1x our layout",
        ("6 cols", "csup-async on super-main's file"), ("6 cols", "csup-async"), 1.1)
    add("v23 (super main's file) whole process <= 1.1x our layout",
        ("whole process", "csup-async on super-main's file"), ("whole process", "csup-async"),
        1.1)
    return out


def table(res: dict[str, Any]) -> str:
    """The results per case: each reader's median, CPU, ratio to csup-async, bytes."""
    lines = ["| case | reader | median s | CPU s | x csup-async | rows | requests | bytes |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    rows = res["warm"] + res["cold"]
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        ours = next((r for r in mine if r["reader"] == "csup-async"), mine[0])
        for r in mine:
            req = "" if r.get("requests") is None else str(r["requests"])
            nbytes = f"{r['bytes']:,}" if r.get("bytes") else ""
            lines.append(f"| {case} | {r['reader']} | {r['median_s']:.3f} | "
                         f"{r['cpu_median_s']:.3f} | {r['median_s'] / ours['median_s']:.2f} | "
                         f"{r.get('rows', '')} | {req} | {nbytes} |")
    return "\n".join(lines)


def target_table(res: dict[str, Any]) -> str:
    lines = ["| target | ours | against | ratio (wall) | ratio (CPU) | limit | met (wall) |",
             "|---|---|---|---:|---:|---:|---|"]
    for t in res["targets"]:
        cpu = t.get("cpu_ratio")
        lines.append(f"| {t['target']} | {t['ours']} | {t['peer']} | {t['ratio']:.2f} | "
                     f"{'' if cpu is None else f'{cpu:.2f}'} | {t['limit']:.1f} | "
                     f"{'yes' if t['met'] else '**no**'} |")
    return "\n".join(lines)


def markdown(res: dict[str, Any]) -> str:
    skipped = "".join(f"\n- {k}: {v}" for k, v in res["skipped"].items())
    return (f"# Real-shaped data (bench/bench_realshape.py)\n\n`{res['command']}`, "
            f"{res['rows']:,} log records ({res['files']['ndjson']:,} bytes of NDJSON), "
            f"{res['runs']} warm rounds, {res['cold_runs']} whole processes per reader, "
            f"{res['when']}.\n\n## Targets\n\n{target_table(res)}\n\n## Every reader\n\n"
            f"{table(res)}\n" + (f"\nLeft out:{skipped}\n" if skipped else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="warm rounds (default 7)")
    ap.add_argument("--cold-runs", type=int, default=7,
                    help="fresh processes per reader (default 7; 0: none)")
    ap.add_argument("--out", type=Path, default=RESULTS / "realshape",
                    help="OUT.json and OUT.md are written (default bench/results/realshape)")
    args = ap.parse_args(argv)
    paths = files()
    skipped = {name: why for name in SUPERS if name in paths
               and (why := readable(paths[name])) is not None}
    skipped.update({name: f"no binary at {exe}" for name, exe in SUPERS.items()
                    if not exe.exists()})
    warm = run_warm(warm_cases(paths), args.runs)
    cold = (run_cold(cold_commands(paths, logshape.ROWS), args.cold_runs)
            if args.cold_runs else [])
    res: dict[str, Any] = {
        "command": "python bench/bench_realshape.py " + " ".join(argv or sys.argv[1:]),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": logshape.ROWS, "runs": args.runs, "cold_runs": args.cold_runs,
        "files": {k: p.stat().st_size for k, p in paths.items()},
        "warm": warm, "cold": cold, "skipped": skipped}
    res["targets"] = targets(warm + cold)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(res))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
