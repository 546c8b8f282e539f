"""A reader's open: one tail read, the metadata parsed (or taken from the metadata cache,
revalidated by the object's version), and the endpoint's measurements kept between
processes.  The format is sniffed here too: bytes that start a SuperDB file raise
:class:`~.detect.HeaderLayout` for the loader (:mod:`.loader`) to build that reader."""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Awaitable
from typing import Any

import planner as P

from ..format.csup import find_trailer, parse_reassembly
from ..format.superdb.tail import is_v23_tail
from ..model.errors import (
    CsupError,
    FormatError,
    LimitError,
)
from ..scan.pool import off_loop
from ..stores import TailRead
from ..stores.capabilities import abilities, cache_key, cache_scope
from ..stores.diskcache import disk_cache, env_cache
from ..stores.metacache import CachedMetadata, MetadataCache, default_cache
from ..stores.rangebuf import RangeBuffer
from .detect import HeaderLayout, is_header_layout
from .detect import probe as probe_header_layout
from .parsememo import note_tail, parse_memo, tail_hint


class Loading:
    """What :class:`~.reader.Reader` does to open its object (a mixin: the state it
    reads and sets is the Reader's)."""

    # ---------------------------------------------------------------- open ---
    def _cache_ident(self) -> tuple[Any, ...]:
        """Which object this is *for this store*: the store's scope (its kind and options,
        credentials included, or the store instance) and the key.  Two stores with
        different credentials never share an entry: with ``immutable=True`` a hit
        costs no request, so it must not let one caller see what only another may."""
        return (_cache_scope(self.store), cache_key(self.store, self.key))

    def _tail_size(self) -> int:
        """The first read's size: the profile's (``planner.tail_prefetch_size``), or, for
        an object this process opened before and that is too large to be read whole,
        just its metadata as it was then (at least the profile's ``tail_min``).  On the
        simulated S3 a 1 MiB tail for 2 KB of metadata cost ~9 ms of transfer on every
        open of the wide table; an object whose metadata grew since costs one
        follow-up request, as any open whose tail was short."""
        size = P.tail_prefetch_size(self.profile)
        known = tail_hint(self._cache_ident())
        if known is None:
            return size
        object_size, metadata_size = known
        if object_size <= size + self.profile.gap_limit:
            return size  # read whole, as before: the data comes with it
        return max(self.profile.tail_min, metadata_size)

    def _use_cached(self, hit: Any, tail: TailRead, t0: float) -> None:
        self.meta = hit.meta
        self.tail = tail
        self._plans = hit.plans
        self._extra = list(hit.extra)
        self.open_stats.wall = time.perf_counter() - t0
        self.open_stats.metadata_requests = self.open_stats.requests

    async def _revalidate(self, cache: Any, t0: float) -> Awaitable[TailRead] | None:
        """A tail read conditional on the version cached before (``If-None-Match``): None
        if the object is unchanged (the cached entry is used, no tail bytes moved)."""
        can = abilities(self.store).tail_revalidating
        prior = cache.peek(self._cache_ident()) if can else None
        if prior is None or prior.version is None or not can:
            return self.store.read_tail(self.key, self._tail_size())
        tail = await self.store.read_tail_unless(  # type: ignore[attr-defined]
            self.key, self._tail_size(), prior.version)
        if tail is None:  # 304
            self.open_stats.requests = 1
            hit = cache.get(self._cache_ident(), prior.version) or prior  # counted as a hit
            self._use_cached(hit, hit.tail, t0)
            return None
        return _done(tail)

    async def load(self, pending: Awaitable[TailRead] | None = None) -> None:
        """Read and parse the metadata (``pending``: the tail read, already sent)."""
        t0 = time.perf_counter()
        cache = self.metadata_cache
        self._restore_measurements()
        if cache is not None and self.immutable:
            hit = cache.get(self._cache_ident())
            if hit is not None:  # no request at all: the version seen before is the one now
                self._use_cached(hit, hit.tail, t0)
                return
        if pending is None and cache is not None:
            pending = await self._revalidate(cache, t0)
            if pending is None:
                return  # 304: the cached version is still the object's
        if pending is None:
            pending = self.store.read_tail(self.key, self._tail_size())
        tail = await pending
        self.open_stats.ttfb = time.perf_counter() - t0
        self.open_stats.requests = 1
        self.open_stats.bytes_read = len(tail.data)
        self.tail = tail
        obj_size = tail.info.size
        if cache is not None and tail.info.version is not None:
            hit = cache.get(self._cache_ident(), tail.info.version)
            if hit is not None and hit.meta.object_size == obj_size:
                self._use_cached(hit, tail, t0)  # this tail read, the metadata parsed before
                return
        if is_header_layout(tail.data, tail.offset) or is_v23_tail(
                tail.data, tail.offset, obj_size):  # SuperDB's: ``open`` reads it so
            raise HeaderLayout(tail, None, t0)
        try:
            try:
                trailer = find_trailer(tail.data, obj_size)
            except FormatError:
                head = await probe_header_layout(self, tail)
                if head is None:
                    raise
                raise HeaderLayout(tail, head, t0) from None
            start = trailer.data_size
            end = start + trailer.reassembly_size
            if trailer.reassembly_size > self.max_metadata:
                raise LimitError(f"reassembly section of {trailer.reassembly_size} bytes "
                                 f"exceeds max_metadata={self.max_metadata}")
            follow = P.metadata_followup(obj_size, len(tail.data), trailer.data_size,
                                         trailer.reassembly_size, trailer.size)
            buf = RangeBuffer()
            buf.add(tail.offset, tail.data)
            if follow is not None:
                off, n = follow
                data = await self.store.read_range(self.key, off, n, tail.info.version)
                if len(data) != n:
                    raise FormatError(f"short read of metadata: {len(data)} of {n} bytes")
                buf.add(off, data)
                self._extra.append((off, data))
                self.open_stats.requests += 1
                self.open_stats.bytes_read += n
            section = buf.get(start, end - start)
            note_tail(self._cache_ident(), obj_size, obj_size - start)
            memo = parse_memo() if cache is None else None
            key = (memo.key(section, trailer, obj_size, self.max_metadata)
                   if memo is not None else None)
            known = memo.get(key) if memo is not None else None
            if known is not None:  # these very bytes were parsed before: the same metadata
                self.meta, self._plans = known
            else:
                # a large section is parsed in the pool: the loop serves other requests
                self.meta = await off_loop(trailer.reassembly_size, functools.partial(
                    parse_reassembly, max_metadata=self.max_metadata), section, trailer,
                    obj_size)
                if memo is not None:
                    self._plans = memo.put(key, self.meta)
        except CsupError as e:
            raise e.with_path(self.path) from None
        self.open_stats.wall = time.perf_counter() - t0
        self.open_stats.metadata_requests = self.open_stats.requests
        if cache is not None:
            entry = CachedMetadata(self.meta, tail, tuple(self._extra))
            cache.put(self._cache_ident(), entry)
            self._plans = entry.plans

    def _restore_measurements(self) -> None:
        """A new endpoint starts from what an earlier process measured there, when the
        on-disk metadata cache kept it."""
        m = self.measurements
        keeper = getattr(self.metadata_cache, "get_measurements", None)
        if m is None or m.loaded or not callable(keeper):
            return
        m.loaded = True
        if not m.enough:
            m.extend(keeper(m.endpoint))

    def _keep_measurements(self) -> None:
        """Write the endpoint's measurements to the on-disk cache for the next process."""
        m = self.measurements
        keeper = getattr(self.metadata_cache, "put_measurements", None)
        if m is not None and callable(keeper) and m.recorded != m.kept and m.enough:
            keeper(m.endpoint, m)
            m.kept = m.recorded


