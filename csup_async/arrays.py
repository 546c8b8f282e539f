"""The in-memory columnar result model: numpy-backed, Arrow-shaped arrays.

A scan can carry millions of rows, so values stay in numpy buffers (fixed-width
values, offsets + bytes for strings, offsets + child arrays for nesting) and
every row-moving operation (``take``, ``slice``, ``expand``, ``concat``,
``combine``) is vectorised for the primitive, binary and list kinds.  Python
objects appear only where the caller asks for them (``to_pylist``) and for the
few kinds numpy has no dtype for (128/256-bit ints, ip, net, type values).

Arrays are immutable: constructors store read-only views of their inputs
(never modifying the caller's arrays) and every operation returns a new array,
so slices and takes can share buffers safely.

The Python mapping (``to_pylist``, ``__getitem__``), used everywhere:

=====================================  =============================================
super type                             Python
=====================================  =============================================
int8 … int256, uint8 … uint256         ``int``
float16, float32, float64              ``float``
string / bytes / bool / null           ``str`` / ``bytes`` / ``bool`` / ``None``
time / duration                        ``numpy.datetime64`` / ``numpy.timedelta64`` (ns)
ip / net                               ``ipaddress`` addresses / networks
type                                   a :class:`csup_async.types.Type`
record                                 ``dict`` (field order kept)
array / set                            ``list`` (a set in its stored order)
map                                    ``dict``; when the key type contains a record,
                                       array, set or map (unhashable in Python) every
                                       value of that map type is instead a ``list`` of
                                       ``(key, value)`` tuples — decided by the type,
                                       never by the data, so a column is uniform
union                                  its member's value (``typed=True``:
                                       :class:`UnionValue`)
enum                                   its symbol (``str``)
named / error                          the underlying / wrapped value
=====================================  =============================================

``to_arrow`` maps ip, net, type and 128/256-bit ints to their string form
(``str(value)``; type values in Super syntax), strings to ``large_string`` and
bytes to ``large_binary`` (our offsets are int64, so both are zero-copy), arrays
and sets to ``large_list``, time to ``timestamp[ns, UTC]``, enums to
``dictionary<int32, string>``; maps with primitive keys to ``map`` and other
maps to ``large_list<struct<key, value>>``; unions to dense unions (a null row
is a null of the first member, as Arrow unions have no validity: their
``null_count`` is 0 though ``to_pylist`` gives None);
named and error types to their underlying array, a record field of a named type
carrying ``{"csup.name": name}`` field metadata.
"""

from __future__ import annotations

import copy
import datetime as _dt
import ipaddress
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ColumnNotFoundError, CsupError, EncodeError, FormatError, UnsupportedTypeError
from .types import (
    NULL,
    ArrayType,
    EnumType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from .values import UnionValue

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Array", "PrimitiveArray", "BinaryArray", "NullArray", "ListArray", "MapArray",
    "StructArray", "UnionArray", "UnionValue", "ArrayIndexError", "MissingDependencyError",
    "concat", "null_array", "combine", "fold_nulls", "from_pylist",
]


class ArrayIndexError(CsupError, IndexError):
    """A row index or ``take`` index outside the array (an ``IndexError`` too, for iteration)."""


class MissingDependencyError(CsupError, ImportError):
    """An optional dependency (pyarrow) is needed for this call and is not installed."""


# ------------------------------------------------------------------ kinds ---

_INT_DTYPES: dict[str, type[np.integer]] = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
}
_FLOAT_DTYPES: dict[str, type[np.floating]] = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
}
_INT_RANGES: dict[str, tuple[int, int]] = {}
for _bits in (8, 16, 32, 64, 128, 256):
    _INT_RANGES[f"int{_bits}"] = (-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1)
    _INT_RANGES[f"uint{_bits}"] = (0, (1 << _bits) - 1)
_BIG_INTS = frozenset({"int128", "int256", "uint128", "uint256"})
_OBJECT_KINDS = _BIG_INTS | {"ip", "net", "type"}
_BINARY_KINDS = frozenset({"string", "bytes"})
_UNSUPPORTED = frozenset({"float128", "float256", "decimal32", "decimal64", "decimal128",
                          "decimal256"})
_NS_TIME = np.dtype("datetime64[ns]")
_NS_DURATION = np.dtype("timedelta64[ns]")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_INT64_MIN, _INT64_MAX = _INT_RANGES["int64"]


def _phys(t: Type) -> Type:
    """The type whose shape the data has: named and error types add no data."""
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    return t


def _refuse_unsupported(p: PrimitiveType) -> None:
    if p.name in _UNSUPPORTED:
        raise UnsupportedTypeError(
            f"type {p.name} has no faithful Python form and is not supported")


def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only view: callers' arrays stay writable, ours cannot be changed through them."""
    v = a.view()
    v.flags.writeable = False
    return v


def _norm_validity(validity: Any, n: int) -> np.ndarray | None:
    if validity is None:
        return None
    v = np.asarray(validity)
    if v.dtype != np.bool_:
        if v.dtype.kind not in "biu":
            raise FormatError(f"validity must be booleans, not {v.dtype}")
        v = v.astype(bool)
    if v.shape != (n,):
        raise FormatError(f"validity has shape {v.shape}, expected ({n},)")
    if v.all():
        return None
    return _ro(v)


def _norm_offsets(offsets: Any, child_len: int, what: str) -> np.ndarray:
    o = np.asarray(offsets)
    if o.ndim != 1 or o.size == 0 or o.dtype.kind not in "iu":
        raise FormatError(f"{what} offsets must be a non-empty 1-D integer array")
    o = o.astype(np.int64, copy=False)
    if o[0] < 0 or o[-1] > child_len:
        raise FormatError(f"{what} offsets {int(o[0])}..{int(o[-1])} exceed {child_len} values")
    if o.size > 1 and bool((o[1:] < o[:-1]).any()):
        raise FormatError(f"{what} offsets are not monotonic")
    return _ro(o)


def _scatter_validity(mask: np.ndarray, validity: np.ndarray | None) -> np.ndarray:
    out = mask.copy()
    if validity is not None:
        out[mask] = validity
    return out


