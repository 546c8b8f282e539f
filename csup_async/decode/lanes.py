"""Lockstep speculation: finding every value's tag in a stream with numpy alone.

The stream is cut into regions and one "lane" per region follows the tag chain
from a guessed start, all lanes advancing together as vector operations.  A
guessed chain soon merges into the true one (two chains coincide from their
first shared position on), so the true chain is lane 0 up to where it meets
lane 1's path, then lane 1 up to where it meets lane 2's, and so on.  Each
lane steps by the tag's length; a byte that cannot be a tag of the column's
type advances by one, which makes wrong guesses re-synchronise quickly, and
lanes start at bytes that began tags in the stream's head, which puts most of
them in step from the outset.  Nothing here is trusted: :mod:`.scan` checks
the chain it returns.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..model.errors import FormatError
from .tags import PAD, TagProfile, read_varints, serial_scan

_LANE_MARGIN = 8  # lockstep steps after every lane has left its region (plus a head's)
_LANE_SYNC = 16  # a lane's first positions searched for where the previous lane meets it
_SAMPLE = 256  # values parsed serially from a stream's head to learn its shape


def sample_tags(buf: np.ndarray, count: int | None, prof: TagProfile) -> tuple[float, np.ndarray]:
    """(bytes per value, which bytes began a tag) from the first values of the stream.

    Lanes start at bytes that began tags here (and whose next few steps do
    too), which in practice puts most of them in step from the outset.
    """
    head = buf[:8192].tobytes()
    out: tuple[list[int], list[int], list[int]] = ([], [], [])
    with contextlib.suppress(FormatError):  # a bad value ends the sample, which still counts
        serial_scan(head, 0, 0, None, out, limit=_SAMPLE)
    tags = out[0]
    likely = np.zeros(256, bool)
    if tags:
        likely[np.frombuffer(head, np.uint8)[tags]] = True
    likely &= prof.allowed
    if not likely.any():
        likely = prof.allowed
    if count:
        avg = buf.size / count
    elif tags:
        last = len(tags) - 1
        avg = (out[1][last] + max(out[2][last], 0)) / len(tags)
    else:
        avg = 8.0
    return max(avg, 1.0), likely


def _lane_steps(bpad: np.ndarray, q: np.ndarray, prof: TagProfile, cap: int,
                n: int) -> np.ndarray:
    """How far a lane moves from each offset in ``q`` (uint8, or int64 if some tag is
    longer than a byte).

    The value's size where the type allows its tag; otherwise 1, so a lane
    that is out of step crawls forward until it meets a plausible tag.  Values
    longer than ``cap`` also count as implausible: a wrong guess reading a
    multi-byte tag out of string data would otherwise leap far away, and a
    true value that long just hands over to the serial scanner for one value.
    """
    first = bpad[q]
    st = np.frombuffer(first.tobytes().translate(prof.steps), np.uint8)
    if not prof.multibyte or first.max(initial=0) < 0x80:
        return st
    st = st.astype(np.int64)
    multi = np.flatnonzero(first >= 0x80)
    qm = q[multi]
    b1 = bpad[qm + 1].astype(np.int64)
    size = (first[multi] & 0x7F).astype(np.int64) | (b1 << 7)
    size -= 1
    two = b1 < 0x80
    step = np.where(two & (size <= cap), 2 + np.maximum(size, 0), 1)
    if cap >= 1 << 14:  # values of 16 KiB and more are plausible: 3+ byte tags
        longer = np.flatnonzero(~two)
        if longer.size:
            nbytes, val, good = read_varints(bpad, qm[longer], n)
            size = val - 1
            step[longer] = np.where(good & (size <= cap), nbytes + np.maximum(size, 0), 1)
    st[multi] = step
    return st


def lane_tags(bpad: np.ndarray, n: int, prof: TagProfile, avg: float, likely: np.ndarray,
               stop: int) -> tuple[np.ndarray, int] | None:
    """Tag offsets of the values of ``bpad[:n]`` that begin before ``stop``, and the
    offset of the first value at or past ``stop`` (n at the end), by lockstep
    speculation; None if it did not settle.  The caller verifies the chain.

    Lane k owns region [p_k, p_k+1) and records its path; its positions below
    the region's end are its "own".  The true chain follows lane 0, and moves
    from lane k to a later lane j at the first position past lane k's region
    that is an own position of lane j.  Usually j = k + 1 and the meeting point
    lies within a few steps of both lanes' starts, found with a small bitmap
    per lane; stragglers compare whole paths, and lanes that meet nothing keep
    walking (:class:`_Walk`).  Paths only move forward, so reading each lane's
    kept range in lane order gives the chain sorted.
    """
    per_lane = max(128, int(8 * avg))  # values per lane: amortises the re-synchronisation
    region = max(1024, int(avg * per_lane))
    region = min(region, max(64, stop // 16))
    region |= 1  # an odd spacing keeps the lanes' gathers off the same cache sets
    k = -(-stop // region)
    p = np.arange(k, dtype=np.int64) * region
    pend = p + region
    pend[-1] = stop
    # a lane's start is sought this far into its region
    width = min(region, 16 + 2 * int(avg), PAD)
    pos = _lane_starts(bpad, n, prof, likely, region, k, width, stop)
    # steps recorded past the last lane's region end: enough to cross the next head
    reach = _LANE_MARGIN + int(width / max(avg, 1.0))
    cap = int(region / max(avg, 1.0) * 1.25) + 2 * reach
    # positions, step-major (storing a row per step is cheap), as int32 when they fit
    pdt = np.int32 if n + 2 * PAD < 2**31 else np.int64
    rec = np.empty((cap, k), pdt)
    s = 0
    left = -1  # steps still to record once every lane has left its region
    while left != 0:
        if s == cap:
            cap *= 2
            grown = np.empty((cap, k), pdt)
            grown[:s] = rec[:s]
            rec = grown
        if s % 4 == 0:  # single-byte steps are < 128: the pad holds four of them
            np.minimum(pos, n + 1, out=pos)
        rec[s] = pos
        s += 1
        if left > 0:
            left -= 1
        elif s % 4 == 0 and (pos >= pend).all():
            left = reach
        st = _lane_steps(bpad, pos, prof, region, n)
        pos += st
        if st.dtype != np.uint8:  # multi-byte tags: long steps
            np.minimum(pos, n + 1, out=pos)
    owned = _count_below(rec[:s], pend)
    rec = np.ascontiguousarray(rec[:s].T)  # lane-major for everything below
    exitp = np.full(k, -1, np.int64)
    if k > 1:
        # Lane k-1's first positions past its region (all on the true chain when it is).
        past = rec.ravel()[np.minimum(owned[:-1] + (np.arange(k - 1) * s), k * s - 1)[:, None]
                           + np.arange(reach)]
        # Usually lane k started on the true chain: then they meet at lane k's start.
        met = past == rec[1:, :1]
        found = met.any(axis=1)
        exitp[:-1] = np.where(found, rec[1:, 0], -1)
        miss = np.flatnonzero(~found)
        if miss.size:
            _meet_soon(rec, owned, p, miss, past[miss], exitp, width + int(avg * _LANE_SYNC))
            miss = miss[exitp[miss] < 0]
        if miss.size:
            _meet_next(rec, owned, n, miss, exitp)
    # The last lane leaves the chunk at its first position past ``stop`` (exactly n
    # at the stream's end: a value running past it is an error).
    if owned[-1] < s and stop <= rec[-1, owned[-1]] <= n:
        exitp[-1] = rec[-1, owned[-1]]
    miss = np.flatnonzero(exitp[:-1] < 0)
    extra: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    if miss.size:
        walk = _Walk(bpad, n, stop, prof, region, rec, owned, pos, pend, exitp)
        if not walk.run(miss, 4 if miss.size * 8 < k else k, extra):
            extra = ([], [])
            if not walk.run(miss, k, extra):
                return None
    return _chain_tags(rec, exitp, p, pend, region, stop, n, extra)


def _chain_tags(rec: np.ndarray, exitp: np.ndarray, p: np.ndarray, pend: np.ndarray,
                region: int, stop: int, n: int,
                extra: tuple[list[np.ndarray], list[np.ndarray]]) -> tuple[np.ndarray, int]:
    """The tag offsets on the true chain, from each lane's recorded path (``rec``,
    lane-major) and the position where it leaves its region (``exitp``), with the
    positions the walk added (``extra``); and the chain's first position at or past
    ``stop`` (-1 if the chain died: the caller's check says where)."""
    k = len(exitp)
    entry = np.zeros(k, np.int64)
    leave = np.zeros(k, np.int64)
    on_chain = None
    last = int(exitp[-1])
    if last >= stop and (exitp[:-1] >= p[1:]).all() and (exitp[:-1] < pend[1:]).all():
        entry[1:] = exitp[:-1]
        leave[:] = exitp
    else:
        # some lane was passed over: follow the chain of lanes from lane 0
        on_chain = np.zeros(k, bool)
        exits = exitp.tolist()
        lane, at = 0, 0
        while True:
            on_chain[lane] = True
            entry[lane] = at
            x = exits[lane]
            if x < 0:  # the chain dies here: keep it all, the check will say where
                leave[lane] = n
                last = -1
                break
            leave[lane] = x
            if x >= stop:
                last = x
                break
            lane, at = x // region, x
    keep = rec >= entry[:, None]
    keep &= rec < leave[:, None]
    out = rec[keep].astype(np.int64)
    if extra[0]:
        ln = np.concatenate(extra[0])
        xp = np.concatenate(extra[1])
        sel = xp < leave[ln]
        if on_chain is not None:
            sel &= on_chain[ln]
        xp = np.sort(xp[sel])
        if xp.size:
            out = np.insert(out, np.searchsorted(out, xp), xp)
    return out, last


def _lane_starts(bpad: np.ndarray, n: int, prof: TagProfile, likely: np.ndarray,
                 region: int, k: int, width: int, stop: int) -> np.ndarray:
    """Where each lane starts: the first byte of its region's head that is a likely tag
    and stays on likely tags for a few steps (lane 0 starts at 0, of course).

    Null tags (zero bytes) are tried last: zeros abound inside values too.
    """
    p = np.arange(k, dtype=np.int64) * region
    heads = np.ascontiguousarray(
        np.lib.stride_tricks.as_strided(bpad, shape=(k, width), strides=(region, 1)))
    inside = min(stop - int(p[-1]), width)  # the last head may run past the chunk's end
    pos = p.copy()
    lanes = np.arange(k)
    nonzero = likely.astype(np.uint8)
    nonzero[0] = 0
    for attempt in range(4):
        if attempt in (0, 2):  # the null tags too, from the third attempt on
            table = (nonzero if attempt == 0 else likely.astype(np.uint8)).tobytes()
            cand = np.frombuffer(heads[lanes].tobytes().translate(table), bool).reshape(
                lanes.size, width).copy()
            if lanes[-1] == k - 1:
                cand[-1, inside:] = False
        col = cand.argmax(axis=1)
        ok = cand[np.arange(lanes.size), col]
        x = np.minimum(p[lanes] + col, n)
        for _step in range(3):
            x = np.minimum(x + _lane_steps(bpad, x, prof, region, n), n)
            ok &= likely[bpad[x]] | (x == n)
        pos[lanes[ok]] += col[ok]
        cand[np.arange(lanes.size), col] = False
        cand, lanes = cand[~ok], lanes[~ok]
        if not lanes.size:
            break
    pos[0] = 0
    return pos


def _count_below(rec: np.ndarray, pend: np.ndarray) -> np.ndarray:
    """How many of each lane's positions (columns of ``rec``, ascending) are below its
    region's end: a binary search on all lanes at once."""
    s, k = rec.shape
    lo = np.zeros(k, np.int64)
    hi = np.full(k, s, np.int64)
    lanes = np.arange(k)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) >> 1
        below = open_ & (rec[np.minimum(mid, s - 1), lanes] < pend)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)


