"""The column walker: a tree of cursors over the type tree that turns segment streams into arrays.

One walker serves every read.  For each projected path (or whole rows) it
builds, once and without reading, a cursor per node of the type tree that the
read needs; each leaf registers one job per segment with the
:class:`~.fetch.SegmentSource`, which decodes segments in a thread pool as
their bytes land.  ``take(n)`` then hands out the next ``n`` values: a whole
column is one ``take`` of every row (segments concatenated once, the flat
leaf strategy), a batch is a ``take`` of the batch's rows (one decoded
segment per stream held at a time).

Every count the format promises is checked on every path: a stream that runs
out is a FormatError at the ``take``; a stream with values left when the rows
are done, or presence runs that sum too high, is a FormatError at
:meth:`Cursor.finish`.  Presence runs become masks with vector operations
only (cumulative ends and one ``repeat``), whatever the number of runs.  Every
``take`` is counted against ``max_rows`` (per node, over the whole read) and
``max_values`` (all nodes), so every path refuses the same files.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np

from planner.projection import Leg

from .. import arrays as A
from .. import decode as D
from ..arrays.buffers import offsets_from_lengths
from ..format.bsup import append_tagged, decode_value
from ..format.bsup import decode_primitive as decode_one
from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    Constant,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    UnionColumn,
)
from ..model.errors import FormatError, LimitError
from ..model.types import (
    NULL,
    ArrayType,
    EnumType,
    ErrorType,
    MapType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
    underlying,
)
from .fetch import Decoder, Job, SegmentSource, decode_pool
from .memory import pages
from .options import Limits

_VECTOR = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "time",
           "duration", "float16", "float32", "float64", "bool", "string", "bytes"}


#: A selection of fewer runs than this is read run by run (a skip and a take each, which
#: slice whole segments); more runs are gathered (one vectorised step per segment).
FEW_RUNS = 8


# --------------------------------------------------------------- decoders ---

def decode_values(t: PrimitiveType | EnumType, stream: Any, count: int | None = None
                  ) -> A.Array:
    """The values of one segment of a primitive column (however many it holds), or of a
    slice of one holding exactly ``count``."""
    if isinstance(t, EnumType):
        values, validity = D.decode_ints(stream, count, signed=False, bits=64)
        if values.size and int(values[validity if validity is not None else ...].max(
                initial=0)) >= len(t.symbols):
            raise FormatError(f"enum position out of range for {t}")
        return A.PrimitiveArray(t, values, validity)
    if t == NULL:
        starts, lengths = D.scan_tags(stream, count)
        if (lengths != -1).any():
            raise FormatError("a null-type column holds a non-null value")
        return A.NullArray(len(lengths))
    if t.name in _VECTOR:
        dec = D.decode_primitive(t, stream, count)
        if dec.offsets is not None:
            return A.BinaryArray(t, dec.offsets, dec.values, dec.validity, utf8_checked=True)
        return A.PrimitiveArray(t, dec.values, dec.validity)
    # the rare kinds without a numpy dtype: one Python object per value
    starts, lengths = D.scan_tags(stream, count)
    mv = memoryview(stream)
    count = len(lengths)
    out = np.empty(count, dtype=object)
    valid = lengths >= 0
    for i in np.flatnonzero(valid).tolist():
        s = int(starts[i])
        out[i] = decode_one(t, mv[s: s + int(lengths[i])])
    return A.PrimitiveArray(t, out, None if valid.all() else valid)


def decode_int32s(stream: Any) -> np.ndarray:
    return D.decode_int32s(stream, None)


# ---------------------------------------------------------------- streams ---

class Build:
    """What building a cursor tree needs: the source, the caps, how far to decode ahead,
    and whether primitive values are decoded a slice at a time (``lazy``, batches) or
    a whole segment at a time in the pool (whole columns)."""

    def __init__(self, source: SegmentSource, limits: Limits, ahead: int, *,
                 lazy: bool = False, keep: dict[int, frozenset[int]] | None = None) -> None:
        self.source = source
        self.limits = limits
        self.ahead = ahead
        self.lazy = lazy
        self.claimed = 0
        # row selection: per value stream (id of its segmap), the segments to read; the
        # others are skipped() over by their count, never fetched (read/selection.py)
        self.keep = keep or {}

    def claim(self, node: Cursor, n: int) -> None:
        """Count ``n`` values a node hands out against the caps (LimitError past one)."""
        node.claimed += n
        if node.claimed > self.limits.max_rows:
            raise LimitError(f"a column claims {node.claimed} values, over "
                             f"max_rows={self.limits.max_rows}")
        self.claimed += n
        if self.claimed > self.limits.max_values:
            raise LimitError(f"the columns claim more than max_values={self.limits.max_values} "
                             "values in all")


class Skipped:
    """``n`` values of a segment a row selection does not read: they can only be skipped."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def slice(self, start: int, stop: int | None) -> Skipped:
        return Skipped((self.n if stop is None else stop) - start)


