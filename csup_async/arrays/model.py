"""The array model: one class per shape of data, immutable, every row-moving operation
vectorised (see the package docstring for the Python mapping).  Here: the Array every
array is and the flat ones (primitive, binary); the null, list, map, struct and union
arrays, :func:`~.nested.concat` and the folding of null-only union members are in
:mod:`.nested`."""

from __future__ import annotations

import copy
import operator
from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.errors import CsupError, FormatError
from ..model.kinds import (
    BIG_INTS,
    BINARY_KINDS,
    FLOAT_DTYPES,
    INT_DTYPES,
    NS_DURATION,
    NS_TIME,
    OBJECT_KINDS,
    phys,
    refuse_unsupported,
)
from ..model.types import (
    NULL,
    EnumType,
    PrimitiveType,
    Type,
)
from .arrow import export
from .buffers import (
    concat_validity,
    norm_offsets,
    norm_validity,
    null_out,
    object_array,
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
        folded = self._fold()
        # a rebuilt array of the same type (a list of an unfoldable union) would fold
        # again forever: only a change of type can reach a faster conversion
        if folded.type != self.type:
            return folded.to_numpy()
        return object_array(self.to_pylist())

    def to_arrow(self, fold: bool = True) -> pa.Array:
        """A pyarrow Array (mapping in the module docstring), sharing buffers where it can.

        ``fold`` (default) first merges union members that only hold nulls of a
        sibling's shape (``[null]`` beside ``[string]``) into it: :func:`fold_nulls`."""
        return export(self._fold() if fold else self)

    def _fold(self) -> Array:
        """This array with null-only union members folded (:func:`fold_nulls`): only the
        nested arrays have any, and override this."""
        return self

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
        if start == 0 and stop == self._len:
            return self  # arrays are immutable: every row is this array
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


