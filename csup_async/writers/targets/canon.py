"""Unions in the order Zed and SuperDB keep them, for files their tools read.

``zq`` (and ``super`` v0.3.0) intern a union type with its members sorted
(``CompareTypes``: by kind, then primitive ID, or structurally: field count,
names, types; a named type after its underlying type, names in order) and read a
value's member index against that sorted order.  A union written in another order
is therefore read as the wrong member: before values go to such a tool, every
union type is sorted that way and every union value's index follows its member.
"""

from __future__ import annotations

import functools
from typing import Any

from ...model.errors import EncodeError
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
from ...model.values import UnionValue, Value

__all__ = ["compare_types", "sort_unions", "sorted_union"]

_KINDS = {PrimitiveType: 0, RecordType: 1, ArrayType: 2, SetType: 3, MapType: 4,
          UnionType: 5, EnumType: 6, ErrorType: 7}
MAX_DEPTH = 200


def _under(t: Type) -> Type:
    while isinstance(t, NamedType):
        t = t.inner
    return t


def _kind(t: Type) -> int:
    k = _KINDS.get(type(_under(t)))
    if k is None:
        raise EncodeError(f"type {t} has no place in a Zed union")
    return k


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def compare_types(a: Type, b: Type) -> int:
    """Zed's ``CompareTypes`` (the same in ``super`` v0.3.0): negative, 0 or positive."""
    ua, ub = _under(a), _under(b)
    if ua == ub:  # the same type ID
        na, nb = isinstance(a, NamedType), isinstance(b, NamedType)
        if na and nb:
            return _cmp(a.name.encode(), b.name.encode())  # type: ignore[attr-defined]
        return 1 if na else (-1 if nb else 0)
    c = _cmp(_kind(a), _kind(b))
    if c:
        return c
    if isinstance(ua, PrimitiveType):
        return _cmp(ua.id, ub.id)  # type: ignore[attr-defined]
    if isinstance(ua, RecordType):
        assert isinstance(ub, RecordType)
        c = _cmp(len(ua.fields), len(ub.fields))
        if c:
            return c
        for fa, fb in zip(ua.fields, ub.fields, strict=True):
            c = _cmp(fa.name.encode(), fb.name.encode())
            if c:
                return c
        for fa, fb in zip(ua.fields, ub.fields, strict=True):
            c = compare_types(fa.type, fb.type)
            if c:
                return c
        return 0
    if isinstance(ua, (ArrayType, SetType)):
        return compare_types(ua.elem, ub.elem)  # type: ignore[union-attr]
    if isinstance(ua, MapType):
        assert isinstance(ub, MapType)
        return compare_types(ua.key, ub.key) or compare_types(ua.value, ub.value)
    if isinstance(ua, UnionType):
        assert isinstance(ub, UnionType)
        c = _cmp(len(ua.types), len(ub.types))
        if c:
            return c
        for x, y in zip(ua.types, ub.types, strict=True):
            c = compare_types(x, y)
            if c:
                return c
        return 0
    if isinstance(ua, EnumType):
        assert isinstance(ub, EnumType)
        c = _cmp(len(ua.symbols), len(ub.symbols))
        if c:
            return c
        for x, y in zip(ua.symbols, ub.symbols, strict=True):
            c = _cmp(x.encode(), y.encode())
            if c:
                return c
        return 0
    if isinstance(ua, ErrorType):
        return compare_types(ua.inner, ub.inner)  # type: ignore[union-attr]
    return 0


def sorted_union(members: list[Type] | tuple[Type, ...]) -> UnionType:
    """A union of ``members`` in Zed's order (a stable sort, as Zed's), each once (two
    members may have become the same type once their own unions were sorted)."""
    unique = list(dict.fromkeys(members))
    return UnionType(tuple(sorted(unique, key=functools.cmp_to_key(compare_types))))


@functools.lru_cache(maxsize=4096)
def _canon_type(t: Type) -> Type:
    if isinstance(t, PrimitiveType | EnumType):
        return t
    if isinstance(t, NamedType):
        return NamedType(t.name, _canon_type(t.inner))
    if isinstance(t, ErrorType):
        return ErrorType(_canon_type(t.inner))
    if isinstance(t, RecordType):
        return RecordType(tuple(type(f)(f.name, _canon_type(f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_canon_type(t.elem))
    if isinstance(t, SetType):
        return SetType(_canon_type(t.elem))
    if isinstance(t, MapType):
        return MapType(_canon_type(t.key), _canon_type(t.value))
    if isinstance(t, UnionType):
        return sorted_union([_canon_type(m) for m in t.types])
    from ...format.superdb.bsup2 import FusionType

    if isinstance(t, FusionType):
        return FusionType(_canon_type(t.inner))
    return t


def sort_unions(t: Type, v: Any, depth: int = 0) -> tuple[Type, Any]:
    """``(type, value)`` with every union sorted in Zed's order (indices remapped)."""
    if isinstance(v, Value) and type(t).__name__ != "FusionType":  # (a fusion's names
        t, v = v.type, v.value  # its subtype)
    ct = _canon_type(t)
    return ct, _value(t, ct, v, depth)


def _value(t: Type, ct: Type, v: Any, depth: int) -> Any:
    if v is None or t == ct:
        return v
    if depth > MAX_DEPTH:
        raise EncodeError(f"value nested deeper than {MAX_DEPTH}")
    d = depth + 1
    if isinstance(t, NamedType | ErrorType):
        return _value(t.inner, ct.inner, v, d)  # type: ignore[attr-defined]
    if isinstance(t, RecordType):
        assert isinstance(ct, RecordType)
        return {f.name: _value(f.type, cf.type, v[f.name], d)
                for f, cf in zip(t.fields, ct.fields, strict=True) if f.name in v}
    if isinstance(t, (ArrayType, SetType)):
        return [_value(t.elem, ct.elem, x, d) for x in v]  # type: ignore[union-attr]
    if isinstance(t, MapType):
        assert isinstance(ct, MapType)
        items = v.items() if isinstance(v, dict) else v
        return [(_value(t.key, ct.key, k, d), _value(t.value, ct.value, x, d))
                for k, x in items]
    if isinstance(t, UnionType):
        from ...format.bsup import select_member

        assert isinstance(ct, UnionType)
        _, mt, mv = select_member(t, v)
        cmt = _canon_type(mt)
        return UnionValue(ct.types.index(cmt), cmt, _value(mt, cmt, mv, d))
    inner = getattr(t, "inner", None)
    if type(t).__name__ == "FusionType" and inner is not None:
        if isinstance(v, Value):  # (its subtype named: the supertype's value inside)
            return Value(_canon_type(v.type), _value(inner, ct.inner, v.value, d))  # type: ignore[attr-defined]
        return _value(inner, ct.inner, v, d)  # type: ignore[attr-defined]
    return v
