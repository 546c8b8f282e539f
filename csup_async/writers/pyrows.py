"""Plain Python rows shredded into batches, a column at a time.

Inferring a type and encoding a BSUP body per row costs ~100 µs for a small
nested dict; most rows of a real input share a handful of shapes.  This module
types a whole chunk of rows at once, with the same rules as
:func:`csup_async.model.values.infer_type` (see docs/api.md, "Python values"):

- values are sorted by their exact Python class (``bool``, ``int``, ``float``,
  ``str``, ``bytes``, ``dict``, ``list``/``tuple``, ``None``, numpy
  ``datetime64``/``timedelta64``/``int64``/``float64``/``bool_``);
- dicts are grouped by their key tuple and each key's values become a column,
  recursively; lists are flattened into one column of elements;
- each value's type is then an index into the column's types, a record's type
  the tuple of its fields' type indexes, a list's the one type of its
  non-null elements;

and encodes each column with numpy (:mod:`csup_async.writers.tagenc`).  Anything
outside that (a union inside a list, a map, a set, an int beyond int64, a
``datetime``, an ``ipaddress``, a ``Value``, a class the table does not name,
a value the encoder would refuse) makes the chunk fall back, in smaller and
smaller pieces, to the per-value path, which decides exactly as before.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from ..model.errors import CsupError, EncodeError
from ..model.types import (
    BOOL,
    BYTES,
    DURATION,
    FLOAT64,
    INT64,
    NULL,
    STRING,
    TIME,
    ArrayType,
    Field,
    RecordType,
    Type,
    UnionType,
)
from ..model.values import infer_type, numpy_ns
from .batch import Arr, Batch, Node, Prim, Rec, Slot, UnionNode
from .fuse import encode_fused, fuse_all, fuse_types, member_slot
from .tagenc import (
    Encoded,
    encode_constant,
    encode_fixed,
    encode_ints,
    encode_varbinary,
    with_nulls,
)
from .writer import Writer

__all__ = ["write_rows", "write_chunks", "shred_tape", "write_tape", "CHUNK_ROWS", "Tape"]

#: Rows typed and shredded at once.
CHUNK_ROWS = 1 << 13
#: Below this many rows a chunk that cannot be shredded goes value by value.
_SMALLEST = 256
#: Distinct key tuples of the dicts of one column in a chunk handled here.
_MAX_SHAPES = 64
#: Nesting handled here; deeper values take the per-value path (which has its limits).
_MAX_DEPTH = 32
#: Distinct keys of the dicts of one column in a chunk fused here (fusing builds a
#: column per key over all the dicts; more keys than this go value by value).
_MAX_FUSED_KEYS = 512

_NONE, _BOOL, _INT, _FLOAT, _STR, _BYTES, _DICT, _LIST, _TIME, _DUR = range(10)
_KIND: dict[type, int] = {
    type(None): _NONE, bool: _BOOL, np.bool_: _BOOL, int: _INT, np.int64: _INT,
    float: _FLOAT, np.float64: _FLOAT, str: _STR, bytes: _BYTES, dict: _DICT,
    list: _LIST, tuple: _LIST, np.datetime64: _TIME, np.timedelta64: _DUR,
    # Python's own (exact type: pandas' Timestamp, a subclass, keeps the per-value path)
    _dt.datetime: _TIME, _dt.timedelta: _DUR,
}
_PRIM_TYPE = {_NONE: NULL, _BOOL: BOOL, _INT: INT64, _FLOAT: FLOAT64, _STR: STRING,
              _BYTES: BYTES, _TIME: TIME, _DUR: DURATION}


class _Unhandled(Exception):
    """This chunk needs the per-value path."""


@dataclass(frozen=True, slots=True)
class _How:
    """How values are typed: ``fuse`` (one fused type per column) and ``times``
    (a string column of RFC 3339 timestamps is a time column)."""

    fuse: bool = False
    times: bool = False


_EXACT = _How()
#: RFC 3339 date-time (a Z or an offset is required; up to nanoseconds).
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.(?P<frac>\d{1,9}))?"
    r"(?:[Zz]|(?P<sign>[+-])(?P<hh>\d{2}):(?P<mm>\d{2}))")


def _kind_of_type(t: Type) -> int:
    if isinstance(t, RecordType):
        return _DICT
    if isinstance(t, ArrayType):
        return _LIST
    for k, pt in _PRIM_TYPE.items():
        if pt == t:
            return k
    raise _Unhandled(t)


def _gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + n)`` for each (s, n)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(total, dtype=np.int64)


class _Column:
    """Values of one position (rows, a field, list elements), typed and shredded."""

    def __init__(self, values: list[Any] | tuple[Any, ...], depth: int,
                 how: _How = _EXACT) -> None:
        if depth > _MAX_DEPTH:
            raise _Unhandled("deep")
        n = len(values)
        classes = list(map(type, values))
        try:
            if n and classes.count(classes[0]) == n:  # one class: the usual column
                codes = np.full(n, _KIND[classes[0]], np.int8)
                present = codes[:1]
            else:
                codes = np.fromiter(map(_KIND.__getitem__, classes), np.int8, n)
                present = np.flatnonzero(np.bincount(codes, minlength=len(_PRIM_TYPE) + 2))
        except KeyError:
            raise _Unhandled("class") from None
        self.codes = codes
        self.parts: dict[int, _Part] = {}
        self.kind_pos = np.zeros(n, np.int64)  # position of each value within its kind
        self.types: list[Type] = []
        index: dict[Type, int] = {}
        self.ids = np.zeros(n, np.int64)
        for k in present.tolist():
            if len(present) == 1:
                sel = None
                sub = values
                self.kind_pos = np.arange(n, dtype=np.int64)
            else:
                sel = np.flatnonzero(codes == k)
                self.kind_pos[sel] = np.arange(sel.size, dtype=np.int64)
                sub = [values[i] for i in sel.tolist()]
            part = _make_part(k, sub, depth, how)
            if k == _STR and how.times and _TIME not in self.parts:
                times = _times(sub)
                if times is not None:  # strings that are all timestamps: a time column
                    part, k = times, _TIME
                    codes[codes == _STR] = _TIME
            self.parts[k] = part
            local = np.array([index.setdefault(t, len(index)) for t in part.types], np.int64)
            if sel is None:
                self.ids = local[part.ids]
            else:
                self.ids[sel] = local[part.ids]
        self.types = list(index)
        # fusing: every part has one type, and the column's is their fusion
        self.fused = fuse_all(self.types) if how.fuse else NULL

    def node(self, sel: np.ndarray, t: Type) -> Node:
        """Values at ``sel`` (positions, ascending), every one non-null of type ``t``
        (or, fusing, of a type that fuses into ``t``)."""
        if isinstance(t, UnionType):
            return self._union_node(sel, t)
        k = _kind_of_type(t)
        return self.parts[k].node(self.kind_pos[sel], t)

    def _union_node(self, sel: np.ndarray, t: UnionType) -> Node:
        """Fused values of several kinds: each the member of its kind."""
        codes = self.codes[sel]
        tag_of = np.full(len(_PRIM_TYPE) + 2, -1, np.int64)
        # the kinds present (np.unique would import numpy.ma, 0.1 s, for its mask check)
        for k in np.flatnonzero(np.bincount(codes, minlength=tag_of.size)).tolist():
            tag_of[k] = member_slot(t.types, self.parts[k].types[0])
        tags = tag_of[codes]
        assert not (tags < 0).any(), "a value of a kind its fused type does not have"
        members: list[Slot | None] = []
        for i, m in enumerate(t.types):
            sub = sel[tags == i]
            members.append(Slot(sub.size, None, self.node(sub, m)) if sub.size else None)
        return UnionNode(encode_ints(tags), tuple(members))

    def slot(self, sel: np.ndarray, t: Type) -> Slot:
        """Values at ``sel``, each null or of type ``t`` (no presence covers them)."""
        n = sel.size
        if t == NULL:
            return Slot(n, None, Prim(encode_constant(None, n)))
        codes = self.codes[sel]
        valid = codes != _NONE
        all_valid = bool(valid.all())
        dense = sel if all_valid else sel[valid]
        if isinstance(t, (RecordType, ArrayType, UnionType)):
            node = self.node(dense, t) if dense.size else None
            return Slot(n, None if all_valid else valid, node)
        if not dense.size:
            return Slot(n, valid, Prim(encode_constant(None, n)))
        node = self.node(dense, t)
        assert isinstance(node, Prim)
        return Slot(n, None if all_valid else valid,
                    Prim(with_nulls(node.values, None if all_valid else valid)))


class _Part:
    """The values of one kind in a column: ``types`` and each value's ``ids``."""

    types: list[Type]
    ids: np.ndarray

    def node(self, pos: np.ndarray, t: Type) -> Node:
        raise NotImplementedError


