"""A pool scan: the source's objects read as fragments by the one scanner, in key order.

The lake decodes nothing itself.  :meth:`Pool.source` says which objects a scan
reads, the seek-index byte runs of each and the requests the planner coalesced
for them, and the filter (key range and the caller's filter, in the common
model).  Here each kept object becomes a :class:`~csup_async.datasets.fragment.Fragment`
of a :class:`~csup_async.datasets.dataset.Dataset`, opened by
:func:`csup_async.readers.bsup.open_runs` over its runs (a ``.zng`` object is BSUP:
its frames are self-delimiting and each run is whole streams), or by ``open`` on
its columnar copy (``.vng``/``.csup``); the fragment's scan evaluates the filter.
What is the lake's own is its order: objects whose key spans overlap are merged
by the pool key (Zed's order: ties in listing order, nulls last ascending and
first descending), and a key range whose bounds have no filter form (Zed orders
values of different families by type name) is applied to the keys read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from planner.paths import format_path
from planner.request import ScanRequest

from .. import arrays as A
from ..datasets.dataset import Dataset
from ..datasets.fragment import Fragment
from ..model.errors import FormatError, LimitError, NotFoundError, TruncatedError
from ..model.types import NULL, PrimitiveType, Type, UnionType, underlying
from ..model.values import Value
from ..readers.bsup import open_runs, reader_of_frames
from ..readers.opening import open as open_reader
from ..readers.reader import Reader
from ..scan.result import ScanResult, ScanStats
from .errors import LakeError, LakeNotFoundError
from .keys import KeyRange, family, sort_key
from .objects import LakeIO
from .source import PoolSource, SourceObject, combine

__all__ = ["PoolRead", "first_chunk_types", "in_range", "joined", "key_values", "merge_ids"]

#: Key kinds merged as int64 (one family: their order is the integers').
_INT_KEYS = frozenset({"int8", "int16", "int32", "int64", "time", "duration"})


class PoolRead:
    """One scan of a pool source: a Dataset of its objects, read group by group.

    ``request``: the scan's columns (None: every object's) and filter (the pool's
    ``where``), parsed once where the scan was asked for (``Pool.scan``, or a Spark
    driver): each object's scan narrows it (its group's columns, the key range's
    filter) and parses nothing.  ``columnar``: which objects to read from their
    columnar copy (True: every object that has one and is read whole; a set: those
    IDs; False: none)."""

    def __init__(self, io: LakeIO, pool_dir: str, source: PoolSource, request: ScanRequest,
                 *, columnar: bool | frozenset[str] = False, profile: Any = None) -> None:
        self.io = io
        self.pool_dir = pool_dir
        self.source = source
        self.key_name = format_path(source.key)
        self.columns = None if request.columns is None else list(request.columns)
        where = request.filter
        self.columnar = columnar
        self.profile = profile
        kr = source.key_range
        key_filter = kr.to_filter(source.key)
        # the key range goes into the filter when it means there what it means to Zed:
        # every kept object's keys are of the bounds' family
        fams = kr.families()
        self.pushed = kr.unbounded or (key_filter is not None and len(fams) == 1 and all(
            o.key_min is not None and o.key_max is not None
            and {family(o.key_min.type), family(o.key_max.type)} == fams
            for o in source.objects))
        self.filter = combine(key_filter, where) if self.pushed else where
        self.request = request.but(filter=self.filter)
        self.key_range = kr
        self.readers: dict[int, Reader] = {}
        opts = {} if profile is None else {"profile": profile}
        self.dataset = Dataset([Fragment(o.url, opener=self._opener(i, o))
                                for i, o in enumerate(source.objects)],
                               io.store, missing_ok=True, **opts)

    # ------------------------------------------------------------- objects ---
    def _opener(self, i: int, o: SourceObject) -> Any:
        async def opener(url: str) -> Reader:
            r = await self.open_object(o)
            self.readers[i] = r
            return r
        return opener

    def _rel(self, o: SourceObject, suffix: str) -> str:
        return f"{self.pool_dir}/data/{o.id}{suffix}"

    def _use_columnar(self, o: SourceObject) -> bool:
        if o.columnar is None or o.runs is not None:  # a copy has no seek index
            return False
        return self.columnar is True or (
            isinstance(self.columnar, frozenset) and o.id in self.columnar)

    async def open_object(self, o: SourceObject) -> Reader:
        """The object's reader: its columnar copy through ``open`` when that is to be
        read and exists, else its ``.zng`` runs (all of it when the source kept no runs)."""
        opts = {} if self.profile is None else {"profile": self.profile}
        if self._use_columnar(o):
            suffix = o.columnar[o.columnar.rfind("."):]  # type: ignore[index]
            try:
                return await open_reader(self.io.key(self._rel(o, suffix)), store=self.io.store,
                                         **opts)
            except NotFoundError:
                pass  # (a copy deleted since) the .zng holds the same rows
        rel = self._rel(o, ".zng")
        path = self.io.display(rel)
        runs = list(o.runs) if o.runs is not None else [(0, o.size)]
        requests = list(o.requests) if o.requests is not None else None
        cache_key = f"{rel}#" + ",".join(f"{off}+{n}" for off, n in runs)
        data = self.io.cached(cache_key)  # (objects never change: their bytes are kept)
        if data is not None:
            return reader_of_frames(self.io.store, self.io.key(rel), data, **opts)
        try:
            r = await open_runs(self.io.store, self.io.key(rel), runs, requests=requests,
                                **opts)
            self.io.remember(cache_key, r.frames)
            return r
        except NotFoundError:
            raise LakeNotFoundError(f"data object {o.id} is missing", path=path) from None
        except TruncatedError:
            if o.runs is None:
                info = await self.io.store.info(self.io.key(rel))
                raise LakeError(f"data object is {info.size} bytes, its commit says "
                                f"{o.size}", path=path) from None
            raise LakeError("the object is shorter than its seek index says",
                            path=path) from None
        except LakeError:
            raise
        except FormatError as e:
            if isinstance(e, LimitError):
                raise
            raise LakeError(f"data object is not valid ZNG: {e.message}", path=path) from None

    # --------------------------------------------------------------- reads ---
    async def _columns(self, group: Sequence[int]) -> list[str]:
        """The columns a group's result has: those asked for, or (None) every top-level
        column of its objects, in their order."""
        if self.columns is not None:
            return self.columns
        frags = [self.dataset.fragments[i] for i in group]
        return await Dataset(frags, self.io.store, missing_ok=True).columns_of(self.request)

    async def read_group(self, group: Sequence[int]) -> ScanResult:
        """The rows of one group of overlapping objects, in pool-key order."""
        cols = await self._columns(group)
        merge = len(group) > 1
        extra = [self.key_name] if (merge or not self.pushed) and self.key_name not in cols \
            else []
        frags = [self.dataset.fragments[i] for i in group]
        try:
            each = self.request.but(columns=tuple(cols + extra) or None)  # (as parsed)
            parts = await asyncio.gather(*(f.scan_with(each) for f in frags))
        except FormatError as e:  # (not a filter's or a store's error: those stand)
            if e.path is not None and e.path.endswith(".zng") and not isinstance(e, LimitError):
                raise LakeError(f"data object is not valid ZNG: {e.message}",
                                path=e.path) from None
            raise
        stats = ScanStats()
        for i, p in zip(group, parts, strict=True):
            r = self.readers.get(i)
            if r is not None:
                _add(stats, r.open_stats)
            _add(stats, p.stats)
        self.io.requests += stats.requests
        self.io.bytes_read += stats.bytes_read
        stats.bytes_needed = sum(_needed(self.source.objects[i]) for i in group)
        if merge:
            ids = merge_ids([p.columns[self.key_name] for p in parts], self.source.order)
            n = int(ids.size)
            out = {c: A.combine([p.columns[c] for p in parts], ids) for c in cols + extra}
        else:
            out, n = dict(parts[0].columns), parts[0].num_rows
        if not self.pushed and not self.key_range.unbounded:
            keep = np.flatnonzero(in_range(out[self.key_name], self.key_range))
            out = {c: a.take(keep) for c, a in out.items()}
            n = int(keep.size)
        return ScanResult({c: out[c] for c in cols}, n, stats, None)

    async def read(self) -> ScanResult:
        """Every group's rows, one group after another (groups are read at once)."""
        groups = self.source.groups
        if self.columns is None:  # the columns of every object, in listing order
            self.columns = await self.dataset.columns_of(self.request)
        got = await asyncio.gather(*(self.read_group(g) for g in groups))
        return joined(got, self.columns)


