"""Version-5 BSUP values decoded by closures made once per type: CSUP v23's metadata.

Every v23 object's metadata is a BSUP version-5 stream of one value per vector (67 for
an object of super main's log-shaped rows), each a record of a handful of named kinds
(``Bytes``, ``Dict``, ``Union``, ``Fusion``...) of primitives, ``Segment`` records and
arrays of IDs.  :func:`.bsup5.decode_value` dispatches on the type of every value and
sub-value, which made it most of a first open.  :func:`decoder` walks a type once and
returns a function of a body: the dispatch is done when the closure is made.

It answers exactly what ``bsup5.decode_value(t, body)`` answers for every body it
accepts (the closures call the same primitive and type-value decoders); for a kind it
leaves to the generic decoder (unions, maps, enums, fusion values: none in super's
metadata), or on any error, it calls that decoder, which gives the value or raises its
own error: errors have one source and one message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...model.errors import CsupError
from ...model.types import ArrayType, ErrorType, NamedType, PrimitiveType, RecordType, SetType, Type
from ..bsup.tags import split_tagged
from ..bsup.valuecodec import decode_primitive
from .bsup2 import OptField
from .bsup5 import ALL_T, NONE_T, decode_type_value, decode_value

Decoder = Callable[[Any], Any]

#: Decoders by type (types are values: the same metadata types in every object and file).
_MADE: dict[Type, Decoder] = {}
#: The same by the identity of the type object (a parse's values share their types'
#: objects; hashing a type walks all of it).
_BY_ID: dict[int, tuple[Type, Decoder]] = {}
_LOCK = threading.Lock()
_MAX = 4096


class _Generic(Exception):
    """A body the closures leave to the generic decoder."""


def decoder(t: Type) -> Decoder:
    """``body -> value`` for values of ``t``: ``bsup5.decode_value(t, body)``, made once
    per type."""
    known = _BY_ID.get(id(t))
    if known is not None and known[0] is t:  # the same type object: no hash of it
        return known[1]
    got = _MADE.get(t)
    if got is None:
        got = _made(t)
    with _LOCK:
        if len(_BY_ID) >= _MAX:
            _BY_ID.clear()
        _BY_ID[id(t)] = (t, got)  # the type kept: its id is not reused while here
    return got


def _made(t: Type) -> Decoder:
    fast = _make(t, 0) if _plain(t, 0) else _generic

    def decode(body: Any) -> Any:
        if body is None:
            return None
        try:
            return fast(body)
        except (_Generic, CsupError, ValueError, IndexError, TypeError, UnicodeDecodeError):
            return decode_value(t, body)

    with _LOCK:
        if len(_MADE) >= _MAX:
            _MADE.clear()
        _MADE[t] = decode
    return decode


def _generic(body: Any) -> Any:
    raise _Generic


def _plain(t: Type, depth: int) -> bool:
    """Whether ``t`` is made only of what the closures decode as the generic decoder does:
    primitives but ``none`` and ``all`` (a ``none`` is NONE even for a null body),
    named and error types, records without optional fields, arrays and sets."""
    if depth > 64:
        return False
    d = depth + 1
    if isinstance(t, PrimitiveType):
        return t != NONE_T and t != ALL_T
    if isinstance(t, NamedType | ErrorType):
        return _plain(t.inner, d)
    if isinstance(t, RecordType):
        return all(not isinstance(f, OptField) and _plain(f.type, d) for f in t.fields)
    if isinstance(t, ArrayType | SetType):
        return _plain(t.elem, d)
    return False


def _make(t: Type, depth: int) -> Decoder:
    """The unchecked closure for ``t`` (raises on anything unusual; the caller falls back
    to the generic decoder)."""
    if depth > 64:
        return _generic
    d = depth + 1
    if isinstance(t, PrimitiveType):
        if t.name == "type":
            return decode_type_value
        return lambda b: decode_primitive(t, b)
    if isinstance(t, NamedType | ErrorType):
        return _make(t.inner, d)
    if isinstance(t, RecordType):
        names = [f.name for f in t.fields]
        decs = [_nullable(_make(f.type, d)) for f in t.fields]
        count = len(names)

        def record(b: Any) -> dict[str, Any]:
            parts = split_tagged(b)
            if len(parts) != count:
                raise _Generic
            return {n: dec(p) for n, dec, p in zip(names, decs, parts, strict=True)}
        return record
    if isinstance(t, ArrayType | SetType):
        elem = _nullable(_make(t.elem, d))
        return lambda b: [elem(p) for p in split_tagged(b)]
    return _generic  # unions, maps, enums, fusion values: not in super's metadata


def _nullable(dec: Decoder) -> Decoder:
    return lambda b: None if b is None else dec(b)
