"""Fusing the types of schema-free rows into one, so they are written as one table.

Rows typed one by one get a new super type for every null pattern: ``{"k": "a"}``
is ``{k:string}``, ``{"k": None}`` is ``{k:null}``.  Fusing (the writer's default,
``fuse=True``; the rule is in docs/format.md, "Fused types") writes them under one:

- ``null`` fuses into anything (a null takes its siblings' type: a typed null);
- records fuse by field name, in order of first appearance; a field a record does
  not have is a null of the fused field's type;
- arrays fuse their element types (so do sets; maps their keys and values);
- anything else that differs (an int here, a string there) becomes a union with one
  member per kind (one record, one array, each primitive once), every value keeping
  its exact type as that union's member.

:func:`fuse_types` is that rule; :func:`encode_fused` writes a plain Python value
under a fused type for the per-value path (values the vectorised path cannot type).
"""

from __future__ import annotations

from typing import Any

from ..format.bsup import UNION_TAG_SIGNED, append_tagged, encode_int, encode_uint, encode_value
from ..model.errors import EncodeError
from ..model.types import (
    NULL,
    ArrayType,
    Field,
    MapType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ..model.values import Value, infer_type

__all__ = ["fuse_types", "fuse_all", "encode_fused", "member_slot"]


def fuse_types(a: Type, b: Type) -> Type:
    """The one type values of types ``a`` and ``b`` are written as (see the module).

    The result is in fused form even where ``a`` or ``b`` is not (a union that
    :func:`~csup_async.model.values.infer_type` gives a list of ``[]`` and ``[1]`` holds two
    arrays: fused, one)."""
    members: list[Type] = []
    for t in _members(a) + _members(b):
        _add_member(members, t)
    if not members:
        return NULL
    return members[0] if len(members) == 1 else UnionType(tuple(members))


def fuse_all(types: list[Type], start: Type = NULL) -> Type:
    """:func:`fuse_types` over ``types`` (from ``start``), in order."""
    out = start
    for t in types:
        out = fuse_types(out, t)
    return out


def _members(t: Type) -> list[Type]:
    return list(t.types) if isinstance(t, UnionType) else [t]


def member_slot(members: list[Type] | tuple[Type, ...], t: Type) -> int:
    """Index of the member ``t`` fuses with (equal, else the same kind of container),
    or -1."""
    if t in members:
        return members.index(t)
    if isinstance(t, _CONTAINERS):
        for i, m in enumerate(members):
            if type(m) is type(t):
                return i
    return -1


_CONTAINERS = (RecordType, ArrayType, SetType, MapType)


def _add_member(members: list[Type], t: Type) -> None:
    if t == NULL:
        return
    t = _fused_form(t)
    i = member_slot(members, t)
    if i < 0:
        members.append(t)
    else:
        members[i] = _merge_same_kind(members[i], t)


def _fused_form(t: Type) -> Type:
    """``t`` with every union inside it fused (one member per kind, no null)."""
    if isinstance(t, RecordType):
        return RecordType(tuple(Field(f.name, fuse_types(NULL, f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(fuse_types(NULL, t.elem))
    if isinstance(t, SetType):
        return SetType(fuse_types(NULL, t.elem))
    if isinstance(t, MapType):
        return MapType(fuse_types(NULL, t.key), fuse_types(NULL, t.value))
    return t


def _merge_same_kind(a: Type, b: Type) -> Type:
    if a == b:
        return a
    if isinstance(a, RecordType) and isinstance(b, RecordType):
        fields = {f.name: f.type for f in a.fields}
        for f in b.fields:
            fields[f.name] = fuse_types(fields[f.name], f.type) if f.name in fields else f.type
        return RecordType(tuple(Field(k, v) for k, v in fields.items()))
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(fuse_types(a.elem, b.elem))
    if isinstance(a, SetType) and isinstance(b, SetType):
        return SetType(fuse_types(a.elem, b.elem))
    if isinstance(a, MapType) and isinstance(b, MapType):
        return MapType(fuse_types(a.key, b.key), fuse_types(a.value, b.value))
    raise AssertionError(f"{a} and {b} are not of one kind")


def encode_fused(t: Type, v: Any, depth: int = 0) -> bytes | None:
    """BSUP body of plain Python value ``v`` under fused type ``t`` (a type ``v``'s
    own type fuses into): missing record fields are nulls, a union member is the
    one of ``v``'s kind.  EncodeError where ``v`` does not fit (the caller then
    writes ``v`` under its own type)."""
    if v is None:
        return None
    if depth > 200:
        raise EncodeError("value nested too deep to fuse")
    d = depth + 1
    if isinstance(v, Value):
        return encode_value(t, v)
    if isinstance(t, UnionType):
        idx = member_slot(t.types, infer_type(v))
        if idx < 0:
            raise EncodeError(f"{type(v).__name__} value fits no member of {t}")
        out = bytearray()
        append_tagged(out, encode_int(idx) if UNION_TAG_SIGNED else encode_uint(idx))
        append_tagged(out, encode_fused(t.types[idx], v, d))
        return bytes(out)
    if isinstance(t, RecordType):
        if not isinstance(v, dict) or not {f.name for f in t.fields}.issuperset(v):
            raise EncodeError(f"value does not fit record {t}")
        out = bytearray()
        for f in t.fields:
            append_tagged(out, encode_fused(f.type, v.get(f.name), d))
        return bytes(out)
    if isinstance(t, ArrayType) and isinstance(v, (list, tuple)):
        out = bytearray()
        for x in v:
            append_tagged(out, encode_fused(t.elem, x, d))
        return bytes(out)
    if isinstance(t, (SetType, MapType)):
        return encode_value(t, _exact(t, v))
    return encode_value(t, _exact(t, v))


def _exact(t: Type, v: Any) -> Any:
    """``v`` when its own type is ``t`` (sets, maps and primitives are written by the
    exact encoder, which would convert some values, an int as a float, silently)."""
    if infer_type(v) != t:
        raise EncodeError(f"value does not fit {t}")
    return v
