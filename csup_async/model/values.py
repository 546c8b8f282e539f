"""Typed Python values: what the writer accepts and ``read_values`` returns.

The plain Python mapping (``to_pylist``) loses type detail that the super data
model keeps: which member of a union a value is, that a value is named or an
error, that an int is an int8.  ``Value`` pairs a Python value with its exact
type; ``UnionValue`` pins a union member inside a value.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import EncodeError
from .types import (
    BOOL,
    BYTES,
    DURATION,
    FLOAT64,
    INT64,
    IP,
    NET,
    NULL,
    PRIMITIVE_BY_NAME,
    STRING,
    TIME,
    TYPE,
    UINT64,
    ArrayType,
    Field,
    MapType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)

__all__ = ["Value", "UnionValue", "infer_type", "unify"]


@dataclass(frozen=True, slots=True)
class UnionValue:
    """A union's value with the member it belongs to (``index`` into the union's types)."""

    index: int
    type: Type
    value: Any


@dataclass(frozen=True, slots=True)
class Value:
    """A value with its exact super type.

    The writer takes a ``Value`` wherever the inferred type would not be the
    one wanted (an int8, a map with string keys, a named type, an error, an
    enum, a union member); ``reader.read_values()`` returns them.
    """

    type: Type
    value: Any

    def to_python(self) -> Any:
        """The plain mapping of this value (unions resolved to their member value)."""
        return strip_unions(self.value)


def strip_unions(v: Any) -> Any:
    """Turn a typed-form value into the plain mapping (UnionValue → its value)."""
    if isinstance(v, UnionValue):
        return strip_unions(v.value)
    if isinstance(v, dict):
        d = {strip_unions(k): strip_unions(x) for k, x in v.items()}
        # keys equal once plain (a null member and a null union) stay as pairs
        return d if len(d) == len(v) else [(strip_unions(k), strip_unions(x))
                                           for k, x in v.items()]
    if isinstance(v, list):
        return [strip_unions(x) for x in v]
    if isinstance(v, tuple):
        return tuple(strip_unions(x) for x in v)
    return v


_NUMPY_TYPES: dict[type, PrimitiveType] = {
    np.int8: PRIMITIVE_BY_NAME["int8"], np.int16: PRIMITIVE_BY_NAME["int16"],
    np.int32: PRIMITIVE_BY_NAME["int32"], np.int64: INT64,
    np.uint8: PRIMITIVE_BY_NAME["uint8"], np.uint16: PRIMITIVE_BY_NAME["uint16"],
    np.uint32: PRIMITIVE_BY_NAME["uint32"], np.uint64: UINT64,
    np.float16: PRIMITIVE_BY_NAME["float16"], np.float32: PRIMITIVE_BY_NAME["float32"],
    np.float64: FLOAT64, np.bool_: BOOL,
}

_MAX_INFER_DEPTH = 200


def infer_type(v: Any, _depth: int = 0) -> Type:
    """The super type a plain Python value is written as (documented in docs/api.md).

    bool → bool, int → int64 (uint64 above int64's range), float → float64,
    str → string, bytes → bytes, None → null, datetime/np.datetime64 → time,
    timedelta/np.timedelta64 → duration, ipaddress addresses → ip, networks
    → net, dict with str keys → record, other dicts → map, list/tuple → array,
    set/frozenset → set, a Type → type, numpy scalars → their width, Value →
    its type.  Mixed element types become a union; None elements add nothing.
    """
    if _depth > _MAX_INFER_DEPTH:
        raise EncodeError("value nested deeper than 200 levels")
    if v is None:
        return NULL
    if isinstance(v, Value):
        return v.type
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        if -(1 << 63) <= v < (1 << 63):
            return INT64
        if 0 <= v < (1 << 64):
            return UINT64
        raise EncodeError(f"int {v} is outside int64/uint64; pass Value(int128 or int256, v)")
    if isinstance(v, float):
        return FLOAT64
    if isinstance(v, str):
        return STRING
    if isinstance(v, (bytes, bytearray, memoryview)):
        return BYTES
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return RecordType(tuple(Field(k, infer_type(x, _depth + 1)) for k, x in v.items()))
        if not v:
            return MapType(NULL, NULL)
        return MapType(
            unify([infer_type(k, _depth + 1) for k in v]),
            unify([infer_type(x, _depth + 1) for x in v.values()]),
        )
    if isinstance(v, (list, tuple)):
        return ArrayType(unify([infer_type(x, _depth + 1) for x in v]))
    if isinstance(v, (set, frozenset)):
        return SetType(unify([infer_type(x, _depth + 1) for x in v]))
    if isinstance(v, (_dt.datetime, np.datetime64)):
        return TIME
    if isinstance(v, (_dt.timedelta, np.timedelta64)):
        return DURATION
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return IP
    if isinstance(v, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return NET
    if isinstance(v, Type):
        return TYPE
    if isinstance(v, np.generic):
        t = _NUMPY_TYPES.get(type(v))
        if t is not None:
            return t
    if isinstance(v, UnionValue):
        raise EncodeError("a UnionValue needs its union type: wrap it in Value(union_type, ...)")
    raise EncodeError(f"cannot infer a super type for Python {type(v).__name__} value")


def unify(types: list[Type]) -> Type:
    """The element type of a container holding values of these types.

    Nulls add nothing (a null element is a null of the other type); one
    distinct type is itself; several become a union in first-seen order
    (nested unions are flattened so a value never needs two levels of tag).
    """
    seen: list[Type] = []
    for t in types:
        members = t.types if isinstance(t, UnionType) else (t,)
        for m in members:
            if m != NULL and m not in seen:
                seen.append(m)
    if not seen:
        return NULL
    if len(seen) == 1:
        return seen[0]
    return UnionType(tuple(seen))


_NS_PER_UNIT = {"W": 7 * 86_400 * 10**9, "D": 86_400 * 10**9, "h": 3_600 * 10**9,
                "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1, "generic": 1}
_NAT = np.iinfo(np.int64).min


def numpy_ns(a: np.ndarray, what: str = "value") -> np.ndarray:
    """datetime64/timedelta64 values of any unit as int64 nanoseconds (NaT stays int64's
    minimum, as it reads back); EncodeError for a value int64 nanoseconds cannot hold
    (before 1677 or after 2262 as a time, about 292 years as a duration), where
    numpy's own ``astype`` would wrap it silently."""
    a = np.asarray(a)
    unit = np.datetime_data(a.dtype)[0]
    if unit in ("Y", "M"):
        if a.dtype.kind == "m":
            raise EncodeError(f"{what}: a duration in {unit!r} units has no fixed length")
        a = a.astype("datetime64[D]")  # calendar units first, to days (exact)
        unit = "D"
    raw = a.view(np.int64)
    factor = _NS_PER_UNIT.get(unit)
    if factor is None:  # finer than ns: exact only when whole nanoseconds
        out = a.astype(a.dtype.str[:3] + "[ns]").view(np.int64)
        back = out.astype(a.dtype)
        if not np.array_equal(back.view(np.int64), raw):
            raise EncodeError(f"{what}: a {unit} value is not a whole number of nanoseconds")
        return out
    if factor == 1:
        return raw.astype(np.int64, copy=False)
    nat = raw == _NAT
    limit = np.iinfo(np.int64).max // factor
    ok = nat | ((raw <= limit) & (raw >= -limit))
    if not ok.all():
        bad = a.reshape(-1)[int(np.flatnonzero(~ok.reshape(-1))[0])]
        kind = "time" if a.dtype.kind == "M" else "duration"
        raise EncodeError(f"{what}: {bad} is outside the {kind} range (int64 nanoseconds"
                          f"{', years 1678-2261' if kind == 'time' else ''})")
    with np.errstate(over="ignore"):  # NaT's product wraps; np.where drops it
        return np.where(nat, _NAT, raw * np.int64(factor))


def is_nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


__all__ += ["strip_unions", "is_nan", "numpy_ns", "TYPE", "STRING", "IP", "NET"]
