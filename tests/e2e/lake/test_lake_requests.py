"""A pool scan's requests are the planner's coalescing of the seek-index runs.

The requests depend on the store's profile as for any other read: on S3's, a large
run of kept chunks is split into parts fetched at once (each part cut anywhere, not
at a chunk boundary), and the rows come back exact; on a local disk it is one read.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import csup_async

N = 60_000


def _rows() -> list[dict[str, Any]]:
    # incompressible text, so the object is several MiB
    return [{"ts": i, "h": hashlib.sha256(str(i).encode()).hexdigest()} for i in range(N)]


def test_a_large_run_is_split_as_the_profile_says_and_rows_are_exact(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    rows = _rows()

    async def go() -> None:
        await csup_async.create_lake(root)
        async with csup_async.open_lake(root) as lake:
            await lake.create_pool("p", key="ts", order="asc", seek_stride=16 << 10)
            await (await lake.pool("p")).load(rows)
            pool = await lake.pool("p")
            (obj,) = pool.objects
            assert obj.size > 4 << 20
            lo, hi = 1000, N - 1000
            flt = f"ts >= {lo} and ts < {hi}"
            s3 = await pool.plan(flt, profile="s3")
            local = await pool.plan(flt, profile="local")
            (r_s3,), (r_local,) = s3.reads, local.reads
            assert r_s3.runs == r_local.runs and len(r_local.runs or []) == 1
            assert len(r_local.ranges or []) == 1  # a disk read is not split
            assert len(r_s3.ranges or []) > 1      # S3's profile reads parts at once
            for res in (await pool.scan(["ts", "h"], filter=flt, profile="s3"),
                        await pool.scan(["ts", "h"], filter=flt, profile="local")):
                assert res.to_pylist() == rows[lo:hi]

    asyncio.run(go())
