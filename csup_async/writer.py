"""The CSUP writer: shred values into column streams, lay segments out, write metadata.

Values are shredded from their BSUP bodies, so every input (Python values,
BSUP files, Arrow) goes through one exact path: what BSUP can say, CSUP
stores.  Memory is bounded by ``skew_thresh``: when the buffered column data
exceeds it, every column is flushed to the data section, column by column, so
each column's segments of one flush are contiguous (one range for the
planner).  A file under the skew threshold has every column in one run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

import lz4.block

from .bsup import (
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
from .colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from .errors import CsupError, EncodeError, FormatError
from .meta import (
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
from .types import (
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
from .values import Value, infer_type

__all__ = ["write", "Writer", "DEFAULT_SEGMENT_THRESH", "DEFAULT_SKEW_THRESH"]

DEFAULT_SEGMENT_THRESH = 4 << 20
DEFAULT_SKEW_THRESH = 64 << 20
MAGIC = "super columnar"
VERSION = 1


class _Stream:
    """One column stream: a buffer of tag-encoded values cut into segments."""

    __slots__ = ("buf", "pending", "segments", "w")

    def __init__(self, w: Writer) -> None:
        self.w = w
        self.buf = bytearray()
        self.pending: list[tuple[bytes, int, int]] = []  # (stored bytes, mem_length, format)
        self.segments: list[Segment] = []

    def append(self, body: bytes | memoryview | None) -> None:
        before = len(self.buf)
        append_tagged(self.buf, body)
        self.w._buffered += len(self.buf) - before
        if len(self.buf) >= self.w.segment_thresh:
            self.cut()

    def append_int(self, v: int) -> None:
        self.append(encode_int(v))

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
        self.pending.append((stored, len(raw), fmt))

    def flush(self) -> None:
        self.cut()
        for stored, mem, fmt in self.pending:
            self.segments.append(Segment(self.w._offset, len(stored), mem, fmt))
            self.w._emit(stored)
            self.w._buffered -= len(stored)
        self.pending.clear()

    @property
    def empty(self) -> bool:
        return not self.buf and not self.pending and not self.segments


class _Runs:
    """Presence runs (present, absent, present, ...) emitted only once a null appears."""

    __slots__ = ("count", "present", "run", "state", "stream")

    def __init__(self, w: Writer) -> None:
        self.stream = _Stream(w)
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

    @property
    def has_nulls(self) -> bool:
        return self.present != self.count

    def finalize(self) -> None:
        """Close the last run before the final flush, so it joins the column's last segment."""
        if self.has_nulls and self.present:
            self.stream.append_int(self.run)
        elif not self.stream.segments:  # all null or no null: the runs are not written
            self.stream.w._buffered -= len(self.stream.buf) + sum(
                len(p[0]) for p in self.stream.pending)
            self.stream.buf = bytearray()
            self.stream.pending.clear()

    def finish(self) -> tuple[Segment, ...]:
        if not self.has_nulls or self.present == 0:
            return ()
        self.stream.flush()
        return tuple(self.stream.segments)

    def streams(self) -> list[_Stream]:
        return [self.stream]


class _Builder:
    """Shreds the BSUP bodies of one type into its column streams."""

    def __init__(self, w: Writer, t: Type) -> None:
        self.w = w
        self.t = t
        self.nulls: _Runs | None = None  # for null complex values no presence covers

    def append(self, body: memoryview | bytes | None) -> None:
        raise NotImplementedError

    def append_null_uncovered(self) -> None:
        if self.nulls is None:
            self.nulls = _Runs(self.w)
            for _ in range(self.count):
                self.nulls.mark(True)
        self.nulls.mark(False)

    def append_uncovered(self, body: memoryview | bytes | None) -> None:
        """Append where no presence column covers a null (top level, elements, members)."""
        if body is None:
            self.append_null_uncovered()
            return
        if self.nulls is not None:
            self.nulls.mark(True)
        self.count += 1
        self.append(body)

    count = 0

    def streams(self) -> list[_Stream]:
        """Streams in layout order (presence before the values it places)."""
        own = self.nulls.streams() if self.nulls else []
        return own + self.own_streams()

    def runs(self) -> list[_Runs]:
        """Every presence-run builder under this one (to finalize before the last flush)."""
        return [self.nulls] if self.nulls else []

    def own_streams(self) -> list[_Stream]:
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
        self.stream = _Stream(w)

    def append(self, body: memoryview | bytes | None) -> None:
        self.stream.append(body)

    def append_uncovered(self, body: memoryview | bytes | None) -> None:
        self.count += 1
        self.stream.append(body)  # primitive nulls are in-band

    def own_streams(self) -> list[_Stream]:
        return [self.stream]

    def inner_column(self) -> AnyColumn | None:
        self.stream.flush()
        return PrimitiveColumn(tuple(self.stream.segments))


