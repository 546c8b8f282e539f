"""Plan and read a pool scan: prune objects, narrow them with seek indexes, merge in key order.

Planning is metadata only: ``data.Object`` min/max drop objects a key range
cannot touch, then the seek index of each remaining object (one small GET
each, all at once, cached) narrows it to byte ranges of whole ZNG streams,
which the planner coalesces into requests for the store's profile.
Reading fetches those requests concurrently, decodes the ranges off the event loop
(columnar copies are read by ``open``, the key range handed over as a filter),
keeps the rows in the key range, and merges objects whose key spans overlap
so rows come out in pool-key order.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import planner as P
from planner.paths import format_path

from ..bsup.rows import iter_rows
from ..errors import CsupError
from ..rangebuf import RangeBuffer
from ..types import Field, NamedType, RecordType, Type, underlying
from ..values import Value
from .colscan import Part, Segment, decode_part, merge_parts
from .commits import DataObject
from .errors import LakeError, LakeNotFoundError
from .keys import KeyRange, compare, display, family, key_of, sort_key
from .objects import LakeIO, gather_all
from .seek import SeekEntry, parse_seek_index, ranges_for

__all__ = ["ObjectRead", "ScanPlan", "plan_scan", "read_group", "read_group_parts", "Row"]

Row = tuple[Any, Type, Any]  # (key Value or None, record type, record value)


@dataclass
class ObjectRead:
    """One kept object and what to read of it (``ranges`` None: all of it).

    ``runs`` are the byte ranges of the kept seek-index chunks (each run whole ZNG
    streams), ``ranges`` the requests that fetch them: the planner's coalescing of the
    runs for the store's profile (``planner.coalesce``, as every other read)."""

    object: DataObject
    ranges: list[tuple[int, int]] | None = None
    seek_entries: int = 0
    chunks_kept: int = 0
    runs: list[tuple[int, int]] | None = None

    @property
    def bytes(self) -> int:
        return self.object.size if self.ranges is None else sum(n for _, n in self.ranges)


@dataclass
class ScanPlan:
    key_range: KeyRange
    order: str
    total: int = 0
    reads: list[ObjectRead] = field(default_factory=list)
    pruned_by_range: list[DataObject] = field(default_factory=list)
    pruned_by_seek: list[DataObject] = field(default_factory=list)
    groups: list[list[ObjectRead]] = field(default_factory=list)

    @property
    def bytes_to_read(self) -> int:
        return sum(r.bytes for r in self.reads)

    def describe(self) -> dict[str, Any]:
        def span(o: DataObject) -> list[Any]:
            return [display(o.min), display(o.max)]

        return {
            "order": self.order,
            "key_range": str(self.key_range),
            "objects": self.total,
            "kept": [{"id": r.object.name, "span": span(r.object), "size": r.object.size,
                      "count": r.object.count,
                      "ranges": ([[0, r.object.size]] if r.ranges is None
                                 else [list(x) for x in r.ranges]),
                      "bytes": r.bytes,
                      "chunks": [r.chunks_kept, r.seek_entries] if r.ranges is not None
                      else None} for r in self.reads],
            "pruned_by_min_max": [o.name for o in self.pruned_by_range],
            "pruned_by_seek_index": [o.name for o in self.pruned_by_seek],
            "groups": len(self.groups),
            "bytes_to_read": self.bytes_to_read,
        }


def _int_keys(objects: list[DataObject]) -> bool:
    """Whether every min and max is a non-null int of one family: then Zed's order of
    them is the ints' order, and sorting needs no comparison function."""
    fams: set[str] = set()
    kinds: set[int] = set()
    for o in objects:
        for v in (o.min, o.max):
            if v is None or type(v.value) is not int:
                return False
            if id(v.type) not in kinds:
                kinds.add(id(v.type))
                fams.add(family(v.type))
    return len(fams) <= 1


