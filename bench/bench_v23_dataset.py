"""A Dataset of CSUP v23 files (the default target, super main's layout) against the same
rows in this library's own layout and in Parquet (pyarrow's dataset reader), over a
simulated S3 (bench/netsim.py: nginx + the delay proxy, 50 ms, 100 MB/s), one process,
the three alternated run by run.

``--files`` files of ``--rows`` rows ``{id, v, s}`` (ids ascending across files, so a
filter on ``id`` matches one file and its min/max rule out the others).  Cases, each
with the dataset's open (listing given: a list of URLs), requests and bytes counted at
the server (the last run's), wall time the median of ``--runs``:

* ``filter 1 file``: ``id`` within one file, columns ``id, s``;
* ``filter 0 files``: ``id`` past every file (every file ruled out by its metadata);
* ``all, 2 columns``: no filter.

    python bench/bench_v23_dataset.py --files 16 --rows 60000 --runs 3

Writes ``bench/results/v23_dataset-FILESxROWS.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "bench"))

import netsim  # noqa: E402

import csup_async  # noqa: E402

RESULTS = HERE / "bench" / "results"
FORMATS = ("v23", "own", "parquet")


def table(k: int, rows: int) -> Any:
    import numpy as np
    import pyarrow as pa

    ids = np.arange(k * rows, (k + 1) * rows, dtype=np.int64)
    return pa.table({"id": ids, "v": (ids % 1000).astype(np.float64) / 7,
                     "s": pa.array([f"kind-{i % 23}" for i in range(rows)])})


def cases(files: int, rows: int) -> dict[str, tuple[list[str], tuple[int, int] | None]]:
    k = files // 2
    return {"filter 1 file": (["id", "s"], (k * rows + 100, k * rows + 2100)),
            "filter 0 files": (["id", "s"], (files * rows + 5, files * rows + 10)),
            "all, 2 columns": (["id", "s"], None)}


async def _csup(urls: list[str], cols: list[str], rng: tuple[int, int] | None,
                opts: dict[str, Any]) -> tuple[int, str]:
    flt = None if rng is None else f"id >= {rng[0]} and id < {rng[1]}"
    async with csup_async.open_dataset(urls, **opts) as ds:
        res = await ds.scan(cols, filter=flt)
        plan = await ds.plan(cols, filter=flt)
    return res.num_rows, (f"{len(plan.files)} read, {len(plan.pruned)} pruned, "
                          f"{plan.objects_pruned} objects ruled out")


def _parquet(endpoint: str, keys: list[str], cols: list[str],
             rng: tuple[int, int] | None) -> int:
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(access_key=netsim.SimStore.ACCESS_KEY,
                           secret_key=netsim.SimStore.SECRET_KEY,
                           region=netsim.SimStore.REGION,
                           endpoint_override=endpoint.split("://", 1)[1], scheme="http")
    d = pads.dataset([f"bench/{k}" for k in keys], format="parquet", filesystem=fs)
    flt = None if rng is None else ((pads.field("id") >= rng[0]) & (pads.field("id") < rng[1]))
    return int(d.to_table(columns=cols, filter=flt).num_rows)


def write_data(root: Path, files: int, rows: int) -> dict[str, list[str]]:
    import pyarrow.parquet as pq

    keys: dict[str, list[str]] = {f: [] for f in FORMATS}
    for f in FORMATS:
        (root / f).mkdir(parents=True, exist_ok=True)
    for k in range(files):
        t = table(k, rows)
        csup_async.write(str(root / "v23" / f"{k:03d}.csup"), t)  # target "super"
        csup_async.write(str(root / "own" / f"{k:03d}.csup"), t, target="csup-async")
        pq.write_table(t, str(root / "parquet" / f"{k:03d}.parquet"))
        keys["v23"].append(f"v23/{k:03d}.csup")
        keys["own"].append(f"own/{k:03d}.csup")
        keys["parquet"].append(f"parquet/{k:03d}.parquet")
    return keys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--rows", type=int, default=60_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out: dict[str, Any] = {"files": args.files, "rows": args.rows, "runs": args.runs,
                           "load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "root" / "bench"
        keys = write_data(root, args.files, args.rows)
        out["bytes_per_file"] = {f: (root / keys[f][0]).stat().st_size for f in FORMATS}
        store = netsim.SimStore(Path(d) / "root", Path(d) / "nginx").start()
        try:
            ep = store.endpoint("s3")
            opts = {"endpoint_url": ep, "region": netsim.SimStore.REGION,
                    "access_key_id": netsim.SimStore.ACCESS_KEY,
                    "secret_access_key": netsim.SimStore.SECRET_KEY}
            for name, (cols, rng) in cases(args.files, args.rows).items():
                times: dict[str, list[float]] = {f: [] for f in FORMATS}
                row: dict[str, Any] = {}
                for _ in range(args.runs):
                    for f in FORMATS:
                        mark = netsim.log_mark(store.log)
                        t0 = time.perf_counter()
                        if f == "parquet":
                            n, note = _parquet(ep, keys[f], cols, rng), ""
                        else:
                            n, note = asyncio.run(_csup(
                                [f"s3://bench/{k}" for k in keys[f]], cols, rng, opts))
                        times[f].append(time.perf_counter() - t0)
                        c = netsim.log_count(store.log, mark)
                        row[f] = {"rows": n, "requests": c.requests, "bytes": c.bytes,
                                  "plan": note}
                for f in FORMATS:
                    row[f]["seconds"] = statistics.median(times[f])
                rows_seen = {row[f]["rows"] for f in FORMATS}
                assert len(rows_seen) == 1, (name, row)
                out[name] = row
        finally:
            store.stop()
    out["load_after"] = os.getloadavg()[0]
    lines = [f"# A dataset of v23 files over simulated S3 ({args.files} files x "
             f"{args.rows:,} rows; load {out['load']:.1f}-{out['load_after']:.1f})", "",
             f"`python bench/bench_v23_dataset.py --files {args.files} --rows {args.rows} "
             f"--runs {args.runs}`", "",
             "bytes per file: " + ", ".join(f"{f} {b:,}" for f, b in
                                            out["bytes_per_file"].items()), "",
             "| case | format | rows | requests | bytes | seconds | vs own | plan |",
             "|---|---|---|---|---|---|---|---|"]
    for name in cases(args.files, args.rows):
        row = out[name]
        for f in FORMATS:
            r = row[f]
            lines.append(f"| {name} | {f} | {r['rows']:,} | {r['requests']} | "
                         f"{r['bytes']:,} | {r['seconds']:.3f} | "
                         f"{r['seconds'] / row['own']['seconds']:.2f} | {r['plan']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(exist_ok=True)
    name = f"v23_dataset-{args.files}x{args.rows}"
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / f"{name}.md").write_text(text)


if __name__ == "__main__":
    main()
