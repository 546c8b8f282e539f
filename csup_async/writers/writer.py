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
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

import lz4.block
import numpy as np

from ..format.bsup import (
    LZ4_MAX_RATIO,
    UNION_TAG_SIGNED,
    StreamEncoder,
    append_tagged,
    check_type,
    decode_int,
    decode_uint,
    encode_int,
    encode_value,
    iter_tagged,
)
from ..format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from ..format.meta import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    AnyColumn,
    ArrayColumn,
    FieldColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segment,
    UnionColumn,
)
from ..model.errors import CsupError, EncodeError, FormatError
from ..model.heap import keep_freed_memory
from ..model.types import (
    INT32,
    ArrayType,
    EnumType,
    ErrorType,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ..model.values import Value, infer_type
from .batch import Arr, Batch, ErrNode, MapNode, Node, Presence, Prim, Rec, Slot, UnionNode
from .segstats import segmap_type, segment_stats
from .tagenc import Encoded, encode_constant, encode_ints

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


class Stream:
    """One column stream: tag-encoded values cut into segments.

    The cut rule lives here only: a segment ends after the value that brings
    the buffer to ``segment_thresh``, whether values come one at a time
    (:meth:`append`) or many at once (:meth:`extend`).
    """

    __slots__ = ("buf", "count", "ends", "int_ends", "pending", "segments", "spilled",
                 "stat_type", "w")

    def __init__(self, w: Writer, stat_type: Type | None = None) -> None:
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

    def __init__(self, w: Writer) -> None:
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


class _Builder:
    """Shreds the values of one type into its column streams.

    Values arrive either where a presence column covers nulls (record fields:
    :meth:`append` / :meth:`extend`, never null) or where none does (rows,
    elements, members: :meth:`append_uncovered` / :meth:`extend_slot`, where a
    null of a complex type gets this builder's own presence runs).
    """

    def __init__(self, w: Writer, t: Type) -> None:
        self.w = w
        self.t = t
        self.nulls: Runs | None = None  # for null complex values no presence covers
        self.count = 0  # non-null values so far

    def append(self, body: memoryview | bytes) -> None:
        raise NotImplementedError

    def extend(self, node: Node | None, n: int) -> None:
        """``n`` non-null values at once (the bulk :meth:`append`)."""
        raise NotImplementedError

    def append_covered(self, body: memoryview | bytes) -> None:
        self.count += 1
        if self.nulls is not None:
            self.nulls.mark(True)
        self.append(body)

    def extend_covered(self, node: Node | None, n: int) -> None:
        if n == 0:
            return
        self.count += n
        if self.nulls is not None:
            self.nulls.extend(True, n)
        self.extend(node, n)

    def append_uncovered(self, body: memoryview | bytes | None) -> None:
        """Append where no presence column covers a null (top level, elements, members)."""
        if body is None:
            self._start_nulls()
            assert self.nulls is not None
            self.nulls.mark(False)
            return
        self.append_covered(body)

    def extend_slot(self, slot: Slot) -> None:
        """Many values where no presence column covers a null (the bulk
        :meth:`append_uncovered`)."""
        valid = slot.valid
        if valid is None or valid.all():
            self.extend_covered(slot.node, slot.n)
            return
        self._start_nulls()
        assert self.nulls is not None
        present = self.nulls.extend(valid, slot.n)
        self.count += present
        if present:
            self.extend(slot.node, present)

    def _start_nulls(self) -> None:
        if self.nulls is None:
            self.nulls = Runs(self.w)
            self.nulls.extend(True, self.count)

    def streams(self) -> list[Stream]:
        """Streams in layout order (presence before the values it places)."""
        own = self.nulls.streams() if self.nulls else []
        return own + self.own_streams()

    def runs(self) -> list[Runs]:
        """Every presence-run builder under this one (to finalize before the last flush)."""
        return [self.nulls] if self.nulls else []

    def own_streams(self) -> list[Stream]:
        raise NotImplementedError

    def column(self) -> AnyColumn | None:
        inner = self.inner_column()
        if self.nulls is not None and self.nulls.has_nulls:
            if not self.nulls.present:
                return None  # every value null: no column, as for an all-null record field
            return NullsColumn(inner, self.nulls.finish())
        return inner

    def inner_column(self) -> AnyColumn | None:
        raise NotImplementedError


class _PrimitiveBuilder(_Builder):
    def __init__(self, w: Writer, t: Type) -> None:
        super().__init__(w, t)
        self.stream = Stream(w, t)

    def append(self, body: memoryview | bytes) -> None:
        self.stream.append(body)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, Prim)
        self.stream.extend(node.values)

    def append_uncovered(self, body: memoryview | bytes | None) -> None:
        self.count += 1
        self.stream.append(body)  # primitive nulls are in-band

    def extend_slot(self, slot: Slot) -> None:
        self.count += slot.n
        if slot.n:
            self.extend(slot.node, slot.n)  # nulls in band, in the node's values

    def own_streams(self) -> list[Stream]:
        return [self.stream]

    def inner_column(self) -> AnyColumn | None:
        self.stream.flush()
        return PrimitiveColumn(tuple(self.stream.segments))


