"""Getting and putting lake objects on any store, with a cache for the immutable ones.

Reads go through the project's stores (``read_tail`` with a length beyond any
object reads it whole in one request; ``read_range`` for seek-index ranges).
Writes go through :func:`csup_async.stores.put.put_object` (a plain put, or an
atomic put-if-absent: ``link`` locally, S3's ``If-None-Match: *``, GCS's
``ifGenerationMatch=0``), the path ``csup_async.write`` to a URL takes too.

Data objects, commit objects, commit snapshots, seek indexes and journal
entries never change once written (Zed names them by KSUID or journal ID), so
they are cached by key; HEAD, TAIL and ``snap.zng`` are read fresh every time.
With an on-disk metadata cache (``open_lake(url, metadata_cache=Path(dir))``, or
``$CSUP_METADATA_CACHE``) the small ones read whole (``lake.zng``, journal
entries, commits and their snapshots, seek indexes) are kept there too, keyed by
the store's scope and the object's key, so the next process asks for none of them.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol

from ..model.errors import AccessDeniedError, CsupError, NotFoundError
from ..stores import LocalStore, Store
from ..stores.capabilities import Lister, cache_key, cache_scope, display_of
from ..stores.put import local_path, put_object
from ..stores.tasks import gather_or_cancel
from .config import PoolConfig
from .errors import LakeError

if TYPE_CHECKING:
    from ..stores.diskcache import DiskMetadataCache

__all__ = ["LakeIO", "LakeHandle", "WHOLE", "gather_all", "DEFAULT_MAX_JOURNAL_ENTRIES",
           "disk_cache_of"]

WHOLE = 1 << 62  # a suffix length beyond any object: read_tail returns all of it
DEFAULT_CACHE_BYTES = 256 << 20
DEFAULT_CONCURRENCY = 32
#: The most entries one journal replay reads (``max_journal_entries=`` changes it).
DEFAULT_MAX_JOURNAL_ENTRIES = 1_000_000


class LakeIO:
    """The store of one lake: keys relative to its root, bounded concurrency, a cache."""

    def __init__(self, store: Store, root: str, *, concurrency: int = DEFAULT_CONCURRENCY,
                 cache_bytes: int = DEFAULT_CACHE_BYTES,
                 max_journal_entries: int = DEFAULT_MAX_JOURNAL_ENTRIES,
                 disk: DiskMetadataCache | None = None) -> None:
        self.store = store
        self.disk = disk
        self.max_journal_entries = max_journal_entries
        self.root = root.rstrip("/")
        self.sem = asyncio.Semaphore(concurrency)
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached = 0
        self.requests = 0
        self.bytes_read = 0
        self.disk_hits = 0
        #: the suffix of BSUP objects: ".zng" in a Zed lake, ".bsup" in a SuperDB database
        #: (``super db``: the same layout, ``superdb.bsup`` for ``lake.zng``).  Callers
        #: name objects as in a Zed lake; :meth:`key` names them as stored.
        self.ext = ".zng"
        #: the BSUP version its objects are written in (0: Zed; 2: super v0.3.0; 5: main)
        self.bsup_version = 0

    def set_superdb(self) -> None:
        """Name objects as a SuperDB database does (``.bsup``, ``superdb.bsup``)."""
        self.ext = ".bsup"

    @property
    def is_superdb(self) -> bool:
        return self.ext == ".bsup"

    def stored(self, rel: str) -> str:
        """The stored name of the object a caller names ``rel`` (Zed lake names)."""
        if self.ext == ".zng" or not rel.endswith(".zng"):
            return rel
        return "superdb.bsup" if rel == "lake.zng" else rel[:-4] + self.ext

    def key(self, rel: str) -> str:
        return f"{self.root}/{self.stored(rel)}"

    def display(self, rel: str) -> str:
        return display_of(self.store, self.key(rel))

    # ------------------------------------------------------------- reads ---
    async def get(self, rel: str, *, immutable: bool = False) -> bytes:
        """The whole object (NotFoundError if absent)."""
        if immutable:
            hit = self.peek(rel)
            if hit is not None:
                return hit
        async with self.sem:
            tail = await self.store.read_tail(self.key(rel), WHOLE)
        data = bytes(tail.data)
        self.requests += 1
        self.bytes_read += len(data)
        if len(data) != tail.info.size:
            raise LakeError(f"read {len(data)} of {tail.info.size} bytes", path=self.display(rel))
        if immutable:
            self._remember(rel, data)
            if self.disk is not None and _outlives_the_lake(rel):
                self.disk.put_object(self._ident(rel), data)
        return data

    def peek(self, rel: str) -> bytes | None:
        """An immutable object already read whole, by this process or (with a disk
        cache) an earlier one; None rather than a request."""
        hit = self._cache.get(rel)
        if hit is not None:
            self._cache.move_to_end(rel)
            return hit
        if self.disk is None or not _outlives_the_lake(rel):
            return None
        hit = self.disk.get_object(self._ident(rel))
        if hit is not None:
            self.disk_hits += 1
            self._remember(rel, hit)
        return hit

    def _ident(self, rel: str) -> tuple[Any, str]:
        """The disk cache's name for an object: the store's scope (its kind and options,
        the same in every process; unset for a store passed by hand, whose objects then
        stay in memory) and the key."""
        key = self.key(rel)
        # (a relative local path made absolute)
        return (cache_scope(self.store), cache_key(self.store, key))

    async def get_or_none(self, rel: str, *, immutable: bool = False,
                          probe: bool = False) -> bytes | None:
        """The object, or None if absent.  ``probe``: an object that is usually absent
        (a snapshot, the entry after HEAD): S3 answers 403 rather than 404 for a missing
        key to credentials without ListBucket, so a denial means absent too."""
        try:
            return await self.get(rel, immutable=immutable)
        except NotFoundError:
            return None
        except AccessDeniedError:
            if probe:
                return None
            raise

    async def get_range(self, rel: str, offset: int, length: int) -> bytes:
        ck = f"{rel}#{offset}+{length}"
        hit = self._cache.get(ck)
        if hit is not None:
            return hit
        async with self.sem:
            data = bytes(await self.store.read_range(self.key(rel), offset, length))
        self.requests += 1
        self.bytes_read += len(data)
        self._remember(ck, data)
        return data

    def cached(self, k: str) -> bytes | None:
        """What :meth:`remember` kept under ``k`` (None: nothing, or evicted)."""
        hit = self._cache.get(k)
        if hit is not None:
            self._cache.move_to_end(k)
        return hit

    def remember(self, k: str, data: bytes) -> None:
        """Keep the bytes of an immutable object (or of runs of one) under ``k``."""
        self._remember(k, data)

    def _remember(self, k: str, data: bytes) -> None:
        if len(data) > self.cache_bytes // 4:
            return
        self._cache[k] = data
        self._cached += len(data)
        while self._cached > self.cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)

    async def list(self, rel_prefix: str) -> list[str]:
        """Keys (relative to the root) of the objects under ``rel_prefix``."""
        if isinstance(self.store, LocalStore):
            base = _local(self.key(rel_prefix))
            out = []
            for d, _, files in os.walk(base):
                out += [os.path.relpath(os.path.join(d, f), _local(self.root)) for f in files]
            return sorted(self._named(o) for o in out)
        if not isinstance(self.store, Lister):
            raise LakeError(f"store {self.store.name} cannot list objects",
                            path=self.display(rel_prefix))
        scheme = {"s3": "s3://", "gcs": "gs://"}.get(self.store.name, "")
        urls = await self.store.list(scheme + self.key(rel_prefix))
        cut = len(scheme) + len(self.root) + 1
        return sorted(self._named(u[cut:]) for u in urls)

    def _named(self, stored: str) -> str:
        """The caller's (Zed lake) name of a stored object (the inverse of :meth:`stored`)."""
        if self.ext == ".zng" or not stored.endswith(self.ext):
            return stored
        return "lake.zng" if stored == "superdb.bsup" else stored[:-len(self.ext)] + ".zng"

    # ------------------------------------------------------------ writes ---
    async def put(self, rel: str, data: bytes) -> None:
        """Write (or replace) an object."""
        await self._put(rel, data, if_absent=False)

    async def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Write an object only if none exists by that name: True if written,
        False if another writer got there first (atomic on every backend)."""
        return await self._put(rel, data, if_absent=True)

    async def _put(self, rel: str, data: bytes, *, if_absent: bool) -> bool:
        async with self.sem:
            return await put_object(self.store, self.key(rel), data, if_absent=if_absent,
                                    path=self.display(rel))


def _outlives_the_lake(rel: str) -> bool:
    """Whether an immutable object's name is never reused, even by a lake deleted and
    created again at the same URL: everything under a pool's KSUID is, but the lake's own
    journal of pools (``pools/1.zng`` ...) and ``lake.zng`` start again from the same
    names, so an earlier lake's copies kept on disk could answer for the new one's."""
    return not (rel == "lake.zng" or rel.startswith("pools/"))


def disk_cache_of(option: Any) -> DiskMetadataCache | None:
    """The on-disk cache a lake's ``metadata_cache=`` names: None (``$CSUP_METADATA_CACHE``
    if set), False (none), a pathlib.Path (the process's cache in that directory) or a
    DiskMetadataCache."""
    from ..stores.diskcache import DiskMetadataCache, disk_cache, env_cache

    if option is None:
        return env_cache()
    if option is False:
        return None
    if isinstance(option, DiskMetadataCache):
        return option
    if isinstance(option, os.PathLike):  # a str is refused, as open() refuses it
        return disk_cache(option)
    raise CsupError("a lake's metadata_cache must be a pathlib.Path, a DiskMetadataCache or "
                    f"False, not {type(option).__name__}")


async def gather_all(coros: list[Any]) -> list[Any]:
    """All results in order; on the first failure the rest are cancelled and awaited, so
    no request outlives the call (the readers' own helper)."""
    return await gather_or_cancel(coros)


def _local(key: str) -> str:
    return local_path(key)


class LakeHandle(Protocol):
    """What creating, loading and reading a pool need of a lake (``lake.Lake`` is one):
    named here so those modules do not import the module that imports them."""

    io: LakeIO
    url: str

    def pool_config(self, name_or_id: str) -> PoolConfig: ...

    async def refresh(self) -> None: ...
