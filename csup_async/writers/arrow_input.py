"""Arrow tables and Parquet files as writer input, with their exact types.

Each Arrow type maps to the super type that holds its values exactly; an
Arrow type with no exact super counterpart (decimals, 32-bit times of day,
...) is refused rather than approximated.  Timestamps of any unit become
``time`` (ns since the epoch, UTC), dates become ``time`` at midnight UTC.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..arrays import require
from ..model.errors import EncodeError, UnsupportedTypeError
from ..model.types import (
    NULL,
    PRIMITIVE_BY_NAME,
    ArrayType,
    Field,
    MapType,
    RecordType,
    Type,
)
from ..model.values import Value


def _pa() -> Any:
    return require("pyarrow", "Arrow/Parquet input needs pyarrow: pip install "
                   "'csup-async[arrow]'")


def super_type(pa_type: Any) -> Type:
    pa = _pa()
    t = pa.types
    if t.is_null(pa_type):
        return NULL
    if t.is_boolean(pa_type):
        return PRIMITIVE_BY_NAME["bool"]
    if t.is_integer(pa_type) or t.is_floating(pa_type):
        return PRIMITIVE_BY_NAME[str(pa_type).replace("halffloat", "float16")
                                 .replace("float", "float32").replace("double", "float64")
                                 .replace("float3216", "float16")]
    if t.is_string(pa_type) or t.is_large_string(pa_type) or t.is_string_view(pa_type):
        return PRIMITIVE_BY_NAME["string"]
    if (t.is_binary(pa_type) or t.is_large_binary(pa_type) or t.is_fixed_size_binary(pa_type)
            or t.is_binary_view(pa_type)):
        return PRIMITIVE_BY_NAME["bytes"]
    if t.is_timestamp(pa_type) or t.is_date(pa_type):
        return PRIMITIVE_BY_NAME["time"]
    if t.is_duration(pa_type):
        return PRIMITIVE_BY_NAME["duration"]
    if t.is_list(pa_type) or t.is_large_list(pa_type) or t.is_fixed_size_list(pa_type):
        return ArrayType(super_type(pa_type.value_type))
    if t.is_struct(pa_type):
        names = [pa_type.field(i).name for i in range(pa_type.num_fields)]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise EncodeError(f"Arrow struct {pa_type} has the field name {dup!r} twice")
        return RecordType(tuple(Field(pa_type.field(i).name, super_type(pa_type.field(i).type))
                                for i in range(pa_type.num_fields)))
    if t.is_map(pa_type):
        return MapType(super_type(pa_type.key_type), super_type(pa_type.item_type))
    if t.is_dictionary(pa_type):
        return super_type(pa_type.value_type)
    raise UnsupportedTypeError(f"Arrow type {pa_type} has no exact super type")


def _ns_type(pa_type: Any, final: bool) -> Any:
    """The Arrow type to cast to so times and durations come out as nanoseconds:
    timestamp/duration ``ns`` (the unit change, checked for overflow), or with
    ``final`` their int64 storage."""
    pa = _pa()
    t = pa.types
    if t.is_timestamp(pa_type) or t.is_date(pa_type):
        return pa.int64() if final else pa.timestamp("ns", getattr(pa_type, "tz", None))
    if t.is_duration(pa_type):
        return pa.int64() if final else pa.duration("ns")
    if t.is_list(pa_type) or t.is_large_list(pa_type) or t.is_fixed_size_list(pa_type):
        inner = pa.field(pa_type.value_field.name, _ns_type(pa_type.value_type, final))
        if t.is_fixed_size_list(pa_type):
            return pa.list_(inner, pa_type.list_size)
        return pa.large_list(inner) if t.is_large_list(pa_type) else pa.list_(inner)
    if t.is_struct(pa_type):
        return pa.struct([pa.field(f.name, _ns_type(f.type, final)) for f in pa_type])
    if t.is_map(pa_type):
        return pa.map_(_ns_type(pa_type.key_type, final), _ns_type(pa_type.item_type, final))
    if t.is_dictionary(pa_type):
        return _ns_type(pa_type.value_type, final)
    return pa_type


@contextlib.contextmanager
def arrow_error() -> Iterator[None]:
    """Arrow's refusals while converting input (a time beyond the ns range, invalid
    UTF-8) as EncodeError: the writer never finishes a file it cannot read back."""
    pa = _pa()
    try:
        yield
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError) as e:
        raise EncodeError(f"Arrow input: {e}") from None


def to_ns(arr: Any) -> Any:
    """Every time-like value as int64 nanoseconds (dates at midnight UTC), nested ones
    too; EncodeError when a value does not fit in int64 nanoseconds."""
    typ = arr.type
    if hasattr(arr, "dictionary_decode") and _pa().types.is_dictionary(typ):
        arr = arr.dictionary_decode()
        typ = arr.type
    with arrow_error():
        mid = _ns_type(typ, final=False)
        if mid != typ:
            arr = arr.cast(mid)
        final = _ns_type(typ, final=True)
        return arr if final == arr.type else arr.cast(final)


def arrow_values(data: Any) -> Iterator[Value]:
    """Rows of a Table, RecordBatch or RecordBatchReader as typed ``Value``s."""
    pa = _pa()
    if isinstance(data, pa.Table):
        batches = data.to_batches()
        schema = data.schema
    elif isinstance(data, pa.RecordBatch):
        batches, schema = [data], data.schema
    else:  # a RecordBatchReader or an iterable of batches
        schema = getattr(data, "schema", None)
        batches = data
    rtype = None
    for batch in batches:
        if rtype is None:
            schema = schema or batch.schema
            rtype = super_type(pa.struct(list(schema)))
            assert isinstance(rtype, RecordType)
        cols = [_column_values(c) for c in batch.columns]
        names = [f.name for f in rtype.fields]
        for row in zip(*cols, strict=True):
            yield Value(rtype, _fix_maps(dict(zip(names, row, strict=True))))


def _column_values(col: Any) -> list[Any]:
    """A column as Python values; EncodeError for what Arrow cannot convert (a string
    column holding invalid UTF-8)."""
    col = to_ns(col)
    with arrow_error():
        if _pa().types.is_string(col.type) or _pa().types.is_large_string(col.type):
            col.validate(full=True)
        try:
            return col.to_pylist()
        except UnicodeDecodeError as e:
            raise EncodeError(f"Arrow input: string column is not valid UTF-8: {e}") from None


def _fix_maps(v: Any) -> Any:
    return v  # Arrow maps come out as lists of (key, value) tuples, which the encoder takes


class ArrowValues:
    """Rows of an Arrow source as ``Value``s, keeping the source itself in ``.source``.

    Iterating gives the rows (what every consumer of values understands);
    ``csup_async.write`` looks at ``.source`` instead and, for a flat schema,
    encodes whole columns at once (:mod:`csup_async.writers.arrow_write`).
    """

    def __init__(self, source: Any) -> None:
        self.source = source

    def __iter__(self) -> Iterator[Value]:
        return arrow_values(self.source)


def parquet_values(path: str) -> ArrowValues:
    """A Parquet file's rows, streamed batch by batch (see :class:`ArrowValues`)."""
    _pa()
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    return ArrowValues(f.iter_batches())