class Stream:
    """The decoded segments of one column stream, in order, one job each (a row selection's
    skipped segments: a :class:`Skipped` placeholder of their ``count``)."""

    def __init__(self, b: Build, segmap: Segmap, decode: Decoder,
                 ahead: int | None = None, selectable: bool = False) -> None:
        self.source = b.source
        self.ahead = b.ahead if ahead is None else ahead
        keep = b.keep.get(id(segmap)) if selectable and b.keep else None
        self.jobs: list[Job | Skipped | None] = (
            [b.source.job(s, decode) for s in segmap] if keep is None else
            [b.source.job(s, decode) if i in keep else Skipped(s.count or 0)
             for i, s in enumerate(segmap)])
        self.next_index = 0

    def want_next(self) -> None:
        """The next segment will be needed soon: have it fetched and decoded (no wait)."""
        i = self.next_index
        if i < len(self.jobs):
            job = self.jobs[i]
            if isinstance(job, Job):  # a skipped segment is never fetched
                self.source.want(job)

    def next(self) -> Any | None:
        """The next segment's decoded values, or None after the last."""
        i = self.next_index
        if i >= len(self.jobs):
            return None
        job = self.jobs[i]
        assert job is not None
        if isinstance(job, Skipped):
            self.jobs[i] = None
            self.next_index = i + 1
            return job
        self.source.want(job, [j for j in self.jobs[i + 1: i + 1 + self.ahead]
                               if isinstance(j, Job)])
        self.jobs[i] = None
        self.next_index = i + 1
        return job.take()


def _cut(part: Any, start: int, stop: int) -> Any:
    return part[start:stop] if isinstance(part, np.ndarray) else part.slice(start, stop)


