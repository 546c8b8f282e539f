"""Parsed metadata of objects opened before, so a service that opens them again skips work.

Opening an object costs a tail read (one round trip) and a parse of its
reassembly section (about 3 us a byte of CPU, the larger part for files with
many segments).  A service that answers many requests over the same objects
repeats both.  With a cache, ``open(url, metadata_cache=cache)``:

* still makes the tail read (it names the object's current version), then
  takes the parsed metadata of that version from the cache: no parse and no
  follow-up metadata request;
* with ``immutable=True`` also skips the tail read when the object was opened
  before: the caller promises it never changes in place (content-addressed
  names, a data lake's files), so the version seen then is the version now.
  Reads stay pinned to it: an object replaced in spite of the promise still
  gives ObjectChangedError, never mixed data.

Entries are keyed by store scope, key and version (an ETag, a GCS generation,
a local inode/size/mtime), so a replaced object is a miss, never stale data.
The scope is the store's kind and options, credentials included (shared
stores), or the store instance (one passed by hand): an entry read with one
set of credentials never answers an open made with another.
The cache is bounded in bytes (least recently used entries go first): an
entry costs its tail bytes plus an estimate of the parsed metadata, four
times the reassembly section.  It is thread-safe, so one cache may serve
several event loops.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ..format.meta import FileMeta
from ..model.errors import CsupError
from . import TailRead

__all__ = ["DEFAULT_CACHE_BYTES", "CachedMetadata", "MetadataCache"]

DEFAULT_CACHE_BYTES = 64 << 20
_PARSED_FACTOR = 4  # parsed metadata per byte of reassembly section, as estimated


@dataclass(frozen=True, slots=True)
class CachedMetadata:
    meta: FileMeta
    tail: TailRead
    extra: tuple[tuple[int, bytes], ...]  # other bytes read while opening: (offset, data)
    #: plans made for this metadata by the readers that used it (Reader._plan's memo):
    #: a plan is a pure function of the metadata, projection, profile, held bytes and
    #: warm connections, which its key holds
    plans: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def version(self) -> str | None:
        return self.tail.info.version

    def cost(self) -> int:
        return (len(self.tail.data) + sum(len(d) for _, d in self.extra)
                + _PARSED_FACTOR * self.meta.trailer.reassembly_size + 512)


class MetadataCache:
    """An LRU of parsed metadata, at most ``max_bytes`` (estimated) in all."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 0:
            raise CsupError(f"max_bytes must be a non-negative int, not {max_bytes!r}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, CachedMetadata] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return (f"MetadataCache({len(self._entries)} objects, {self._bytes:,} of "
                f"{self.max_bytes:,} bytes, {self.hits} hits, {self.misses} misses)")

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, ident: Hashable, version: str | None = None) -> CachedMetadata | None:
        """The entry for ``ident``; with ``version``, only if it is of that version."""
        with self._lock:
            entry = self._entries.get(ident)
            if entry is None or (version is not None and entry.version != version):
                self.misses += 1
                return None
            self._entries.move_to_end(ident)
            self.hits += 1
            return entry

    def peek(self, ident: Hashable) -> CachedMetadata | None:
        """The entry for ``ident`` of any version, not counted as a hit or a miss (a
        conditional request will tell whether it is still current)."""
        with self._lock:
            return self._entries.get(ident)

    def put(self, ident: Hashable, entry: CachedMetadata) -> None:
        """Remember ``entry`` (replacing an older version); objects with no version are not
        cached, since nothing could tell a replaced one apart."""
        if entry.version is None:
            return
        cost = entry.cost()
        with self._lock:
            old = self._entries.pop(ident, None)
            if old is not None:
                self._bytes -= old.cost()
            if cost > self.max_bytes:
                return
            self._entries[ident] = entry
            self._bytes += cost
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.cost()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_default: MetadataCache | None = None
_default_lock = threading.Lock()


def _reinit_locks() -> None:
    """A forked child may have been forked while another thread held a lock: its copy
    would stay held for ever there (a pre-forking server's workers share nothing)."""
    global _default_lock
    _default_lock = threading.Lock()
    if _default is not None:
        _default._lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX: where processes fork
    os.register_at_fork(after_in_child=_reinit_locks)


def default_cache() -> MetadataCache:
    """The process's cache for ``metadata_cache=True`` (DEFAULT_CACHE_BYTES)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MetadataCache()
        return _default
