"""The SegmentSink column streams write to (the Writer is one), a column stream's values
cut into segments (Stream, where the one cut rule lives) and presence runs (Runs), which
the builders fill and the Writer flushes."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

import lz4.block
import numpy as np

from ..format.bsup import (
    append_tagged,
    encode_int,
)
from ..format.meta import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    Segment,
)
from ..model.errors import EncodeError
from ..model.heap import keep_freed_memory
from ..model.types import (
    INT32,
    Type,
)
from .batch import Presence
from .segstats import segment_stats
from .tagenc import Encoded, encode_ints


class SegmentSink:
    """Where column streams put their segments: the output and its offset, the bytes
    buffered in memory, the spill file of segments set aside, the helper thread that
    computes segment statistics, and those statistics.  The Writer is one; the streams
    and builders only know it as this."""

    def __init__(self, out: BinaryIO, segment_thresh: int, compress: bool,
                 statistics: bool) -> None:
        self.out = out
        self.segment_thresh = segment_thresh
        self.compress = compress
        self.statistics = statistics
        self._stats: dict[Segment, tuple[Type, dict[str, Any]]] = {}
        self._helper: ThreadPoolExecutor | None = None
        self._offset = 0
        self._buffered = 0
        self._spill: BinaryIO | None = None
        self._spill_size = 0

    @property
    def buffered(self) -> int:
        """Bytes of column data held in memory, not yet written out."""
        return self._buffered

    @property
    def spilled(self) -> int:
        """Bytes of column data set aside in the spill file (out of memory) so far."""
        return self._spill_size

    def _emit(self, b: bytes) -> None:
        self.out.write(b)
        self._offset += len(b)

    def _spill_write(self, b: bytes) -> int:
        """Set ``b`` aside in the spill file (made on first use); where it starts."""
        if self._spill is None:
            self._spill = tempfile.TemporaryFile(prefix="csup-writer-")  # noqa: SIM115 (closed in close)
        at = self._spill_size
        self._spill.seek(at)
        self._spill.write(b)
        self._spill_size += len(b)
        return at

    def _spill_read(self, at: int, size: int) -> bytes:
        assert self._spill is not None
        self._spill.seek(at)
        b = self._spill.read(size)
        if len(b) != size:
            raise EncodeError("the writer's spill file was cut short")
        return b

    def _close_spill(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def _compute(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``fn`` on the writer's helper thread: segment statistics are numpy work
        that releases the GIL, so they overlap the shredding of the next rows."""
        if self._helper is None:
            keep_freed_memory()  # before the thread allocates (see csup_async.model.heap)
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="csup-writer-stats")
        return self._helper.submit(fn, *args)

    def _stop_helper(self) -> None:
        if self._helper is not None:
            self._helper.shutdown(wait=True, cancel_futures=True)
            self._helper = None
        self._close_spill()