async def first_chunk_types(io: LakeIO, pool_dir: str, name: str, run: tuple[int, int]
                            ) -> list[Type]:
    """The types of the values in one run of frames of data object ``name``."""
    rel = f"{pool_dir}/data/{name}.zng"
    try:
        r = await open_runs(io.store, io.key(rel), [run])
    except NotFoundError:
        raise LakeNotFoundError(f"data object {name} is missing",
                                path=io.display(rel)) from None
    io.requests += r.open_stats.requests
    io.bytes_read += r.open_stats.bytes_read
    return list(r.meta.super_types)


def joined(parts: Sequence[ScanResult], cols: list[str]) -> ScanResult:
    """The rows of ``parts`` one after another (a column whose types differ across
    parts becomes a union, as across the files of a dataset)."""
    stats = ScanStats()
    for p in parts:
        _add(stats, p.stats)
    if len(parts) == 1:
        return ScanResult(dict(parts[0].columns), parts[0].num_rows, stats, None)
    counts = [p.num_rows for p in parts]
    ids = np.repeat(np.arange(len(parts), dtype=np.int32), counts)
    out = {c: A.combine([p.columns[c] for p in parts], ids) if parts
           else A.null_array(NULL, 0) for c in cols}
    return ScanResult(out, int(sum(counts)), stats, None)