def ordered(objects: list[DataObject], order: str) -> list[DataObject]:
    """Zed's listing order: by (min, max) ascending, or by (max, min) descending."""
    if _int_keys(objects):
        if order == "desc":
            return sorted(objects, key=lambda o: (o.max.value, o.min.value, o.id),  # type: ignore[union-attr]
                          reverse=True)
        return sorted(objects, key=lambda o: (o.min.value, o.max.value, o.id))  # type: ignore[union-attr]
    if order == "desc":
        return sorted(objects, key=lambda o: (sort_key(o.max), sort_key(o.min), o.id),
                      reverse=True)
    return sorted(objects, key=lambda o: (sort_key(o.min), sort_key(o.max), o.id))


def _overlaps(a_min: Any, a_max: Any, b_min: Any, b_max: Any) -> bool:
    return compare(a_min, b_max) <= 0 and compare(b_min, a_max) <= 0


def group(reads: list[ObjectRead], order: str) -> list[list[ObjectRead]]:
    """Runs of objects whose key spans overlap (transitively): each is merged."""
    groups: list[list[ObjectRead]] = []
    lo = hi = None
    for r in reads:
        o = r.object
        if groups and _overlaps(o.min, o.max, lo, hi):
            groups[-1].append(r)
            if compare(o.min, lo) < 0:
                lo = o.min
            if compare(o.max, hi) > 0:
                hi = o.max
        else:
            groups.append([r])
            lo, hi = o.min, o.max
    return groups


async def seek_index(io: LakeIO, pool_dir: str, o: DataObject) -> list[SeekEntry]:
    rel = f"{pool_dir}/data/{o.name}-seek.zng"
    buf = await io.get_or_none(rel, immutable=True)
    if buf is None:
        raise LakeNotFoundError(f"the seek index of data object {o.name} is missing",
                        path=io.display(rel))
    return parse_seek_index(buf, io.display(rel), o.size)


async def plan_scan(io: LakeIO, pool_dir: str, objects: list[DataObject], order: str,
                    key_range: KeyRange, *, profile: str | P.Profile | None = None,
                    use_seek_index: bool = True) -> ScanPlan:
    """``profile``: the planner profile whose coalescing turns seek-index runs into
    requests (default: the store's, as ``open`` takes it)."""
    from ..stores.capabilities import profile_of

    prof = P.get_profile(profile if profile is not None else profile_of(io.store))
    plan = ScanPlan(key_range, order, total=len(objects))
    kept: list[DataObject] = []
    for o in ordered(objects, order):
        if key_range.prunes(o.min, o.max):
            plan.pruned_by_range.append(o)
        else:
            kept.append(o)
    if key_range.unbounded or not use_seek_index:
        plan.reads = [ObjectRead(o) for o in kept]
    else:
        indexes = await gather_all([seek_index(io, pool_dir, o) for o in kept])
        for o, entries in zip(kept, indexes, strict=True):
            runs = ranges_for(entries, key_range)
            if not runs:
                plan.pruned_by_seek.append(o)
                continue
            kept_chunks = sum(1 for e in entries if not key_range.prunes(e.min, e.max))
            requests = [(q.offset, q.length) for q in P.coalesce(runs, prof)]
            plan.reads.append(ObjectRead(o, requests, len(entries), kept_chunks, runs))
    plan.groups = group(plan.reads, order)
    return plan


def key_getter(t: Type, path: tuple[str, ...]) -> Any:
    """row value -> its pool key as a Value (None when missing or null), for type ``t``."""
    u = underlying(t)
    if len(path) == 1 and isinstance(u, RecordType):
        f = u.field(path[0])
        if f is None:
            return lambda v: None
        kt = f.type
        while isinstance(kt, NamedType):
            kt = kt.inner
        name = path[0]

        def one(v: Any) -> Any:
            x = v.get(name) if v is not None else None
            return None if x is None else Value(kt, x)
        return one
    return lambda v: key_of(v, t, path)


def decode_rows(buf: bytes | memoryview, key: tuple[str, ...], key_range: KeyRange,
                path: str, fields: frozenset[str] | None = None) -> list[Row]:
    """Rows of one or more whole ZNG streams (decoded by ``bsup.rows``), keeping those
    whose key is in range; with ``fields``, only those top-level fields (and the key)."""
    if fields is not None:
        fields = fields | {key[0]}
    out: list[Row] = []
    keep_all = key_range.unbounded
    by_id: dict[int, Any] = {}  # types of one stream are the same objects: skip hashing
    try:
        for t, v in iter_rows(buf, fields):
            get = by_id.get(id(t))
            if get is None:
                get = by_id[id(t)] = key_getter(t, key)
            k = get(v)
            if keep_all or key_range.contains(k):
                out.append((k, t, v))
    except CsupError as e:
        raise LakeError(f"data object is not valid ZNG: {e.message}", path=path) from None
    return out


