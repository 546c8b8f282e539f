"""Python values typed and shredded into columns, a chunk at a time (the rules are in
:mod:`csup_async.writers.pyrows`): each value's exact class picks its kind, dicts become a
column per key (records), lists one column of elements, and each column's values are
encoded with numpy; anything else raises Unhandled, for the per-value path."""

from __future__ import annotations

import datetime as _dt
import itertools
import re
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
from ..model.values import numpy_ns
from .batch import Arr, Node, Prim, Rec, Slot, UnionNode
from .fuse import fuse_all, member_slot
from .tagenc import (
    Encoded,
    encode_constant,
    encode_fixed,
    encode_ints,
    encode_varbinary,
    with_nulls,
)

#: Distinct key tuples of the dicts of one column in a chunk handled here.
_MAX_SHAPES = 64
#: Nesting handled here; deeper values take the per-value path (which has its limits).
MAX_DEPTH = 32
#: Distinct keys of the dicts of one column in a chunk fused here (fusing builds a
#: column per key over all the dicts; more keys than this go value by value).
MAX_FUSED_KEYS = 512

K_NONE, K_BOOL, K_INT, K_FLOAT, K_STR, K_BYTES, K_DICT, K_LIST, K_TIME, K_DUR = range(10)
_KIND: dict[type, int] = {
    type(None): K_NONE, bool: K_BOOL, np.bool_: K_BOOL, int: K_INT, np.int64: K_INT,
    float: K_FLOAT, np.float64: K_FLOAT, str: K_STR, bytes: K_BYTES, dict: K_DICT,
    list: K_LIST, tuple: K_LIST, np.datetime64: K_TIME, np.timedelta64: K_DUR,
    # Python's own (exact type: pandas' Timestamp, a subclass, keeps the per-value path)
    _dt.datetime: K_TIME, _dt.timedelta: K_DUR,
}
PRIM_TYPE = {K_NONE: NULL, K_BOOL: BOOL, K_INT: INT64, K_FLOAT: FLOAT64, K_STR: STRING,
              K_BYTES: BYTES, K_TIME: TIME, K_DUR: DURATION}


class Unhandled(Exception):
    """This chunk needs the per-value path."""


@dataclass(frozen=True, slots=True)
class How:
    """How values are typed: ``fuse`` (one fused type per column) and ``times``
    (a string column of RFC 3339 timestamps is a time column)."""

    fuse: bool = False
    times: bool = False


_EXACT = How()
#: RFC 3339 date-time (a Z or an offset is required; up to nanoseconds).
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.(?P<frac>\d{1,9}))?"
    r"(?:[Zz]|(?P<sign>[+-])(?P<hh>\d{2}):(?P<mm>\d{2}))")


def _kind_of_type(t: Type) -> int:
    if isinstance(t, RecordType):
        return K_DICT
    if isinstance(t, ArrayType):
        return K_LIST
    for k, pt in PRIM_TYPE.items():
        if pt == t:
            return k
    raise Unhandled(t)


def gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + n)`` for each (s, n)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(total, dtype=np.int64)


class Column:
    """Values of one position (rows, a field, list elements), typed and shredded."""

    def __init__(self, values: list[Any] | tuple[Any, ...], depth: int,
                 how: How = _EXACT) -> None:
        if depth > MAX_DEPTH:
            raise Unhandled("deep")
        n = len(values)
        classes = list(map(type, values))
        try:
            if n and classes.count(classes[0]) == n:  # one class: the usual column
                codes = np.full(n, _KIND[classes[0]], np.int8)
                present = codes[:1]
            else:
                codes = np.fromiter(map(_KIND.__getitem__, classes), np.int8, n)
                present = np.flatnonzero(np.bincount(codes, minlength=len(PRIM_TYPE) + 2))
        except KeyError:
            raise Unhandled("class") from None
        self.codes = codes
        self.parts: dict[int, Part] = {}
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
            if k == K_STR and how.times and K_TIME not in self.parts:
                times = as_times(sub)
                if times is not None:  # strings that are all timestamps: a time column
                    part, k = times, K_TIME
                    codes[codes == K_STR] = K_TIME
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
        tag_of = np.full(len(PRIM_TYPE) + 2, -1, np.int64)
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
        valid = codes != K_NONE
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


class Part:
    """The values of one kind in a column: ``types`` and each value's ``ids``."""

    types: list[Type]
    ids: np.ndarray

    def node(self, pos: np.ndarray, t: Type) -> Node:
        raise NotImplementedError


