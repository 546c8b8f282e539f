"""Vectorised decoders: column-stream bytes to numpy arrays.

A primitive column stream is a run of tag-encoded values (uvarint tag, 0 for
null, else body length + 1, then the body).  Where each value starts depends
on every tag before it, so the scan is serial by nature, and a plain Python
loop manages only ~8 MB/s.  This module finds the values with numpy alone:

* constant stride: when every value has the same single-byte tag (float64
  without nulls, bools, ...) one strided comparison proves it;
* lockstep speculation (:func:`_lane_tags`): the stream is cut into regions and
  one "lane" per region follows the tag chain from a guessed start, all lanes
  advancing together as numpy vector operations.  A guessed chain soon merges
  into the true one (the two coincide from the first shared position on), so
  the true chain is lane 0 up to where it meets lane 1's path, then lane 1 up
  to where it meets lane 2's, and so on.  Each lane steps by the tag's length;
  a byte that cannot be a tag of the column's type advances by one, which
  makes wrong guesses re-synchronise quickly;
* the serial scanner (:func:`_serial_scan`), the reference semantics: it is
  used for small streams, when speculation does not settle (adversarial,
  periodic data) and to find and describe errors.

Results are checked against the chain rule before they are used, so
speculation only ever changes speed, never answers.

Every function raises only :class:`~csup_async.errors.CsupError` subclasses,
for any input bytes; messages give stream offsets, callers add the file path.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import NamedTuple

import lz4.block
import numpy as np

from .errors import FormatError, LimitError, TruncatedError, UnsupportedTypeError
from .meta import COMPRESSION_LZ4, COMPRESSION_NONE, Segment
from .types import PrimitiveType

__all__ = [
    "DEFAULT_MAX_MEM_LENGTH", "Decoded", "decompress_segment", "scan_tags", "decode_ints",
    "decode_floats", "decode_bools", "decode_varbinary", "validate_utf8", "decode_int32s",
    "presence_to_validity", "lengths_to_offsets", "decode_primitive",
]

Buffer = bytes | bytearray | memoryview

#: Largest decompressed segment accepted by default (256 MiB).  A segment's
#: ``mem_length`` is read from the file, so without a cap a few bytes of LZ4
#: could ask for gigabytes; a writer's default segment is 4 MiB.
DEFAULT_MAX_MEM_LENGTH = 256 << 20

_PAD = 1024  # zero bytes after a stream copy: gathers and lanes may run past the end
_SERIAL_BELOW = 4096  # streams shorter than this are scanned serially (lanes cost ~1 ms)
_LANE_MARGIN = 8  # lockstep steps after every lane has left its region (plus a head's)
_LANE_SYNC = 16  # a lane's first positions searched for where the previous lane meets it
_MAX_TAG_BYTES = 10  # a uvarint of a 64-bit value
_SAMPLE = 256  # values parsed serially from a stream's head to learn its shape


# ------------------------------------------------------------ segments ---


def decompress_segment(raw: Buffer, segment: Segment, *,
                       max_mem_length: int = DEFAULT_MAX_MEM_LENGTH) -> bytes | memoryview:
    """The decompressed bytes of one segment (``raw`` itself when stored uncompressed).

    ``max_mem_length`` caps ``segment.mem_length`` (LimitError beyond it), so a
    corrupt or hostile file cannot make us allocate more than that.
    """
    try:
        nbytes = memoryview(raw).nbytes
    except TypeError:
        raise FormatError(f"segment data of type {type(raw).__name__} is not bytes") from None
    length, mem = segment.length, segment.mem_length
    where = f"segment at offset {segment.offset}"
    if length < 0 or mem < 0:
        raise FormatError(f"{where} has a negative length ({length}) or mem_length ({mem})")
    if nbytes < length:
        raise TruncatedError(f"{where}: got {nbytes} bytes, its length is {length}")
    if nbytes > length:
        raise FormatError(f"{where}: got {nbytes} bytes, its length is {length}")
    if mem > max_mem_length:
        raise LimitError(f"{where} decompresses to {mem} bytes, over "
                         f"max_mem_length={max_mem_length}")
    if segment.compression == COMPRESSION_NONE:
        if mem != length:
            raise FormatError(f"{where} is uncompressed but its mem_length {mem} "
                              f"differs from its length {length}")
        return raw
    if segment.compression != COMPRESSION_LZ4:
        raise FormatError(f"{where} has unknown compression format {segment.compression}")
    # LZ4 expands by at most ~255:1; refuse an impossible claim before allocating it.
    if mem > 256 * length + 64:
        raise FormatError(f"{where}: {length} bytes of LZ4 cannot decompress to {mem} bytes")
    try:
        out = lz4.block.decompress(raw, uncompressed_size=mem)
    except Exception as e:  # LZ4BlockError, ValueError, MemoryError: all mean "corrupt"
        raise FormatError(f"{where}: corrupt LZ4 block ({e})") from None
    if len(out) != mem:
        raise FormatError(f"{where}: LZ4 block decompressed to {len(out)} bytes, "
                          f"mem_length says {mem}")
    return out


# ---------------------------------------------------------- scanning ---


class _Profile(NamedTuple):
    """What tags a column type allows, as lookup tables for the lockstep lanes.

    ``steps`` maps a tag's first byte to how far a lane moves: the value's size
    when the type allows that single-byte tag, 1 ("not a tag here,
    resynchronise") when it does not, 0 for the first byte of a multi-byte tag
    (computed separately).  It is a ``bytes.translate`` table: that is the
    fastest byte-to-byte lookup Python has.  ``allowed[b]`` says whether ``b``
    can begin a tag of the type.
    """

    steps: bytes
    allowed: np.ndarray
    multibyte: bool


def _profile(tags: np.ndarray | None) -> _Profile:
    """Lookup tables for a type whose single-byte tags are ``tags`` (None: any)."""
    byte = np.arange(256)
    ok = np.zeros(256, bool)
    if tags is None:
        ok[:128] = True
    else:
        ok[tags] = True
    steps = np.where(ok, np.maximum(byte, 1), 1)
    if tags is None:
        steps[128:] = 0
        ok[128:] = True
    return _Profile(steps.astype(np.uint8).tobytes(), ok, tags is None)


_ANY = _profile(None)
_INT_PROFILES = {w: _profile(np.arange(w + 2)) for w in (1, 2, 4, 8)}
_INT32S = _profile(np.arange(1, 6))
_FLOAT_PROFILES = {w: _profile(np.array([0, w + 1])) for w in (2, 4, 8)}
_BOOLS = _profile(np.array([0, 2]))


class _Tags:
    """The values of a stream: tag offsets and, lazily, body offsets and lengths.

    When every tag is one byte (nearly always) the tag bytes ``v`` say it all:
    body = tag offset + 1, length = v - 1 (-1 for null); decoders use ``v``
    directly and skip materialising the rest.
    """

    __slots__ = ("_lengths", "_starts", "tags", "v")

    def __init__(self, tags: np.ndarray, v: np.ndarray | None,
                 starts: np.ndarray | None = None, lengths: np.ndarray | None = None) -> None:
        self.tags, self.v, self._starts, self._lengths = tags, v, starts, lengths

    @property
    def starts(self) -> np.ndarray:
        if self._starts is None:
            self._starts = self.tags + 1
        return self._starts

    @property
    def lengths(self) -> np.ndarray:
        if self._lengths is None:
            assert self.v is not None
            self._lengths = self.v.astype(np.int64)
            self._lengths -= 1
        return self._lengths

    def shifted(self, by: int) -> _Tags:
        return _Tags(self.tags + by, self.v, None if self._starts is None else self._starts + by,
                     self._lengths)

    @staticmethod
    def join(parts: list[_Tags]) -> _Tags:
        if len(parts) == 1:
            return parts[0]
        tags = np.concatenate([t.tags for t in parts])
        if all(t.v is not None for t in parts):
            return _Tags(tags, np.concatenate([t.v for t in parts]))  # type: ignore[misc]
        return _Tags(tags, None, np.concatenate([t.starts for t in parts]),
                     np.concatenate([t.lengths for t in parts]))


def _u8(stream: Buffer) -> np.ndarray:
    """A zero-copy uint8 view of any contiguous buffer (a copy only if it is not)."""
    if isinstance(stream, np.ndarray):
        return np.ascontiguousarray(stream).reshape(-1).view(np.uint8)
    try:
        mv = memoryview(stream)
    except TypeError:
        raise FormatError(f"a column stream must be bytes, not {type(stream).__name__}") from None
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    return np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv,
                         dtype=np.uint8)


def _padded(b: np.ndarray) -> np.ndarray:
    """A copy of the stream with zero padding, so that gathers may overrun the end."""
    out = np.empty(b.size + _PAD, np.uint8)
    out[: b.size] = b
    out[b.size:] = 0
    return out


def _check_count(count: int | None) -> None:
    if count is not None and (not isinstance(count, (int, np.integer)) or count < 0):
        raise FormatError(f"invalid value count {count!r}")


def _count_error(count: int, found: int) -> FormatError:
    return FormatError(f"expected {count} values, the stream holds {found}")


def _serial_scan(buf: bytes | memoryview, pos: int, index: int, count: int | None,
                 out: tuple[list[int], list[int], list[int]], limit: int | None = None) -> int:
    """The reference scanner: append (tag offset, body offset, length) of each value from
    ``pos`` (value number ``index``) on; return where it stopped.

    Plain Python, ~8 MB/s: it handles small streams, the rare inputs where
    speculation does not settle, and every error, with an exact message.
    ``limit`` stops it after that many values.
    """
    tags, starts, lengths = out
    n = len(buf)
    stop = -1 if limit is None else index + limit
    while pos < n:
        if index == stop:
            return pos
        if count is not None and index >= count:
            raise FormatError(f"expected {count} values, but {n - pos} bytes follow the "
                              f"last of them (from stream offset {pos})")
        tpos = pos
        t = buf[pos]
        pos += 1
        if t >= 0x80:
            t &= 0x7F
            shift = 7
            while True:
                if pos >= n:
                    raise TruncatedError(f"the tag of value {index} at stream offset {tpos} "
                                         f"is cut by the end of the stream")
                c = buf[pos]
                pos += 1
                t |= (c & 0x7F) << shift
                if c < 0x80:
                    break
                shift += 7
                if shift >= 7 * _MAX_TAG_BYTES:
                    raise FormatError(f"the tag of value {index} at stream offset {tpos} "
                                      f"is longer than {_MAX_TAG_BYTES} bytes")
        size = t - 1
        if size > n - pos:
            raise TruncatedError(f"value {index} at stream offset {tpos} claims {size} "
                                 f"bytes, but only {n - pos} remain in the stream")
        tags.append(tpos)
        starts.append(pos)
        lengths.append(size)
        if size > 0:
            pos += size
        index += 1
    if count is not None and index != count:
        raise _count_error(count, index)
    return pos


def _varints(bpad: np.ndarray, q: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Decode the uvarint tags at offsets ``q``: (byte count, value, well-formed).

    Values that cannot fit in the stream are clipped to ``n + 1``; a tag of
    more than ten bytes is not well-formed.
    """
    w = bpad[q[:, None] + np.arange(_MAX_TAG_BYTES)]
    stop = w < 0x80
    good = stop.any(axis=1)
    nbytes = stop.argmax(axis=1) + 1
    val = np.zeros(q.size, np.uint64)
    for j in range(9):  # 9 groups are 63 bits; a 10-byte tag is beyond any stream anyway
        part = (w[:, j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        val |= np.where(j < nbytes, part, np.uint64(0))
    val = np.where(nbytes >= _MAX_TAG_BYTES, np.uint64(n + 1),
                   np.minimum(val, np.uint64(n + 1))).astype(np.int64)
    return nbytes, val, good


def _lane_steps(bpad: np.ndarray, q: np.ndarray, prof: _Profile, cap: int,
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
            nbytes, val, good = _varints(bpad, qm[longer], n)
            size = val - 1
            step[longer] = np.where(good & (size <= cap), nbytes + np.maximum(size, 0), 1)
    st[multi] = step
    return st


def _lane_tags(bpad: np.ndarray, n: int, prof: _Profile, avg: float,
               likely: np.ndarray) -> np.ndarray | None:
    """Tag offsets of the values of ``bpad[:n]`` by lockstep speculation; None if it
    did not settle.  Offsets are on the lanes' chain, which the caller verifies.

    Lane k owns region [p_k, p_k+1) and records its path; its positions below
    the region's end are its "own".  The true chain follows lane 0, and moves
    from lane k to a later lane j at the first position past lane k's region
    that is an own position of lane j.  Usually j = k + 1 and the meeting point
    lies within a few steps of both lanes' starts, found with a small bitmap
    per lane; stragglers compare whole paths, and lanes that meet nothing keep
    walking (:func:`_walk`).  Paths only move forward, so reading each lane's
    kept range in lane order gives the chain sorted.
    """
    per_lane = max(128, int(8 * avg))  # values per lane: amortises the re-synchronisation
    region = max(1024, int(avg * per_lane))
    region = min(region, max(64, n // 16))
    region |= 1  # an odd spacing keeps the lanes' gathers off the same cache sets
    k = -(-n // region)
    p = np.arange(k, dtype=np.int64) * region
    pend = p + region
    pend[-1] = n
    # a lane's start is sought this far into its region
    width = min(region, 16 + 2 * int(avg), _PAD)
    pos = _lane_starts(bpad, n, prof, likely, region, k, width)
    # steps recorded past the last lane's region end: enough to cross the next head
    reach = _LANE_MARGIN + int(width / max(avg, 1.0))
    cap = int(region / max(avg, 1.0) * 1.25) + 2 * reach
    # positions, step-major (storing a row per step is cheap), as int32 when they fit
    pdt = np.int32 if n + 2 * _PAD < 2**31 else np.int64
    rec = np.empty((cap, k), pdt)
    s = 0
    left = -1  # steps still to record once every lane has left its region
    # single-byte steps are < 128, so the pad holds 4 of them; multi-byte ones need a clamp
    clamp_every = 1 if prof.multibyte else 4
    while left != 0:
        if s == cap:
            cap *= 2
            grown = np.empty((cap, k), pdt)
            grown[:s] = rec[:s]
            rec = grown
        if s % clamp_every == 0:
            np.minimum(pos, n + 1, out=pos)
        rec[s] = pos
        s += 1
        if left > 0:
            left -= 1
        elif s % 4 == 0 and (pos >= pend).all():
            left = reach
        pos += _lane_steps(bpad, pos, prof, region, n)
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
    reached_end = np.zeros(k, bool)
    reached_end[-1] = bool((rec[-1] == n).any())
    miss = np.flatnonzero(exitp[:-1] < 0)
    extra: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    if miss.size:
        walk = _Walk(bpad, n, prof, region, rec, owned, pos, pend, exitp, reached_end)
        if not walk.run(miss, 4 if miss.size * 8 < k else k, extra):
            extra = ([], [])
            if not walk.run(miss, k, extra):
                return None
    exitp = np.where((exitp < 0) & reached_end, n, exitp)
    entry = np.zeros(k, np.int64)
    leave = np.zeros(k, np.int64)
    on_chain = None
    if exitp[-1] == n and (exitp[:-1] >= p[1:]).all() and (exitp[:-1] < pend[1:]).all():
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
            if x < 0:
                return None  # the chain dies: an error, for the serial scan to describe
            leave[lane] = x
            if x == n:
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
    return out


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

    def __init__(self, bpad: np.ndarray, n: int, prof: _Profile, region: int,
                 rec: np.ndarray, owned: np.ndarray, pos: np.ndarray, pend: np.ndarray,
                 exitp: np.ndarray, reached_end: np.ndarray) -> None:
        self.bpad, self.n, self.prof, self.region = bpad, n, prof, region
        self.rec, self.owned, self.pos, self.pend = rec, owned, pos, pend
        self.exitp, self.reached_end = exitp, reached_end

    def run(self, miss: np.ndarray, ahead: int,
            extra: tuple[list[np.ndarray], list[np.ndarray]]) -> bool:
        """Resolve ``miss`` against the own positions of the ``ahead`` lanes after each;
        False if some lane walked past those (the caller retries with all lanes)."""
        rec, owned, n, exitp = self.rec, self.owned, self.n, self.exitp
        k, s = rec.shape
        cols = np.arange(s)
        if ahead >= k:
            rows = np.arange(k)
            limit = np.full(miss.size, n + 1, np.int64)
        else:
            rows = np.unique(np.minimum(miss[:, None] + np.arange(1, ahead + 1), k - 1))
            limit = self.pend[np.minimum(miss + ahead, k - 1)]
        mark = np.zeros(n + _PAD, bool)
        sub = rec[rows]
        mark[np.where(cols < owned[rows, None], sub, n)] = True
        mark[n] = False
        sub = rec[miss]
        cand = mark[sub]
        cand &= cols >= owned[miss, None]
        has = cand.any(axis=1)
        exitp[miss] = np.where(has, sub[np.arange(miss.size), cand.argmax(axis=1)], -1)
        self.reached_end[miss] = ~has & (sub == n).any(axis=1)
        go = ~has & (self.pos[miss] < n)
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
            end = cur >= n
            if end.any():
                self.reached_end[lanes[cur == n]] = True
                lanes, cur, limit = lanes[~end], cur[~end], limit[~end]
        return True


def _sample(buf: np.ndarray, count: int | None, prof: _Profile) -> tuple[float, np.ndarray]:
    """(bytes per value, which bytes began a tag) from the first values of the stream.

    Lanes start at bytes that began tags here (and whose next few steps do
    too), which in practice puts most of them in step from the outset.
    """
    head = buf[:8192].tobytes()
    out: tuple[list[int], list[int], list[int]] = ([], [], [])
    try:
        _serial_scan(head, 0, 0, None, out, limit=_SAMPLE)
    except FormatError:
        pass  # the head ends inside a value: what was read still counts
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


def _lane_starts(bpad: np.ndarray, n: int, prof: _Profile, likely: np.ndarray,
                 region: int, k: int, width: int) -> np.ndarray:
    """Where each lane starts: the first byte of its region's head that is a likely tag
    and stays on likely tags for a few steps (lane 0 starts at 0, of course).

    Null tags (zero bytes) are tried last: zeros abound inside values too.
    """
    p = np.arange(k, dtype=np.int64) * region
    heads = np.ascontiguousarray(
        np.lib.stride_tricks.as_strided(bpad, shape=(k, width), strides=(region, 1)))
    inside = min(n - int(p[-1]), width)  # the last head may run past the stream's end
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


def _verify(bpad: np.ndarray, n: int, tags: np.ndarray) -> tuple[_Tags, int]:
    """Check speculative tag offsets against the chain rule (each value ends where
    the next begins, the last at ``n``).

    Returns the values and -1, or the values before the first offset that is
    not followed correctly and that offset (the serial scanner takes over
    there).  Tags the type does not allow are not rejected here: the lanes
    step over them by one byte, which the chain rule catches unless the tag
    is 0 or 1, and the decoders check lengths anyway.
    """
    if not tags.size or tags[0] != 0:
        return _Tags(tags[:0], bpad[:0]), 0
    v = bpad[tags]
    hi = np.flatnonzero(v >= 0x80)
    if hi.size == 0:
        ends = tags + np.maximum(v, 1)
        lengths = starts = None
    else:
        lengths = v.astype(np.int64)
        lengths -= 1
        starts = tags + 1
        nbytes, val, good = _varints(bpad, tags[hi], n)
        lengths[hi] = np.where(good, val - 1, n + 1)
        starts[hi] = tags[hi] + nbytes
        ends = starts + np.maximum(lengths, 0)
    bad = ends[:-1] != tags[1:]
    if bad.any() or ends[-1] != n:
        i = int(bad.argmax()) if bad.any() else tags.size - 1
        if lengths is None:
            return _Tags(tags[:i], v[:i]), int(tags[i])
        return _Tags(tags[:i], None, starts[:i], lengths[:i]), int(tags[i])  # type: ignore[index]
    if lengths is None:
        return _Tags(tags, v), -1
    return _Tags(tags, None, starts, lengths), -1


_MAX_RESTARTS = 32  # values the lanes cannot follow (very long, or errors) before going serial
_STRICT = False  # tests set this: let the lanes' own exceptions through instead of falling back


def _scan(buf: np.ndarray, bpad: np.ndarray | None, count: int | None, prof: _Profile) -> _Tags:
    """Every value's tag offset, body offset and length, checked against ``count``."""
    _check_count(count)
    n = buf.size
    parts: list[_Tags] = []
    pos = index = 0
    if n >= _SERIAL_BELOW and bpad is not None:
        avg, likely = _sample(buf, count, prof)
        view = memoryview(buf)
        for _ in range(_MAX_RESTARTS):
            if n - pos < _SERIAL_BELOW:
                break
            sub = bpad[pos:]
            try:
                found = _lane_tags(sub, n - pos, prof, avg, likely)
            except (IndexError, ValueError, MemoryError):
                if _STRICT:
                    raise
                found = None  # a heuristic's bug must not become the user's error
            if found is None:
                break
            res, resume = _verify(sub, n - pos, found)
            if res.tags.size:
                parts.append(res.shifted(pos) if pos else res)
                index += res.tags.size
            if resume < 0:
                pos = n
                break
            # the lanes could not follow this value: take it serially (errors raise here)
            one: tuple[list[int], list[int], list[int]] = ([], [], [])
            pos = _serial_scan(view, pos + resume, index, count, one, limit=1)
            parts.append(_serial_tags(one))
            index += 1
    if pos < n or not parts:
        rest: tuple[list[int], list[int], list[int]] = ([], [], [])
        _serial_scan(buf.tobytes() if n - pos > 4096 else memoryview(buf), pos, index, count,
                     rest)
        parts.append(_serial_tags(rest))
    elif count is not None and index != count:
        raise _count_error(count, index)
    return _Tags.join(parts)


def _serial_tags(out: tuple[list[int], list[int], list[int]]) -> _Tags:
    tags, starts, lengths = (np.array(x, np.int64) for x in out)
    if ((starts - tags) == 1).all() and (lengths < 127).all():
        return _Tags(tags, (lengths + 1).astype(np.uint8), starts, lengths)
    return _Tags(tags, None, starts, lengths)


def scan_tags(stream: Buffer, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start offset of each value's body, its length or -1 for null), both int64.

    With ``count``, the stream must hold exactly that many values and end with
    the last; without, it must end exactly after a whole value.
    """
    buf = _u8(stream)
    res = _scan(buf, _padded(buf) if buf.size >= _SERIAL_BELOW else None, count, _ANY)
    return res.starts, res.lengths


# ---------------------------------------------------------- decoders ---

# keeps the low (code - 1) bytes of a word, code being a value's length + 1 (0: null)
_MASK_BY_CODE = np.array([0, 0] + [(1 << (8 * i)) - 1 for i in range(1, 9)], np.uint64)
_ONE = np.uint64(1)


def _stride(buf: np.ndarray, count: int | None, tag: int) -> int | None:
    """The number of values if every one is the single-byte tag ``tag`` (no nulls)."""
    n = buf.size
    size = max(tag, 1)
    if n == 0 or n % size or (count is not None and count * size != n):
        return None
    if buf[0] != tag or (buf[: 64 * size: size] != tag).any():
        return None
    if (buf[::size] != tag).any():
        return None
    return n // size


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _validity(code: np.ndarray) -> np.ndarray | None:
    valid = code != 0
    return None if valid.all() else valid


def _gather_words(bpad: np.ndarray, at: np.ndarray, size: int, skip: int = 0) -> np.ndarray:
    """The ``size``-byte little-endian word at each offset + ``skip`` (unaligned, padded)."""
    dt = np.dtype(f"<u{size}")
    view = np.ndarray((bpad.size - size + 1 - skip,), dtype=dt, buffer=bpad, offset=skip,
                      strides=(1,))
    return view[at]


def _codes(res: _Tags) -> tuple[np.ndarray, np.ndarray, int]:
    """(length + 1 of each value, 0 for null; offsets; skip from offset to body)."""
    if res.v is not None:
        return res.v, res.tags, 1
    return res.lengths + 1, res.starts, 0


def _length_error(what: str, res: _Tags, bad: np.ndarray) -> FormatError:
    i = _first_bad(bad)
    return FormatError(f"{what} value of {res.lengths[i]} bytes at stream offset {res.tags[i]}")


def decode_ints(stream: Buffer, count: int | None = None, *, signed: bool,
                bits: int = 64) -> tuple[np.ndarray, np.ndarray | None]:
    """(int64 or uint64 values, validity or None when no value is null); nulls hold 0.

    Values are little-endian with high zero bytes dropped, signed ones zig-zag
    encoded first; a value longer than ``bits / 8`` bytes is a FormatError.
    """
    name = f"{'int' if signed else 'uint'}{bits}"
    if bits not in (8, 16, 32, 64):
        raise UnsupportedTypeError(f"{name} has no fast decoder")
    width = bits // 8
    buf = _u8(stream)
    bpad = _padded(buf)
    res = _scan(buf, bpad, count, _INT_PROFILES[width])
    code, at, skip = _codes(res)
    over = code > width + 1
    if over.any():
        raise _length_error(name, res, over)
    words = _gather_words(bpad, at, 8, skip)
    words &= np.take(_MASK_BY_CODE, code.astype(np.intp))
    validity = _validity(code)
    if signed:
        sign = words & _ONE
        np.negative(sign, out=sign)
        words >>= _ONE
        words ^= sign
        return words.view(np.int64), validity
    return words, validity


def decode_int32s(stream: Buffer, count: int | None = None) -> np.ndarray:
    """int32 values of a lengths, union-tag, super-ID or presence stream (no nulls)."""
    buf = _u8(stream)
    bpad = _padded(buf)
    res = _scan(buf, bpad, count, _INT32S)
    code, at, skip = _codes(res)
    null = code == 0
    if null.any():
        raise FormatError(f"a null at stream offset {res.tags[_first_bad(null)]} of an "
                          f"int32 stream")
    over = code > 5
    if over.any():
        raise _length_error("int32", res, over)
    words = _gather_words(bpad, at, 4, skip)
    words &= np.take(_MASK_BY_CODE, code.astype(np.intp)).astype(np.uint32)
    sign = words & np.uint32(1)
    np.negative(sign, out=sign)
    words >>= np.uint32(1)
    words ^= sign
    return words.view(np.int32)


_FLOAT_DTYPES = {2: np.dtype("<f2"), 4: np.dtype("<f4"), 8: np.dtype("<f8")}


def decode_floats(stream: Buffer, count: int | None = None, *,
                  width: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(float16/32/64 values, validity or None); every value is exactly ``width`` bytes."""
    if width not in _FLOAT_DTYPES:
        raise UnsupportedTypeError(f"float{8 * width} has no fast decoder")
    dt = _FLOAT_DTYPES[width]
    buf = _u8(stream)
    m = _stride(buf, count, width + 1)
    if m is not None:
        view = np.ndarray((m,), dtype=dt, buffer=buf, offset=1, strides=(width + 1,))
        return np.ascontiguousarray(view), None
    bpad = _padded(buf)
    res = _scan(buf, bpad, count, _FLOAT_PROFILES[width])
    code, at, skip = _codes(res)
    bad = (code != width + 1) & (code != 0)
    if bad.any():
        raise _length_error(f"float{8 * width}", res, bad)
    values = _gather_words(bpad, at, width, skip).view(dt)
    validity = _validity(code)
    if validity is not None:
        values[~validity] = 0
    return values, validity


def decode_bools(stream: Buffer, count: int | None = None) -> tuple[np.ndarray,
                                                                    np.ndarray | None]:
    """(bool values, validity or None); a body other than one byte 0 or 1 is an error."""
    buf = _u8(stream)
    m = _stride(buf, count, 2)
    if m is not None:
        body = buf[1::2]
        if (body > 1).any():
            i = _first_bad(body > 1)
            raise FormatError(f"bool value {body[i]} at stream offset {2 * i}")
        return body.astype(bool), None
    bpad = _padded(buf)
    res = _scan(buf, bpad, count, _BOOLS)
    code, at, skip = _codes(res)
    bad = (code != 2) & (code != 0)
    if bad.any():
        raise _length_error("bool", res, bad)
    validity = _validity(code)
    body = bpad[at + skip]
    if validity is not None:
        body[~validity] = 0
    if (body > 1).any():
        i = _first_bad(body > 1)
        raise FormatError(f"bool value {body[i]} at stream offset {res.tags[i]}")
    return body.view(bool), validity


def decode_varbinary(stream: Buffer, count: int | None = None) -> tuple[
        np.ndarray, np.ndarray, np.ndarray | None]:
    """(int64 offsets of n+1, compact uint8 data, validity or None) for strings and bytes.

    Strings are not checked here: :func:`validate_utf8` does it in one pass.
    """
    buf = _u8(stream)
    bpad = _padded(buf) if buf.size >= _SERIAL_BELOW else None
    res = _scan(buf, bpad, count, _ANY)
    code = res.v if res.v is not None else res.lengths + 1
    offsets = np.empty(code.size + 1, np.int64)
    if res.v is not None:  # the data is the stream less one tag byte per value
        np.subtract(res.tags, np.arange(code.size), out=offsets[:-1])
        offsets[-1] = buf.size - code.size
    else:
        offsets[0] = 0
        np.cumsum(np.maximum(res.lengths, 0), out=offsets[1:])
    body = np.ones(buf.size, bool)
    body[res.tags] = False
    if res.v is None:  # tags of more than one byte
        extra = res.starts - res.tags
        for j in range(1, int(extra.max())):
            body[res.tags[extra > j] + j] = False
    return offsets, buf[body], _validity(code)


def validate_utf8(offsets: np.ndarray, data: np.ndarray) -> None:
    """FormatError unless every value ``data[offsets[i]:offsets[i+1]]`` is valid UTF-8.

    The whole buffer is decoded once (C speed); a value boundary inside a
    character would still pass that, so we also require that no non-empty value
    starts with a continuation byte.  Only on failure do we look for the culprit.
    """
    data = np.ascontiguousarray(data, dtype=np.uint8)
    offsets = np.asarray(offsets)
    try:
        codecs.utf_8_decode(memoryview(data), "strict", True)
    except UnicodeDecodeError as e:
        i = max(int(np.searchsorted(offsets, e.start, side="right")) - 1, 0)
        raise FormatError(f"string value {i} is not valid UTF-8 ({e.reason} at byte "
                          f"{e.start - int(offsets[i])} of the value)") from None
    if offsets.size > 1 and data.size:
        first = offsets[:-1]
        nonempty = offsets[1:] > first
        lead = data[np.minimum(first, data.size - 1)]
        bad = nonempty & ((lead & 0xC0) == 0x80)
        if bad.any():
            i = _first_bad(bad)
            raise FormatError(f"string value {i} is not valid UTF-8 (it starts inside a "
                              f"character)")


# ---------------------------------------------------- structure helpers ---


def presence_to_validity(runs: np.ndarray, total: int) -> np.ndarray:
    """Expand presence runs (present, absent, present, ...) into a bool validity mask."""
    runs = np.asarray(runs)
    if runs.ndim != 1:
        raise FormatError("presence runs must be one-dimensional")
    if runs.size and runs.min() < 0:
        i = _first_bad(runs < 0)
        raise FormatError(f"presence run {i} is negative ({runs[i]})")
    got = int(runs.sum(dtype=np.int64))
    if got != total:
        raise FormatError(f"presence runs sum to {got}, expected {total}")
    pattern = (np.arange(runs.size) & 1) == 0
    return np.repeat(pattern, runs.astype(np.int64))


def lengths_to_offsets(lengths: np.ndarray, *, max_total: int | None = None) -> np.ndarray:
    """int64 offsets (n+1, starting at 0) of non-negative int32 lengths."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise FormatError("lengths must be one-dimensional")
    if lengths.size:
        if lengths.dtype.kind not in "iu":
            raise FormatError(f"lengths must be integers, not {lengths.dtype}")
        bad = (lengths < 0) | (lengths > np.iinfo(np.int32).max)
        if bad.any():
            i = _first_bad(bad)
            raise FormatError(f"length {i} is {lengths[i]}, outside 0..2**31-1")
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, dtype=np.int64, out=offsets[1:])
    if max_total is not None and offsets[-1] > max_total:
        raise LimitError(f"lengths add up to {offsets[-1]}, over the limit of {max_total}")
    return offsets


# ---------------------------------------------------------- dispatch ---


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded primitive column: values (for strings/bytes the data buffer), the
    validity mask or None when nothing is null, and offsets for strings/bytes."""

    values: np.ndarray
    validity: np.ndarray | None
    offsets: np.ndarray | None = None


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_FLOAT_WIDTH = {"float16": 2, "float32": 4, "float64": 8}


def decode_primitive(ptype: PrimitiveType, stream: Buffer, count: int | None = None) -> Decoded:
    """Decode a column of a primitive type with a numpy form.

    Enum columns are decoded as UINT64; types without a numpy form (128/256-bit
    ints, ip, net, type, decimals, float128/256) are an UnsupportedTypeError,
    for the caller's slow path.  A null-type column is all nulls: its values
    are zero bytes and its validity all False.
    """
    name = getattr(ptype, "name", str(ptype))
    if name in _INT_BITS:
        v, ok = decode_ints(stream, count, signed=True, bits=_INT_BITS[name])
        return Decoded(v, ok)
    if name in _UINT_BITS:
        v, ok = decode_ints(stream, count, signed=False, bits=_UINT_BITS[name])
        return Decoded(v, ok)
    if name in ("time", "duration"):
        v, ok = decode_ints(stream, count, signed=True, bits=64)
        return Decoded(v.view("datetime64[ns]" if name == "time" else "timedelta64[ns]"), ok)
    if name in _FLOAT_WIDTH:
        v, ok = decode_floats(stream, count, width=_FLOAT_WIDTH[name])
        return Decoded(v, ok)
    if name == "bool":
        v, ok = decode_bools(stream, count)
        return Decoded(v, ok)
    if name in ("string", "bytes"):
        offsets, data, ok = decode_varbinary(stream, count)
        if name == "string":
            validate_utf8(offsets, data)
        return Decoded(data, ok, offsets)
    if name == "null":
        res = _scan(_u8(stream), None, count, _ANY)
        if (res.lengths >= 0).any():
            i = _first_bad(res.lengths >= 0)
            raise FormatError(f"a null-type column holds a non-null value at stream "
                              f"offset {res.tags[i]}")
        m = res.lengths.size
        return Decoded(np.zeros(m, np.uint8), np.zeros(m, bool) if m else None)
    raise UnsupportedTypeError(f"no vectorised decoder for type {name}")