def _meet_soon(rec: np.ndarray, owned: np.ndarray, p: np.ndarray, lanes: np.ndarray,
               past: np.ndarray, exitp: np.ndarray, span: int) -> None:
    """For each of ``lanes`` (k-1), where its ``past`` positions meet one of lane k's
    first own positions: those are marked in a small bitmap per lane (covering
    ``span`` bytes past p_k) and probed."""
    s = rec.shape[1]
    vlen = min(s, _LANE_SYNC)
    nxt = lanes + 1
    first = rec[nxt, :vlen] - p[nxt, None]
    base = (np.arange(lanes.size) * (span + 1))[:, None]
    local = np.zeros(lanes.size * (span + 1), bool)
    usable = (np.arange(vlen) < owned[nxt, None]) & (first < span)
    local[np.where(usable, first, span) + base] = True
    local[base[:, 0] + span] = False
    off = past - p[nxt, None]
    met = local[np.where(off < span, off, span) + base]
    found = met.any(axis=1)
    exitp[lanes[found]] = past[np.flatnonzero(found), met[found].argmax(axis=1)]


def _meet_next(rec: np.ndarray, owned: np.ndarray, n: int, lanes: np.ndarray,
               exitp: np.ndarray) -> None:
    """For each of ``lanes`` (k-1), the first position past its region that is an own
    position of lane k, searching whole paths: a batched sorted-membership test."""
    s = rec.shape[1]
    cols = np.arange(s)
    stride = n + 2
    # lane k's own positions then n+1: each row ascends, and rows are offset apart
    own = np.where(cols < owned[lanes + 1, None], rec[lanes + 1], n + 1).astype(np.int64)
    keys = (own + (np.arange(lanes.size) * stride)[:, None]).ravel()
    past = np.where(cols >= owned[lanes, None], np.minimum(rec[lanes], n), n).astype(np.int64)
    query = past + (np.arange(lanes.size) * stride)[:, None]
    at = np.minimum(np.searchsorted(keys, query.ravel()), keys.size - 1).reshape(query.shape)
    same = keys[at] == query
    hit = same.any(axis=1)
    exitp[lanes[hit]] = past[np.flatnonzero(hit), same[hit].argmax(axis=1)]