def csup_usable(columns: list[str] | None) -> bool:
    """A columnar copy serves top-level projections (nested paths stay with .zng)."""
    return bool(columns) and all("." not in c for c in columns or ())


async def read_object_csup(io: LakeIO, pool_dir: str, r: ObjectRead, key: tuple[str, ...],
                           key_range: KeyRange, columns: list[str], suffix: str = ".csup"
                           ) -> list[Row] | Part | None:
    """The object's rows from ``<o>.csup`` (only ``columns`` and the key), or None if
    there is no such copy.  Same rows, same order as the ``.zng`` (the loader's promise).
    ``suffix`` ``.vng``: the VNG copy ``zed vector add`` wrote (the commit says which
    objects have one).

    The copy is read by the ordinary reader (``open``: its planner coalescing, read
    pipeline and statistics pruning), handed the key range as a filter of the common
    model when the object's keys are of the range's family (Zed's order across
    families has no filter form: then the range is applied here, row by row)."""
    from ..dataset import absent_paths
    from ..errors import NotFoundError
    from ..opening import open as open_reader

    rel = f"{pool_dir}/data/{r.object.name}{suffix}"
    try:
        reader = await open_reader(io.key(rel), store=io.store)
    except NotFoundError:
        return None
    key_name = format_path(key)
    fams = key_range.families()
    o = r.object
    pushed = key_range.unbounded or (
        o.min is not None and o.max is not None and len(fams) == 1
        and {family(o.min.type), family(o.max.type)} == fams)
    key_filter = key_range.to_filter(key) if pushed else None
    if key_filter is None and not key_range.unbounded:
        pushed = False
    async with reader:
        want = [c for c in dict.fromkeys([key_name, *columns]) if c not in absent_paths(reader, c)]
        res = (await reader.scan(want, filter=key_filter if pushed else None)
               if want else None)
        io.requests += reader.open_stats.requests + (res.stats.requests if res else 0)
        io.bytes_read += len(reader.tail.data) + (res.stats.bytes_read if res else 0)
    if res is None:
        return [(None, RecordType(()), {}) for _ in range(o.count)]
    if pushed:
        return part_of(res, key_name)
    return _rows_in_range(res, key_name, key_range)


def part_of(res: Any, key_name: str) -> Part:
    """A reader's ScanResult as a Part of one record type (its columns)."""
    n = res.num_rows
    rt = RecordType(tuple(Field(c, a.type) for c, a in res.columns.items()))
    cols = {c: [Segment(a.type, array=a, nonnull=n - int(getattr(a, "null_count", 0) or 0))]
            for c, a in res.columns.items()}
    return Part(n, key_name, [rt], [np.arange(n, dtype=np.int64)], [np.zeros(n, bool)], cols)


def _rows_in_range(res: Any, key_name: str, key_range: KeyRange) -> list[Row]:
    """The rows of ``res`` whose key is in ``key_range`` by Zed's order (any family)."""
    from ..values import Value

    arrays = res.columns
    rt = RecordType(tuple(Field(c, a.type) for c, a in arrays.items()))
    lists = {c: a.to_pylist() for c, a in arrays.items()}
    kt = arrays[key_name].type if key_name in arrays else None
    out: list[Row] = []
    for i in range(res.num_rows):
        row = {c: lists[c][i] for c in lists}
        kv = row.get(key_name) if kt is not None else None
        k = Value(kt, kv) if kv is not None and kt is not None else None
        if key_range.contains(k):
            out.append((k, rt, row))
    return out


#: Below this a whole ``.zng`` is one small GET: a columnar copy saves nothing
#: (its tail read alone is about as large), so "auto" keeps the ``.zng``.
CSUP_MIN_OBJECT = 1 << 20


