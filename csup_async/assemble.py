"""Column streams to arrays: the reassembly of one super type's columns.

Pure CPU work on bytes that are already fetched, so it runs in a worker
thread.  Each step checks the counts the format promises (presence runs sum to
the rows, lengths sum to the child's values, union tags match member counts)
so a corrupt file is refused instead of misread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import arrays as A
from . import decode as D
from . import parallel
from .bsup import decode_primitive as decode_one
from .errors import FormatError, LimitError
from .meta import (
    AnyColumn,
    ArrayColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    Segment,
    UnionColumn,
)
from .types import (
    NULL,
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
    underlying,
)

_FAST = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "time",
         "duration", "float16", "float32", "float64", "bool", "string", "bytes"}
# Caps on what a file can make one read allocate (LimitError past them).  A
# column's count is not backed by bytes when its values are all null (no
# column, or a null type): one 5-byte length can claim 2**31 elements.  So:
# values any one column (or one batch of a list column) may claim ...
DEFAULT_MAX_ROWS = 1 << 28
# ... and all the columns of one read together (every node of every super type).
DEFAULT_MAX_VALUES = 1 << 30


@dataclass
class StreamSource:
    """Serves column streams (decompressed, concatenated segments) from fetched bytes.

    ``max_rows`` / ``max_values`` default (None) to the module's
    ``DEFAULT_MAX_ROWS`` / ``DEFAULT_MAX_VALUES`` as they are when the source is
    made; ``claim`` counts what the assembly asks for against them.
    """

    fetch: Callable[[Segment], bytes | memoryview]
    max_mem_length: int = 256 << 20
    max_rows: int | None = None
    max_values: int | None = None
    cache: dict[Segmap, bytes | memoryview] = field(default_factory=dict)
    decompressed: dict[Segment, bytes | memoryview] = field(default_factory=dict)
    claimed: int = 0

    def __post_init__(self) -> None:
        if self.max_rows is None:
            self.max_rows = DEFAULT_MAX_ROWS
        if self.max_values is None:
            self.max_values = DEFAULT_MAX_VALUES

    @property
    def rows_limit(self) -> int:
        assert self.max_rows is not None
        return self.max_rows

    def claim(self, count: int) -> None:
        """Count ``count`` values a column claims; LimitError past a cap."""
        if count > self.rows_limit:
            raise LimitError(f"a column claims {count} values, over max_rows={self.max_rows}")
        self.claimed += count
        assert self.max_values is not None
        if self.claimed > self.max_values:
            raise LimitError(f"the columns claim more than max_values={self.max_values} "
                             "values in all")

    def _segment(self, s: Segment) -> bytes | memoryview:
        done = self.decompressed.get(s)
        if done is not None:
            return done
        return D.decompress_segment(self.fetch(s), s, max_mem_length=self.max_mem_length)

    def stream(self, segmap: Segmap) -> bytes | memoryview:
        got = self.cache.get(segmap)
        if got is not None:
            return got
        parts = [self._segment(s) for s in segmap]
        out: bytes | memoryview = parts[0] if len(parts) == 1 else b"".join(parts)
        if not parts:
            out = b""
        self.cache[segmap] = out
        return out

    def int32s(self, segmap: Segmap, count: int) -> np.ndarray:
        return parallel.decode_int32s(self.stream(segmap), count)


def _retype(arr: A.Array, t: Type) -> A.Array:
    """The same data under a named/error/enum type."""
    return arr.with_type(t)


def assemble(t: Type, col: AnyColumn | None, count: int, src: StreamSource) -> A.Array:
    """The array of ``count`` values of type ``t`` stored in column ``col``."""
    src.claim(count)
    if col is None:
        return A.null_array(t, count)
    if isinstance(col, NullsColumn):
        valid = _presence(col.presence, count, src)
        if valid is None:
            return assemble(t, col.values, count, src)
        inner = assemble(t, col.values, int(valid.sum()), src)
        return inner.expand(valid)
    u = underlying(t)
    if isinstance(u, ErrorType):
        inner = assemble(u.inner, col, count, src)
        return _retype(inner, t)
    if u is not t:
        return _retype(assemble(u, col, count, src), t)
    if isinstance(t, (PrimitiveType, EnumType)):
        if not isinstance(col, PrimitiveColumn):
            raise FormatError(f"column for {t} is not a primitive column")
        return _primitive(t, src.stream(col.segmap), count)
    if isinstance(t, RecordType):
        if not isinstance(col, RecordColumn) or len(col.fields) != len(t.fields):
            raise FormatError(f"column for {t} is not a matching record column")
        fields = []
        for f, fc in zip(t.fields, col.fields, strict=True):
            fields.append(_field(f.type, fc.column, fc.presence, count, src))
        return A.StructArray(t, count, tuple(fields))
    if isinstance(t, (ArrayType, SetType)):
        if not isinstance(col, ArrayColumn):
            raise FormatError(f"column for {t} is not an array column")
        offsets = _offsets(col.lengths, count, src)
        values = assemble(t.elem, col.values, int(offsets[-1]), src)
        return A.ListArray(t, offsets, values)
    if isinstance(t, MapType):
        if not isinstance(col, MapColumn):
            raise FormatError(f"column for {t} is not a map column")
        offsets = _offsets(col.lengths, count, src)
        n = int(offsets[-1])
        return A.MapArray(t, offsets, assemble(t.key, col.keys, n, src),
                          assemble(t.value, col.values, n, src))
    if isinstance(t, UnionType):
        if not isinstance(col, UnionColumn) or len(col.columns) != len(t.types):
            raise FormatError(f"column for {t} is not a matching union column")
        tags = src.int32s(col.tags, count) if count else np.zeros(0, np.int32)
        if tags.size and (tags.min() < 0 or tags.max() >= len(t.types)):
            raise FormatError(f"union tag out of range 0..{len(t.types) - 1}")
        counts = np.bincount(tags, minlength=len(t.types))
        children = tuple(assemble(m, c, int(k), src)
                         for m, c, k in zip(t.types, col.columns, counts, strict=True))
        return A.UnionArray(t, tags.astype(np.int32, copy=False), children)
    raise FormatError(f"cannot assemble values of type {t}")


def _field(t: Type, col: AnyColumn | None, presence: Segmap, count: int,
           src: StreamSource) -> A.Array:
    if col is None:
        src.claim(count)
        return A.null_array(t, count)
    valid = _presence(presence, count, src)
    if valid is None:
        return assemble(t, col, count, src)
    return assemble(t, col, int(valid.sum()), src).expand(valid)


def _presence(presence: Segmap, count: int, src: StreamSource) -> np.ndarray | None:
    if not presence:
        return None
    runs = src.int32s(presence, None)
    return D.presence_to_validity(runs, count)


def _offsets(lengths: Segmap, count: int, src: StreamSource) -> np.ndarray:
    if count == 0:
        return np.zeros(1, np.int64)
    return D.lengths_to_offsets(src.int32s(lengths, count), max_total=src.rows_limit)


def _primitive(t: PrimitiveType | EnumType, stream: bytes | memoryview,
               count: int | None) -> A.Array:
    """Decode a primitive stream (``count`` None: however many values it holds)."""
    if count is None and (isinstance(t, EnumType) or t.name not in _FAST):
        count = len(D.scan_tags(stream)[0])
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
    if t.name in _FAST:
        # numba's loops for large int and string streams once loaded, numpy otherwise
        dec = parallel.decode_primitive(t, stream, count)
        if dec.offsets is not None:
            return A.BinaryArray(t, dec.offsets, dec.values, dec.validity, utf8_checked=True)
        return A.PrimitiveArray(t, dec.values, dec.validity)
    # the rare kinds without a numpy dtype: one Python object per value
    starts, lengths = D.scan_tags(stream, count)
    mv = memoryview(stream)
    out = np.empty(count, dtype=object)
    valid = lengths >= 0
    for i in range(count):
        if valid[i]:
            s = int(starts[i])
            out[i] = decode_one(t, mv[s : s + int(lengths[i])])
    return A.PrimitiveArray(t, out, None if valid.all() else valid)


def assemble_path(t: Type, col: AnyColumn | None, count: int, path: tuple[str, ...],
                  src: StreamSource) -> A.Array | None:
    """The values at ``path`` (record field names) for ``count`` rows, or None if absent.

    Only the streams on the way down are read: each record field's presence
    (and our nulls wrappers) narrow the rows, and the target's values are
    expanded back to every row, null where an ancestor is null.  The walk is
    resolved first, without reading, so a path this type lacks or a target
    that is all null costs no bytes (the planner plans none for them).
    """
    if not path:
        return assemble(t, col, count, src)
    src.claim(count)
    presences: list[Segmap] = []
    cur_t, cur_col = t, col
    for name in path:
        while True:
            if isinstance(cur_col, NullsColumn):
                if cur_col.presence:
                    presences.append(cur_col.presence)
                cur_col = cur_col.values
            elif isinstance(cur_t, (NamedType, ErrorType)):
                cur_t = cur_t.inner
            else:
                break
        if not isinstance(cur_t, RecordType) or cur_t.field(name) is None:
            return None
        ft = cur_t.field(name)
        assert ft is not None
        if cur_col is None:
            cur_t, cur_col = ft.type, None
            continue
        if not isinstance(cur_col, RecordColumn):
            raise FormatError(f"column for {cur_t} is not a record column")
        fc = cur_col.field(name)
        if fc is None:
            raise FormatError(f"record column lacks field {name!r}")
        if fc.column is not None and fc.presence:
            presences.append(fc.presence)
        cur_t, cur_col = ft.type, fc.column
    if cur_col is None:
        return A.null_array(cur_t, count)
    masks = []
    cur_count = count
    for presence in presences:
        valid = _presence(presence, cur_count, src)
        assert valid is not None
        masks.append(valid)
        cur_count = int(valid.sum())
    return _unwind(assemble(cur_t, cur_col, cur_count, src), masks)


def _unwind(arr: A.Array, masks: list[np.ndarray]) -> A.Array:
    for m in reversed(masks):
        arr = arr.expand(m)
    return arr
