"""The CSUP writer core: shred values into column streams, lay segments out, write metadata.

Values arrive one at a time as BSUP bodies (:meth:`Writer.write_body`, the
exact path for every type: what BSUP can say, CSUP stores) or many at a time
already shredded into columns (:meth:`Writer.add_rows` with a
:class:`~csup_async.writers.batch.Batch`, built by :mod:`csup_async.shred` from Arrow,
numpy or plain Python rows).  Both feed the same builders, so the segment
cut rule, the skew flush, layout and metadata exist once and both paths write
the same bytes.  This module imports no input adapter; :func:`csup_async.write`
(:mod:`csup_async.writers.writing`) chooses one.

Memory is bounded by ``skew_thresh``: when the buffered column data exceeds it,
every column's finished segments are set aside in a temporary file, and at close
each column's segments are written out together (those set aside, then the rest),
so every column is one contiguous range of the data section, however large the
file: one request for the planner where it would otherwise be one per flush (a
1M x 24 table of 210 MB had each column in four runs).  The destination is still
written strictly in order, once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..format.bsup import (
    LZ4_MAX_RATIO,
    StreamEncoder,
    check_type,
    encode_int,
    encode_value,
)
from ..format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from ..format.meta import (
    AnyColumn,
    Segment,
    Trailer,
)
from ..model.errors import CsupError, EncodeError
from ..model.types import (
    INT32,
    Type,
)
from ..model.values import Value, infer_type
from .batch import Batch
from .builders import ColumnBuilder, builder_for
from .segments import Runs, SegmentSink, Stream
from .segstats import segmap_type
from .tagenc import encode_constant, encode_ints

__all__ = ["Writer", "Stream", "Runs", "DEFAULT_SEGMENT_THRESH", "DEFAULT_SKEW_THRESH",
           "SKEW_CHECK_ROWS"]

#: 1 MiB, not the first design's 4 MiB (docs/format.md): on the 1M x 25 wide table a
#: 1 %-selective key range needs 2.2x fewer bytes, a full scan costs the same CPU and
#: coalesces into as many requests, and the metadata (14 KB) still arrives with the first
#: tail read (bench/bench_segments.py).
DEFAULT_SEGMENT_THRESH = 1 << 20
DEFAULT_SKEW_THRESH = 64 << 20
#: The skew threshold is checked after every this many rows, by every input path.
SKEW_CHECK_ROWS = 64
MAGIC = "super columnar"
VERSION = 1


def _short(t: Type) -> str:
    text = str(t)
    return text if len(text) <= 60 else text[:57] + "..."


class Writer(SegmentSink):
    """Incremental CSUP writer to a binary file object (see :func:`csup_async.write`).

    Use as a context manager, or call :meth:`close`; the file is only valid
    once closed.  The destination is written strictly sequentially, so any
    stream that accepts ``write`` works (a socket, an upload buffer).

    Values come one at a time (:meth:`write`, :meth:`write_body`) or as
    shredded batches (:meth:`write_batch`, :meth:`add_rows`); both give the
    same bytes.  Buffered column data is flushed once it exceeds
    ``skew_thresh``, checked every :data:`SKEW_CHECK_ROWS` rows.
    """

    def __init__(self, out: BinaryIO, *, segment_thresh: int = DEFAULT_SEGMENT_THRESH,
                 skew_thresh: int = DEFAULT_SKEW_THRESH, compress: bool = True,
                 statistics: bool = True) -> None:
        if segment_thresh <= 0 or skew_thresh <= 0:
            raise EncodeError("segment_thresh and skew_thresh must be positive")
        super().__init__(out, segment_thresh, compress, statistics)
        self.skew_thresh = skew_thresh
        self._super_ids: dict[Type, int] = {}
        self._last_super: tuple[Type, int] | None = None  # write_body's last type, by identity
        self._super_types: list[Type] = []
        self._builders: list[ColumnBuilder] = []
        # the super column's segments carry statistics too: their ``count`` sums to the
        # rows of a file of several super types (FileMeta.row_count; docs/format.md)
        self._super = Stream(self, INT32)
        self._closed = False
        self.rows = 0

    def write(self, value: Any) -> None:
        """Write one Python value (type inferred) or ``Value`` (type given)."""
        if isinstance(value, Value):
            t, v = value.type, value.value
        else:
            t, v = infer_type(value), value
        if t not in self._super_ids:
            check_type(t, f"super type {_short(t)}")  # before its values, for a clear error
        self.write_body(t, encode_value(t, v))

    def super_id(self, t: Type) -> int:
        """The super type ID of ``t``, adding it (and its columns) when new."""
        sid = self._super_ids.get(t)
        if sid is None:
            check_type(t, f"super type {_short(t)}")  # a reader must be able to read it
            builder = builder_for(self, t)
            sid = len(self._super_types)
            self._super_ids[t] = sid
            self._super_types.append(t)
            self._builders.append(builder)
        return sid

    def write_body(self, t: Type, body: bytes | memoryview | None) -> None:
        """Write one value given as its BSUP body (the exact path every input takes)."""
        if self._closed:
            raise CsupError("writer is closed")
        last = self._last_super
        if last is not None and last[0] is t:  # rows of one (maybe large) type: no hash
            sid = last[1]
        else:
            sid = self.super_id(t)
            self._last_super = (t, sid)
        self._builders[sid].append_uncovered(body)
        self._super.append_int(sid)
        self.rows += 1
        self._check_skew()

    def write_batch(self, batch: Batch) -> None:
        """Write shredded rows (see :mod:`csup_async.writers.batch`): the same bytes as
        :meth:`write_body` of each row.  The skew threshold is not checked here:
        :meth:`add_rows` checks it where per-row writing would."""
        if self._closed:
            raise CsupError("writer is closed")
        if batch.rows == 0:
            return
        _, first = np.unique(batch.row_types, return_index=True)
        order = np.argsort(first, kind="stable")  # super IDs in order of first appearance
        sids = np.zeros(len(batch.types), np.int64)
        for i in order:
            sids[i] = self.super_id(batch.types[i])
        for i in order:
            self._builders[sids[i]].extend_slot(batch.slots[i])
        if len(batch.types) == 1:
            self._super.extend(encode_constant(encode_int(int(sids[0])), batch.rows))
        else:
            self._super.extend(encode_ints(sids[batch.row_types]))
        self.rows += batch.rows

    def add_rows(self, n: int, encode: Callable[[int, int], Batch]) -> None:
        """Write ``n`` rows that ``encode(a, b)`` shreds into a :class:`Batch` for rows
        ``a`` to ``b``, checking the skew threshold exactly where per-row writing would.

        A batch whose bytes fit under the threshold cannot cross it at any check
        inside, so it goes whole; otherwise it is split (``encode`` is called again
        for the parts) down to the rows between two checks.
        """
        a = 0
        while a < n:
            b = n
            while True:
                batch = encode(a, b)
                to_check = SKEW_CHECK_ROWS - self.rows % SKEW_CHECK_ROWS
                if batch.nbytes <= self.skew_thresh - self._buffered or b - a <= to_check:
                    break
                steps = ((b - a) // 2 - to_check) // SKEW_CHECK_ROWS
                b = a + to_check + max(steps, 0) * SKEW_CHECK_ROWS
            self.write_batch(batch)
            self._check_skew()
            a = b

    def _check_skew(self) -> None:
        if self.rows % SKEW_CHECK_ROWS == 0 and self._buffered > self.skew_thresh:
            for b in self._builders:  # set aside, column by column
                for s in b.streams():
                    s.flush(spill=True)
            self._super.flush(spill=True)

    def flush(self) -> None:
        """Write every buffered segment, column by column (keeps each column contiguous)."""
        for b in self._builders:
            for s in b.streams():
                s.flush()
        self._super.flush()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._finish()
        finally:
            self._stop_helper()

    def _finish(self) -> None:
        for b in self._builders:
            for r in b.runs():
                r.finalize()
        self.flush()
        columns = [b.column() for b in self._builders]
        data_size = self._offset
        reassembly = bytearray()
        enc = StreamEncoder(reassembly)
        for t in self._super_types:
            enc.write_body(t, None)
        enc.write(*self._segmap_value(tuple(self._super.segments)))
        for col in columns:
            ct, cv = column_value(col, self._segmap_value)
            enc.write(ct, cv)
        enc.end_stream()
        self._check_readable(reassembly, data_size)
        self._emit(bytes(reassembly))
        trailer = bytearray()
        tenc = StreamEncoder(trailer, compress=False)
        tenc.write(TRAILER_TYPE, {
            "magic": MAGIC, "type": "csup", "version": VERSION,
            "sections": [data_size, len(reassembly)],
            "meta": {"skew_thresh": self.skew_thresh, "segment_thresh": self.segment_thresh},
        })
        tenc.end_stream()
        self._emit(bytes(trailer))
        self._closed = True
        self.columns: list[AnyColumn | None] = columns

    def _segmap_value(self, segmap: tuple[Segment, ...]) -> tuple[Type, Any]:
        """A segmap's (type, value), with each segment's statistics when it has them
        (docs/format.md, "Segment statistics and checksums")."""
        plain = segmap_value(segmap)
        stats = [self._stats.get(seg) for seg in segmap]
        if not segmap or any(s is None for s in stats):
            return SEGMAP_TYPE, plain
        t = stats[0][0]  # type: ignore[index]
        for el, st in zip(plain, stats, strict=True):
            el.update(st[1])  # type: ignore[index]
        return segmap_type(SEGMAP_TYPE.elem, t), plain

    def _check_readable(self, reassembly: bytearray, data_size: int) -> None:
        """EncodeError unless this reader can parse the metadata just made (a deep or
        huge type can pass every check but make a column tree deeper than readers
        accept): never finish a file that cannot be read back."""
        from ..format.csup import parse_reassembly

        sections = (data_size, len(reassembly))
        trailer = Trailer(MAGIC, "csup", VERSION, sections, self.skew_thresh,
                          self.segment_thresh, 0)
        try:
            parse_reassembly(reassembly, trailer, data_size + len(reassembly),
                             max_metadata=max(len(reassembly), 1) * LZ4_MAX_RATIO + 64)
        except CsupError as e:
            self._closed = True
            raise EncodeError(f"the file's metadata would not be readable: {e.message}"
                              ) from None

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self._stop_helper()
