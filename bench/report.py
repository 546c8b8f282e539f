"""Writes the number tables of docs/performance.md and README.md from bench/results/.

``python bench/report.py`` rewrites every generated block of the page in place;
``python bench/report.py --check`` only says (exit 1) which blocks differ from
what the committed results make.  A block is the lines between
``<!-- bench/report.py: NAME -->`` and ``<!-- end bench/report.py -->``; the
prose around them is the page's own.  So no number in those tables is typed:
rerun the benchmark, then this.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_cold  # noqa: E402
import bench_realshape  # noqa: E402

RESULTS = HERE / "results"
PAGE = HERE.parent / "docs" / "performance.md"
README = HERE.parent / "README.md"
PAGES = (PAGE, README)
BLOCK = re.compile(r"(<!-- bench/report\.py: (?P<name>[\w-]+) -->\n)(?P<body>.*?)"
                   r"(<!-- end bench/report\.py -->)", re.S)


def _load(results: Path, name: str) -> dict[str, Any]:
    return json.loads((results / name).read_text())


def wide(results: Path) -> str:
    """The wide table per profile and projection: csup-async against its peers."""
    return _wide(_load(results, "results.json"))


def wide_setup(results: Path) -> str:
    """The same from the focused run on the simulator that charges for connections."""
    return _wide(_load(results / "setup", "results.json"))


def _wide(res: dict[str, Any]) -> str:
    runs = [r for r in res["runs"] if r.get("dataset") == "wide" and "median" in r]
    cols = ["csup-async", "csup-async (numpy only)", "polars", "vortex"]
    lines = ["| profile | projection | " + " | ".join(cols)
             + " | best peer | x best peer | x floor | requests (csup-async / best peer) |",
             "|---|---|" + "---:|" * (len(cols) + 4)]
    keys = dict.fromkeys((r["profile"], r["projection"]) for r in runs)
    for prof, proj in keys:
        rows = {r["reader"]: r for r in runs if (r["profile"], r["projection"]) == (prof, proj)}
        peers = [r for n, r in rows.items() if not n.startswith("csup")]
        best = min(peers, key=lambda r: r["median"]) if peers else None
        ours = rows.get("csup-async")
        cells = [f"**{rows[c]['median']:.3f}**" if c == "csup-async" and c in rows
                 else f"{rows[c]['median']:.3f}" if c in rows else "" for c in cols]
        if best is None or ours is None:
            tail = ["", "", "", ""]
        else:
            floor = f"{ours['median'] / ours['floor']:.2f}" if ours.get("floor") else ""
            tail = [f"{best['reader']} {best['median']:.3f}",
                    f"{ours['median'] / best['median']:.2f}", floor,
                    f"{ours['requests']} / {best['requests']}"]
        lines.append(f"| {prof} | {proj} | " + " | ".join(cells + tail) + " |")
    return "\n".join(lines)


def cold(results: Path) -> str:
    return bench_cold.cold_table(_load(results, "cold.json"))


def warm(results: Path) -> str:
    return bench_cold.warm_table(_load(results, "cold.json"))


def local(results: Path) -> str:
    """Local full and narrow scans against pyarrow.parquet.read_table, alternating: wall
    (median, p90/median) and CPU medians, which a loaded machine disturbs less."""
    res = _load(results, "local.json")
    lines = ["| local file, warm process | csup-async median s | p90 / median | "
             "pyarrow median s | p90 / median | x pyarrow | CPU s (csup-async / pyarrow) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for case in res["cases"]:
        ours, theirs = case["csup-async"], case["pyarrow"]
        cpu = (f"{statistics.median(ours['cpu_runs']):.3f} / "
               f"{statistics.median(theirs['cpu_runs']):.3f}"
               if ours.get("cpu_runs") and theirs.get("cpu_runs") else "")
        lines.append(f"| {case['name']} ({case['runs']} alternating runs) | "
                     f"{ours['median_s']:.3f} | {ours['p90_over_median']:.2f} | "
                     f"{theirs['median_s']:.3f} | {theirs['p90_over_median']:.2f} | "
                     f"{ours['median_s'] / theirs['median_s']:.2f} | {cpu} |")
    return "\n".join(lines)


def realshape(results: Path) -> str:
    """The real-shaped suite (bench_realshape.py): its targets, then every reader."""
    res = _load(results, "realshape.json")
    return (f"`{res['command']}`, {res['when']}:\n\n" + bench_realshape.target_table(res)
            + "\n\n" + bench_realshape.table(res))


def _realshape_rows(results: Path) -> list[str]:
    """The README's real-shaped lines: log records against the best peer of the run."""
    if not (results / "realshape.json").exists():
        return []
    res = _load(results, "realshape.json")
    every = res["warm"] + res["cold"]

    def best(case: str, peers: tuple[str, ...]) -> dict[str, Any] | None:
        got = [r for r in every if r["case"] == case and r["reader"] in peers]
        return min(got, key=lambda r: r["median_s"]) if got else None

    def ours(case: str, reader: str = "csup-async") -> dict[str, Any] | None:
        return next((r for r in every if r["case"] == case and r["reader"] == reader), None)

    def cells(a: dict[str, Any], b: dict[str, Any], label: str, digits: int = 3) -> str:
        cpu = (f" (CPU {_x(a['cpu_median_s'], b['cpu_median_s'])})"
               if a.get("cpu_median_s") and b.get("cpu_median_s") else "")
        return (f"| {label} | {a['median_s']:.{digits}f} s | {b['reader']} "
                f"{b['median_s']:.{digits}f} s | {_x(a['median_s'], b['median_s'])}{cpu} | "
                "`realshape.json` |")

    out = []
    peers = ("polars parquet", "duckdb parquet", "polars ndjson")
    for case, label in (("2 cols", "log records, `ts` + `u.name`, warm, local"),
                        ("filtered", "log records, the same `filter=\"level = 'error'\"`"),
                        ("6 cols", "log records, 6 columns (records, unions, arrays)")):
        a, b = ours(case), best(case, peers)
        if a and b:
            out.append(cells(a, b, label))
    a = ours("whole process")
    for peer in ("polars parquet", "super-main (own file)"):
        b = best("whole process", (peer,))
        if a and b:
            out.append(cells(a, b, "log records, whole process (import + first read)", 2))
    fused = ours("many types", "csup-async fused")
    for r in every:
        if r["case"] == "many types" and r["reader"].startswith("csup-async on ") and fused:
            per_byte = (r["median_s"] / r["file_bytes"]) / (fused["median_s"]
                                                            / fused["file_bytes"])
            cpu = (r["cpu_median_s"] / r["file_bytes"]) / (fused["cpu_median_s"]
                                                           / fused["file_bytes"])
            out.append(f"| log records as {r['reader'][len('csup-async on '):]} (many "
                       f"super types) | {r['median_s']:.3f} s | our fused file "
                       f"{fused['median_s']:.3f} s | {per_byte:.2f}x per byte (CPU "
                       f"{cpu:.2f}x) | `realshape.json` |")
    return out


