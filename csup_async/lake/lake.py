"""Open a Zed lake and name a pool in it: ``open_lake(url)``, ``lake.pool("logs@dev")``.

Opening reads ``lake.zng`` (magic and version) and replays ``pools/`` in the
same round trips.  ``lake.pool(ref)`` replays the pool's branch journal and
resolves the branch's commit to its live data objects.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..model.errors import CsupError, NotFoundError
from ..model.redact import redact_url
from ..stores import Store, store_for
from ..stores.shared import with_stable_scope
from . import ksuid as K
from . import zedtypes as Z
from .commits import PoolState, state_at
from .config import (
    LAKE_MAGIC,
    LAKE_VERSION,
    SUPERDB_MAGIC,
    SUPERDB_VERSIONS,
    BranchConfig,
    PoolConfig,
    branch_config,
    pool_config,
)
from .errors import LakeError, LakeNotFoundError
from .journal import JournalState, read_journal
from .objects import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_JOURNAL_ENTRIES,
    LakeIO,
    disk_cache_of,
    gather_all,
)

__all__ = ["open_lake", "Lake", "PoolConfig", "BranchConfig", "LAKE_VERSION", "LAKE_MAGIC"]


class Lake:
    """An open lake: its pools (at the pools journal's end, or ``at``)."""

    def __init__(self, io: LakeIO, url: str, owns_store: bool, pools: JournalState) -> None:
        self.io = io
        self.url = url
        self._owns_store = owns_store
        self.journal = pools
        path = io.display("pools")
        self.pools: list[PoolConfig] = sorted(
            (pool_config(r, path) for r in pools.entries.values()), key=lambda p: p.name)
        self._states: dict[bytes, dict[bytes, PoolState]] = {}

    def __repr__(self) -> str:
        return f"Lake({redact_url(self.url)!r}, pools={[p.name for p in self.pools]})"

    @property
    def store(self) -> Store:
        return self.io.store

    def pool_config(self, name_or_id: str) -> PoolConfig:
        for p in self.pools:
            if p.name == name_or_id:
                return p
        if K.looks_like(name_or_id):
            want = K.parse(name_or_id)
            for p in self.pools:
                if p.id == want:
                    return p
        raise LakeNotFoundError(f"no pool {name_or_id!r} (pools: "
                        f"{', '.join(p.name for p in self.pools) or 'none'})",
                        path=self.io.display("pools"))

    async def branches(self, pool: str, at: int | None = None) -> list[BranchConfig]:
        cfg = self.pool_config(pool)
        journal = await self._branch_journal(cfg, at)
        path = self.io.display(journal.dir)
        return sorted((branch_config(r, path) for r in journal.entries.values()),
                      key=lambda b: b.name)

    async def _branch_journal(self, cfg: PoolConfig, at: int | None) -> JournalState:
        return await read_journal(self.io, f"{cfg.id_str}/branches", at)

    async def pool(self, ref: str, *, at: int | str | bytes | None = None) -> Any:
        """A pool at a branch (``"logs"`` = ``"logs@main"``, ``"logs@dev"``), a commit
        (``"logs@<commit ID>"`` or ``at="<commit ID>"``), or the branch as of branch
        journal ID ``at`` (an int).  The pool may be named by its ID."""
        from .pool import Pool

        name, _, branch = ref.partition("@")
        cfg = self.pool_config(name)
        branch = branch or "main"
        commit: bytes | None = None
        journal_at: int | None = None
        if isinstance(at, int) and not isinstance(at, bool):
            journal_at = at
        elif isinstance(at, bytes):
            commit = at
        elif isinstance(at, str):
            commit = _parse_commit(at)
        elif at is not None:
            raise CsupError(f"at= takes a branch journal ID (int) or a commit ID, not {at!r}")
        if commit is None and K.looks_like(branch):
            commit = _parse_commit(branch)
        branch_cfg: BranchConfig | None = None
        journal_id: int | None = None
        if commit is None:
            journal = await self._branch_journal(cfg, journal_at)
            journal_id = journal.at
            r = journal.entries.get(branch)
            if r is None:
                raise LakeNotFoundError(f"pool {cfg.name!r} has no branch {branch!r} (branches: "
                                f"{', '.join(sorted(journal.entries)) or 'none'})"
                                + (f" at journal ID {journal_at}" if journal_at else ""),
                                path=self.io.display(journal.dir))
            branch_cfg = branch_config(r, self.io.display(journal.dir))
            commit = branch_cfg.commit
        cache = self._states.setdefault(cfg.id, {})
        state = await state_at(self.io, cfg.id_str, commit, cache)
        return Pool(self, cfg, branch if branch_cfg is not None else None, commit, state,
                    journal_id)

    async def refresh(self) -> None:
        """Re-read the pools journal (after pools were created or renamed)."""
        self.journal = await read_journal(self.io, "pools")
        path = self.io.display("pools")
        self.pools = sorted((pool_config(r, path) for r in self.journal.entries.values()),
                            key=lambda p: p.name)

    async def create_pool(self, name: str, *, key: str = "ts", order: str = "desc",
                          seek_stride: int = 65536, threshold: int = 500 * 1024 * 1024
                          ) -> PoolConfig:
        """Add a pool (as ``zed create``: default key ``ts``, descending) with ``main``."""
        from .create import create_pool

        return await create_pool(self, name, key=key, order=order, seek_stride=seek_stride,
                                 threshold=threshold)

    async def create_branch(self, pool: str, name: str, *, from_branch: str = "main") -> None:
        from .create import create_branch

        await create_branch(self, pool, name, from_branch=from_branch)

    async def close(self) -> None:
        if self._owns_store:
            await self.io.store.close()

    async def __aenter__(self) -> Lake:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _parse_commit(s: str) -> bytes:
    try:
        return K.parse(s)
    except ValueError:
        raise CsupError(f"{s!r} is not a commit ID (27 base62 characters or 0x and 40 hex "
                        "digits)") from None


async def _read_magic(io: LakeIO) -> None:
    rel = "lake.zng"
    path = io.display(rel)
    try:
        buf = await io.get(rel, immutable=True)  # (written once, as ``zed init`` does)
    except NotFoundError:
        io.set_superdb()  # a SuperDB database (``super db init``): superdb.bsup
        path = io.display(rel)
        try:
            buf = await io.get(rel, immutable=True)
        except NotFoundError:
            io.ext = ".zng"
            raise LakeNotFoundError("no lake.zng nor superdb.bsup: not a Zed lake nor a "
                                    "SuperDB database", path=io.display(rel)) from None
    recs = list(Z.read_records(buf, path))
    if len(recs) != 1 or not isinstance(recs[0], Z.Record):
        raise LakeError(f"{rel if not io.is_superdb else 'superdb.bsup'} does not hold one "
                        "record", path=path)
    r = recs[0]
    magic = r.get("magic", path, str)
    version = r.get("version", path, int)
    if io.is_superdb:
        io.bsup_version = buf[0] & 0x7F if buf and buf[0] & 0x80 and buf[0] != 0xFF else 0
        if magic != SUPERDB_MAGIC:
            raise LakeError(f"database magic is {magic!r}, not {SUPERDB_MAGIC!r}", path=path)
        if version not in SUPERDB_VERSIONS:
            raise LakeError(f"unsupported SuperDB database version {version} (this reader "
                            f"reads {', '.join(map(str, SUPERDB_VERSIONS))})", path=path)
        return
    if magic != LAKE_MAGIC:
        raise LakeError(f"lake magic is {magic!r}, not {LAKE_MAGIC!r}", path=path)
    if version != LAKE_VERSION:
        raise LakeError(f"unsupported lake version {version} (this reader reads version "
                        f"{LAKE_VERSION}, as zed v1.x writes)", path=path)


class _LakeOpener:
    def __init__(self, url: str, store: Store | None, at: int | None,
                 options: dict[str, Any]) -> None:
        self.url, self.store, self.at, self.options = url, store, at, options
        self.lake: Lake | None = None

    async def _open(self) -> Lake:
        opts = dict(self.options)
        concurrency = int(opts.pop("concurrency", DEFAULT_CONCURRENCY))
        max_entries = opts.pop("max_journal_entries", None)
        max_entries = DEFAULT_MAX_JOURNAL_ENTRIES if max_entries is None else max_entries
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise CsupError(f"max_journal_entries must be a positive int, not {max_entries!r}")
        disk = disk_cache_of(opts.pop("metadata_cache", None))
        store, owns = self.store, False
        if store is None:
            store, root = store_for(self.url.rstrip("/") or "/", **opts)
            # the scope a shared store of these options has: the disk cache then serves
            # this lake's immutable objects to the next process that opens it so
            with_stable_scope(store, opts)
            owns = True
        else:
            _, root = store_for(self.url.rstrip("/"))
        io = LakeIO(store, root, concurrency=concurrency, max_journal_entries=max_entries,
                    disk=disk)
        try:
            async def pools_or_error() -> Any:
                try:
                    return await read_journal(io, "pools", self.at)
                except CsupError as e:  # the magic's error, if any, is the one to show
                    return e

            _, pools = await gather_all([_read_magic(io), pools_or_error()])
            if io.is_superdb:  # its names known only now: replay the journal by them
                pools = await read_journal(io, "pools", self.at)
            elif isinstance(pools, CsupError):
                raise pools
        except BaseException:
            if owns:
                await store.close()
            raise
        self.lake = Lake(io, self.url, owns, pools)
        return self.lake

    def __await__(self) -> Generator[Any, None, Lake]:
        return self._open().__await__()

    async def __aenter__(self) -> Lake:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        if self.lake is not None:
            await self.lake.close()


def open_lake(url: str, *, store: Store | None = None, at: int | None = None,
              **options: Any) -> _LakeOpener:
    """Open the Zed lake at ``url`` (a directory, ``s3://bucket/prefix``, ``gs://...``).

    ``await open_lake(url)`` or ``async with open_lake(url) as lake``.  ``at``
    reads the pools journal as of that journal ID; ``concurrency`` bounds
    requests in flight (default 32); ``max_journal_entries`` bounds the entries one
    journal replay reads (default 1,000,000: a LakeError past it, so a corrupt or
    hostile HEAD cannot ask for billions); ``metadata_cache`` (a pathlib.Path or a
    DiskMetadataCache; default ``$CSUP_METADATA_CACHE``; False for none) keeps the
    lake's small immutable objects on disk for the next process (docs/lake.md);
    other options go to the store.
    """
    return _LakeOpener(url, store, at, options)


