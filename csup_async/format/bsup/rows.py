"""Record values decoded row by row: one decoder per record type, built once.

The reference of :mod:`.columns` and its fallback (a nested column path, a value
that is not a record, bad data).  ``decode_value`` walks the type for every
value; rows of a stream are records of a few types, so a decoder specialised
per type (fields split once, each primitive field decoded by a function picked
ahead of time) decodes them several times faster.  Times and durations of
top-level fields come out as int nanoseconds (as :func:`.columns.build_column`
takes them).  The primitive functions are the codec's own, so its fixes reach
this path too.  Anything but primitive fields goes through ``decode_value``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ...model.errors import FormatError
from ...model.types import NamedType, PrimitiveType, RecordType, Type, underlying
from .frames import iter_raw_values
from .tags import decode_int, split_tagged
from .valuecodec import decode_primitive, decode_value

__all__ = ["decoder_for", "iter_rows"]

Decoder = Callable[[Any], Any]
_CACHE: dict[Type, Decoder] = {}
_SIGNED = {"int8": 1, "int16": 2, "int32": 4, "int64": 8}
_UNSIGNED = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}


def _primitive(t: PrimitiveType) -> Decoder:
    name = t.name
    dint = decode_int
    if name == "int64":
        def int64(b: Any) -> int:
            if len(b) > 8:
                raise FormatError(f"{name} value of {len(b)} bytes")
            return dint(b)
        return int64
    if name in _SIGNED:
        # narrow signed ints are sign-and-magnitude like int64 (int8's -128 is two
        # bytes), so they are bsup's: read as int64, then range-checked
        return lambda b: decode_primitive(t, b)
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
    return lambda b: decode_primitive(t, b)


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
        split = split_tagged
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
                    out[name] = decode_value(ft, p)
            return out
        d = record
    else:
        def generic(body: Any) -> Any:
            return decode_value(t, body)
        d = generic
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[ck] = d
    return d


def iter_rows(buf: bytes | memoryview, fields: frozenset[str] | None = None
              ) -> Iterator[tuple[Type, Any]]:
    """(type, plain Python value) of every value of one or more whole BSUP streams; of
    records, only the top-level ``fields`` (all when None)."""
    by_id: dict[int, Decoder] = {}  # types of one stream are the same objects: skip hashing
    for t, body in iter_raw_values(buf):
        dec = by_id.get(id(t))
        if dec is None:
            dec = by_id[id(t)] = decoder_for(t, fields)
        yield t, dec(body)
