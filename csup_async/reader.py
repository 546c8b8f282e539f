"""The reader: one tail read for metadata, a planned set of ranged reads per scan.

``open`` fetches the trailer and, in the common case, the whole reassembly
section with one suffix request; ``scan`` asks the planner which byte ranges a
projection needs, fetches them concurrently under a limit, pinned to the
version the tail read saw, and reassembles columns in a worker thread so the
event loop stays free.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import planner as P

from . import arrays as A
from . import parallel
from .assemble import StreamSource, assemble, assemble_path
from .cursor import Int32Cursor, SegmentFeed, path_cursor
from .errors import ColumnNotFoundError, CsupError, FormatError, LimitError
from .format import find_trailer, parse_reassembly
from .meta import FileMeta
from .rangebuf import RangeBuffer
from .stores import Store, TailRead, redact_url, shared_store, store_for
from .values import Value

DEFAULT_CONCURRENCY = 16
# Parsing metadata costs about 3 us a byte: 16 MiB bounds a hostile open to ~1 min of CPU
# while holding the column trees of files with hundreds of thousands of segments.
DEFAULT_MAX_METADATA = 16 << 20


@dataclass
class ScanStats:
    """What one scan cost: requests and bytes at the store, and time."""

    requests: int = 0
    bytes_read: int = 0
    bytes_needed: int = 0
    ttfb: float | None = None  # seconds to the first response byte of the scan's first read
    wall: float = 0.0
    metadata_requests: int = 0

    def __str__(self) -> str:
        amp = self.bytes_read / self.bytes_needed if self.bytes_needed else 1.0
        ttfb = f"{self.ttfb * 1000:.1f} ms" if self.ttfb is not None else "-"
        return (f"{self.requests} requests, {self.bytes_read:,} bytes read for "
                f"{self.bytes_needed:,} needed ({amp:.2f}x), first byte {ttfb}, "
                f"wall {self.wall * 1000:.1f} ms")


@dataclass
class ScanResult:
    """The columns a scan asked for, in file row order."""

    columns: dict[str, A.Array]
    num_rows: int
    stats: ScanStats = field(default_factory=ScanStats)
    plan: Any = None

    def column(self, path: str | tuple[str, ...]) -> A.Array:
        """The column at ``path``, in any spelling (``"`a`"`` and ``("a",)`` find ``"a"``)."""
        try:
            return self.columns[P.format_path(path if isinstance(path, tuple)
                                              else P.parse_path(path))]
        except KeyError:
            raise ColumnNotFoundError(f"column {path!r} was not part of this scan") from None

    def to_pylist(self) -> list[dict[str, Any]]:
        """One dict per row keyed by the requested paths (None where null or absent)."""
        cols = {p: a.to_pylist() for p, a in self.columns.items()}
        return [{p: cols[p][i] for p in cols} for i in range(self.num_rows)]

    def to_numpy(self) -> dict[str, Any]:
        return {p: a.to_numpy() for p, a in self.columns.items()}

    def to_arrow(self) -> Any:
        try:
            import pyarrow as pa
        except ImportError:
            raise CsupError("to_arrow() needs pyarrow: pip install 'csup-async[arrow]'") from None
        return pa.table({p: a.to_arrow() for p, a in self.columns.items()})

    def __len__(self) -> int:
        return self.num_rows


class Reader:
    """An open CSUP object: its metadata, and scans of it."""

    def __init__(self, store: Store, key: str, *, owns_store: bool, profile: Any = "local",
                 concurrency: int = DEFAULT_CONCURRENCY, max_metadata: int | None = None,
                 max_mem_length: int = 256 << 20, max_rows: int | None = None,
                 max_values: int | None = None, metadata_cache: Any = None,
                 immutable: bool = False) -> None:
        self.store = store
        self.key = key
        self.path = redact_url(key)  # what errors and reprs show: never a signed query
        self._owns_store = owns_store
        self.profile = P.get_profile(profile)
        self.concurrency = concurrency
        self.max_metadata = max_metadata or DEFAULT_MAX_METADATA
        self.max_mem_length = max_mem_length
        self.max_rows = max_rows  # None: assemble.DEFAULT_MAX_ROWS
        self.max_values = max_values  # None: assemble.DEFAULT_MAX_VALUES
        self.meta: FileMeta
        self.tail: TailRead
        self._extra: list[tuple[int, bytes]] = []
        self.open_stats = ScanStats()
        self.metadata_cache = _metadata_cache(metadata_cache)
        self.immutable = bool(immutable)
        if self.immutable and self.metadata_cache is None:
            raise CsupError("immutable=True needs a metadata_cache (a MetadataCache, or True "
                            "for the process's default)")
        self._counted_rows: int | None = None

    # ---------------------------------------------------------------- open ---
    def _cache_ident(self) -> tuple[Any, ...]:
        """Which object this is *for this store*: the store's scope (its kind and options,
        credentials included, or the store instance) and the key.  Two stores with
        different credentials never share an entry: with ``immutable=True`` a hit
        costs no request, so it must not let one caller see what only another may."""
        return (_cache_scope(self.store), self.key)

    def _use_cached(self, hit: Any, tail: TailRead, t0: float) -> None:
        self.meta = hit.meta
        self.tail = tail
        self._extra = list(hit.extra)
        self.open_stats.wall = time.perf_counter() - t0
        self.open_stats.metadata_requests = self.open_stats.requests

    async def _load(self) -> None:
        t0 = time.perf_counter()
        cache = self.metadata_cache
        if cache is not None and self.immutable:
            hit = cache.get(self._cache_ident())
            if hit is not None:  # no request at all: the version seen before is the one now
                self._use_cached(hit, hit.tail, t0)
                return
        size = P.tail_prefetch_size(self.profile)
        tail = await self.store.read_tail(self.key, size)
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
        try:
            trailer = find_trailer(tail.data, obj_size)
            start = trailer.data_size
            end = start + trailer.reassembly_size
            if trailer.reassembly_size > self.max_metadata:
                from .errors import LimitError

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
            self.meta = parse_reassembly(section, trailer, obj_size,
                                         max_metadata=self.max_metadata)
        except CsupError as e:
            raise e.with_path(self.path) from None
        self.open_stats.wall = time.perf_counter() - t0
        self.open_stats.metadata_requests = self.open_stats.requests
        if cache is not None:
            from .metacache import CachedMetadata

            cache.put(self._cache_ident(), CachedMetadata(self.meta, tail, tuple(self._extra)))

    # -------------------------------------------------------------- schema ---
    @property
    def schema(self) -> Schema:
        return Schema(self.meta)

    @property
    def num_rows(self) -> int | None:
        """Rows in the object when known: from metadata with one super type; with several
        (IDs are varints of unknown width), once :meth:`count_rows` has read the super
        column; None until then."""
        n = self.meta.row_count
        return n if n is not None else self._counted_rows

    async def count_rows(self) -> int:
        """Rows in the object: from metadata, or by reading only the super column."""
        n = self.num_rows
        if n is not None:
            return n
        buf = RangeBuffer()
        buf.add(self.tail.offset, self.tail.data)
        segs = [s for s in self.meta.super_column
                if s.length and not buf.covers(s.offset, s.length)]
        reqs = P.coalesce([(s.offset, s.length) for s in segs], self.profile) if segs else ()
        sem = asyncio.Semaphore(self.concurrency)
        stats = ScanStats()
        datas = await _gather_or_cancel([self._read_request(r, sem, stats, time.perf_counter())
                                         for r in reqs])
        for r, d in zip(reqs, datas, strict=True):
            buf.add(r.offset, d)
        try:
            ids, _ = await asyncio.to_thread(self._super_ids, self._source(buf))
        except CsupError as e:
            raise e.with_path(self.path) from None
        self._counted_rows = int(ids.size)
        return self._counted_rows

    def _paths(self, columns: Sequence[str | tuple[str, ...]] | str | None) -> list[str]:
        """The canonical spellings of ``columns`` (``planner.parse_columns``, the one
        column-list parser); None or [] = every top-level column (``""`` for the
        rows of a super type that is not a record)."""
        parsed = P.parse_columns(columns)
        if parsed is not None:
            return [spelling for spelling, _ in parsed]
        return P.top_level_paths(self.meta.super_types)

    # ---------------------------------------------------------------- plan ---
    async def plan(self, columns: Sequence[str] | str | None = None) -> Any:
        """The ScanPlan that ``scan(columns)`` will execute."""
        return self._plan(self._paths(columns))

    def _plan(self, paths: list[str]) -> Any:
        plan = P.plan_scan(self.meta, paths or None, self.profile,
                           available=(self.tail.offset, len(self.tail.data)))
        missing = [p for p in paths if p in set(plan.missing_paths)]
        if missing:
            raise ColumnNotFoundError(
                f"no super type has column {', '.join(map(repr, missing))}; "
                f"columns: {P.describe_paths(self.meta.super_types)}", path=self.path)
        return plan

    # ---------------------------------------------------------------- scan ---
    async def _fetch(self, plan: Any, stats: ScanStats,
                     early: dict[Any, Any] | None = None) -> RangeBuffer:
        """Fetch the plan's requests concurrently; with ``early``, decompress as bytes land.

        Each response body is consumed as a stream; the moment a compressed
        segment's last byte arrives, its decompression starts in a worker
        thread (LZ4 releases the GIL), overlapping the reads still in flight.
        ``early`` receives segment -> future of its decompressed bytes.
        """
        buf = RangeBuffer()
        buf.add(self.tail.offset, self.tail.data)
        for off, data in self._extra:
            buf.add(off, data)
        todo = [r for r in plan.requests if not getattr(r, "served", False)]
        sem = asyncio.Semaphore(self.concurrency)
        t0 = time.perf_counter()

        async def one(r: Any) -> tuple[int, bytes | bytearray]:
            if early is None or not hasattr(self.store, "stream_range"):
                return r.offset, await self._read_request(r, sem, stats, t0)
            return r.offset, await self._stream_request(r, sem, stats, t0, early)

        try:
            results = await _gather_or_cancel([one(r) for r in todo])
        except BaseException:
            for f in (early or {}).values():
                f.cancel()
            raise
        for off, data in results:
            buf.add(off, data)
        stats.requests = len(todo)
        stats.bytes_read = sum(r.length for r in todo)
        stats.bytes_needed = plan.bytes_needed
        return buf

    async def _stream_request(self, r: Any, sem: asyncio.Semaphore, stats: ScanStats,
                              t0: float, early: dict[Any, Any]) -> bytearray:
        loop = asyncio.get_running_loop()
        inside = sorted((s for s in r.segments if s.compression and s.offset >= r.offset
                         and s.end <= r.end), key=lambda s: s.end)
        data = bytearray(r.length)
        pos = 0
        k = 0
        async with sem:
            chunks = self.store.stream_range(self.key, r.offset, r.length,
                                             self.tail.info.version)
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    if stats.ttfb is None:
                        stats.ttfb = time.perf_counter() - t0
                    n = len(chunk)
                    if pos + n > r.length:
                        raise FormatError(f"store returned more than the {r.length}-byte "
                                          "range", path=self.path)
                    data[pos : pos + n] = chunk
                    pos += n
                    while k < len(inside) and inside[k].end - r.offset <= pos:
                        seg = inside[k]
                        k += 1
                        if seg not in early:
                            raw = bytes(data[seg.offset - r.offset : seg.end - r.offset])
                            early[seg] = loop.run_in_executor(
                                None, _decompress, raw, seg, self.max_mem_length)
        if pos != r.length:
            raise FormatError(f"store returned {pos} bytes for a {r.length}-byte range",
                              path=self.path)
        return data

    async def _read_request(self, r: Any, sem: asyncio.Semaphore, stats: ScanStats,
                            t0: float) -> bytes:
        async with sem:
            data = await self.store.read_range(self.key, r.offset, r.length,
                                               self.tail.info.version)
        if stats.ttfb is None:
            stats.ttfb = time.perf_counter() - t0
        if len(data) != r.length:
            raise FormatError(f"store returned {len(data)} bytes for a "
                              f"{r.length}-byte range", path=self.path)
        return data

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           batch_rows: int = 65536, prefetch: int | None = None
                           ) -> AsyncIterator[ScanResult]:
        """Scan in batches of ``batch_rows`` rows with bounded memory.

        Segments are fetched as the batches need them (``prefetch`` requests
        ahead, in file order; default ``concurrency``) and dropped once decoded,
        so memory holds about one segment per column, the read window and one
        batch; not the result.  ``prefetch=0`` reads only what each batch needs
        (a caller that may stop after the first rows).
        """
        if batch_rows < 1:
            raise CsupError("batch_rows must be at least 1")
        t0 = time.perf_counter()
        paths = self._paths(columns)
        plan = self._plan(paths)
        stats = ScanStats(bytes_needed=plan.bytes_needed)
        avail = RangeBuffer()
        avail.add(self.tail.offset, self.tail.data)
        for off, data in self._extra:
            avail.add(off, data)
        sem = asyncio.Semaphore(self.concurrency)

        async def fetch(r: Any) -> bytes:
            data = await self._read_request(r, sem, stats, t0)
            stats.requests += 1
            stats.bytes_read += len(data)
            return data

        feed = SegmentFeed(asyncio.get_running_loop(), plan, avail, fetch,
                           window=self.concurrency if prefetch is None else max(prefetch, 0),
                           max_mem_length=self.max_mem_length,
                           max_rows=self.max_rows)
        meta = self.meta
        n_types = len(meta.super_types)
        try:
            ids_cursor = Int32Cursor(meta.super_column, feed) if n_types > 1 else None
            cursors = {p: [path_cursor(t, c, P.parse_path(p), feed)
                           for t, c in zip(meta.super_types, meta.columns, strict=True)]
                       for p in paths}
        except CsupError as e:
            raise e.with_path(self.path) from None
        remaining = meta.row_count if n_types == 1 else None

        def next_batch() -> tuple[dict[str, A.Array], int] | None:
            nonlocal remaining
            if n_types == 0:
                return None
            if ids_cursor is None:
                assert remaining is not None
                n = min(batch_rows, remaining)
                remaining -= n
                ids = np.zeros(n, np.int32)
            else:
                ids = ids_cursor.take(batch_rows, exact=False)
                n = len(ids)
                if n and (ids.min() < 0 or ids.max() >= n_types):
                    raise FormatError("super column holds an ID out of range")
            if n == 0:
                return None
            counts = np.bincount(ids, minlength=n_types)
            cols = {p: A.combine([c.take(int(k)) if c is not None else None
                                  for c, k in zip(cs, counts, strict=True)], ids)
                    for p, cs in cursors.items()}
            return cols, n

        try:
            while True:
                try:
                    got = await asyncio.to_thread(next_batch)
                except CsupError as e:
                    raise e.with_path(self.path) from None
                if got is None:
                    break
                stats.wall = time.perf_counter() - t0
                yield ScanResult(got[0], got[1], stats, plan)
        finally:
            feed.cancel()

    async def execute(self, plan: Any, columns: Sequence[str] | str | None = None
                      ) -> ScanResult:
        """Run a plan made elsewhere (a Spark driver) for these columns: no re-planning."""
        got = await parallel.try_scan(self, columns, plan=plan)
        if got is not None:
            return got
        t0 = time.perf_counter()
        paths = self._paths(columns)
        stats = ScanStats()
        early: dict[Any, Any] = {}
        buf = await self._fetch(plan, stats, early)
        ready = await _settle(early)
        cols, n = await asyncio.to_thread(self._assemble_paths, buf, paths, ready)
        stats.wall = time.perf_counter() - t0
        return ScanResult(cols, n, stats, plan)

    async def scan(self, columns: Sequence[str] | str | None = None) -> ScanResult:
        """Read the columns at these dotted paths (all top-level columns when None).

        Flat projections (top-level primitive fields of a single-type file,
        the common wide-table case) go to :func:`parallel.try_scan`, which
        decodes each segment in a thread pool the moment its bytes land;
        everything else is fetched, then assembled here.
        """
        got = await parallel.try_scan(self, columns)
        if got is not None:
            return got
        return await self._scan_assembled(columns)

    async def _scan_assembled(self, columns: Sequence[str] | str | None = None) -> ScanResult:
        """``scan`` without the flat fast path: fetch everything, then assemble (the
        reference the fast path is tested against)."""
        t0 = time.perf_counter()
        paths = self._paths(columns)
        plan = self._plan(paths)
        stats = ScanStats()
        early: dict[Any, Any] = {}
        buf = await self._fetch(plan, stats, early)
        ready = await _settle(early)
        cols, n = await asyncio.to_thread(self._assemble_paths, buf, paths, ready)
        stats.wall = time.perf_counter() - t0
        return ScanResult(cols, n, stats, plan)

    def _source(self, buf: RangeBuffer, ready: dict[Any, Any] | None = None) -> StreamSource:
        return StreamSource(lambda s: buf.get(s.offset, s.length),
                            max_mem_length=self.max_mem_length, decompressed=ready or {},
                            max_rows=self.max_rows, max_values=self.max_values)

    def _super_ids(self, src: StreamSource) -> tuple[np.ndarray, list[int]]:
        meta = self.meta
        n_types = len(meta.super_types)
        if n_types == 1:
            count = meta.row_count or 0
            if count > src.max_rows:
                raise LimitError(f"the file claims {count} rows, over max_rows={src.max_rows}")
            return np.zeros(count, np.int32), [count]
        if n_types == 0:
            return np.zeros(0, np.int32), []
        ids = src.int32s(meta.super_column, None)
        if ids.size and (ids.min() < 0 or ids.max() >= n_types):
            raise FormatError(f"super column holds an ID outside 0..{n_types - 1}")
        return ids, [int(c) for c in np.bincount(ids, minlength=n_types)]

    def _assemble_paths(self, buf: RangeBuffer, paths: list[str],
                        ready: dict[Any, Any] | None = None
                        ) -> tuple[dict[str, A.Array], int]:
        try:
            src = self._source(buf, ready)
            ids, counts = self._super_ids(src)
            out = {}
            for p in paths:
                comps = P.parse_path(p)
                parts = [assemble_path(t, c, k, comps, src) for t, c, k in zip(
                    self.meta.super_types, self.meta.columns, counts, strict=True)]
                out[p] = A.combine(parts, ids)
            return out, int(ids.size)
        except CsupError as e:
            raise e.with_path(self.path) from None

    def _assemble_rows(self, buf: RangeBuffer) -> tuple[A.Array, np.ndarray]:
        try:
            src = self._source(buf)
            ids, counts = self._super_ids(src)
            parts = [assemble(t, c, k, src) for t, c, k in zip(
                self.meta.super_types, self.meta.columns, counts, strict=True)]
            return A.combine(parts, ids), ids
        except CsupError as e:
            raise e.with_path(self.path) from None

    async def _all(self) -> tuple[A.Array, np.ndarray]:
        plan = P.plan_scan(self.meta, None, self.profile,
                           available=(self.tail.offset, len(self.tail.data)))
        buf = await self._fetch(plan, ScanStats())
        return await asyncio.to_thread(self._assemble_rows, buf)

    async def read_rows(self) -> list[Any]:
        """Every value of the file in order, in the documented Python mapping."""
        arr, _ = await self._all()
        return arr.to_pylist()

    async def read_values(self) -> list[Value]:
        """Every value with its exact super type (unions inside as UnionValue)."""
        arr, ids = await self._all()
        types = self.meta.super_types
        typed = arr.to_pylist(typed=True)
        if len(types) == 1:
            return [Value(types[0], v) for v in typed]
        # several super types: combine() put rows in a union of the super types
        return [Value(types[i], v.value if isinstance(v, A.UnionValue) else v)
                for i, v in zip(ids.tolist(), typed, strict=True)]

    async def close(self) -> None:
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _decompress(raw: bytes, seg: Any, max_mem_length: int) -> bytes | memoryview:
    from .decode import decompress_segment

    return decompress_segment(raw, seg, max_mem_length=max_mem_length)


async def _settle(early: dict[Any, Any]) -> dict[Any, Any]:
    """The early decompressions' results; a failed one is left for assembly to redo and report."""
    out = {}
    for seg, fut in early.items():
        with contextlib.suppress(CsupError):
            out[seg] = await fut
    return out


