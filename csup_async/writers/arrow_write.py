"""Arrow tables and numpy columns shredded into batches, a whole column at a time.

Writing value by value costs microseconds per value (a million-row, 24-column
table took minutes).  Arrow already holds each column as buffers: validity
bitmaps, offsets, values.  This module turns them into :class:`Batch` nodes
with numpy (:mod:`csup_async.writers.tagenc`): ints sign and magnitude cut to their
byte length, floats a constant tag plus their bytes, strings a uvarint
``length + 1`` tag plus their bytes, structs as presence masks and their
fields, lists as lengths and their elements.  The writer core puts batches into
the same streams as the per-value path (:meth:`Writer.add_rows`), so the bytes
are the same.

Types with no columnar encoding here (maps: BSUP sorts their entries by key
bytes) make :func:`fast_writer` return None, and the caller goes value by
value (:func:`csup_async.writers.arrow_input.arrow_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO

import numpy as np

from ..model.errors import CsupError, EncodeError
from ..model.types import (
    NULL,
    PRIMITIVE_BY_NAME,
    ArrayType,
    Field,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
)
from ..model.values import numpy_ns
from .arrow_input import arrow_error, super_type, to_ns
from .batch import Arr, Batch, Node, Prim, Rec, Slot
from .tagenc import (
    Encoded,
    encode_constant,
    encode_fixed,
    encode_ints,
    encode_uints,
    encode_varbinary,
    with_nulls,
)
from .v23cols import open_writer

__all__ = ["fast_writer", "write_arrow", "write_columns", "BATCH_ROWS", "encode_primitives"]

#: Rows encoded at once: large enough that numpy's per-call cost vanishes, small
#: enough that a batch's arrays stay a few MiB.
BATCH_ROWS = 1 << 16

_INTS = {"int8", "int16", "int32", "int64", "time", "duration"}
_UINTS = {"uint8", "uint16", "uint32", "uint64"}
_FLOATS = {"float16": 2, "float32": 4, "float64": 8}
_VARBIN = {"string", "bytes"}
SUPPORTED = _INTS | _UINTS | set(_FLOATS) | _VARBIN | {"bool", "null"}


def encode_primitives(name: str, values: np.ndarray | None = None,
                      offsets: np.ndarray | None = None,
                      data: np.ndarray | None = None) -> Encoded:
    """Non-null values of primitive ``name`` tag-encoded: ``values`` (ints as int64 or
    uint64, floats in their width, bools) or, for strings/bytes, ``offsets`` + ``data``."""
    if name in _INTS:
        assert values is not None
        return encode_ints(values)
    if name in _UINTS:
        assert values is not None
        return encode_uints(values)
    if name in _FLOATS:
        assert values is not None
        return encode_fixed(np.asarray(values, dtype=f"<f{_FLOATS[name]}"), _FLOATS[name])
    if name == "bool":
        assert values is not None
        return encode_fixed(np.asarray(values, dtype=bool).astype(np.uint8), 1)
    assert offsets is not None and data is not None
    return encode_varbinary(offsets, data)


# ---------------------------------------------------------------- Arrow ---

def _columnar(t: Type) -> bool:
    """Whether values of ``t`` (from Arrow) have a columnar encoding here."""
    if isinstance(t, PrimitiveType):
        return t.name in SUPPORTED
    if isinstance(t, RecordType):
        return all(_columnar(f.type) for f in t.fields)
    if isinstance(t, (ArrayType, SetType)):
        return _columnar(t.elem)
    return False


def _arrow_type(pa_type: Any) -> Type | None:
    try:
        t = super_type(pa_type)
    except CsupError:
        return None
    return t if _columnar(t) else None


def _validity(arr: Any) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid())


def _prim_values(arr: Any, name: str) -> Encoded:
    """The non-null values of a primitive Arrow array (no nulls left in it)."""
    import pyarrow as pa

    if name in _VARBIN:
        if name == "string":
            try:
                arr.validate(full=True)  # invalid UTF-8 would make an unreadable file
            except pa.ArrowInvalid as e:
                raise EncodeError(f"a string column holds invalid UTF-8: {e}") from None
        target = pa.large_string() if name == "string" else pa.large_binary()
        if arr.type != target:
            arr = arr.cast(target)
        _, offs, data = arr.buffers()
        if data is None or len(arr) == 0:
            return encode_varbinary(np.zeros(len(arr) + 1, np.int64), np.zeros(0, np.uint8))
        offsets = np.frombuffer(offs, np.int64)[arr.offset: arr.offset + len(arr) + 1]
        return encode_varbinary(offsets, np.frombuffer(data, np.uint8))
    values = arr.to_numpy(zero_copy_only=False)
    if name in _UINTS:
        values = np.asarray(values, dtype=np.uint64)
    elif name in _INTS:
        values = np.asarray(values, dtype=np.int64)
    return encode_primitives(name, values)


def _drop_nulls(arr: Any, valid: np.ndarray | None) -> Any:
    if valid is None:
        return arr
    import pyarrow as pa

    return arr.filter(pa.array(valid))


def _slot(arr: Any, t: Type) -> Slot:
    """Values where no presence column covers nulls (rows, elements)."""
    n = len(arr)
    valid = _validity(arr)
    if isinstance(t, PrimitiveType):
        if t == NULL:
            return Slot(n, None, Prim(encode_constant(None, n)))
        dense = _prim_values(_drop_nulls(arr, valid), t.name)
        return Slot(n, valid, Prim(with_nulls(dense, valid)))
    present = n if valid is None else int(np.count_nonzero(valid))
    return Slot(n, valid, _node(_drop_nulls(arr, valid), t) if present else None)


def _node(arr: Any, t: Type) -> Node:
    """Non-null values of type ``t`` (arr holds no null at its own level)."""
    import pyarrow as pa

    if isinstance(t, PrimitiveType):
        return Prim(_prim_values(arr, t.name))
    if isinstance(t, RecordType):
        fields: list[tuple[Any, Node | None]] = []
        for i, f in enumerate(t.fields):
            if f.type == NULL:
                fields.append((False, None))
                continue
            child = arr.field(i)
            valid = _validity(child)
            present = len(child) if valid is None else int(np.count_nonzero(valid))
            node = _node(_drop_nulls(child, valid), f.type) if present else None
            fields.append((True if valid is None else valid, node))
        return Rec(tuple(fields))
    assert isinstance(t, (ArrayType, SetType))
    if pa.types.is_fixed_size_list(arr.type):
        lengths = np.full(len(arr), arr.type.list_size, np.int64)
    else:
        lengths = np.diff(np.asarray(arr.offsets, dtype=np.int64))
    return Arr(encode_ints(lengths), _slot(arr.flatten(), t.elem))


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


def _record_type(schema: Any) -> RecordType | None:
    import pyarrow as pa

    t = _arrow_type(pa.struct(list(schema)))
    return t if isinstance(t, RecordType) else None


def _batch_of(part: Any, rtype: RecordType) -> Batch:
    """One record batch as one super type's rows."""
    import pyarrow as pa

    with arrow_error():
        cols = [to_ns(c) for c in part.columns]
        struct = pa.StructArray.from_arrays(cols, fields=[
            pa.field(f.name, c.type) for f, c in zip(part.schema, cols, strict=True)])
    n = part.num_rows
    return Batch([rtype], np.zeros(n, np.int64), [Slot(n, None, _node(struct, rtype))])


