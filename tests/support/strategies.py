"""Hypothesis strategies: random super types and typed values of them."""

from __future__ import annotations

import ipaddress
import struct

import numpy as np
from hypothesis import strategies as st

from csup_async.model.types import (
    PRIMITIVE_BY_NAME,
    ArrayType,
    EnumType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from csup_async.model.values import UnionValue

SUPPORTED_PRIMITIVES = [
    "uint8", "uint16", "uint32", "uint64", "uint128", "uint256", "int8", "int16", "int32",
    "int64", "int128", "int256", "duration", "time", "float16", "float32", "float64", "bool",
    "bytes", "string", "ip", "net", "type", "null",
]

primitive_types = st.sampled_from([PRIMITIVE_BY_NAME[n] for n in SUPPORTED_PRIMITIVES])
names = st.text(alphabet="abcxyz_", min_size=1, max_size=4)


def _complex(children: st.SearchStrategy[Type]) -> st.SearchStrategy[Type]:
    def record(fields: list[tuple[str, Type]]) -> RecordType:
        return RecordType(tuple(Field(n, t) for n, t in fields))

    def union(members: list[Type]) -> UnionType:
        return UnionType(tuple(members))

    return st.one_of(
        st.lists(st.tuples(names, children), max_size=4,
                 unique_by=lambda f: f[0]).map(record),
        children.map(ArrayType),
        children.map(SetType),
        st.tuples(children, children).map(lambda kv: MapType(*kv)),
        st.lists(children.filter(lambda t: not isinstance(t, UnionType)), min_size=2,
                 max_size=3, unique=True).map(union),
        st.lists(names, min_size=1, max_size=4, unique=True).map(
            lambda s: EnumType(tuple(s))),
        children.map(ErrorType),
        st.tuples(st.sampled_from(["n1", "n2", "port"]), children).map(
            lambda p: NamedType(p[0], p[1])),
    )


types = st.recursive(primitive_types, _complex, max_leaves=8)


def _int(bits: int, signed: bool) -> st.SearchStrategy[int]:
    if signed:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        lo, hi = 0, (1 << bits) - 1
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, min(1, hi), lo + 1]))


def _float(fmt: str) -> st.SearchStrategy[float]:
    def exact(x: float) -> float:
        try:
            return struct.unpack(fmt, struct.pack(fmt, x))[0]
        except OverflowError:
            return 0.0
    return st.floats(allow_nan=True, allow_infinity=True).map(exact)


def primitive_values(name: str) -> st.SearchStrategy[object]:
    if name in ("uint8", "uint16", "uint32", "uint64", "uint128", "uint256"):
        return _int(int(name[4:]), False)
    if name in ("int8", "int16", "int32", "int64", "int128", "int256"):
        return _int(int(name[3:]), True)
    if name == "time":
        return _int(64, True).map(lambda v: np.datetime64(v, "ns"))
    if name == "duration":
        return _int(64, True).map(lambda v: np.timedelta64(v, "ns"))
    if name in ("float16", "float32", "float64"):
        return _float({"float16": "<e", "float32": "<f", "float64": "<d"}[name])
    if name == "bool":
        return st.booleans()
    if name == "bytes":
        return st.binary(max_size=300)
    if name == "string":
        return st.text(max_size=40) | st.text(min_size=120, max_size=300)
    if name == "ip":
        return st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6))
    if name == "net":
        return st.one_of(
            st.tuples(st.ip_addresses(v=4), st.integers(0, 32)).map(
                lambda p: ipaddress.ip_network((p[0], p[1]), strict=False)),
            st.tuples(st.ip_addresses(v=6), st.integers(0, 128)).map(
                lambda p: ipaddress.ip_network((p[0], p[1]), strict=False)))
    if name == "type":
        return types
    if name == "null":
        return st.none()
    raise ValueError(name)


def values_of(t: Type, nullable: bool = True) -> st.SearchStrategy[object]:
    """Typed-form values of ``t`` (unions as UnionValue), None mixed in when nullable."""
    inner = _values_of(t)
    return st.one_of(st.none(), inner) if nullable else inner


def _values_of(t: Type) -> st.SearchStrategy[object]:
    if isinstance(t, NamedType):
        return _values_of(t.inner)
    if isinstance(t, ErrorType):
        return values_of(t.inner)
    if isinstance(t, RecordType):
        return st.fixed_dictionaries({f.name: values_of(f.type) for f in t.fields})
    if isinstance(t, (ArrayType, SetType)):
        return st.lists(values_of(t.elem), max_size=4)
    if isinstance(t, MapType):
        from csup_async.format.bsup import encode_value

        return st.lists(st.tuples(values_of(t.key), values_of(t.value)), max_size=3,
                        unique_by=lambda kv: repr(encode_value(t.key, kv[0])))
    if isinstance(t, UnionType):
        return st.integers(0, len(t.types) - 1).flatmap(
            lambda i: values_of(t.types[i]).map(lambda v: UnionValue(i, t.types[i], v)))
    if isinstance(t, EnumType):
        return st.sampled_from(t.symbols)
    return primitive_values(t.name)


typed_values = types.flatmap(lambda t: st.tuples(st.just(t), values_of(t)))
