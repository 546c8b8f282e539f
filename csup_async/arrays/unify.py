"""Unions made into one Arrow-loadable type (``to_arrow``'s default, ``unions="struct"``).

Data of many super types reads as unions: exact, but an Arrow dense union is
refused by pandas and polars.  Here, after :func:`~.nested.fold_nulls`:

- records unify by field name (first seen order); a field a record lacks is null;
- arrays (and sets) unify their elements the same way;
- integers widen to the narrowest type that holds every member type exactly
  (int32|int64 -> int64; uint8|int8 -> int16; uint32|int32 -> int64; uint64 beside
  a signed member has no such type and stays a union).  The rule looks at types,
  never at values, so a file's Arrow schema follows from its metadata alone
  (``Schema.arrow``) and every batch of a stream has the same schema;
- whatever is left with two or more members (an int and a string, a time and a
  string) becomes ``struct<tag: int8, <member>: ..., ...>``: ``tag`` the row's
  member index, one child per member type (named by the type), null except in
  that member's rows.  No value changes; ``unions="dense"`` keeps a dense union.

``unions="supertype"`` ends as polars' ``read_ndjson`` and the Spark source do
instead (one plain type a column of many kinds has there): what is left of numbers
only (an int beside a float, a uint64 beside an int64) becomes ``float64``, anything
else (a string, a time, a record beside another kind) ``string`` holding each value's
JSON text (a string as it is).  Those change values (an integer past 2**53 is
rounded; a time is its text), so each is noted, as every change is.

Each change of type is noted (``ScanResult.conversions``); docs/format.md,
"Results of many types", is the user's description.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from ..model.kinds import INT_DTYPES
from ..model.types import (
    NULL,
    PRIMITIVE_BY_NAME,
    ArrayType,
    Field,
    MapType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from .from_python import from_pylist
from .model import Array, PrimitiveArray
from .nested import (
    ListArray,
    MapArray,
    NullArray,
    StructArray,
    UnionArray,
    concat,
    has_union,
    null_array,
)

__all__ = ["unify", "UNION_MODES", "TAG_FIELD"]

UNION_MODES = ("struct", "dense", "supertype")
#: The struct form's field naming each row's member.
TAG_FIELD = "tag"
_INT8 = PRIMITIVE_BY_NAME["int8"]
_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")


def unify(a: Array, path: str, notes: list[str], unions: str = "struct") -> Array:
    """``a`` with every union in it unified (see the module); changes noted in ``notes``."""
    if not has_union(a.type):
        return a
    dense = _walk(a, path, notes, _union)
    if unions == "dense":
        return dense
    return _walk(dense, path, notes,
                 _supertype_form if unions == "supertype" else _struct_form)


def _walk(a: Array, path: str, notes: list[str],
          on_union: Callable[[UnionArray, str, list[str]], Array]) -> Array:
    """``a`` rebuilt bottom-up, each union array replaced by ``on_union`` of it."""
    t = a.type
    if not has_union(t):
        return a
    if isinstance(a, UnionArray):
        return on_union(a, path, notes)
    if isinstance(a, ListArray) and isinstance(t, (ArrayType, SetType)):
        child = _walk(_elements(a), f"{path}[]", notes, on_union)
        kind = SetType if isinstance(t, SetType) else ArrayType
        return ListArray(kind(child.type), a.offsets - a.offsets[0], child, a.validity)
    if isinstance(a, MapArray) and isinstance(t, MapType):
        keys = _walk(a.keys, f"{path}{{key}}", notes, on_union)
        vals = _walk(a.values, f"{path}{{value}}", notes, on_union)
        return MapArray(MapType(keys.type, vals.type), a.offsets, keys, vals, a.validity)
    if isinstance(a, StructArray) and isinstance(t, RecordType):
        kids = [_walk(c, _join(path, f.name), notes, on_union)
                for f, c in zip(t.fields, a.fields, strict=True)]
        rt = RecordType(tuple(Field(f.name, c.type) for f, c in zip(t.fields, kids,
                                                                    strict=True)))
        return StructArray(rt, len(a), kids, a.validity)
    return a


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _elements(a: ListArray) -> Array:
    lo, hi = int(a.offsets[0]), int(a.offsets[-1])
    return a.values if (lo, hi) == (0, len(a.values)) else a.values[lo:hi]


def _group_key(t: Type) -> object:
    if isinstance(t, RecordType):
        return "record"
    if isinstance(t, ArrayType):
        return "array"
    if isinstance(t, SetType):
        return "set"
    return t


def _flatten(a: UnionArray, path: str, notes: list[str]
             ) -> tuple[list[Array], np.ndarray, np.ndarray]:
    """The members of ``a`` (each unified; a member that is itself a union spliced
    in), each row's member (-1: null) and its index into that member."""
    pos = a.positions()
    members: list[Array] = []
    which = np.full(len(a), -1, np.int64)
    at = np.zeros(len(a), np.int64)
    for i, c in enumerate(a.children):
        c = _walk(c, path, notes, _union)
        here = a.tags == i
        if isinstance(c, UnionArray):
            p = pos[here]
            sub = c.tags[p].astype(np.int64)
            which[here] = np.where(sub >= 0, sub + len(members), -1)
            at[here] = c.positions()[p]
            members += c.children
        else:
            which[here] = len(members)
            at[here] = pos[here]
            members.append(c)
    return members, which, at


