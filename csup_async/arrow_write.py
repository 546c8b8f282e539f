"""Vectorised CSUP encoding of flat Arrow tables and numpy columns.

The regular writer shreds one BSUP body at a time, which is exact for every
type but costs microseconds per value: a million-row, 24-column table takes
minutes.  For the common case (a table whose columns are all primitive) the
column streams can be produced directly with numpy: ints sign-and-magnitude and cut to
their byte length, floats as a constant tag plus their bytes, strings as a
uvarint ``length + 1`` tag plus their bytes, nulls as presence runs computed
from the validity bitmap.

The bytes are fed into the regular writer's own builders (``_RecordBuilder``,
``_Runs``, ``_Stream``), so segment cutting, LZ4-when-smaller, skew flushes,
layout and metadata are the regular writer's code, not a copy of it; only the
per-value loop is replaced.  A skew flush is checked per batch instead of per
row, so a flush may come up to one batch later; the values read back are the
same as through the Python path.  Types this module does not handle (nested,
decimals, ...) make :func:`fast_writer` return None, and the caller takes the
regular path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from .errors import EncodeError
from .types import PRIMITIVE_BY_NAME, Field, PrimitiveType, RecordType
from .writer import Writer, _RecordBuilder, _Runs, _Stream

__all__ = ["fast_writer", "write_arrow", "write_columns", "BATCH_ROWS"]

#: Rows encoded at once: large enough that numpy's per-call cost vanishes, small
#: enough that a skew flush comes soon after the threshold is crossed.
BATCH_ROWS = 1 << 16

_INTS = {"int8", "int16", "int32", "int64", "time", "duration"}
_UINTS = {"uint8", "uint16", "uint32", "uint64"}
_FLOATS = {"float16": 2, "float32": 4, "float64": 8}
_VARBIN = {"string", "bytes"}
SUPPORTED = _INTS | _UINTS | set(_FLOATS) | _VARBIN | {"bool", "null"}


@dataclass(slots=True)
class _Col:
    """One column of one batch, reduced to numpy: the non-null values only.

    ``values``: ints as int64/uint64, floats as their dtype, bools as uint8,
    ``None`` for strings/bytes (then ``offsets`` (n+1, int64) and ``data``
    (uint8) hold them).  ``valid``: the validity mask over all rows, or None
    when no value is null.
    """

    valid: np.ndarray | None
    values: np.ndarray | None = None
    offsets: np.ndarray | None = None
    data: np.ndarray | None = None


# ------------------------------------------------------------- encoders ---

def _int_bytes(u: np.ndarray) -> np.ndarray:
    """Bytes each uint64 needs with high zero bytes dropped (0 for zero)."""
    n = np.zeros(u.size, np.int64)
    for j in range(8):
        n += u >= (np.uint64(1) << np.uint64(8 * j)) if j else u > 0
    return n


def encode_uints(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tag-encoded uint64s: (stream bytes, end offset of each value).

    Each value is laid out as a 9-byte row (tag, 8 little-endian bytes) and a
    row-major boolean mask keeps the tag and the value's significant bytes:
    one gather for the whole column.
    """
    u = np.ascontiguousarray(u, dtype="<u8")
    nb = _int_bytes(u)
    rows = np.empty((u.size, 9), np.uint8)
    rows[:, 0] = nb + 1
    rows[:, 1:] = u.view(np.uint8).reshape(-1, 8)
    keep = np.arange(9) <= nb[:, None]
    return rows[keep], np.cumsum(nb + 1)


