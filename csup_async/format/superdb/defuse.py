"""A fusion value as the value of its own subtype: how super main reads a fusion value
(``typeof`` of it is the subtype), and how this library reads one from every layout
that stores it (CSUP v16/v23 fusion vectors, BSUP versions 1, 2 and 5).

A fusion value is stored as its supertype's value and its subtype (a type value); the
supertype's record has every field optional, its union every member.  Defusing keeps
the record fields the subtype has, in the subtype's order, and unwraps the union
members the subtype holds plainly, so the value is the one super printed before it
was fused.
"""

from __future__ import annotations

from typing import Any

from ...model.types import (
    NULL,
    ArrayType,
    ErrorType,
    MapType,
    NamedType,
    RecordType,
    SetType,
    UnionType,
)
from ...model.values import UnionValue, Value
from . import bsup5
from .bsup2 import FusionType

__all__ = ["defuse", "has_fusion", "holds_value", "top_value", "unfuse"]


def defuse(v: Any, s: Any, names: dict[str, Any] | None = None) -> Any:
    """A fusion vector's value (decoded as its supertype) as the value of its own
    subtype ``s``: the record fields the subtype has, in its order; union members of
    the supertype that the subtype holds plainly, unwrapped."""
    if v is None or v is bsup5.NONE:
        return v
    if names is None:
        names = {}
    while isinstance(s, NamedType | ErrorType | bsup5.RecRef):
        if isinstance(s, bsup5.RecRef):
            if s.name not in names:
                return v
            s = names[s.name]
            continue
        if isinstance(s, NamedType):
            names.setdefault(s.name, s)
        s = s.inner
    if isinstance(v, Value):  # a nested fusion's value, typed: its own subtype
        if isinstance(s, UnionType) and v.type in s.types:
            return UnionValue(s.types.index(v.type), v.type,
                              defuse(v.value, v.type, names))
        return defuse(v.value, s, names)
    if isinstance(v, UnionValue):
        if isinstance(s, UnionType):
            if v.type in s.types:
                return UnionValue(s.types.index(v.type), v.type,
                                  defuse(v.value, v.type, names))
            if len(s.types) == len(v.type.types if isinstance(v.type, UnionType) else ()) or (
                    0 <= v.index < len(s.types)):  # the same member, its type as s says it
                m = s.types[v.index]
                return UnionValue(v.index, m, defuse(v.value, m, names))
            return v
        return defuse(v.value, s, names)
    if isinstance(s, FusionType):
        return v
    if isinstance(s, RecordType) and isinstance(v, dict):
        return {f.name: defuse(v[f.name], f.type, names) for f in s.fields if f.name in v}
    if isinstance(s, ArrayType | SetType) and isinstance(v, list):
        return [defuse(x, s.elem, names) for x in v]
    if isinstance(s, MapType):
        if isinstance(v, dict):
            return {k: defuse(x, s.value, names) for k, x in v.items()}
        return [(defuse(k, s.key, names), defuse(x, s.value, names)) for k, x in v]
    return v


def top_value(t: Any, v: Any) -> Value:
    """A top-level value of type ``t`` decoded typed with its fusion values' subtypes
    (``fused=True``), as super main prints it: every fusion value within as its subtype's,
    and the types around it rebuilt from theirs (:func:`unfuse`)."""
    if not has_fusion(t):
        return Value(t, v)
    ut, uv = unfuse(t, v)
    return Value(ut, uv)


def has_fusion(t: Any, depth: int = 0) -> bool:
    """Whether a fusion type is within ``t`` (a named type is a barrier, as in super)."""
    if isinstance(t, FusionType):
        return True
    if depth > 100 or isinstance(t, NamedType | bsup5.RecRef):
        return False
    if isinstance(t, RecordType):
        return any(has_fusion(f.type, depth + 1) for f in t.fields)
    if isinstance(t, ArrayType | SetType | ErrorType):
        return has_fusion(t.elem if not isinstance(t, ErrorType) else t.inner, depth + 1)
    if isinstance(t, MapType):
        return has_fusion(t.key, depth + 1) or has_fusion(t.value, depth + 1)
    if isinstance(t, UnionType):
        return any(has_fusion(m, depth + 1) for m in t.types)
    return False