def _union(a: UnionArray, path: str, notes: list[str]) -> Array:
    """Members of one kind merged, integers widened: one plain array where that
    leaves one member, else a union of distinct kinds (no member a union)."""
    kids, which, at = _flatten(a, path, notes)
    groups: dict[object, list[int]] = {}
    for i, c in enumerate(kids):
        if c.type != NULL:
            groups.setdefault(_group_key(c.type), []).append(i)
    member_of = np.full(len(kids) + 1, -1, np.int64)  # last: null rows
    base = np.zeros(len(kids) + 1, np.int64)
    merged: list[Array] = []
    for j, idx in enumerate(groups.values()):
        parts = [kids[i] for i in idx]
        merged.append(parts[0] if len(parts) == 1 else _merge(parts, path, notes))
        offsets = np.cumsum([0] + [len(p) for p in parts])
        member_of[idx] = j
        base[idx] = offsets[:-1]
    tags = member_of[which]  # which -1 picks the last entry: -1
    rows = np.where(tags >= 0, base[which] + at, 0)
    if not merged:
        return NullArray(len(a))
    if len(merged) == 1:
        return _spread(merged[0], tags == 0, rows)
    widened = _widen(merged, tags, rows)
    if widened is not None:
        notes.append(f"{path}: union {a.type} widened to {widened.type}")
        return widened
    children = [m.take(rows[tags == j]) for j, m in enumerate(merged)]
    return UnionArray(UnionType(tuple(m.type for m in merged)), tags.astype(np.int32),
                      children)


def _struct_form(a: UnionArray, path: str, notes: list[str]) -> Array:
    """A union of distinct kinds as ``struct<tag, member...>`` (see the module)."""
    merged = [_walk(c, path, notes, _struct_form) for c in a.children]
    tags = a.tags.astype(np.int64)
    rows = a.positions()
    valid = tags >= 0
    for j, m in enumerate(merged):  # a member's typed null is a null row here
        if m.validity is not None:
            here = tags == j
            valid[here] = m.validity[rows[here]]
    tags = np.where(valid, tags, -1)
    types = [m.type for m in merged]
    fields = [PrimitiveArray(_INT8, np.where(valid, tags, 0).astype(np.int8), valid)]
    fields += [_spread(m, tags == j, rows) for j, m in enumerate(merged)]
    names = _member_names(types)
    rt = RecordType((Field(TAG_FIELD, _INT8),
                     *(Field(nm, t) for nm, t in zip(names, types, strict=True))))
    notes.append(f"{path}: union {a.type} as struct<{TAG_FIELD}, "
                 f"{', '.join(names)}> ({TAG_FIELD}: the member's index)")
    return StructArray(rt, len(a), fields, valid)


_NUMBERS = (*_SIGNED, *_UNSIGNED, "float16", "float32", "float64")
_FLOAT64 = PRIMITIVE_BY_NAME["float64"]
_STRING = PRIMITIVE_BY_NAME["string"]


def _supertype_form(a: UnionArray, path: str, notes: list[str]) -> Array:
    """A union of distinct kinds as polars and Spark type it: numbers as ``float64``,
    anything else as ``string`` of each value's JSON text (see the module)."""
    merged = [_walk(c, path, notes, _supertype_form) for c in a.children]
    tags = a.tags.astype(np.int64)
    rows = a.positions()
    if all(isinstance(m, PrimitiveArray) and isinstance(m.type, PrimitiveType)
           and m.type.name in _NUMBERS for m in merged):
        cast = [PrimitiveArray(_FLOAT64, m.values.astype(np.float64), m.validity)
                for m in merged]
        offsets = np.cumsum([0] + [len(m) for m in merged])
        at = np.where(tags >= 0, offsets[np.maximum(tags, 0)] + rows, offsets[-1])
        notes.append(f"{path}: union {a.type} as float64 (polars' and Spark's supertype; "
                     "an integer past 2**53 is rounded)")
        return concat([*cast, null_array(_FLOAT64, 1)], type=_FLOAT64).take(at)
    from .jsonout import json_value

    def text(v: object) -> str | None:
        if v is None or isinstance(v, str):
            return v

        return json.dumps(json_value(v), ensure_ascii=False, separators=(",", ":"))

    pylists = [m.to_pylist() for m in merged]
    values = [None if t < 0 else text(pylists[t][r])
              for t, r in zip(tags.tolist(), rows.tolist(), strict=True)]

    notes.append(f"{path}: union {a.type} as string (polars' and Spark's supertype: each "
                 "value's JSON text, a string as it is)")
    return from_pylist(_STRING, values)