async def _gather_or_cancel(coros: list[Any]) -> list[Any]:
    """Run all; on the first failure cancel the rest and wait for them (no task left behind)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class Schema:
    """The super types and column tree of a file, printable."""

    def __init__(self, meta: FileMeta) -> None:
        self.meta = meta
        self.super_types = meta.super_types

    def __str__(self) -> str:
        from .inspect import describe_schema

        return describe_schema(self.meta)

    def __repr__(self) -> str:
        return f"<Schema {len(self.super_types)} super types>"


def reader_from_meta(url: str, meta: FileMeta, version: str | None, *,
                     store: Store | None = None,
                     available: Sequence[tuple[int, bytes]] = (), **options: Any) -> Reader:
    """A reader over metadata loaded elsewhere (a Spark driver): no metadata request.

    Reads stay pinned to ``version``, the one the driver's tail read saw, so
    an object replaced since planning gives ObjectChangedError, not mixed data.
    ``available`` is ``(offset, bytes)`` of the object the caller already holds
    (the driver's tail read shipped with a partition): requests they cover are
    served from them, so a small file costs no request at all.
    """
    from .stores import ObjectInfo

    owns = store is None
    store_opts = {k: v for k, v in options.items() if k not in _READER_OPTIONS}
    reader_opts = {k: v for k, v in options.items() if k not in store_opts}
    if store is None:
        store, url = store_for(url, **store_opts)
    reader_opts.setdefault("profile", getattr(store, "default_profile", "local"))
    r = Reader(store, url, owns_store=owns, **reader_opts)
    r.meta = meta
    r.tail = TailRead(b"", ObjectInfo(meta.object_size, version))
    r._extra = list(available)
    return r


_scopes = itertools.count()


def _cache_scope(store: Any) -> Any:
    """The metadata-cache scope of ``store``: set by the shared-store registry (kind and
    options), else unique to this store instance for the life of the process."""
    scope = getattr(store, "_cache_scope", None)
    if scope is None:
        scope = ("instance", next(_scopes))
        try:
            store._cache_scope = scope
        except AttributeError:  # a store that takes no attributes: it cannot share entries
            return ("uncached", id(store), next(_scopes))
    return scope


def _metadata_cache(option: Any) -> Any:
    """The MetadataCache an option names: None/False none, True the process's default."""
    if option is None or option is False:
        return None
    from .metacache import MetadataCache, default_cache

    if option is True:
        return default_cache()
    if not isinstance(option, MetadataCache):
        raise CsupError(f"metadata_cache must be a MetadataCache or True, not "
                        f"{type(option).__name__}")
    return option


_READER_OPTIONS = ("profile", "concurrency", "max_metadata", "max_mem_length", "max_rows",
                   "max_values", "metadata_cache", "immutable")


class _Opener:
    """What ``open`` returns: awaitable, or an async context manager that closes."""

    def __init__(self, url: str, store: Store | None, options: dict[str, Any]) -> None:
        self.url, self.store, self.options = url, store, options
        self.reader: Reader | None = None

    async def _open(self) -> Reader:
        store, key, owns = self.store, self.url, False
        store_opts = {k: v for k, v in self.options.items() if k not in _READER_OPTIONS}
        reader_opts = {k: v for k, v in self.options.items() if k not in store_opts}
        if store is None:
            # shared per loop and options; private (owned) only when it cannot be shared
            store, key, shared = await shared_store(self.url, **store_opts)
            owns = not shared
        if "profile" not in reader_opts:
            reader_opts["profile"] = getattr(store, "default_profile", "local")
        r = Reader(store, key, owns_store=owns, **reader_opts)
        try:
            await r._load()
        except BaseException:
            await r.close()
            raise
        self.reader = r
        return r

    def __await__(self) -> Generator[Any, None, Reader]:
        return self._open().__await__()

    async def __aenter__(self) -> Reader:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        if self.reader is not None:
            await self.reader.close()


def open(url: str, *, store: Store | None = None, **options: Any) -> _Opener:
    """Open a CSUP object: ``async with open(url) as r`` or ``r = await open(url)``.

    ``store`` is the store to read through (the caller closes it); without
    one, the event loop's shared store for the URL's kind and these options
    is used (made on first use, closed by ``close_stores()``, at the end of
    ``asyncio.run`` or at exit; never by the reader).  Options:
    ``profile`` (planner profile), ``concurrency``, ``max_metadata``,
    ``max_mem_length``, ``metadata_cache`` (a MetadataCache, or True for the
    process's: metadata parsed before is reused for the same object version),
    ``immutable`` (with a cache: an object opened before is not asked again),
    and the store's own options (``timeout``, credentials, ...).
    """
    return _Opener(url, store, options)
