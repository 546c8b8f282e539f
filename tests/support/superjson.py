"""Typed values to the JSON ``super -j`` prints, so read paths compare with its output.

``super``'s JSON is lossy in its own ways (durations as Go duration text, times
as RFC 3339, type values in angle brackets, errors as ``{"error": ...}``, bytes
as ``0x`` hex, map keys that are not strings as their Super text); this mirrors
those rules for the types the committed files hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from csup_async.format.superdb.bsup2 import FusionType, OptField
from csup_async.format.superdb.bsup5 import RecRef
from csup_async.format.superdb.suptext import format_type
from csup_async.model.iptext import ip_text
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
from csup_async.model.values import UnionValue, Value


def go_duration(ns: int) -> str:
    """Super's duration text, which is Zed's (``nano.Duration``): years and days too,
    ``us`` for microseconds (``1d1s``, ``1y1ns``, ``2us``), measured against super main
    and v0.3.0."""
    from tests.support.zedjson import zed_duration

    return zed_duration(ns)


def rfc3339(t: np.datetime64) -> str:
    if np.isnat(t):  # numpy's NaT is the int64 minimum, which Go prints as a time
        return "1677-09-21T00:12:43.145224192Z"
    s = str(np.datetime_as_string(t, unit="ns"))
    date, frac = s.split(".")
    frac = frac.rstrip("0")
    return date + ("." + frac if frac else "") + "Z"


def sup_text(t: Type, v: Any, main: bool = False, zed: bool = False) -> str:
    """Super text of a simple value (how super's JSON writes a map key that is not a
    string: records, arrays, sets and maps, union members, durations, times, numbers;
    ``main``: super main's set and map syntax, else the ``|[...]|`` of earlier ones;
    ``zed``: ZSON's decorations, ``0(uint64)`` for super's ``0::uint64``)."""
    if isinstance(v, UnionValue):  # a member SUP would not infer from the text is named
        text = sup_text(v.type, v.value, main, zed)
        implied = ("int64", "float64", "string", "bool", "null", "ip", "net", "time",
                   "duration", "bytes", "type")
        if isinstance(v.type, NamedType):
            deco = v.type.name if main else "=" + v.type.name
        elif isinstance(v.type, PrimitiveType) and (v.type.name not in implied or (
                zed and v.value is None)):
            deco = v.type.name
        else:
            return text
        return f"{text}({deco})" if zed else f"{text}::{deco}"
    if zed and v is None and isinstance(t, UnionType):
        return f"null({released_type_text(t, bars=False)})"
    if isinstance(t, NamedType):
        return sup_text(t.inner, v, main, zed)
    if isinstance(t, ErrorType):
        return f"error({sup_text(t.inner, v, main, zed)})"
    if isinstance(t, EnumType):  # a map key's enum is its symbol, as the tools print it
        return str(v)
    if isinstance(t, RecordType):
        return "{" + ",".join(f"{f.name}:{sup_text(f.type, v[f.name], main, zed)}"
                              for f in t.fields) + "}"
    if isinstance(t, ArrayType | SetType) and isinstance(v, list):
        inner = ",".join(sup_text(t.elem, x, main, zed) for x in v)
        if isinstance(t, ArrayType):
            return f"[{inner}]"
        return f"set[{inner}]" if main else f"|[{inner}]|"
    if isinstance(t, MapType):
        pairs = v.items() if isinstance(v, dict) else v
        inner = ",".join(f"{sup_text(t.key, k, main, zed)}:{sup_text(t.value, x, main, zed)}"
                         for k, x in pairs)
        return f"map{{{inner}}}" if main else f"|{{{inner}}}|"
    if isinstance(v, str):
        return '"' + v + '"'
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(t, PrimitiveType) and t.name in ("duration", "time", "bytes", "type"):
        return super_json(t, v)
    if isinstance(v, float) and v == int(v) and abs(v) < 1e16:
        return f"{int(v)}."  # SUP marks an integral float with a trailing dot
    return str(v)


def super_json(t: Type, v: Any, main: bool = False,
               names: dict[str, Type] | None = None) -> Any:
    """``main``: as super main prints (its type syntax; recursive types followed)."""
    if names is None:
        names = {}
    if v is None:
        # error(null) is stored as a null of type error(null), which super prints as
        # the error it is; so is error(error(null)) (super has no null of an error type)
        depth, u = 0, t
        while True:
            u = u.inner if isinstance(u, NamedType) else u
            if not isinstance(u, ErrorType):
                break
            depth, u = depth + 1, u.inner
        if not depth or getattr(u, "name", "") != "null":
            return None
        out: Any = None
        for _ in range(depth):
            out = {"error": out}
        return out
    if isinstance(t, RecRef):
        t = names[t.name]
    if isinstance(t, NamedType):
        names.setdefault(t.name, t)
        return super_json(t.inner, v, main, names)
    if isinstance(t, ErrorType):  # before a union value inside it: error(null) is not null
        return {"error": super_json(t.inner, v, main, names)}
    if isinstance(v, UnionValue):
        return super_json(v.type, v.value, main, names)
    if isinstance(t, FusionType):  # its subtype's value (a Value names it), as -j prints
        if isinstance(v, Value):
            return super_json(v.type, v.value, main, names)
        return super_json(t.inner, v, main, names)
    if isinstance(t, UnionType):
        raise AssertionError(f"an untyped value {v!r} of union {t}")
    if isinstance(t, RecordType):
        return {f.name: super_json(f.type, v[f.name], main, names) for f in t.fields
                if not (isinstance(f, OptField) and f.name not in v)}
    if isinstance(t, ArrayType | SetType):
        return [super_json(t.elem, e, main, names) for e in v]
    if isinstance(t, MapType):
        items = v.items() if isinstance(v, dict) else v
        return {(k if isinstance(k, str) else sup_text(t.key, k, main)):
                super_json(t.value, x, main, names) for k, x in items}
    if isinstance(t, EnumType):
        return v
    assert isinstance(t, PrimitiveType), t
    name = t.name
    if name == "duration":
        return go_duration(int(v.astype("int64")))
    if name == "time":
        return rfc3339(v)
    if name == "bytes":
        return "0x" + v.hex()
    if name in ("ip", "net"):
        return ip_text(v)
    if name == "type":
        return f"<{format_type(v, names_only=True) if main else super_type_text(v)}>"
    return v


def super_type_text(t: Any) -> str:
    """A type as super v0.2.0/v0.3.0 print a type value: unions ``a|b`` (in parentheses
    as a union's member), sets ``|[T]|``, maps ``|{K:V}|``, a named type ``name=T`` where
    it first appears (in parentheses as a union's member or around a union) and
    ``name`` after."""
    return released_type_text(t, bars=True)


def _quote(name: str) -> str:
    """A name as the tools print it: quoted unless an identifier."""
    import re

    if re.match(r"^[A-Za-z_$][A-Za-z0-9_$]*$", name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def released_type_text(t: Any, bars: bool, seen: set[str] | None = None,
                       member: bool = False) -> str:
    """A type value's text in the released tools: ``bars`` for super v0.2.0/v0.3.0
    (``a|b``), else Zed's (``(a,b)``; a named type's name never quoted)."""
    from csup_async.format.superdb.bsup2 import FusionType, OptField

    seen = set() if seen is None else seen

    def fmt(u: Any, member: bool = False) -> str:
        return released_type_text(u, bars, seen, member)

    if isinstance(t, NamedType):
        name = _quote(t.name) if bars else t.name
        if t.name in seen:
            return name
        seen.add(t.name)
        text = f"{name}={fmt(t.inner)}"
        parens = bars and member
        return f"({text})" if parens else text
    if isinstance(t, RecordType):
        return "{" + ",".join(f"{_quote(f.name)}{'?' if isinstance(f, OptField) else ''}:"
                              f"{fmt(f.type)}" for f in t.fields) + "}"
    if isinstance(t, ArrayType):
        return f"[{fmt(t.elem)}]"
    if isinstance(t, SetType):
        return f"|[{fmt(t.elem)}]|"
    if isinstance(t, MapType):
        return f"|{{{fmt(t.key)}:{fmt(t.value)}}}|"
    if isinstance(t, UnionType):
        if not bars:
            return "(" + ",".join(fmt(m) for m in t.types) + ")"
        text = "|".join(fmt(m, True) for m in t.types)
        return f"({text})" if member else text
    if isinstance(t, ErrorType):
        return f"error({released_type_text(t.inner, bars, set() if bars else seen)})"
    if isinstance(t, FusionType):
        return f"fusion({released_type_text(t.inner, bars, set())})"
    return str(t)