def _needed(o: SourceObject) -> int:
    return o.size if o.runs is None else sum(n for _, n in o.runs)


def _add(total: ScanStats, s: ScanStats) -> None:
    total.requests += s.requests
    total.bytes_read += s.bytes_read
    if total.ttfb is None:
        total.ttfb = s.ttfb


# ------------------------------------------------------------------- keys ---
def key_values(a: A.Array) -> list[Value | None]:
    """The keys of a column as Values of their own types (None: null), for Zed's order."""
    vals = a.to_pylist()
    u = underlying(a.type)
    if isinstance(a, A.UnionArray) and isinstance(u, UnionType):
        tags = np.asarray(a.tags).tolist()
        return [None if v is None or t < 0 else Value(u.types[t], v)
                for v, t in zip(vals, tags, strict=True)]
    t: Type = a.type
    return [None if v is None else Value(t, v) for v in vals]


def _int_keys(a: A.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """(int64 keys, null mask) of an int, time or duration column, else None."""
    u = underlying(a.type)
    if not (isinstance(a, A.PrimitiveArray) and isinstance(u, PrimitiveType)
            and u.name in _INT_KEYS):
        return None
    keys = np.asarray(a.values).astype(np.int64, copy=False)
    null = np.zeros(len(a), bool) if a.validity is None else ~np.asarray(a.validity)
    return keys, null


def merge_ids(keys: Sequence[A.Array], order: str) -> np.ndarray:
    """Which part each merged row comes from (``A.combine``'s IDs) when parts, each in
    pool-key order, are merged as ``heapq.merge`` merges them: by Zed's order of the
    key, ties in part order, nulls last ascending (first descending)."""
    part = np.repeat(np.arange(len(keys), dtype=np.int32), [len(k) for k in keys])
    fast = [_int_keys(k) for k in keys]
    fams = {family(k.type) for k, f in zip(keys, fast, strict=True)
            if f is not None and not f[1].all()}
    if all(f is not None for f in fast) and len(fams) <= 1:
        ks = np.concatenate([f[0] for f in fast if f is not None]) if keys else \
            np.zeros(0, np.int64)
        null = np.concatenate([f[1] for f in fast if f is not None]) if keys else \
            np.zeros(0, bool)
        if order == "desc":  # nulls first, then keys descending (ranks: no overflow)
            _, rank = np.unique(ks, return_inverse=True)
            perm = np.lexsort((-rank.astype(np.int64), ~null))
        else:
            perm = np.lexsort((ks, null))
        return part[perm]
    vals = [v for k in keys for v in key_values(k)]
    perm_list = sorted(range(len(vals)), key=lambda i: sort_key(vals[i]),
                       reverse=order == "desc")  # (stable either way: ties keep part order)
    return part[np.asarray(perm_list, np.int64)] if perm_list else part


def in_range(a: A.Array, kr: KeyRange) -> np.ndarray:
    """Which keys of a column Zed's order puts in the range (a null key in none)."""
    return np.fromiter((kr.contains(v) for v in key_values(a)), bool, count=len(a))
