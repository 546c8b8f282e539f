"""Zed's own JSON rendering of a typed value, so tests can compare with ``zq -j``.

``zq -j`` is the oracle the committed outputs in ``tests/data/real/`` come from;
this turns a value this library decoded (with its exact type) into what ``zq -j``
prints for it, by Zed's documented JSON rules: durations in Zed's notation (days
and years too), times in RFC 3339 with trailing zeros of the fraction dropped, bytes as ``0x`` hex,
errors as ``{"error": ...}``, enums as their symbol, unions as their member value,
maps as an object of the keys' text (Zed v1.12) or a list of ``{key, value}``
records (Zed v1.7, where an empty map prints as null).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from csup_async.model.types import (
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
from csup_async.model.values import UnionValue

_UNITS = (("y", 365 * 86_400_000_000_000), ("d", 86_400_000_000_000),
          ("h", 3_600_000_000_000), ("m", 60_000_000_000))


def zed_duration(ns: int) -> str:
    """Zed's duration text (``nano.Duration.String``): years, days, hours, minutes,
    then seconds (or ms, us, ns) with a fraction."""
    if ns == 0:
        return "0s"
    out, u = ("-" if ns < 0 else ""), abs(ns)
    for name, size in _UNITS:
        if u >= size:
            out += f"{u // size}{name}"
            u %= size
            if u == 0:
                return out
    for name, size in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if u >= size or u % size == 0:
            return out + _frac(u, size) + name
    return out + f"{u}ns"


def _frac(n: int, size: int) -> str:
    whole, part = divmod(n, size)
    if not part:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}." + f"{part:0{digits}d}".rstrip("0")


def go_time(ns: int) -> str:
    if ns == -(1 << 63):  # numpy's NaT: Go prints the int64 minimum as a time
        return "1677-09-21T00:12:43.145224192Z"
    s = str(np.datetime_as_string(np.datetime64(ns, "ns"), unit="ns"))
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s + "Z"


def zed_json(t: Type, v: Any, *, map_as_records: bool = False) -> Any:
    """What ``zq -j`` prints for the value ``v`` of type ``t``."""
    if isinstance(v, UnionValue):
        return zed_json(v.type, v.value, map_as_records=map_as_records)
    if v is None:
        return None
    kw = {"map_as_records": map_as_records}
    if isinstance(t, NamedType):
        return zed_json(t.inner, v, **kw)
    if isinstance(t, ErrorType):
        return {"error": zed_json(t.inner, v, **kw)}
    if isinstance(t, RecordType):
        return {f.name: zed_json(f.type, v[f.name], **kw) for f in t.fields}
    if isinstance(t, (ArrayType, SetType)):
        return [zed_json(t.elem, x, **kw) for x in v]
    if isinstance(t, MapType):
        pairs = v.items() if isinstance(v, dict) else v
        if map_as_records:  # Zed v1.7 prints an empty map as null (a nil Go slice)
            return [{"key": zed_json(t.key, k, **kw), "value": zed_json(t.value, x, **kw)}
                    for k, x in pairs] or None
        return {_key_text(t.key, k): zed_json(t.value, x, **kw) for k, x in pairs}
    if isinstance(t, UnionType):
        raise AssertionError("a union value must be typed (decode with typed=True)")
    if isinstance(t, EnumType):
        return v
    assert isinstance(t, PrimitiveType), t
    name = t.name
    if name == "duration":
        return zed_duration(int(np.asarray(v).astype("timedelta64[ns]").astype(np.int64)))
    if name == "time":
        return go_time(int(np.asarray(v).astype("datetime64[ns]").astype(np.int64)))
    if name == "bytes":
        return "0x" + bytes(v).hex()
    if name in ("ip", "net", "type"):
        if name == "type":
            from tests.support.superjson import released_type_text

            return "<" + released_type_text(v, bars=False) + ">"
        return str(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _key_text(t: Type, k: Any) -> str:
    """A map key as zq's JSON writes it: a string key as itself, any other as its ZSON
    text (a string inside a union quoted, a float with its dot: ``"16."``)."""
    from tests.support.superjson import sup_text

    if isinstance(k, str) and not isinstance(k, UnionValue) and isinstance(
            t.inner if isinstance(t, NamedType) else t, PrimitiveType):
        return k
    return sup_text(t, k, zed=True)


def load_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