class Fixed(Part):
    """Ints, floats, bools, times, durations: a numpy array of their values."""

    def __init__(self, kind: int, values: list[Any] | tuple[Any, ...]) -> None:
        self.kind = kind
        self.types = [PRIM_TYPE[kind]]
        self.ids = np.zeros(len(values), np.int64)
        try:
            if kind == K_INT:
                self.values = np.array(values, dtype=np.int64)
            elif kind == K_FLOAT:
                self.values = np.array(values, dtype=np.float64)
            elif kind == K_BOOL:
                self.values = np.array(values, dtype=np.bool_).astype(np.uint8)
            elif type(values[0]) in (_dt.datetime, _dt.timedelta):
                self.values = _python_ns(values, kind)
            else:
                self.values = numpy_ns(_exact_array(values, kind))
        except (OverflowError, TypeError, ValueError, CsupError):
            raise Unhandled("values") from None

    def node(self, pos: np.ndarray, t: Type) -> Node:
        v = self.values if pos.size == self.values.size else self.values[pos]
        if self.kind == K_FLOAT:
            return Prim(encode_fixed(v, 8))
        if self.kind == K_BOOL:
            return Prim(encode_fixed(v, 1))
        return Prim(encode_ints(v))


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _python_ns(values: list[Any] | tuple[Any, ...], kind: int) -> np.ndarray:
    """Python datetimes (a naive one is UTC) or timedeltas as int64 nanoseconds, exactly
    as the per-value path encodes each; Unhandled for a mix with numpy's scalars or a
    value beyond int64 (the per-value path then decides, as it always did)."""
    want = _dt.datetime if kind == K_TIME else _dt.timedelta
    if not all(type(v) is want for v in values):
        raise Unhandled("mixed")
    if kind == K_TIME:
        deltas = [(v if v.tzinfo is not None else v.replace(tzinfo=_dt.UTC)) - _EPOCH
                  for v in values]
    else:
        deltas = list(values)
    ns = [(d.days * 86400 + d.seconds) * 1_000_000_000 + d.microseconds * 1000
          for d in deltas]
    if min(ns) < _INT64_MIN or max(ns) > _INT64_MAX:
        raise Unhandled("range")
    return np.array(ns, dtype=np.int64)


