"""Needed byte ranges -> read requests, by the cost model of :mod:`planner.profiles`.

The policy, for ranges that must be read (the *needed* bytes):

1. Overlapping or touching ranges form *runs* of needed bytes (a segment that
   appears twice, or two overlapping ones, is read once).
2. Consecutive runs are merged across a gap when ``gap <= profile.gap_limit``
   (``min(max_gap, latency * bandwidth)``).  With ``max_amplification = x``
   the gaps are additionally chosen smallest first while their total stays
   ``<= x * needed``: each merged gap saves one request, so the cheapest ones
   buy the most requests per wasted byte.
3. Within each merged group, runs are packed greedily into requests of at most
   ``cap = profile.request_cap(needed)`` bytes; a run longer than ``cap`` is
   cut into ``ceil(len / cap)`` near-equal parts (the last part may still take
   in the runs that follow).
4. With ``profile.min_part`` set, when the merged groups are no more than
   ``concurrency`` requests, they are
   instead cut into exactly as many parts as connections, largest first and
   never below ``min_part`` (:func:`_spread`): every request then starts at
   once, and the scan waits for the largest part, not for a second wave of
   requests.  ``cap`` then reports the largest part.
5. With ``profile.min_part`` set and no ``max_amplification``, when there are a
   few more requests than ``concurrency`` (a second wave), neighbours are
   merged across the smallest gaps of at most ``profile.breakeven`` until
   exactly ``concurrency`` remain, if :func:`wave_seconds` says that is no
   slower (:func:`_one_wave`): e.g. 6 columns of a file written in 4 frames
   are 18 runs, two of them a second wave on 16 connections.

Guarantees (asserted by the tests): requests are sorted and disjoint, each
starts and ends on needed bytes, no request exceeds ``cap``, every needed byte
is in exactly one request, each hole inside a request is ``<= gap_limit``
(``<= breakeven`` in a one-wave plan of step 5),
and with ``max_amplification = x`` the bytes read exceed the needed bytes by
at most ``x * needed``.  So ``bytes_to_read <= needed + min(x * needed,
(runs - 1) * gap_limit)`` (plus step 5's merged gaps).

The work per segment is done by C-level builtins (sort, map, accumulate,
compress, bisect) so planning 10,000 segments stays in the low milliseconds;
Python-level loops run per *request*.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, compress, islice, repeat
from operator import add, attrgetter, eq, gt, is_, le, ne, not_, sub
from typing import NamedTuple

from csup_async.format.meta import Segment
from csup_async.model.errors import FormatError

from .errors import InvalidRangeError
from .profiles import Profile, get_profile

_OFFSET = attrgetter("offset")
_FULL_KEY = attrgetter("offset", "length", "mem_length", "compression")


class Piece(NamedTuple):
    """The part of one segment a request carries (a tuple so ``for seg, at, start, n in``)."""

    segment: Segment
    offset_in_request: int
    segment_start: int
    length: int


@dataclass(frozen=True, slots=True)
class Request:
    """One ranged read.  ``segments`` are those it carries wholly or partly, by offset.

    ``served`` requests lie inside bytes the caller already has (``available``):
    they describe where the segments' bytes are, but cost no round trip.
    """

    offset: int
    length: int
    segments: tuple[Segment, ...]
    served: bool = False

    @property
    def end(self) -> int:
        return self.offset + self.length

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """Where each carried segment's bytes are in this request (computed on demand).

        A segment split across requests has one piece in each; concatenating its
        pieces in request order gives the segment's bytes exactly.
        """
        a, b = self.offset, self.offset + self.length
        out = []
        for s in self.segments:
            lo = s.offset if s.offset > a else a
            e = s.offset + s.length
            hi = e if e < b else b
            out.append(Piece(s, lo - a, lo - s.offset, hi - lo))
        return tuple(out)

    @property
    def needed_bytes(self) -> int:
        """Bytes of this request that some carried segment needs (the rest is merged gap)."""
        a, b = self.offset, self.offset + self.length
        total, reach = 0, a
        for s in self.segments:  # by offset, so one sweep merges overlaps
            lo = s.offset if s.offset > reach else reach
            e = s.offset + s.length
            hi = e if e < b else b
            if hi > lo:
                total += hi - lo
                reach = hi
        return total

    @property
    def partial_segments(self) -> int:
        """How many carried segments this request holds only part of (split across requests)."""
        a, b = self.offset, self.offset + self.length
        return sum(1 for s in self.segments if s.offset < a or s.offset + s.length > b)


@dataclass(frozen=True, slots=True)
class RangePlan:
    """The coalescer's full answer: what :class:`planner.plan.ScanPlan` is built from."""

    segments: tuple[Segment, ...]
    requests: tuple[Request, ...]
    bytes_needed: int
    bytes_to_read: int
    request_count: int
    request_cap: int
    warm: int = 0
    """Connections the pool had open when this was planned (the caller's word)."""
    new_connections: int = 0
    """Connections the requests would open beyond ``warm`` (each pays ``connect_latency``)."""
    seconds: float = 0.0
    """The cost model's wall time for the requests (:func:`wave_seconds`)."""