class _RecordBuilder(_Builder):
    def __init__(self, w: Writer, t: RecordType) -> None:
        super().__init__(w, t)
        self.fields = [(f.name, _Runs(w), builder_for(w, f.type)) for f in t.fields]

    def append(self, body: memoryview | bytes | None) -> None:
        assert body is not None
        it = iter_tagged(body, 0, len(body))
        for _name, runs, child in self.fields:
            try:
                v = next(it)
            except StopIteration:
                raise FormatError("record value has too few fields") from None
            runs.mark(v is not None)
            if v is not None:
                child.count += 1
                if child.nulls is not None:
                    child.nulls.mark(True)
                child.append(v)
        if next(it, None) is not None:
            raise FormatError("record value has too many fields")

    def own_streams(self) -> list[_Stream]:
        out: list[_Stream] = []
        for _, runs, child in self.fields:
            out += runs.streams() + child.streams()
        return out

    def runs(self) -> list[_Runs]:
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
        self.lengths = _Stream(w)
        self.values = builder_for(w, t.elem)

    def append(self, body: memoryview | bytes | None) -> None:
        assert body is not None
        n = 0
        for el in iter_tagged(body, 0, len(body)):
            self.values.append_uncovered(el)
            n += 1
        self.lengths.append_int(n)

    def own_streams(self) -> list[_Stream]:
        return [self.lengths, *self.values.streams()]

    def runs(self) -> list[_Runs]:
        return super().runs() + self.values.runs()

    def inner_column(self) -> AnyColumn | None:
        self.lengths.flush()
        return ArrayColumn(self.values.column(), tuple(self.lengths.segments))