# ------------------------------------------------------- plain Arrow types ---
# polars exports strings as string_view and lists of them as such; pyarrow makes
# list_view, run-end encoded and dictionary arrays: types many Arrow kernels
# (filter, take, the writer's own casts) have no implementation for.  The writer
# takes each as the plain type holding the same values (views as large strings,
# binaries and lists; run-end and dictionary arrays decoded), converted once, here.

def _needs_plain(t: Any) -> bool:
    pa = _pa()
    ty = pa.types
    if (ty.is_string_view(t) or ty.is_binary_view(t) or ty.is_run_end_encoded(t)
            or ty.is_list_view(t) or ty.is_large_list_view(t)):
        return True
    if ty.is_dictionary(t):  # the writer reads a dictionary of plain values as it is
        return _needs_plain(t.value_type)
    if ty.is_list(t) or ty.is_large_list(t) or ty.is_fixed_size_list(t):
        return _needs_plain(t.value_type)
    if ty.is_struct(t):
        return any(_needs_plain(f.type) for f in t)
    if ty.is_map(t):
        return _needs_plain(t.key_type) or _needs_plain(t.item_type)
    return False


def plain_array(arr: Any) -> Any:
    """``arr`` (an Array) with every view, run-end and dictionary type inside it replaced
    by the plain type holding the same values; ``arr`` itself when there is none."""
    pa = _pa()
    import pyarrow.compute as pc

    t = arr.type
    ty = pa.types
    if not _needs_plain(t):
        return arr
    with arrow_error():
        if ty.is_dictionary(t):  # its values made plain, then decoded (no take of views)
            return pa.DictionaryArray.from_arrays(
                arr.indices, plain_array(arr.dictionary)).dictionary_decode()
        if ty.is_run_end_encoded(t):
            return plain_array(pc.run_end_decode(arr))
        if ty.is_string_view(t):
            return arr.cast(pa.large_string())
        if ty.is_binary_view(t):
            return arr.cast(pa.large_binary())
        if (ty.is_list(t) or ty.is_large_list(t) or ty.is_fixed_size_list(t)
                or ty.is_list_view(t) or ty.is_large_list_view(t)):
            # the values each list shows, in order (a view's may overlap or be out of
            # order; flatten() gives them as the lists list them), then fresh offsets
            values = plain_array(arr.flatten())
            lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)

            offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
            mask = arr.is_null() if arr.null_count else None
            if ty.is_large_list(t) or ty.is_large_list_view(t):
                return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values,
                                                     mask=mask)
            return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32), pa.int32()),
                                            values, mask=mask)
        if ty.is_struct(t):
            children = [plain_array(c) for c in arr.flatten()]
            return pa.StructArray.from_arrays(
                children, fields=[pa.field(f.name, c.type, f.nullable)
                                  for f, c in zip(t, children, strict=True)],
                mask=arr.is_null() if arr.null_count else None)
        if ty.is_map(t):
            keys, items = plain_array(arr.keys), plain_array(arr.items)
            return pa.MapArray.from_arrays(arr.offsets, keys, items,
                                           mask=arr.is_null() if arr.null_count else None)
    return arr


