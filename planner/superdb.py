"""Planning reads of SuperDB's header-layout CSUP files (``super`` v0.3.0): pure.

Such a file is a chain of objects, each ``[36-byte header][metadata][types][data]``,
and nothing at its end says where the objects start: the header of object
*i + 1* is found only from the sizes in the header of object *i*.  So its
metadata costs, at open:

1. one head read (sized as the trailer layout's tail read, the whole object
   when that is small): every object whose header and metadata lie in it costs
   nothing more, so a small file is read whole in this one request;
2. then one request per further object, in a chain (each needs the previous
   header): header, metadata and type sections together, sized from the
   largest seen so far so one request usually holds them (a second when not).
   The chain's requests are the round trips a file of many objects pays before
   its first data byte; they are counted and shown by ``explain``.

Data then is one wave: every segment the projection needs, in every object, is
coalesced by :func:`planner.coalescing.plan_ranges` under the same cost model as
the trailer layout (bytes the open read already holds are served from them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from csup_async.format.meta import Segment

from .coalescing import RangePlan, plan_ranges
from .profiles import Profile, get_profile

HEADER_SIZE = 36
#: Smallest read of a further object's header and metadata: metadata of a few dozen
#: columns is a few KB, so one read of this size nearly always holds it.
MIN_HOP = 16 << 10


def hop_read(offset: int, object_size: int, largest_meta: int) -> tuple[int, int]:
    """``(offset, length)`` of the read that fetches the header (and, usually, the
    metadata and types) of the object starting at ``offset``: twice the largest
    header-plus-metadata seen so far, at least :data:`MIN_HOP`, never past the end."""
    want = max(MIN_HOP, 2 * (HEADER_SIZE + largest_meta))
    return offset, max(0, min(want, object_size - offset))


#: Largest window :func:`window_read` reads at once (bytes held by the reader until it
#: closes: a window is the open's, not a scan's).
MAX_WINDOW = 64 << 20


def window_read(offset: int, end: int, seen_bytes: int, seen_objects: int,
                profile: str | Profile) -> list[tuple[int, int]] | None:
    """Instead of a hop to the object at ``offset`` of a part ending (at its footer) at
    ``end``: the reads (concurrent parts of one window) that bring its header, metadata
    *and data*, and those of the objects after it, in one round trip; or None (hop).

    Worth it when objects are small against a round trip: the ``seen_objects`` objects
    before it average at most ``latency * bandwidth`` bytes (so a hop, whose transfer is
    a few KB, costs as much time as reading a whole object), which is what super main
    writes for narrow rows (an object is at most 120,000 values).  The window is the
    rest of the part when it is no larger than the round trips it saves (one per
    further object, estimated from the average, and the data wave's), else as many
    round trips' worth of bytes; never past ``MAX_WINDOW``.  Local files (a round trip
    of a few hundred KB) keep the chain."""
    p = get_profile(profile)
    rest = end - offset
    if rest <= 0 or seen_objects <= 0:
        return None
    trip = p.latency * p.bandwidth
    avg = seen_bytes / seen_objects
    if avg > trip:
        return None
    further = max(1, round(rest / max(avg, 1)))
    size = min(rest, int(trip * (further + 1)), MAX_WINDOW)
    if size < 2 * MIN_HOP:
        return None
    part = p.min_part or p.split_size  # parts as the data wave splits its reads
    parts = max(1, min(p.concurrency, size // max(part, 1)))
    step = -(-size // parts)
    return [(o, min(step, offset + size - o)) for o in range(offset, offset + size, step)]


@dataclass(frozen=True, slots=True)
class OpenCost:
    """What reading a file's headers and metadata cost (the chain of :func:`hop_read`)."""

    objects: int
    requests: int
    bytes_read: int
    in_first_read: int  # objects whose metadata the first read(s) held
    head_read: bool  # the tail read did not hold the whole file: the head was read too
    recalled: int = 0  # reads sent with the tail read, where the file's last open read


def _open_trips(c: OpenCost) -> int:
    """Round trips of an open: one per request, those sent with the tail read in its."""
    return c.requests - c.recalled