def _concat_validity(arrays: Sequence[Array]) -> np.ndarray | None:
    if all(a.validity is None for a in arrays):
        return None
    return np.concatenate([np.ones(len(a), bool) if a.validity is None else a.validity
                           for a in arrays])


def _offsets_from_lengths(lengths: np.ndarray) -> np.ndarray:
    out = np.empty(lengths.size + 1, np.int64)
    out[0] = 0
    np.cumsum(lengths, out=out[1:])
    return out


def _range_indices(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``range(s, s + n)`` for every (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    dest = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(starts - dest, lengths)


def _take_binary(offsets: np.ndarray, data: np.ndarray, idx: np.ndarray,
                 validity: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of strings or bytes ``idx`` (-1 and invalid values: empty): in C, a
    memcpy per value, where numpy needs an 8-byte index per byte (see decode.kernels)."""
    from .decode.kernels import take_binary  # imported on first use: not at startup

    return take_binary(offsets, data, idx, validity)


def _route(ids: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For each row, its position in the parts laid end to end (-1 where its part's base
    is negative): see decode.kernels.route."""
    from .decode.kernels import route

    return route(ids if ids.dtype == np.int32 else ids.astype(np.int32), base)


def _gather_lengths(offsets: np.ndarray, idx: np.ndarray,
                    validity: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of rows ``idx``; null rows get length 0 so garbage is dropped."""
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    if validity is not None:
        lengths = np.where(validity[idx], lengths, 0)
    return starts, lengths


def _scatter_offsets(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    lengths = np.zeros(mask.size, np.int64)
    lengths[mask] = np.diff(offsets)
    return _offsets_from_lengths(lengths)


def _rebased_offsets(arrays: Sequence[Any]) -> np.ndarray:
    """Offsets of the concatenation of ``arrays`` whose children are trimmed to their ranges."""
    parts = [np.zeros(1, np.int64)]
    base = 0
    for a in arrays:
        o = a.offsets
        parts.append(o[1:] - o[0] + base)
        base += int(o[-1] - o[0])
    return np.concatenate(parts)


def _group_ranks(keys: np.ndarray, nkeys: int) -> np.ndarray:
    """For each position, how many earlier positions have the same key (keys in -1..nkeys-1).

    This is the dense-union / per-part position of a row.  A mask per key is
    cheapest for the usual handful of keys; a stable sort scales to many.
    """
    n = keys.size
    ranks = np.zeros(n, np.int64)
    if n == 0:
        return ranks
    if nkeys <= 8:
        for k in range(-1, nkeys):
            m = keys == k
            c = int(np.count_nonzero(m))
            if c:
                ranks[m] = np.arange(c, dtype=np.int64)
        return ranks
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys.astype(np.int64) + 1, minlength=nkeys + 1)
    starts = np.cumsum(counts) - counts
    ranks[order] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    return ranks


group_ranks = _group_ranks


def _key_hashable(t: Type) -> bool:
    """Whether every value of ``t`` maps to a hashable Python value (decides map → dict)."""
    p = _phys(t)
    if isinstance(p, (RecordType, ArrayType, SetType, MapType)):
        return False
    if isinstance(p, UnionType):
        return all(_key_hashable(m) for m in p.types)
    return True


def _object_array(values: list[Any]) -> np.ndarray:
    # np.array(values) would turn nested lists into extra dimensions.
    return np.fromiter(values, dtype=object, count=len(values))


def _null_out(out: list[Any], validity: np.ndarray | None) -> list[Any]:
    if validity is not None:
        for i in np.flatnonzero(~validity).tolist():
            out[i] = None
    return out


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError as e:
        raise MissingDependencyError(
            "to_arrow needs pyarrow: pip install 'csup-async[arrow]'") from e
    return pyarrow


def _bitmap(pa: Any, validity: np.ndarray | None) -> Any:
    if validity is None:
        return None
    return pa.py_buffer(np.packbits(validity, bitorder="little"))


def _buf(pa: Any, a: np.ndarray) -> Any:
    return pa.py_buffer(np.ascontiguousarray(a))


# ------------------------------------------------------------------ base ---


class Array:
    """Base of every array: ``type``, ``len()``, ``validity`` (None = no nulls)."""

    __slots__ = ("_len", "type", "validity")

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
        if folded is not self:
            return folded.to_numpy()
        return _object_array(self.to_pylist())

    def to_arrow(self, fold: bool = True) -> pa.Array:
        """A pyarrow Array (mapping in the module docstring), sharing buffers where it can.

        ``fold`` (default) first merges union members that only hold nulls of a
        sibling's shape (``[null]`` beside ``[string]``) into it: :func:`fold_nulls`."""
        return (fold_nulls(self) if fold else self)._to_arrow(_pyarrow())

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
        if _phys(t) != _phys(self.type):
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

    def _to_arrow(self, pa: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        raise NotImplementedError


# ------------------------------------------------------------- primitive ---


def _coerce_values(t: Type, p: Type, values: np.ndarray) -> np.ndarray:
    kind = values.dtype.kind
    if isinstance(p, EnumType):
        if kind not in "iu":
            raise FormatError(f"enum positions must be integers, not {values.dtype}")
        return values
    if not isinstance(p, PrimitiveType):
        raise FormatError(f"{t} is not a primitive type")
    _refuse_unsupported(p)
    name = p.name
    if name in _BINARY_KINDS or p == NULL:
        home = "NullArray" if p == NULL else "BinaryArray"
        raise FormatError(f"{name} values belong in a {home}")
    if name in _INT_DTYPES:
        ok = kind in "iu"
    elif name in _FLOAT_DTYPES:
        ok = kind == "f"
    elif name == "bool":
        ok = kind == "b"
    elif name == "time":
        if kind == "M":
            return values.astype(_NS_TIME, copy=False)
        if kind in "iu":
            return values.astype(np.int64, copy=False).view(_NS_TIME)
        ok = False
    elif name == "duration":
        if kind == "m":
            return values.astype(_NS_DURATION, copy=False)
        if kind in "iu":
            return values.astype(np.int64, copy=False).view(_NS_DURATION)
        ok = False
    else:  # the object kinds
        if kind in "iu" and name in _BIG_INTS:
            return values.astype(object)
        ok = kind == "O"
    if not ok:
        raise FormatError(f"{values.dtype} values cannot hold {name}")
    return values


class PrimitiveArray(Array):
    """Fixed-width values in one numpy array (object dtype for ip/net/type/128-256-bit)."""

    __slots__ = ("values",)

    def __init__(self, type: Type, values: Any, validity: Any = None) -> None:
        v = np.asarray(values)
        if v.ndim != 1:
            raise FormatError("primitive values must be one-dimensional")
        p = _phys(type)
        v = _coerce_values(type, p, v)
        self.type = type
        self._len = v.size
        self.validity = _norm_validity(validity, v.size)
        self.values = _ro(v)
        if isinstance(p, EnumType) and v.size:
            live = v if self.validity is None else v[self.validity]
            if live.size and (int(live.max()) >= len(p.symbols) or int(live.min()) < 0):
                raise FormatError(f"enum position out of range for {type}")

    def _name(self) -> str:
        p = _phys(self.type)
        return "enum" if isinstance(p, EnumType) else p.name

    def to_pylist(self, typed: bool = False) -> list[Any]:
        p = _phys(self.type)
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
        elif p.name in _BIG_INTS:
            out = [None if x is None else int(x) for x in vals.tolist()]
        else:
            out = vals.tolist()
        return _null_out(out, self.validity)

    def to_numpy(self) -> np.ndarray:
        """The values (masked where null) for fixed-width kinds; objects for enum/ip/net/..."""
        name = self._name()
        if name == "enum" or name in _OBJECT_KINDS:
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
        return PrimitiveArray(self.type, out, _scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        return PrimitiveArray(t, np.concatenate([a.values for a in arrays]),
                              _concat_validity(arrays))

    def _to_arrow(self, pa: Any) -> Any:
        n, bitmap, nulls = self._len, _bitmap(pa, self.validity), self.null_count
        name = self._name()
        if name == "enum":
            idx = self.values if self.validity is None else np.where(self.validity, self.values, 0)
            indices = pa.Array.from_buffers(pa.int32(), n, [bitmap, _buf(pa, idx.astype(np.int32))],
                                            null_count=nulls)
            syms = pa.array(list(_phys(self.type).symbols), pa.string())
            return pa.DictionaryArray.from_arrays(indices, syms)
        if name in _OBJECT_KINDS:
            return pa.array([None if x is None else str(x) for x in self.to_pylist()],
                            pa.large_string())
        if name == "bool":
            return pa.Array.from_buffers(pa.bool_(), n, [bitmap, pa.py_buffer(
                np.packbits(self.values, bitorder="little"))], null_count=nulls)
        if name == "time":
            at, data = pa.timestamp("ns", tz="UTC"), self.values.view(np.int64)
        elif name == "duration":
            at, data = pa.duration("ns"), self.values.view(np.int64)
        else:
            dt = _INT_DTYPES.get(name) or _FLOAT_DTYPES[name]
            at, data = pa.from_numpy_dtype(np.dtype(dt)), self.values.astype(dt, copy=False)
        return pa.Array.from_buffers(at, n, [bitmap, _buf(pa, data)], null_count=nulls)


# ---------------------------------------------------------------- binary ---


class BinaryArray(Array):
    """Strings or bytes: int64 offsets (n+1) into one uint8 buffer.

    ``utf8_checked`` says the values are known to be valid UTF-8 (the decoder
    checked them in one pass): ``to_arrow`` then skips Arrow's own full
    validation, a second pass over every byte.  Takes, slices and expansions
    keep whole values, so they keep the flag.
    """

    __slots__ = ("data", "offsets", "utf8_checked")

    def __init__(self, type: Type, offsets: Any, data: Any, validity: Any = None, *,
                 utf8_checked: bool = False) -> None:
        p = _phys(type)
        if not (isinstance(p, PrimitiveType) and p.name in _BINARY_KINDS):
            raise FormatError(f"BinaryArray holds string or bytes, not {type}")
        if isinstance(data, np.ndarray):
            d = data if data.dtype == np.uint8 else data.view(np.uint8)
        else:
            d = np.frombuffer(data, dtype=np.uint8)
        if d.ndim != 1:
            raise FormatError("binary data must be one-dimensional")
        self.type = type
        self.data = _ro(d)
        self.offsets = _norm_offsets(offsets, d.size, str(type))
        self._len = self.offsets.size - 1
        self.validity = _norm_validity(validity, self._len)
        self.utf8_checked = utf8_checked

    def to_pylist(self, typed: bool = False) -> list[Any]:
        o = self.offsets
        buf = self.data[o[0]:o[-1]].tobytes()
        rel = (o - o[0]).tolist()
        valid = None if self.validity is None else self.validity.tolist()
        if _phys(self.type).name == "bytes":
            out: list[Any] = [buf[a:b] for a, b in pairwise(rel)]
            return _null_out(out, self.validity)
        if buf.isascii():
            s = buf.decode("ascii")
            out = [s[a:b] for a, b in pairwise(rel)]
            return _null_out(out, self.validity)
        try:
            if valid is None:
                return [buf[a:b].decode() for a, b in pairwise(rel)]
            return [buf[a:b].decode() if ok else None
                    for (a, b), ok in zip(pairwise(rel), valid, strict=True)]
        except UnicodeDecodeError as e:
            raise FormatError(f"string value is not valid UTF-8: {e.reason}") from e

    def _take(self, idx: np.ndarray) -> Array:
        offsets, data = _take_binary(self.offsets, self.data, idx, self.validity)
        return BinaryArray(self.type, offsets, data,
                           None if self.validity is None else self.validity[idx],
                           utf8_checked=self.utf8_checked)

    def _slice(self, start: int, stop: int) -> Array:
        return BinaryArray(self.type, self.offsets[start:stop + 1], self.data,
                           None if self.validity is None else self.validity[start:stop],
                           utf8_checked=self.utf8_checked)

    def _expand(self, mask: np.ndarray) -> Array:
        o = self.offsets
        return BinaryArray(self.type, _scatter_offsets(o, mask), self.data[o[0]:o[-1]],
                           _scatter_validity(mask, self.validity),
                           utf8_checked=self.utf8_checked)

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        data = np.concatenate([a.data[a.offsets[0]:a.offsets[-1]] for a in arrays])
        return BinaryArray(t, _rebased_offsets(arrays), data, _concat_validity(arrays),
                           utf8_checked=all(a.utf8_checked for a in arrays))

    def _to_arrow(self, pa: Any) -> Any:
        is_str = _phys(self.type).name == "string"
        out = pa.Array.from_buffers(
            pa.large_string() if is_str else pa.large_binary(), self._len,
            [_bitmap(pa, self.validity), _buf(pa, self.offsets), _buf(pa, self.data)],
            null_count=self.null_count)
        if is_str and not self.utf8_checked:
            try:
                out.validate(full=True)
            except pa.ArrowInvalid as e:
                raise FormatError(f"string value is not valid UTF-8: {e}") from e
        return out


# ------------------------------------------------------------------ null ---


class NullArray(Array):
    """``length`` nulls: the null type, or any type whose every value is null."""

    __slots__ = ()

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

    def _concrete(self) -> Array:
        return self if _phys(self.type) == NULL else null_array(self.type, self._len)

    def _take(self, idx: np.ndarray) -> Array:
        return NullArray(idx.size, self.type)

    def _slice(self, start: int, stop: int) -> Array:
        return NullArray(stop - start, self.type)

    def _expand(self, mask: np.ndarray) -> Array:
        return NullArray(mask.size, self.type)

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        return NullArray(sum(len(a) for a in arrays), t)

    def _to_arrow(self, pa: Any) -> Any:
        if _phys(self.type) == NULL:
            return pa.nulls(self._len)
        return self._concrete()._to_arrow(pa)


# ------------------------------------------------------------------ list ---


class ListArray(Array):
    """Array and set values: offsets (n+1) into one child array of elements."""

    __slots__ = ("offsets", "values")

    def __init__(self, type: Type, offsets: Any, values: Array, validity: Any = None) -> None:
        p = _phys(type)
        if not isinstance(p, (ArrayType, SetType)):
            raise FormatError(f"ListArray holds arrays or sets, not {type}")
        if values.type != p.elem:
            raise FormatError(f"{type} elements typed {values.type}")
        self.type = type
        self.values = values
        self.offsets = _norm_offsets(offsets, len(values), str(type))
        self._len = self.offsets.size - 1
        self.validity = _norm_validity(validity, self._len)

    def _child(self, child: Array) -> Array:
        lo, hi = int(self.offsets[0]), int(self.offsets[-1])
        return child if (lo, hi) == (0, len(child)) else child._slice(lo, hi)

    def to_pylist(self, typed: bool = False) -> list[Any]:
        child = self._child(self.values).to_pylist(typed)
        rel = (self.offsets - self.offsets[0]).tolist()
        return _null_out([child[a:b] for a, b in pairwise(rel)], self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        starts, lengths = _gather_lengths(self.offsets, idx, self.validity)
        return ListArray(self.type, _offsets_from_lengths(lengths),
                         self.values._take(_range_indices(starts, lengths)),
                         None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return ListArray(self.type, self.offsets[start:stop + 1], self.values,
                         None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        return ListArray(self.type, _scatter_offsets(self.offsets, mask), self._child(self.values),
                         _scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        child = concat([a._child(a.values) for a in arrays], type=_phys(t).elem)
        return ListArray(t, _rebased_offsets(arrays), child, _concat_validity(arrays))

    def _to_arrow(self, pa: Any) -> Any:
        child = self.values._to_arrow(pa)
        return pa.Array.from_buffers(pa.large_list(child.type), self._len,
                                     [_bitmap(pa, self.validity), _buf(pa, self.offsets)],
                                     null_count=self.null_count, children=[child])


# ------------------------------------------------------------------- map ---


class MapArray(Array):
    """Map values: offsets (n+1) into parallel key and value arrays."""

    __slots__ = ("keys", "offsets", "values")

    def __init__(self, type: Type, offsets: Any, keys: Array, values: Array,
                 validity: Any = None) -> None:
        p = _phys(type)
        if not isinstance(p, MapType):
            raise FormatError(f"MapArray holds maps, not {type}")
        if keys.type != p.key or values.type != p.value:
            raise FormatError(f"{type} entries typed {keys.type}:{values.type}")
        if len(keys) != len(values):
            raise FormatError(f"{type} has {len(keys)} keys but {len(values)} values")
        self.type = type
        self.keys = keys
        self.values = values
        self.offsets = _norm_offsets(offsets, len(keys), str(type))
        self._len = self.offsets.size - 1
        self.validity = _norm_validity(validity, self._len)

    _child = ListArray._child

    def to_pylist(self, typed: bool = False) -> list[Any]:
        keys = self._child(self.keys).to_pylist(typed)
        vals = self._child(self.values).to_pylist(typed)
        rel = (self.offsets - self.offsets[0]).tolist()
        if _key_hashable(_phys(self.type).key):
            out: list[Any] = []
            for a, b in pairwise(rel):
                d = dict(zip(keys[a:b], vals[a:b], strict=True))
                # keys distinct in BSUP but equal in Python (0.0 and -0.0) keep every entry
                out.append(d if len(d) == b - a else list(zip(keys[a:b], vals[a:b],
                                                               strict=True)))
        else:
            out = [list(zip(keys[a:b], vals[a:b], strict=True)) for a, b in pairwise(rel)]
        return _null_out(out, self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        starts, lengths = _gather_lengths(self.offsets, idx, self.validity)
        child_idx = _range_indices(starts, lengths)
        return MapArray(self.type, _offsets_from_lengths(lengths), self.keys._take(child_idx),
                        self.values._take(child_idx),
                        None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return MapArray(self.type, self.offsets[start:stop + 1], self.keys, self.values,
                        None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        return MapArray(self.type, _scatter_offsets(self.offsets, mask), self._child(self.keys),
                        self._child(self.values), _scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        p = _phys(t)
        keys = concat([a._child(a.keys) for a in arrays], type=p.key)
        vals = concat([a._child(a.values) for a in arrays], type=p.value)
        return MapArray(t, _rebased_offsets(arrays), keys, vals, _concat_validity(arrays))

    def _to_arrow(self, pa: Any) -> Any:
        p = _phys(self.type)
        keys, vals = self.keys._to_arrow(pa), self.values._to_arrow(pa)
        bitmap = _bitmap(pa, self.validity)
        kp = _phys(p.key)
        if isinstance(kp, PrimitiveType) and kp != NULL:
            if keys.null_count:
                raise UnsupportedTypeError("an Arrow map cannot hold a null key")
            if int(self.offsets[-1]) > np.iinfo(np.int32).max:
                raise UnsupportedTypeError("map entries exceed Arrow's int32 map offsets")
            mt = pa.map_(keys.type, vals.type)
            entries = pa.StructArray.from_arrays([keys, vals],
                                                 fields=[mt.key_field, mt.item_field])
            return pa.Array.from_buffers(mt, self._len,
                                         [bitmap, _buf(pa, self.offsets.astype(np.int32))],
                                         null_count=self.null_count, children=[entries])
        entries = pa.StructArray.from_arrays([keys, vals], names=["key", "value"])
        return pa.Array.from_buffers(pa.large_list(entries.type), self._len,
                                     [bitmap, _buf(pa, self.offsets)],
                                     null_count=self.null_count, children=[entries])


# ---------------------------------------------------------------- struct ---


class StructArray(Array):
    """Record values: one child array per field, each of the struct's length.

    A null row's children hold whatever (usually nulls); ``field`` returns the
    child as stored, like Arrow's ``StructArray.field``.
    """

    __slots__ = ("fields",)

    def __init__(self, type: Type, length: int, fields: Sequence[Array],
                 validity: Any = None) -> None:
        p = _phys(type)
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
        self.validity = _norm_validity(validity, length)

    def field(self, name: str) -> Array:
        for f, a in zip(_phys(self.type).fields, self.fields, strict=True):
            if f.name == name:
                return a
        raise ColumnNotFoundError(f"{self.type} has no field {name!r}")

    def to_pylist(self, typed: bool = False) -> list[Any]:
        names = [f.name for f in _phys(self.type).fields]
        if not names:
            out: list[Any] = [{} for _ in range(self._len)]
        else:
            cols = [a.to_pylist(typed) for a in self.fields]
            out = [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]
        return _null_out(out, self.validity)

    def _take(self, idx: np.ndarray) -> Array:
        return StructArray(self.type, idx.size, tuple(a._take(idx) for a in self.fields),
                           None if self.validity is None else self.validity[idx])

    def _slice(self, start: int, stop: int) -> Array:
        return StructArray(self.type, stop - start,
                           tuple(a._slice(start, stop) for a in self.fields),
                           None if self.validity is None else self.validity[start:stop])

    def _expand(self, mask: np.ndarray) -> Array:
        return StructArray(self.type, mask.size, tuple(a._expand(mask) for a in self.fields),
                           _scatter_validity(mask, self.validity))

    @classmethod
    def _concat(cls, t: Type, arrays: list[Any]) -> Array:
        p = _phys(t)
        fields = tuple(concat([a.fields[i] for a in arrays], type=f.type)
                       for i, f in enumerate(p.fields))
        return StructArray(t, sum(len(a) for a in arrays), fields, _concat_validity(arrays))

    def _to_arrow(self, pa: Any) -> Any:
        children = [a._to_arrow(pa) for a in self.fields]
        fields = []
        for f, c in zip(_phys(self.type).fields, children, strict=True):
            md = {"csup.name": f.type.name} if isinstance(f.type, NamedType) else None
            fields.append(pa.field(f.name, c.type, metadata=md))
        return pa.Array.from_buffers(pa.struct(fields), self._len,
                                     [_bitmap(pa, self.validity)],
                                     null_count=self.null_count, children=children)


# ----------------------------------------------------------------- union ---


class UnionArray(Array):
    """Dense union: ``tags`` name each row's member (-1 = null row), ``children[i]``
    holds member i's values in row order, one per row tagged i.
    """

    __slots__ = ("_ranks", "children", "tags")

    def __init__(self, type: Type, tags: Any, children: Sequence[Array],
                 validity: Any = None) -> None:
        p = _phys(type)
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
        given = _norm_validity(validity, t.size)
        if given is not None and bool(valid[~given].any()):
            raise FormatError("a null union row must have tag -1")
        counts = np.bincount(t[valid], minlength=k) if k else np.zeros(0, np.int64)
        for i, c in enumerate(children):
            if len(c) != int(counts[i]):
                raise FormatError(f"union member {i} has {len(c)} values for {int(counts[i])} tags")
        self.type = type
        self._len = t.size
        self.tags = _ro(t)
        self.children = children
        self.validity = _norm_validity(valid, t.size)
        self._ranks: np.ndarray | None = None

    def positions(self) -> np.ndarray:
        """Each row's index into its member's child (null rows: their rank among nulls)."""
        if self._ranks is None:
            self._ranks = _ro(_group_ranks(self.tags, len(self.children)))
        return self._ranks

    def to_pylist(self, typed: bool = False) -> list[Any]:
        its = [iter(c.to_pylist(typed)) for c in self.children]
        tags = self.tags.tolist()
        if not typed:
            return [next(its[t]) if t >= 0 else None for t in tags]
        types = _phys(self.type).types
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
        members = _phys(t).types
        children = tuple(concat([a.children[i] for a in arrays], type=m)
                         for i, m in enumerate(members))
        return UnionArray(t, np.concatenate([a.tags for a in arrays]), children)

    def _to_arrow(self, pa: Any) -> Any:
        members = _phys(self.type).types
        if not members or len(members) > 127:
            raise UnsupportedTypeError(f"Arrow unions need 1..127 members, {self.type} has "
                                       f"{len(members)}")
        kids = list(self.children)
        pos = self.positions()
        nulls = self.tags < 0
        n_null = int(np.count_nonzero(nulls))
        type_ids = self.tags
        if n_null:
            # Arrow unions have no validity: null rows become nulls of the first member,
            # interleaved in row order because each child's offsets must increase
            type_ids = np.where(nulls, 0, self.tags)
            rows = type_ids == 0
            first = len(kids[0])
            order = np.where(nulls[rows], pos[rows] + first, pos[rows])
            kids[0] = concat([kids[0], null_array(kids[0].type, n_null)]).take(order)
            pos = _group_ranks(type_ids, len(kids))
        children = [c._to_arrow(pa) for c in kids]
        return pa.UnionArray.from_dense(pa.array(type_ids.astype(np.int8), pa.int8()),
                                        pa.array(pos.astype(np.int32), pa.int32()), children,
                                        [str(m) for m in members], list(range(len(members))))


# ------------------------------------------------------------ functions ---


def null_array(type: Type, length: int) -> Array:
    """``length`` nulls of ``type``, as the array class of that type's shape.

    The concrete class (not a bare ``NullArray``) lets the result meet arrays of
    the same type in ``concat`` and ``.field()`` without special cases.
    """
    p = _phys(type)
    n = operator.index(length)
    invalid = np.zeros(n, bool)
    if isinstance(p, EnumType):
        return PrimitiveArray(type, np.zeros(n, np.uint64), invalid)
    if isinstance(p, PrimitiveType):
        _refuse_unsupported(p)
        name = p.name
        if p == NULL:
            return NullArray(n, type)
        if name in _BINARY_KINDS:
            return BinaryArray(type, np.zeros(n + 1, np.int64), np.zeros(0, np.uint8), invalid)
        if name in _OBJECT_KINDS:
            return PrimitiveArray(type, np.full(n, None, object), invalid)
        dt = {"time": _NS_TIME, "duration": _NS_DURATION, "bool": np.dtype(bool)}.get(name)
        if dt is None:
            dt = np.dtype(_INT_DTYPES.get(name) or _FLOAT_DTYPES[name])
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
    return a._concrete() if isinstance(a, NullArray) else a


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


def combine(parts: Sequence[Array | None], super_ids: Any, *,
            ranks: np.ndarray | None = None) -> Array:
    """Rows in file order from per-super-type parts: row r is the next value of part super_ids[r].

    Parts of one type give an array of that type; several types give a
    ``UnionArray`` over them in part order (a part's null values stay typed
    nulls of its member).  Rows of a None part, and of a part of type null when
    other types exist, are null.  ``ranks`` is accepted for older callers and not
    needed: each row's place in its part comes from one pass over the IDs.
    """
    sid = np.asarray(super_ids)
    if sid.ndim != 1 or (sid.dtype.kind not in "iu" and sid.size):
        raise FormatError("super ids must be a 1-D integer array")
    if len(parts) == 1 and parts[0] is not None and len(parts[0]) == sid.size:
        # one super type (most files): every ID must be 0, and then the part is
        # the answer; one any() instead of a cast, min, max and bincount of 1M IDs
        if sid.any():
            raise FormatError("super id out of range 0..0")
        p = parts[0]
        return NullArray(sid.size) if p.type == NULL else p
    n, k = sid.size, len(parts)
    counts = _id_counts(sid, k)
    for i, p in enumerate(parts):
        if p is not None and len(p) != int(counts[i]):
            raise FormatError(f"super type {i} has {len(p)} values for {int(counts[i])} rows")
    # which distinct type each part contributes to (a dict: files with thousands of
    # super types must not cost a comparison per pair)
    index: dict[Type, int] = {}
    member = np.full(k, -1, np.int64)
    for i, p in enumerate(parts):
        if p is not None and p.type != NULL:
            member[i] = index.setdefault(p.type, len(index))
    distinct = list(index)
    if not distinct:
        return NullArray(n)
    if len(distinct) == 1:
        for i in range(k):
            if member[i] == 0 and int(counts[i]) == n:
                return parts[i]
        nulls = bool(counts[member < 0].any())  # rows of parts that are absent or null
        return _gather(parts, sid, member == 0, distinct[0], nulls=nulls)
    tags = member.astype(np.int32)[sid]
    children = []
    for j, t in enumerate(distinct):
        sel = member == j
        if int(np.count_nonzero(sel)) == 1:
            children.append(parts[int(np.flatnonzero(sel)[0])])
        else:
            children.append(_gather(parts, sid[tags == j], sel, t, nulls=False))
    return UnionArray(UnionType(tuple(distinct)), tags, tuple(children))


def _id_counts(sid: np.ndarray, k: int) -> np.ndarray:
    """Rows per super ID (one bincount, which also finds an ID outside 0..k-1)."""
    if not sid.size:
        return np.zeros(k, np.int64)
    try:
        counts = np.bincount(sid, minlength=k)
    except (ValueError, TypeError):  # a negative ID (or one numpy cannot count)
        counts = None
    if counts is None or counts.size > k:
        raise FormatError(f"super id out of range 0..{k - 1}")
    return counts


def _gather(parts: Sequence[Array | None], sid: np.ndarray, sel: np.ndarray, t: Type, *,
            nulls: bool) -> Array:
    """The rows ``sid`` drawn from the selected parts (unselected parts' rows are null);
    every row of a selected part is among ``sid``, in order.

    Each row's place in the selected parts laid end to end comes from one pass over
    the IDs (:func:`_route`); then fixed-width values are one numpy take and strings
    or bytes one take in C (a memcpy a value), without first concatenating the parts'
    bytes into a whole array; other kinds concatenate and take.
    """
    chosen = [int(i) for i in np.flatnonzero(sel)]
    ps = [parts[i] for i in chosen]
    sizes = np.array([len(p) for p in ps], np.int64)  # type: ignore[arg-type]
    base = np.full(len(parts), -1, np.int64)
    base[chosen] = np.cumsum(sizes) - sizes
    idx = _route(sid, base)  # -1: a row of an unselected part
    if all(isinstance(p, BinaryArray) for p in ps):
        bs: list[BinaryArray] = ps  # type: ignore[assignment]
        valid_in = _concat_validity(bs)
        if len(bs) == 1:
            offsets, data = bs[0].offsets, bs[0].data
        else:
            offsets = _rebased_offsets(bs)
            data = np.concatenate([p.data[p.offsets[0]:p.offsets[-1]] for p in bs])
        o, d = _take_binary(offsets, data, idx, valid_in)
        return BinaryArray(t, o, d, _taken_validity(idx, valid_in, nulls),
                           utf8_checked=all(p.utf8_checked for p in bs))
    if all(isinstance(p, PrimitiveArray) and p.values.dtype != object for p in ps):
        prims: list[PrimitiveArray] = ps  # type: ignore[assignment]
        values = (prims[0].values if len(prims) == 1
                  else np.concatenate([p.values for p in prims]))
        out = values[np.maximum(idx, 0)] if values.size else np.zeros(idx.size, values.dtype)
        if nulls:
            out[idx < 0] = 0
        return PrimitiveArray(t, out, _taken_validity(idx, _concat_validity(prims), nulls))
    blocks = [p for p in ps if p is not None]
    if nulls:
        blocks.append(null_array(t, 1))
        idx = np.where(idx >= 0, idx, int(sizes.sum()))
    whole = concat(blocks, type=t)
    if idx.size == len(whole) and bool((idx == np.arange(idx.size)).all()):
        return whole
    return whole.take(idx)


def _taken_validity(idx: np.ndarray, valid_in: np.ndarray | None,
                    nulls: bool) -> np.ndarray | None:
    if not nulls and valid_in is None:
        return None
    validity = idx >= 0
    if valid_in is not None:
        validity &= valid_in[np.maximum(idx, 0)]
    return validity


# ------------------------------------------------------------ from_pylist ---


def _is_int(v: Any) -> bool:
    # np.timedelta64 subclasses np.signedinteger; bool subclasses int
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.timedelta64)))


def _scalar_ok(p: PrimitiveType | EnumType, v: Any, exact: bool) -> bool:
    """Whether ``v`` is a (non-null) value of primitive/enum type ``p``.

    ``exact`` means "in the form ``to_pylist`` gives for ``p``": it refuses the
    int-for-a-float widening, so union member choice prefers the member of the
    value's own kind and plain values read back pick the member they came from.
    """
    if isinstance(p, EnumType):
        return isinstance(v, str) and v in p.symbols
    name = p.name
    rng = _INT_RANGES.get(name)
    if rng is not None:
        return _is_int(v) and rng[0] <= int(v) <= rng[1]
    if name in _FLOAT_DTYPES:
        return isinstance(v, (float, np.floating)) or (not exact and _is_int(v))
    if name == "bool":
        return isinstance(v, (bool, np.bool_))
    if name == "string":
        return isinstance(v, str)
    if name == "bytes":
        return isinstance(v, (bytes, bytearray, memoryview))
    if name == "time":
        return isinstance(v, (np.datetime64, _dt.datetime))
    if name == "duration":
        return isinstance(v, (np.timedelta64, _dt.timedelta))
    if name == "ip":
        return isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address))
    if name == "net":
        return isinstance(v, (ipaddress.IPv4Network, ipaddress.IPv6Network))
    if name == "type":
        return isinstance(v, Type)
    return False  # null and the unsupported kinds hold no non-null value


def _map_items(v: Any, key: Type, exact: bool) -> list[tuple[Any, Any]] | None:
    """A map value's entries: a dict, or a list of pairs (the form for unhashable keys)."""
    if isinstance(v, Mapping):
        if exact and not _key_hashable(key):
            return None
        return list(v.items())
    if isinstance(v, (list, tuple)):
        if exact and _key_hashable(key):
            return None
        if all(isinstance(e, (list, tuple)) and len(e) == 2 for e in v):
            return [(e[0], e[1]) for e in v]
    return None


def _accepts(t: Type, v: Any, exact: bool) -> bool:
    """Whether ``from_pylist(t, [v])`` takes ``v`` (deep), for choosing a union member."""
    if v is None:
        return True
    p = _phys(t)
    if isinstance(v, UnionValue):
        return isinstance(p, UnionType) and _union_value_ok(p, v) and _accepts(
            v.type, v.value, exact)
    if isinstance(p, (PrimitiveType, EnumType)):
        return _scalar_ok(p, v, exact)
    if isinstance(p, RecordType):
        if not isinstance(v, Mapping):
            return False
        names = {f.name for f in p.fields}
        keys = set(v.keys())
        if not (keys == names if exact else keys <= names):
            return False
        return all(_accepts(f.type, v.get(f.name), exact) for f in p.fields)
    if isinstance(p, (ArrayType, SetType)):
        kinds = (list, tuple) if isinstance(p, ArrayType) else (list, tuple, set, frozenset)
        return isinstance(v, kinds) and all(_accepts(p.elem, x, exact) for x in v)
    if isinstance(p, MapType):
        items = _map_items(v, p.key, exact)
        return items is not None and all(
            _accepts(p.key, a, exact) and _accepts(p.value, b, exact) for a, b in items)
    if isinstance(p, UnionType):
        return _pick(p, v) is not None
    return False


def _union_value_ok(u: UnionType, v: UnionValue) -> bool:
    return 0 <= v.index < len(u.types) and u.types[v.index] == v.type


def _pick(u: UnionType, v: Any) -> int | None:
    """The first member whose kind takes ``v`` exactly, else the first that takes it at all."""
    for exact in (True, False):
        for i, m in enumerate(u.types):
            if _accepts(m, v, exact):
                return i
    return None


def _bad(t: Type, v: Any) -> EncodeError:
    return EncodeError(f"{type(v).__name__} value {v!r:.80} is not a {t}")


def _time_ns(v: Any) -> int:
    if isinstance(v, np.datetime64):
        return int(v.astype(_NS_TIME).astype(np.int64))
    if v.tzinfo is None:  # naive datetimes are taken as UTC
        v = v.replace(tzinfo=_dt.UTC)
    d = v - _EPOCH
    return (d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000


def _duration_ns(v: Any) -> int:
    if isinstance(v, np.timedelta64):
        return int(v.astype(_NS_DURATION).astype(np.int64))
    return (v.days * 86400 + v.seconds) * 10**9 + v.microseconds * 1000


def from_pylist(type: Type, values: Iterable[Any]) -> Array:
    """An array of ``type`` from Python values in the documented mapping.

    Unions take ``UnionValue`` (the member is as given) or plain values: the
    first member (in the union's order) that takes the value in the form
    ``to_pylist`` gives for it — an int for an int type in range, a float for
    a float type, a list for an array or set, a dict with exactly the record's
    fields, a dict (hashable key types) or list of pairs (others) for a map —
    and failing that the first that takes it at all (an int for a float, a
    dict with some of the fields, either map form).  Also accepted anywhere:
    Python sets for set types, ``datetime``/``timedelta`` for time/duration
    (naive datetimes as UTC), missing record keys as nulls.  Anything else is
    an ``EncodeError``.
    """
    return _build(type, list(values))


def _build(t: Type, vals: list[Any]) -> Array:
    p = _phys(t)
    n = len(vals)
    for v in vals:
        if isinstance(v, UnionValue) and not isinstance(p, UnionType):
            raise EncodeError(f"a UnionValue given for non-union type {t}")
    validity = np.fromiter((v is not None for v in vals), dtype=bool, count=n)
    if isinstance(p, (PrimitiveType, EnumType)):
        return _build_primitive(t, p, vals, validity)
    if isinstance(p, RecordType):
        names = {f.name for f in p.fields}
        for v in vals:
            if v is not None and not (isinstance(v, Mapping) and set(v.keys()) <= names):
                raise _bad(t, v)
        fields = tuple(_build(f.type, [None if v is None else v.get(f.name) for v in vals])
                       for f in p.fields)
        return StructArray(t, n, fields, validity)
    if isinstance(p, (ArrayType, SetType)):
        kinds = (list, tuple, set, frozenset) if isinstance(p, SetType) else (list, tuple)
        for v in vals:
            if v is not None and not isinstance(v, kinds):
                raise _bad(t, v)
        lengths = np.fromiter((0 if v is None else len(v) for v in vals), np.int64, count=n)
        flat = [x for v in vals if v is not None for x in v]
        return ListArray(t, _offsets_from_lengths(lengths), _build(p.elem, flat), validity)
    if isinstance(p, MapType):
        entries: list[list[tuple[Any, Any]]] = []
        for v in vals:
            items = [] if v is None else _map_items(v, p.key, exact=False)
            if items is None:
                raise _bad(t, v)
            entries.append(items)
        lengths = np.fromiter((len(e) for e in entries), np.int64, count=n)
        return MapArray(t, _offsets_from_lengths(lengths),
                        _build(p.key, [a for e in entries for a, _ in e]),
                        _build(p.value, [b for e in entries for _, b in e]), validity)
    if isinstance(p, UnionType):
        tags = np.full(n, -1, np.int32)
        members: list[list[Any]] = [[] for _ in p.types]
        for r, v in enumerate(vals):
            if v is None:
                continue
            if isinstance(v, UnionValue):
                if not _union_value_ok(p, v):
                    raise EncodeError(f"UnionValue({v.index}, {v.type}) is not a member of {t}")
                i, x = v.index, v.value
            else:
                picked = _pick(p, v)
                if picked is None:
                    raise _bad(t, v)
                i, x = picked, v
            tags[r] = i
            members[i].append(x)
        return UnionArray(t, tags, tuple(_build(m, xs) for m, xs in zip(p.types, members,
                                                                          strict=True)))
    raise UnsupportedTypeError(f"no array form for type {t}")


def _build_primitive(t: Type, p: PrimitiveType | EnumType, vals: list[Any],
                     validity: np.ndarray) -> Array:
    if isinstance(p, PrimitiveType):
        _refuse_unsupported(p)
        if p == NULL:
            if validity.any():
                raise _bad(t, next(v for v in vals if v is not None))
            return NullArray(len(vals), t)
    for v in vals:
        if v is not None and not _scalar_ok(p, v, exact=False):
            raise _bad(t, v)
    if isinstance(p, EnumType):
        pos = {s: i for i, s in enumerate(p.symbols)}
        return PrimitiveArray(t, np.array([0 if v is None else pos[v] for v in vals], np.uint64),
                              validity)
    name = p.name
    if name in _BINARY_KINDS:
        try:
            enc = [b"" if v is None else v.encode() if name == "string" else bytes(v)
                   for v in vals]
        except UnicodeEncodeError as e:
            raise EncodeError(f"string is not encodable as UTF-8: {e.reason}") from e
        lengths = np.fromiter((len(b) for b in enc), np.int64, count=len(enc))
        return BinaryArray(t, _offsets_from_lengths(lengths),
                           np.frombuffer(b"".join(enc), np.uint8), validity)
    if name in _OBJECT_KINDS:
        objs = np.full(len(vals), None, dtype=object)
        for i, v in enumerate(vals):
            objs[i] = int(v) if (v is not None and name in _BIG_INTS) else v
        return PrimitiveArray(t, objs, validity)
    if name in ("time", "duration"):
        conv = _time_ns if name == "time" else _duration_ns
        ns = [0 if v is None else conv(v) for v in vals]
        if any(not _INT64_MIN <= x <= _INT64_MAX for x in ns):
            raise EncodeError(f"a {name} value is outside int64 nanoseconds")
        return PrimitiveArray(t, np.array(ns, np.int64), validity)
    if name == "bool":
        return PrimitiveArray(t, np.array([bool(v) for v in vals], bool), validity)
    if name in _FLOAT_DTYPES:
        return PrimitiveArray(t, np.array([0.0 if v is None else float(v) for v in vals],
                                          _FLOAT_DTYPES[name]), validity)
    return PrimitiveArray(t, np.array([0 if v is None else int(v) for v in vals],
                                      _INT_DTYPES[name]), validity)


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


def _has_union(t: Type) -> bool:
    if isinstance(t, UnionType):
        return True
    if isinstance(t, (ArrayType, SetType)):
        return _has_union(t.elem)
    if isinstance(t, MapType):
        return _has_union(t.key) or _has_union(t.value)
    if isinstance(t, RecordType):
        return any(_has_union(f.type) for f in t.fields)
    return False  # named and error types keep their exact type


def fold_nulls(a: Array) -> Array:
    """``a`` with union members whose values fit a sibling member merged into it (see
    above): a union left with one member becomes that member's plain array."""
    t = a.type
    if not _has_union(t):
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
        home.append(j)
    for i in range(len(home)):  # follow chains: null -> [null] -> [string]
        while home[home[i]] != home[i]:
            home[i] = home[home[i]]
    keep = sorted(set(home))
    if len(keep) == len(types) and all(not isinstance(c, NullArray) for c in kids):
        return UnionArray(a.type, a.tags, kids) if kids != list(a.children) else a
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
