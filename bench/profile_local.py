"""Per-scan wall, CPU, page faults and context switches of a local 24-column scan.

``python bench/profile_local.py [alt|alone] [ROUNDS]`` - csup-async's scan of the
wide table, with pyarrow's ``read_table`` of the Parquet copy between scans
(``alt``) or not (``alone``); one line per round.  Run it under
``perf record -F 99 -g -o OUT -- python bench/profile_local.py alt 6`` for where
the CPU goes (bench/results/local_profile.md).  ``SPLIT=8`` plans the local reads
in 8 MiB parts instead of the profile's 32 MiB.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402


def _usage() -> tuple[int, int, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt, r.ru_nvcsw, r.ru_nivcsw


def main() -> None:
    import pyarrow.parquet as pq

    import csup_async
    import planner as P

    alt = (sys.argv[1] if len(sys.argv) > 1 else "alt") == "alt"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    stem = data.ROOT / "root" / data.BUCKET / "wide" / "wide"
    cols = [f"{k}{i}" for k in "ifs" for i in range(8)]
    opts = {}
    if os.environ.get("SPLIT"):
        opts["profile"] = dataclasses.replace(P.PROFILES["local"],
                                              split_size=int(os.environ["SPLIT"]) << 20)

    async def scan() -> None:
        async with csup_async.open(str(stem.with_suffix(".csup")), **opts) as r:
            await r.scan(cols)

    asyncio.run(scan())
    pq.read_table(str(stem.with_suffix(".parquet")))
    for _ in range(rounds):
        u0, c0, t0 = _usage(), time.process_time(), time.perf_counter()
        asyncio.run(scan())
        wall, cpu, u1 = time.perf_counter() - t0, time.process_time() - c0, _usage()
        line = (f"csup {wall:.3f} s cpu {cpu:.3f} s faults {u1[0] - u0[0]} "
                f"vcsw {u1[1] - u0[1]} ivcsw {u1[2] - u0[2]}")
        if alt:
            c0, t0 = time.process_time(), time.perf_counter()
            pq.read_table(str(stem.with_suffix(".parquet")), columns=cols)
            line += (f" | pyarrow {time.perf_counter() - t0:.3f} s "
                     f"cpu {time.process_time() - c0:.3f} s")
        print(line, flush=True)


if __name__ == "__main__":
    main()