class _RecordBuilder(_Builder):
    def __init__(self, w: Writer, t: RecordType) -> None:
        super().__init__(w, t)
        self.fields = [(f.name, Runs(w), builder_for(w, f.type)) for f in t.fields]

    def append(self, body: memoryview | bytes) -> None:
        it = iter_tagged(body, 0, len(body))
        for _name, runs, child in self.fields:
            try:
                v = next(it)
            except StopIteration:
                raise FormatError("record value has too few fields") from None
            runs.mark(v is not None)
            if v is not None:
                child.append_covered(v)
        if next(it, None) is not None:
            raise FormatError("record value has too many fields")

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, Rec) and len(node.fields) == len(self.fields)
        for (_name, runs, child), (presence, cnode) in zip(self.fields, node.fields,
                                                           strict=True):
            present = runs.extend(presence, n)
            if present:
                child.extend_covered(cnode, present)

    def own_streams(self) -> list[Stream]:
        out: list[Stream] = []
        for _, runs, child in self.fields:
            out += runs.streams() + child.streams()
        return out

    def runs(self) -> list[Runs]:
        out = super().runs()
        for _, runs, child in self.fields:
            out += [runs, *child.runs()]
        return out

    def inner_column(self) -> AnyColumn | None:
        fields = []
        for name, runs, child in self.fields:
            col = child.column() if runs.present else None
            fields.append(FieldColumn(name, col, runs.finish()))
        return RecordColumn(tuple(fields))


class _ArrayBuilder(_Builder):
    def __init__(self, w: Writer, t: ArrayType | SetType) -> None:
        super().__init__(w, t)
        self.lengths = Stream(w, INT32)
        self.values = builder_for(w, t.elem)

    def append(self, body: memoryview | bytes) -> None:
        n = 0
        for el in iter_tagged(body, 0, len(body)):
            self.values.append_uncovered(el)
            n += 1
        self.lengths.append_int(n)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, Arr)
        self.values.extend_slot(node.elems)
        self.lengths.extend(node.lengths)

    def own_streams(self) -> list[Stream]:
        return [self.lengths, *self.values.streams()]

    def runs(self) -> list[Runs]:
        return super().runs() + self.values.runs()

    def inner_column(self) -> AnyColumn | None:
        self.lengths.flush()
        return ArrayColumn(self.values.column(), tuple(self.lengths.segments))


