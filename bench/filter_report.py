"""The filter benchmark's report: the verdicts against the issue's targets (bytes read
against the segments that hold the rows, time against the peers and the floor) and the
markdown tables written to bench/results."""

from __future__ import annotations

from typing import Any

from filter_cases import (
    BUDGET,
    DEFAULT_THRESH,
    PEERS,
    PROFILE,
    READERS,
    ROWS,
    SEGMENT_THRESHES,
    SIX,
    csup_name,
    floor_s,
)


def _x(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def _mb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e6:.2f}"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "missed")


def analyse(res: dict[str, Any]) -> None:
    """Ratios to the best peer, the floors, and the targets' verdicts (``res['targets']``:
    one entry per target, ``ok`` None where the case could not run)."""
    rows = res["rows"]
    yard = res["yardsticks"]

    def get(reader: str, case: str) -> dict[str, Any]:
        return rows.get(reader, {}).get(case, {})

    def best_peer(case: str) -> float | None:
        got = [get(p, case).get("median") for p in PEERS]
        got = [g for g in got if g is not None]
        return min(got) if got else None

    for by_case in rows.values():
        for cid, r in by_case.items():
            best = best_peer(cid)
            if "median" in r and best:
                r["x_best_peer"] = r["median"] / best
    for reader in rows:
        c90, full = get(reader, "c90"), get(reader, "cfull")
        if "median" in c90 and "median" in full:
            c90["x_unfiltered"] = c90["median"] / full["median"]
    me = rows.get("csup-async", {})
    targets: list[dict[str, Any]] = []

    def target(name: str, measured: str, ok: bool | None, floor: str = "") -> None:
        targets.append({"target": name, "measured": measured, "ok": ok, "floor": floor})

    def time_floor(case: str) -> str:
        f, best = floor_s(yard[case]["bytes"]), best_peer(case)
        return f"{f:.3f} s = {_x(f, best)} x best peer" if best else f"{f:.3f} s"

    a, b = me.get("a", {}), me.get("b", {})
    ran_a, ran_b = "median" in a, "median" in b
    target(f"a: bytes read <= 1.3 x the segments holding matching rows "
           f"({_mb(yard['a']['bytes'])} MB: {', '.join(SIX)} and the filter column ts)",
           f"{_mb(a.get('bytes'))} MB = {_x(a.get('bytes'), yard['a']['bytes'])} x",
           a["bytes"] <= 1.3 * yard["a"]["bytes"] if ran_a else None)
    target("a: time <= 0.5 x best peer", f"{_x(a.get('x_best_peer'), 1)} x",
           a.get("x_best_peer", 9) <= 0.5 if ran_a else None, time_floor("a"))
    target("b: point lookup, all columns, <= 3 round trips", f"{b.get('waves', '-')} waves",
           (b["waves"] or 99) <= 3 if ran_b else None)
    target("b: time <= 0.5 x best peer", f"{_x(b.get('x_best_peer'), 1)} x",
           b.get("x_best_peer", 9) <= 0.5 if ran_b else None, time_floor("b"))
    c90 = me.get("c90", {})
    target("c: 90% filter <= 1.15 x the unfiltered scan of the same columns",
           f"{_x(c90.get('x_unfiltered'), 1)} x",
           c90["x_unfiltered"] <= 1.15 if "x_unfiltered" in c90 else None)
    lim = me.get("dlimit", {})
    target("d: limit=10 <= 2 round trips", f"{lim.get('waves', '-')} waves",
           (lim["waves"] or 99) <= 2 if "median" in lim else None)
    opened = res["segments"].get(DEFAULT_THRESH, {}).get("open_plan", {}).get("open_bytes",
                                                                              1 << 20)
    for cid, what in (("dtake", "take of 100 rows"), ("dslice", "rows=slice(a, b), 1%")):
        run = me.get(cid, {})
        target(f"d: {what} reads only the segments holding them "
               f"({_mb(yard[cid]['bytes'])} MB; allowed: those, 5% and the open's "
               f"{opened / 1e6:.2f} MB)",
               f"{_mb(run.get('bytes'))} MB = {_x(run.get('bytes'), yard[cid]['bytes'])} x",
               run["bytes"] <= yard[cid]["bytes"] * 1.05 + opened if "median" in run
               else None)
    e = res.get("verify", {})
    cost = e["on_s"] / e["off_s"] - 1 if "on_s" in e else None
    target("e: checksum verification <= 5% of a full local scan",
           "-" if cost is None else f"{cost * 100:+.1f}%",
           None if cost is None else cost <= 0.05)
    res["targets"] = targets