def coalesce(ranges: Iterable[Segment | tuple[int, int]], profile: str | Profile = "s3", *,
             available: tuple[int, int] | None = None, warm: int = 0) -> tuple[Request, ...]:
    """Read requests for ``ranges`` (Segments, or plain ``(offset, length)`` pairs).

    Plain pairs are carried as uncompressed Segments of that range.
    """
    segs = [r if isinstance(r, Segment) else _pair(r) for r in ranges]
    return plan_ranges(segs, get_profile(profile), available, warm).requests


def wave_seconds(sizes: Iterable[int], profile: Profile, warm: int = 0) -> float:
    """The cost model's wall time for requests of ``sizes`` bytes, from the first sent.

    Requests run ``profile.concurrency`` at a time, largest first, each on the
    connection that frees first; ``warm`` connections are free at once, the
    others only after ``connect_latency`` (a new connection's TCP and TLS
    round trips).  A request takes ``latency + size / bandwidth``.
    """
    slots = max(1, profile.concurrency)
    w = max(0, min(warm, slots))
    free = [0.0] * w + [profile.connect_latency] * (slots - w)
    heapq.heapify(free)
    end = 0.0
    for size in sorted(sizes, reverse=True):
        at = heapq.heappop(free)
        done = at + profile.latency + size / profile.bandwidth
        end = max(end, done)
        heapq.heappush(free, done)
    return end


def _pair(r: tuple[int, int]) -> Segment:
    offset, length = r
    if offset < 0 or length < 0:
        raise InvalidRangeError(f"byte range ({offset}, {length}) is negative")
    return Segment(offset, length, length)