_scopes = itertools.count()


def _cache_scope(store: Any) -> Any:
    """The metadata-cache scope of ``store``: set by the shared-store registry (kind and
    options), else unique to this store instance for the life of the process."""
    scope = cache_scope(store)
    if scope is None:
        scope = ("instance", next(_scopes))
        try:
            store.cache_scope = scope
        except AttributeError:  # a store that takes no attributes: it cannot share entries
            return ("uncached", id(store), next(_scopes))
    return scope


async def _done(tail: TailRead) -> TailRead:
    return tail


def metadata_cache_of(option: Any) -> Any:
    """The MetadataCache an option names: False none, None none unless
    ``$CSUP_METADATA_CACHE`` names a directory, True the process's default, a
    pathlib.Path or a str the process's on-disk cache in that directory (made if
    missing, as ``$CSUP_METADATA_CACHE`` and the CLI's ``--metadata-cache`` are)."""
    if option is False:
        return None
    if option is None:
        if not os.environ.get("CSUP_METADATA_CACHE"):
            return None
        return env_cache()
    if option is True:
        return default_cache()
    if isinstance(option, (os.PathLike, str)) and not isinstance(option, bytes):
        if not os.fspath(option):
            raise CsupError("metadata_cache must name a directory, not an empty string")
        return disk_cache(option)
    if not isinstance(option, MetadataCache):
        raise CsupError(f"metadata_cache must be a MetadataCache, a directory (a str or "
                        f"pathlib.Path) or True, not "
                        f"{type(option).__name__}")
    return option

