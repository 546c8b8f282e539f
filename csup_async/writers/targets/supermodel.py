"""Values of this library's model as SuperDB (v0.3.0 and later) models them.

Zed and this library give every null a type (``null::int64``); SuperDB's
vectors have no typed nulls: a null is a value of type ``null``.  ``super``
itself reads a Zed file's ``{a:null::int64}`` as ``{a:null}``.  So before a
value goes to a SuperDB format, every null becomes the ``null`` value and the
types around it follow: a record field's type becomes ``null``; an array, set or
map whose elements (keys, values) now differ in type gets the union of the old
element type's members and the new ones (``[int64]`` holding a null becomes
``[int64|null]``, as ``super`` types ``[null,1]``); a union gains a member when a
value inside it changed type.  Values without nulls keep their types exactly.
"""

from __future__ import annotations

from typing import Any

from ...format.bsup import append_tagged, select_member
from ...format.superdb.bsup2 import V2, FusionType, OptField
from ...model.errors import EncodeError
from ...model.types import (
    NULL,
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
from ...model.values import UnionValue, Value

__all__ = ["for_super", "normal_sets", "to_super"]


def for_super(t: Type, v: Any) -> tuple[Type, Any]:
    """``(type, value)`` as a SuperDB tool holds it: no typed nulls (:func:`to_super`),
    unions in its order (:mod:`.canon`), sets' elements unique and sorted
    (:func:`normal_sets`)."""
    from .canon import sort_unions

    st, sv = sort_unions(*to_super(t, v))
    return st, normal_sets(st, sv)


def normal_sets(t: Type, v: Any, depth: int = 0) -> Any:
    """``v`` with every set's elements (map's keys) unique and in the order of their
    version-2 bodies, as ``super`` keeps a set (a map)."""
    if v is None or depth > MAX_DEPTH:
        return v
    d = depth + 1
    if isinstance(t, NamedType | ErrorType):
        return normal_sets(t.inner, v, d)
    if isinstance(t, RecordType):
        return {f.name: normal_sets(f.type, v[f.name], d) for f in t.fields if f.name in v}
    if isinstance(t, ArrayType):
        return [normal_sets(t.elem, x, d) for x in v]
    if isinstance(t, SetType):
        return _normal_set(t.elem, [normal_sets(t.elem, x, d) for x in v])
    if isinstance(t, MapType):  # entries in the order of their keys' bodies, as super
        items = v.items() if isinstance(v, dict) else v
        pairs = [(normal_sets(t.key, k, d), normal_sets(t.value, x, d)) for k, x in items]
        return _normal_map(t.key, pairs)
    if isinstance(t, UnionType) and isinstance(v, UnionValue):
        return UnionValue(v.index, v.type, normal_sets(v.type, v.value, d))
    return v

MAX_DEPTH = 200


def to_super(t: Type, v: Any, depth: int = 0) -> tuple[Type, Any]:
    """``(type, value)`` of ``v`` (of type ``t``) in SuperDB's model."""
    if isinstance(t, FusionType):  # a supertype's value (SuperDB's own: kept as it is;
        return t, v  # a Value inside names its subtype: .fusion.fusion_parts)
    if isinstance(v, Value):
        t, v = v.type, v.value
    if v is None:
        return NULL, None
    if depth > MAX_DEPTH:
        raise EncodeError(f"value nested deeper than {MAX_DEPTH}")
    d = depth + 1
    if isinstance(t, (PrimitiveType, EnumType)):
        return t, v
    if isinstance(t, NamedType):
        it, iv = to_super(t.inner, v, d)
        return (t if it == t.inner else NamedType(t.name, it)), iv
    if isinstance(t, ErrorType):
        it, iv = to_super(t.inner, v, d)
        return (t if it == t.inner else ErrorType(it)), iv
    if isinstance(t, RecordType):
        fields, out = [], {}
        for f in t.fields:
            if f.name not in v:
                if isinstance(f, OptField):
                    fields.append(f)
                    continue
                raise EncodeError(f"record {t} lacks its field {f.name!r}")
            ft, fv = to_super(f.type, v[f.name], d)
            fields.append(f if ft == f.type else type(f)(f.name, ft))
            out[f.name] = fv
        return RecordType(tuple(fields)), out
    if isinstance(t, ArrayType):
        et, ev = _elements(t.elem, list(v), d)
        return ArrayType(et), ev
    if isinstance(t, SetType):
        et, ev = _elements(t.elem, list(v), d)
        return SetType(et), ev
    if isinstance(t, MapType):
        items = list(v.items()) if isinstance(v, dict) else list(v)
        kt, ks = _elements(t.key, [k for k, _ in items], d)
        vt, vs = _elements(t.value, [x for _, x in items], d)
        pairs = list(zip(ks, vs, strict=True))
        return MapType(kt, vt), pairs
    if isinstance(t, UnionType):
        idx, mt, mv = _member(t, v)
        nt, nv = to_super(mt, mv, d)
        if nt == mt:
            return t, UnionValue(idx, mt, nv)
        if nt == NULL and NULL not in t.types:
            return NULL, None  # a typed null inside a union: the null value
        members = list(t.types)
        if nt not in members:
            members.append(nt)
        ut = UnionType(tuple(members))
        return ut, UnionValue(members.index(nt), nt, nv)
    raise EncodeError(f"values of {t} are not written to a SuperDB target")


def _member(t: UnionType, v: Any) -> tuple[int, Type, Any]:
    return select_member(t, v)


def _elements(elem: Type, vals: list[Any], d: int) -> tuple[Type, list[Any]]:
    """The element type and values of a container whose elements were ``elem``."""
    conv = [to_super(elem, x, d) for x in vals]
    if all(ct == elem for ct, _ in conv):
        if isinstance(elem, UnionType):
            return elem, [cv for _, cv in conv]
        return elem, [cv for _, cv in conv]
    members: list[Type] = list(elem.types) if isinstance(elem, UnionType) else [elem]
    flat: list[tuple[Type, Any]] = []
    for ct, cv in conv:
        if isinstance(ct, UnionType) and isinstance(cv, UnionValue):
            ct, cv = cv.type, cv.value  # no union of unions: take the member
        if ct not in members:
            members.append(ct)
        flat.append((ct, cv))
    ut = UnionType(tuple(members))
    return ut, [UnionValue(members.index(ct), ct, cv) for ct, cv in flat]


def _normal_map(kt: Type, pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    from .bsupn import encode_body

    keyed: dict[bytes, tuple[Any, Any]] = {}
    for k, x in pairs:
        b = bytearray()
        append_tagged(b, encode_body(kt, k, V2))
        keyed.setdefault(bytes(b), (k, x))
    return [keyed[k] for k in sorted(keyed)]


def _normal_set(et: Type, vals: list[Any]) -> list[Any]:
    from .bsupn import encode_body

    keyed: dict[bytes, Any] = {}
    for x in vals:
        b = bytearray()
        append_tagged(b, encode_body(et, x, V2))
        keyed.setdefault(bytes(b), x)
    return [keyed[k] for k in sorted(keyed)]

