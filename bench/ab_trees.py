"""Two source trees, one simulated store, alternating: is one slower than the other?

``python bench/ab_trees.py TREE_A TREE_B [--projection "6 cols"] [--rounds 3]
[--filter "i1 < 5" [--limit N]]``

Each round runs, for each tree in turn, a process (``PYTHONPATH=TREE``) that scans
the wide table through ``bench/readers.py``'s csup-async reader once untimed and 6
times timed on the ``s3`` profile; medians of all timed scans per tree.  On a shared
machine whose load changes minute to minute, alternating is what makes the two
comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import data  # noqa: E402
import netsim  # noqa: E402

CODE = """
import sys, time, json
sys.path.insert(0, {bench!r})
import readers, data
cols = data.PROJECTIONS[sys.argv[2]]
fn = readers.READERS['csup-async'][1]
fn(sys.argv[1], [data.wide_key('csup')], cols)
ts = []
for _ in range(6):
    t = time.perf_counter()
    fn(sys.argv[1], [data.wide_key('csup')], cols)
    ts.append(time.perf_counter() - t)
print(json.dumps(ts))
"""

#: ``--filter``: a filtered scan (and ``--limit``), through one S3Store per process as
#: ``readers.csup_async_reader`` keeps it; each scan's rows, requests and bytes are
#: printed too, so the two trees are seen to read exactly the same.
FILTER_CODE = """
import sys, time, json, asyncio
sys.path.insert(0, {bench!r})
import readers, data
import csup_async
from csup_async.stores import S3Store
cols = data.PROJECTIONS[sys.argv[2]]
filt, limit = sys.argv[3], (int(sys.argv[4]) if sys.argv[4] else None)
url = "s3://" + readers.BUCKET + "/" + data.wide_key("csup")
store = S3Store(endpoint_url=sys.argv[1], region=readers.REGION,
                access_key_id=readers.KEY_ID, secret_access_key=readers.SECRET)
loop = asyncio.new_event_loop()
async def one():
    async with csup_async.open(url, store=store) as r:
        res = await r.scan(cols, filter=filt, limit=limit)
    return [res.num_rows, res.stats.requests, res.stats.bytes_read]
seen = loop.run_until_complete(one())
ts = []
for _ in range(6):
    t = time.perf_counter()
    got = loop.run_until_complete(one())
    ts.append(time.perf_counter() - t)
    assert got == seen, (got, seen)
print(json.dumps({{"ts": ts, "read": seen}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs=2)
    ap.add_argument("--projection", default="6 cols", choices=list(data.PROJECTIONS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--filter", default=None,
                    help="scan with this filter (text form, e.g. 'i1 < 5'): a filtered scan")
    ap.add_argument("--limit", type=int, default=None, help="with --filter: the first N matches")
    args = ap.parse_args()
    data.ensure()  # the wide table, written once by the running tree
    store = netsim.SimStore(data.ROOT / "root", data.ROOT / "nginx-ab").start()
    times: dict[str, list[float]] = {t: [] for t in args.trees}
    reads: dict[str, list[int]] = {}
    try:
        for _ in range(args.rounds):
            for tree in args.trees:
                env = dict(os.environ, PYTHONPATH=tree)
                argv = [sys.executable, "-c", CODE.format(bench=str(HERE)),
                        store.endpoint("s3"), args.projection]
                if args.filter is not None:
                    argv[2] = FILTER_CODE.format(bench=str(HERE))
                    argv += [args.filter, "" if args.limit is None else str(args.limit)]
                out = subprocess.run(argv, env=env, capture_output=True, text=True, cwd="/")
                if out.returncode:
                    sys.exit(f"{tree}: the scan process failed:\n{out.stderr[-3000:]}")
                got = json.loads(out.stdout.strip().splitlines()[-1])
                if isinstance(got, dict):
                    reads[tree] = got["read"]
                    got = got["ts"]
                times[tree] += got
    finally:
        store.stop()
    what = args.projection + (f", filter {args.filter!r}" if args.filter is not None else "")
    what += f", limit {args.limit}" if args.limit is not None else ""
    for tree, ts in times.items():
        read = reads.get(tree)
        extra = (f"; {read[0]:,} rows, {read[1]} requests, {read[2]:,} bytes"
                 if read is not None else "")
        print(f"{tree}: {what}, median {statistics.median(ts):.3f} s over "
              f"{len(ts)} scans ({min(ts):.3f}-{max(ts):.3f}){extra}")


if __name__ == "__main__":
    main()