def unfuse(t: Any, v: Any, depth: int = 0) -> tuple[Any, Any]:
    """``(type, value)`` of the typed value ``v`` of type ``t`` as super main's
    ``defuse`` makes it (what ``super -s``/``-j`` print, fusion values being auto-defused):
    a fusion value is its subtype's; a record's field types, an array's or set's
    element type (several: their union, each element tagged), a map's key and value
    types, an error's, are rebuilt from the values'; a union whose members hold a fusion
    gives way to its member's value; named types are barriers."""
    if v is None or v is bsup5.NONE or depth > 200 or not (has_fusion(t) or holds_value(v)):
        return t, v
    d = depth + 1
    if isinstance(v, Value) and not isinstance(t, FusionType):
        return v.type, v.value  # a fusion vector's value, defused already (CSUP v23)
    if isinstance(t, FusionType):
        if isinstance(v, Value):  # (subtype, the supertype's value): decoded ``fused``
            return v.type, defuse(v.value, v.type)
        return t, v  # no subtype known (``any``'s own values are typed already)
    if isinstance(t, RecordType) and isinstance(v, dict):
        fields, out = [], {}
        for f in t.fields:
            if f.name not in v:  # an absent optional field stays as it was
                fields.append(f)
                continue
            ft, fv = unfuse(f.type, v[f.name], d)
            if fv is bsup5.NONE and ft == bsup5.NONE_T and v[f.name] is not fv:
                continue  # a fusion value whose subtype is none: super drops the field
            out[f.name] = fv
            fields.append(type(f)(f.name, ft))
        return RecordType(tuple(fields)), out
    if isinstance(t, ArrayType | SetType) and isinstance(v, list):
        if not v:
            return ArrayType(NULL), v  # super main's defuse does so
        et, ev = _unify([unfuse(t.elem, x, d) for x in v])
        return (ArrayType(et) if isinstance(t, ArrayType) else SetType(et)), ev
    if isinstance(t, MapType):
        pairs = list(v.items()) if isinstance(v, dict) else list(v)
        kt, keys = _unify([unfuse(t.key, k, d) for k, _ in pairs])
        vt, vals = _unify([unfuse(t.value, x, d) for _, x in pairs])
        if not pairs:
            return MapType(NULL, NULL), v
        if isinstance(v, dict) and not isinstance(kt, UnionType):
            return MapType(kt, vt), dict(zip(keys, vals, strict=True))
        return MapType(kt, vt), list(zip(keys, vals, strict=True))
    if isinstance(t, UnionType) and isinstance(v, UnionValue):
        return unfuse(v.type, v.value, d)
    if isinstance(t, ErrorType):
        it, iv = unfuse(t.inner, v, d)
        return ErrorType(it), iv
    return t, v


def holds_value(v: Any, depth: int = 0) -> bool:
    """Whether a decoded value holds a typed :class:`Value` within: a fusion vector's
    value with its subtype, inside a column whose type names no fusion (CSUP v23's
    column types are the supertypes)."""
    if depth > 200:
        return False
    if isinstance(v, Value):
        return True
    if isinstance(v, UnionValue):
        return holds_value(v.value, depth + 1)
    if isinstance(v, dict):
        return any(holds_value(x, depth + 1) for x in v.values())
    if isinstance(v, list | tuple):
        return any(holds_value(x, depth + 1) for x in v)
    return False


def _unify(typed: list[tuple[Any, Any]]) -> tuple[Any, list[Any]]:
    """One type for several values: theirs when they agree, else their union (super's
    order), each value tagged with its member."""
    types: list[Any] = []
    for ut, _ in typed:
        if ut not in types:
            types.append(ut)
    if len(types) <= 1:
        return (types[0] if types else NULL), [x for _, x in typed]
    union = bsup5.sort_union(types)
    return union, [UnionValue(union.types.index(ut), ut, x) for ut, x in typed]