class _Chunks:
    """The undelivered values of one stream, a decoded segment at a time."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.pending: collections.deque[Any] = collections.deque()
        self.avail = 0
        self.pos = 0  # values of pending[0] already handed out or skipped

    def _pull(self) -> bool:
        while True:
            part = self.stream.next()
            if part is None:
                return False
            if len(part):
                self.pending.append(part)
                self.avail += len(part)
                return True

    def skip(self, n: int) -> None:
        """Drop the next ``n`` values (skipped segments are dropped without reading)."""
        while n:
            if not self.pending and not self._pull():
                raise FormatError(f"a column stream ended {n} values early")
            left = len(self.pending[0]) - self.pos
            if left <= n:
                self.pending.popleft()
                self.pos = 0
                self.avail -= left
                n -= left
            else:
                self.pos += n
                self.avail -= n
                n = 0

    def take(self, n: int, exact: bool = True) -> list[Any]:
        while self.avail < n:
            if not self._pull():
                if exact:
                    raise FormatError(f"a column stream ended {n - self.avail} values early")
                n = self.avail
                break
        out: list[Any] = []
        need = n
        while need:
            head = self.pending[0]
            # the head's first ``pos`` values are used: cut, never re-sliced per step, so
            # many small takes and skips (a row selection) cost what they hand out
            size = len(head)
            if size - self.pos <= need:
                out.append(head if not self.pos else _cut(head, self.pos, size))
                self.pending.popleft()
                need -= size - self.pos
                self.pos = 0
            else:
                out.append(_cut(head, self.pos, self.pos + need))
                self.pos += need
                need = 0
        self.avail -= n
        if any(isinstance(p, Skipped) for p in out):
            raise FormatError("a row selection reached values of a segment it did not read")
        return out

    def gather(self, n: int, idx: np.ndarray) -> list[Any]:
        """Consume the next ``n`` values and return the parts holding positions ``idx``
        (sorted, distinct, each below ``n``) of them: one binary search and one take per
        decoded segment, a slice where the positions in it are consecutive.  A segment
        no position falls in is dropped unread (a skipped one, never fetched)."""
        out: list[Any] = []
        base = 0  # position (within the n) of the first value not yet passed
        lo = 0
        m = int(idx.size)
        while base < n:
            if not self.pending and not self._pull():
                raise FormatError(f"a column stream ended {n - base} values early")
            head = self.pending[0]
            have = min(len(head) - self.pos, n - base)
            hi = lo if lo >= m else int(np.searchsorted(idx, base + have, "left"))
            if hi > lo:
                if isinstance(head, Skipped):
                    raise FormatError("a row selection reached values of a segment it did "
                                      "not read")
                first, last = int(idx[lo]), int(idx[hi - 1])
                shift = self.pos - base
                if last - first == hi - lo - 1:  # consecutive: a slice, no copy
                    out.append(_cut(head, first + shift, last + shift + 1))
                else:
                    local = idx[lo:hi] + shift if shift else idx[lo:hi]
                    out.append(head[local] if isinstance(head, np.ndarray)
                               else head._take(local))
                lo = hi
            if self.pos + have == len(head):
                self.pending.popleft()
                self.pos = 0
            else:
                self.pos += have
            self.avail -= have
            base += have
        return out

    def finish(self, what: str) -> None:
        if self.avail or self._pull():
            extra = self.avail
            while self._pull():
                extra = self.avail
            raise FormatError(f"{what} holds {extra} more values than the rows need")


class Int32Cursor:
    """Lengths, union tags or super IDs."""

    def __init__(self, b: Build, segmap: Segmap, what: str) -> None:
        self.chunks = _Chunks(Stream(b, segmap, decode_int32s))
        self.what = what

    def take(self, n: int, exact: bool = True) -> np.ndarray:
        parts = self.chunks.take(n, exact)
        if not parts:
            return np.zeros(0, np.int32)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def finish(self) -> None:
        self.chunks.finish(self.what)


class RunsCursor:
    """Presence runs (present, absent, present, ...) as validity for the next N positions.

    Runs are kept as cumulative ends, so a ``take`` is two binary searches and
    one ``repeat`` however many runs it spans (zero-length ones included).
    """

    def __init__(self, b: Build, segmap: Segmap) -> None:
        self.stream = Stream(b, segmap, decode_int32s)
        self.ends = np.zeros(0, np.int64)  # cumulative ends of the runs not yet used up
        self.first = 0  # index (in the whole stream) of the run ends[0] ends
        self.base = 0  # position where that run starts
        self.pos = 0  # positions handed out

    def _total(self) -> int:
        return int(self.ends[-1]) if self.ends.size else self.base

    def _more(self) -> bool:
        runs = self.stream.next()
        if runs is None:
            return False
        if runs.size:
            if int(runs.min()) < 0:
                raise FormatError(f"presence run {int(np.argmax(runs < 0))} of a segment is "
                                  "negative")
            ends = np.cumsum(runs, dtype=np.int64)
            ends += self._total()
            self.ends = np.concatenate([self.ends, ends]) if self.ends.size else ends
        return True

    def take(self, n: int) -> np.ndarray:
        target = self.pos + n
        while self._total() < target:
            if not self._more():
                raise FormatError(f"presence runs sum to {self._total()}, expected at least "
                                  f"{target}")
        if n == 0:
            return np.zeros(0, bool)
        ends = self.ends
        k0 = int(np.searchsorted(ends, self.pos, "right"))
        k1 = int(np.searchsorted(ends, target, "left"))
        stop = np.minimum(ends[k0: k1 + 1], target)
        start = np.empty_like(stop)
        start[0] = self.pos
        start[1:] = ends[k0:k1]
        present = ((np.arange(k0, k1 + 1) + self.first) & 1) == 0
        valid = np.repeat(present, np.maximum(stop - start, 0))
        done = int(np.searchsorted(ends, target, "right"))  # runs used up
        if done:
            self.base = int(ends[done - 1])
            self.first += done
            self.ends = ends[done:]
        self.pos = target
        return valid

    def locate(self, n: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Pass the next ``n`` positions and place positions ``idx`` (sorted, each below
        ``n``) among them: whether each is present, the index among the present values
        of each present one, and how many of the ``n`` are present.  Binary searches over
        the runs, never a mask of the ``n`` positions."""
        target = self.pos + n
        while self._total() < target:
            if not self._more():
                raise FormatError(f"presence runs sum to {self._total()}, expected at least "
                                  f"{target}")
        ends = self.ends
        k0 = int(np.searchsorted(ends, self.pos, "right"))
        k1 = int(np.searchsorted(ends, target, "left"))
        # the runs k0..k1 cover [pos, target): their bounds clipped to it
        stop = np.minimum(ends[k0: k1 + 1], target)
        start = np.empty_like(stop)
        start[0] = self.pos
        start[1:] = ends[k0:k1]
        present = ((np.arange(k0, k1 + 1) + self.first) & 1) == 0
        lens = np.where(present, np.maximum(stop - start, 0), 0)
        before = np.cumsum(lens) - lens  # present values before each run (from pos)
        count = int(before[-1] + lens[-1]) if lens.size else 0
        q = idx + self.pos
        k = np.searchsorted(stop, q, "right")  # the run holding each position
        there = present[k]
        pos = (before[k] + (q - start[k]))[there]
        done = int(np.searchsorted(ends, target, "right"))  # runs used up
        if done:
            self.base = int(ends[done - 1])
            self.first += done
            self.ends = ends[done:]
        self.pos = target
        return there, pos, count

    def finish(self) -> None:
        while self._more():
            pass
        if self._total() != self.pos:
            raise FormatError(f"presence runs sum to {self._total()}, expected {self.pos}")


