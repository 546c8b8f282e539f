"""The array model: one class per shape of data (primitive, binary, null, list, map,
struct, union), immutable, every row-moving operation vectorised, and the folding
of null-only union members (see the package docstring for the Python mapping)."""

from __future__ import annotations

import copy
import operator
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.errors import ColumnNotFoundError, CsupError, FormatError, UnsupportedTypeError
from ..model.kinds import (
    BIG_INTS,
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
from .arrow import export
from .buffers import (
    concat_validity,
    gather_lengths,
    group_ranks,
    norm_offsets,
    norm_validity,
    null_out,
    object_array,
    offsets_from_lengths,
    range_indices,
    read_only,
    rebased_offsets,
    scatter_offsets,
    scatter_validity,
    take_binary,
)

if TYPE_CHECKING:
    import pyarrow as pa


class ArrayIndexError(CsupError, IndexError):
    """A row index or ``take`` index outside the array (an ``IndexError`` too, for iteration)."""


class Array:
    """Base of every array: ``type``, ``len()``, ``validity`` (None = no nulls).

    ``kind`` names the shape ("primitive", "binary", "null", "list", "map",
    "struct", "union"): what the Arrow export dispatches on.
    """

    __slots__ = ("_len", "type", "validity")

    kind: str = ""

    type: Type
    validity: np.ndarray | None
    _len: int

    def __len__(self) -> int:
        return self._len

    @property
    def null_count(self) -> int:
        if self.validity is None:
            return 0
        return self._len - int(np.count_nonzero(self.validity))

    def is_valid(self, i: int) -> bool:
        i = self._index(i)
        return self.validity is None or bool(self.validity[i])

    def _index(self, i: int) -> int:
        i = operator.index(i)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise ArrayIndexError(f"row {i} outside an array of {self._len}")
        return i

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._len)
            if step == 1:
                return self._slice(start, max(start, stop))
            return self.take(np.arange(start, stop, step, dtype=np.int64))
        i = self._index(i)
        return self._slice(i, i + 1).to_pylist()[0]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_pylist())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.type}, len={self._len}, nulls={self.null_count})"

    def to_pylist(self, typed: bool = False) -> list[Any]:
        """Rows as Python values (module docstring); ``typed`` keeps union members."""
        raise NotImplementedError

    def to_numpy(self) -> np.ndarray:
        """An object array of the Python values (fixed-width primitives override this);
        a union that :func:`fold_nulls` reduces to one type gives that type's array."""
        folded = fold_nulls(self)
        # a rebuilt array of the same type (a list of an unfoldable union) would fold
        # again forever: only a change of type can reach a faster conversion
        if folded.type != self.type:
            return folded.to_numpy()
        return object_array(self.to_pylist())

    def to_arrow(self, fold: bool = True) -> pa.Array:
        """A pyarrow Array (mapping in the module docstring), sharing buffers where it can.

        ``fold`` (default) first merges union members that only hold nulls of a
        sibling's shape (``[null]`` beside ``[string]``) into it: :func:`fold_nulls`."""
        return export(fold_nulls(self) if fold else self)

    def take(self, indices: Any) -> Array:
        """Rows ``indices`` (negative counts from the end), in that order."""
        idx = np.asarray(indices)
        if idx.ndim != 1:
            raise ArrayIndexError("take indices must be one-dimensional")
        if idx.dtype.kind not in "iu" and idx.size:
            raise ArrayIndexError(f"take indices must be integers, not {idx.dtype}")
        idx = idx.astype(np.int64, copy=False)
        if idx.size:
            lo, hi = int(idx.min()), int(idx.max())
            if lo < -self._len or hi >= self._len:
                raise ArrayIndexError(f"take index outside an array of {self._len}")
            if lo < 0:
                idx = np.where(idx < 0, idx + self._len, idx)
        return self._take(idx)

    def slice(self, start: int | None = None, stop: int | None = None) -> Array:
        """Rows ``start:stop`` (Python slice rules), sharing buffers."""
        start, stop, _ = slice(start, stop).indices(self._len)
        return self._slice(start, max(start, stop))

    def expand(self, mask: Any) -> Array:
        """Place this array's values at the True positions of ``mask``; nulls elsewhere.

        How a column's present values (a presence column) become one value per row.
        """
        m = np.asarray(mask)
        if m.ndim != 1 or m.dtype != np.bool_:
            raise FormatError("expand mask must be a 1-D boolean array")
        count = int(np.count_nonzero(m))
        if count != self._len:
            raise FormatError(f"presence marks {count} values but the column holds {self._len}")
        if count == m.size:
            return self
        return self._expand(m)

    def with_type(self, t: Type) -> Array:
        """The same data under a named/error type (or back to the plain type)."""
        if phys(t) != phys(self.type):
            raise FormatError(f"cannot view {self.type} data as {t}")
        new = copy.copy(self)
        new.type = t
        return new

    # per-class implementations
    def _take(self, idx: np.ndarray) -> Array:
        raise NotImplementedError

    def _slice(self, start: int, stop: int) -> Array:
        raise NotImplementedError

    def _expand(self, mask: np.ndarray) -> Array:
        raise NotImplementedError

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        raise NotImplementedError


