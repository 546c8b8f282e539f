"""Plan and read a pool scan: prune objects, narrow them with seek indexes, merge in key order.

Planning is metadata only: ``data.Object`` min/max drop objects a key range
cannot touch, then the seek index of each remaining object (one small GET
each, all at once, cached) narrows it to byte ranges of whole ZNG streams.
Reading fetches those ranges concurrently, decodes them off the event loop,
keeps the rows in the key range, and merges objects whose key spans overlap
so rows come out in pool-key order.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import bsup
from ..errors import CsupError
from ..types import Type
from .commits import DataObject
from .errors import LakeError
from .keys import KeyRange, compare, key_of, sort_key
from .objects import LakeIO
from .seek import SeekEntry, coalesce, parse_seek_index, ranges_for

__all__ = ["ObjectRead", "ScanPlan", "plan_scan", "read_group", "Row"]

#: Ranges of one object closer than this are read as one (a request costs more).
DEFAULT_GAP = 64 << 10

Row = tuple[Any, Type, Any]  # (key Value or None, record type, record value)


@dataclass
class ObjectRead:
    """One kept object and what to read of it (``ranges`` None: all of it)."""

    object: DataObject
    ranges: list[tuple[int, int]] | None = None
    seek_entries: int = 0
    chunks_kept: int = 0

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
            return [None if o.min is None else _plain(o.min.value),
                    None if o.max is None else _plain(o.max.value)]

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


def _plain(v: Any) -> Any:
    import numpy as np

    if isinstance(v, np.datetime64):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    return v


def ordered(objects: list[DataObject], order: str) -> list[DataObject]:
    """Zed's listing order: by (min, max) ascending, or by (max, min) descending."""
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
        raise LakeError(f"the seek index of data object {o.name} is missing",
                        path=io.display(rel))
    return parse_seek_index(buf, io.display(rel), o.size)


async def plan_scan(io: LakeIO, pool_dir: str, objects: list[DataObject], order: str,
                    key_range: KeyRange, *, gap: int = DEFAULT_GAP,
                    use_seek_index: bool = True) -> ScanPlan:
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
        indexes = await asyncio.gather(*(seek_index(io, pool_dir, o) for o in kept))
        for o, entries in zip(kept, indexes, strict=True):
            runs = ranges_for(entries, key_range)
            if not runs:
                plan.pruned_by_seek.append(o)
                continue
            kept_chunks = sum(1 for e in entries if not key_range.prunes(e.min, e.max))
            plan.reads.append(ObjectRead(o, coalesce(runs, gap), len(entries), kept_chunks))
    plan.groups = group(plan.reads, order)
    return plan


def decode_rows(buf: bytes | memoryview, key: tuple[str, ...], key_range: KeyRange,
                path: str) -> list[Row]:
    """Rows of one or more whole ZNG streams, keeping those whose key is in range."""
    out: list[Row] = []
    keep_all = key_range.unbounded
    try:
        for t, body in bsup.iter_raw_values(buf):
            v = bsup.decode_value(t, body)
            k = key_of(v, t, key)
            if keep_all or key_range.contains(k):
                out.append((k, t, v))
    except CsupError as e:
        raise LakeError(f"data object is not valid ZNG: {e.message}", path=path) from None
    return out


async def read_object(io: LakeIO, pool_dir: str, r: ObjectRead, key: tuple[str, ...],
                      key_range: KeyRange) -> list[Row]:
    rel = f"{pool_dir}/data/{r.object.name}.zng"
    path = io.display(rel)
    if r.ranges is None:
        buf = await io.get_or_none(rel, immutable=True)
        if buf is None:
            raise LakeError(f"data object {r.object.name} is missing", path=path)
        if len(buf) != r.object.size:
            raise LakeError(f"data object is {len(buf)} bytes, its commit says "
                            f"{r.object.size}", path=path)
        bufs = [buf]
    else:
        try:
            bufs = list(await asyncio.gather(*(io.get_range(rel, off, n)
                                               for off, n in r.ranges)))
        except CsupError as e:
            if "no such" in e.message or type(e).__name__ == "NotFoundError":
                raise LakeError(f"data object {r.object.name} is missing", path=path) from None
            raise
    rows: list[Row] = []
    for b in bufs:
        rows += await asyncio.to_thread(decode_rows, b, key, key_range, path)
    return rows


async def read_group(io: LakeIO, pool_dir: str, reads: list[ObjectRead], key: tuple[str, ...],
                     key_range: KeyRange, order: str) -> list[Row]:
    """The rows of a group of overlapping objects, merged in key order."""
    parts = await asyncio.gather(*(read_object(io, pool_dir, r, key, key_range)
                                   for r in reads))
    if len(parts) == 1:
        return parts[0]
    return list(heapq.merge(*parts, key=lambda row: sort_key(row[0]),
                            reverse=order == "desc"))


def iter_merged(parts: list[list[Row]], order: str) -> Iterator[Row]:
    return heapq.merge(*parts, key=lambda row: sort_key(row[0]), reverse=order == "desc")