def plan_ranges(segs: list[Segment], profile: Profile,
                available: tuple[int, int] | None = None, warm: int = 0) -> RangePlan:
    """Dedupe and sort ``segs`` and coalesce them into requests (``segs`` is reordered).

    ``warm``: connections the caller's pool has open (0 for a cold pool); parts
    beyond them pay ``profile.connect_latency`` in the cost model.
    """
    if warm < 0:
        raise InvalidRangeError(f"warm connections must be >= 0, not {warm}")
    if not segs:
        return RangePlan((), (), 0, 0, 0, profile.request_cap(0), warm)
    all_segs, segs, starts, reach, run_s, run_e = _prepare(segs)
    if not segs:
        return RangePlan(all_segs, (), 0, 0, 0, profile.request_cap(0), warm)
    needed = sum(run_e) - sum(run_s)

    served: tuple[int, int] | None = None
    barrier = None
    if available is not None:
        run_s, run_e, served, barrier = _cut_available(run_s, run_e, available)
    to_read = sum(run_e) - sum(run_s)
    cap = profile.request_cap(to_read)
    bounds = _bounds(run_s, run_e, profile, cap, to_read, barrier)
    if profile.min_part:
        # step 4: if the merged groups fit the connections, one wave of requests
        # cut from them beats cap-sized parts that spill into a second wave
        span = run_e[-1] - run_s[0] if run_s else 1  # no cap: every group whole
        whole = _bounds(run_s, run_e, profile, span, to_read, barrier)
        chosen = False
        if len(whole) <= profile.concurrency:
            spread = _cheapest_spread(whole, run_s, run_e, profile, warm)
            largest = max((b - a for a, b in spread), default=0)
            if largest <= profile.max_request:
                bounds, cap, chosen = spread, max(cap, largest), True
        if not chosen and len(bounds) < profile.concurrency:  # (above max_request x conc.)
            bounds = _spread(bounds, run_s, run_e, profile.concurrency, profile.min_part)
        elif (not chosen and len(bounds) > profile.concurrency
              and profile.max_amplification is None):
            bounds = _one_wave(bounds, profile, warm, available)
            cap = max(cap, max(b - a for a, b in bounds))
    flags = [False] * len(bounds)
    if served is not None:
        at = bisect_left(bounds, served)
        bounds.insert(at, served)
        flags.insert(at, True)
    requests = _attach(bounds, flags, segs, starts, reach)
    sizes = [b - a for (a, b), f in zip(bounds, flags, strict=True) if not f]
    n = len(sizes)
    new = max(0, min(n, profile.concurrency) - warm)
    return RangePlan(all_segs, requests, needed, sum(sizes), n, cap, warm, new,
                     wave_seconds(sizes, profile, warm))


def _cheapest_spread(whole: list[tuple[int, int]], run_s: list[int], run_e: list[int],
                     profile: Profile, warm: int) -> list[tuple[int, int]]:
    """Step 4's count of parts: the cut into 1..concurrency parts per :func:`_spread`
    with the least :func:`wave_seconds` (ties: fewer requests).

    With ``warm`` 0 or ``>= concurrency`` every part pays the same setup, so
    the finest cut wins as it always did; only in between does a part's setup
    weigh against its share of the transfer.
    """
    slots = profile.concurrency
    finest = _spread(whole, run_s, run_e, slots, profile.min_part)
    if warm <= 0 or warm >= slots or not profile.connect_latency:
        return finest
    best, best_t = finest, wave_seconds([b - a for a, b in finest], profile, warm)
    seen = {len(finest)}
    for k in range(len(whole), len(finest)):
        parts = _spread(whole, run_s, run_e, k, profile.min_part)
        if len(parts) in seen or max(b - a for a, b in parts) > profile.max_request:
            continue  # (a part over max_request is never a one-wave plan)
        seen.add(len(parts))
        t = wave_seconds([b - a for a, b in parts], profile, warm)
        if t < best_t - 1e-9 or (t <= best_t + 1e-9 and len(parts) < len(best)):
            best, best_t = parts, t
    return best


def _one_wave(bounds: list[tuple[int, int]], profile: Profile, warm: int,
              available: tuple[int, int] | None) -> list[tuple[int, int]]:
    """Policy step 5: a few requests more than connections are merged into one wave
    when the cost model says it is no slower.

    The requests beyond ``concurrency`` would wait for a connection to free up:
    a second wave, one more latency.  Merging neighbours across the smallest
    gaps (each at most the break-even, where a gap's transfer costs no more
    than a request's latency) until exactly ``concurrency`` remain puts every
    request in the first wave; the merge is kept only if :func:`wave_seconds`
    is no higher and no request exceeds ``max_request``.  Never across bytes
    the caller already holds.
    """
    excess = len(bounds) - profile.concurrency
    lo, hi = available if available is not None else (0, 0)
    hi += lo
    gaps = sorted((bounds[i + 1][0] - bounds[i][1], i) for i in range(len(bounds) - 1)
                  if bounds[i + 1][0] - bounds[i][1] <= profile.breakeven
                  and not (bounds[i][1] < hi and bounds[i + 1][0] > lo))
    if len(gaps) < excess:
        return bounds
    joined = {i for _, i in gaps[:excess]}
    merged: list[tuple[int, int]] = []
    for i, (a, b) in enumerate(bounds):
        if i and i - 1 in joined:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    if max(b - a for a, b in merged) > profile.max_request:
        return bounds
    before = wave_seconds([b - a for a, b in bounds], profile, warm)
    after = wave_seconds([b - a for a, b in merged], profile, warm)
    return merged if after <= before + 1e-9 else bounds


