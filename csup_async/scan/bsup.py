"""BSUP frames -> column arrays: whole streams of records decoded column-wise.

Only the frames are walked in Python, one step per value (type ID and body
length); everything per field is numpy and the C decoders:

* the bodies of the values of one record type, concatenated, are a tag stream
  of ``rows x fields`` values (a record body is its fields, tag-encoded), so
  one ``scan_tags`` finds every field of every row;
* a primitive field's tagged values are gathered into one stream and decoded
  by ``decode_primitive`` (the CSUP column decoders) into an array;
  other field types are decoded value by value with the BSUP codec.

A stream this path does not take (a value that is not a record, bodies that do
not split as their types say) raises :class:`NotColumnar`: the caller decodes
it value by value (:mod:`csup_async.format.bsup.rows`, or
:func:`csup_async.format.bsup.read_values`), which
also owns every error message.  Times and durations of fields are carried as
int nanoseconds in Python values (:meth:`Segment.pyvalues`), as
:func:`build_column` takes them.

Placed in the read layer (it builds arrays), though it lives beside the codec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import arrays as A
from ..decode.kernels import decode_primitive, scan_tags
from ..format.bsup.frames import FRAME_TYPES, FRAME_VALUES, read_frames
from ..format.bsup.tags import read_uvarint
from ..format.bsup.typecodec import TypeContext
from ..format.bsup.valuecodec import decode_value
from ..model.types import (
    DURATION,
    NULL,
    TIME,
    NamedType,
    PrimitiveType,
    RecordType,
    Type,
    underlying,
)
from ..model.values import unify

__all__ = ["FAST_KINDS", "Fields", "NotColumnar", "Part", "Segment",
           "Walked", "build_column", "decode_field", "decode_records", "fast_kind",
           "field_names", "fields_of", "part_column", "tagged", "unnamed", "walk"]

_SIGNED = frozenset({"int8", "int16", "int32", "int64"})
_UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
_FLOATS = frozenset({"float16", "float32", "float64"})
_NS = frozenset({"time", "duration"})
#: Primitive kinds decoded straight into arrays (the rest go value by value).
FAST_KINDS = _SIGNED | _UNSIGNED | _FLOATS | _NS | {"bool", "string", "bytes"}


def unnamed(t: Type) -> Type:
    while isinstance(t, NamedType):
        t = t.inner
    return t


def fast_kind(t: Type) -> str | None:
    u = unnamed(t)
    if isinstance(u, PrimitiveType) and u.name in FAST_KINDS:
        return u.name
    return None


@dataclass
class Segment:
    """The values of one column for the kept rows of one record type."""

    type: Type | None  # the field's type; None when the record type has no such field
    array: A.Array | None = None  # fast kinds
    values: list[Any] | None = None  # other kinds: Python values as the reference has them
    nonnull: int = 0

    def pyvalues(self, n: int) -> list[Any]:
        """Python values in the reference's form (times and durations as int ns)."""
        if self.type is None:
            return [None] * n
        if self.values is not None:
            return self.values
        a = self.array
        assert a is not None
        if isinstance(a, A.PrimitiveArray) and a.values.dtype.kind in "mM":
            vals = a.values.view(np.int64).tolist()
            if a.validity is not None:
                vals = [x if ok else None for x, ok in zip(vals, a.validity.tolist(),
                                                           strict=True)]
            return vals
        return a.to_pylist()


@dataclass
class Part:
    """The values of whole streams of records, column-wise.

    ``types[s]`` is a record type (its rows' type, as the stream defined it),
    ``rows[s]`` the positions (in ``0..n-1``) of its rows,
    ``columns[c][s]`` the segment of column ``c`` for them.
    """

    n: int
    types: list[Type] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    columns: dict[str, list[Segment]] = field(default_factory=dict)


class NotColumnar(Exception):
    """The input is not for this path (a value that is not a record, bodies that do
    not split as their types say): decode it value by value instead."""


def _walk(payload: bytes, slot_of: dict[int, int], new_slot: Any, slots: list[int],
          starts: list[int], lens: list[int], base: int) -> None:
    """Append (slot, body start, body length or -1) of every value in a values frame."""
    p, end = 0, len(payload)
    read = read_uvarint
    while p < end:
        tid = payload[p]
        if tid < 0x80:
            p += 1
        else:
            tid, p = read(payload, p, end)
        if p >= end:
            raise NotColumnar
        tag = payload[p]
        if tag < 0x80:
            p += 1
        else:
            tag, p = read(payload, p, end)
        s = slot_of.get(tid)
        if s is None:
            s = slot_of[tid] = new_slot(tid)
        slots.append(s)
        if tag == 0:
            starts.append(base + p)
            lens.append(-1)
            continue
        n = tag - 1
        if p + n > end:
            raise NotColumnar
        starts.append(base + p)
        lens.append(n)
        p += n


@dataclass(frozen=True)
class Walked:
    """Every value of whole streams of records, walked once (no body decoded): the
    values payloads joined, the record types by slot (first seen first), and per value
    its slot, body start in ``joined`` and body length (-1: a null record)."""

    joined: bytes
    types: list[Type]
    slot: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray


