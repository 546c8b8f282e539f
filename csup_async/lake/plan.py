"""Plan a pool scan: prune objects, narrow them with seek indexes, group overlapping ones.

Planning is metadata only: ``data.Object`` min/max drop objects a key range
cannot touch, then the seek index of each remaining object (one small GET
each, all at once, cached) narrows it to byte ranges of whole ZNG streams,
which the planner coalesces into requests for the store's profile; objects
whose key spans overlap form groups that a scan merges in key order.  Reading
is :mod:`.read`'s (through the one scanner); this module reads no data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import planner as P

from ..stores.capabilities import profile_of
from .commits import DataObject
from .errors import LakeNotFoundError
from .keys import KeyRange, compare, display, family, sort_key
from .objects import LakeIO, gather_all
from .seek import SeekEntry, parse_seek_index, ranges_for

__all__ = ["CSUP_MIN_OBJECT", "ObjectRead", "ScanPlan", "csup_usable", "group", "ordered",
           "plan_scan", "seek_index"]


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


async def seek_index(io: LakeIO, pool_dir: str, o: DataObject) -> list[SeekEntry] | None:
    """The object's seek index; None for a SuperDB database's object without one (super
    main writes none: the object is read whole)."""
    rel = f"{pool_dir}/data/{o.name}-seek.zng"
    buf = await io.get_or_none(rel, immutable=True, probe=io.is_superdb)
    if buf is None:
        if io.is_superdb:
            return None
        raise LakeNotFoundError(f"the seek index of data object {o.name} is missing",
                        path=io.display(rel))
    return parse_seek_index(buf, io.display(rel), o.size)


async def plan_scan(io: LakeIO, pool_dir: str, objects: list[DataObject], order: str,
                    key_range: KeyRange, *, profile: str | P.Profile | None = None,
                    use_seek_index: bool = True) -> ScanPlan:
    """``profile``: the planner profile whose coalescing turns seek-index runs into
    requests (default: the store's, as ``open`` takes it)."""
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
            if entries is None:  # no seek index: the whole object
                plan.reads.append(ObjectRead(o))
                continue
            runs = ranges_for(entries, key_range)
            if not runs:
                plan.pruned_by_seek.append(o)
                continue
            kept_chunks = sum(1 for e in entries if not key_range.prunes(e.min, e.max))
            requests = [(q.offset, q.length) for q in P.coalesce(runs, prof)]
            plan.reads.append(ObjectRead(o, requests, len(entries), kept_chunks, runs))
    plan.groups = group(plan.reads, order)
    return plan


def csup_usable(columns: list[str] | None) -> bool:
    """A columnar copy serves top-level projections (nested paths stay with .zng)."""
    return bool(columns) and all("." not in c for c in columns or ())


#: Below this a whole ``.zng`` is one small GET: a columnar copy saves nothing
#: (its tail read alone is about as large), so "auto" keeps the ``.zng``.
CSUP_MIN_OBJECT = 1 << 20