def _plain_batch(batch: Any) -> Any:
    pa = _pa()
    cols = [plain_array(c) for c in batch.columns]
    schema = pa.schema([pa.field(f.name, c.type, f.nullable)
                        for f, c in zip(batch.schema, cols, strict=True)])
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def plain_arrow(data: Any) -> Any:
    """An Arrow Table, RecordBatch or RecordBatchReader with plain types only (see
    :func:`plain_array`): ``data`` itself when its schema has none to replace."""
    pa = _pa()
    schema = data.schema
    if not any(_needs_plain(f.type) for f in schema):
        return data
    if isinstance(data, pa.RecordBatch):
        return _plain_batch(data)
    if isinstance(data, pa.Table):
        batches = [_plain_batch(b) for b in data.to_batches()]
        if batches:
            return pa.Table.from_batches(batches)
        empty = _plain_batch(pa.RecordBatch.from_pylist([], schema=schema))
        return pa.Table.from_batches([], schema=empty.schema)
    if isinstance(data, pa.RecordBatchReader):
        first = next(iter(data), None)
        if first is None:
            empty = _plain_batch(pa.RecordBatch.from_pylist([], schema=schema))
            return pa.RecordBatchReader.from_batches(empty.schema, iter([]))
        head = _plain_batch(first)

        def rest() -> Iterator[Any]:
            yield head
            for b in data:
                yield _plain_batch(b)

        return pa.RecordBatchReader.from_batches(head.schema, rest())
    return data