def walk(bufs: list[Any], *, max_total: int | None = None) -> Walked:
    """The values of the streams in ``bufs`` (see :class:`Walked`); NotColumnar for a
    value that is not a record or a body past its frame, the codec's errors for a
    frame that is not sound; ``max_total`` caps the decompressed frames."""
    payloads: list[bytes] = []
    base = 0
    types: list[Type] = []
    by_type: dict[int, int] = {}  # id(type) -> slot (a stream's types are shared objects)
    keep: list[Type] = []  # (holds the types, so their ids stay theirs)
    slots: list[int] = []
    starts: list[int] = []
    lens: list[int] = []
    def slots_for(ctx: TypeContext) -> Any:
        def new_slot(tid: int) -> int:
            t = ctx.lookup(tid)
            if not isinstance(unnamed(t), RecordType):
                raise NotColumnar
            s = by_type.get(id(t))
            if s is None:
                s = by_type[id(t)] = len(types)
                types.append(t)
                keep.append(t)
            return s
        return new_slot

    for buf in bufs:
        ctx = TypeContext()
        slot_of: dict[int, int] = {}
        new_slot = slots_for(ctx)
        for kind, payload, _ in read_frames(buf, max_total=max_total):
            if kind == -1:
                ctx = TypeContext()
                slot_of = {}
                new_slot = slots_for(ctx)
            elif kind == FRAME_TYPES:
                assert payload is not None
                ctx.parse_typedefs(payload)
            elif kind == FRAME_VALUES:
                assert payload is not None
                b = bytes(payload)
                _walk(b, slot_of, new_slot, slots, starts, lens, base)
                payloads.append(b)
                base += len(b)
    return Walked(b"".join(payloads), types, np.array(slots, np.int64),
                  np.array(starts, np.int64), np.array(lens, np.int64))


def _tag_len(lengths: np.ndarray) -> np.ndarray:
    """Bytes of the uvarint tag of bodies of these lengths (-1: null, a 1-byte 0)."""
    tag = np.where(lengths < 0, 0, lengths + 1).astype(np.uint64)
    n = np.ones(lengths.size, np.int64)
    for shift in range(7, 64, 7):
        n += (tag >> np.uint64(shift)) > 0
    return n


@dataclass
class Fields:
    """Where each field of each (non-null) row of one record type is, in ``data``."""

    data: np.ndarray  # uint8, the bodies joined, then one 0 byte (a null's tag)
    starts: np.ndarray  # (rows, fields) body starts
    lengths: np.ndarray  # (rows, fields) body lengths, -1 null


def fields_of(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, nfields: int) -> Fields:
    m = starts.size
    live = lengths >= 0
    ln = lengths[live]
    data = np.concatenate([buf[A.range_indices(starts[live], ln)], np.zeros(1, np.uint8)])
    k = ln.size
    fs, fl = scan_tags(data[:-1], k * nfields)
    fs, fl = fs.reshape(k, nfields), fl.reshape(k, nfields)
    if k and nfields:
        # each row's fields must end where its body does (else the count only
        # matched by accident: the reference names the row)
        last = fs[:, -1] + np.maximum(fl[:, -1], 0)
        if not np.array_equal(last, np.cumsum(ln)):
            raise NotColumnar
    elif k and ln.any():
        raise NotColumnar
    if k == m:
        return Fields(data, fs, fl)
    all_s = np.zeros((m, nfields), np.int64)
    all_l = np.full((m, nfields), -1, np.int64)  # a null record: every field null
    all_s[live], all_l[live] = fs, fl
    return Fields(data, all_s, all_l)


def tagged(f: Fields, j: int, rows: np.ndarray) -> np.ndarray:
    """Field ``j`` of ``rows`` as one tag-encoded stream (what the decoders take)."""
    s = f.starts[rows, j]
    n = f.lengths[rows, j]
    null = n < 0
    tl = _tag_len(n)
    begin = np.where(null, f.data.size - 1, s - tl)
    size = np.where(null, 1, tl + np.maximum(n, 0))
    return f.data[A.range_indices(begin, size)]


def decode_field(f: Fields, j: int, rows: np.ndarray, ft: Type, kind: str | None
                  ) -> Segment:
    m = rows.size
    if kind is not None:
        stream = tagged(f, j, rows)
        d = decode_primitive(unnamed(ft), stream, m)
        if kind in ("string", "bytes"):
            assert d.offsets is not None
            arr: A.Array = A.BinaryArray(ft, d.offsets, d.values, d.validity,
                                         utf8_checked=kind == "string")
        else:
            arr = A.PrimitiveArray(ft, d.values, d.validity)
        nonnull = m if d.validity is None else int(d.validity.sum())
        return Segment(ft, array=arr, nonnull=nonnull)
    s = f.starts[rows, j].tolist()
    n = f.lengths[rows, j].tolist()
    mv = memoryview(f.data)
    dec = decode_value
    vals = [None if k < 0 else dec(ft, mv[a:a + k]) for a, k in zip(s, n, strict=True)]
    return Segment(ft, values=vals, nonnull=sum(v is not None for v in vals))