class _MapBuilder(_Builder):
    def __init__(self, w: Writer, t: MapType) -> None:
        super().__init__(w, t)
        self.lengths = Stream(w, INT32)
        self.keys = builder_for(w, t.key)
        self.values = builder_for(w, t.value)

    def append(self, body: memoryview | bytes) -> None:
        items = list(iter_tagged(body, 0, len(body)))
        if len(items) % 2:
            raise FormatError("map value has a key without a value")
        for k, v in zip(items[0::2], items[1::2], strict=True):
            self.keys.append_uncovered(k)
            self.values.append_uncovered(v)
        self.lengths.append_int(len(items) // 2)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, MapNode)
        self.keys.extend_slot(node.keys)
        self.values.extend_slot(node.values)
        self.lengths.extend(node.lengths)

    def own_streams(self) -> list[Stream]:
        return [self.lengths, *self.keys.streams(), *self.values.streams()]

    def runs(self) -> list[Runs]:
        return super().runs() + self.keys.runs() + self.values.runs()

    def inner_column(self) -> AnyColumn | None:
        self.lengths.flush()
        return MapColumn(self.keys.column(), self.values.column(), tuple(self.lengths.segments))


class _UnionBuilder(_Builder):
    def __init__(self, w: Writer, t: UnionType) -> None:
        super().__init__(w, t)
        self.tags = Stream(w, INT32)
        self.members = [builder_for(w, m) for m in t.types]

    def append(self, body: memoryview | bytes) -> None:
        parts = list(iter_tagged(body, 0, len(body)))
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a tag and a value")
        idx = decode_int(parts[0]) if UNION_TAG_SIGNED else decode_uint(parts[0])
        if not 0 <= idx < len(self.members):
            raise FormatError(f"union tag {idx} out of range")
        self.tags.append_int(idx)
        self.members[idx].append_uncovered(parts[1])

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, UnionNode) and len(node.members) == len(self.members)
        self.tags.extend(node.tags)
        for member, slot in zip(self.members, node.members, strict=True):
            if slot is not None and slot.n:
                member.extend_slot(slot)

    def own_streams(self) -> list[Stream]:
        out = [self.tags]
        for m in self.members:
            out += m.streams()
        return out

    def runs(self) -> list[Runs]:
        out = super().runs()
        for m in self.members:
            out += m.runs()
        return out

    def inner_column(self) -> AnyColumn | None:
        self.tags.flush()
        cols = tuple(m.column() if m.count or m.nulls else None for m in self.members)
        return UnionColumn(cols, tuple(self.tags.segments))


class _ErrorBuilder(_Builder):
    """An error's column is its wrapped type's; a null error needs our nulls wrapper."""

    def __init__(self, w: Writer, t: ErrorType) -> None:
        super().__init__(w, t)
        self.inner = builder_for(w, t.inner)

    def append(self, body: memoryview | bytes) -> None:
        # the body of an error is its wrapped value's body (Zed's encoding)
        self.inner.append_uncovered(body)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, ErrNode)
        self.inner.extend_slot(node.inner)

    def own_streams(self) -> list[Stream]:
        return self.inner.streams()

    def runs(self) -> list[Runs]:
        return super().runs() + self.inner.runs()

    def inner_column(self) -> AnyColumn | None:
        return self.inner.column()


def _short(t: Type) -> str:
    text = str(t)
    return text if len(text) <= 60 else text[:57] + "..."


def builder_for(w: Writer, t: Type) -> _Builder:
    if isinstance(t, NamedType):
        return builder_for(w, t.inner)
    if isinstance(t, (PrimitiveType, EnumType)):
        return _PrimitiveBuilder(w, t)
    if isinstance(t, RecordType):
        return _RecordBuilder(w, t)
    if isinstance(t, (ArrayType, SetType)):
        return _ArrayBuilder(w, t)
    if isinstance(t, MapType):
        return _MapBuilder(w, t)
    if isinstance(t, UnionType):
        return _UnionBuilder(w, t)
    if isinstance(t, ErrorType):
        return _ErrorBuilder(w, t)
    raise EncodeError(f"cannot write values of type {t!r}")


class Writer:
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
        self.out = out
        self.segment_thresh = segment_thresh
        self.skew_thresh = skew_thresh
        self.compress = compress
        self.statistics = statistics
        self._stats: dict[Segment, tuple[Type, dict[str, Any]]] = {}
        self._helper: ThreadPoolExecutor | None = None
        self._offset = 0
        self._buffered = 0
        self._super_ids: dict[Type, int] = {}
        self._last_super: tuple[Type, int] | None = None  # write_body's last type, by identity
        self._super_types: list[Type] = []
        self._builders: list[_Builder] = []
        # the super column's segments carry statistics too: their ``count`` sums to the
        # rows of a file of several super types (FileMeta.row_count; docs/format.md)
        self._super = Stream(self, INT32)
        self._closed = False
        self._spill: BinaryIO | None = None
        self._spill_size = 0
        self.rows = 0

    @property
    def buffered(self) -> int:
        """Bytes of column data held in memory, not yet written out."""
        return self._buffered

    def _emit(self, b: bytes) -> None:
        self.out.write(b)
        self._offset += len(b)

    def _spill_write(self, b: bytes) -> int:
        """Set ``b`` aside in the spill file (made on first use); where it starts."""
        if self._spill is None:
            import tempfile

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
        from ..format.meta import Trailer

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