@dataclass(frozen=True, slots=True)
class HeaderLayoutPlan:
    """A scan of a header-layout file: the open's metadata reads and the data wave."""

    paths: tuple[str, ...]
    missing_paths: tuple[str, ...]
    open_cost: OpenCost
    ranges: RangePlan
    version: int
    profile: str
    pruned: int = 0  # objects a filter's min/max ruled out (not read)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns read, as a ScanProgram of our layout names them."""
        return self.paths

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self.ranges.segments

    @property
    def requests(self):
        return self.ranges.requests

    @property
    def request_count(self) -> int:
        return self.ranges.request_count

    @property
    def bytes_to_read(self) -> int:
        return self.ranges.bytes_to_read

    @property
    def bytes_needed(self) -> int:
        return self.ranges.bytes_needed

    def explain(self) -> str:
        c = self.open_cost
        cols = ", ".join(p or '""' for p in self.paths) or "(none)"
        lines = [
            f"SuperDB CSUP (header layout, version {self.version}), {c.objects} object"
            f"{'' if c.objects == 1 else 's'}; profile {self.profile}",
            f"columns: {cols}",
            f"metadata (at open): {c.requests} request{'' if c.requests == 1 else 's'}, "
            f"{c.bytes_read:,} bytes: "
            + (("the tail read (trailer and footer) and a head read" if self.version >= 23
                else "the tail read (no trailer) and a head read") if c.head_read else
               "one read of the whole file")
            + f" held the header and metadata of {c.in_first_read} object"
            + ("" if c.in_first_read == 1 else "s")
            + ("" if c.in_first_read >= c.objects else
               f"; {c.requests - (2 if c.head_read else 1)} more in a chain (each "
               "object's header gives the next object's offset)"),
            *([f"warm open: {c.recalled} of those requests sent with the tail read, where "
               "the last open of this file (same size and version) read"] if c.recalled
              else []),
            f"data: {self.request_count} request{'' if self.request_count == 1 else 's'} in "
            f"one wave, {self.bytes_to_read:,} bytes for {self.bytes_needed:,} needed "
            f"({len(self.segments)} segments"
            + (f"; {sum(1 for r in self.requests if r.served)} served from bytes read at open"
               if any(r.served for r in self.requests) else "") + ")",
            f"round trips: {_open_trips(c)} at open + {1 if self.request_count else 0} for data",
        ]
        if self.pruned:
            lines.append(f"filter: {self.pruned} of {c.objects} objects ruled out by their "
                         "metadata's min/max (not read)")
        if self.missing_paths:
            lines.append("absent (null): " + ", ".join(self.missing_paths))
        return "\n".join(lines)


def plan_header_layout(segments: list[Segment], paths: list[str], missing: list[str],
                       open_cost: OpenCost, version: int, profile: str | Profile = "s3",
                       available: tuple[int, int] | None = None,
                       held: tuple[tuple[int, int], ...] = ()) -> HeaderLayoutPlan:
    """The data wave for ``segments`` (file offsets) under ``profile``: ``available``
    the largest range read at open, ``held`` every range read at open."""
    p = get_profile(profile)
    needed = sum(s.length for s in segments)
    segs = _uncovered(list(segments), held) if held else list(segments)
    ranges = plan_ranges(segs, p, available)
    if needed != ranges.bytes_needed:  # what the data needs, whoever read it
        ranges = replace(ranges, bytes_needed=needed)
    if held:  # requests inside bytes the open read (the chain's reads) cost nothing
        reqs = tuple(r if r.served or not any(o <= r.offset and r.end <= o + n for o, n in held)
                     else replace(r, served=True) for r in ranges.requests)
        ranges = replace(ranges, requests=reqs,
                         request_count=sum(1 for r in reqs if not r.served),
                         bytes_to_read=sum(r.length for r in reqs if not r.served))
    return HeaderLayoutPlan(tuple(paths), tuple(missing), open_cost, ranges, version, p.name)


def _uncovered(segments: list[Segment], held: tuple[tuple[int, int], ...]) -> list[Segment]:
    """The pieces of ``segments`` no ``held`` range (offset, length) covers: a segment
    the open's reads hold in part (a head read ending inside the first object's data,
    a window of small objects) is read only where they do not."""
    spans = sorted((o, o + n) for o, n in held if n > 0)
    out = []
    for s in segments:
        a, end = s.offset, s.offset + s.length
        pieces = []
        for lo, hi in spans:
            if hi <= a:
                continue
            if lo >= end:
                break
            if lo > a:
                pieces.append((a, lo))
            a = max(a, hi)
            if a >= end:
                break
        if a < end:
            pieces.append((a, end))
        out.extend(s if (x, y) == (s.offset, s.offset + s.length)
                   else replace(s, offset=x, length=y - x) for x, y in pieces)
    return out