def decode_records(bufs: list[Any] | Walked, fields: frozenset[str] | None = None) -> Part:
    """The values of whole BSUP streams, all records, column-wise: every top-level field
    (in first-seen order), or ``fields``.  Raises :class:`NotColumnar` (see the module
    docstring) or the codec's FormatError.  ``bufs`` may be their :func:`walk` already
    made."""
    w = bufs if isinstance(bufs, Walked) else walk(bufs)
    joined, types, slot, starts, lengths = w.joined, w.types, w.slot, w.starts, w.lengths
    buf = np.frombuffer(joined, np.uint8)
    part = Part(int(slot.size))
    names = field_names(types) if fields is None else sorted(fields)
    part.columns = {c: [] for c in names}
    for s, t in enumerate(types):
        u = unnamed(t)
        assert isinstance(u, RecordType)
        idx = np.flatnonzero(slot == s)  # this type's rows, in stream order
        f = fields_of(buf, starts[idx], lengths[idx], len(u.fields))
        rows = np.arange(idx.size)
        part.types.append(t)
        part.rows.append(idx)
        positions = {fd.name: j for j, fd in enumerate(u.fields)}
        for c in names:
            j = positions.get(c)
            if j is None:
                part.columns[c].append(Segment(None))
                continue
            ft = u.fields[j].type
            part.columns[c].append(decode_field(f, j, rows, ft, fast_kind(ft)))
    return part


def field_names(types: list[Type]) -> list[str]:
    """Every top-level field name of these record types, in first-seen order."""
    seen: dict[str, None] = {}
    for t in types:
        for fd in getattr(unnamed(t), "fields", ()):
            seen.setdefault(fd.name, None)
    return list(seen)


_NS_KINDS = ("time", "duration")


def build_column(vals: list[Any], vtypes: list[Type],
                 declared: list[Type] | None = None) -> A.Array:
    """The array of a column's values (times and durations as int ns) and their types;
    ``declared``: the column's types as the record types say (also those of fields
    that are null on every row), else those of the values."""
    types: list[Type] = []
    seen: set[int] = set()
    for x, xt in zip(vals, vtypes, strict=True):
        if x is not None and id(xt) not in seen:
            seen.add(id(xt))
            if xt not in types:
                types.append(xt)
    ut = unify(list(dict.fromkeys(declared)) if declared else types)
    p = underlying(ut)
    if isinstance(p, PrimitiveType) and p.name in _NS_KINDS:
        validity = np.fromiter((x is not None for x in vals), bool, count=len(vals))
        ns = np.array([0 if x is None else x if type(x) is int else _ns(x) for x in vals],
                      np.int64)
        return A.PrimitiveArray(ut, ns, validity)
    if any(underlying(xt) in (TIME, DURATION) for xt in types):  # unions holding times
        vals = [np.datetime64(x, "ns") if type(x) is int and underlying(xt) == TIME else
                np.timedelta64(x, "ns") if type(x) is int and underlying(xt) == DURATION
                else x for x, xt in zip(vals, vtypes, strict=True)]
    return A.from_pylist(ut, vals)


def part_column(parts: list[Part], c: str, n: int) -> A.Array:
    """One column of column-wise parts: the segments' arrays joined and put in row order
    when they hold one type; else the values go through :func:`build_column`."""
    segs: list[tuple[np.ndarray, Segment]] = []
    off = 0
    for part in parts:
        col = part.columns.get(c)  # a part whose record types all lack the field: none
        for s, pos in enumerate(part.rows):
            if pos.size:
                segs.append((pos + off if off else pos,
                             col[s] if col is not None else Segment(None)))
        off += part.n
    live = [sg for _, sg in segs if sg.nonnull]
    declared = [sg.type for _, sg in segs if sg.type is not None]
    t = live[0].type if live else None
    if not live:  # null on every row: typed as the record types say
        return A.null_array(unify(list(dict.fromkeys(declared))) if declared else NULL, n)
    if (t is not None and all(sg.type == t and sg.array is not None for sg in live)
            and all(d == t for d in declared) and unify([t]) == t):
        arrays = [sg.array if sg.type == t and sg.array is not None
                  else A.null_array(t, pos.size) for pos, sg in segs]
        arr = A.concat(arrays, t)  # type: ignore[arg-type]
        if len(segs) == 1:
            return arr
        pos = np.concatenate([p for p, _ in segs])
        if np.array_equal(pos, np.arange(n)):
            return arr
        order = np.empty(n, np.int64)
        order[pos] = np.arange(n)
        return arr.take(order)
    vals: list[Any] = [None] * n
    vtypes: list[Type] = [NULL] * n
    for pos, sg in segs:
        xt = sg.type if sg.type is not None else NULL
        for p, x in zip(pos.tolist(), sg.pyvalues(pos.size), strict=True):
            vals[p] = x
            vtypes[p] = xt
    return build_column(vals, vtypes, declared)


def _ns(x: Any) -> int:
    if isinstance(x, np.datetime64):
        return int(x.astype("datetime64[ns]").astype(np.int64))
    if isinstance(x, np.timedelta64):
        return int(x.astype("timedelta64[ns]").astype(np.int64))
    return int(x)
