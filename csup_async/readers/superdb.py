"""Reading a SuperDB (header-layout) CSUP object through the library's Reader API.

``open()`` reads the tail as for any CSUP object; when the bytes show a
SuperDB file (``"CSUP"`` at offset 0, or no trailer and a head read that shows
it) the reader becomes a :class:`HeaderLayoutReader`: the same methods
(``scan``, ``iter_batches``, ``read_rows``, ``read_values``, ``take``,
``count_rows``, ``plan``) over this layout's metadata.  The open reads every
object's header and metadata (see :mod:`planner.superdb` for what that costs) and
splits it into values; a vector is parsed when a verb first needs it (v14/v16:
:class:`~csup_async.format.superdb.meta.LazyNodes`), and a path's type comes from the
vectors it reaches, not from every super type;
a scan reads the projection's segments of every object in one wave, an
``iter_batches`` one object at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import planner as P
from planner.filters import Truth
from planner.request import ScanRequest
from planner.superdb import HeaderLayoutPlan, OpenCost, hop_read, plan_header_layout

from .. import arrays as A
from ..arrays.unify import unify as unify_arrays
from ..format.meta import PrimitiveColumn, Segment
from ..format.superdb.bsup5 import columnar
from ..format.superdb.meta import (
    HEADER_SIZE,
    ObjectMeta,
    SuperDBMeta,
    check_row_count,
    node_type,
    parse_header,
    parse_metadata,
    root_types,
)
from ..format.superdb.v23 import ObjectMeta5, is_v23_tail
from ..model.errors import ColumnNotFoundError, CsupError, TruncatedError
from ..model.progress import Planned, current_tracker, tracking
from ..model.types import NULL, RecordType, Type
from ..model.values import Value, unify
from ..scan.result import ScanResult, ScanStats
from ..scan.superdb import columns as C
from ..scan.superdb.held import HeldBytes
from ..scan.superdb.vectors import Decoder, segment_bytes, segment_view
from .parsememo import parse_memo
from .reader import Reader
from .wholeobject import WholeObjectReader

if TYPE_CHECKING:
    from ..stores import TailRead

WRITER = "SuperDB (super)"


class FileView(SuperDBMeta):
    """The metadata with the few trailer-layout names the CLI asks of ``reader.meta``."""

    @property
    def columns(self) -> tuple[PrimitiveColumn, ...]:
        segs = tuple(C.file_segment(o, s) for o in self.objects for n in o.nodes
                     for _, s in n.segs if s.size)
        return (PrimitiveColumn(segs),)


class HeaderLayoutReader(WholeObjectReader):
    """A Reader over a SuperDB CSUP file (made by ``open``, never directly)."""

    header_layout = True
    meta: FileView  # type: ignore[assignment]

    async def _load_header_layout(self, tail: TailRead, t0: float, head: bytes | None,
                                  speculative: Any = None, held: Sequence[Any] = ()) -> None:
        if is_v23_tail(tail.data, tail.offset, tail.info.size):
            from .superdb23 import load_v23

            await load_v23(self, tail, t0, head, FileView, speculative, held)
            return
        if head is None and speculative is not None:  # v14/v16 keep metadata at the head
            from .headhint import speculated

            head = await speculated(self, tail, speculative)
        size, version = tail.info.size, tail.info.version
        buf = HeldBytes()
        buf.add(tail.offset, tail.data)
        self._held: list[tuple[int, bytes]] = [(tail.offset, tail.data)]
        head_read = head is not None
        if head is not None:
            buf.add(0, head)
            self._held.append((0, head))
        reqs, nbytes = self.open_stats.requests, self.open_stats.bytes_read

        async def read(off: int, n: int) -> None:
            nonlocal reqs, nbytes
            data = bytes(await self.store.read_range(self.key, off, n, version))
            if len(data) != n:
                raise TruncatedError(f"short read: {len(data)} of {n} bytes at {off}")
            buf.add(off, data)
            self._held.append((off, data))
            reqs += 1
            nbytes += n

        first_reads = reqs
        objects: list[ObjectMeta] = []
        off, largest, in_first = 0, 0, 0
        try:
            while off < size:
                if not buf.covers(off, HEADER_SIZE):
                    await read(*hop_read(off, size, largest))
                if size - off < 8:
                    raise TruncatedError(f"{size - off} bytes after the last object at "
                                         f"{off} are not a CSUP object header")
                hdr = parse_header(buf.get(off, min(HEADER_SIZE, size - off)), off)
                if off + hdr.object_size > size:
                    raise TruncatedError(f"the CSUP object at byte {off} ends at "
                                         f"{off + hdr.object_size}, past the "
                                         f"{size}-byte file (truncated)")
                if hdr.meta_size > self.max_metadata:
                    from ..model.errors import LimitError

                    raise LimitError(f"metadata of {hdr.meta_size} bytes exceeds "
                                     f"max_metadata={self.max_metadata}")
                start = off + hdr.size
                # v16's type section (the subtypes of fusion values) follows the metadata:
                # the same read; v23 keeps its types in its own way, v14 has none
                head = hdr.meta_size + (hdr.type_size if hdr.version == 16 else 0)
                if not buf.covers(start, head):
                    have = min(buf.held_until(start), start + head)
                    await read(have, start + head - have)  # the rest of it
                if reqs == first_reads:
                    in_first += 1
                objects.append(self._parsed(buf.get(start, hdr.meta_size), off, hdr, size))
                largest = max(largest, hdr.meta_size + hdr.type_size)
                off += hdr.object_size
        except CsupError as e:
            raise e.with_path(self.path) from None
        check_row_count(objects, self.read_options.limits.max_rows, self.path)
        self.meta = FileView(tuple(objects), size, None)  # super types: on first ask
        self._buf = buf
        self._open_cost = OpenCost(len(objects), reqs, nbytes, in_first, head_read)
        self.open_stats.requests = reqs
        self.open_stats.bytes_read = nbytes
        self.open_stats.metadata_requests = reqs
        self.open_stats.wall = time.perf_counter() - t0
        from .headhint import remember

        remember(self.store, self.key, head_read and tail.offset > 0)

    def _parsed(self, section: bytes | memoryview, off: int, hdr: Any, size: int
                ) -> ObjectMeta:
        """The object's metadata: parsed, or as this process parsed the same bytes of the
        same object before (:mod:`.parsememo`, as the trailer layout's open does; its
        vectors made by earlier reads are kept with it).  Keyed by the path too: a
        vector's error names the file it was read from."""
        memo = parse_memo()
        key = memo.key(section, ("superdb", self.path, off, hdr), size, self.max_metadata)
        known = memo.get(key)
        if known is not None:
            return known[0]  # type: ignore[no-any-return]
        obj = parse_metadata(section, off, hdr)
        obj.nodes.path = self.path  # type: ignore[attr-defined] # its errors name it
        memo.put(key, obj)
        return obj

    # -------------------------------------------------------------- schema ---
    @property
    def schema(self) -> Any:
        from .superdb23 import fused_type

        return HeaderLayoutSchema(self.meta, fused_type(getattr(self, "parts", ())))

    def _comps(self, paths: list[str]) -> list[tuple[str, ...]]:
        return [P.parse_path(p) if p else () for p in paths]

    def _segments(self, paths: list[str], objects: Sequence[ObjectMeta]) -> list[Segment]:
        comps = self._comps(paths)
        segs: list[Segment] = []
        key = ("segments", tuple(comps))
        for o in objects:
            memo = getattr(o, "memo", None)  # v23: kept with the object (every scan asks)
            got = memo.get(key) if memo is not None else None
            if got is None:
                got = self._object_segments(o, comps)
                if memo is not None:
                    memo[key] = got
            segs.extend(got)
        return segs

    @staticmethod
    def _object_segments(o: ObjectMeta, comps: list[tuple[str, ...]]) -> list[Segment]:
        tops = C.tops_of(o)
        targets = [t for top in tops for c in comps
                   if (t := C.resolve(o.nodes, top, c)) is not None]
        got = C.needed_segments(o, targets, len(tops) if len(tops) > 1 else 0)
        if o.header.version >= 23:  # the subtypes of the fusions the paths pass
            from ..scan.superdb.columnar23 import passed_subtypes

            have = {g.offset for g in got}
            got += [g for g in passed_subtypes(o, tops, comps) if g.offset not in have]
        return got

    def _hl_plan(self, paths: list[str], objects: Sequence[ObjectMeta] | None = None,
                 ) -> HeaderLayoutPlan:
        objs = self.meta.objects if objects is None else objects
        held = max(self._held, key=lambda h: len(h[1]))  # the head, or a whole-file tail
        try:  # damaged metadata (a negative segment length) is refused naming the file
            return plan_header_layout(
                self._segments(paths, objs), paths, self.missing_paths(paths),
                self._open_cost, self.meta.version, self._data_profile,
                available=(held[0], len(held[1])),
                held=tuple((o, len(d)) for o, d in self._held))
        except CsupError as e:
            raise e.with_path(self.path) from None

    def _kept(self, expr: Any, objects: Sequence[ObjectMeta] | None = None
              ) -> list[ObjectMeta]:
        """The objects whose metadata does not prove the filter false."""
        from ..scan.superdb.pruning import object_truths

        objs = self.meta.objects if objects is None else objects
        if expr is None:
            return list(objs)
        return [o for o, t in zip(objs, object_truths(objs, expr), strict=True)
                if t is not Truth.FALSE]

    def held_ranges(self, plan: Any = None, budget: int = 0) -> Any:
        """What a reader made elsewhere needs to open this v23 file with no request
        (:func:`.superdb23.held_ranges`; None for older versions)."""
        from .superdb23 import held_ranges

        return held_ranges(self, plan, budget)

    def keep_objects(self, indices: Sequence[int]) -> None:
        """Read only these objects from now on (a Spark task whose driver proved the others
        hold no row its pushed filters keep: Spark filters the rows read anyway)."""
        m = self.meta
        self.meta = FileView(tuple(m.objects[i] for i in indices), m.object_size,
                             m.super_types)

    def filter_truth(self, expr: Any, unknown: Any = ()) -> Truth:
        """What the objects' min/max prove of ``expr`` (an expression) over the whole
        file, no request: a dataset skips a file they prove false
        (:func:`~csup_async.scan.superdb.pruning.file_truth`)."""
        from ..scan.superdb.pruning import file_truth

        return file_truth(self.meta, expr, unknown)

    def _matching(self, expr: Any, res: ScanResult, wanted: list[str]) -> ScanResult:
        """The rows of ``res`` the filter keeps, columns ``wanted``."""
        cols, n = self._keep(expr, res.columns, res.num_rows, wanted)
        return ScanResult(cols, n, res.stats, res.plan)

    async def plan_with(self, request: ScanRequest) -> HeaderLayoutPlan:
        """The reads ``scan`` with the same arguments makes (``explain()`` says them)."""
        return self.plan_now(request)

    def plan_now(self, request: ScanRequest) -> HeaderLayoutPlan:
        """:meth:`plan_with`, which makes no request, called where no loop runs (a Spark
        driver's planning step)."""
        rows, limit = request.rows, request.limit
        paths = self.paths_of(request)
        self._check_paths(paths)
        expr = self._filter(request.filter)
        objs: Sequence[ObjectMeta] = self.meta.objects
        if rows is not None or (limit is not None and expr is None):
            lo, hi = self._row_bounds(rows, None if expr is not None else limit)
            objs = self._objects_for(lo, hi)[0]
        kept = self._kept(expr, objs)
        plan = self._hl_plan(self._filter_paths(expr, paths), kept)
        if expr is not None:
            plan = dataclasses.replace(plan, pruned=len(objs) - len(kept))
        return plan

    # ---------------------------------------------------------------- read ---
    async def _fetch(self, plan: HeaderLayoutPlan, stats: ScanStats) -> None:
        """Read the plan's requests not already held, ``concurrency`` at a time."""
        version = self.tail.info.version
        sem = asyncio.Semaphore(max(1, self.concurrency))
        t0 = time.perf_counter()
        wanted = self._unheld(plan)
        watch = current_tracker()  # budget and progress (a verb's meter): claimed first
        if watch is not None:
            watch.claim(len(wanted), sum(n for _, n in wanted))

        async def one(off: int, n: int) -> None:
            async with sem:
                data = bytes(await self.store.read_range(self.key, off, n, version))
                if stats.ttfb is None:
                    stats.ttfb = time.perf_counter() - t0
                if len(data) != n:
                    raise TruncatedError(f"short read: {len(data)} of {n} bytes at {off}")
                self._buf.add(off, data)
                stats.requests += 1
                stats.bytes_read += n
                if watch is not None:
                    watch.add(n)

        await asyncio.gather(*(one(o, n) for o, n in wanted))
        stats.bytes_needed += plan.bytes_needed

    def _unheld(self, plan: HeaderLayoutPlan) -> list[tuple[int, int]]:
        """``(offset, length)`` of the plan's requests not held already: what it sends."""
        return [(r.offset, r.length) for r in plan.requests
                if not self._buf.covers(r.offset, r.length)]

    def _figures(self, plans: Sequence[HeaderLayoutPlan]) -> tuple[int, int]:
        """``(requests, bytes)`` these plans send, read one after the other."""
        wanted = [w for p in plans for w in self._unheld(p)]
        return len(wanted), sum(n for _, n in wanted)

    def _loader(self, obj: ObjectMeta) -> Any:
        buf, base = self._buf, obj.data_offset
        return lambda s: segment_bytes(buf.get(base + s.offset, s.size), s)

    def _types(self, paths: list[str]) -> dict[str, Type]:
        """Each path's column type (v23's ``none`` as null: see bsup5.columnar)."""
        if self.meta.version >= 23:
            return {p: columnar(t) for p, t in super()._types(paths).items()}
        out = {}
        for p in paths:
            ts = self._path_types(self._comps([p])[0])
            out[p] = columnar(unify(ts)) if ts else NULL
        return out

    def missing_paths(self, paths: list[str]) -> list[str]:
        """The paths no super type of the file has."""
        if self.meta.version >= 23:
            return super().missing_paths(paths)
        return [p for p, c in zip(paths, self._comps(paths), strict=True)
                if not self._path_types(c)]

    def _path_types(self, comps: tuple[str, ...]) -> list[Type]:
        """The distinct types at ``comps`` in the file's super types (v14/v16), from the
        vectors the path reaches: the super types themselves (every vector of every one)
        are not made for a projection.  The same answer as ``type_at`` on each super
        type: :func:`.columns.resolve` goes where ``type_at`` goes, and stops where it
        would look inside a union, an array or a dict, whose type ``type_at`` then
        continues."""
        memo = self.__dict__.setdefault("_path_types_memo", {})
        got = memo.get(comps)
        if got is not None:
            return got
        seen: dict[Type, None] = {}
        try:
            for o in self.meta.objects:
                nodes = o.nodes
                for top in C.tops_of(o):
                    t = C.resolve(nodes, top, comps)
                    if t is None:
                        continue
                    # names=None: v14/v16 types are never recursive (see node_type)
                    found = C.type_at(node_type(nodes, t.node, names=None), t.rest)
                    if found is not None:
                        seen.setdefault(found, None)
        except CsupError as e:
            raise e.with_path(self.path) from None
        memo[comps] = got = list(seen)
        return got

    def _decoder(self, obj: ObjectMeta, typed: bool) -> Decoder:
        types = (lambda: obj.typedefs) if isinstance(obj, ObjectMeta5) else None
        if obj.header.version == 16 and obj.header.type_size:
            types = self._v16_types(obj)
        buf, base = self._buf, obj.data_offset
        return Decoder(obj.nodes, self._loader(obj), typed, obj.header.dialect, types,
                       lambda s: segment_view(buf.get(base + s.offset, s.size), s))

    def _v16_types(self, obj: ObjectMeta) -> Any:
        """v16's type section (read at open): the table its fusion vectors' subtype IDs
        index, decoded on first use."""
        from ..scan.superdb.vectors23 import TypeList

        start = obj.offset + obj.header.size + obj.header.meta_size
        raw = self._buf.get(start, obj.header.type_size)
        table: list[TypeList] = []

        def types() -> TypeList:
            if not table:
                table.append(TypeList.from_bsup2(raw))
            return table[0]

        return types

    def _decode(self, obj: ObjectMeta, paths: list[str], typed: bool = False
                ) -> dict[str, list[Any]]:
        """Each path's values over the rows of ``obj`` (bytes already held)."""
        dec = self._decoder(obj, typed)
        tops = C.tops_of(obj)
        tags = C.row_tags(dec, obj)
        out: dict[str, list[Any]] = {}
        for p, comps in zip(paths, self._comps(paths), strict=True):
            parts = []
            for top in tops:
                n = C.node_len_of(obj, top)
                t = C.resolve(obj.nodes, top, comps)
                parts.append([None] * n if t is None else C.target_values(dec, obj, t, n))
            out[p] = parts[0] if len(parts) == 1 else C.interleave(tags, parts)
        return out

    def _arrays(self, obj: ObjectMeta, paths: list[str], types: dict[str, Type]
                ) -> dict[str, A.Array]:
        """Each path's column over the rows of ``obj``: primitive columns built with numpy
        (:mod:`csup_async.scan.superdb.fastcols`), the others from their decoded values."""
        from ..scan.superdb import columnar23, fastcols

        dec = self._decoder(obj, False)
        tags = C.row_tags(dec, obj) if len(C.tops_of(obj)) > 1 else None
        v23 = obj.header.version >= 23
        out: dict[str, A.Array] = {}
        slow = []
        for p, comps in zip(paths, self._comps(paths), strict=True):
            got = fastcols.column(dec, obj, comps, types[p], tags)
            if got is None and v23:  # records, unions, lists... a column at a time
                got = columnar23.column(dec, obj, comps, types[p], tags)
            if got is None:
                slow.append(p)
            else:
                out[p] = got
        if slow:
            plain = [p for p in slow if not C.has_union(types[p])]
            for p, v in self._decode(obj, plain).items():
                out[p] = A.from_pylist(types[p], v)
            for p in slow:
                if p not in out:  # a union somewhere: each value tagged with its member
                    out[p] = A.from_pylist(types[p], self._members(obj, p, types[p]))
        return out

    def _members(self, obj: ObjectMeta, path: str, col: Type) -> list[Any]:
        """The values of a column holding unions over the rows of ``obj``, decoded with
        their types and each union value tagged with its member of ``col``: untyped, a
        float64 of a column that also holds float32 would become a float32, an int where
        a string is expected refused (:func:`.columns.as_members`)."""
        dec = self._decoder(obj, True)
        tops = C.tops_of(obj)
        comps = self._comps([path])[0]
        parts = []
        for top, top_t in zip(tops, C.top_types(obj), strict=True):
            n = C.node_len_of(obj, top)
            t = C.resolve(obj.nodes, top, comps)
            if t is None:
                parts.append([None] * n)
                continue
            parts.append(C.as_members(C.target_values(dec, obj, t, n),
                                      C.type_at(top_t, comps), col))
        return parts[0] if len(parts) == 1 else C.interleave(C.row_tags(dec, obj), parts)

    def _result(self, cols: dict[str, A.Array], n: int, stats: ScanStats, plan: Any
                ) -> ScanResult:
        return ScanResult(cols, n, stats, plan)

    async def _read(self, paths: list[str], objects: Sequence[ObjectMeta], stats: ScanStats,
                    plan: HeaderLayoutPlan | None = None
                    ) -> tuple[dict[str, A.Array], HeaderLayoutPlan]:
        """The columns of ``paths`` over the rows of ``objects``, fetched in one wave
        (``plan``: theirs, made already)."""
        plan = self._hl_plan(paths, objects) if plan is None else plan
        types = self._types(paths)
        try:
            await self._timed(self._fetch(plan, stats))
            cols = await self._decoded(objects, paths, types)
        except CsupError as e:
            raise e.with_path(self.path) from None
        return cols, plan

    async def _decoded(self, objects: Sequence[ObjectMeta], paths: list[str],
                       types: dict[str, Type]) -> dict[str, A.Array]:
        """Each path's column over the rows of ``objects`` (bytes already held), decoded
        and joined in the decode pool: a job per column (or per object, for one column),
        so the kernels (which drop the GIL) of two columns or objects run on two cores,
        and the event loop copies no column."""
        from ..scan.pool import decode_pool

        pool = decode_pool()
        if len(paths) > 1 or len(objects) == 1:  # a job per column, its objects joined
            cols = await asyncio.gather(*(asyncio.wrap_future(pool.submit(
                self._column_of, objects, p, types)) for p in paths))
            return dict(zip(paths, cols, strict=True))
        # one column of several objects: a job per object, then one to join them
        (p,) = paths
        got = await asyncio.gather(*(asyncio.wrap_future(pool.submit(
            self._arrays, o, paths, types)) for o in objects))
        return {p: await asyncio.wrap_future(pool.submit(
            self._concat_parts, [g[p] for g in got], types[p]))}

    def _column_of(self, objects: Sequence[ObjectMeta], path: str, types: dict[str, Type]
                ) -> A.Array:
        """The column ``path`` over the rows of ``objects``, joined."""
        return self._concat_parts([self._arrays(o, [path], types)[path] for o in objects],
                                  types[path])

    @staticmethod
    def _concat_parts(parts: list[A.Array], t: Type) -> A.Array:
        if not parts:
            return A.from_pylist(t, [])
        return parts[0] if len(parts) == 1 else A.concat(parts, type=t)

    async def _values(self, paths: list[str], objects: Sequence[ObjectMeta]
                      ) -> dict[str, list[Any]]:
        """The decoded Python values of ``paths`` (read_rows: exact, absent fields left out)."""
        plan = self._hl_plan(paths, objects)
        try:
            await self._timed(self._fetch(plan, ScanStats()))
            cols: dict[str, list[Any]] = {p: [] for p in paths}
            for o in objects:
                got = await asyncio.to_thread(self._decode, o, paths)
                for p in paths:
                    cols[p].extend(got[p])
        except CsupError as e:
            raise e.with_path(self.path) from None
        return cols

    async def scan_with(self, request: ScanRequest) -> ScanResult:
        """Read these columns of every object in one wave (``rows``/``limit``: the objects
        holding those rows only, then sliced).  A filter reads the objects their min/max
        do not rule out one at a time, each its own wave.

        Budget and progress as for :meth:`Reader.scan`: the data wave (a filter's: every
        object's) is checked before any request; a filtered scan with ``limit`` stops
        once it has the rows, so each object's read is checked (and totalled) before it
        is sent."""
        return await self._metered(request, lambda: self.prepare_scan(request))

    async def prepare_scan(self, request: ScanRequest) -> Planned:
        """:meth:`scan` of a request, planned: the ``(requests, bytes)`` it sends first
        and ``run()``."""
        rows, limit = request.rows, request.limit
        paths = self.paths_of(request)
        self._check_paths(paths)
        expr = self._filter(request.filter)
        t0 = time.perf_counter()
        lo, hi = self._row_bounds(rows, None if expr is not None else limit)
        objs, first = self._objects_for(lo, hi)
        if expr is None:
            plan = self._hl_plan(paths, objs)

            async def run() -> ScanResult:
                stats = ScanStats()
                cols, _ = await self._read(paths, objs, stats, plan)
                cut = {p: v.slice(lo - first, hi - first) for p, v in cols.items()}
                stats.wall = time.perf_counter() - t0
                return self._result(cut, hi - lo, stats, plan)

            return Planned(self._figures([plan]), run)
        # a filter: the objects the metadata cannot rule out, rows evaluated exactly
        self._drop(None)  # each object's bytes are dropped after it: count from the open's
        read = self._filter_paths(expr, paths)
        kept = self._kept(expr, objs)
        plans = [self._hl_plan(read, [o]) for o in kept]
        figures = (0, 0) if limit is not None else self._figures(plans)
        return Planned(figures, lambda: self._scan_kept(expr, paths, read, kept, plans,
                                                       (lo, hi), limit, t0))

    async def _scan_kept(self, expr: Any, paths: list[str], read: list[str],
                         kept: list[ObjectMeta], plans: list[HeaderLayoutPlan],
                         bounds: tuple[int, int], limit: int | None, t0: float
                         ) -> ScanResult:
        """The rows ``bounds`` of the objects ``kept`` the filter keeps (the first
        ``limit``), each object read with its plan of ``read``, then dropped."""
        lo, hi = bounds
        types = self._types(read)
        starts = self._starts()
        stats = ScanStats()
        plan = dataclasses.replace(self._hl_plan(read, kept), pruned=len(
            self._objects_for(lo, hi)[0]) - len(kept))  # what explain() counts
        parts = []
        for o, oplan in zip(kept, plans, strict=True):
            cols, _ = await self._read(read, [o], stats, oplan)
            a, b = max(lo - starts[o.offset], 0), min(hi - starts[o.offset], o.length)
            b = max(a, b)
            res = self._result({p: v.slice(a, b) for p, v in cols.items()}, b - a, stats, plan)
            parts.append(self._matching(expr, res, paths))
            self._drop(o)
            if limit is not None and sum(r.num_rows for r in parts) >= limit:
                break
        stats.wall = time.perf_counter() - t0
        return self._joined(parts, paths, types, limit, stats, plan)

    def _starts(self) -> dict[int, int]:
        """The first row of each object, by its offset."""
        out, at = {}, 0
        for o in self.meta.objects:
            out[o.offset] = at
            at += o.length
        return out

    def _joined(self, parts: list[ScanResult], paths: list[str], types: dict[str, Type],
                limit: int | None, stats: ScanStats, plan: Any) -> ScanResult:
        n = sum(r.num_rows for r in parts)
        if limit is not None:
            n = min(n, limit)
        cols = {p: A.concat([r.columns[p] for r in parts], type=types[p]).slice(0, n)
                if parts else A.from_pylist(types[p], []) for p in paths}
        return ScanResult(cols, n, stats, plan)

    def _objects_for(self, lo: int, hi: int) -> tuple[list[ObjectMeta], int]:
        """The objects holding rows ``[lo, hi)`` and the first row of the first of them."""
        out, first, at = [], None, 0
        for o in self.meta.objects:
            end = at + o.length
            if end > lo and at < hi:
                out.append(o)
                first = at if first is None else first
            at = end
        return out, first or 0

    async def batches_with(self, request: ScanRequest) -> AsyncIterator[ScanResult]:
        """Batches of at most ``batch_rows`` rows, reading one object at a time (an
        object, at most 120,000 rows, is SuperDB's unit of metadata and data).

        ``prefetch`` is checked as :meth:`Reader.iter_batches` checks it and otherwise
        not used: the unit of reading is the object, read whole before its batches.
        Budget and progress as for :meth:`Reader.iter_batches`: every object's read is
        checked (and totalled) before the first batch's request; a caller that stops
        early has read less."""
        meter = request.budget.meter(self.path)
        batch_rows, filter = request.batch_rows, request.filter
        paths = self.paths_of(request)
        self._check_paths(paths)
        expr = self._filter(filter)
        read = self._filter_paths(expr, paths)
        self._drop(None)  # each object's bytes are dropped after it: count from the open's
        kept = self._kept(expr)
        plans = [self._hl_plan(read, [o]) for o in kept]
        fm = None
        if meter is not None:
            fm = meter.file(self.path)
            fm.expect(*self._figures(plans))
        for o, plan in zip(kept, plans, strict=True):
            stats = ScanStats()
            with tracking(fm) if fm is not None else contextlib.nullcontext():
                cols, _ = await self._read(read, [o], stats, plan)
            n = o.length
            for lo in range(0, n, batch_rows):
                hi = min(n, lo + batch_rows)
                res = self._result({p: v.slice(lo, hi) for p, v in cols.items()}, hi - lo,
                                   stats if lo == 0 else ScanStats(), plan)
                if expr is not None:
                    res = self._matching(expr, res, paths)
                    if not res.num_rows:
                        continue
                yield res
            self._drop(o)
        if fm is not None:
            fm.done()

    def _drop(self, obj: ObjectMeta | None) -> None:
        """Forget the data bytes of ``obj`` (keeping what the open read; None: of every
        object)."""
        buf = HeldBytes()
        for off, data in self._held:
            buf.add(off, data)
        self._buf = buf

    async def read_rows(self) -> list[Any]:
        """Every value in order, exactly as decoded (absent optional fields left out)."""
        return (await self._values([""], self.meta.objects))[""]

    async def read_values(self) -> list[Value]:
        """Every value with its super type (unions inside as UnionValue)."""
        stats = ScanStats()
        await self._timed(self._fetch(self._hl_plan([""]), stats))
        out: list[Value] = []
        try:
            for o in self.meta.objects:
                dec = self._decoder(o, True)
                tops = C.tops_of(o)
                types = [t for t, _ in root_types(o)]
                tags = C.row_tags(dec, o)
                parts = [self._typed(dec, o, t, top) for t, top in zip(types, tops, strict=True)]
                out.extend(parts[0] if len(parts) == 1 else C.interleave(tags, parts))
        except CsupError as e:
            raise e.with_path(self.path) from None
        return out


    @staticmethod
    def _typed(dec: Decoder, obj: ObjectMeta, t: Type, top: int) -> list[Value]:
        """The values of top-level vector ``top``, each with its type: a v23 fusion
        vector's values have their own subtypes."""
        from ..format.superdb.defuse import unfuse
        from ..scan.superdb.vectors23 import defuse

        vals = dec.values(top)
        if obj.header.version < 16 or (obj.header.version == 16 and not obj.header.type_size):
            return [Value(t, v) for v in vals]
        if any(n.kind == "fusion" for n in dec.nodes):
            # a fusion vector inside a column: its values' own types make the value's
            return [Value(v.type, defuse(v.value, v.type)) if isinstance(v, Value)
                    else Value(*unfuse(t, v)) for v in vals]
        return [Value(v.type, defuse(v.value, v.type)) if isinstance(v, Value)
                else Value(t, defuse(v, t)) for v in vals]