def _prepare(segs: list[Segment]) -> tuple[tuple[Segment, ...], list[Segment], list[int],
                                           list[int], list[int], list[int]]:
    """Sort and dedupe; return every segment, the non-empty ones with their starts and
    ``reach`` (running maximum of the ends), and the runs of needed bytes.

    The common case (non-empty, non-overlapping segments) is a few vectorized
    passes; duplicates, overlaps and empty segments take the general path.
    """
    segs.sort(key=_OFFSET)
    starts = [s.offset for s in segs]
    lens = [s.length for s in segs]
    shortest = min(lens)
    if starts[0] < 0 or shortest < 0:
        raise FormatError("a segment has a negative offset or length")
    ends = list(map(add, starts, lens))
    gaps = list(map(sub, islice(starts, 1, None), ends))
    if shortest > 0 and (not gaps or min(gaps) >= 0):
        return (tuple(segs), segs, starts, ends, *_disjoint_runs(starts, ends, gaps))
    same = list(map(is_, islice(segs, 1, None), segs))
    if any(same):  # the same object listed twice (a shared segmap): drop in one pass
        keep = [True, *map(not_, same)]
        segs = list(compress(segs, keep))
        starts = list(compress(starts, keep))
        ends = list(compress(ends, keep))
    if any(map(eq, starts, islice(starts, 1, None))):  # equal segments, distinct objects
        segs = _dedupe(segs, starts)
        starts = [s.offset for s in segs]
        ends = [s.offset + s.length for s in segs]
    all_segs = tuple(segs)
    if shortest == 0:  # empty segments need no bytes and ride in no request
        keep = list(map(ne, starts, ends))
        segs = list(compress(segs, keep))
        starts = list(compress(starts, keep))
        ends = list(compress(ends, keep))
        if not segs:
            return all_segs, [], [], [], [], []
    gaps = list(map(sub, islice(starts, 1, None), ends))
    if not gaps or min(gaps) >= 0:
        return (all_segs, segs, starts, ends, *_disjoint_runs(starts, ends, gaps))
    reach = list(accumulate(ends, max))
    new = list(compress(range(1, len(starts)), map(gt, islice(starts, 1, None), reach)))
    run_s = [starts[0], *map(starts.__getitem__, new)]
    run_e = [*map(reach.__getitem__, [i - 1 for i in new]), reach[-1]]
    return all_segs, segs, starts, reach, run_s, run_e


def _disjoint_runs(starts: list[int], ends: list[int], gaps: list[int]
                   ) -> tuple[list[int], list[int]]:
    """Runs of sorted, disjoint ranges: one breaks wherever a gap is non-zero."""
    run_s = [starts[0], *map(starts.__getitem__, compress(range(1, len(starts)), gaps))]
    run_e = [*map(ends.__getitem__, compress(range(len(gaps)), gaps)), ends[-1]]
    return run_s, run_e