async def read_object(io: LakeIO, pool_dir: str, r: ObjectRead, key: tuple[str, ...],
                      key_range: KeyRange, columns: list[str] | None = None,
                      csup: bool | None = False, vectors: Collection[bytes] = ()
                      ) -> list[Row] | Part:
    """``csup``: True reads a columnar copy when there is one, None ("auto") only for
    objects of CSUP_MIN_OBJECT bytes or more, False never.  The copy of an object in
    ``vectors`` (Zed's vector commits) is its ``.vng``, else its ``.csup``."""
    wanted = csup is True or (csup is None and r.object.size >= CSUP_MIN_OBJECT)
    if wanted and r.ranges is None and csup_usable(columns):
        suffix = ".vng" if r.object.id in vectors else ".csup"
        rows = await read_object_csup(io, pool_dir, r, key, key_range, columns or [], suffix)
        if rows is not None:
            return rows
    fields = None if columns is None else frozenset(c.split(".")[0] for c in columns)
    rel = f"{pool_dir}/data/{r.object.name}.zng"
    path = io.display(rel)
    if r.ranges is None:
        buf = await io.get_or_none(rel, immutable=True)
        if buf is None:
            raise LakeNotFoundError(f"data object {r.object.name} is missing", path=path)
        if len(buf) != r.object.size:
            raise LakeError(f"data object is {len(buf)} bytes, its commit says "
                            f"{r.object.size}", path=path)
        bufs = [buf]
    else:
        held = RangeBuffer()
        try:
            got = await gather_all([io.get_range(rel, off, n) for off, n in r.ranges])
        except CsupError as e:
            if "no such" in e.message or type(e).__name__ == "NotFoundError":
                raise LakeNotFoundError(f"data object {r.object.name} is missing",
                                        path=path) from None
            raise
        for (off, n), data in zip(r.ranges, got, strict=True):
            if len(data) != n:
                raise LakeError(f"read {len(data)} of the {n} bytes at {off} (the object is "
                                f"shorter than its seek index says)", path=path)
            held.add(off, data)
        bufs = [held.get(off, n) for off, n in (r.runs or r.ranges)]
    return await asyncio.to_thread(_decode, bufs, key, key_range, path, fields, columns)


#: Whether ``.zng`` ranges are decoded column-wise (``bsup.columns``); False: row by row,
#: the reference (tests compare the two).
COLUMNAR = True


def _decode(bufs: list[Any], key: tuple[str, ...], key_range: KeyRange, path: str,
            fields: frozenset[str] | None, columns: list[str] | None) -> list[Row] | Part:
    if COLUMNAR and (columns is None or csup_usable(columns)):
        part = decode_part(bufs, key, key_range, fields)
        if part is not None:
            return part
    rows: list[Row] = []
    for b in bufs:
        rows += decode_rows(b, key, key_range, path, fields)
    return rows


async def read_group_parts(io: LakeIO, pool_dir: str, reads: list[ObjectRead],
                           key: tuple[str, ...], key_range: KeyRange, order: str,
                           columns: list[str] | None = None, csup: bool | None = False,
                           vectors: Collection[bytes] = ()) -> list[Row] | Part:
    """The rows of a group of overlapping objects in key order: column-wise when the
    group is one object read column-wise, else rows merged by key."""
    parts = await gather_all([read_object(io, pool_dir, r, key, key_range, columns, csup,
                                          vectors) for r in reads])
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, Part) for p in parts):
        merged = merge_parts([p for p in parts if isinstance(p, Part)], order)
        if merged is not None:
            return merged
    rows = [p.to_rows() if isinstance(p, Part) else p for p in parts]
    return list(heapq.merge(*rows, key=lambda row: sort_key(row[0]),
                            reverse=order == "desc"))


async def read_group(io: LakeIO, pool_dir: str, reads: list[ObjectRead], key: tuple[str, ...],
                     key_range: KeyRange, order: str, columns: list[str] | None = None,
                     csup: bool | None = False) -> list[Row]:
    """The rows of a group of overlapping objects, merged in key order."""
    got = await read_group_parts(io, pool_dir, reads, key, key_range, order, columns, csup)
    return got.to_rows() if isinstance(got, Part) else got

