"""The column walker's cursors over one stream: a stream's undelivered values (Chunks),
the Cursor every node is, the cursors of lengths, tags and presence runs, and those of
primitive values (whole segments, slices decoded on demand, dictionaries, constants and
opaque bodies)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from .. import arrays as A
from .. import decode as D
from ..format.meta import (
    Constant,
    Segmap,
)
from ..model.errors import FormatError
from ..model.types import (
    EnumType,
    PrimitiveType,
    Type,
)
from .memory import pages
from .pool import decode_pool
from .streams import (
    Build,
    Skipped,
    Stream,
    decode_any,
    decode_int32s,
    decode_selectors,
    decode_values,
    dictionary_values,
)

#: A selection of fewer runs than this is read run by run (a skip and a take each, which
#: slice whole segments); more runs are gathered (one vectorised step per segment).
FEW_RUNS = 8


def _cut(part: Any, start: int, stop: int) -> Any:
    return part[start:stop] if isinstance(part, np.ndarray) else part.slice(start, stop)


class Chunks:
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
        self.chunks = Chunks(Stream(b, segmap, decode_int32s))
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

    def _load_to(self, target: int) -> None:
        """Load runs until they cover position ``target``."""
        while self._total() < target:
            if not self._more():
                raise FormatError(f"presence runs sum to {self._total()}, expected at least "
                                  f"{target}")

    def _runs_to(self, target: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The runs covering [pos, target) (loaded as needed; ``target`` past ``pos``):
        their starts and stops clipped to it, and whether each is a run of present values."""
        self._load_to(target)
        ends = self.ends
        k0 = int(np.searchsorted(ends, self.pos, "right"))
        k1 = int(np.searchsorted(ends, target, "left"))
        stop = np.minimum(ends[k0: k1 + 1], target)
        start = np.empty_like(stop)
        start[0] = self.pos
        start[1:] = ends[k0:k1]
        present = ((np.arange(k0, k1 + 1) + self.first) & 1) == 0
        return start, stop, present

    def _pass(self, target: int) -> None:
        """Move to ``target``, dropping the runs used up."""
        ends = self.ends
        done = int(np.searchsorted(ends, target, "right"))
        if done:
            self.base = int(ends[done - 1])
            self.first += done
            self.ends = ends[done:]
        self.pos = target

    def take(self, n: int) -> np.ndarray:
        target = self.pos + n
        if n == 0:
            self._load_to(target)
            return np.zeros(0, bool)
        start, stop, present = self._runs_to(target)
        valid = np.repeat(present, np.maximum(stop - start, 0))
        self._pass(target)
        return valid

    def locate(self, n: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Pass the next ``n`` positions and place positions ``idx`` (sorted, each below
        ``n``) among them: whether each is present, the index among the present values
        of each present one, and how many of the ``n`` are present.  Binary searches over
        the runs, never a mask of the ``n`` positions."""
        target = self.pos + n
        start, stop, present = self._runs_to(target)
        lens = np.where(present, np.maximum(stop - start, 0), 0)
        before = np.cumsum(lens) - lens  # present values before each run (from pos)
        count = int(before[-1] + lens[-1]) if lens.size else 0
        q = idx + self.pos
        k = np.searchsorted(stop, q, "right")  # the run holding each position
        there = present[k]
        pos = (before[k] + (q - start[k]))[there]
        self._pass(target)
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
        self.chunks = Chunks(Stream(b, segmap, lambda data: decode_values(t, data),
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


class DictCursor(PrimCursor):
    """A VNG dictionary column: selector segments, looked up in the decoded dictionary
    (a primitive column whose segments decode through the dictionary)."""

    what = "dictionary column"

    def __init__(self, b: Build, t: Type, segmap: Segmap,
                 entries: tuple[bytes | None, ...]) -> None:
        Cursor.__init__(self, b)
        self.t = t  # type: ignore[assignment]
        values = dictionary_values(t, entries)
        self.chunks = Chunks(Stream(b, segmap, lambda data: values.take(
            decode_selectors(data, len(values)).astype(np.intp)), selectable=True))


class BodiesCursor(PrimCursor):
    """Whole tag-encoded bodies of a complex type, decoded value by value."""

    def __init__(self, b: Build, t: Type, segmap: Segmap) -> None:
        Cursor.__init__(self, b)
        self.t = t  # type: ignore[assignment]
        self.chunks = Chunks(Stream(b, segmap, lambda data: decode_any(t, data),
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