def write_arrow(out: BinaryIO, data: Any, **options: Any) -> int:
    """Write an Arrow Table / RecordBatch / RecordBatchReader; return the rows.

    Raises EncodeError for a schema with a type this path does not handle
    (check with :func:`fast_writer` first to fall back instead).
    """
    schema, batches = _arrow_batches(data)
    rtype = _record_type(schema)
    if rtype is None:
        raise EncodeError("the vectorised writer takes tables of primitive, struct and "
                          "list columns")
    with open_writer(out, **options) as w:
        for batch in batches:
            for start in range(0, batch.num_rows, BATCH_ROWS):
                part = batch.slice(start, BATCH_ROWS)
                w.add_rows(part.num_rows,
                           lambda a, b, part=part: _batch_of(part.slice(a, b - a), rtype))
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


def _numpy_slot(a: np.ndarray, kind: str, name: str) -> tuple[np.ndarray | None, Encoded]:
    valid = None
    if isinstance(a, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(a)
        data = np.ma.getdata(a)
        if mask.any():
            valid = ~mask
            data = data[valid]
        a = data
    if kind in ("time", "duration"):
        v = numpy_ns(a, f"column {name!r}")
    elif kind in _UINTS:
        v = a.astype(np.uint64)
    elif kind in _INTS:
        v = a.astype(np.int64)
    else:
        v = a
    return valid, encode_primitives(kind, v)


def write_columns(out: BinaryIO, columns: Mapping[str, Any], **options: Any) -> int:
    """Write equal-length 1-d numpy arrays (masked arrays for nulls) as one record per row.

    dtypes: bool, (u)int8-64, float16/32/64, datetime64 (time), timedelta64
    (duration); anything else (complex, objects, strings) is an EncodeError
    naming the column: pass rows, or an Arrow table, for those.
    """
    names = list(columns)
    arrays = [columns[n] for n in names]
    kinds = []
    for n, a in zip(names, arrays, strict=True):
        if not isinstance(n, str):
            raise EncodeError(f"column name {n!r} is not a str")
        if not isinstance(a, np.ndarray):
            raise EncodeError(f"column {n!r}: a mapping is written as columns, each a 1-d "
                              f"numpy array, not {type(a).__name__} (pass a list of rows "
                              "for row values)")
        k = _numpy_kind(a)
        if k is None or a.ndim != 1:
            what = ("complex numbers have no super type" if a.dtype.kind == "c"
                    else "it has no columnar encoding")
            raise EncodeError(f"column {n!r}: numpy dtype {a.dtype} of shape {a.shape}: "
                              f"{what}")
        kinds.append(k)
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise EncodeError(f"columns have different lengths {sorted(lengths)}")
    total = lengths.pop() if lengths else 0
    rtype = RecordType(tuple(Field(n, PRIMITIVE_BY_NAME[k])
                             for n, k in zip(names, kinds, strict=True)))

    def encode(a: int, b: int) -> Batch:
        fields: list[tuple[Any, Node | None]] = []
        for arr, k, name in zip(arrays, kinds, names, strict=True):
            valid, enc = _numpy_slot(arr[a:b], k, name)
            fields.append((True if valid is None else valid, Prim(enc)))
        return Batch([rtype], np.zeros(b - a, np.int64), [Slot(b - a, None, Rec(tuple(fields)))])

    with open_writer(out, **options) as w:
        for s in range(0, total, BATCH_ROWS):
            e = min(total, s + BATCH_ROWS)
            w.add_rows(e - s, lambda a, b, s=s: encode(s + a, s + b))
    return w.rows


# ------------------------------------------------------------- routing ---

def fast_writer(data: Any) -> Callable[..., int] | None:
    """``fn(out, **options) -> rows`` when ``data`` is Arrow input with a columnar
    encoding here (primitive, struct and list columns, dictionary-encoded ones
    included) or a mapping of columns, else None."""
    if _is_arrow(data):
        if _record_type(data.schema) is not None:
            return lambda out, **options: write_arrow(out, data, **options)
        return None
    if isinstance(data, Mapping):
        return lambda out, **options: write_columns(out, data, **options)
    return None
