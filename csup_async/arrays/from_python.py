"""Arrays built from Python values in the documented mapping (:func:`from_pylist`):
the inverse of ``to_pylist``, with union members chosen by the values' kinds."""

from __future__ import annotations

import datetime as _dt
import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..model.errors import EncodeError, UnsupportedTypeError
from ..model.kinds import (
    BIG_INTS,
    BINARY_KINDS,
    EPOCH,
    FLOAT_DTYPES,
    INT64_MAX,
    INT64_MIN,
    INT_DTYPES,
    INT_RANGES,
    NS_DURATION,
    NS_TIME,
    OBJECT_KINDS,
    key_hashable,
    phys,
    refuse_unsupported,
)
from ..model.types import (
    NULL,
    ArrayType,
    EnumType,
    MapType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ..model.values import UnionValue
from .buffers import offsets_from_lengths
from .model import Array, BinaryArray, PrimitiveArray
from .nested import ListArray, MapArray, NullArray, StructArray, UnionArray


def _is_int(v: Any) -> bool:
    # np.timedelta64 subclasses np.signedinteger; bool subclasses int
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.timedelta64)))


def _scalar_ok(p: PrimitiveType | EnumType, v: Any, exact: bool) -> bool:
    """Whether ``v`` is a (non-null) value of primitive/enum type ``p``.

    ``exact`` means "in the form ``to_pylist`` gives for ``p``": it refuses the
    int-for-a-float widening, so union member choice prefers the member of the
    value's own kind and plain values read back pick the member they came from.
    """
    if isinstance(p, EnumType):
        return isinstance(v, str) and v in p.symbols
    name = p.name
    rng = INT_RANGES.get(name)
    if rng is not None:
        return _is_int(v) and rng[0] <= int(v) <= rng[1]
    if name in FLOAT_DTYPES:
        return isinstance(v, (float, np.floating)) or (not exact and _is_int(v))
    if name == "bool":
        return isinstance(v, (bool, np.bool_))
    if name == "string":
        return isinstance(v, str)
    if name == "bytes":
        return isinstance(v, (bytes, bytearray, memoryview))
    if name == "time":
        return isinstance(v, (np.datetime64, _dt.datetime))
    if name == "duration":
        return isinstance(v, (np.timedelta64, _dt.timedelta))
    if name == "ip":
        return isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address))
    if name == "net":
        return isinstance(v, (ipaddress.IPv4Network, ipaddress.IPv6Network))
    if name == "type":
        return isinstance(v, Type)
    return False  # null and the unsupported kinds hold no non-null value


def _map_items(v: Any, key: Type, exact: bool) -> list[tuple[Any, Any]] | None:
    """A map value's entries: a dict, or a list of pairs (the form for unhashable keys)."""
    if isinstance(v, Mapping):
        if exact and not key_hashable(key):
            return None
        return list(v.items())
    if isinstance(v, (list, tuple)):
        if exact and key_hashable(key):
            return None
        if all(isinstance(e, (list, tuple)) and len(e) == 2 for e in v):
            return [(e[0], e[1]) for e in v]
    return None


def _accepts(t: Type, v: Any, exact: bool) -> bool:
    """Whether ``from_pylist(t, [v])`` takes ``v`` (deep), for choosing a union member."""
    if v is None:
        return True
    p = phys(t)
    if isinstance(v, UnionValue):
        return isinstance(p, UnionType) and _union_value_ok(p, v) and _accepts(
            v.type, v.value, exact)
    if isinstance(p, (PrimitiveType, EnumType)):
        return _scalar_ok(p, v, exact)
    if isinstance(p, RecordType):
        if not isinstance(v, Mapping):
            return False
        names = {f.name for f in p.fields}
        keys = set(v.keys())
        if not (keys == names if exact else keys <= names):
            return False
        return all(_accepts(f.type, v.get(f.name), exact) for f in p.fields)
    if isinstance(p, (ArrayType, SetType)):
        kinds = (list, tuple) if isinstance(p, ArrayType) else (list, tuple, set, frozenset)
        return isinstance(v, kinds) and all(_accepts(p.elem, x, exact) for x in v)
    if isinstance(p, MapType):
        items = _map_items(v, p.key, exact)
        return items is not None and all(
            _accepts(p.key, a, exact) and _accepts(p.value, b, exact) for a, b in items)
    if isinstance(p, UnionType):
        return _pick(p, v) is not None
    return False


