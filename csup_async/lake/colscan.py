"""Column-wise decoding of ``.zng`` ranges: the scan's fast path.

A pool scan used to turn every row into a dict and then every column back
into an array (``scan.decode_rows`` and ``pool._column``, still the reference).
Here only the frames are walked in Python, one step per row (type ID and
body length); everything per field is numpy and the C decoders:

* the bodies of the rows of one record type, concatenated, are a tag stream
  of ``rows x fields`` values (a record body is its fields, tag-encoded), so
  one ``scan_tags`` finds every field of every row;
* the pool key is decoded first and the key range applied as a mask, so only
  rows in range are decoded further;
* a primitive field's tagged values are gathered into one stream and decoded
  by ``decode_primitive`` (the CSUP column decoders) into an array;
  other field types are decoded value by value with the BSUP codec.

Anything the fast path does not take (a key path, a row that is not a
record, a stream it cannot read) returns None and the caller uses the
reference, which also owns every error message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import arrays as A
from .. import bsup
from ..decode.kernels import decode_primitive, scan_tags
from ..errors import CsupError
from ..types import NamedType, PrimitiveType, RecordType, Type
from ..values import Value
from .keys import KeyRange, family

__all__ = ["Part", "decode_part", "merge_parts", "FAST_KINDS"]

_SIGNED = frozenset({"int8", "int16", "int32", "int64"})
_UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
_FLOATS = frozenset({"float16", "float32", "float64"})
_NS = frozenset({"time", "duration"})
#: Primitive kinds decoded straight into arrays (the rest go value by value).
FAST_KINDS = _SIGNED | _UNSIGNED | _FLOATS | _NS | {"bool", "string", "bytes"}
#: Key kinds compared as int64 against the key range's int bounds.
_INT_KEYS = _SIGNED | _NS


def _unnamed(t: Type) -> Type:
    while isinstance(t, NamedType):
        t = t.inner
    return t


def _fast_kind(t: Type) -> str | None:
    u = _unnamed(t)
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
    """The kept rows of one object read, column-wise.

    ``types[s]`` is a record type (its rows' type, as the stream defined it),
    ``rows[s]`` the positions (in ``0..n-1``) of its rows,
    ``columns[c][s]`` the segment of column ``c`` for them.
    """

    n: int
    key_name: str
    types: list[Type] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    nulls: list[np.ndarray] = field(default_factory=list)  # per slot: row value is null
    columns: dict[str, list[Segment]] = field(default_factory=dict)

    def to_rows(self) -> list[tuple[Any, Type, Any]]:
        """The rows as ``scan.decode_rows`` has them: (key Value or None, type, dict)."""
        out: list[Any] = [None] * self.n
        names = list(self.columns)
        for s, t in enumerate(self.types):
            pos = self.rows[s].tolist()
            m = len(pos)
            cols = {c: self.columns[c][s] for c in names}
            present = [c for c in names if cols[c].type is not None]
            vals = {c: cols[c].pyvalues(m) for c in present}
            kseg = cols.get(self.key_name)
            kt = _unnamed(kseg.type) if kseg is not None and kseg.type is not None else None
            isnull = self.nulls[s].tolist()
            for i, p in enumerate(pos):
                if isnull[i]:
                    out[p] = (None, t, None)
                    continue
                v = {c: vals[c][i] for c in present}
                kx = v.get(self.key_name) if kt is not None else None
                out[p] = (None if kx is None else Value(kt, kx), t, v)
        return out


class _Fallback(Exception):
    """The fast path does not take this input: use the reference."""


def _walk(payload: bytes, slot_of: dict[int, int], new_slot: Any, slots: list[int],
          starts: list[int], lens: list[int], base: int) -> None:
    """Append (slot, body start, body length or -1) of every value in a values frame."""
    p, end = 0, len(payload)
    read = bsup.read_uvarint
    while p < end:
        tid = payload[p]
        if tid < 0x80:
            p += 1
        else:
            tid, p = read(payload, p, end)
        if p >= end:
            raise _Fallback
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
            raise _Fallback
        starts.append(base + p)
        lens.append(n)
        p += n


def _frames(bufs: list[Any]) -> tuple[bytes, list[Type], np.ndarray, np.ndarray, np.ndarray]:
    """Every value of the streams in ``bufs``: (all values payloads joined, record types
    by slot, per value its slot, body start and length in the joined bytes)."""
    payloads: list[bytes] = []
    base = 0
    types: list[Type] = []
    by_type: dict[int, int] = {}  # id(type) -> slot (a stream's types are shared objects)
    keep: list[Type] = []  # (holds the types, so their ids stay theirs)
    slots: list[int] = []
    starts: list[int] = []
    lens: list[int] = []
    def slots_for(ctx: bsup.TypeContext) -> Any:
        def new_slot(tid: int) -> int:
            t = ctx.lookup(tid)
            if not isinstance(_unnamed(t), RecordType):
                raise _Fallback
            s = by_type.get(id(t))
            if s is None:
                s = by_type[id(t)] = len(types)
                types.append(t)
                keep.append(t)
            return s
        return new_slot

    for buf in bufs:
        ctx = bsup.TypeContext()
        slot_of: dict[int, int] = {}
        new_slot = slots_for(ctx)
        for kind, payload, _ in bsup.read_frames(buf):
            if kind == -1:
                ctx = bsup.TypeContext()
                slot_of = {}
                new_slot = slots_for(ctx)
            elif kind == bsup.FRAME_TYPES:
                assert payload is not None
                ctx.parse_typedefs(payload)
            elif kind == bsup.FRAME_VALUES:
                assert payload is not None
                b = bytes(payload)
                _walk(b, slot_of, new_slot, slots, starts, lens, base)
                payloads.append(b)
                base += len(b)
    return (b"".join(payloads), types, np.array(slots, np.int64),
            np.array(starts, np.int64), np.array(lens, np.int64))


def _tag_len(lengths: np.ndarray) -> np.ndarray:
    """Bytes of the uvarint tag of bodies of these lengths (-1: null, a 1-byte 0)."""
    tag = np.where(lengths < 0, 0, lengths + 1).astype(np.uint64)
    n = np.ones(lengths.size, np.int64)
    for shift in range(7, 64, 7):
        n += (tag >> np.uint64(shift)) > 0
    return n


@dataclass
class _Fields:
    """Where each field of each (non-null) row of one record type is, in ``data``."""

    data: np.ndarray  # uint8, the bodies joined, then one 0 byte (a null's tag)
    starts: np.ndarray  # (rows, fields) body starts
    lengths: np.ndarray  # (rows, fields) body lengths, -1 null


def _fields(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, nfields: int) -> _Fields:
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
            raise _Fallback
    elif k and ln.any():
        raise _Fallback
    if k == m:
        return _Fields(data, fs, fl)
    all_s = np.zeros((m, nfields), np.int64)
    all_l = np.full((m, nfields), -1, np.int64)  # a null record: every field null
    all_s[live], all_l[live] = fs, fl
    return _Fields(data, all_s, all_l)


def _tagged(f: _Fields, j: int, rows: np.ndarray) -> np.ndarray:
    """Field ``j`` of ``rows`` as one tag-encoded stream (what the decoders take)."""
    s = f.starts[rows, j]
    n = f.lengths[rows, j]
    null = n < 0
    tl = _tag_len(n)
    begin = np.where(null, f.data.size - 1, s - tl)
    size = np.where(null, 1, tl + np.maximum(n, 0))
    return f.data[A.range_indices(begin, size)]


def _decode_field(f: _Fields, j: int, rows: np.ndarray, ft: Type, kind: str | None
                  ) -> Segment:
    m = rows.size
    if kind is not None:
        stream = _tagged(f, j, rows)
        d = decode_primitive(_unnamed(ft), stream, m)
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
    dec = bsup.decode_value
    vals = [None if k < 0 else dec(ft, mv[a:a + k]) for a, k in zip(s, n, strict=True)]
    return Segment(ft, values=vals, nonnull=sum(v is not None for v in vals))


def _key_mask(f: _Fields, j: int | None, kt: Type | None, key_range: KeyRange
              ) -> np.ndarray:
    """Which rows of one record type have a key in range."""
    m = f.starts.shape[0]
    if key_range.unbounded:
        return np.ones(m, bool)
    if j is None or kt is None:
        return np.zeros(m, bool)  # a missing key matches no comparison
    ku = _unnamed(kt)
    fast = key_range._fast
    rows = np.arange(m)
    if (isinstance(ku, PrimitiveType) and ku.name in _INT_KEYS and fast is not None
            and family(ku) == fast[0]):
        d = decode_primitive(ku, _tagged(f, j, rows), m)
        x = d.values.view(np.int64)
        keep = np.ones(m, bool) if d.validity is None else d.validity.copy()
        lo, hi = fast[1], fast[2]
        if lo is not None:
            keep &= (x >= lo) if key_range.lo_inclusive else (x > lo)
        if hi is not None:
            keep &= (x <= hi) if key_range.hi_inclusive else (x < hi)
        return keep
    seg = _decode_field(f, j, rows, kt, _fast_kind(kt))
    vals = seg.pyvalues(m)
    return np.array([x is not None and key_range.contains(Value(ku, x)) for x in vals], bool)


def decode_part(bufs: list[Any], key: tuple[str, ...], key_range: KeyRange,
                fields: frozenset[str] | None) -> Part | None:
    """The rows of whole ZNG streams whose key is in range, column-wise; None when the
    reference must decode them (see the module docstring)."""
    if len(key) != 1:
        return None
    key_name = key[0]
    try:
        return _decode(bufs, key_name, key_range, fields)
    except (_Fallback, CsupError):
        return None


def _decode(bufs: list[Any], key_name: str, key_range: KeyRange,
            fields: frozenset[str] | None) -> Part:
    joined, types, slot, starts, lengths = _frames(bufs)
    buf = np.frombuffer(joined, np.uint8)
    part = Part(0, key_name)
    per_slot: list[tuple[np.ndarray, _Fields, np.ndarray]] = []
    keep_all = np.zeros(slot.size, bool)
    for s, t in enumerate(types):
        u = _unnamed(t)
        assert isinstance(u, RecordType)
        idx = np.flatnonzero(slot == s)
        f = _fields(buf, starts[idx], lengths[idx], len(u.fields))
        kf = u.field(key_name)
        kj = None if kf is None else [x.name for x in u.fields].index(key_name)
        mask = _key_mask(f, kj, None if kf is None else kf.type, key_range)
        keep_all[idx[mask]] = True
        per_slot.append((idx, f, mask))
    kept = np.flatnonzero(keep_all)
    part.n = int(kept.size)
    new_pos = np.cumsum(keep_all) - 1  # old row -> position among kept rows
    names: list[str] | None = None if fields is None else sorted(fields | {key_name})
    if names is None:
        seen: dict[str, None] = {}
        for t in types:
            for fd in _unnamed(t).fields:  # type: ignore[union-attr]
                seen.setdefault(fd.name, None)
        names = list(seen)
    part.columns = {c: [] for c in names}
    for s, t in enumerate(types):
        idx, f, mask = per_slot[s]
        u = _unnamed(t)
        assert isinstance(u, RecordType)
        rows = np.flatnonzero(mask)
        part.types.append(t)
        part.rows.append(new_pos[idx[rows]])
        part.nulls.append(lengths[idx[rows]] < 0)
        positions = {fd.name: j for j, fd in enumerate(u.fields)}
        for c in names:
            j = positions.get(c)
            if j is None:
                part.columns[c].append(Segment(None))
                continue
            ft = u.fields[j].type
            part.columns[c].append(_decode_field(f, j, rows, ft, _fast_kind(ft)))
    return part


def _keys(part: Part) -> tuple[np.ndarray, np.ndarray, set[str]] | None:
    """(int64 keys, null mask, key families) of a part's rows, or None unless every key
    is a signed int, time or duration in an array."""
    keys = np.zeros(part.n, np.int64)
    null = np.ones(part.n, bool)
    fams: set[str] = set()
    segs = part.columns.get(part.key_name)  # (absent: no row type has the key)
    for s, pos in enumerate(part.rows):
        if segs is None:
            break
        seg = segs[s]
        if seg.type is None or not pos.size:
            continue
        a = seg.array
        if (a is None or not isinstance(a, A.PrimitiveArray)
                or _fast_kind(seg.type) not in _INT_KEYS):
            return None
        keys[pos] = a.values.view(np.int64)
        null[pos] = False if a.validity is None else ~a.validity
        if seg.nonnull:
            fams.add(family(_unnamed(seg.type)))
    return keys, null, fams


def merge_parts(parts: list[Part], order: str) -> Part | None:
    """The rows of parts in pool-key order, as ``heapq.merge`` of their rows gives them
    (ties in part order, nulls last ascending and first descending); None when a key is
    not an int of one family or a part is not in key order (the caller merges rows)."""
    got = [_keys(p) for p in parts]
    if any(g is None for g in got) or not parts:
        return None
    fams = set().union(*(g[2] for g in got if g is not None))
    if len(fams) > 1:
        return None
    keys = np.concatenate([g[0] for g in got if g is not None])
    null = np.concatenate([g[1] for g in got if g is not None])
    uniq, rank = np.unique(keys[~null], return_inverse=True)
    ranks = np.full(keys.size, uniq.size, np.int64)  # null: above every value
    ranks[~null] = rank
    if order == "desc":
        ranks = -ranks
    off = 0
    for p in parts:
        r = ranks[off:off + p.n]
        if r.size > 1 and (np.diff(r) < 0).any():
            return None
        off += p.n
    perm = np.argsort(ranks, kind="stable")  # new position -> old
    new_of = np.empty_like(perm)
    new_of[perm] = np.arange(perm.size)
    names: dict[str, None] = {}
    for p in parts:
        names.update(dict.fromkeys(p.columns))
    out = Part(int(keys.size), parts[0].key_name, columns={c: [] for c in names})
    off = 0
    for p in parts:
        for s, t in enumerate(p.types):
            out.types.append(t)
            out.rows.append(new_of[p.rows[s] + off])
            out.nulls.append(p.nulls[s])
            for c in names:
                segs = p.columns.get(c)
                out.columns[c].append(segs[s] if segs is not None else Segment(None))
        off += p.n
    return out