def encode_ints(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tag-encoded signed ints: sign and magnitude (``|v| << 1 | sign``, Zed's
    ``EncodeCountedVarint``; int64's minimum wraps to 1), then as uints."""
    v = np.asarray(v, dtype=np.int64)
    sign = (v >> 63).view(np.uint64)  # all ones where negative
    magnitude = (v.view(np.uint64) ^ sign) - sign  # |v|, 2**63 for the minimum
    return encode_uints((magnitude << np.uint64(1)) | (sign & np.uint64(1)))


def encode_fixed(v: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Tag-encoded fixed-width bodies (floats, bools): a constant tag per value."""
    raw = np.ascontiguousarray(v).view(np.uint8).reshape(-1, width)
    rows = np.empty((raw.shape[0], width + 1), np.uint8)
    rows[:, 0] = width + 1
    rows[:, 1:] = raw
    return rows.reshape(-1), np.arange(1, raw.shape[0] + 1, dtype=np.int64) * (width + 1)


def encode_varbinary(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tag-encoded strings/bytes: uvarint(length + 1), then the bytes."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    code = (lengths + 1).astype(np.uint64)
    tb = np.ones(lengths.size, np.int64)
    for j in range(1, 10):
        tb += code >= (np.uint64(1) << np.uint64(7 * j))
    sizes = tb + lengths
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if ends.size else 0
    out = np.empty(total, np.uint8)
    starts = ends - sizes
    body = np.ones(total, bool)
    if (tb == 1).all():
        out[starts] = code.astype(np.uint8)
        body[starts] = False
    else:
        for j in range(int(tb.max())):
            sel = tb > j
            b = (code[sel] >> np.uint64(7 * j)) & np.uint64(0x7F)
            more = tb[sel] > j + 1
            out[starts[sel] + j] = (b | np.where(more, np.uint64(0x80), np.uint64(0))
                                    ).astype(np.uint8)
            body[starts[sel] + j] = False
    out[body] = data[offsets[0]: offsets[-1]] if offsets.size else data[:0]
    return out, ends


def encode_runs(runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Presence run lengths, tag-encoded as ints (the int32 streams of the format)."""
    return encode_ints(runs)


def _encode(name: str, col: _Col) -> tuple[np.ndarray, np.ndarray]:
    if name in _INTS:
        assert col.values is not None
        return encode_ints(col.values)
    if name in _UINTS:
        assert col.values is not None
        return encode_uints(col.values)
    if name in _FLOATS:
        assert col.values is not None
        return encode_fixed(col.values, _FLOATS[name])
    if name == "bool":
        assert col.values is not None
        return encode_fixed(col.values.astype(np.uint8), 1)
    assert col.offsets is not None and col.data is not None
    return encode_varbinary(col.offsets, col.data)


# --------------------------------------------------- into the builders ---

def _feed(stream: _Stream, data: np.ndarray, ends: np.ndarray) -> None:
    """Append tag-encoded values to a writer stream, cutting segments exactly where
    the per-value path would: after the value that brings the buffer to the threshold."""
    w = stream.w
    thresh = w.segment_thresh
    pos = 0
    total = int(ends[-1]) if ends.size else 0
    mv = memoryview(data)
    while pos < total:
        need = thresh - len(stream.buf)
        i = int(np.searchsorted(ends, pos + need, side="left"))
        if i >= ends.size:
            stream.buf += mv[pos:total]
            w._buffered += total - pos
            return
        cut = int(ends[i])
        stream.buf += mv[pos:cut]
        w._buffered += cut - pos
        stream.cut()
        pos = cut


def _mark(runs: _Runs, valid: np.ndarray | None, n: int) -> int:
    """Bulk ``_Runs.mark`` for ``n`` rows; returns how many are present."""
    if valid is None or valid.all():
        present = n
        if runs.state:
            runs.run += n
        else:  # the current absent run ends here
            _feed(runs.stream, *encode_runs(np.array([runs.run])))
            runs.state, runs.run = True, n
        runs.count += n
        runs.present += n
        return present
    present = int(valid.sum())
    change = np.flatnonzero(valid[1:] != valid[:-1]) + 1
    bounds = np.concatenate(([0], change, [n]))
    lengths = np.diff(bounds)
    first = bool(valid[0])
    if first == runs.state:
        lengths[0] += runs.run
        emitted = lengths[:-1]
    else:
        emitted = np.concatenate(([runs.run], lengths[:-1]))
    if emitted.size:
        _feed(runs.stream, *encode_runs(emitted))
    runs.run = int(lengths[-1])
    runs.state = bool(valid[-1])
    runs.count += n
    runs.present += present
    return present


class _Batches:
    """Feeds batches of flat columns into one Writer under one record super type."""

    def __init__(self, w: Writer, names: list[str], kinds: list[str]) -> None:
        self.w = w
        self.kinds = kinds
        rtype = RecordType(tuple(Field(n, PRIMITIVE_BY_NAME[k])
                                 for n, k in zip(names, kinds, strict=True)))
        self.builder = _RecordBuilder(w, rtype)
        w._super_ids[rtype] = 0
        w._super_types.append(rtype)
        w._builders.append(self.builder)

    def add(self, cols: list[_Col], n: int) -> None:
        if n == 0:
            return
        b = self.builder
        for (_name, runs, child), kind, col in zip(b.fields, self.kinds, cols, strict=True):
            valid = col.valid
            if kind == "null":
                valid = np.zeros(n, bool)
            present = _mark(runs, valid, n)
            if present:
                child.count += present
                _feed(child.stream, *_encode(kind, col))
        b.count += n
        _feed(self.w._super, np.ones(n, np.uint8), np.arange(1, n + 1, dtype=np.int64))
        self.w.rows += n
        if self.w._buffered > self.w.skew_thresh:
            self.w.flush()


# ---------------------------------------------------------------- Arrow ---

def _arrow_kind(pa_type: Any) -> str | None:
    from .arrow_input import super_type

    try:
        t = super_type(pa_type)
    except Exception:
        return None
    if isinstance(t, PrimitiveType) and t.name in SUPPORTED:
        return t.name
    return None


def _arrow_col(arr: Any, kind: str) -> _Col:
    import pyarrow as pa
    import pyarrow.compute as pc

    from .arrow_input import _to_ns

    if kind == "null":
        return _Col(None)
    arr = _to_ns(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    valid = None
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        arr = pc.drop_null(arr)
    if kind in _VARBIN:
        t = arr.type
        target = pa.large_string() if kind == "string" else pa.large_binary()
        if t != target:
            arr = arr.cast(target)
        _, offs, data = arr.buffers()
        offsets = np.frombuffer(offs, np.int64)[arr.offset: arr.offset + len(arr) + 1]
        if data is None:
            return _Col(valid, offsets=np.zeros(len(arr) + 1, np.int64),
                        data=np.zeros(0, np.uint8))
        return _Col(valid, offsets=offsets, data=np.frombuffer(data, np.uint8))
    if kind == "bool":
        return _Col(valid, values=np.asarray(arr.to_numpy(zero_copy_only=False), bool))
    values = arr.to_numpy(zero_copy_only=False)
    if kind in _FLOATS:
        values = np.asarray(values, dtype=f"<f{_FLOATS[kind]}")
    elif kind in _UINTS:
        values = np.asarray(values, dtype=np.uint64)
    else:
        values = np.asarray(values, dtype=np.int64)
    return _Col(valid, values=values)


def _arrow_batches(data: Any) -> tuple[Any, Iterator[Any]]:
    """(schema, record batches) of a Table, RecordBatch or RecordBatchReader."""
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches(max_chunksize=BATCH_ROWS))
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    return data.schema, iter(data)


def _is_arrow(data: Any) -> bool:
    mod = type(data).__module__
    if not mod.startswith("pyarrow"):
        return False
    import pyarrow as pa

    return isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader))


def write_arrow(out: BinaryIO, data: Any, **options: Any) -> int:
    """Write a flat Arrow Table / RecordBatch / RecordBatchReader; return the rows.

    Raises EncodeError for a schema with a type this path does not handle
    (check with :func:`fast_writer` first to fall back instead).
    """
    schema, batches = _arrow_batches(data)
    kinds = [_arrow_kind(f.type) for f in schema]
    if any(k is None for k in kinds):
        raise EncodeError("the vectorised writer takes flat tables of primitive columns")
    kinds_ = [k for k in kinds if k is not None]

    def encoded() -> Iterator[tuple[list[_Col], int]]:
        for batch in batches:
            for part in _split(batch):
                yield ([_arrow_col(c, k) for c, k in zip(part.columns, kinds_, strict=True)],
                       part.num_rows)

    return _run(out, [f.name for f in schema], kinds_, encoded(), **options)


def _split(batch: Any) -> Iterator[Any]:
    for start in range(0, batch.num_rows, BATCH_ROWS):
        yield batch.slice(start, BATCH_ROWS)


def _run(out: BinaryIO, names: list[str], kinds: list[str],
         batches: Iterable[tuple[list[_Col], int]], **options: Any) -> int:
    w = Writer(out, **options)
    feeder: _Batches | None = None
    for cols, n in batches:
        if n == 0:
            continue
        if feeder is None:  # zero rows write no super type, as the regular path does
            feeder = _Batches(w, names, kinds)
        feeder.add(cols, n)
    w.close()
    return w.rows


# ---------------------------------------------------------------- numpy ---

def _numpy_kind(a: np.ndarray) -> str | None:
    k = a.dtype.kind
    if k == "b":
        return "bool"
    if k == "i":
        return f"int{8 * a.dtype.itemsize}"
    if k == "u":
        return f"uint{8 * a.dtype.itemsize}"
    if k == "f" and a.dtype.itemsize in (2, 4, 8):
        return f"float{8 * a.dtype.itemsize}"
    if k == "M":
        return "time"
    if k == "m":
        return "duration"
    return None


def _numpy_col(a: np.ndarray, kind: str) -> _Col:
    valid = None
    if isinstance(a, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(a)
        data = np.ma.getdata(a)
        if mask.any():
            valid = ~mask
            data = data[valid]
        a = data
    if kind == "time":
        a = a.astype("datetime64[ns]").view(np.int64)
    elif kind == "duration":
        a = a.astype("timedelta64[ns]").view(np.int64)
    elif kind in _UINTS:
        a = a.astype(np.uint64)
    elif kind in _INTS:
        a = a.astype(np.int64)
    return _Col(valid, values=a)


def write_columns(out: BinaryIO, columns: Mapping[str, np.ndarray], **options: Any) -> int:
    """Write equal-length numpy arrays (masked arrays for nulls) as one record per row.

    dtypes: bool, (u)int8-64, float16/32/64, datetime64 (time), timedelta64
    (duration); strings go through Arrow.
    """
    names = list(columns)
    arrays = [columns[n] for n in names]
    kinds = []
    for n, a in zip(names, arrays, strict=True):
        k = _numpy_kind(np.asarray(a))
        if k is None or np.ndim(a) != 1:
            raise EncodeError(f"column {n!r}: numpy dtype {np.asarray(a).dtype} of shape "
                              f"{np.shape(a)} has no vectorised encoding")
        kinds.append(k)
    rows = {len(a) for a in arrays}
    if len(rows) > 1:
        raise EncodeError(f"columns have different lengths {sorted(rows)}")
    total = rows.pop() if rows else 0

    def batches() -> Iterator[tuple[list[_Col], int]]:
        for s in range(0, total, BATCH_ROWS):
            yield ([_numpy_col(a[s: s + BATCH_ROWS], k) for a, k in zip(arrays, kinds,
                                                                         strict=True)],
                   min(BATCH_ROWS, total - s))

    return _run(out, names, kinds, batches(), **options)


# ------------------------------------------------------------- routing ---

def fast_writer(data: Any) -> Callable[..., int] | None:
    """``fn(out, **options) -> rows`` when ``data`` can take the vectorised path, else None.

    Arrow input qualifies when every column is a primitive this module
    encodes (dictionary-encoded ones included); a mapping qualifies when every
    value is a 1-d numpy array of a supported dtype.
    """
    if _is_arrow(data):
        if all(_arrow_kind(f.type) is not None for f in data.schema):
            return lambda out, **options: write_arrow(out, data, **options)
        return None
    if isinstance(data, Mapping) and data and all(
            isinstance(a, np.ndarray) and a.ndim == 1 and _numpy_kind(a) is not None
            for a in data.values()) and all(isinstance(k, str) for k in data):
        return lambda out, **options: write_columns(out, data, **options)
    return None
