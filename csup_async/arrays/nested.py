"""The nested array classes (list, map, struct, union), the null array and the all-null
array of any type (:func:`null_array`), :func:`concat`, which joins arrays of one type by
their class, and the folding of null-only union members (:func:`fold_nulls`): these build
one another's arrays, so they live together, above the flat ones in :mod:`.model`."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from ..model.errors import ColumnNotFoundError, FormatError, UnsupportedTypeError
from ..model.kinds import (
    BINARY_KINDS,
    FLOAT_DTYPES,
    INT_DTYPES,
    NS_DURATION,
    NS_TIME,
    OBJECT_KINDS,
    key_hashable,
    phys,
    refuse_unsupported,
)
from ..model.types import (
    NULL,
    ArrayType,
    EnumType,
    Field,
    MapType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ..model.values import UnionValue
from .buffers import (
    concat_validity,
    gather_lengths,
    group_ranks,
    norm_offsets,
    norm_validity,
    null_out,
    offsets_from_lengths,
    range_indices,
    read_only,
    rebased_offsets,
    scatter_offsets,
    scatter_validity,
)
from .model import Array, BinaryArray, PrimitiveArray


class NullArray(Array):
    """``length`` nulls: the null type, or any type whose every value is null."""

    __slots__ = ()
    kind = "null"

    def __init__(self, length: int, type: Type = NULL) -> None:
        length = operator.index(length)
        if length < 0:
            raise FormatError(f"negative length {length}")
        self.type = type
        self._len = length
        # a zero-strided view: no memory, and read-only by construction
        self.validity = np.broadcast_to(np.False_, (length,)) if length else None

    def to_pylist(self, typed: bool = False) -> list[Any]:
        return [None] * self._len

    def with_type(self, t: Type) -> Array:
        return NullArray(self._len, t)

    def concrete(self) -> Array:
        """These nulls as the array class of their type's shape (see :func:`null_array`)."""
        return self if phys(self.type) == NULL else null_array(self.type, self._len)

    def _take(self, idx: np.ndarray) -> Array:
        return NullArray(idx.size, self.type)

    def _slice(self, start: int, stop: int) -> Array:
        return NullArray(stop - start, self.type)

    def _expand(self, mask: np.ndarray) -> Array:
        return NullArray(mask.size, self.type)

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        return NullArray(sum(len(a) for a in arrays), t)


