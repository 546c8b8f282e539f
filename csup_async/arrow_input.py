"""Arrow tables and Parquet files as writer input, with their exact types.

Each Arrow type maps to the super type that holds its values exactly; an
Arrow type with no exact super counterpart (decimals, 32-bit times of day,
...) is refused rather than approximated.  Timestamps of any unit become
``time`` (ns since the epoch, UTC), dates become ``time`` at midnight UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import CsupError, UnsupportedTypeError
from .types import (
    NULL,
    PRIMITIVE_BY_NAME,
    ArrayType,
    Field,
    MapType,
    RecordType,
    Type,
)
from .values import Value


def _pa() -> Any:
    try:
        import pyarrow as pa
    except ImportError:
        raise CsupError("Arrow/Parquet input needs pyarrow: pip install 'csup-async[arrow]'"
                        ) from None
    return pa


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
        return RecordType(tuple(Field(pa_type.field(i).name, super_type(pa_type.field(i).type))
                                for i in range(pa_type.num_fields)))
    if t.is_map(pa_type):
        return MapType(super_type(pa_type.key_type), super_type(pa_type.item_type))
    if t.is_dictionary(pa_type):
        return super_type(pa_type.value_type)
    raise UnsupportedTypeError(f"Arrow type {pa_type} has no exact super type")


def _ns_type(pa_type: Any) -> Any:
    """The Arrow type to cast to so times and durations come out as int64 ns."""
    pa = _pa()
    t = pa.types
    if t.is_timestamp(pa_type) or t.is_date(pa_type) or t.is_duration(pa_type):
        return pa.int64()
    if t.is_list(pa_type) or t.is_large_list(pa_type) or t.is_fixed_size_list(pa_type):
        return pa.list_(_ns_type(pa_type.value_type))
    if t.is_struct(pa_type):
        return pa.struct([pa.field(f.name, _ns_type(f.type)) for f in pa_type])
    if t.is_map(pa_type):
        return pa.map_(_ns_type(pa_type.key_type), _ns_type(pa_type.item_type))
    if t.is_dictionary(pa_type):
        return _ns_type(pa_type.value_type)
    return pa_type


def _to_ns(arr: Any) -> Any:
    """Cast every time-like column to int64 nanoseconds (dates to midnight UTC)."""
    pa = _pa()
    t = pa.types
    typ = arr.type
    if t.is_date(typ):
        arr = arr.cast(pa.timestamp("ns"))
        typ = arr.type
    if t.is_timestamp(typ):
        return arr.cast(pa.timestamp("ns", tz=typ.tz)).cast(pa.int64())
    if t.is_duration(typ):
        return arr.cast(pa.duration("ns")).cast(pa.int64())
    if t.is_dictionary(typ):
        return _to_ns(arr.dictionary_decode() if hasattr(arr, "dictionary_decode")
                      else arr.cast(typ.value_type))
    target = _ns_type(typ)
    return arr if target == typ else arr.cast(target)


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
            rtype = RecordType(tuple(Field(f.name, super_type(f.type)) for f in schema))
        cols = [_to_ns(c).to_pylist() for c in batch.columns]
        names = [f.name for f in rtype.fields]
        for row in zip(*cols, strict=True):
            yield Value(rtype, _fix_maps(dict(zip(names, row, strict=True))))


def _fix_maps(v: Any) -> Any:
    return v  # Arrow maps come out as lists of (key, value) tuples, which the encoder takes


class ArrowValues:
    """Rows of an Arrow source as ``Value``s, keeping the source itself in ``.source``.

    Iterating gives the rows (what every consumer of values understands);
    ``csup_async.write`` looks at ``.source`` instead and, for a flat schema,
    encodes whole columns at once (:mod:`csup_async.arrow_write`).
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
