"""Version-1/2 BSUP values decoded by closures made once per type: SuperDB's metadata.

A file ``super`` v0.3.0 wrote keeps one metadata value per vector: thousands for a
file of hundreds of super types (7,585 for 200,000 log records of 191 types), each a
record of a handful of named kinds.  :func:`.bsup2.decode_value` dispatches on the type
of every value and sub-value, which made parsing them most of a read of such a file.
:func:`decoder` walks a type once and returns a function of a body: the dispatch is
done when the closure is made, the per-value work is the split and the conversions.

It answers exactly what ``decode_value(t, body, typed=True, dialect=dialect)`` answers
for every body it accepts; for anything else (a kind it leaves to the generic decoder,
an error of any sort) it calls that decoder, which gives the value or raises its own
error: so errors have one source and one message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...model.errors import CsupError
from ...model.types import (
    ArrayType,
    ErrorType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ...model.values import UnionValue
from ..bsup.tags import split_tagged
from ..bsup.valuecodec import decode_primitive
from .bsup2 import V2, Dialect, OptField, decode_type_value, decode_value

Decoder = Callable[[Any], Any]

_UINT_BYTES = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}
#: Decoders by (id of the type, dialect version); the type is kept so its id stays its own.
_MADE: dict[tuple[int, int], tuple[Type, Decoder]] = {}


class _Generic(Exception):
    """A body the closures leave to the generic decoder."""


def decoder(t: Type, dialect: Dialect = V2) -> Decoder:
    """``body -> value`` for values of ``t``: ``decode_value(t, body, typed=True,
    dialect=dialect)``, made once per type."""
    key = (id(t), dialect.version)
    got = _MADE.get(key)
    if got is not None and got[0] is t:
        return got[1]
    fast = _make(t, dialect, 0)

    def decode(body: Any) -> Any:
        if body is None:
            return None
        try:
            return fast(body)
        except (_Generic, CsupError, ValueError, IndexError, TypeError, UnicodeDecodeError):
            return decode_value(t, body, typed=True, dialect=dialect)

    if len(_MADE) >= 4096:
        _MADE.clear()
    _MADE[key] = (t, decode)
    return decode


def _generic(body: Any) -> Any:
    raise _Generic


def _make(t: Type, dialect: Dialect, depth: int) -> Decoder:
    """The unchecked closure for ``t`` (raises on anything unusual; the caller falls
    back to the generic decoder)."""
    if depth > 64:
        return _generic
    d = depth + 1
    if isinstance(t, PrimitiveType):
        name = t.name
        width = _UINT_BYTES.get(name)
        if width is not None:
            def uint(b: Any) -> int:
                if len(b) > width:
                    raise _Generic
                return int.from_bytes(b, "little")
            return uint
        if name == "string":
            return lambda b: bytes(b).decode("utf-8")
        if name == "bool":
            def boolean(b: Any) -> bool:
                if len(b) != 1 or b[0] > 1:
                    raise _Generic
                return bool(b[0])
            return boolean
        if name == "type":
            return lambda b: decode_type_value(b, dialect)
        return lambda b: decode_primitive(t, b)
    if isinstance(t, NamedType | ErrorType):
        return _make(t.inner, dialect, d)
    if isinstance(t, RecordType):
        return _record(t, dialect, d)
    if isinstance(t, ArrayType | SetType):
        elem = _nullable(_make(t.elem, dialect, d))
        return lambda b: [elem(p) for p in split_tagged(b)]
    if isinstance(t, UnionType):
        members = [(i, m, _nullable(_make(m, dialect, d))) for i, m in enumerate(t.types)]

        def union(b: Any) -> Any:
            parts = split_tagged(b)
            if len(parts) != 2 or parts[0] is None:
                raise _Generic
            idx = int.from_bytes(parts[0], "little")
            if idx >= len(members):
                raise _Generic
            i, m, dec = members[idx]
            return UnionValue(i, m, dec(parts[1]))
        return union
    return _generic  # maps, enums, fusion values: rare in metadata


def _nullable(dec: Decoder) -> Decoder:
    return lambda b: None if b is None else dec(b)


def _record(t: RecordType, dialect: Dialect, depth: int) -> Decoder:
    fields = [(f.name, isinstance(f, OptField), _nullable(_make(f.type, dialect, depth)))
              for f in t.fields]
    if not any(opt for _, opt, _ in fields):
        names = [n for n, _, _ in fields]
        decs = [dec for _, _, dec in fields]
        count = len(fields)

        def plain(b: Any) -> dict[str, Any]:
            parts = split_tagged(b)
            if len(parts) != count:
                raise _Generic
            return {n: dec(p) for n, dec, p in zip(names, decs, parts, strict=True)}
        return plain

    def optional(b: Any) -> dict[str, Any]:
        parts = split_tagged(b)
        if not parts:
            raise _Generic
        nones = bytes(parts[0] or b"")
        out: dict[str, Any] = {}
        k = 0
        i = 1
        for name, opt, dec in fields:
            if opt:
                absent = k >> 3 < len(nones) and nones[k >> 3] >> (k & 7) & 1
                k += 1
                if absent:
                    continue
            if i >= len(parts):
                raise _Generic
            out[name] = dec(parts[i])
            i += 1
        if i != len(parts):
            raise _Generic
        return out
    return optional