class ListArray(Array):
    """Array and set values: offsets (n+1) into one child array of elements."""

    __slots__ = ("offsets", "values")
    kind = "list"

    def __init__(self, type: Type, offsets: Any, values: Array, validity: Any = None) -> None:
        p = phys(type)
        if not isinstance(p, (ArrayType, SetType)):
            raise FormatError(f"ListArray holds arrays or sets, not {type}")
        if values.type != p.elem:
            raise FormatError(f"{type} elements typed {values.type}")
        self.type = type
        self.values = values
        self.offsets = norm_offsets(offsets, len(values), str(type))
        self._len = self.offsets.size - 1
        self.validity = norm_validity(validity, self._len)

    def _child(self, child: Array) -> Array:
        lo, hi = int(self.offsets[0]), int(self.offsets[-1])
        return child if (lo, hi) == (0, len(child)) else child._slice(lo, hi)

    def elements(self) -> Array:
        """The elements these lists hold, in order, and only those: a slice of a list
        array keeps the whole child, so ``values`` may hold elements of other rows."""
        return self._child(self.values)

    def to_pylist(self, typed: bool = False) -> list[Any]:
        child = self._child(self.values).to_pylist(typed)
        rel = (self.offsets - self.offsets[0]).tolist()
        return null_out([child[a:b] for a, b in pairwise(rel)], self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        starts, lengths = gather_lengths(self.offsets, idx, self.validity)
        return ListArray(self.type, offsets_from_lengths(lengths),
                         self.values._take(range_indices(starts, lengths)),
                         None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return ListArray(self.type, self.offsets[start:stop + 1], self.values,
                         None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        return ListArray(self.type, scatter_offsets(self.offsets, mask), self._child(self.values),
                         scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        child = concat([a._child(a.values) for a in arrays], type=phys(t).elem)
        return ListArray(t, rebased_offsets(arrays), child, concat_validity(arrays))

    def _fold(self) -> Array:
        return fold_nulls(self)


class MapArray(Array):
    """Map values: offsets (n+1) into parallel key and value arrays."""

    __slots__ = ("keys", "offsets", "values")
    kind = "map"

    def __init__(self, type: Type, offsets: Any, keys: Array, values: Array,
                 validity: Any = None) -> None:
        p = phys(type)
        if not isinstance(p, MapType):
            raise FormatError(f"MapArray holds maps, not {type}")
        if keys.type != p.key or values.type != p.value:
            raise FormatError(f"{type} entries typed {keys.type}:{values.type}")
        if len(keys) != len(values):
            raise FormatError(f"{type} has {len(keys)} keys but {len(values)} values")
        self.type = type
        self.keys = keys
        self.values = values
        self.offsets = norm_offsets(offsets, len(keys), str(type))
        self._len = self.offsets.size - 1
        self.validity = norm_validity(validity, self._len)

    _child = ListArray._child

    def to_pylist(self, typed: bool = False) -> list[Any]:
        keys = self._child(self.keys).to_pylist(typed)
        vals = self._child(self.values).to_pylist(typed)
        rel = (self.offsets - self.offsets[0]).tolist()
        if key_hashable(phys(self.type).key):
            out: list[Any] = []
            for a, b in pairwise(rel):
                d = dict(zip(keys[a:b], vals[a:b], strict=True))
                # keys distinct in BSUP but equal in Python (0.0 and -0.0) keep every entry
                out.append(d if len(d) == b - a else list(zip(keys[a:b], vals[a:b],
                                                               strict=True)))
        else:
            out = [list(zip(keys[a:b], vals[a:b], strict=True)) for a, b in pairwise(rel)]
        return null_out(out, self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        starts, lengths = gather_lengths(self.offsets, idx, self.validity)
        child_idx = range_indices(starts, lengths)
        return MapArray(self.type, offsets_from_lengths(lengths), self.keys._take(child_idx),
                        self.values._take(child_idx),
                        None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return MapArray(self.type, self.offsets[start:stop + 1], self.keys, self.values,
                        None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        return MapArray(self.type, scatter_offsets(self.offsets, mask), self._child(self.keys),
                        self._child(self.values), scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        p = phys(t)
        keys = concat([a._child(a.keys) for a in arrays], type=p.key)
        vals = concat([a._child(a.values) for a in arrays], type=p.value)
        return MapArray(t, rebased_offsets(arrays), keys, vals, concat_validity(arrays))

    def _fold(self) -> Array:
        return fold_nulls(self)


class StructArray(Array):
    """Record values: one child array per field, each of the struct's length.

    A null row's children hold whatever (usually nulls); ``field`` returns the
    child as stored, like Arrow's ``StructArray.field``.
    """

    __slots__ = ("fields",)
    kind = "struct"

    def __init__(self, type: Type, length: int, fields: Sequence[Array],
                 validity: Any = None) -> None:
        p = phys(type)
        if not isinstance(p, RecordType):
            raise FormatError(f"StructArray holds records, not {type}")
        fields = tuple(fields)
        if len(fields) != len(p.fields):
            raise FormatError(f"{type} needs {len(p.fields)} field arrays, got {len(fields)}")
        length = operator.index(length)
        for f, a in zip(p.fields, fields, strict=True):
            if a.type != f.type:
                raise FormatError(f"field {f.name!r} of {type} typed {a.type}")
            if len(a) != length:
                raise FormatError(f"field {f.name!r} has {len(a)} values for {length} rows")
        self.type = type
        self._len = length
        self.fields = fields
        self.validity = norm_validity(validity, length)

    def field(self, name: str) -> Array:
        for f, a in zip(phys(self.type).fields, self.fields, strict=True):
            if f.name == name:
                return a
        raise ColumnNotFoundError(f"{self.type} has no field {name!r}")

    def to_pylist(self, typed: bool = False) -> list[Any]:
        names = [f.name for f in phys(self.type).fields]
        if not names:
            out: list[Any] = [{} for _ in range(self._len)]
        else:
            cols = [a.to_pylist(typed) for a in self.fields]
            out = [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]
        return null_out(out, self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        return StructArray(self.type, idx.size, tuple(a._take(idx) for a in self.fields),
                           None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return StructArray(self.type, stop - start,
                           tuple(a._slice(start, stop) for a in self.fields),
                           None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        return StructArray(self.type, mask.size, tuple(a._expand(mask) for a in self.fields),
                           scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        p = phys(t)
        fields = tuple(concat([a.fields[i] for a in arrays], type=f.type)
                       for i, f in enumerate(p.fields))
        return StructArray(t, sum(len(a) for a in arrays), fields, concat_validity(arrays))

    def _fold(self) -> Array:
        return fold_nulls(self)


class UnionArray(Array):
    """Dense union: ``tags`` name each row's member (-1 = null row), ``children[i]``
    holds member i's values in row order, one per row tagged i.
    """

    __slots__ = ("_ranks", "children", "tags")
    kind = "union"

    def __init__(self, type: Type, tags: Any, children: Sequence[Array],
                 validity: Any = None) -> None:
        p = phys(type)
        if not isinstance(p, UnionType):
            raise FormatError(f"UnionArray holds unions, not {type}")
        children = tuple(children)
        k = len(p.types)
        if len(children) != k:
            raise FormatError(f"{type} needs {k} member arrays, got {len(children)}")
        for m, c in zip(p.types, children, strict=True):
            if c.type != m:
                raise FormatError(f"member {m} of {type} typed {c.type}")
        t = np.asarray(tags)
        if t.ndim != 1 or (t.dtype.kind not in "iu" and t.size):
            raise FormatError("union tags must be a 1-D integer array")
        t = t.astype(np.int32, copy=False)
        if t.size and (int(t.min()) < -1 or int(t.max()) >= k):
            raise FormatError(f"union tag out of range 0..{k - 1}")
        valid = t >= 0
        given = norm_validity(validity, t.size)
        if given is not None and bool(valid[~given].any()):
            raise FormatError("a null union row must have tag -1")
        counts = np.bincount(t[valid], minlength=k) if k else np.zeros(0, np.int64)
        for i, c in enumerate(children):
            if len(c) != int(counts[i]):
                raise FormatError(f"union member {i} has {len(c)} values for {int(counts[i])} tags")
        self.type = type
        self._len = t.size
        self.tags = read_only(t)
        self.children = children
        self.validity = norm_validity(valid, t.size)
        self._ranks: np.ndarray | None = None

    @classmethod
    def known(cls, type: Type, tags: np.ndarray, children: Sequence[Array],
              nulls: bool) -> UnionArray:
        """A union whose parts the caller made consistent: ``tags`` int32 in -1..k-1,
        ``children`` of ``type``'s members, each holding one value per row tagged with
        it, ``nulls`` whether a tag is -1.  No pass over the tags: a decoder that counted
        each member's rows already (columnar23) or parts of checked unions (concat,
        slices) skip the constructor's checks, a third of a union column's assembly."""
        self = cls.__new__(cls)
        self.type = type
        self._len = tags.size
        self.tags = read_only(tags)
        self.children = tuple(children)
        self.validity = read_only(tags >= 0) if nulls else None
        self._ranks = None
        return self

    def positions(self) -> np.ndarray:
        """Each row's index into its member's child (null rows: their rank among nulls)."""
        if self._ranks is None:
            self._ranks = read_only(group_ranks(self.tags, len(self.children)))
        return self._ranks

    def to_pylist(self, typed: bool = False) -> list[Any]:
        its = [iter(c.to_pylist(typed)) for c in self.children]
        tags = self.tags.tolist()
        if not typed:
            return [next(its[t]) if t >= 0 else None for t in tags]
        types = phys(self.type).types
        return [UnionValue(t, types[t], next(its[t])) if t >= 0 else None for t in tags]

    def _take(self, idx: np.ndarray) -> Array:
        tags = self.tags[idx]
        pos = self.positions()[idx]
        children = tuple(c._take(pos[tags == i]) for i, c in enumerate(self.children))
        return UnionArray(self.type, tags, children)

    def _slice(self, start: int, stop: int) -> Array:
        k = len(self.children)
        before = np.bincount(self.tags[:start] + 1, minlength=k + 1)[1:]
        inside = np.bincount(self.tags[start:stop] + 1, minlength=k + 1)[1:]
        children = tuple(c._slice(int(b), int(b + n))
                         for c, b, n in zip(self.children, before, inside, strict=True))
        tags = self.tags[start:stop]
        return UnionArray.known(self.type, tags, children,
                                self.validity is not None and not self.validity[start:stop].all())

    def _expand(self, mask: np.ndarray) -> Array:
        tags = np.full(mask.size, -1, np.int32)
        tags[mask] = self.tags
        return UnionArray.known(self.type, tags, self.children, True)  # mask: not all rows

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        members = phys(t).types
        children = tuple(concat([a.children[i] for a in arrays], type=m)
                         for i, m in enumerate(members))
        return UnionArray.known(t, np.concatenate([a.tags for a in arrays]), children,
                                any(a.validity is not None for a in arrays))

    def _fold(self) -> Array:
        return fold_nulls(self)


def null_array(type: Type, length: int) -> Array:
    """``length`` nulls of ``type``, as the array class of that type's shape.

    The concrete class (not a bare ``NullArray``) lets the result meet arrays of
    the same type in ``concat`` and ``.field()`` without special cases.
    """
    p = phys(type)
    n = operator.index(length)
    invalid = np.zeros(n, bool)
    if isinstance(p, EnumType):
        return PrimitiveArray(type, np.zeros(n, np.uint64), invalid)
    if isinstance(p, PrimitiveType):
        refuse_unsupported(p)
        name = p.name
        if p == NULL:
            return NullArray(n, type)
        if name in BINARY_KINDS:
            return BinaryArray(type, np.zeros(n + 1, np.int64), np.zeros(0, np.uint8), invalid)
        if name in OBJECT_KINDS:
            return PrimitiveArray(type, np.full(n, None, object), invalid)
        dt = {"time": NS_TIME, "duration": NS_DURATION, "bool": np.dtype(bool)}.get(name)
        if dt is None:
            dt = np.dtype(INT_DTYPES.get(name) or FLOAT_DTYPES[name])
        return PrimitiveArray(type, np.zeros(n, dt), invalid)
    if isinstance(p, RecordType):
        return StructArray(type, n, tuple(null_array(f.type, n) for f in p.fields), invalid)
    if isinstance(p, (ArrayType, SetType)):
        return ListArray(type, np.zeros(n + 1, np.int64), null_array(p.elem, 0), invalid)
    if isinstance(p, MapType):
        return MapArray(type, np.zeros(n + 1, np.int64), null_array(p.key, 0),
                        null_array(p.value, 0), invalid)
    if isinstance(p, UnionType):
        return UnionArray(type, np.full(n, -1, np.int32),
                          tuple(null_array(m, 0) for m in p.types))
    raise UnsupportedTypeError(f"no array form for type {type}")


def _concrete(a: Array) -> Array:
    return a.concrete() if isinstance(a, NullArray) else a


def concat(arrays: Iterable[Array], type: Type | None = None) -> Array:
    """One array of the rows of ``arrays`` (all of one type) in order.

    ``type`` is needed only when ``arrays`` may be empty.
    """
    arrs = list(arrays)
    if not arrs:
        if type is None:
            raise FormatError("concat of no arrays needs a type")
        return null_array(type, 0)
    t = arrs[0].type if type is None else type
    for a in arrs:
        if a.type != t:
            raise FormatError(f"cannot concatenate {a.type} with {t}")
    if len(arrs) == 1:
        return arrs[0]
    if all(isinstance(a, NullArray) for a in arrs):
        return NullArray(sum(len(a) for a in arrs), t)
    arrs = [_concrete(a) for a in arrs]
    cls = arrs[0].__class__
    if any(a.__class__ is not cls for a in arrs):
        raise FormatError(f"cannot concatenate differently shaped arrays of {t}")
    return cls._concat(t, arrs)


# ------------------------------------------------------------- folding ---
#
# An empty array is typed [null] and an all-null field null, so a column of
# string lists with some empty ones is a union of [string] and [null]: exact,
# but unusable in pandas or polars.  :func:`fold_nulls` merges such members into
# the sibling that can hold their values, the rule the Spark schema uses
# ("null yields to anything", arrays, sets and maps elementwise, records field
# by field): null into any type, [null] into [T], {a:null} into {a:T}.  Python
# values do not change; only the types do.  Members with data of different
# types (string and int64) stay a union.


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