def _dedupe(segs: list[Segment], starts: list[int]) -> list[Segment]:
    """Drop repeated segments; order each group of equal offsets canonically.

    Only the (few) groups of segments sharing an offset are looked at, so a
    file with some duplicated segments still plans in one pass.
    """
    dups = list(compress(range(1, len(starts)), map(eq, islice(starts, 1, None), starts)))
    out: list[Segment] = []
    done = 0
    k = 0
    while k < len(dups):
        first = dups[k] - 1
        stop = dups[k] + 1
        k += 1
        while k < len(dups) and dups[k] == stop:
            stop += 1
            k += 1
        out += segs[done:first]
        group = segs[first:stop]
        if stop - first == 2 and group[0] is group[1]:
            out.append(group[0])
        else:
            unique = dict(zip(map(_FULL_KEY, group), group, strict=True))
            out += [unique[key] for key in sorted(unique)]
        done = stop
    out += segs[done:]
    return out


def _cut_available(run_s: list[int], run_e: list[int], available: tuple[int, int]
                   ) -> tuple[list[int], list[int], tuple[int, int] | None, int | None]:
    """Remove the bytes of ``available`` from the runs.

    Returns the runs still to read, the hull of the needed bytes inside
    ``available`` (one served request: those bytes are already there, so gaps
    between them cost nothing), and the index of the first run right of
    ``available`` (requests may not merge across bytes already held: that
    keeps requests disjoint and never re-reads them).
    """
    try:
        a_off, a_len = available
    except (TypeError, ValueError):
        raise InvalidRangeError(f"available must be (offset, length), not {available!r}") from None
    if a_off < 0 or a_len < 0:
        raise InvalidRangeError(f"available range ({a_off}, {a_len}) is negative")
    a, b = a_off, a_off + a_len
    lo = bisect_right(run_e, a)  # runs ending at or before a stay whole on the left
    hi = bisect_left(run_s, b)  # runs starting at or after b stay whole on the right
    if a == b:
        return run_s, run_e, None, None
    if lo >= hi:  # nothing needed inside; still, no request may read across those bytes
        return run_s, run_e, None, (lo if 0 < lo < len(run_s) else None)
    served = (max(run_s[lo], a), min(run_e[hi - 1], b))
    left_s, left_e = run_s[:lo], run_e[:lo]
    if run_s[lo] < a:
        left_s.append(run_s[lo])
        left_e.append(a)
    right_s, right_e = run_s[hi:], run_e[hi:]
    if run_e[hi - 1] > b:
        right_s.insert(0, b)
        right_e.insert(0, run_e[hi - 1])
    barrier = len(left_s) if left_s and right_s else None
    return left_s + right_s, left_e + right_e, served, barrier


def _bounds(run_s: list[int], run_e: list[int], profile: Profile, cap: int, needed: int,
            barrier: int | None) -> list[tuple[int, int]]:
    """Request boundaries for sorted, disjoint runs (policy steps 2 and 3)."""
    m = len(run_s)
    if m == 0:
        return []
    limit = profile.gap_limit
    if m == 1:
        merge: list[bool] = []
    else:
        gaps = list(map(sub, islice(run_s, 1, None), run_e))
        merge = list(map(le, gaps, repeat(limit, m - 1)))
        x = profile.max_amplification
        if x is not None:
            merge = _within_budget(gaps, merge, int(x * needed))
        if barrier is not None:
            merge[barrier - 1] = False
    out: list[tuple[int, int]] = []
    g0 = 0
    for g1 in (*compress(range(1, m), map(not_, merge)), m):
        if run_e[g1 - 1] - run_s[g0] <= cap:
            out.append((run_s[g0], run_e[g1 - 1]))
        else:
            _pack(run_s, run_e, g0, g1, cap, out)
        g0 = g1
    return out


