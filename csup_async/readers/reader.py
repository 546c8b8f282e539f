"""The reader: one tail read for metadata, a planned set of ranged reads per scan.

``open`` fetches the trailer and, in the common case, the whole reassembly
section with one suffix request; ``scan`` asks the planner which byte ranges a
projection needs and hands the plan to the read pipeline (:mod:`csup_async.scan`),
which fetches it pinned to the version the tail read saw and decodes segments
off the event loop as they land.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.calibration import Calibration
from planner.coalescing import plan_ranges
from planner.dnf import as_expr
from planner.program import ScanProgram

from .. import arrays as A
from .. import scan as R
from ..format.csup import find_trailer, parse_reassembly
from ..format.meta import FileMeta
from ..format.superdb.v23 import is_v23_tail
from ..model.errors import (
    ArgumentError,
    ColumnNotFoundError,
    CsupError,
    FormatError,
    RowSelectionError,
)
from ..model.progress import Meter, Planned, metered, tracking
from ..model.values import Value
from ..scan.fetch import Target, off_loop, piece_figures
from ..scan.options import (
    DEFAULT_CONCURRENCY,
    Limits,
    ReadOptions,
    split_options,
)
from ..scan.result import ScanResult, ScanStats, row_indices
from ..stores import Store, TailRead, redact_url, store_for
from ..stores.calibrate import Measurements
from ..stores.capabilities import profile_of
from ..stores.rangebuf import RangeBuffer
from .detect import HeaderLayout, is_header_layout
from .detect import probe as probe_header_layout

__all__ = ["Reader", "ScanResult", "ScanStats", "Schema", "reader_from_meta"]
# Parsing metadata costs about 3 us a byte: 16 MiB bounds a hostile open to ~1 min of CPU
# while holding the column trees of files with hundreds of thousands of segments.
DEFAULT_MAX_METADATA = 16 << 20
_PLANS_KEPT = 32  # plans remembered per metadata (projections x profiles x warm counts)
#: A reader keeps the row map of a file of several super types (its decoded super
#: column, 8 bytes a row) up to this many rows; a larger one is read for each selection.
ROW_MAP_HELD = 1 << 22
#: Whether a reader of an object store (S3, GCS, HTTP: stores that measure their
#: requests) plans with the profile measured on its endpoint when ``calibrate`` is not
#: given; local files never do. bench/results/calibrate.md has the numbers behind it:
#: off until calibrated plans are measured no slower where the static profile is right
#: (on the s3 network 183 ms against 145 ms in the recorded run) and under a busy client,
#: which measures its own CPU wait as low bandwidth and would add connections and parts.
CALIBRATE_BY_DEFAULT = False


class Reader:
    """An open CSUP object: its metadata, and scans of it."""

    @property
    def profile(self) -> P.Profile:
        """The profile plans assume: the static one, calibrated from measured requests."""
        m = self.measurements
        if not self.calibrate or m is None:
            return self.static_profile
        return m.profile(self.static_profile)

    @property
    def measurements(self) -> Measurements | None:
        """The process's recent requests to this object's endpoint (None: the store
        measures nothing, as local files)."""
        of = getattr(self.store, "measurements_of", None)
        m = of(self.key) if callable(of) else None
        return m if isinstance(m, Measurements) else None

    def calibration(self) -> Calibration | None:
        """The static profile, the one measured on the endpoint and which plans assume."""
        m = self.measurements
        if m is None:
            return None
        measured = m.profile(self.static_profile)
        return Calibration(self.static_profile, measured, len(m.samples), m.endpoint,
                           self.calibrate)

    @profile.setter
    def profile(self, value: P.Profile) -> None:
        self.static_profile = value

    def __init__(self, store: Store, key: str, *, owns_store: bool, profile: Any = "local",
                 concurrency: int | None = None, max_metadata: int | None = None,
                 max_mem_length: int = 256 << 20, max_rows: int | None = None,
                 max_values: int | None = None, timeout: float | None = None,
                 metadata_cache: Any = None, immutable: bool = False,
                 verify_checksums: bool = True, trust_counts: bool = False,
                 verify_counts: bool = False, calibrate: bool | None = None) -> None:
        self.store = store
        self.key = key
        self.path = redact_url(key)  # what errors and reprs show: never a signed query
        self._owns_store = owns_store
        self.static_profile = P.get_profile(profile)
        # plan with latency/bandwidth measured on this store's endpoint once it has enough
        # requests (planner.calibration); False: always the static profile; None: the
        # default for the store (on for object stores, which measure; off for local files)
        if calibrate is None:
            calibrate = CALIBRATE_BY_DEFAULT and callable(getattr(store, "measurements_of",
                                                                  None))
        self.calibrate = bool(calibrate)
        # None: DEFAULT_CONCURRENCY, or more when the profile plans more connections
        self._concurrency_given = concurrency is not None
        self.concurrency = DEFAULT_CONCURRENCY if concurrency is None else concurrency
        self.max_metadata = max_metadata or DEFAULT_MAX_METADATA
        self.max_mem_length = max_mem_length
        self.max_rows = max_rows  # None: read.options.DEFAULT_MAX_ROWS when a read starts
        self.max_values = max_values  # None: read.options.DEFAULT_MAX_VALUES
        self.timeout = timeout  # seconds one scan/iter_batches/read_rows/count_rows may take
        self.verify_checksums = bool(verify_checksums)  # segments' crc32 checked on read
        # row selection reads only the segments holding the rows, each checked against
        # its count, every column's counts against its rows (pipeline.selection.plan_rows)
        # trust_counts: skip the totals check too; verify_counts: decode and check every
        # segment before a selected row as well (counts shifted between unread segments)
        self.trust_counts = bool(trust_counts)
        self.verify_counts = bool(verify_counts)
        if self.trust_counts and self.verify_counts:
            raise CsupError("trust_counts=True and verify_counts=True contradict each other")
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
        self._rowmap: Any = None  # several super types: the row map read (RowMap)
        # plans made for this metadata (shared with its metadata-cache entry), see _plan
        self._plans: dict[Hashable, P.ScanPlan] = {}

    # ---------------------------------------------------------------- open ---
    def _cache_ident(self) -> tuple[Any, ...]:
        """Which object this is *for this store*: the store's scope (its kind and options,
        credentials included, or the store instance) and the key.  Two stores with
        different credentials never share an entry: with ``immutable=True`` a hit
        costs no request, so it must not let one caller see what only another may."""
        return (_cache_scope(self.store), cache_key(self.store, self.key))

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
        unless = getattr(self.store, "read_tail_unless", None)
        prior = cache.peek(self._cache_ident()) if callable(unless) else None
        if prior is None or prior.version is None or not callable(unless):
            return self.store.read_tail(self.key, P.tail_prefetch_size(self.profile))
        tail = await unless(self.key, P.tail_prefetch_size(self.profile), prior.version)
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
            pending = self.store.read_tail(self.key, P.tail_prefetch_size(self.profile))
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
                from ..model.errors import LimitError

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
            # a large section is parsed in the pool: the loop serves other requests
            self.meta = await off_loop(trailer.reassembly_size, functools.partial(
                parse_reassembly, max_metadata=self.max_metadata), section, trailer, obj_size)
        except CsupError as e:
            raise e.with_path(self.path) from None
        self.open_stats.wall = time.perf_counter() - t0
        self.open_stats.metadata_requests = self.open_stats.requests
        if cache is not None:
            from ..stores.metacache import CachedMetadata

            entry = CachedMetadata(self.meta, tail, tuple(self._extra))
            cache.put(self._cache_ident(), entry)
            self._plans = entry.plans

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

    async def count_rows(self, *, max_requests: int | None = None,
                         max_bytes: int | None = None,
                         on_progress: Callable[[Any], object] | None = None) -> int:
        """Rows in the object: from metadata, or by reading only the super column
        (budget and progress as for :meth:`scan`: a count from metadata reads nothing)."""
        meter = metered(on_progress, max_requests, max_bytes, self.path)
        n = self.num_rows
        if n is not None:
            if meter is not None:
                fm = meter.file(self.path)
                fm.expect(0, 0)
                fm.done()
            return n
        plan = plan_ranges(list(self.meta.super_column), self.profile, self.held_span())
        with self._metering(meter, plan.request_count, plan.bytes_to_read):
            self._counted_rows = await R.count_rows(self.target(), self.meta, plan,
                                                    self.read_options)
        return self._counted_rows

    @contextlib.contextmanager
    def _metering(self, meter: Meter | None, requests: int, nbytes: int) -> Iterator[None]:
        """Run one planned read under ``meter``: its figures checked and expected first
        (a BudgetError before any request), the file done after."""
        if meter is None:
            yield
            return
        fm = meter.file(self.path)
        fm.expect(requests, nbytes)
        with tracking(fm):
            yield
        fm.done()

    async def type_counts(self) -> list[int]:
        """Rows of each super type, in ``meta.super_types`` order (one super type: from
        metadata; several: the super column is read)."""
        if len(self.meta.super_types) <= 1:
            return [await self.count_rows()] if self.meta.super_types else []
        plan = plan_ranges(list(self.meta.super_column), self.profile, self.held_span())
        counts = await R.type_counts(self.target(), self.meta, plan, self.read_options)
        self._counted_rows = int(counts.sum())
        return [int(c) for c in counts]

    def _paths(self, columns: Sequence[str | tuple[str, ...]] | str | None) -> list[str]:
        """The canonical spellings of ``columns`` (``planner.parse_columns``, the one
        column-list parser); None or [] = every top-level column (``""`` for the
        rows of a super type that is not a record)."""
        parsed = P.parse_columns(columns)
        if parsed is not None:
            return [spelling for spelling, _ in parsed]
        return P.top_level_paths(self.meta.super_types)

    # ---------------------------------------------------------------- plan ---
    async def plan(self, columns: Sequence[str] | str | None = None, *, filter: Any = None,
                   rows: slice | None = None, limit: int | None = None,
                   filters: Any = None) -> ScanProgram:
        """The scan ``scan(columns, ...)`` with the same arguments runs, planned: a
        ``planner.program.ScanProgram`` that ``explain()``s itself and that
        :meth:`execute` runs unchanged.  Nothing is read, except for a file of several
        super types with a row selection or a filter: its super column (the row map).
        ``filters=``: pyarrow's list form, as for :meth:`scan`."""
        filter = as_expr(filter, filters, path=self.path)  # text, or pyarrow's list
        paths = self._paths(columns)
        self._check_limit(limit)
        base = self._plan(paths)  # ColumnNotFoundError for a projected path no type has
        if filter is None and rows is None and limit is None:
            return ScanProgram("all", tuple(paths), base)
        ranges = await self._ranges(rows, None if filter is not None else limit)
        expr = self._filter_expr(filter) if filter is not None else None
        rowmap, cost = await self._row_map(ranges, expr is not None)
        setup = (0, 0, 0) if cost is None else (cost.requests, cost.bytes_read,
                                                cost.bytes_needed)
        if expr is None:
            from ..scan.selection import plan_rows

            cut, keep = plan_rows(self.meta, base, ranges, verify_counts=self.verify_counts,
                                  rowmap=rowmap)
            return ScanProgram("rows", tuple(paths), cut, ranges, rowmap=rowmap, keep=keep,
                               verify_counts=self.verify_counts, setup=setup)
        from ..scan.selection import plan_filter

        wanted = paths or self._paths(None)
        try:
            fplan, work = plan_filter(self.meta, expr, wanted, self.profile,
                                      self.held_span(), ranges, rowmap,
                                      base if wanted == paths else None)
        except CsupError as e:  # a filter that cannot apply, statistics that lie
            raise e.with_path(self.path) from None
        return ScanProgram("filter", tuple(wanted), fplan, ranges, limit, rowmap=rowmap,
                           work=work, setup=setup)

    def _check_limit(self, limit: Any) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise RowSelectionError(f"limit must be an integer >= 0, not {limit!r}",
                                    path=self.path)

    async def _ranges(self, rows: slice | None, limit: int | None) -> Any:
        """The row ranges ``rows=`` and ``limit=`` select (None: every row)."""
        from planner.selection import RowRanges, ranges_from_slice

        if rows is None and limit is None:
            return None
        try:
            if rows is not None:
                # the row count is needed only to resolve bounds from the end (a file of
                # several super types would read its super column for it): a read
                # stops at the end anyway
                n = self.num_rows
                if n is None and isinstance(rows, slice) and all(
                        v is None or (isinstance(v, int) and v >= 0)
                        for v in (rows.start, rows.stop)):
                    n = 1 << 62
                got = ranges_from_slice(rows, n if n is not None else await self.count_rows())
            else:
                n = self.num_rows
                got = RowRanges.of([(0, limit if n is None else min(limit, n))])
            return got if limit is None else got.first(limit)
        except RowSelectionError as e:
            raise e.with_path(self.path) from None

    async def _row_map(self, ranges: Any, whole: bool = False) -> tuple[Any, ScanStats | None]:
        """A file of several super types: which super type and index each selected row
        is (``planner.selection.RowMap``), and what reading it cost (None when held
        already); ``(None, None)`` with one super type or nothing selected.

        The super column is read whole, or only the segments holding rows ``[0, n)``
        when the selection is that prefix (``limit``) and its segments have ``count``.
        """
        if len(self.meta.super_types) <= 1 or (ranges is None and not whole):
            return None, None
        upto = None
        if not whole and ranges is not None and len(ranges) <= 1 and (
                not len(ranges) or ranges.starts[0] == 0):
            upto = ranges.end
        held = self._rowmap
        if held is not None and (held.complete or (upto is not None and len(held.ids) >= upto)):
            return held, None
        from ..scan.selection import read_row_map

        try:
            got, stats = await read_row_map(self.target(), self.meta, self.profile,
                                            self.held_span(), self.read_options, upto)
        except CsupError as e:
            raise e.with_path(self.path) from None
        if len(got.ids) <= ROW_MAP_HELD:
            self._rowmap = got
        if got.complete:
            self._counted_rows = len(got.ids)
        return got, stats

    def _warm(self) -> int:
        """Connections the store holds open: a request beyond them pays a connection's
        setup, which the planner weighs (0 for a store that does not say)."""
        warm = getattr(self.store, "warm_connections", None)
        n = warm() if callable(warm) else 0
        return n if isinstance(n, int) and n > 0 else 0

    def _plan(self, paths: list[str]) -> P.ScanPlan:
        # A plan is a pure function of the metadata and these: a service scanning the
        # same projection of one object (a long-lived reader, or open() per request with
        # the metadata cache) plans it once, not on the event loop of every request.
        key = (tuple(paths), self.profile, (self.tail.offset, len(self.tail.data)),
               self._warm())
        plan = self._plans.get(key)
        if plan is None:
            plan = P.plan_scan(self.meta, paths or None, key[1], available=key[2],
                               warm=key[3])
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            self._plans[key] = plan
        calibration = self.calibration()
        if calibration is not None:  # what explain() reports; the plan itself is the same
            plan = dataclasses.replace(plan, calibration=calibration)
        missing = [p for p in paths if p in set(plan.missing_paths)]
        if missing:
            raise ColumnNotFoundError(
                f"no super type has column {', '.join(map(repr, missing))}; "
                f"columns: {P.describe_paths(self.meta.super_types)}", path=self.path)
        return plan

    # ---------------------------------------------------------------- scan ---
    @property
    def read_options(self) -> ReadOptions:
        """How this reader's reads run (concurrency, caps, deadline)."""
        return ReadOptions(self._in_flight(), Limits.of(self.max_rows, self.max_values,
                                                       self.max_mem_length), self.timeout,
                           self.verify_checksums)

    def _in_flight(self) -> int:
        """Requests a scan keeps in flight: ``concurrency`` when given; else the default,
        or the profile's connections when it plans more (a calibrated profile of slow
        connections cuts a scan into more parts, to run them in one wave)."""
        if self._concurrency_given:
            return self.concurrency
        return max(self.concurrency, self.profile.concurrency)

    def held_span(self) -> tuple[int, int]:
        """``(offset, length)`` of the object's bytes the open already holds: the planner
        serves requests inside it without a request."""
        return (self.tail.offset, len(self.tail.data))

    def target(self) -> Target:
        """What a read of this object needs: the store, the key, the version the open saw
        (every read is pinned to it) and the bytes held."""
        held = ((self.tail.offset, self.tail.data), *self._extra)
        return Target(self.store, self.key, self.tail.info.version, self.path, held)

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Any = None, rows: slice | None = None,
                   limit: int | None = None, filters: Any = None,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """Read the columns at these dotted paths (all top-level columns when None).

        Every planned request is streamed at once (``concurrency`` in flight);
        each segment is decompressed and decoded in a thread pool the moment its
        bytes land, so decoding overlaps the transfer and uses every core.

        ``filter`` (a ``planner.filters`` expression such as ``col("id") == 7``, or
        its text form ``"id = 7"``) keeps the rows it is true for, in file order,
        with SQL's semantics (a null or absent field matches nothing).  Zones of rows
        whose segment statistics prove the filter false are not read; the filter is
        evaluated exactly on the rest; the other columns are read with the filter's
        (one round trip) or, when the avoided bytes pay for a round trip, afterwards
        for the selected rows only (``plan(columns, filter=...).explain()`` says which).

        ``rows=slice(a, b)`` (step 1, negative bounds from the end) reads only those
        rows, ``limit=n`` the first ``n`` (of ``rows``, or of the filter's matches);
        only the segments holding them are fetched.

        ``filters=`` takes pyarrow's list form (``[("a", ">", 3)]``, a list of lists
        for OR; :mod:`planner.dnf`), as ``filter=`` does.

        ``max_requests`` / ``max_bytes`` refuse, with a BudgetError, a scan whose plan
        needs more requests or bytes than that.  What is planned before anything is
        read (every scan's first wave) is refused before any data request; a filtered
        scan's second wave, planned from the first wave's matches, is refused before
        any of its requests is sent; a file of several super types with ``rows=`` or a
        filter reads its super column first (the row map), refused before it is sent
        when it alone is over.

        ``on_progress(Progress)`` is called with the bytes read against the bytes
        planned as they land: first at 0, monotonic, the total growing only when a
        wave is planned (a second wave, a row map), last exactly at the total.
        """
        filter = as_expr(filter, filters, path=self.path)  # text, or pyarrow's list
        self._check_limit(limit)
        meter = metered(on_progress, max_requests, max_bytes, self.path)
        if meter is None:
            return await self.execute(await self.plan(columns, filter=filter, rows=rows,
                                                      limit=limit))
        fm = meter.file(self.path)
        with tracking(fm):  # the row map's read, while planning, is claimed as a wave
            program = await self.plan(columns, filter=filter, rows=rows, limit=limit)
            fm.expect(*self.first_wave(program))
            result = await self.execute(program)
        fm.done()  # the last event: every byte and the one file done
        return result

    def first_wave(self, program: ScanProgram | P.ScanPlan) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`execute` sends first for ``program``, exactly
        (a filtered scan's second wave is planned from the first one's matches)."""
        if not isinstance(program, ScanProgram) or program.kind != "filter":
            plan = program.plan if isinstance(program, ScanProgram) else program
            return plan.request_count, plan.bytes_to_read
        work, fplan = program.work, program.plan
        if program.limit is not None and work.surviving is not None and work.full is not None:
            # read piece by piece until enough rows matched (pipeline.selection): each
            # piece is a wave of its own, checked (and totalled) before it is sent
            return 0, 0
        if work.surviving is not None and not work.surviving.rows:  # nothing survives
            from planner.selection import RowRanges

            plan = self._wave_plan(list(work.wanted), RowRanges(), work.rowmap,
                                   fplan.profile)
        elif work.first is None:  # no column to read: the rows' structure
            paths = (list(work.filter_paths) if fplan.two_waves else
                     list(dict.fromkeys([*work.wanted, *work.filter_paths])))
            plan = self._wave_plan(paths, work.surviving, work.rowmap, fplan.profile)
        else:
            plan = work.first[0]
        return plan.request_count, plan.bytes_to_read

    def _wave_plan(self, paths: list[str], ranges: Any, rowmap: Any,
                   profile: P.Profile) -> P.ScanPlan:
        """The plan ``pipeline.selection`` reads ``paths`` of ``ranges`` with."""
        plan = P.plan_scan(self.meta, paths, profile, available=self.held_span())
        if ranges is None:
            return plan
        from ..scan.selection import plan_rows

        return plan_rows(self.meta, plan, ranges, verify_counts=False, rowmap=rowmap)[0]

    async def take(self, indices: Any, columns: Sequence[str] | str | None = None, *,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Callable[[Any], object] | None = None) -> ScanResult:
        """The rows at ``indices`` (any order, repeats allowed), in the order given.

        Only the segments holding them are read (each once, however often a row
        is asked for).  Indices are row numbers from 0; a negative one, one past the
        end, or a non-integer is a :class:`RowSelectionError`.  Budget and progress as
        for :meth:`scan` with ``rows=``.
        """
        meter = metered(on_progress, max_requests, max_bytes, self.path)
        if meter is None:
            return await (await self.prepare_take(indices, columns)).run()
        fm = meter.file(self.path)
        with tracking(fm):  # the row map's read, while planning, is claimed as a wave
            planned = await self.prepare_take(indices, columns)
            fm.expect(*planned.figures)
            res = await planned.run()
        fm.done()
        return res

    async def prepare_take(self, indices: Any, columns: Sequence[str] | str | None = None
                           ) -> Planned:
        """:meth:`take`, planned (a file of several super types may read its row map):
        the ``(requests, bytes)`` it reads and ``run()``."""
        idx = row_indices(indices, self.path)
        paths = self._paths(columns)
        plan = self._plan(paths)
        n = self.num_rows  # None (several super types): known once the read has ended

        def out_of_range(n: int) -> RowSelectionError:
            bad = int(idx[idx >= n][0])
            return RowSelectionError(f"row index {bad} is out of range for {n} rows",
                                     path=self.path)

        if n is not None and idx.size and int(idx.max()) >= n:
            raise out_of_range(n)
        uniq, where = np.unique(idx, return_inverse=True)
        from ..scan.selection import plan_rows, run_rows, runs_of

        ranges = runs_of(uniq)
        rowmap, cost = await self._row_map(ranges)
        cut, keep = plan_rows(self.meta, plan, ranges, verify_counts=self.verify_counts,
                              rowmap=rowmap)

        async def run() -> ScanResult:
            try:
                got = await run_rows(self.target(), self.meta, cut, keep, paths, ranges,
                                     self.read_options, rowmap)
            except CsupError as e:
                raise e.with_path(self.path) from None
            res = _charged(got, cost)
            if res.num_rows != uniq.size:
                if n is None and res.total_rows is not None:
                    self._counted_rows = res.total_rows
                    raise out_of_range(res.total_rows)
                raise FormatError(f"read {res.num_rows} rows for {uniq.size} indices",
                                  path=self.path)
            same = (uniq.size == idx.size and bool((np.diff(idx) > 0).all())
                    if idx.size else True)
            cols = res.columns if same else {c: a.take(where) for c, a in res.columns.items()}
            return ScanResult(cols, int(idx.size), res.stats, res.plan)

        return Planned((cut.request_count, cut.bytes_to_read), run)

    def _filter_expr(self, filter: Any) -> Any:
        """The filter as an expression; ColumnNotFoundError when it names a path no super
        type of the file has (a misspelling would otherwise match nothing, silently: a
        path some super types have keeps SQL's semantics, no match where absent)."""
        from planner.filters import columns_of

        try:
            expr = as_expr(filter)
            columns_of(expr)  # FilterError for what is no filter
        except CsupError as e:
            raise e.with_path(self.path) from None
        from planner.pruning import type_has_path

        missing = [P.format_path(p) for p in dict.fromkeys(columns_of(expr))
                   if not any(type_has_path(t, p) for t in self.meta.super_types)]
        if missing:
            raise ColumnNotFoundError(
                f"the filter names {', '.join(map(repr, missing))}, which no super type "
                f"has; columns: {P.describe_paths(self.meta.super_types)}", path=self.path)
        return expr

    def _filter_columns(self, paths: list[str], filter: Any) -> tuple[Any, list[str], list[str]]:
        """``(expression, output paths, paths to read)``: the filter's columns are read
        with the projection (a path no super type has is null everywhere: not read)."""
        from planner.filters import columns_of

        expr = self._filter_expr(filter)
        wanted = paths or self._paths(None)
        extra = [P.format_path(p) for p in columns_of(expr)]
        extra = [p for p in dict.fromkeys(extra) if p not in wanted]
        if extra:
            absent = set(P.plan_scan(self.meta, extra, self.profile).missing_paths)
            extra = [p for p in extra if p not in absent]
        return expr, wanted, wanted + extra

    async def execute(self, plan: ScanProgram | P.ScanPlan,
                      columns: Sequence[str] | str | None = None) -> ScanResult:
        """Run a program from :meth:`plan` as planned, or a ScanPlan made elsewhere (a
        Spark driver) for these columns: no re-planning either way."""
        if not isinstance(plan, ScanProgram):
            return await R.scan_columns(self.target(), self.meta, plan,
                                        self._paths(columns), self.read_options)
        if columns is not None and plan.kind == "all":  # the plan's streams, these columns
            return await self.execute(plan.plan, columns)
        if columns is not None and self._paths(columns) != list(plan.columns):
            raise ArgumentError(f"this scan program reads {list(plan.columns)}, not "
                                f"{self._paths(columns)}: plan those columns", path=self.path)
        res = await self._run(plan)
        res.plan = plan  # what ran is what was planned: the program itself
        return res

    async def _run(self, plan: ScanProgram) -> ScanResult:
        paths = list(plan.columns)
        if plan.kind == "all":
            return await R.scan_columns(self.target(), self.meta, plan.plan, paths,
                                        self.read_options)
        cost = ScanStats(requests=plan.setup[0], bytes_read=plan.setup[1],
                         bytes_needed=plan.setup[2])
        if plan.kind == "rows":
            from ..scan.selection import run_rows

            try:
                res = await run_rows(self.target(), self.meta, plan.plan, plan.keep, paths,
                                     plan.ranges, self.read_options, plan.rowmap)
            except CsupError as e:
                raise e.with_path(self.path) from None
            return _charged(res, cost)
        from ..scan.selection import scan_filtered

        try:
            res = await scan_filtered(self.target(), self.meta, plan.plan, plan.work,
                                      self.read_options, self.held_span(), plan.limit)
        except CsupError as e:  # a filter that cannot apply, statistics that lie
            raise e.with_path(self.path) from None
        return _charged(res, cost)

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           batch_rows: int = 65536, prefetch: int | None = None,
                           filter: Any = None, filters: Any = None,
                           max_requests: int | None = None, max_bytes: int | None = None,
                           on_progress: Callable[[Any], object] | None = None
                           ) -> AsyncIterator[ScanResult]:
        """Scan in batches of ``batch_rows`` rows with bounded memory.

        The plan is fetched in 2 MiB pieces as the batches need them, ``prefetch``
        pieces ahead in file order (default: a 16 MiB window), and dropped once
        decoded; each column keeps its current segment's stream bytes and decodes
        only each batch's rows of it, so memory holds one segment's bytes per column,
        the window and one batch; not the result.  ``prefetch=0`` reads only what each batch
        needs and decodes nothing ahead (a caller that may stop after the first rows).

        ``filter`` (as for :meth:`scan`) is evaluated exactly on each batch: a batch
        holds only the rows it keeps, in file order (at most ``batch_rows``; a batch
        that keeps none is not yielded), and its columns are read even when not
        projected, then dropped.

        ``max_requests`` / ``max_bytes`` / ``on_progress`` as for :meth:`scan`, counting
        the requests this reads with (the plan's, cut in pieces of 2 MiB): the whole
        plan is checked before the first batch's request; a caller that stops early
        has read less than planned.  With a filter they read the streamed way (every
        zone, the filter evaluated per batch): the pruned read plans its pieces as it
        goes, so it could not be checked up front.
        """
        meter = metered(on_progress, max_requests, max_bytes, self.path)
        filter = as_expr(filter, filters, path=self.path)  # text, or pyarrow's list
        batch_rows = _check_count("batch_rows", batch_rows, 1, self.path)
        if prefetch is not None:
            prefetch = _check_count("prefetch", prefetch, 0, self.path)
        paths = self._paths(columns)
        expr, read = None, paths
        try:  # a filter that cannot parse or apply names the file, as scan's does
            if filter is not None:
                # Pruned batches are planned piece by piece as they are read, so a budget
                # could not be checked (nor progress totalled) before the first request:
                # with a meter, the streamed read below serves, its plan checked whole.
                pruned = (None if meter is not None else
                          await self._pruned_batches(paths, filter, batch_rows, prefetch))
                if pruned is not None:
                    async with contextlib.aclosing(pruned):
                        async for batch in pruned:
                            yield batch
                    return
                expr, paths, read = self._filter_columns(paths, filter)
            plan = self._plan(read)
            fm = None
            if meter is not None:
                fm = meter.file(self.path)
                fm.expect(*piece_figures(plan))
            batches = R.iter_batches(self.target(), self.meta, plan, read,
                                     self.read_options, batch_rows, prefetch=prefetch)
            async with contextlib.aclosing(batches):
                while True:
                    # (the read starts at the first step; without a meter of its own,
                    # a caller's, a dataset's, stays current)
                    with tracking(fm) if fm is not None else contextlib.nullcontext():
                        batch = await anext(batches, None)
                    if batch is None:
                        break
                    if expr is None:
                        yield batch
                        continue
                    kept = _matching(expr, batch, paths)
                    if kept.num_rows:
                        yield kept
            if fm is not None:
                fm.done()
        except CsupError as e:
            raise e.with_path(self.path) from None

    async def _pruned_batches(self, paths: list[str], filter: Any, batch_rows: int,
                              prefetch: int | None) -> AsyncIterator[ScanResult] | None:
        """Filtered batches that skip the zones the statistics rule out (each super type's
        by its own), as ``scan(filter=)`` does; None when they rule out nothing (the
        streamed read then serves, and the filter is evaluated on each batch)."""
        program = await self.plan(paths, filter=filter)
        work = program.work
        if work is None or work.surviving is None or not program.plan.rows_pruned:
            return None
        from ..scan.selection import iter_filtered

        setup = program.setup
        inner = iter_filtered(self.target(), self.meta, program.plan, work, self.read_options,
                              batch_rows, prefetch != 0)

        async def charged() -> AsyncIterator[ScanResult]:
            async with contextlib.aclosing(inner):
                async for batch in inner:
                    batch.stats.requests += setup[0]  # the row map read while planning
                    batch.stats.bytes_read += setup[1]
                    batch.stats.bytes_needed += setup[2]
                    batch.plan = program
                    yield batch

        return charged()

    def batch_figures(self, columns: Sequence[str] | str | None = None, *,
                      filter: Any = None) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`iter_batches` sends for these arguments (its
        plan's requests in pieces of 2 MiB), from metadata."""
        paths = self._paths(columns)
        if filter is not None:
            _, _, paths = self._filter_columns(paths, filter)
        return piece_figures(self._plan(paths))

    def whole_figures(self) -> tuple[int, int]:
        """``(requests, bytes)`` :meth:`read_rows` and :meth:`read_values` send."""
        plan = P.plan_scan(self.meta, None, self.profile, available=self.held_span())
        return plan.request_count, plan.bytes_to_read

    async def _all(self) -> tuple[A.Array, np.ndarray]:
        plan = P.plan_scan(self.meta, None, self.profile, available=self.held_span())
        return await R.read_rows(self.target(), self.meta, plan, self.read_options)

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
        self._keep_measurements()
        if self._owns_store:
            await self.store.close()

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

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _charged(res: ScanResult, cost: ScanStats | None) -> ScanResult:
    """``res`` with the requests and bytes of reading its row map counted in."""
    if cost is not None:
        res.stats.requests += cost.requests
        res.stats.bytes_read += cost.bytes_read
        res.stats.bytes_needed += cost.bytes_needed
    return res


def _matching(expr: Any, res: ScanResult, wanted: list[str]) -> ScanResult:
    """The rows of ``res`` the filter keeps (exact, SQL semantics), columns ``wanted``."""
    from planner.filters import bind

    from ..arrays.filtering import evaluate
    from ..model.types import PrimitiveType

    by_path = {P.parse_path(c): a for c, a in res.columns.items()}
    typed = bind(expr, {p: a.type.name for p, a in by_path.items()
                        if isinstance(a.type, PrimitiveType)})
    keep = np.flatnonzero(evaluate(typed, by_path, res.num_rows))
    return ScanResult({c: res.columns[c].take(keep) for c in wanted}, int(keep.size),
                      res.stats, res.plan)



class Schema:
    """The super types and column tree of a file, printable."""

    def __init__(self, meta: FileMeta) -> None:
        self.meta = meta
        self.super_types = meta.super_types

    def __str__(self) -> str:
        from ..scan.describe import describe_schema

        return describe_schema(self.meta)

    def __repr__(self) -> str:
        return f"<Schema {len(self.super_types)} super types>"

    def arrow(self, columns: Sequence[str] | str | None = None) -> Any:
        """The Arrow schema ``scan(columns)`` gives (an ``ArrowSchema``: pass it to
        ``pa.schema``, ``nanoarrow.c_schema``...), from metadata: no data is read."""
        from ..arrays.arrowschema import arrow_schema

        return arrow_schema(self.meta, columns)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow schema of a scan of every top-level column (from metadata)."""
        return self.arrow().__arrow_c_schema__()

    @property
    def has_statistics(self) -> bool:
        """Whether the writer recorded segment statistics (``column_stats`` is all None
        without them)."""
        from ..scan.colstats import has_statistics

        return has_statistics(self.meta)

    @functools.cached_property
    def column_stats(self) -> dict[str, Any]:
        """Every primitive column's ``colstats.ColumnStatistics`` (values, nulls, min,
        max...) by path, from the metadata alone: no data is read."""
        from ..scan.colstats import column_stats

        return column_stats(self.meta)

    def stats(self, path: str) -> Any:
        """The ``ColumnStatistics`` of the primitive column at ``path`` (as keyed in
        ``column_stats``); ColumnNotFoundError if there is none."""
        got = self.column_stats.get(path)
        if got is None:
            raise ColumnNotFoundError(f"no primitive column {path!r}; columns with "
                                      f"statistics: {', '.join(self.column_stats) or 'none'}")
        return got


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
    from ..stores import ObjectInfo

    owns = store is None
    reader_opts, store_opts = split_options(options)
    if store is None:
        store, url = store_for(url, **store_opts)
    reader_opts.setdefault("profile", profile_of(store))
    r = Reader(store, url, owns_store=owns, **reader_opts)
    r.meta = meta
    r.tail = TailRead(b"", ObjectInfo(meta.object_size, version))
    r._extra = list(available)
    return r


def _check_count(name: str, value: Any, least: int, path: str) -> int:
    """``value`` as an int, or an ArgumentError naming ``name`` unless it is one >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentError(f"{name} must be an integer >= {least}, not "
                            f"{type(value).__name__} ({value!r})", path=path)
    if value < least:
        raise ArgumentError(f"{name} must be an integer >= {least}, not {value}", path=path)
    return int(value)