def _coerce_values(t: Type, p: Type, values: np.ndarray) -> np.ndarray:
    kind = values.dtype.kind
    if isinstance(p, EnumType):
        if kind not in "iu":
            raise FormatError(f"enum positions must be integers, not {values.dtype}")
        return values
    if not isinstance(p, PrimitiveType):
        raise FormatError(f"{t} is not a primitive type")
    refuse_unsupported(p)
    name = p.name
    if name in BINARY_KINDS or p == NULL:
        home = "NullArray" if p == NULL else "BinaryArray"
        raise FormatError(f"{name} values belong in a {home}")
    if name in INT_DTYPES:
        ok = kind in "iu"
    elif name in FLOAT_DTYPES:
        ok = kind == "f"
    elif name == "bool":
        ok = kind == "b"
    elif name == "time":
        if kind == "M":
            return values.astype(NS_TIME, copy=False)
        if kind in "iu":
            return values.astype(np.int64, copy=False).view(NS_TIME)
        ok = False
    elif name == "duration":
        if kind == "m":
            return values.astype(NS_DURATION, copy=False)
        if kind in "iu":
            return values.astype(np.int64, copy=False).view(NS_DURATION)
        ok = False
    else:  # the object kinds
        if kind in "iu" and name in BIG_INTS:
            return values.astype(object)
        ok = kind == "O"
    if not ok:
        raise FormatError(f"{values.dtype} values cannot hold {name}")
    return values


