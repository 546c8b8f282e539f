"""Types in the text super main prints them in (``typeof``, ``-s``, type values in ``-j``).

Unions are ``a|b`` (no parentheses), sets ``set[T]``, maps ``map{K:V}``, optional
fields ``name?:T``, a named type ``name=T`` where it first appears and ``name``
after, fusion ``fusion(T)``; field names that are not identifiers are quoted.
"""

from __future__ import annotations

import json
import re

from ...model.types import (
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
from .bsup2 import FusionType, OptField
from .bsup5 import RecRef

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _name(s: str) -> str:
    return s if _IDENT.match(s) else json.dumps(s)


def format_type(t: Type, *, names_only: bool = False) -> str:
    """``names_only``: every named type by its name, as super main prints a type value
    (``-j``, ``typeof``): its text output declares named types apart (``type n=T``)."""
    return _fmt(t, _Everywhere() if names_only else set())


class _Everywhere(set[str]):
    """A set of seen names that holds every name."""

    def __contains__(self, item: object) -> bool:
        return True


def _fmt(t: Type, seen: set[str]) -> str:
    if isinstance(t, PrimitiveType):
        return t.name
    if isinstance(t, RecRef):
        return t.name
    if isinstance(t, NamedType):
        if t.name in seen:
            return _name(t.name)
        seen.add(t.name)
        return f"{_name(t.name)}={_fmt(t.inner, seen)}"
    if isinstance(t, RecordType):
        return "{" + ",".join(
            f"{_name(f.name)}{'?' if isinstance(f, OptField) else ''}:{_fmt(f.type, seen)}"
            for f in t.fields) + "}"
    if isinstance(t, ArrayType):
        return f"[{_fmt(t.elem, seen)}]"
    if isinstance(t, SetType):
        return f"set[{_fmt(t.elem, seen)}]"
    if isinstance(t, MapType):
        return f"map{{{_fmt(t.key, seen)}:{_fmt(t.value, seen)}}}"
    if isinstance(t, UnionType):
        return "|".join(_fmt(m, seen) for m in t.types)
    if isinstance(t, EnumType):
        return "enum(" + ",".join(_name(s) for s in t.symbols) + ")"
    if isinstance(t, ErrorType):
        return f"error({_fmt(t.inner, seen)})"
    if isinstance(t, FusionType):
        return f"fusion({_fmt(t.inner, seen)})"
    return str(t)