_scopes = itertools.count()


def cache_key(store: Any, key: str) -> str:
    """``key`` as the metadata cache names it (``Store.cache_key``; a store passed by
    hand may have none)."""
    fn = getattr(store, "cache_key", None)
    return fn(key) if callable(fn) else key


def _cache_scope(store: Any) -> Any:
    """The metadata-cache scope of ``store``: set by the shared-store registry (kind and
    options), else unique to this store instance for the life of the process."""
    scope = getattr(store, "cache_scope", None)
    if scope is None:
        scope = ("instance", next(_scopes))
        try:
            store.cache_scope = scope
        except AttributeError:  # a store that takes no attributes: it cannot share entries
            return ("uncached", id(store), next(_scopes))
    return scope


async def _done(tail: TailRead) -> TailRead:
    return tail


def _metadata_cache(option: Any) -> Any:
    """The MetadataCache an option names: False none, None none unless
    ``$CSUP_METADATA_CACHE`` names a directory, True the process's default, a
    pathlib.Path or a str the process's on-disk cache in that directory (made if
    missing, as ``$CSUP_METADATA_CACHE`` and the CLI's ``--metadata-cache`` are)."""
    if option is False:
        return None
    if option is None:
        if not os.environ.get("CSUP_METADATA_CACHE"):
            return None
        from ..stores.diskcache import env_cache

        return env_cache()
    from ..stores.metacache import MetadataCache, default_cache

    if option is True:
        return default_cache()
    if isinstance(option, (os.PathLike, str)) and not isinstance(option, bytes):
        if not os.fspath(option):
            raise CsupError("metadata_cache must name a directory, not an empty string")
        from ..stores.diskcache import disk_cache

        return disk_cache(option)
    if not isinstance(option, MetadataCache):
        raise CsupError(f"metadata_cache must be a MetadataCache, a directory (a str or "
                        f"pathlib.Path) or True, not "
                        f"{type(option).__name__}")
    return option