class PrimitiveArray(Array):
    """Fixed-width values in one numpy array (object dtype for ip/net/type/128-256-bit)."""

    __slots__ = ("values",)
    kind = "primitive"

    def __init__(self, type: Type, values: Any, validity: Any = None) -> None:
        v = np.asarray(values)
        if v.ndim != 1:
            raise FormatError("primitive values must be one-dimensional")
        p = phys(type)
        v = _coerce_values(type, p, v)
        self.type = type
        self._len = v.size
        self.validity = norm_validity(validity, v.size)
        self.values = read_only(v)
        if isinstance(p, EnumType) and v.size:
            live = v if self.validity is None else v[self.validity]
            if live.size and (int(live.max()) >= len(p.symbols) or int(live.min()) < 0):
                raise FormatError(f"enum position out of range for {type}")

    def _name(self) -> str:
        p = phys(self.type)
        return "enum" if isinstance(p, EnumType) else p.name

    def to_pylist(self, typed: bool = False) -> list[Any]:
        p = phys(self.type)
        vals = self.values
        if isinstance(p, EnumType):
            if self.validity is not None:
                if not p.symbols:
                    return [None] * self._len
                vals = np.where(self.validity, vals, 0)
            syms = p.symbols
            out: list[Any] = [syms[i] for i in vals.tolist()]
        elif p.name in ("time", "duration"):
            out = list(vals)  # numpy datetime64/timedelta64 scalars, not .tolist()'s ints
        elif p.name in BIG_INTS:
            out = [None if x is None else int(x) for x in vals.tolist()]
        else:
            out = vals.tolist()
        return null_out(out, self.validity)

    def to_numpy(self) -> np.ndarray:
        """The values (masked where null) for fixed-width kinds; objects for enum/ip/net/..."""
        name = self._name()
        if name == "enum" or name in OBJECT_KINDS:
            return super().to_numpy()
        if self.validity is None:
            return self.values
        return np.ma.MaskedArray(self.values, mask=~self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        return PrimitiveArray(self.type, self.values[idx],
                              None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return PrimitiveArray(self.type, self.values[start:stop],
                              None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        if self.values.dtype == object:
            out = np.full(mask.size, None, dtype=object)
        else:
            out = np.zeros(mask.size, dtype=self.values.dtype)
        out[mask] = self.values
        return PrimitiveArray(self.type, out, scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        return PrimitiveArray(t, np.concatenate([a.values for a in arrays]),
                              concat_validity(arrays))


class BinaryArray(Array):
    """Strings or bytes: int64 offsets (n+1) into one uint8 buffer.

    ``utf8_checked`` says the values are known to be valid UTF-8 (the decoder
    checked them in one pass): ``to_arrow`` then skips Arrow's own full
    validation, a second pass over every byte.  Takes, slices and expansions
    keep whole values, so they keep the flag.
    """

    __slots__ = ("data", "offsets", "utf8_checked")
    kind = "binary"

    def __init__(self, type: Type, offsets: Any, data: Any, validity: Any = None, *,
                 utf8_checked: bool = False) -> None:
        p = phys(type)
        if not (isinstance(p, PrimitiveType) and p.name in BINARY_KINDS):
            raise FormatError(f"BinaryArray holds string or bytes, not {type}")
        if isinstance(data, np.ndarray):
            d = data if data.dtype == np.uint8 else data.view(np.uint8)
        else:
            d = np.frombuffer(data, dtype=np.uint8)
        if d.ndim != 1:
            raise FormatError("binary data must be one-dimensional")
        self.type = type
        self.data = read_only(d)
        self.offsets = norm_offsets(offsets, d.size, str(type))
        self._len = self.offsets.size - 1
        self.validity = norm_validity(validity, self._len)
        self.utf8_checked = utf8_checked

    def to_pylist(self, typed: bool = False) -> list[Any]:
        o = self.offsets
        buf = self.data[o[0]:o[-1]].tobytes()
        rel = (o - o[0]).tolist()
        valid = None if self.validity is None else self.validity.tolist()
        if phys(self.type).name == "bytes":
            out: list[Any] = [buf[a:b] for a, b in pairwise(rel)]
            return null_out(out, self.validity)
        if buf.isascii():
            s = buf.decode("ascii")
            out = [s[a:b] for a, b in pairwise(rel)]
            return null_out(out, self.validity)
        try:
            if valid is None:
                return [buf[a:b].decode() for a, b in pairwise(rel)]
            return [buf[a:b].decode() if ok else None
                    for (a, b), ok in zip(pairwise(rel), valid, strict=True)]
        except UnicodeDecodeError as e:
            raise FormatError(f"string value is not valid UTF-8: {e.reason}") from e

    def _take(self, idx: np.ndarray) -> Array:
        offsets, data = take_binary(self.offsets, self.data, idx, self.validity)
        return BinaryArray(self.type, offsets, data,
                           None if self.validity is None else self.validity[idx],
                           utf8_checked=self.utf8_checked)

    def _slice(self, start: int, stop: int) -> Array:
        return BinaryArray(self.type, self.offsets[start:stop + 1], self.data,
                           None if self.validity is None else self.validity[start:stop],
                           utf8_checked=self.utf8_checked)

    def _expand(self, mask: np.ndarray) -> Array:
        o = self.offsets
        return BinaryArray(self.type, scatter_offsets(o, mask), self.data[o[0]:o[-1]],
                           scatter_validity(mask, self.validity),
                           utf8_checked=self.utf8_checked)

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        data = np.concatenate([a.data[a.offsets[0]:a.offsets[-1]] for a in arrays])
        return BinaryArray(t, rebased_offsets(arrays), data, concat_validity(arrays),
                           utf8_checked=all(a.utf8_checked for a in arrays))


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
        return UnionArray(self.type, self.tags[start:stop], children)

    def _expand(self, mask: np.ndarray) -> Array:
        tags = np.full(mask.size, -1, np.int32)
        tags[mask] = self.tags
        return UnionArray(self.type, tags, self.children)

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        members = phys(t).types
        children = tuple(concat([a.children[i] for a in arrays], type=m)
                         for i, m in enumerate(members))
        return UnionArray(t, np.concatenate([a.tags for a in arrays]), children)


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
# but unusable in pandas or polars.  ``fold_nulls`` merges such members into
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