class Stream:
    """One column stream: tag-encoded values cut into segments.

    The cut rule lives here only: a segment ends after the value that brings
    the buffer to ``segment_thresh``, whether values come one at a time
    (:meth:`append`) or many at once (:meth:`extend`).
    """

    __slots__ = ("buf", "count", "ends", "int_ends", "pending", "segments", "spilled",
                 "stat_type", "w")

    def __init__(self, w: SegmentSink, stat_type: Type | None = None) -> None:
        self.w = w
        # the values' type, for segment statistics (None: none kept)
        self.stat_type = stat_type if w.statistics else None
        self.buf = bytearray()
        self.count = 0  # values in buf
        # where each value in buf ends (for statistics): arrays, then single ints
        self.ends: list[np.ndarray] = []
        self.int_ends: list[int] = []
        # (stored bytes, mem_length, format, statistics being computed or None)
        self.pending: list[tuple[bytes, int, int, Future[dict[str, Any]] | None]] = []
        self.segments: list[Segment] = []
        # segments set aside by skew flushes: (where in the spill file, stored length,
        # mem_length, format, statistics being computed or None)
        self.spilled: list[tuple[int, int, int, int, Future[dict[str, Any]] | None]] = []

    def append(self, body: bytes | memoryview | None) -> None:
        before = len(self.buf)
        append_tagged(self.buf, body)
        self.count += 1
        if self.stat_type is not None:
            self.int_ends.append(len(self.buf))
        self.w._buffered += len(self.buf) - before
        if len(self.buf) >= self.w.segment_thresh:
            self.cut()

    def append_int(self, v: int) -> None:
        self.append(encode_int(v))

    def extend(self, values: Encoded) -> None:
        """Append many tag-encoded values, cutting exactly where :meth:`append` would."""
        ends = values.ends
        total = int(ends[-1]) if ends.size else 0
        mv = memoryview(values.data)
        thresh = self.w.segment_thresh
        track = self.stat_type is not None
        if track and self.int_ends:
            self.ends.append(np.array(self.int_ends, np.int64))
            self.int_ends.clear()
        pos = 0
        first = 0  # index of the first value not yet in buf
        while pos < total:
            need = thresh - len(self.buf)
            i = int(np.searchsorted(ends, pos + need, side="left"))
            if i >= ends.size:
                if track:
                    self.ends.append(ends[first:] - (pos - len(self.buf)))
                self.buf += mv[pos:total]
                self.count += ends.size - first
                self.w._buffered += total - pos
                return
            cut = int(ends[i])
            if track:
                self.ends.append(ends[first: i + 1] - (pos - len(self.buf)))
            self.buf += mv[pos:cut]
            self.count += i + 1 - first
            first = i + 1
            self.w._buffered += cut - pos
            self.cut()
            pos = cut

    def cut(self) -> None:
        if not self.buf:
            return
        raw = bytes(self.buf)
        self.buf = bytearray()
        stored, fmt = raw, COMPRESSION_NONE
        if self.w.compress and len(raw) > 32:
            c = lz4.block.compress(raw, store_size=False)
            if len(c) < len(raw):
                stored, fmt = c, COMPRESSION_LZ4
        self.w._buffered += len(stored) - len(raw)
        stats = None
        if self.stat_type is not None:
            if self.int_ends:
                self.ends.append(np.array(self.int_ends, np.int64))
            ends = np.concatenate(self.ends) if self.ends else np.zeros(0, np.int64)
            self.ends, self.int_ends = [], []
            if self.w.statistics:
                stats = self.w._compute(segment_stats, self.stat_type, raw, stored, ends)
        self.count = 0
        self.pending.append((stored, len(raw), fmt, stats))

    def flush(self, spill: bool = False) -> None:
        """Write the finished segments out, after any set aside before; ``spill``: set
        them aside instead (a skew flush), to be written with the rest at close."""
        self.cut()
        if spill:
            for stored, mem, fmt, stats in self.pending:
                self.spilled.append((self.w._spill_write(stored), len(stored), mem, fmt,
                                     stats))
                self.w._buffered -= len(stored)
            self.pending.clear()
            return
        for where, size, mem, fmt, stats in self.spilled:
            self._segment(self.w._spill_read(where, size), mem, fmt, stats)
        self.spilled.clear()
        for stored, mem, fmt, stats in self.pending:
            self._segment(stored, mem, fmt, stats)
            self.w._buffered -= len(stored)
        self.pending.clear()

    def _segment(self, stored: bytes, mem: int, fmt: int,
                 stats: Future[dict[str, Any]] | None) -> None:
        seg = Segment(self.w._offset, len(stored), mem, fmt)
        self.segments.append(seg)
        if stats is not None:
            assert self.stat_type is not None
            self.w._stats[seg] = (self.stat_type, stats.result())
        self.w._emit(stored)

    def discard(self) -> None:
        """Drop what is buffered (runs that turn out not to be needed)."""
        self.w._buffered -= len(self.buf) + sum(len(p[0]) for p in self.pending)
        self.buf = bytearray()
        self.count = 0
        self.ends, self.int_ends = [], []
        self.pending.clear()
        self.spilled.clear()  # never written: their bytes stay in the spill file

    @property
    def empty(self) -> bool:
        return not self.buf and not self.pending and not self.segments and not self.spilled


class Runs:
    """Presence runs (present, absent, present, ...), kept only once a null appears."""

    __slots__ = ("count", "present", "run", "state", "stream")

    def __init__(self, w: SegmentSink) -> None:
        self.stream = Stream(w, INT32)
        self.state = True
        self.run = 0
        self.count = 0
        self.present = 0

    def mark(self, present: bool) -> None:
        self.count += 1
        self.present += present
        if present == self.state:
            self.run += 1
            return
        self.stream.append_int(self.run)
        self.state = present
        self.run = 1

    def extend(self, presence: Presence, n: int) -> int:
        """``mark`` for ``n`` values at once (True: all present, False: none, or a
        mask); returns how many are present."""
        if n == 0:
            return 0
        if isinstance(presence, (bool, np.bool_)):
            uniform: bool | None = bool(presence)
        elif presence.all():
            uniform = True
        elif not presence.any():
            uniform = False
        else:
            uniform = None
        if uniform is not None:
            if uniform == self.state:
                self.run += n
            else:
                self.stream.append_int(self.run)
                self.state, self.run = uniform, n
            present = n if uniform else 0
        else:
            assert isinstance(presence, np.ndarray)
            present = int(np.count_nonzero(presence))
            change = np.flatnonzero(presence[1:] != presence[:-1]) + 1
            lengths = np.diff(np.concatenate(([0], change, [n])))
            if bool(presence[0]) == self.state:
                lengths[0] += self.run
                emitted = lengths[:-1]
            else:
                emitted = np.concatenate(([self.run], lengths[:-1]))
            if emitted.size:
                self.stream.extend(encode_ints(emitted))
            self.run = int(lengths[-1])
            self.state = bool(presence[-1])
        self.count += n
        self.present += present
        return present

    @property
    def has_nulls(self) -> bool:
        return self.present != self.count

    def finalize(self) -> None:
        """Close the last run before the final flush, so it joins the column's last segment."""
        if self.has_nulls and self.present:
            self.stream.append_int(self.run)
        elif not self.stream.segments:  # all null or no null: the runs are not written
            self.stream.discard()
        else:
            self.stream.spilled.clear()  # not needed: left in the spill file

    def finish(self) -> tuple[Segment, ...]:
        if not self.has_nulls or self.present == 0:
            return ()
        self.stream.flush()
        return tuple(self.stream.segments)

    def streams(self) -> list[Stream]:
        return [self.stream]