def _x(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x"


def headline(results: Path) -> str:
    """The README's few numbers: one line per way a user meets the reader, each a ratio
    to the best peer of the same run (the machines are shared: ratios, not seconds)."""
    lines = ["| how it is used | csup-async | peer | ratio | from |", "|---|---:|---:|---:|---|"]
    runs = [r for r in _load(results, "results.json")["runs"]
            if r.get("dataset") == "wide" and "median" in r and r["profile"] == "s3"]
    for proj in ("2 cols", "6 cols", "all 24"):
        rows = {r["reader"]: r for r in runs if r["projection"] == proj}
        peers = [r for n, r in rows.items() if not n.startswith("csup")]
        if "csup-async" in rows and peers:
            ours, best = rows["csup-async"], min(peers, key=lambda r: r["median"])
            lines.append(f"| warm process, {proj} of 1M x 24 on simulated S3 | "
                         f"{ours['median']:.3f} s | {best['reader']} {best['median']:.3f} s | "
                         f"{_x(ours['median'], best['median'])} | `results.json` |")
    cold_runs = {r["reader"]: r for r in _load(results, "cold.json")["cold"]}
    if "polars" in cold_runs:
        pol = cold_runs["polars"]["median_s"]
        for name, label in (("csup-async", "cold one-shot process"),
                            ("csup-async CLI", "cold CLI process")):
            if name in cold_runs:
                ours = cold_runs[name]["median_s"]
                lines.append(f"| {label}, 2 columns, S3 with TCP+TLS setup | {ours:.2f} s | "
                             f"polars {pol:.2f} s | {_x(ours, pol)} | `cold.json` |")
    for case in _load(results, "local.json")["cases"]:
        ours, theirs = case["csup-async"]["median_s"], case["pyarrow"]["median_s"]
        lines.append(f"| local file, {case['name']} | {ours:.3f} s | "
                     f"pyarrow {theirs:.3f} s | {_x(ours, theirs)} | `local.json` |")
    cells = _load(results, "service.json")["cells"]
    for clients in (64, 128):
        got = {c["engine"]: c for c in cells if c["object"] == "small"
               and c["clients"] == clients}
        ours, pol = got.get("csup open()"), got.get("polars")
        if ours and pol:
            lines.append(f"| service, `open()` per request, {clients} clients | "
                         f"{ours['scans_per_s']:.0f} scans/s | polars "
                         f"{pol['scans_per_s']:.0f} scans/s | "
                         f"{_x(ours['scans_per_s'], pol['scans_per_s'])} (throughput) | "
                         f"`service.json` |")
    lines += _realshape_rows(results)
    return "\n".join(lines)


TABLES: dict[str, Callable[[Path], str]] = {"wide": wide, "wide-setup": wide_setup,
                                            "cold": cold, "warm": warm, "local": local,
                                            "realshape": realshape, "headline": headline}


def render(page: str, results: Path = RESULTS) -> str:
    """``page`` with every generated block made again from ``results``."""
    def block(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in TABLES:
            raise SystemExit(f"docs block {name!r}: no such table (known: {', '.join(TABLES)})")
        return m.group(1) + TABLES[name](results) + "\n" + m.group(4)

    return BLOCK.sub(block, page)


def blocks(page: str) -> dict[str, str]:
    """The generated blocks of ``page``, by name."""
    return {m["name"]: m["body"].rstrip("\n") for m in BLOCK.finditer(page)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument("--page", action="append",
                    help="a page to write (default: docs/performance.md and README.md)")
    args = ap.parse_args()
    stale_any = False
    for page in [Path(p) for p in args.page] if args.page else PAGES:
        text = page.read_text()
        new = render(text, Path(args.results))
        if args.check:
            stale = [n for n, b in blocks(new).items() if blocks(text).get(n) != b]
            if stale:
                print(f"{page}: stale tables: {', '.join(stale)} (run python bench/report.py)")
                stale_any = True
            continue
        page.write_text(new)
        print(f"{page}: {len(blocks(new))} tables written")
    if stale_any:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