class _MapBuilder(_Builder):
    def __init__(self, w: Writer, t: MapType) -> None:
        super().__init__(w, t)
        self.lengths = _Stream(w)
        self.keys = builder_for(w, t.key)
        self.values = builder_for(w, t.value)

    def append(self, body: memoryview | bytes | None) -> None:
        assert body is not None
        items = list(iter_tagged(body, 0, len(body)))
        if len(items) % 2:
            raise FormatError("map value has a key without a value")
        for k, v in zip(items[0::2], items[1::2], strict=True):
            self.keys.append_uncovered(k)
            self.values.append_uncovered(v)
        self.lengths.append_int(len(items) // 2)

    def own_streams(self) -> list[_Stream]:
        return [self.lengths, *self.keys.streams(), *self.values.streams()]

    def runs(self) -> list[_Runs]:
        return super().runs() + self.keys.runs() + self.values.runs()

    def inner_column(self) -> AnyColumn | None:
        self.lengths.flush()
        return MapColumn(self.keys.column(), self.values.column(), tuple(self.lengths.segments))


class _UnionBuilder(_Builder):
    def __init__(self, w: Writer, t: UnionType) -> None:
        super().__init__(w, t)
        self.tags = _Stream(w)
        self.members = [builder_for(w, m) for m in t.types]

    def append(self, body: memoryview | bytes | None) -> None:
        assert body is not None
        parts = list(iter_tagged(body, 0, len(body)))
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a tag and a value")
        idx = decode_int(parts[0]) if UNION_TAG_SIGNED else decode_uint(parts[0])
        if not 0 <= idx < len(self.members):
            raise FormatError(f"union tag {idx} out of range")
        self.tags.append_int(idx)
        self.members[idx].append_uncovered(parts[1])

    def own_streams(self) -> list[_Stream]:
        out = [self.tags]
        for m in self.members:
            out += m.streams()
        return out

    def runs(self) -> list[_Runs]:
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

    def append(self, body: memoryview | bytes | None) -> None:
        assert body is not None
        parts = list(iter_tagged(body, 0, len(body)))
        if len(parts) != 1:
            raise FormatError("error value does not hold exactly one element")
        self.inner.append_uncovered(parts[0])

    def own_streams(self) -> list[_Stream]:
        return self.inner.streams()

    def runs(self) -> list[_Runs]:
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
    """Incremental CSUP writer to a binary file object (see :func:`write`).

    Use as a context manager, or call :meth:`close`; the file is only valid
    once closed.  The destination is written strictly sequentially, so any
    stream that accepts ``write`` works (a socket, an upload buffer).
    """

    def __init__(self, out: BinaryIO, *, segment_thresh: int = DEFAULT_SEGMENT_THRESH,
                 skew_thresh: int = DEFAULT_SKEW_THRESH, compress: bool = True) -> None:
        if segment_thresh <= 0 or skew_thresh <= 0:
            raise EncodeError("segment_thresh and skew_thresh must be positive")
        self.out = out
        self.segment_thresh = segment_thresh
        self.skew_thresh = skew_thresh
        self.compress = compress
        self._offset = 0
        self._buffered = 0
        self._super_ids: dict[Type, int] = {}
        self._super_types: list[Type] = []
        self._builders: list[_Builder] = []
        self._super = _Stream(self)
        self._closed = False
        self.rows = 0

    def _emit(self, b: bytes) -> None:
        self.out.write(b)
        self._offset += len(b)

    def write(self, value: Any) -> None:
        """Write one Python value (type inferred) or ``Value`` (type given)."""
        if isinstance(value, Value):
            t, v = value.type, value.value
        else:
            t, v = infer_type(value), value
        self.write_body(t, encode_value(t, v))

    def write_body(self, t: Type, body: bytes | memoryview | None) -> None:
        """Write one value given as its BSUP body (the exact path every input takes)."""
        if self._closed:
            raise CsupError("writer is closed")
        sid = self._super_ids.get(t)
        if sid is None:
            check_type(t, f"super type {_short(t)}")  # a reader must be able to read it
            sid = len(self._super_types)
            self._super_ids[t] = sid
            self._super_types.append(t)
            self._builders.append(builder_for(self, t))
        self._builders[sid].append_uncovered(body)
        self._super.append_int(sid)
        self.rows += 1
        if self._buffered > self.skew_thresh:
            self.flush()

    def flush(self) -> None:
        """Write every buffered segment, column by column (keeps each column contiguous)."""
        for b in self._builders:
            for s in b.streams():
                s.flush()
        self._super.flush()

    def close(self) -> None:
        if self._closed:
            return
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
        enc.write(SEGMAP_TYPE, segmap_value(tuple(self._super.segments)))
        for col in columns:
            ct, cv = column_value(col)
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

    def _check_readable(self, reassembly: bytearray, data_size: int) -> None:
        """EncodeError unless this reader can parse the metadata just made (a deep or
        huge type can pass every check but make a column tree deeper than readers
        accept): never finish a file that cannot be read back."""
        from .format import parse_reassembly
        from .meta import Trailer

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


def write(dest: str | os.PathLike[str] | BinaryIO, data: Any, **options: Any) -> int:
    """Write ``data`` as one CSUP file at ``dest``; return the number of rows.

    ``data``: an iterable of Python values or ``Value``s, or a pyarrow
    Table / RecordBatch / RecordBatchReader, or a mapping of column names to
    1-d numpy arrays (masked arrays for nulls).  ``dest``: a path (written to
    a temporary name and renamed into place, so no partial file is ever
    visible) or a binary file object.  Options: ``segment_thresh``,
    ``skew_thresh``, ``compress``.

    Flat Arrow tables and numpy columns take the vectorised encoder
    (:mod:`csup_async.arrow_write`), which writes the same values hundreds of
    times faster; anything else is shredded value by value.
    """
    from .arrow_input import ArrowValues

    if isinstance(data, ArrowValues):  # rows of a Parquet file: encode its batches whole
        data = _batch_reader(data.source)
    write_to = _fast_writer(data) or _value_writer(data)
    if isinstance(dest, (str, os.PathLike)):
        path = os.fspath(dest)
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                n = write_to(f, **options)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return n
    return write_to(dest, **options)


def _value_writer(data: Any) -> Callable[..., int]:
    """Value-by-value writing of any input (the exact path for every type)."""
    rows = _arrow_rows(data)
    return lambda f, **options: _write_all(f, rows, options)


def _fast_writer(data: Any) -> Callable[..., int] | None:
    """The vectorised writer for flat Arrow/numpy input, or None."""
    is_arrow = type(data).__module__.startswith("pyarrow")
    is_columns = isinstance(data, dict) and any(
        type(v).__module__.startswith("numpy") for v in data.values())
    if not (is_arrow or is_columns):
        return None
    from .arrow_write import fast_writer

    return fast_writer(data)


def _batch_reader(source: Any) -> Any:
    """An iterator of record batches as a RecordBatchReader (its schema from the first)."""
    if type(source).__module__.startswith("pyarrow"):
        return source
    import itertools

    import pyarrow as pa

    it = iter(source)
    first = next(it, None)
    if first is None:
        return pa.table({})
    return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], it))


def _write_all(f: BinaryIO, rows: Iterable[Any], options: dict[str, Any]) -> int:
    w = Writer(f, **options)
    for v in rows:
        w.write(v)
    w.close()
    return w.rows


def _arrow_rows(data: Any) -> Iterable[Any]:
    mod = type(data).__module__
    if mod.startswith("pyarrow"):
        from .arrow_input import arrow_values

        return arrow_values(data)
    return data
