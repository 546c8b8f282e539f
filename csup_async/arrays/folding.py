"""The folding of null-only union members.

An empty array is typed [null] and an all-null field null, so a column of
string lists with some empty ones is a union of [string] and [null]: exact,
but unusable in pandas or polars.  :func:`fold_nulls` merges such members into
the sibling that can hold their values, the rule the Spark schema uses
("null yields to anything", arrays, sets and maps elementwise, records field
by field): null into any type, [null] into [T], {a:null} into {a:T}.  Python
values do not change; only the types do.  Members with data of different
types (string and int64) stay a union."""

from __future__ import annotations

import numpy as np

from ..model.errors import FormatError
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
from .model import Array, NullArray
from .nested import ListArray, MapArray, StructArray, UnionArray, concat, null_array


def _absorbs(t: Type, n: Type) -> bool:
    """Whether every value of type ``n`` is also a value of type ``t``."""
    if n in (t, NULL):
        return True
    if isinstance(t, (ArrayType, SetType)) and type(n) is type(t):
        return _absorbs(t.elem, n.elem)  # type: ignore[attr-defined]
    if isinstance(t, MapType) and isinstance(n, MapType):
        return _absorbs(t.key, n.key) and _absorbs(t.value, n.value)
    if isinstance(t, RecordType) and isinstance(n, RecordType):
        return (len(t.fields) == len(n.fields)
                and all(a.name == b.name and _absorbs(a.type, b.type)
                        for a, b in zip(t.fields, n.fields, strict=True)))
    return False


def _retype(a: Array, t: Type) -> Array:
    """``a``'s values as type ``t`` (``_absorbs(t, a.type)``): nulls become typed nulls."""
    if a.type == t:
        return a
    n = len(a)
    if a.type == NULL:
        return null_array(t, n)
    if isinstance(a, ListArray) and isinstance(t, (ArrayType, SetType)):
        return ListArray(t, a.offsets, _retype(a.values, t.elem), a.validity)
    if isinstance(a, MapArray) and isinstance(t, MapType):
        return MapArray(t, a.offsets, _retype(a.keys, t.key), _retype(a.values, t.value),
                        a.validity)
    if isinstance(a, StructArray) and isinstance(t, RecordType):
        return StructArray(t, n, [_retype(c, f.type) for c, f in zip(a.fields, t.fields,
                                                                      strict=True)],
                           a.validity)
    if isinstance(a, NullArray):
        return null_array(t, n)
    raise FormatError(f"cannot hold {a.type} values as {t}")


def has_union(t: Type) -> bool:
    """Whether a union occurs anywhere in ``t`` (where folding or unifying has work)."""
    if isinstance(t, UnionType):
        return True
    if isinstance(t, (ArrayType, SetType)):
        return has_union(t.elem)
    if isinstance(t, MapType):
        return has_union(t.key) or has_union(t.value)
    if isinstance(t, RecordType):
        return any(has_union(f.type) for f in t.fields)
    return False  # named and error types keep their exact type


def fold_nulls(a: Array) -> Array:
    """``a`` with union members whose values fit a sibling member merged into it (see
    above): a union left with one member becomes that member's plain array."""
    t = a.type
    if not has_union(t):
        return a
    if isinstance(a, UnionArray):
        return _fold_union(a)
    if isinstance(a, ListArray):
        child = fold_nulls(a._child(a.values))
        kind = SetType if isinstance(t, SetType) else ArrayType
        return ListArray(kind(child.type), a.offsets - a.offsets[0], child, a.validity)
    if isinstance(a, MapArray):
        keys, vals = fold_nulls(a.keys), fold_nulls(a.values)
        return MapArray(MapType(keys.type, vals.type), a.offsets, keys, vals, a.validity)
    if isinstance(a, StructArray) and isinstance(t, RecordType):
        kids = [fold_nulls(c) for c in a.fields]
        rt = RecordType(tuple(Field(f.name, c.type) for f, c in zip(t.fields, kids,
                                                                    strict=True)))
        return StructArray(rt, len(a), kids, a.validity)
    return a


def _fold_union(a: UnionArray) -> Array:
    kids = [fold_nulls(c) for c in a.children]
    types = [c.type for c in kids]
    # each member goes to the first member that can hold its values (itself if none)
    home = []
    for i, n in enumerate(types):
        j = next((j for j, t in enumerate(types) if j != i and types[j] != NULL
                  and _absorbs(t, n) and not _absorbs(n, t)), i)
        # members folded to one type ([(uint8,null)] beside [uint8]) go to the first
        j = next((k for k in range(i) if types[k] == n), j)
        home.append(j)
    for i in range(len(home)):  # follow chains: null -> [null] -> [string]
        while home[home[i]] != home[i]:
            home[i] = home[home[i]]
    keep = sorted(set(home))
    if len(keep) == len(types) and all(not isinstance(c, NullArray) for c in kids):
        if kids == list(a.children):
            return a
        # members' own types changed inside ([(uint8,null)] folded to [uint8]): so did the
        # union's
        return UnionArray(UnionType(tuple(types)), a.tags, kids)
    if len(keep) == 1:
        target = types[keep[0]]
        if target == NULL:
            return NullArray(len(a))
        parts = [_retype(c, target) for c in kids] + [null_array(target, 1)]
        base = np.cumsum([0] + [len(c) for c in kids])
        tags = a.tags
        idx = np.where(tags >= 0, base[np.maximum(tags, 0)] + a.positions(), base[-1])
        return concat(parts, type=target).take(idx)
    # several members stay: a union of them, absorbed members' rows moved to their home
    new_of = {j: k for k, j in enumerate(keep)}
    tags = np.where(a.tags >= 0, np.array([new_of[h] for h in home] + [-1])[a.tags], -1)
    pos = a.positions()
    children = []
    for j in keep:
        rows = np.isin(a.tags, [i for i, h in enumerate(home) if h == j])
        src = [i for i in range(len(kids)) if home[i] == j]
        members = [_retype(kids[i], types[j]) for i in src]
        base = np.cumsum([0] + [len(m) for m in members])
        local = np.zeros(len(kids), np.int64)
        local[src] = base[:-1]
        order = local[a.tags[rows]] + pos[rows]
        children.append(concat(members, type=types[j]).take(order))
    return UnionArray(UnionType(tuple(types[j] for j in keep)), tags.astype(np.int32),
                      children)