# ---------------------------------------------------------------- cursors ---

class Cursor:
    """Hands out the next ``n`` values of one node as an array."""

    claimed = 0
    empty: A.Array | None = None  # take(0), kept: batches of many super types ask often

    def __init__(self, b: Build) -> None:
        self.b = b

    def take(self, n: int) -> A.Array:
        if n == 0:
            if self.empty is None:
                self.empty = self._take(0)
            return self.empty
        self.b.claim(self, n)
        return self._take(n)

    def _take(self, n: int) -> A.Array:
        raise NotImplementedError

    def plan(self, n: int) -> None:
        """The next ``take`` will be of ``n`` values: ask for the segments they need (no
        wait).  Then :meth:`launch` starts decoding them in the pool.  Both optional: a
        ``take`` without them decodes itself."""

    def launch(self) -> None:
        """Start the decode :meth:`plan` announced (may wait for its segments)."""

    def skip(self, n: int) -> None:
        """Pass over the next ``n`` values (rows a selection leaves out); reads no segment
        a leaf skips whole, and no more than the structure below needs."""
        if n:
            self._take(n)

    def gather(self, n: int, idx: np.ndarray) -> A.Array:
        """Pass over the next ``n`` values and hand out those at positions ``idx`` (int64,
        sorted, distinct, each below ``n``): late materialization in one vectorised
        step per node and per segment, whatever the number of runs ``idx`` makes."""
        if idx.size == n:
            return self.take(n)
        if not idx.size:
            self.skip(n)
            return self.take(0)
        cuts = np.flatnonzero(np.diff(idx) != 1) + 1
        if cuts.size < FEW_RUNS:  # a few runs (rows=, a clustered filter): skip and take
            parts = []
            pos = 0
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), int(idx.size)],
                            strict=True):
                lo, hi = int(idx[a]), int(idx[b - 1]) + 1
                self.skip(lo - pos)
                parts.append(self.take(hi - lo))
                pos = hi
            self.skip(n - pos)
            return parts[0] if len(parts) == 1 else A.concat(parts)
        self.b.claim(self, int(idx.size))
        return self._gather(n, idx)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        return self._take(n)._take(idx)

    def finish(self) -> None:
        """FormatError if a stream below holds values the rows did not use."""


class NullCursor(Cursor):
    def __init__(self, b: Build, t: Type) -> None:
        super().__init__(b)
        self.t = t

    def _take(self, n: int) -> A.Array:
        return A.null_array(self.t, n)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        return A.null_array(self.t, int(idx.size))

    def skip(self, n: int) -> None:
        pass


