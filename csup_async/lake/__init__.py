"""Zed lakes (brimdata/zed v1.x layout) read and written straight from the object store.

``lake = await open_lake("s3://bucket/lake")``; ``pool = await lake.pool("logs@main")``;
``await pool.scan(["ts", "msg"], filter=[("ts", ">=", t0)])``; ``await pool.load(rows)``.

Modules, one job each: ``ksuid`` (IDs), ``zedtypes`` (metadata record types),
``objects`` (store reads, writes and the cache), ``journal`` (HEAD/TAIL/entries/
snap.zng replay), ``commits`` (commit objects, state at a commit), ``keys``
(pool-key order and key ranges), ``seek`` (seek indexes to byte ranges),
``scan`` (plan and merge), ``pool`` and ``lake`` (the API), ``load`` (commits).
"""

from .create import create_lake
from .errors import LakeConflictError, LakeError
from .keys import KeyRange
from .lake import BranchConfig, Lake, PoolConfig, open_lake
from .pool import Pool

__all__ = ["BranchConfig", "KeyRange", "Lake", "LakeConflictError", "LakeError", "Pool",
           "PoolConfig", "create_lake", "open_lake"]