class _Fixed(_Part):
    """Ints, floats, bools, times, durations: a numpy array of their values."""

    def __init__(self, kind: int, values: list[Any] | tuple[Any, ...]) -> None:
        self.kind = kind
        self.types = [_PRIM_TYPE[kind]]
        self.ids = np.zeros(len(values), np.int64)
        try:
            if kind == _INT:
                self.values = np.array(values, dtype=np.int64)
            elif kind == _FLOAT:
                self.values = np.array(values, dtype=np.float64)
            elif kind == _BOOL:
                self.values = np.array(values, dtype=np.bool_).astype(np.uint8)
            elif type(values[0]) in (_dt.datetime, _dt.timedelta):
                self.values = _python_ns(values, kind)
            else:
                self.values = numpy_ns(_exact_array(values, kind))
        except (OverflowError, TypeError, ValueError, CsupError):
            raise _Unhandled("values") from None

    def node(self, pos: np.ndarray, t: Type) -> Node:
        v = self.values if pos.size == self.values.size else self.values[pos]
        if self.kind == _FLOAT:
            return Prim(encode_fixed(v, 8))
        if self.kind == _BOOL:
            return Prim(encode_fixed(v, 1))
        return Prim(encode_ints(v))


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _python_ns(values: list[Any] | tuple[Any, ...], kind: int) -> np.ndarray:
    """Python datetimes (a naive one is UTC) or timedeltas as int64 nanoseconds, exactly
    as the per-value path encodes each; _Unhandled for a mix with numpy's scalars or a
    value beyond int64 (the per-value path then decides, as it always did)."""
    want = _dt.datetime if kind == _TIME else _dt.timedelta
    if not all(type(v) is want for v in values):
        raise _Unhandled("mixed")
    if kind == _TIME:
        deltas = [(v if v.tzinfo is not None else v.replace(tzinfo=_dt.UTC)) - _EPOCH
                  for v in values]
    else:
        deltas = list(values)
    ns = [(d.days * 86400 + d.seconds) * 1_000_000_000 + d.microseconds * 1000
          for d in deltas]
    if min(ns) < _INT64_MIN or max(ns) > _INT64_MAX:
        raise _Unhandled("range")
    return np.array(ns, dtype=np.int64)