class PrimCursor(Cursor):
    """A primitive column: whole segments decoded in the pool, joined or sliced here."""

    what = "column"  # how finish() names the column in a count error

    def __init__(self, b: Build, t: PrimitiveType | EnumType, segmap: Segmap) -> None:
        super().__init__(b)
        self.t = t
        self.chunks = _Chunks(Stream(b, segmap, lambda data: decode_values(t, data),
                                     selectable=True))

    def skip(self, n: int) -> None:
        self.chunks.skip(n)

    def _take(self, n: int) -> A.Array:
        parts = self.chunks.take(n)
        if not parts:
            return A.null_array(self.t, 0)
        return parts[0] if len(parts) == 1 else A.concat(parts, self.t)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        parts = self.chunks.gather(n, idx)
        if not parts:
            return A.null_array(self.t, 0)
        return parts[0] if len(parts) == 1 else A.concat(parts, self.t)

    def finish(self) -> None:
        self.chunks.finish(f"a {self.t} {self.what}")


def decode_any(t: Type, stream: Any) -> A.Array:
    """Tag-encoded values of any type: a VNG "primitive" column holds whole bodies of
    every type that is not a container, errors of records included."""
    if isinstance(t, (PrimitiveType, EnumType)):
        return decode_values(t, stream)
    starts, lengths = D.scan_tags(stream, None)
    mv = memoryview(stream)
    return A.from_pylist(t, [None if n < 0 else decode_value(t, mv[s: s + n], typed=True)
                             for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)])


def dictionary_values(t: Type, entries: tuple[bytes | None, ...]) -> A.Array:
    """A VNG dictionary's values, decoded once as a column of their own."""
    stream = bytearray()
    for body in entries:
        append_tagged(stream, body)
    return decode_any(t, bytes(stream))


def decode_selectors(data: Any, size: int) -> np.ndarray:
    """One VNG dictionary segment: a selector byte per value, each below ``size``."""
    sel = np.frombuffer(data, dtype=np.uint8)
    if sel.size and int(sel.max()) >= size:
        raise FormatError(f"dictionary selector {int(sel.max())} is out of range "
                          f"(the dictionary has {size} entries)")
    return sel


class DictCursor(PrimCursor):
    """A VNG dictionary column: selector segments, looked up in the decoded dictionary
    (a primitive column whose segments decode through the dictionary)."""

    what = "dictionary column"

    def __init__(self, b: Build, t: Type, segmap: Segmap,
                 entries: tuple[bytes | None, ...]) -> None:
        Cursor.__init__(self, b)
        self.t = t  # type: ignore[assignment]
        values = dictionary_values(t, entries)
        self.chunks = _Chunks(Stream(b, segmap, lambda data: values.take(
            decode_selectors(data, len(values)).astype(np.intp)), selectable=True))


class BodiesCursor(PrimCursor):
    """Whole tag-encoded bodies of a complex type, decoded value by value."""

    def __init__(self, b: Build, t: Type, segmap: Segmap) -> None:
        Cursor.__init__(self, b)
        self.t = t  # type: ignore[assignment]
        self.chunks = _Chunks(Stream(b, segmap, lambda data: decode_any(t, data),
                                     selectable=True))


class ConstCursor(Cursor):
    """A VNG constant column: ``count`` copies of one value, nothing stored."""

    def __init__(self, b: Build, t: Type, constant: Constant) -> None:
        super().__init__(b)
        self.t = t
        self.value = dictionary_values(t, (constant.body,))
        self.left = constant.count

    def _take(self, n: int) -> A.Array:
        if n > self.left:
            raise FormatError(f"a constant {self.t} column holds {self.left} more values, "
                              f"the rows need {n}")
        self.left -= n
        return self.value.take(np.zeros(n, np.intp))

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        self._take(n)
        return self.value.take(np.zeros(idx.size, np.intp))

    def skip(self, n: int) -> None:
        self._take(n)

    def finish(self) -> None:
        if self.left:
            raise FormatError(f"a constant {self.t} column holds {self.left} more values "
                              "than the rows need")


def _slicer(data: Any) -> D.ValueSlicer:
    """A segment's stream bytes ready to be decoded a slice at a time (in the pool: the
    values are counted there).  An uncompressed segment may be a view into a fetched
    piece that also holds its neighbours: it is copied out, so it pins nothing else."""
    if (isinstance(data, np.ndarray) and data.base is not None
            and memoryview(data.base).nbytes > data.nbytes):  # a view into something larger
        own = pages(data.size)
        own[:] = data
        data = own
    return D.ValueSlicer(data)


#: A batch's slice of a column is decoded in the pool from this many values up.
POOL_MIN_VALUES = 4096


