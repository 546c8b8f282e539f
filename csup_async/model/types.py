"""The super data model's types as immutable, hashable Python objects.

Types are compared structurally (two equal record types are the same type),
which is what lets the writer group rows into super types and the reader
match columns across files.  ``str(t)`` prints the Super (SUP/ZSON) syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Type", "PrimitiveType", "Field", "RecordType", "ArrayType", "SetType", "MapType",
    "UnionType", "EnumType", "ErrorType", "NamedType", "PRIMITIVES", "PRIMITIVE_BY_NAME",
    "underlying", "UINT8", "UINT16", "UINT32", "UINT64", "UINT128", "UINT256", "INT8",
    "INT16", "INT32", "INT64", "INT128", "INT256", "DURATION", "TIME", "FLOAT16",
    "FLOAT32", "FLOAT64", "FLOAT128", "FLOAT256", "DECIMAL32", "DECIMAL64", "DECIMAL128",
    "DECIMAL256", "BOOL", "BYTES", "STRING", "IP", "NET", "TYPE", "NULL",
]


class Type:
    """Base of all types; concrete kinds are frozen dataclasses below."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PrimitiveType(Type):
    name: str
    id: int

    @property
    def kind(self) -> str:
        return "primitive"

    def __str__(self) -> str:
        return self.name


_PRIMITIVE_NAMES = (
    "uint8 uint16 uint32 uint64 uint128 uint256 int8 int16 int32 int64 int128 int256 "
    "duration time float16 float32 float64 float128 float256 decimal32 decimal64 "
    "decimal128 decimal256 bool bytes string ip net type null"
).split()

PRIMITIVES: tuple[PrimitiveType, ...] = tuple(
    PrimitiveType(n, i) for i, n in enumerate(_PRIMITIVE_NAMES)
)
PRIMITIVE_BY_NAME: dict[str, PrimitiveType] = {p.name: p for p in PRIMITIVES}

(UINT8, UINT16, UINT32, UINT64, UINT128, UINT256, INT8, INT16, INT32, INT64, INT128,
 INT256, DURATION, TIME, FLOAT16, FLOAT32, FLOAT64, FLOAT128, FLOAT256, DECIMAL32,
 DECIMAL64, DECIMAL128, DECIMAL256, BOOL, BYTES, STRING, IP, NET, TYPE, NULL) = PRIMITIVES

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _quote(name: str) -> str:
    if _IDENT.match(name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Type

    def __str__(self) -> str:
        return f"{_quote(self.name)}:{self.type}"


@dataclass(frozen=True, slots=True)
class RecordType(Type):
    fields: tuple[Field, ...]

    @property
    def kind(self) -> str:
        return "record"

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        return "{" + ",".join(str(f) for f in self.fields) + "}"


@dataclass(frozen=True, slots=True)
class ArrayType(Type):
    elem: Type

    @property
    def kind(self) -> str:
        return "array"

    def __str__(self) -> str:
        return f"[{self.elem}]"


@dataclass(frozen=True, slots=True)
class SetType(Type):
    elem: Type

    @property
    def kind(self) -> str:
        return "set"

    def __str__(self) -> str:
        return f"|[{self.elem}]|"


@dataclass(frozen=True, slots=True)
class MapType(Type):
    key: Type
    value: Type

    @property
    def kind(self) -> str:
        return "map"

    def __str__(self) -> str:
        return f"|{{{self.key}:{self.value}}}|"


@dataclass(frozen=True, slots=True)
class UnionType(Type):
    types: tuple[Type, ...]

    @property
    def kind(self) -> str:
        return "union"

    def __str__(self) -> str:
        return "(" + ",".join(str(t) for t in self.types) + ")"


@dataclass(frozen=True, slots=True)
class EnumType(Type):
    symbols: tuple[str, ...]

    @property
    def kind(self) -> str:
        return "enum"

    def __str__(self) -> str:
        return "enum(" + ",".join(_quote(s) for s in self.symbols) + ")"


@dataclass(frozen=True, slots=True)
class ErrorType(Type):
    inner: Type

    @property
    def kind(self) -> str:
        return "error"

    def __str__(self) -> str:
        return f"error({self.inner})"


@dataclass(frozen=True, slots=True)
class NamedType(Type):
    name: str
    inner: Type

    @property
    def kind(self) -> str:
        return "named"

    def __str__(self) -> str:
        return f"{_quote(self.name)}=({self.inner})"


def underlying(t: Type) -> Type:
    """Strip named types: the shape a value of ``t`` is encoded with."""
    while isinstance(t, NamedType):
        t = t.inner
    return t
