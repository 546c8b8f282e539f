"""Which numpy form each super type takes in an array: dtypes, the kinds numpy has
no dtype for (held as Python objects), and the types that add no data of their own."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

from .errors import UnsupportedTypeError
from .types import (
    ArrayType,
    ErrorType,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)

INT_DTYPES: dict[str, type[np.integer]] = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
}
FLOAT_DTYPES: dict[str, type[np.floating]] = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
}
INT_RANGES: dict[str, tuple[int, int]] = {}
for _bits in (8, 16, 32, 64, 128, 256):
    INT_RANGES[f"int{_bits}"] = (-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1)
    INT_RANGES[f"uint{_bits}"] = (0, (1 << _bits) - 1)
BIG_INTS = frozenset({"int128", "int256", "uint128", "uint256"})
OBJECT_KINDS = BIG_INTS | {"ip", "net", "type"}
BINARY_KINDS = frozenset({"string", "bytes"})
_UNSUPPORTED = frozenset({"float128", "float256", "decimal32", "decimal64", "decimal128",
                          "decimal256"})
NS_TIME = np.dtype("datetime64[ns]")
NS_DURATION = np.dtype("timedelta64[ns]")
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
INT64_MIN, INT64_MAX = INT_RANGES["int64"]


def phys(t: Type) -> Type:
    """The type whose shape the data has: named and error types add no data."""
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    return t


def refuse_unsupported(p: PrimitiveType) -> None:
    if p.name in _UNSUPPORTED:
        raise UnsupportedTypeError(
            f"type {p.name} has no faithful Python form and is not supported")


def key_hashable(t: Type) -> bool:
    """Whether every value of ``t`` maps to a hashable Python value (decides map → dict)."""
    p = phys(t)
    if isinstance(p, (RecordType, ArrayType, SetType, MapType)):
        return False
    if isinstance(p, UnionType):
        return all(key_hashable(m) for m in p.types)
    return True


def map_value(key_type: Type, items: list[tuple[Any, Any]]) -> dict[Any, Any] | list[Any]:
    """A map's entries as the Python mapping has them: a ``dict``, or the list of pairs
    when its keys are unhashable or equal in Python though distinct in the file (``0.0``
    and ``-0.0``), so that no entry is lost to Python's equality."""
    if key_hashable(key_type):
        as_dict = dict(items)
        if len(as_dict) == len(items):
            return as_dict
    return items