# ------------------------------------------------------------- report ---

def _verdicts(targets: list[dict[str, Any]]) -> list[str]:
    out = ["| target | measured | floor (2 round trips + segments holding the rows over "
           "16 connections) | verdict |", "|---|---|---|---|"]
    for t in targets:
        out.append(f"| {t['target']} | {t['measured']} | {t['floor'] or '-'} | "
                   f"{_verdict(t['ok'])} |")
    return out


def _f_table(res: dict[str, Any]) -> list[str]:
    rows = res["rows"].get("csup-async", {})
    out = ["| segment_thresh | segments | metadata KB | open at s3 s (requests) | "
           "local open ms | plan ms | a: s, MB read | a: MB holding (floor s) | "
           "b: s, MB read | b: MB holding (floor s) | unfiltered 6 cols: s, requests |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    nan = float("nan")
    for label in SEGMENT_THRESHES:
        f = res["segments"].get(label, {})
        op = f.get("open_plan", {})
        cells = [f"{label}{' (default)' if label == DEFAULT_THRESH else ''}",
                 str(f.get("segments", "-")), f"{f.get('metadata_bytes', 0) / 1e3:.1f}",
                 f"{op.get('open_s', nan):.3f} ({op.get('open_requests', '-')})",
                 f"{op.get('local_open_s', nan) * 1e3:.1f}", f"{op.get('plan_s', nan) * 1e3:.2f}"]
        for case in ("a", "b"):
            run = rows.get(f"f{case}|{label}", {})
            held = f.get("holding", {}).get(case)
            cells.append(f"{run.get('median', nan):.3f}, {_mb(run.get('bytes'))}"
                         if "median" in run else run.get("error", run.get("unavailable", "-")))
            cells.append(f"{_mb(held)} ({floor_s(held):.3f})" if held is not None else "-")
        full = rows.get(f"fcfull|{label}", {})
        cells.append(f"{full['median']:.3f}, {full['requests']}" if "median" in full else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def report(res: dict[str, Any]) -> str:
    cfg, rows = res["config"], res["rows"]
    feats = {k: v for k, v in rows.get("csup-async", {}).get("features", {}).items()
             if k != "case"}
    size = res["info"]["size"]
    out = [f"# Filters and row selection (issue 16 targets), {PROFILE} profile", "",
           f"Command: `{cfg['command']}` ({cfg['elapsed_s'] / 60:.1f} min), "
           f"{cfg['runs']} timed rounds per case after a warm-up, every reader once per "
           f"round (median; fewer when a reader's case exceeds {BUDGET:.0f} s). Machine: "
           f"{cfg['machine']}; load average at the start {cfg['load']}. Versions: "
           f"{cfg['versions']}.", "",
           f"Data: the wide table of `bench/data.py` ({ROWS:,} rows x 24 columns) plus `ts`, "
           f"a sorted int64 key; CSUP with the writer's defaults "
           f"({size[csup_name()] / 1e6:.0f} MB), Parquet with 64k-row row groups and "
           f"statistics ({size['wide.parquet'] / 1e6:.0f} MB). Store: nginx behind "
           f"`bench/netsim.py`'s delay proxy, 50 ms per round trip, 100 MB/s per "
           f"connection. Requests and MB are counted by nginx (last timed run); waves = "
           f"rounds of requests in sequence, from request arrival times at nginx (a new "
           f"wave when a request arrives 0.6 RTT or more after the current wave's first), "
           f"the fewest of the timed runs (a starved CPU adds waves). "
           f"csup-async: `csup_async.open(url)` with no store passed; polars: "
           f"`scan_parquet().filter()`; DuckDB: httpfs, `WHERE` (take: `file_row_number "
           f"IN (...)`); pyarrow.dataset: `to_table(filter=)`, `head`, `take`.", "",
           "csup-async features found in this tree: "
           + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in feats.items()) + ".", "",
           "| case | reader | median s | requests | waves | MB read | x best peer |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for case in res["cases"]:
        if case["id"].startswith("f"):
            continue
        for reader in READERS:
            r = rows.get(reader, {}).get(case["id"], {})
            if "median" in r:
                out.append(f"| {case['label']} | {reader} | {r['median']:.3f} | "
                           f"{r['requests']} | {r['waves'] if r['waves'] is not None else '-'}"
                           f" | {_mb(r['bytes'])} | {_x(r.get('x_best_peer'), 1)} |")
            else:
                why = ("not available: " + r["unavailable"] if "unavailable" in r
                       else "error: " + r.get("error", "not run"))
                out.append(f"| {case['label']} | {reader} | {why[:90]} | | | | |")
    out += ["", "## Targets", "", *_verdicts(res["targets"]), "",
            "Time ratios compare with the best of polars, DuckDB and pyarrow.dataset in the "
            "same run. The 'segments holding' yardstick (`holding_bytes`): per column, the "
            "stored bytes of the value segments whose value-index range (running sum of the "
            "segments' `count`) holds a selected row's value, plus, for a column with nulls, "
            "the presence segments covering a selected row; (a) counts the filter column "
            "too, which a reader must read to evaluate the filter exactly. The floor is the "
            "least time a reader can take reading exactly those bytes: the open's round "
            "trip, one round trip of data (with `count` statistics the other columns' "
            "segments follow from the key's, so one data wave suffices) and the bytes over "
            "16 connections at 100 MB/s."]
    c_rows = []
    for reader in READERS:
        c90 = rows.get(reader, {}).get("c90", {})
        full = rows.get(reader, {}).get("cfull", {})
        if "x_unfiltered" in c90:
            c_rows.append(f"| {reader} | {c90['median']:.3f} | {full['median']:.3f} | "
                          f"{c90['x_unfiltered']:.2f} |")
    if c_rows:
        out += ["", "## c: the 90% filter against the unfiltered scan, per reader", "",
                "| reader | filtered s | unfiltered s | ratio |", "|---|---:|---:|---:|",
                *c_rows]
    e, est = res.get("verify", {}), res.get("crc_estimate", {})
    if e or est:
        out += ["", "## e: checksum verification, full local scan of all 25 columns", ""]
    if "on_s" in e:
        out.append(f"verify on {e['on_s']:.3f} s, off {e['off_s']:.3f} s: "
                   f"{(e['on_s'] / e['off_s'] - 1) * 100:+.1f}% (median of {len(e['on'])}, "
                   f"alternating).")
    elif e:
        out.append(f"Not available: {e.get('unavailable', e.get('error', '?'))}. Full local "
                   f"scan today (no verification): {e.get('default_s', float('nan')):.3f} s.")
    base = e.get("off_s", e.get("default_s"))
    if est and base:
        out.append(f"Estimate, not the feature: CRC-32 over all {est['segments']} segments' "
                   f"stored bytes ({est['bytes'] / 1e6:.0f} MB) on one thread takes "
                   + ", ".join(f"{s:.3f} s with {k} ({s / base * 100:.1f}% of that scan)"
                               for k, s in est["kernels"].items())
                   + " if it ran serially; spread over the decode threads it costs less "
                   "wall time. The checksums the writer stored were all checked here.")
    planned = next((f["open_plan"].get("plan_with_filter") for f in res["segments"].values()
                    if "open_plan" in f), None)
    if planned is None:
        return "\n".join(out)
    out += ["", "## f: writer segment size (segment_thresh) against statistics' usefulness",
            "", *_f_table(res), "",
            "csup-async runs of (a), (b) and the unfiltered scan of case (c) on each file; "
            "'MB holding' is the yardstick above for that file and its floor what a reader "
            "that reads only those bytes could "
            "reach. local open ms: `open()` of the local copy (metadata read and parsed, no "
            "network), best of the runs; plan ms: `reader.plan(...)` on the open reader, best "
            "of the runs,"
            + (" with the filter." if planned else
               " of the 6 columns and ts (this tree's plan takes no filter)."), ""]
    return "\n".join(out)
