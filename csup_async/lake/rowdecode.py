"""Row-by-row decoding of data-object rows: one decoder per record type, built once.

Scans decode column-wise (``colscan``); this is their reference and their
fallback (a nested column path, a value that is not a record, bad data).

``bsup.decode_value`` walks the type for every value; a pool's rows are
records of a few types, so a decoder specialised per type (fields split
once, each primitive field decoded by a function picked ahead of time)
decodes them several times faster.  Times and durations of top-level fields
come out as int nanoseconds (the scan turns them into time arrays).  The
primitive functions are bsup's own (``decode_int``, ``decode_uint``,
``decode_primitive``), so the codec's fixes reach this path too.  Anything
but primitive fields goes through ``decode_value``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import bsup
from ..errors import FormatError
from ..types import NamedType, PrimitiveType, RecordType, Type, underlying

__all__ = ["decoder_for", "key_getter"]

Decoder = Callable[[Any], Any]
_CACHE: dict[Type, Decoder] = {}
_SIGNED = {"int8": 1, "int16": 2, "int32": 4, "int64": 8}
_UNSIGNED = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}


def _primitive(t: PrimitiveType) -> Decoder:
    name = t.name
    dint = bsup.decode_int
    if name == "int64":
        def int64(b: Any) -> int:
            if len(b) > 8:
                raise FormatError(f"{name} value of {len(b)} bytes")
            return dint(b)
        return int64
    if name in _SIGNED:
        # narrow signed ints are sign-and-magnitude like int64 (int8's -128 is two
        # bytes), so they are bsup's: read as int64, then range-checked
        return lambda b: bsup.decode_primitive(t, b)
    if name in _UNSIGNED:
        width = _UNSIGNED[name]

        def unsigned(b: Any) -> int:
            if len(b) > width:
                raise FormatError(f"{name} value of {len(b)} bytes")
            return int.from_bytes(b, "little")
        return unsigned
    if name in ("time", "duration"):
        # kept as int nanoseconds: cheap to compare and to put in an array (see
        # keys.norm and pool._column); never handed to users in this form
        def ns(b: Any) -> int:
            if len(b) > 8:
                raise FormatError(f"{name} value of {len(b)} bytes")
            return dint(b)
        return ns
    if name == "string":
        def string(b: Any) -> str:
            try:
                return bytes(b).decode("utf-8")
            except UnicodeDecodeError as e:
                raise FormatError(f"string value is not valid UTF-8: {e.reason}") from None
        return string
    return lambda b: bsup.decode_primitive(t, b)


def decoder_for(t: Type, fields: frozenset[str] | None = None) -> Decoder:
    """body (or None) -> the plain Python value of type ``t``; for a record, only the
    top-level ``fields`` named (all when None): the others are split off, not decoded."""
    ck = (t, fields)
    d = _CACHE.get(ck)
    if d is not None:
        return d
    u = t
    while isinstance(u, NamedType):
        u = u.inner
    if isinstance(u, RecordType):
        names = [f.name for f in u.fields]
        decs: list[Decoder | None] = []
        for f in u.fields:
            ft = underlying(f.type)
            decs.append(_primitive(ft) if isinstance(ft, PrimitiveType) and ft.name != "null"
                        else None)
        types = [f.type for f in u.fields]
        n = len(names)
        split = bsup.split_tagged
        keep = [fields is None or name in fields for name in names]

        def record(body: Any) -> Any:
            if body is None:
                return None
            parts = split(body)
            if len(parts) != n:
                raise FormatError(f"record value has {len(parts)} fields, its type {n}")
            out = {}
            for name, dec, ft, p, k in zip(names, decs, types, parts, keep, strict=True):
                if not k:
                    continue
                if p is None:
                    out[name] = None
                elif dec is not None:
                    out[name] = dec(p)
                else:
                    out[name] = bsup.decode_value(ft, p)
            return out
        d = record
    else:
        def generic(body: Any) -> Any:
            return bsup.decode_value(t, body)
        d = generic
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[ck] = d
    return d


def key_getter(t: Type, path: tuple[str, ...]) -> Callable[[Any], Any]:
    """row value -> its pool key as a Value (None when missing or null), for type ``t``."""
    from ..values import Value
    from .keys import key_of

    u = underlying(t)
    if len(path) == 1 and isinstance(u, RecordType):
        f = u.field(path[0])
        if f is None:
            return lambda v: None
        kt = f.type
        while isinstance(kt, NamedType):
            kt = kt.inner
        name = path[0]

        def one(v: Any) -> Any:
            x = v.get(name) if v is not None else None
            return None if x is None else Value(kt, x)
        return one
    return lambda v: key_of(v, t, path)
