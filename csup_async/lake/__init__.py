"""Zed lakes (brimdata/zed v1.x layout) read and written straight from the object store.

``lake = await open_lake("s3://bucket/lake")``; ``pool = await lake.pool("logs@main")``;
``await pool.scan(["ts", "msg"], filter=[("ts", ">=", t0)])``; ``await pool.load(rows)``.

Modules, one job each: ``ksuid`` (IDs), ``zedtypes`` (metadata record types),
``objects`` (store reads, writes and the cache), ``journal`` (HEAD/TAIL/entries/
snap.zng replay), ``commits`` (commit objects, state at a commit), ``keys``
(pool-key order, key ranges and their filter form), ``seek`` (seek indexes to byte
ranges), ``plan`` (prune objects, seek-index runs, the planner's requests, groups of
overlapping objects), ``source`` (what a scan reads, as data any reader can take),
``read`` (the source's objects as fragments of a Dataset, merged in key order: the
lake decodes nothing itself), ``pool`` and ``lake``
(the API), ``load`` (commits).  The command line's and Spark's faces are
``csup_async.cli.lake`` and ``csup_async.spark.lake``: this package imports neither.
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use (PEP 562): the CLI (``csup_async.cli.lake``) builds its ``lake``
# sub-command on every start, and must not pay for numpy and the pool machinery then.
_LAZY = {"create_lake": ".create", "LakeConflictError": ".errors", "LakeError": ".errors",
         "LakeNotFoundError": ".errors",
         "KeyRange": ".keys", "BranchConfig": ".lake", "Lake": ".lake", "PoolConfig": ".lake",
         "open_lake": ".lake", "Pool": ".pool"}

__all__ = ["BranchConfig", "KeyRange", "Lake", "LakeConflictError", "LakeError",
           "LakeNotFoundError", "Pool", "PoolConfig", "create_lake", "open_lake"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
