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

_NULL_TAG = 0  # a tagged null: ``append_tagged(out, None)``


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
    """:func:`fuse_types` over ``types`` (from ``start``), in order: the same type as
    fusing them one by one, in time proportional to the sizes of the types given, not
    to their number times the size of the result (rows of a few of 300 keys each
    would rebuild the 300-field record once per row)."""
    return _fuse_many([start, *types], 0)


def _fuse_many(types: list[Type], depth: int) -> Type:
    """All of ``types`` fused at once: members by kind in order of first appearance,
    record fields in order of first appearance, each slot's types fused at once."""
    if depth > 400:  # as deep as the types themselves can be: fuse them pairwise
        out: Type = NULL
        for t in types:
            out = fuse_types(out, t)
        return out
    slots: list[list[Type]] = []  # the types each member is fused from, by kind
    firsts: list[Type] = []  # each member's first type (which kind it is)
    for t in types:
        for m in _members(t):
            if m == NULL:
                continue
            i = member_slot(firsts, m) if not isinstance(m, _CONTAINERS) else next(
                (j for j, f in enumerate(firsts) if type(f) is type(m)), -1)
            if i < 0:
                firsts.append(m)
                slots.append([m])
            else:
                slots[i].append(m)
    members = [_fuse_kind(group, depth + 1) for group in slots]
    if not members:
        return NULL
    return members[0] if len(members) == 1 else UnionType(tuple(members))


def _fuse_kind(group: list[Type], depth: int) -> Type:
    """Types of one kind (equal primitives, or containers of one class) fused."""
    first = group[0]
    if isinstance(first, RecordType):
        fields: dict[str, list[Type]] = {}
        for r in group:
            assert isinstance(r, RecordType)
            for f in r.fields:
                fields.setdefault(f.name, []).append(f.type)
        return RecordType(tuple(Field(k, _fuse_many(v, depth)) for k, v in fields.items()))
    if isinstance(first, ArrayType):
        return ArrayType(_fuse_many([a.elem for a in group], depth))  # type: ignore[attr-defined]
    if isinstance(first, SetType):
        return SetType(_fuse_many([a.elem for a in group], depth))  # type: ignore[attr-defined]
    if isinstance(first, MapType):
        return MapType(_fuse_many([m.key for m in group], depth),  # type: ignore[attr-defined]
                       _fuse_many([m.value for m in group], depth))  # type: ignore[attr-defined]
    return first


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
        if not isinstance(v, dict):
            raise EncodeError(f"value does not fit record {t}")
        out = bytearray()
        found = 0
        for f in t.fields:  # a missing field is one null tag byte, no call
            x = v.get(f.name)
            if x is None:
                out.append(_NULL_TAG)
                found += f.name in v
            else:
                append_tagged(out, encode_fused(f.type, x, d))
                found += 1
        if found != len(v):  # a key the record lacks
            raise EncodeError(f"value does not fit record {t}")
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
