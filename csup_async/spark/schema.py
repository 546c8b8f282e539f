"""Super types as Spark types, and the one rule that merges types across files.

Spark needs one schema up front while CSUP files are self-describing and may
disagree, so the driver folds every super type of every file into one
``StructType`` with :func:`merge_types`.  The same rule resolves a union
inside one file, so "two files disagree" and "one file holds a union" always
give the same column type.

The rule follows Spark's own JSON schema inference (users know it): null
yields to anything, integers widen, integers meet floats as double, records
merge field by field (union of fields, in order of first appearance), arrays
and maps merge elementwise, and anything else meets as a string holding the
value's JSON text.  Every column and field is nullable: a CSUP value may
always be null and a field missing in one file is null there.

Exactness over convenience where Spark has no exact type: ``uint64`` is
``DecimalType(20,0)`` (a user schema may ask for ``LongType``, checked for
overflow on read), 128/256-bit integers are strings of digits, ``duration`` is
a ``LongType`` of nanoseconds (``DayTimeIntervalType`` on request, floored to
microseconds), ``time`` is ``TimestampType`` floored to microseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from pyspark.sql import types as T

import planner as P

from ..format.meta import FileMeta
from ..model.errors import UnsupportedTypeError
from ..model.types import (
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

#: the column name of a top-level value that is not a record (SuperDB's ``this``)
WHOLE_VALUE = "this"

UINT64 = T.DecimalType(20, 0)

_PRIMITIVE: dict[str, T.DataType] = {
    "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(),
    "int64": T.LongType(), "uint8": T.ShortType(), "uint16": T.IntegerType(),
    "uint32": T.LongType(), "uint64": UINT64, "int128": T.StringType(),
    "uint128": T.StringType(), "int256": T.StringType(), "uint256": T.StringType(),
    "float16": T.FloatType(), "float32": T.FloatType(), "float64": T.DoubleType(),
    "bool": T.BooleanType(), "string": T.StringType(), "bytes": T.BinaryType(),
    "time": T.TimestampType(), "duration": T.LongType(), "ip": T.StringType(),
    "net": T.StringType(), "type": T.StringType(), "null": T.NullType(),
    "none": T.NullType(),  # v23: the elements of an empty array, an absent field's value
}

_INTEGRAL_RANK = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}


def bare(t: Type) -> Type:
    """The type a value is encoded with: named and error wrappers removed."""
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    return t


def spark_type(t: Type) -> T.DataType:
    """The Spark type of a super type (the module docstring has the choices)."""
    t = bare(t)
    if isinstance(t, PrimitiveType):
        st = _PRIMITIVE.get(t.name)
        if st is None:
            raise UnsupportedTypeError(f"no Spark type for {t.name} (the reader cannot decode "
                                       "it); leave the column out with a user schema")
        return st
    if isinstance(t, EnumType):
        return T.StringType()
    if isinstance(t, RecordType):
        return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in t.fields])
    if isinstance(t, (ArrayType, SetType)):
        return T.ArrayType(spark_type(t.elem), True)
    if isinstance(t, MapType):
        return T.MapType(spark_type(t.key), spark_type(t.value), True)
    if isinstance(t, UnionType):
        out: T.DataType = T.NullType()
        for m in t.types:
            out = merge_types(out, spark_type(m))
        return out
    raise UnsupportedTypeError(f"no Spark type for {t}")


def _numeric_rank(t: T.DataType) -> int | None:
    if t == UINT64:
        return 5
    return _INTEGRAL_RANK.get(type(t))


def merge_types(a: T.DataType, b: T.DataType) -> T.DataType:
    """The narrowest type holding values of both (the rule in the module docstring)."""
    if a == b:
        return a
    if isinstance(a, T.NullType):
        return b
    if isinstance(b, T.NullType):
        return a
    ra, rb = _numeric_rank(a), _numeric_rank(b)
    if ra is not None and rb is not None:
        return a if ra >= rb else b
    numeric = (T.FloatType, T.DoubleType)
    if (ra is not None or isinstance(a, numeric)) and (rb is not None or isinstance(b, numeric)):
        return T.DoubleType()
    if isinstance(a, T.StructType) and isinstance(b, T.StructType):
        fields = {f.name: f.dataType for f in a.fields}
        for f in b.fields:
            fields[f.name] = merge_types(fields[f.name], f.dataType) if f.name in fields \
                else f.dataType
        return T.StructType([T.StructField(n, t, True) for n, t in fields.items()])
    if isinstance(a, T.ArrayType) and isinstance(b, T.ArrayType):
        return T.ArrayType(merge_types(a.elementType, b.elementType), True)
    if isinstance(a, T.MapType) and isinstance(b, T.MapType):
        return T.MapType(merge_types(a.keyType, b.keyType),
                         merge_types(a.valueType, b.valueType), True)
    return T.StringType()


class Typed(Protocol):
    """A file's super types: its ``FileMeta``, or its v23 footer's (``listing.FileTypes``)."""

    @property
    def super_types(self) -> Sequence[Type]: ...


def infer_schema(metas: Iterable[FileMeta | Typed]) -> T.StructType:
    """One schema for files in order: record fields become columns, other values ``this``.

    Columns come in order of first appearance.  When some top-level value is
    not a record, a ``this`` column holds the whole value (merged over every
    super type, records included, so it usually becomes a JSON string).
    """
    fields: dict[str, T.DataType] = {}
    whole: T.DataType = T.NullType()
    has_other = False
    for meta in metas:
        for st in meta.super_types:
            u = bare(st)
            sp = spark_type(u)
            whole = merge_types(whole, sp)
            if isinstance(u, RecordType):
                assert isinstance(sp, T.StructType)
                for f in sp.fields:
                    fields[f.name] = merge_types(fields[f.name], f.dataType) \
                        if f.name in fields else f.dataType
            else:
                has_other = True
    out = [T.StructField(n, t, True) for n, t in fields.items()]
    if has_other and WHOLE_VALUE not in fields:
        out.append(T.StructField(WHOLE_VALUE, whole, True))
    return T.StructType(out)


def column_paths(schema: T.StructType, metas: Iterable[FileMeta]) -> dict[str, str]:
    """Each Spark column's CSUP path: its field name quoted, or ``""`` for ``this``.

    ``this`` names the whole value only when some file has a top-level value
    that is not a record and no record has a field called "this" (the field wins).
    """
    types = [bare(t) for m in metas for t in m.super_types]
    whole = any(not isinstance(t, RecordType) for t in types) and not any(
        isinstance(t, RecordType) and t.field(WHOLE_VALUE) is not None for t in types)
    return {f.name: ("" if whole and f.name == WHOLE_VALUE else P.format_path((f.name,)))
            for f in schema.fields}


_PARTITION_TYPES: dict[str, T.DataType] = {
    "int64": T.LongType(), "float64": T.DoubleType(), "string": T.StringType(),
    "null": T.StringType(),  # all null: Spark's own choice for such a partition column
}


def with_partitions(schema: T.StructType, columns: Iterable[tuple[str, str]]) -> T.StructType:
    """The schema with Hive-style partition columns (name, type name) last, as Spark's file
    sources put them; a file column of the same name yields to the partition column."""
    cols = list(columns)
    names = {n for n, _ in cols}
    fields = [f for f in schema.fields if f.name not in names]
    return T.StructType(fields + [T.StructField(n, _PARTITION_TYPES[t], True) for n, t in cols])