def _member_names(types: list[Type]) -> list[str]:
    names = [str(t) for t in types]
    return [n if n != TAG_FIELD else f"{n}_" for n in names]


def _spread(member: Array, here: np.ndarray, rows: np.ndarray) -> Array:
    """``member``'s values at the rows ``here`` (``rows`` indexes ``member``), null
    at every other row."""
    if here.all() and rows.size == len(member) and np.array_equal(
            rows, np.arange(rows.size)):
        return member
    padded = concat([member, null_array(member.type, 1)], type=member.type)
    return padded.take(np.where(here, rows, len(member)))


def _widen(merged: list[Array], tags: np.ndarray, rows: np.ndarray) -> Array | None:
    """Integer members as one integer array of the narrowest type that holds every
    member type (None when there is none)."""
    names = []
    for m in merged:
        if not (isinstance(m, PrimitiveArray) and isinstance(m.type, PrimitiveType)
                and m.type.name in INT_DTYPES and m.type.name in _SIGNED + _UNSIGNED):
            return None
        names.append(m.type.name)
    if all(n in _SIGNED for n in names):
        target = max(names, key=_SIGNED.index)
    elif all(n in _UNSIGNED for n in names):
        target = max(names, key=_UNSIGNED.index)
    else:  # signed and unsigned: a signed type one step wider than each unsigned one
        if "uint64" in names:
            return None  # no integer type holds both uint64 and a signed type
        need = [_SIGNED.index(n) if n in _SIGNED else _UNSIGNED.index(n) + 1 for n in names]
        target = _SIGNED[max(need)]
    t = PRIMITIVE_BY_NAME[target]
    dt = np.dtype(INT_DTYPES[target])
    cast = [PrimitiveArray(t, m.values.astype(dt), m.validity) for m in merged]
    offsets = np.cumsum([0] + [len(m) for m in merged])
    at = np.where(tags >= 0, offsets[np.maximum(tags, 0)] + rows, offsets[-1])
    return concat([*cast, null_array(t, 1)], type=t).take(at)


def _merge(parts: list[Array], path: str, notes: list[str]) -> Array:
    """Members of one kind (records, arrays or sets) as one array, rows in part order."""
    parts = [p.concrete() if isinstance(p, NullArray) else p for p in parts]
    if all(p.type == parts[0].type for p in parts):  # one type, from spliced unions
        return concat(parts, type=parts[0].type)
    if isinstance(parts[0].type, RecordType):
        notes.append(f"{path}: records of {len(parts)} types unified by field name "
                     "(a field a record lacks is null)")
        return _merge_records(parts, path, notes)
    return _merge_lists(parts, path, notes)


def _pieces_union(pieces: list[Array | None], sizes: list[int]) -> UnionArray:
    """Per part, its values (or None: nulls) as one union over their distinct types."""
    index: dict[Type, int] = {}
    for p in pieces:
        if p is not None:
            index.setdefault(p.type, len(index))
    tags = np.concatenate([np.full(n, -1 if p is None else index[p.type], np.int32)
                           for p, n in zip(pieces, sizes, strict=True)]
                          or [np.zeros(0, np.int32)])
    children = [concat([p for p in pieces if p is not None and p.type == t], type=t)
                for t in index]
    return UnionArray(UnionType(tuple(index)), tags, children)


def _merge_records(parts: list[Array], path: str, notes: list[str]) -> Array:
    names = list(dict.fromkeys(f.name for p in parts for f in p.type.fields))  # type: ignore[attr-defined]
    sizes = [len(p) for p in parts]
    fields = []
    for name in names:
        pieces = [_field_or_none(p, name) for p in parts]
        fields.append(_walk(_pieces_union(pieces, sizes), _join(path, name), notes, _union))
    validity = np.concatenate([np.ones(len(p), bool) if p.validity is None else p.validity
                               for p in parts])
    rt = RecordType(tuple(Field(n, f.type) for n, f in zip(names, fields, strict=True)))
    return StructArray(rt, sum(sizes), fields, validity)


def _field_or_none(p: Array, name: str) -> Array | None:
    assert isinstance(p, StructArray)
    for f, a in zip(p.type.fields, p.fields, strict=True):  # type: ignore[attr-defined]
        if f.name == name:
            return a
    return None


def _merge_lists(parts: list[Array], path: str, notes: list[str]) -> Array:
    notes.append(f"{path}: arrays of {len(parts)} element types unified")
    lists = [p for p in parts if isinstance(p, ListArray)]
    assert len(lists) == len(parts)
    elems = [_elements(p) for p in lists]
    values = _walk(_pieces_union(list(elems), [len(e) for e in elems]), f"{path}[]", notes,
                   _union)
    lengths = np.concatenate([np.diff(p.offsets) for p in lists])
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    validity = np.concatenate([np.ones(len(p), bool) if p.validity is None else p.validity
                               for p in lists])
    kind = SetType if isinstance(parts[0].type, SetType) else ArrayType
    return ListArray(kind(values.type), offsets, values, validity)