class _Walk:
    """Lanes whose path past their region met none of the next lane's own positions:
    find where they meet a later lane's, walking them further if need be."""

    def __init__(self, bpad: np.ndarray, n: int, stop: int, prof: TagProfile, region: int,
                 rec: np.ndarray, owned: np.ndarray, pos: np.ndarray, pend: np.ndarray,
                 exitp: np.ndarray) -> None:
        self.bpad, self.n, self.stop, self.prof, self.region = bpad, n, stop, prof, region
        self.rec, self.owned, self.pos, self.pend, self.exitp = rec, owned, pos, pend, exitp

    def run(self, miss: np.ndarray, ahead: int,
            extra: tuple[list[np.ndarray], list[np.ndarray]]) -> bool:
        """Resolve ``miss`` against the own positions of the ``ahead`` lanes after each;
        False if some lane walked past those (the caller retries with all lanes).

        A lane that reaches ``stop`` without meeting any leaves the chunk there
        (exit at its first position past ``stop``; -1 if that is past the end).
        """
        rec, owned, n, stop, exitp = self.rec, self.owned, self.n, self.stop, self.exitp
        k, s = rec.shape
        cols = np.arange(s)
        if ahead >= k:
            rows = np.arange(k)
            limit = np.full(miss.size, n + 1, np.int64)
        else:
            rows = np.unique(np.minimum(miss[:, None] + np.arange(1, ahead + 1), k - 1))
            limit = self.pend[np.minimum(miss + ahead, k - 1)]
            limit[limit >= stop] = n + 1
        mark = np.zeros(n + PAD, bool)
        sub = rec[rows]
        mark[np.where(cols < owned[rows, None], sub, n)] = True
        mark[n:] = False
        sub = rec[miss]
        past = cols >= owned[miss, None]
        cand = mark[sub] & past
        has = cand.any(axis=1)
        exitp[miss] = np.where(has, sub[np.arange(miss.size), cand.argmax(axis=1)], -1)
        beyond = past & (sub >= stop)
        out = ~has & beyond.any(axis=1)
        if out.any():
            first = sub[np.flatnonzero(out), beyond[out].argmax(axis=1)]
            exitp[miss[out]] = np.where(first <= n, first, -1)
        go = ~has & ~out & (self.pos[miss] < stop)
        lanes, cur, limit = miss[go], self.pos[miss][go], limit[go]
        budget = 4 * s + 256
        while lanes.size:
            budget -= 1
            if budget < 0 or (cur >= limit).any():
                return False
            met = mark[cur]
            if met.any():
                exitp[lanes[met]] = cur[met]
                lanes, cur, limit = lanes[~met], cur[~met], limit[~met]
            extra[0].append(lanes)
            extra[1].append(cur)
            cur = cur + _lane_steps(self.bpad, cur, self.prof, self.region, n)
            end = cur >= stop
            if end.any():
                exitp[lanes[end]] = np.where(cur[end] <= n, cur[end], -1)
                lanes, cur, limit = lanes[~end], cur[~end], limit[~end]
        return True