def _exact_array(values: list[Any] | tuple[Any, ...], kind: int) -> np.ndarray:
    """numpy datetime64/timedelta64 scalars as one array, or _Unhandled when numpy
    would have wrapped one: ``np.array`` takes the finest unit of the values and
    converts coarser ones silently, so the result is checked against the same
    values converted to seconds (which cannot wrap in any realistic range)."""
    arr = np.array(values)
    unit, count = np.datetime_data(arr.dtype)
    if arr.dtype.kind not in "Mm" or count != 1:
        raise _Unhandled("dtype")
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}.get(unit)
    if per_second is None:  # minutes, hours, days, ...: conversions among them are exact
        if unit in ("ps", "fs", "as", "generic"):
            raise _Unhandled("unit")
        return arr
    if per_second == 1:
        return arr
    secs = np.array(values, dtype=arr.dtype.str[:3] + "[s]").view(np.int64)
    raw = arr.view(np.int64)
    nat = raw == np.iinfo(np.int64).min
    if not np.array_equal(np.where(nat, 0, raw // per_second), np.where(nat, 0, secs)):
        raise _Unhandled("units")
    return arr


class _Nulls(_Part):
    def __init__(self, n: int) -> None:
        self.types = [NULL]
        self.ids = np.zeros(n, np.int64)

    def node(self, pos: np.ndarray, t: Type) -> Node:
        return Prim(encode_constant(None, pos.size))


class _VarBinary(_Part):
    """Strings (as UTF-8) and bytes, tag-encoded once for the whole column.

    Short ASCII strings (the usual column) are joined with a NUL before each,
    encoded once, and each NUL replaced by its string's tag (``length + 1``,
    one byte under 127): no Python call per string.
    """

    def __init__(self, kind: int, values: list[Any] | tuple[Any, ...]) -> None:
        n = len(values)
        self.types = [_PRIM_TYPE[kind]]
        self.ids = np.zeros(n, np.int64)
        enc = self._short_ascii(values) if kind == _STR else None
        if enc is None:
            try:
                blobs = list(map(str.encode, values)) if kind == _STR else values
            except UnicodeEncodeError:
                raise _Unhandled("surrogate") from None
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(np.fromiter(map(len, blobs), np.int64, n), out=offsets[1:])
            enc = encode_varbinary(offsets, np.frombuffer(b"".join(blobs), np.uint8))
        self.enc = enc

    @staticmethod
    def _short_ascii(values: list[Any] | tuple[Any, ...]) -> Encoded | None:
        text = "\x00" + "\x00".join(values)
        if not text.isascii() or text.count("\x00") != len(values):
            return None
        data = np.frombuffer(text.encode("ascii"), np.uint8).copy()
        tags = np.flatnonzero(data == 0)
        ends = np.empty(tags.size, np.int64)
        ends[:-1] = tags[1:]
        ends[-1:] = data.size
        tag = ends - tags  # length + 1
        if tag.size and int(tag.max()) >= 0x80:
            return None
        data[tags] = tag.astype(np.uint8)
        return Encoded(data, ends)

    def node(self, pos: np.ndarray, t: Type) -> Node:
        if pos.size == len(self.enc):
            return Prim(self.enc)
        ends = self.enc.ends
        starts = np.concatenate(([0], ends[:-1]))[pos]
        sizes = ends[pos] - starts
        return Prim(Encoded(self.enc.data[_gather_ranges(starts, sizes)], np.cumsum(sizes)))


class _Records(_Part):
    """Dicts with string keys, grouped by their key tuple; each key a column.

    Fusing, there is one group: a column per key over all the dicts (a dict
    without the key has a None there), and one record type, the keys' fused types.
    """

    def __init__(self, values: list[Any] | tuple[Any, ...], depth: int,
                 how: _How = _EXACT) -> None:
        n = len(values)
        shapes: dict[tuple[str, ...], int] = {}
        keys_of = list(map(tuple, values))
        self.fused: dict[str, _Column] | None = None
        if keys_of.count(keys_of[0]) == n:  # one shape: the usual input
            shapes[keys_of[0]] = 0
            shape_ids = np.zeros(n, np.int64)
        else:
            shape_ids = np.fromiter((shapes.setdefault(k, len(shapes)) for k in keys_of),
                                    np.int64, n)
            if len(shapes) > _MAX_SHAPES and not how.fuse:  # many: cheaper one by one
                raise _Unhandled("shapes")
        if how.fuse:
            self._fuse(values, shapes, depth, how)
            return
        self.group_pos = np.zeros(n, np.int64)
        self.groups: dict[tuple[str, ...], list[_Column]] = {}
        index: dict[Type, int] = {}
        self.ids = np.zeros(n, np.int64)
        for keys, g in shapes.items():
            if not all(isinstance(k, str) for k in keys):
                raise _Unhandled("map")
            if len(shapes) == 1:
                rows = values
                members = None
                self.group_pos = np.arange(n, dtype=np.int64)
            else:
                members = np.flatnonzero(shape_ids == g)
                self.group_pos[members] = np.arange(members.size, dtype=np.int64)
                rows = [values[i] for i in members.tolist()]
            cols = [_Column(list(map(itemgetter(k), rows)), depth + 1, how) for k in keys]
            self.groups[keys] = cols
            local = self._row_types(keys, cols, len(rows), index)
            if members is None:
                self.ids = local
            else:
                self.ids[members] = local
        self.types = list(index)

    def _fuse(self, values: list[Any] | tuple[Any, ...], shapes: dict[tuple[str, ...], int],
              depth: int, how: _How) -> None:
        keys = dict.fromkeys(itertools.chain.from_iterable(shapes))
        if len(keys) > _MAX_FUSED_KEYS:
            raise _Unhandled("keys")
        if not all(isinstance(k, str) for k in keys):
            raise _Unhandled("map")
        if len(shapes) == 1:
            self.fused = {k: _Column(list(map(itemgetter(k), values)), depth + 1, how)
                          for k in keys}
        else:
            self.fused = {k: _Column([v.get(k) for v in values], depth + 1, how)
                          for k in keys}
        self.types = [RecordType(tuple(Field(k, c.fused) for k, c in self.fused.items()))]
        self.ids = np.zeros(len(values), np.int64)

    def _fused_node(self, pos: np.ndarray, t: RecordType) -> Node:
        assert self.fused is not None
        fields: list[tuple[bool | np.ndarray, Node | None]] = []
        for f in t.fields:
            col = self.fused.get(f.name)
            if col is None or f.type == NULL:
                fields.append((False, None))
                continue
            valid = col.codes[pos] != _NONE
            if valid.all():
                fields.append((True, col.node(pos, f.type)))
            elif not valid.any():
                fields.append((False, None))
            else:
                fields.append((valid, col.node(pos[valid], f.type)))
        return Rec(tuple(fields))

    @staticmethod
    def _row_types(keys: tuple[str, ...], cols: list[_Column], n: int,
                   index: dict[Type, int]) -> np.ndarray:
        """Each row's record type (as an index into ``index``)."""
        if not cols or all(len(c.types) == 1 for c in cols):
            t = RecordType(tuple(Field(k, c.types[0]) for k, c in zip(keys, cols, strict=True)))
            return np.full(n, index.setdefault(t, len(index)), np.int64)
        # one int per row from the fields' type indexes (mixed radix over the columns
        # with several types), then a dense table or a sort to number the combinations
        varied = [c for c in cols if len(c.types) > 1]
        key = np.zeros(n, np.int64)
        span = 1
        for c in varied:
            if span * len(c.types) >= 1 << 62:
                raise _Unhandled("too many shapes")
            key += c.ids * span
            span *= len(c.types)
        if span <= max(4 * n, 1 << 16):
            seen = np.zeros(span, bool)
            seen[key] = True
            combos = np.flatnonzero(seen)
            number = np.zeros(span, np.int64)
            number[combos] = np.arange(combos.size)
            inverse = number[key]
        else:
            combos, inverse = np.unique(key, return_inverse=True)
        local = []
        for combo in combos.tolist():
            picks = {}
            for c in varied:
                combo, picks[id(c)] = divmod(combo, len(c.types))
            t = RecordType(tuple(Field(k, c.types[picks.get(id(c), 0)])
                                 for k, c in zip(keys, cols, strict=True)))
            local.append(index.setdefault(t, len(index)))
        return np.array(local, np.int64)[inverse.reshape(-1)]

    def node(self, pos: np.ndarray, t: Type) -> Node:
        assert isinstance(t, RecordType)
        if self.fused is not None:
            return self._fused_node(pos, t)
        cols = self.groups[tuple(f.name for f in t.fields)]
        gpos = self.group_pos[pos]
        fields: list[tuple[bool, Node | None]] = []
        for f, col in zip(t.fields, cols, strict=True):
            if f.type == NULL:
                fields.append((False, None))
            else:
                fields.append((True, col.node(gpos, f.type)))
        return Rec(tuple(fields))


class _Lists(_Part):
    """Lists and tuples: their lengths and one column of all their elements (fusing,
    one array type: of the elements' fused type)."""

    def __init__(self, values: list[Any] | tuple[Any, ...], depth: int,
                 how: _How = _EXACT) -> None:
        n = len(values)
        self.lengths = np.fromiter(map(len, values), np.int64, n)
        self.starts = np.zeros(n, np.int64)
        if n:
            np.cumsum(self.lengths[:-1], out=self.starts[1:])
        self.elems = _Column(list(itertools.chain.from_iterable(values)), depth + 1, how)
        if how.fuse:
            self.types = [ArrayType(self.elems.fused)]
            self.ids = np.zeros(n, np.int64)
            return
        # a list's type: array of its one non-null element type (null when none)
        null_ids = [i for i, t in enumerate(self.elems.types) if t == NULL]
        eids = self.elems.ids.copy()
        nonnull = np.ones(eids.size, bool)
        for i in null_ids:
            nonnull &= eids != i
        owner = np.repeat(np.arange(n, dtype=np.int64), self.lengths)[nonnull]
        eids = eids[nonnull]
        first = np.full(n, -1, np.int64)
        first[owner[::-1]] = eids[::-1]  # the last write wins: each list's first type
        if (first[owner] != eids).any():
            raise _Unhandled("union")  # mixed element types: a union, per value
        elem_t = np.where(first >= 0, first, len(self.elems.types))
        elem_types = [*self.elems.types, NULL]
        index: dict[Type, int] = {}
        local = np.array([index.setdefault(ArrayType(t), len(index)) for t in elem_types],
                         np.int64)
        self.ids = local[elem_t]
        self.types = list(index)

    def node(self, pos: np.ndarray, t: Type) -> Node:
        assert isinstance(t, ArrayType)
        lengths = self.lengths[pos]
        elems = _gather_ranges(self.starts[pos], lengths)
        return Arr(encode_ints(lengths), self.elems.slot(elems, t.elem))


def _make_part(kind: int, values: list[Any] | tuple[Any, ...], depth: int,
               how: _How) -> _Part:
    if kind == _NONE:
        return _Nulls(len(values))
    if kind in (_STR, _BYTES):
        return _VarBinary(kind, values)
    if kind == _DICT:
        return _Records(values, depth, how)
    if kind == _LIST:
        return _Lists(values, depth, how)
    return _Fixed(kind, values)


def _times(values: list[Any] | tuple[Any, ...]) -> _Part | None:
    """Strings that are all RFC 3339 timestamps as a time part, or None (a month 13,
    a leap second, an offset beyond ±23:59: not timestamps; strings, as they were).
    The instant is exact: the offset is applied before the range is checked, and an
    instant outside int64 nanoseconds (about 1677-09-21 to 2262-04-11 UTC) is an
    EncodeError, never a wrapped time."""
    matches = [_RFC3339.fullmatch(s) for s in values]
    if not all(matches):
        return None
    offsets = []
    for m in matches:
        hh, mm = m.group("hh", "mm")
        if hh is None:
            offsets.append(0)
        elif int(hh) > 23 or int(mm) > 59:
            return None
        else:
            offsets.append((1 - 2 * (m.group("sign") == "-")) * (int(hh) * 60 + int(mm)))
    try:  # seconds of the local time: datetime64[s] holds every 4-digit year
        secs = np.array([s[:10] + "T" + s[11:19] for s in values],
                        dtype="datetime64[s]").view(np.int64)
    except ValueError:  # a month 13, a leap second: strings, as they were
        return None
    frac = np.array([0 if m["frac"] is None else int(m["frac"].ljust(9, "0"))
                     for m in matches], np.int64)
    utc = secs - np.array(offsets, np.int64) * 60
    inside = (utc > _SECS_MIN) & (utc < _SECS_MAX)  # whole seconds: no overflow below
    if not inside.all():
        for i in np.flatnonzero(~inside).tolist():
            if not _NS_MIN <= int(utc[i]) * 1_000_000_000 + int(frac[i]) <= _NS_MAX:
                raise EncodeError(
                    f"time {values[i]!r} is outside the range of a time (int64 "
                    "nanoseconds: 1677-09-21T00:12:43.145224193Z to "
                    "2262-04-11T23:47:16.854775807Z); write it as a string "
                    "(infer_times=False)")
    part = _Fixed.__new__(_Fixed)
    part.kind = _TIME
    part.types = [TIME]
    part.ids = np.zeros(len(values), np.int64)
    part.values = utc * 1_000_000_000 + frac
    return part


#: A time's range: int64 nanoseconds, without int64's minimum (numpy's NaT).
_NS_MIN, _NS_MAX = -(1 << 63) + 1, (1 << 63) - 1
_SECS_MIN, _SECS_MAX = _NS_MIN // 1_000_000_000 + 1, _NS_MAX // 1_000_000_000 - 1


class _Chunk:
    """Rows typed and shredded once; :meth:`batch` gives any range of them.

    Fusing (``open_types`` given: the super type each kind of row is written as so
    far, updated here), rows are written under one super type per kind (every
    dict row under one record type, every list row under one array type), the
    fusion of the chunk's with the one before: a chunk that adds a field or a
    member starts a new super type from its first row (a bounded window: nothing
    is buffered beyond the chunk).
    """

    def __init__(self, rows: list[Any], open_types: dict[int, Type] | None = None,
                 times: bool = False, col: _Column | None = None) -> None:
        self.col = col if col is not None else _Column(rows, 0, _How(open_types is not None,
                                                                     times))
        if open_types is None:
            self.types, ids = self.col.types, self.col.ids
        else:
            kinds = sorted(self.col.parts)
            for k in kinds:
                if k != _NONE:
                    open_types[k] = fuse_types(open_types.get(k, NULL),
                                               self.col.parts[k].types[0])
            self.types = [open_types.get(k, NULL) for k in kinds]
            lookup = np.zeros(len(_PRIM_TYPE) + 2, np.int64)
            lookup[kinds] = np.arange(len(kinds))
            ids = lookup[self.col.codes]
        self.ids = ids
        self.order = np.argsort(ids, kind="stable")
        self.bounds = np.concatenate(([0], np.cumsum(np.bincount(ids,
                                                                 minlength=len(self.types)))))

    def batch(self, a: int, b: int) -> Batch:
        ids = self.ids[a:b]
        types: list[Type] = []
        slots: list[Slot] = []
        remap = np.full(len(self.types), -1, np.int64)
        for ti, t in enumerate(self.types):
            members = self.order[self.bounds[ti]: self.bounds[ti + 1]]
            lo, hi = np.searchsorted(members, [a, b])
            members = members[lo:hi]
            if members.size == 0:
                continue
            remap[ti] = len(types)
            types.append(t)
            slots.append(self.col.slot(members, t))
        return Batch(types, remap[ids], slots)


def _write_chunk(w: Writer, rows: list[Any], open_types: dict[int, Type] | None,
                 times: bool) -> None:
    try:
        chunk = _Chunk(rows, open_types, times)
    except (_Unhandled, RecursionError):
        if len(rows) <= _SMALLEST:
            _write_values(w, rows, open_types)
            return
        step = max(_SMALLEST, len(rows) // 8)
        for s in range(0, len(rows), step):
            _write_chunk(w, rows[s: s + step], open_types, times)
        return
    w.add_rows(len(rows), chunk.batch)


def _write_values(w: Writer, rows: list[Any], open_types: dict[int, Type] | None) -> None:
    """Rows the vectorised path cannot type, value by value; fusing, each dict or
    list row goes under its kind's type fused over these rows (or, where it does
    not fit that, like a ``Value``, under its own)."""
    if open_types is None:
        for r in rows:
            w.write(r)
        return
    kinds: list[int | None] = []
    seen: dict[int, list[Type]] = {_DICT: [], _LIST: []}
    for r in rows:
        kind = None
        if isinstance(r, (dict, list, tuple)):
            try:
                t = infer_type(r)
            except CsupError:
                t = None  # w.write below raises the same error at the same row
            kind = _DICT if isinstance(t, RecordType) else _LIST if isinstance(
                t, ArrayType) else None
            if kind is not None:
                assert t is not None
                seen[kind].append(t)
        kinds.append(kind)
    for kind, types in seen.items():  # all at once: not the fused record once per row
        if types:
            open_types[kind] = fuse_all(types, open_types.get(kind, NULL))
    for r, kind in zip(rows, kinds, strict=True):
        if kind is None:
            w.write(r)
            continue
        try:
            w.write_body(open_types[kind], encode_fused(open_types[kind], r))
        except EncodeError:
            w.write(r)


def write_rows(w: Writer, rows: Iterable[Any], fuse: bool = False,
               infer_times: bool = False) -> None:
    """Write Python values (rows) through ``w``: the same bytes as ``w.write`` of each,
    or, with ``fuse``, under fused types (:mod:`csup_async.writers.fuse`).  ``infer_times``:
    a string column whose strings, in a chunk of rows, are all RFC 3339 timestamps
    is written as time (rows that take the per-value path keep their strings)."""
    write_chunks(w, rows, {} if fuse else None, infer_times)


def write_chunks(w: Writer, rows: Iterable[Any], open_types: dict[int, Type] | None,
                 infer_times: bool = False) -> None:
    """:func:`write_rows` going on from an earlier call's state: ``open_types`` is the
    fused super type of each kind of row so far (``{}`` to start fusing, None for the
    exact types), kept up to date here; ``rows`` start a new chunk of
    :data:`CHUNK_ROWS` (where :mod:`csup_async.writers.ndjson` hands over to this path)."""
    it: Iterator[Any] = iter(rows)
    while True:
        chunk = list(itertools.islice(it, CHUNK_ROWS))
        if not chunk:
            return
        _write_chunk(w, chunk, open_types, infer_times)


# ------------------------------------------------------------ JSON tapes ---

#: The tape's kinds (csup_async/writers/_wkernels.c) as this module's value kinds.
_TAPE_KIND = np.array([_NONE, _BOOL, _BOOL, _INT, _FLOAT, _STR, _DICT, _LIST], np.int8)
_TAPE_TRUE = 2


class Tape:
    """A chunk of JSON lines parsed by ``csup_async.writers._wkernels.tape``: one entry per value in
    document order (kind, parent, key, val, slen), the strings' bytes and the keys."""

    def __init__(self, kind: bytes, parent: bytes, key: bytes, val: bytes, slen: bytes,
                 sdata: bytes, keys: list[str]) -> None:
        self.kind = np.frombuffer(kind, np.uint8)
        self.codes = _TAPE_KIND[self.kind]
        self.parent = np.frombuffer(parent, np.int32).astype(np.int64)
        self.key = np.frombuffer(key, np.int32)
        self.val = np.frombuffer(val, np.int64)
        self.slen = np.frombuffer(slen, np.int32).astype(np.int64)
        self.sdata = np.frombuffer(sdata, np.uint8)
        self.keys = keys
        self.rows = np.flatnonzero(self.parent < 0)
        member = self.key >= 0
        # members and elements grouped by their parent (in document order within one):
        # the children of any set of objects or arrays are ranges of these
        self.members = self._grouped(np.flatnonzero(member))
        self.elems = self._grouped(np.flatnonzero(~member & (self.parent >= 0)))

    def _grouped(self, among: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = among[np.argsort(self.parent[among], kind="stable")]
        return order, self.parent[order]

    def children(self, among: tuple[np.ndarray, np.ndarray], parents: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The children (members or elements: ``among``) of the objects or arrays at
        ``parents`` (ascending), in document order, and the position of each one's
        parent in ``parents``."""
        grouped, by = among
        counts = self.val[parents]
        picked = _gather_ranges(np.searchsorted(by, parents), counts)
        return grouped[picked], np.repeat(np.arange(parents.size, dtype=np.int64), counts)

    def encoded(self, idx: np.ndarray) -> Encoded:
        """The strings at ``idx`` tag-encoded (the tape holds them so: one gather)."""
        from ..decode.kernels import copy_ranges

        sizes = self.slen[idx] + _tag_bytes(self.slen[idx] + 1)
        return Encoded(copy_ranges(self.sdata, self.val[idx], sizes), np.cumsum(sizes))

    def texts(self, idx: np.ndarray) -> list[str]:
        """The strings at ``idx`` as Python strs (for ``infer_times``)."""
        enc = self.encoded(idx)
        blob = enc.data.tobytes()
        lengths = self.slen[idx]
        starts = (enc.ends - lengths).tolist()
        return [blob[a: a + n].decode() for a, n in zip(starts, lengths.tolist(), strict=True)]


def _tag_bytes(tag: np.ndarray) -> np.ndarray:
    """Bytes of each uvarint."""
    n = np.ones(tag.size, np.int64)
    for j in range(1, 10):
        more = tag >= (1 << (7 * j))
        if not more.any():
            break
        n += more
    return n


def _tape_column(tp: Tape, idx: np.ndarray, depth: int, how: _How) -> _Column:
    """The :class:`_Column` ``_Column(values, depth, how)`` builds, for the values at tape
    entries ``idx`` (-1: a missing field, a None): fusing only."""
    if depth > _MAX_DEPTH:
        raise _Unhandled("deep")
    n = idx.size
    col = _Column.__new__(_Column)
    missing = idx < 0
    any_missing = bool(missing.any())
    codes = tp.codes[idx]
    if any_missing:
        codes = np.where(missing, np.int8(_NONE), codes)
    present = np.flatnonzero(np.bincount(codes, minlength=len(_PRIM_TYPE) + 2)) if n else (
        np.zeros(0, np.int64))
    col.codes = codes
    col.parts = {}
    col.kind_pos = np.zeros(n, np.int64)
    index: dict[Type, int] = {}
    col.ids = np.zeros(n, np.int64)
    for k in present.tolist():
        if len(present) == 1:
            sub = idx
            col.kind_pos = np.arange(n, dtype=np.int64)
        else:
            sel = np.flatnonzero(codes == k)
            col.kind_pos[sel] = np.arange(sel.size, dtype=np.int64)
            sub = idx[sel]
        part = _tape_part(tp, k, sub, depth, how)
        if k == _STR and how.times and _TIME not in col.parts:
            times = _times(tp.texts(sub))
            if times is not None:
                part, k = times, _TIME
                codes[codes == _STR] = _TIME
        col.parts[k] = part
        index.setdefault(part.types[0], len(index))  # fusing: one type a part, ids zero
    col.types = list(index)
    col.fused = fuse_all(col.types)
    return col


def _tape_part(tp: Tape, kind: int, sub: np.ndarray, depth: int, how: _How) -> _Part:
    n = sub.size
    if kind == _NONE:
        return _Nulls(n)
    if kind == _STR:
        part: _Part = _VarBinary.__new__(_VarBinary)
        part.types = [STRING]
        part.ids = np.zeros(n, np.int64)
        part.enc = tp.encoded(sub)  # type: ignore[attr-defined]
        return part
    if kind == _DICT:
        return _tape_records(tp, sub, depth, how)
    if kind == _LIST:
        return _tape_lists(tp, sub, depth, how)
    fixed = _Fixed.__new__(_Fixed)
    fixed.kind = kind
    fixed.types = [_PRIM_TYPE[kind]]
    fixed.ids = np.zeros(n, np.int64)
    if kind == _INT:
        fixed.values = tp.val[sub]
    elif kind == _FLOAT:
        fixed.values = tp.val[sub].view(np.float64)
    else:
        fixed.values = (tp.kind[sub] == _TAPE_TRUE).astype(np.uint8)
    return fixed


def _tape_records(tp: Tape, sub: np.ndarray, depth: int, how: _How) -> _Records:
    """Objects fused as :meth:`_Records._fuse` fuses dicts: a column per key, keys in
    order of first appearance (what ``dict.fromkeys`` over their key tuples gives)."""
    rec = _Records.__new__(_Records)
    members, where = tp.children(tp.members, sub)
    mkeys = tp.key[members]
    # each key's first member (the last write of a reversed assignment wins)
    first = np.full(len(tp.keys), -1, np.int64)
    first[mkeys[::-1]] = np.arange(mkeys.size - 1, -1, -1, dtype=np.int64)
    present = np.flatnonzero(first >= 0)
    if present.size > _MAX_FUSED_KEYS:
        raise _Unhandled("keys")
    keys = present[np.argsort(first[present], kind="stable")].tolist()
    if len(keys) > 32:  # many keys: group the members by key once
        order = np.argsort(mkeys.astype(np.int16 if len(tp.keys) < 1 << 15 else np.int32),
                           kind="stable")
        ranked = mkeys[order]
        los = np.searchsorted(ranked, keys, "left")
        his = np.searchsorted(ranked, keys, "right")
    fused: dict[str, _Column] = {}
    for j, k in enumerate(keys):
        if len(keys) > 32:
            pick = order[los[j]: his[j]]
        else:
            pick = np.flatnonzero(mkeys == k)
        idx = np.full(sub.size, -1, np.int64)
        idx[where[pick]] = members[pick]
        fused[tp.keys[k]] = _tape_column(tp, idx, depth + 1, how)
    rec.fused = fused
    rec.types = [RecordType(tuple(Field(k, c.fused) for k, c in fused.items()))]
    rec.ids = np.zeros(sub.size, np.int64)
    return rec


def _tape_lists(tp: Tape, sub: np.ndarray, depth: int, how: _How) -> _Lists:
    lists = _Lists.__new__(_Lists)
    n = sub.size
    lists.lengths = tp.val[sub]
    lists.starts = np.zeros(n, np.int64)
    if n:
        np.cumsum(lists.lengths[:-1], out=lists.starts[1:])
    lists.elems = _tape_column(tp, tp.children(tp.elems, sub)[0], depth + 1, how)
    lists.types = [ArrayType(lists.elems.fused)]
    lists.ids = np.zeros(n, np.int64)
    return lists


def shred_tape(tape: Tape, infer_times: bool) -> object | None:
    """A chunk of JSON rows typed and shredded from its tape (fusing) for
    :func:`write_tape`, or None where only the Python-value path decides."""
    try:
        return _tape_column(tape, tape.rows, 0, _How(True, infer_times))
    except (_Unhandled, RecursionError):
        return None


def write_tape(w: Writer, shredded: object | None, open_types: dict[int, Type],
               infer_times: bool, rows: Callable[[], list[Any]]) -> None:
    """Write a chunk of JSON rows shredded by :func:`shred_tape`, fusing, as
    :func:`write_chunks` writes the same rows as Python values (``rows()`` gives them,
    for a chunk ``shredded`` None: what only that path takes)."""
    if shredded is None:
        _write_chunk(w, rows(), open_types, infer_times)
        return
    assert isinstance(shredded, _Column)
    chunk = _Chunk([], open_types, infer_times, col=shredded)
    w.add_rows(shredded.codes.size, chunk.batch)