def _union_value_ok(u: UnionType, v: UnionValue) -> bool:
    return 0 <= v.index < len(u.types) and u.types[v.index] == v.type


def _pick(u: UnionType, v: Any) -> int | None:
    """The first member whose kind takes ``v`` exactly, else the first that takes it at all."""
    for exact in (True, False):
        for i, m in enumerate(u.types):
            if _accepts(m, v, exact):
                return i
    return None


def _bad(t: Type, v: Any) -> EncodeError:
    return EncodeError(f"{type(v).__name__} value {v!r:.80} is not a {t}")


def _time_ns(v: Any) -> int:
    if isinstance(v, np.datetime64):
        return int(v.astype(NS_TIME).astype(np.int64))
    if v.tzinfo is None:  # naive datetimes are taken as UTC
        v = v.replace(tzinfo=_dt.UTC)
    d = v - EPOCH
    return (d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000


def _duration_ns(v: Any) -> int:
    if isinstance(v, np.timedelta64):
        return int(v.astype(NS_DURATION).astype(np.int64))
    return (v.days * 86400 + v.seconds) * 10**9 + v.microseconds * 1000


def from_pylist(type: Type, values: Iterable[Any]) -> Array:
    """An array of ``type`` from Python values in the documented mapping.

    Unions take ``UnionValue`` (the member is as given) or plain values: the
    first member (in the union's order) that takes the value in the form
    ``to_pylist`` gives for it — an int for an int type in range, a float for
    a float type, a list for an array or set, a dict with exactly the record's
    fields, a dict (hashable key types) or list of pairs (others) for a map —
    and failing that the first that takes it at all (an int for a float, a
    dict with some of the fields, either map form).  Also accepted anywhere:
    Python sets for set types, ``datetime``/``timedelta`` for time/duration
    (naive datetimes as UTC), missing record keys as nulls.  Anything else is
    an ``EncodeError``.
    """
    return _build(type, list(values))


def _holds_any(p: Type) -> bool:
    """SuperDB's ``any`` (``all``), bare or as a fusion's supertype: each value has its
    own type, so no one array type holds the column."""
    while p.kind == "fusion":
        p = phys(p.inner)  # type: ignore[attr-defined]
    return isinstance(p, PrimitiveType) and p.name == "all"


def _build(t: Type, vals: list[Any]) -> Array:
    p = phys(t)
    if _holds_any(p):
        raise UnsupportedTypeError(
            "a column of `any` values (each value of its own type) has no one array "
            "type; read_values() reads each value with its own type")
    n = len(vals)
    for v in vals:
        if isinstance(v, UnionValue) and not isinstance(p, UnionType):
            raise EncodeError(f"a UnionValue given for non-union type {t}")
    validity = np.fromiter((v is not None for v in vals), dtype=bool, count=n)
    if isinstance(p, (PrimitiveType, EnumType)):
        return _build_primitive(t, p, vals, validity)
    if isinstance(p, RecordType):
        names = {f.name for f in p.fields}
        for v in vals:
            if v is not None and not (isinstance(v, Mapping) and set(v.keys()) <= names):
                raise _bad(t, v)
        fields = tuple(_build(f.type, [None if v is None else v.get(f.name) for v in vals])
                       for f in p.fields)
        return StructArray(t, n, fields, validity)
    if isinstance(p, (ArrayType, SetType)):
        kinds = (list, tuple, set, frozenset) if isinstance(p, SetType) else (list, tuple)
        for v in vals:
            if v is not None and not isinstance(v, kinds):
                raise _bad(t, v)
        lengths = np.fromiter((0 if v is None else len(v) for v in vals), np.int64, count=n)
        flat = [x for v in vals if v is not None for x in v]
        return ListArray(t, offsets_from_lengths(lengths), _build(p.elem, flat), validity)
    if isinstance(p, MapType):
        entries: list[list[tuple[Any, Any]]] = []
        for v in vals:
            items = [] if v is None else _map_items(v, p.key, exact=False)
            if items is None:
                raise _bad(t, v)
            entries.append(items)
        lengths = np.fromiter((len(e) for e in entries), np.int64, count=n)
        return MapArray(t, offsets_from_lengths(lengths),
                        _build(p.key, [a for e in entries for a, _ in e]),
                        _build(p.value, [b for e in entries for _, b in e]), validity)
    if isinstance(p, UnionType):
        tags = np.full(n, -1, np.int32)
        members: list[list[Any]] = [[] for _ in p.types]
        for r, v in enumerate(vals):
            if v is None:
                continue
            if isinstance(v, UnionValue):
                if not _union_value_ok(p, v):
                    raise EncodeError(f"UnionValue({v.index}, {v.type}) is not a member of {t}")
                i, x = v.index, v.value
            else:
                picked = _pick(p, v)
                if picked is None:
                    raise _bad(t, v)
                i, x = picked, v
            tags[r] = i
            members[i].append(x)
        return UnionArray(t, tags, tuple(_build(m, xs) for m, xs in zip(p.types, members,
                                                                          strict=True)))
    raise UnsupportedTypeError(f"no array form for type {t}")


def _build_primitive(t: Type, p: PrimitiveType | EnumType, vals: list[Any],
                     validity: np.ndarray) -> Array:
    if isinstance(p, PrimitiveType):
        refuse_unsupported(p)
        if p == NULL:
            if validity.any():
                raise _bad(t, next(v for v in vals if v is not None))
            return NullArray(len(vals), t)
    for v in vals:
        if v is not None and not _scalar_ok(p, v, exact=False):
            raise _bad(t, v)
    if isinstance(p, EnumType):
        pos = {s: i for i, s in enumerate(p.symbols)}
        return PrimitiveArray(t, np.array([0 if v is None else pos[v] for v in vals], np.uint64),
                              validity)
    name = p.name
    if name in BINARY_KINDS:
        try:
            enc = [b"" if v is None else v.encode() if name == "string" else bytes(v)
                   for v in vals]
        except UnicodeEncodeError as e:
            raise EncodeError(f"string is not encodable as UTF-8: {e.reason}") from e
        lengths = np.fromiter((len(b) for b in enc), np.int64, count=len(enc))
        return BinaryArray(t, offsets_from_lengths(lengths),
                           np.frombuffer(b"".join(enc), np.uint8), validity)
    if name in OBJECT_KINDS:
        objs = np.full(len(vals), None, dtype=object)
        for i, v in enumerate(vals):
            objs[i] = int(v) if (v is not None and name in BIG_INTS) else v
        return PrimitiveArray(t, objs, validity)
    if name in ("time", "duration"):
        conv = _time_ns if name == "time" else _duration_ns
        ns = [0 if v is None else conv(v) for v in vals]
        if any(not INT64_MIN <= x <= INT64_MAX for x in ns):
            raise EncodeError(f"a {name} value is outside int64 nanoseconds")
        return PrimitiveArray(t, np.array(ns, np.int64), validity)
    if name == "bool":
        return PrimitiveArray(t, np.array([bool(v) for v in vals], bool), validity)
    if name in FLOAT_DTYPES:
        return PrimitiveArray(t, np.array([0.0 if v is None else float(v) for v in vals],
                                          FLOAT_DTYPES[name]), validity)
    return PrimitiveArray(t, np.array([0 if v is None else int(v) for v in vals],
                                      INT_DTYPES[name]), validity)