def _spread(bounds: list[tuple[int, int]], run_s: list[int], run_e: list[int], slots: int,
            min_part: int) -> list[tuple[int, int]]:
    """Policy step 4: while fewer requests than connections, split the largest.

    All requests of a scan are in flight at once then, so the scan's wall time
    is one latency plus the *largest* request's transfer: cutting it in two
    halves that, for one more request.  Greedy on the largest part (which
    minimises the largest part for a given count), down to parts of
    ``min_part`` (below it a request's own overhead outweighs the transfer it
    saves).  A cut inside a gap drops the gap: pieces still start and end on
    needed bytes, and never read more than before.
    """
    parts = [1] * len(bounds)
    heap = [(-(b - a), i) for i, (a, b) in enumerate(bounds)]
    heapq.heapify(heap)
    count = len(bounds)
    while count < slots and heap:
        _, i = heapq.heappop(heap)
        a, b = bounds[i]
        if (b - a) // (parts[i] + 1) < min_part:
            break  # the largest part is already small: so are all others
        parts[i] += 1
        count += 1
        heapq.heappush(heap, (-((b - a) // parts[i]), i))
    if count == len(bounds):
        return bounds
    out: list[tuple[int, int]] = []
    for (a, b), k in zip(bounds, parts, strict=True):
        start = a
        for j in range(1, k):
            c = a + (j * (b - a)) // k
            idx = bisect_right(run_s, c) - 1
            if run_s[idx] < c < run_e[idx]:
                end, nxt = c, c
            elif c >= run_e[idx]:  # in the gap after run idx
                end, nxt = run_e[idx], run_s[idx + 1]
            else:  # c starts run idx: the previous piece ends with run idx - 1
                end, nxt = run_e[idx - 1], c
            if end <= start or nxt >= b:
                continue
            out.append((start, end))
            start = nxt
        out.append((start, b))
    return out


def _within_budget(gaps: list[int], merge: list[bool], budget: int) -> list[bool]:
    """Keep the smallest mergeable gaps whose total fits ``budget`` (ties: leftmost first)."""
    cand = list(compress(range(len(gaps)), merge))
    cand.sort(key=gaps.__getitem__)
    k = bisect_right(list(accumulate(map(gaps.__getitem__, cand))), budget)
    chosen = [False] * len(gaps)
    for i in cand[:k]:
        chosen[i] = True
    return chosen


def _pack(run_s: list[int], run_e: list[int], g0: int, g1: int, cap: int,
          out: list[tuple[int, int]]) -> None:
    """Greedy packing of runs ``g0:g1`` into requests of at most ``cap`` bytes."""
    cs = ce = -1
    for i in range(g0, g1):
        s, e = run_s[i], run_e[i]
        if cs >= 0 and e - cs <= cap:
            ce = e
            continue
        if cs >= 0:
            out.append((cs, ce))
        n_bytes = e - s
        if n_bytes > cap:
            parts = -(-n_bytes // cap)
            prev = s
            for k in range(1, parts):
                cut = s + (k * n_bytes) // parts
                out.append((prev, cut))
                prev = cut
            cs, ce = prev, e
        else:
            cs, ce = s, e
    out.append((cs, ce))


def _attach(bounds: list[tuple[int, int]], served: list[bool], segs: list[Segment],
            starts: list[int], reach: list[int]) -> tuple[Request, ...]:
    """Give each request the segments it carries: those starting inside it, plus any that
    start earlier and reach into it (split or overlapping segments)."""
    out = []
    lo = 0
    for (a, b), is_served in zip(bounds, served, strict=True):
        lo = bisect_left(starts, a, lo)
        hi = bisect_left(starts, b, lo)
        if lo and reach[lo - 1] > a:
            if reach[lo - 1] == segs[lo - 1].offset + segs[lo - 1].length and (
                    lo < 2 or reach[lo - 2] <= starts[lo - 1]):
                carried: tuple[Segment, ...] = (segs[lo - 1],)  # the usual split segment
            else:
                k = bisect_right(reach, a, 0, lo)
                carried = tuple(s for s in segs[k:lo] if s.offset + s.length > a)
            out.append(Request(a, b - a, carried + tuple(segs[lo:hi]), is_served))
        else:
            out.append(Request(a, b - a, tuple(segs[lo:hi]), is_served))
        lo = hi
    return tuple(out)