def _exact_array(values: list[Any] | tuple[Any, ...], kind: int) -> np.ndarray:
    """numpy datetime64/timedelta64 scalars as one array, or Unhandled when numpy
    would have wrapped one: ``np.array`` takes the finest unit of the values and
    converts coarser ones silently, so the result is checked against the same
    values converted to seconds (which cannot wrap in any realistic range)."""
    arr = np.array(values)
    unit, count = np.datetime_data(arr.dtype)
    if arr.dtype.kind not in "Mm" or count != 1:
        raise Unhandled("dtype")
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}.get(unit)
    if per_second is None:  # minutes, hours, days, ...: conversions among them are exact
        if unit in ("ps", "fs", "as", "generic"):
            raise Unhandled("unit")
        return arr
    if per_second == 1:
        return arr
    secs = np.array(values, dtype=arr.dtype.str[:3] + "[s]").view(np.int64)
    raw = arr.view(np.int64)
    nat = raw == np.iinfo(np.int64).min
    if not np.array_equal(np.where(nat, 0, raw // per_second), np.where(nat, 0, secs)):
        raise Unhandled("units")
    return arr


class Nulls(Part):
    def __init__(self, n: int) -> None:
        self.types = [NULL]
        self.ids = np.zeros(n, np.int64)

    def node(self, pos: np.ndarray, t: Type) -> Node:
        return Prim(encode_constant(None, pos.size))


class VarBinary(Part):
    """Strings (as UTF-8) and bytes, tag-encoded once for the whole column.

    Short ASCII strings (the usual column) are joined with a NUL before each,
    encoded once, and each NUL replaced by its string's tag (``length + 1``,
    one byte under 127): no Python call per string.
    """

    def __init__(self, kind: int, values: list[Any] | tuple[Any, ...]) -> None:
        n = len(values)
        self.types = [PRIM_TYPE[kind]]
        self.ids = np.zeros(n, np.int64)
        enc = self._short_ascii(values) if kind == K_STR else None
        if enc is None:
            try:
                blobs = list(map(str.encode, values)) if kind == K_STR else values
            except UnicodeEncodeError:
                raise Unhandled("surrogate") from None
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
        return Prim(Encoded(self.enc.data[gather_ranges(starts, sizes)], np.cumsum(sizes)))


class Records(Part):
    """Dicts with string keys, grouped by their key tuple; each key a column.

    Fusing, there is one group: a column per key over all the dicts (a dict
    without the key has a None there), and one record type, the keys' fused types.
    """

    def __init__(self, values: list[Any] | tuple[Any, ...], depth: int,
                 how: How = _EXACT) -> None:
        n = len(values)
        shapes: dict[tuple[str, ...], int] = {}
        keys_of = list(map(tuple, values))
        self.fused: dict[str, Column] | None = None
        if keys_of.count(keys_of[0]) == n:  # one shape: the usual input
            shapes[keys_of[0]] = 0
            shape_ids = np.zeros(n, np.int64)
        else:
            shape_ids = np.fromiter((shapes.setdefault(k, len(shapes)) for k in keys_of),
                                    np.int64, n)
            if len(shapes) > _MAX_SHAPES and not how.fuse:  # many: cheaper one by one
                raise Unhandled("shapes")
        if how.fuse:
            self._fuse(values, shapes, depth, how)
            return
        self.group_pos = np.zeros(n, np.int64)
        self.groups: dict[tuple[str, ...], list[Column]] = {}
        index: dict[Type, int] = {}
        self.ids = np.zeros(n, np.int64)
        for keys, g in shapes.items():
            if not all(isinstance(k, str) for k in keys):
                raise Unhandled("map")
            if len(shapes) == 1:
                rows = values
                members = None
                self.group_pos = np.arange(n, dtype=np.int64)
            else:
                members = np.flatnonzero(shape_ids == g)
                self.group_pos[members] = np.arange(members.size, dtype=np.int64)
                rows = [values[i] for i in members.tolist()]
            cols = [Column(list(map(itemgetter(k), rows)), depth + 1, how) for k in keys]
            self.groups[keys] = cols
            local = self._row_types(keys, cols, len(rows), index)
            if members is None:
                self.ids = local
            else:
                self.ids[members] = local
        self.types = list(index)

    def _fuse(self, values: list[Any] | tuple[Any, ...], shapes: dict[tuple[str, ...], int],
              depth: int, how: How) -> None:
        keys = dict.fromkeys(itertools.chain.from_iterable(shapes))
        if len(keys) > MAX_FUSED_KEYS:
            raise Unhandled("keys")
        if not all(isinstance(k, str) for k in keys):
            raise Unhandled("map")
        if len(shapes) == 1:
            self.fused = {k: Column(list(map(itemgetter(k), values)), depth + 1, how)
                          for k in keys}
        else:
            self.fused = {k: Column([v.get(k) for v in values], depth + 1, how)
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
            valid = col.codes[pos] != K_NONE
            if valid.all():
                fields.append((True, col.node(pos, f.type)))
            elif not valid.any():
                fields.append((False, None))
            else:
                fields.append((valid, col.node(pos[valid], f.type)))
        return Rec(tuple(fields))

    @staticmethod
    def _row_types(keys: tuple[str, ...], cols: list[Column], n: int,
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
                raise Unhandled("too many shapes")
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


class Lists(Part):
    """Lists and tuples: their lengths and one column of all their elements (fusing,
    one array type: of the elements' fused type)."""

    def __init__(self, values: list[Any] | tuple[Any, ...], depth: int,
                 how: How = _EXACT) -> None:
        n = len(values)
        self.lengths = np.fromiter(map(len, values), np.int64, n)
        self.starts = np.zeros(n, np.int64)
        if n:
            np.cumsum(self.lengths[:-1], out=self.starts[1:])
        self.elems = Column(list(itertools.chain.from_iterable(values)), depth + 1, how)
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
            raise Unhandled("union")  # mixed element types: a union, per value
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
        elems = gather_ranges(self.starts[pos], lengths)
        return Arr(encode_ints(lengths), self.elems.slot(elems, t.elem))


def _make_part(kind: int, values: list[Any] | tuple[Any, ...], depth: int,
               how: How) -> Part:
    if kind == K_NONE:
        return Nulls(len(values))
    if kind in (K_STR, K_BYTES):
        return VarBinary(kind, values)
    if kind == K_DICT:
        return Records(values, depth, how)
    if kind == K_LIST:
        return Lists(values, depth, how)
    return Fixed(kind, values)


def as_times(values: list[Any] | tuple[Any, ...]) -> Part | None:
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
    part = Fixed.__new__(Fixed)
    part.kind = K_TIME
    part.types = [TIME]
    part.ids = np.zeros(len(values), np.int64)
    part.values = utc * 1_000_000_000 + frac
    return part


#: A time's range: int64 nanoseconds, without int64's minimum (numpy's NaT).
_NS_MIN, _NS_MAX = -(1 << 63) + 1, (1 << 63) - 1
_SECS_MIN, _SECS_MAX = _NS_MIN // 1_000_000_000 + 1, _NS_MAX // 1_000_000_000 - 1