class _Plan:
    """A batch's decode of one column: ``n`` values, of which ``future`` covers the first
    ``covered``."""

    __slots__ = ("covered", "future", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self.covered = 0
        self.future: Any = None


class SlicedPrimCursor(Cursor):
    """A primitive column read in batches: the pool decompresses and counts a segment;
    a batch decodes just its next ``n`` values from the segment's bytes.

    Memory holds one segment's stream bytes (smaller than its decoded values) and
    the batch, whose arrays own their memory: no view keeps a segment alive after
    its last batch.  :meth:`plan` hands a batch's decode to the pool, so the columns
    of a batch decode on every core; a ``take`` without a plan decodes here.
    """

    def __init__(self, b: Build, t: PrimitiveType | EnumType, segmap: Segmap) -> None:
        super().__init__(b)
        self.t = t
        # nothing decoded ahead: plan() asks for the next segment when a batch will need it
        self.stream = Stream(b, segmap, _slicer, ahead=0)
        self.slicer: D.ValueSlicer | None = None
        self.planned: _Plan | None = None

    def _pieces(self, n: int) -> list[tuple[D.ValueSlicer, int]]:
        """The segments (and values of each) the next ``n`` values come from, reserved."""
        pieces = []
        need = n
        while need:
            s = self.slicer
            if s is None or not s.left:
                s = self.slicer = self.stream.next()
                if s is None:
                    raise FormatError(f"a column stream ended {need} values early")
                continue
            k = min(need, s.left)
            pieces.append((s, k))
            need -= k
            if k == s.left:
                self.slicer = None
        return pieces

    def _decode(self, pieces: list[tuple[D.ValueSlicer, int]]) -> A.Array:
        parts = []
        for s, k in pieces:
            lo, hi, got = s.next(k)
            parts.append(decode_values(self.t, memoryview(s.stream)[lo:hi], got))
        if not parts:
            return A.null_array(self.t, 0)
        return parts[0] if len(parts) == 1 else A.concat(parts, self.t)

    def plan(self, n: int) -> None:
        if n and self.planned is None:
            self.planned = _Plan(n)
            if self.slicer is not None and not self.slicer.left:
                self.slicer = None
            if self.slicer is None:  # the batch starts a segment: ask for it now
                self.stream.want_next()

    def launch(self) -> None:
        p = self.planned
        if p is None or p.future is not None:
            return
        s = self.slicer
        if s is None:  # asked for in plan(): wait for it, then decode in the pool
            pieces = self._pieces(p.n)
            p.covered = p.n
            p.future = decode_pool().submit(self._decode, pieces)
            return
        # the rest of the current segment first; the next one is asked for only once
        # that is decoded (and its bytes let go), so a column never holds two segments
        p.covered = min(p.n, s.left)
        later = p.covered < p.n
        p.future = decode_pool().submit(self._decode_then_want, self._pieces(p.covered), later)

    def _decode_then_want(self, pieces: list[tuple[D.ValueSlicer, int]], later: bool
                          ) -> A.Array:
        out = self._decode(pieces)
        if later:
            pieces.clear()
            self.stream.want_next()
        return out

    def _take(self, n: int) -> A.Array:
        p, self.planned = self.planned, None
        if p is None or p.future is None:
            return self._decode(self._pieces(n))
        if p.n != n:  # a caller's bug, never the file's
            raise RuntimeError(f"planned {p.n} values of a column, then took {n}")
        first = p.future.result()
        if p.covered == n:
            return first
        return A.concat([first, self._decode(self._pieces(n - p.covered))], self.t)

    def finish(self) -> None:
        extra = self.slicer.left if self.slicer is not None else 0
        self.slicer = None
        while (s := self.stream.next()) is not None:
            extra += s.left
        if extra:
            raise FormatError(f"a {self.t} column holds {extra} more values than the rows "
                              "need")


class MaskedCursor(Cursor):
    """Values placed by presence runs: the child holds only the present positions."""

    def __init__(self, b: Build, runs: RunsCursor, child: Cursor) -> None:
        super().__init__(b)
        self.runs, self.child = runs, child

    def _take(self, n: int) -> A.Array:
        valid = self.runs.take(n)
        return self.child.take(int(np.count_nonzero(valid))).expand(valid)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        there, pos, count = self.runs.locate(n, idx)
        return self.child.gather(count, pos).expand(there)

    def skip(self, n: int) -> None:
        self.child.skip(int(np.count_nonzero(self.runs.take(n))))

    def finish(self) -> None:
        self.runs.finish()
        self.child.finish()


class RetypedCursor(Cursor):
    def __init__(self, b: Build, t: Type, child: Cursor) -> None:
        super().__init__(b)
        self.t, self.child = t, child

    def _take(self, n: int) -> A.Array:
        return self.child.take(n).with_type(self.t)

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        return self.child.gather(n, idx).with_type(self.t)

    def plan(self, n: int) -> None:
        self.child.plan(n)

    def launch(self) -> None:
        self.child.launch()

    def skip(self, n: int) -> None:
        self.child.skip(n)

    def finish(self) -> None:
        self.child.finish()


class RecordCursor(Cursor):
    def __init__(self, b: Build, t: RecordType, fields: list[Cursor]) -> None:
        super().__init__(b)
        self.t, self.fields = t, fields

    def _take(self, n: int) -> A.Array:
        return A.StructArray(self.t, n, tuple(f.take(n) for f in self.fields))

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        return A.StructArray(self.t, int(idx.size), tuple(f.gather(n, idx)
                                                          for f in self.fields))

    def plan(self, n: int) -> None:
        for f in self.fields:
            f.plan(n)

    def launch(self) -> None:
        for f in self.fields:
            f.launch()

    def skip(self, n: int) -> None:
        for f in self.fields:
            f.skip(n)

    def finish(self) -> None:
        for f in self.fields:
            f.finish()


class ListCursor(Cursor):
    """Arrays, sets and maps: lengths, then that many child values."""

    def __init__(self, b: Build, t: Type, lengths: Int32Cursor, children: list[Cursor]) -> None:
        super().__init__(b)
        self.t, self.lengths, self.children = t, lengths, children

    def _take(self, n: int) -> A.Array:
        offsets = (D.lengths_to_offsets(self.lengths.take(n), max_total=self.b.limits.max_rows)
                   if n else np.zeros(1, np.int64))
        total = int(offsets[-1])
        kids = [c.take(total) for c in self.children]
        if isinstance(self.t, MapType):
            return A.MapArray(self.t, offsets, kids[0], kids[1])
        return A.ListArray(self.t, offsets, kids[0])

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        offsets = D.lengths_to_offsets(self.lengths.take(n), max_total=self.b.limits.max_rows)
        starts = offsets[idx]
        lens = offsets[idx + 1] - starts
        elems = A.range_indices(starts, lens)
        total = int(offsets[-1])
        kids = [c.gather(total, elems) for c in self.children]
        out = offsets_from_lengths(lens)
        if isinstance(self.t, MapType):
            return A.MapArray(self.t, out, kids[0], kids[1])
        return A.ListArray(self.t, out, kids[0])

    def skip(self, n: int) -> None:
        if n:
            total = int(D.lengths_to_offsets(self.lengths.take(n),
                                             max_total=self.b.limits.max_rows)[-1])
            for c in self.children:
                c.skip(total)

    def finish(self) -> None:
        self.lengths.finish()
        for c in self.children:
            c.finish()


class UnionCursor(Cursor):
    def __init__(self, b: Build, t: UnionType, tags: Int32Cursor, members: list[Cursor]) -> None:
        super().__init__(b)
        self.t, self.tags, self.members = t, tags, members

    def _take(self, n: int) -> A.Array:
        tags = self.tags.take(n) if n else np.zeros(0, np.int32)
        k = len(self.members)
        if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        counts = np.bincount(tags, minlength=k)
        return A.UnionArray(self.t, tags.astype(np.int32, copy=False),
                            tuple(m.take(int(c)) for m, c in zip(self.members, counts,
                                                                  strict=True)))

    def _gather(self, n: int, idx: np.ndarray) -> A.Array:
        tags = self.tags.take(n)
        k = len(self.members)
        if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        counts = np.bincount(tags, minlength=k).tolist()
        picked = tags[idx]
        ranks = A.group_ranks(tags, k)[idx]
        return A.UnionArray(self.t, picked.astype(np.int32, copy=False),
                            tuple(m.gather(c, ranks[picked == i]) for i, (m, c)
                                  in enumerate(zip(self.members, counts, strict=True))))

    def skip(self, n: int) -> None:
        if not n:
            return
        tags = self.tags.take(n)
        k = len(self.members)
        if tags.size and (int(tags.min()) < 0 or int(tags.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        for m, c in zip(self.members, np.bincount(tags, minlength=k).tolist(), strict=True):
            m.skip(c)

    def finish(self) -> None:
        self.tags.finish()
        for m in self.members:
            m.finish()


# --------------------------------------------------------------- the walk ---

def cursor_for(b: Build, t: Type, col: AnyColumn | None) -> Cursor:
    """A cursor over the values of type ``t`` stored in ``col``."""
    if col is None:
        return NullCursor(b, t)
    if isinstance(col, NullsColumn):
        inner = cursor_for(b, t, col.values)
        return MaskedCursor(b, RunsCursor(b, col.presence), inner) if col.presence else inner
    u = underlying(t)
    if isinstance(u, ErrorType):
        return RetypedCursor(b, t, cursor_for(b, u.inner, col))
    if u is not t:
        return RetypedCursor(b, t, cursor_for(b, u, col))
    if isinstance(col, PrimitiveColumn) and not isinstance(t, (PrimitiveType, EnumType)):
        return _opaque_cursor(b, t, col)
    if isinstance(t, (PrimitiveType, EnumType)):
        if not isinstance(col, PrimitiveColumn):
            raise FormatError(f"column for {t} is not a primitive column")
        if col.constant is not None or col.dictionary is not None:
            return _opaque_cursor(b, t, col)
        return SlicedPrimCursor(b, t, col.segmap) if b.lazy else PrimCursor(b, t, col.segmap)
    if isinstance(t, RecordType):
        if not isinstance(col, RecordColumn) or len(col.fields) != len(t.fields):
            raise FormatError(f"column for {t} is not a matching record column")
        return RecordCursor(b, t, [_field(b, f.type, fc.column, fc.presence)
                                   for f, fc in zip(t.fields, col.fields, strict=True)])
    if isinstance(t, (ArrayType, SetType)):
        if not isinstance(col, ArrayColumn):
            raise FormatError(f"column for {t} is not an array column")
        return ListCursor(b, t, Int32Cursor(b, col.lengths, "a lengths column"),
                          [cursor_for(b, t.elem, col.values)])
    if isinstance(t, MapType):
        if not isinstance(col, MapColumn):
            raise FormatError(f"column for {t} is not a map column")
        return ListCursor(b, t, Int32Cursor(b, col.lengths, "a lengths column"),
                          [cursor_for(b, t.key, col.keys), cursor_for(b, t.value, col.values)])
    if isinstance(t, UnionType):
        if not isinstance(col, UnionColumn) or len(col.columns) != len(t.types):
            raise FormatError(f"column for {t} is not a matching union column")
        return UnionCursor(b, t, Int32Cursor(b, col.tags, "a union tags column"),
                           [cursor_for(b, m, c) for m, c in zip(t.types, col.columns,
                                                                 strict=True)])
    raise FormatError(f"cannot read values of type {t}")


def _opaque_cursor(b: Build, t: Type, col: PrimitiveColumn) -> Cursor:
    """VNG's other primitive encodings, and whole bodies of a complex type."""
    if col.constant is not None:
        return ConstCursor(b, t, col.constant)
    if col.dictionary is not None:
        return DictCursor(b, t, col.segmap, col.dictionary)
    return BodiesCursor(b, t, col.segmap)


def _field(b: Build, t: Type, col: AnyColumn | None, presence: Segmap) -> Cursor:
    if col is None:
        return NullCursor(b, t)
    inner = cursor_for(b, t, col)
    return MaskedCursor(b, RunsCursor(b, presence), inner) if presence else inner


def leg_cursor(b: Build, leg: Leg) -> Cursor:
    """A cursor over the values one super type holds at a projected path, built from the
    planner's :class:`planner.projection.Leg` (the projection is not walked again).

    Only the streams on the way down are read: each presence on the way narrows the
    rows, and the target's values are expanded back to every row.  A target that is
    all null reads nothing (the planner plans no bytes for it).
    """
    if leg.error is not None:
        raise FormatError(leg.error)
    if leg.column is None:
        return NullCursor(b, leg.type)
    cursor = cursor_for(b, leg.type, leg.column)
    for presence in reversed(leg.presences):
        cursor = MaskedCursor(b, RunsCursor(b, presence), cursor)
    return cursor


CursorFactory = Callable[[Build], Cursor]