class HeaderLayoutSchema:
    """The super types of a SuperDB file, printable, and the Arrow schema of a scan."""

    def __init__(self, meta: SuperDBMeta, fused: Type | None = None) -> None:
        self.meta = meta
        self.super_types = meta.super_types
        #: CSUP v23: the type its footers hold, every value's type fused (None: older files)
        self.fused_type = fused
        self._columnar = tuple(columnar(t) for t in meta.super_types)

    def __str__(self) -> str:
        lines = [f"super type {i}: {t}" for i, t in enumerate(self.super_types)]
        if self.fused_type is not None:
            from ..format.superdb.suptext import format_type

            lines.append(f"fused type (footer): {format_type(self.fused_type)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Schema {len(self.super_types)} super types>"

    def arrow(self, columns: Sequence[str] | str | None = None) -> Any:
        """The Arrow schema ``scan(columns)`` gives, from metadata (an ``ArrowSchema``, as
        our layout's ``Schema.arrow`` gives: pass it to ``pa.schema``...; a column's Arrow
        type follows from its super type alone); ColumnNotFoundError for a path no super
        type has."""
        from ..arrays.arrowschema import ArrowSchema

        parsed = P.parse_columns(columns)
        paths = ([spelling for spelling, _ in parsed] if parsed is not None
                 else P.top_level_paths(self._columnar))
        cols = {}
        for p in paths:
            comps = P.parse_path(p) if p else ()
            ts = [t for st in self._columnar if (t := C.type_at(st, comps)) is not None]
            if not ts:
                raise ColumnNotFoundError(f"no super type has a column {p!r}")
            cols[p] = unify_arrays(A.fold_nulls(A.from_pylist(unify(ts), [])), p, [])
        return ArrowSchema(cols)

    def __arrow_c_schema__(self) -> Any:
        return self.arrow().__arrow_c_schema__()

    @property
    def has_statistics(self) -> bool:
        """False: min/max live per vector in the metadata (used to prune filters), not as
        the segment statistics ``column_stats`` reports."""
        return False

    @property
    def column_stats(self) -> dict[str, Any]:
        return {}

    def stats(self, path: str) -> Any:
        raise ColumnNotFoundError(f"no segment statistics in a SuperDB file ({path!r})")


def record_fields(t: Type) -> list[str]:
    return [f.name for f in t.fields] if isinstance(t, RecordType) else []


async def to_header_layout(reader: Reader, tail: TailRead, t0: float,
                           head: bytes | None = None, speculative: Any = None,
                           held: Sequence[tuple[int, bytes]] = (), recalled: Any = None
                           ) -> HeaderLayoutReader:
    """The :class:`HeaderLayoutReader` of the object ``reader`` was opening (on ``tail``;
    ``head`` read by ``detect.probe``; ``speculative``: a head read sent with the tail
    read, see :mod:`.headhint`; ``recalled``: :mod:`.openhint`'s reads, for a v23 file),
    every object's header and metadata read."""
    from .openhint import drop

    new = reader.successor(HeaderLayoutReader)
    new.recalled = recalled  # (load_v23 takes it)
    new._data_profile = new.profile  # plan_per_segment narrows reader.profile
    new.open_stats.ttfb = time.perf_counter() - t0 if new.open_stats.ttfb is None else (
        new.open_stats.ttfb)
    try:
        await new._load_header_layout(tail, t0, head, speculative, held)
    except BaseException:
        from .headhint import drop_head

        await drop_head(speculative)
        await drop(new.recalled)
        await new.close()  # it owns the store now
        raise
    await drop(new.recalled)  # not a v23 file now
    return new


__all__ = ["WRITER", "HeaderLayoutReader", "to_header_layout"]
