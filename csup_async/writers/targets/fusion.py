"""Fusion values (SuperDB's ``fuse``) as the ``super-0.3`` target writes them: a
supertype's value and the value's own subtype.

A fusion value arrives as ``Value(subtype, the supertype's value)`` (what
``csup_async.convert`` reads of a SuperDB BSUP file: the subtype as it was written) or
as the supertype's value alone (what a fusion value reads as): then its subtype is
derived from the value (:func:`subtype_of`).
"""

from __future__ import annotations

from typing import Any

from ...format.bsup import select_member
from ...format.superdb.bsup2 import FusionType
from ...model.errors import EncodeError
from ...model.types import (
    NULL,
    ArrayType,
    ErrorType,
    Field,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ...model.values import UnionValue, Value

__all__ = ["fusion_parts", "subtype_of"]

MAX_DEPTH = 200

def fusion_parts(t: FusionType, v: Any) -> tuple[Type, Any]:
    """``(subtype, value of the supertype)`` of a fusion value: ``Value(subtype, v)``
    names its subtype; a plain value (as a fusion value reads: its supertype's, absent
    fields left out) has the subtype :func:`subtype_of` derives."""
    if isinstance(v, Value):
        return v.type, v.value
    return subtype_of(t.inner, v), v


def subtype_of(t: Type, v: Any, depth: int = 0) -> Type:
    """The type of ``v`` within supertype ``t``, as ``super``'s fuse keeps it: a
    record's present fields (none optional), a union value's member, a container's one
    element type when its elements agree (else ``t``'s), ``null`` for a null."""
    if v is None:
        return NULL
    if depth > MAX_DEPTH:
        raise EncodeError(f"value nested deeper than {MAX_DEPTH}")
    d = depth + 1
    if isinstance(t, NamedType):
        it = subtype_of(t.inner, v, d)
        return t if it == t.inner else NamedType(t.name, it)
    if isinstance(t, ErrorType):
        return ErrorType(subtype_of(t.inner, v, d))
    if isinstance(t, RecordType):
        return RecordType(tuple(Field(f.name, subtype_of(f.type, v[f.name], d))
                                for f in t.fields if f.name in v))
    if isinstance(t, UnionType):
        if isinstance(v, UnionValue):
            return subtype_of(v.type, v.value, d)
        _, mt, mv = select_member(t, v)
        return subtype_of(mt, mv, d)
    if isinstance(t, ArrayType | SetType):
        subs = {subtype_of(t.elem, x, d) for x in v}
        if len(subs) != 1:
            return t
        [et] = subs
        return ArrayType(et) if isinstance(t, ArrayType) else SetType(et)
    return t
