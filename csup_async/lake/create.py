"""Create a lake and its pools in zed v1.7.0's layout (what ``zed init`` / ``zed create`` write);
pools and branches in a SuperDB database as its ``super db create`` / ``branch`` write them.

A lake is ``lake.zng`` plus empty ``pools/`` and ``index_rules/`` journals; a pool is a
``journal.Add`` of its ``pools.Config`` to ``pools/`` (put-if-absent, retried
on a lost race like any journal commit) and a branch journal whose first
entry adds ``main`` with a nil commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..format import bsup
from ..model.errors import CsupError
from ..model.types import Type
from ..stores import store_for
from . import ksuid as K
from . import zedtypes as Z
from .config import LAKE_MAGIC, LAKE_VERSION, PoolConfig, pool_config
from .errors import LakeConflictError, LakeNotFoundError
from .journal import JournalState, read_journal
from .objects import LakeIO, gather_all

if TYPE_CHECKING:
    from .objects import LakeHandle

__all__ = ["create_lake", "create_pool"]

DEFAULT_SEEK_STRIDE = 64 * 1024
DEFAULT_THRESHOLD = 500 * 1024 * 1024
MAX_ATTEMPTS = 64


async def _journal_init(io: LakeIO, d: str) -> None:
    await io.put(f"{d}/HEAD", b"0")
    await io.put(f"{d}/TAIL", b"1 0")


async def create_lake(url: str, **options: Any) -> None:
    """Write an empty lake at ``url`` (LakeConflictError if one is already there)."""
    store, root = store_for(url.rstrip("/") or "/", **options)
    async with store:
        io = LakeIO(store, root)
        magic = bsup.encode_stream([(Z.LAKE_MAGIC, {"magic": LAKE_MAGIC,
                                                    "version": LAKE_VERSION})])
        exists = await io.get_or_none("lake.zng") is not None
        if exists or not await io.put_if_absent("lake.zng", magic):
            raise LakeConflictError("a lake already exists here", path=io.display("lake.zng"))
        # zed v1.7 opens the index rules' journal with the pools' (an empty one is
        # what ``zed init`` writes; without it ``zed`` refuses the lake)
        await gather_all([_journal_init(io, "pools"), _journal_init(io, "index_rules")])


async def _append(io: LakeIO, d: str,
                  make: Callable[[JournalState], list[tuple[Type, Any]]]) -> int:
    """Append one entry to journal ``d`` (put-if-absent at its real end, retried);
    ``make`` checks the replayed journal and gives the entry's records."""
    for _ in range(MAX_ATTEMPTS):
        journal = await read_journal(io, d)
        body = Z.encode(make(journal), io.bsup_version)  # (a SuperDB database's version)
        nxt = journal.at + 1
        if await io.put_if_absent(f"{d}/{nxt}.zng", body):
            await io.put(f"{d}/HEAD", str(nxt).encode())
            return nxt
        await asyncio.sleep(0.005)
    raise LakeConflictError(f"journal moved under each of {MAX_ATTEMPTS} attempts",
                            path=io.display(d))


async def create_pool(lake: LakeHandle, name: str, *, key: str = "ts", order: str = "desc",
                      seek_stride: int = DEFAULT_SEEK_STRIDE,
                      threshold: int = DEFAULT_THRESHOLD) -> PoolConfig:
    """Add pool ``name`` sorted by ``key`` (a dotted path) ``order`` ("asc"/"desc"; zed's
    default is desc), with its ``main`` branch; returns its config."""
    if order not in ("asc", "desc"):
        raise CsupError(f"order must be 'asc' or 'desc', not {order!r}")
    if not name or "@" in name or "/" in name or K.looks_like(name):
        raise CsupError(f"{name!r} cannot name a pool (empty, '@', '/' or a KSUID)")
    io = lake.io
    pid = K.new()
    now = np.datetime64("now", "ns")
    cfg = {"ts": now, "name": name, "id": pid,
           "layout": {"order": order, "keys": [key.split(".")]},
           "seek_stride": seek_stride, "threshold": threshold}

    pool_t = Z.POOL_CONFIG
    if io.is_superdb:  # super's pools.Config: order.SortKey; main has no seek stride
        pool_t = Z.superdb_pool_config(io.bsup_version)
        if io.bsup_version == 5:
            del cfg["seek_stride"]

    def add_pool(journal: JournalState) -> list[tuple[Type, Any]]:
        if name in journal.entries:
            raise LakeConflictError(f"pool {name!r} already exists",
                                    path=io.display("pools"))
        return [(Z.journal_add(pool_t), {"entry": cfg})]

    bdir = f"{K.to_str(pid)}/branches"
    await _journal_init(io, bdir)
    await _append(io, bdir, lambda _: [(Z.journal_add(Z.BRANCH_CONFIG), {"entry": {
        "ts": now, "name": "main", "commit": K.NIL}})])
    await _append(io, "pools", add_pool)
    await lake.refresh()
    rec = Z.Record("pools.Config", cfg, Z.fields_of(pool_t) or {})
    return pool_config(rec, io.display("pools"))


async def create_branch(lake: LakeHandle, pool: str, name: str, *, from_branch: str = "main"
                        ) -> None:
    """Branch ``name`` at the commit ``from_branch`` points to."""
    cfg = lake.pool_config(pool)
    io = lake.io
    bdir = f"{cfg.id_str}/branches"

    def add_branch(journal: JournalState) -> list[tuple[Type, Any]]:
        if name in journal.entries:
            raise LakeConflictError(f"branch {name!r} already exists", path=io.display(bdir))
        src = journal.entries.get(from_branch)
        if src is None:
            raise LakeNotFoundError(f"no branch {from_branch!r}", path=io.display(bdir))
        return [(Z.journal_add(Z.BRANCH_CONFIG), {"entry": {
            "ts": np.datetime64("now", "ns"), "name": name,
            "commit": src.ksuid("commit", io.display(bdir))}})]

    await _append(io, bdir, add_branch)
