"""Writing CSUP v23 (``target="super"``) straight from the writer's column batches.

Every bulk input of ``csup_async.write`` (JSON lines parsed in C, Python rows,
Arrow tables, numpy columns) ends in :class:`~csup_async.writers.batch.Batch`
objects: per super type, tag-encoded column values, presence masks, lengths and
union tags.  :class:`Writer23` takes those batches where the library's own
:class:`~csup_async.writers.writer.Writer` does (``add_rows``, ``write``,
``write_body``) and turns them into super main's vectors column by column: the C
decoders read each batch's tag-encoded values back into numpy arrays, and
:mod:`csup_async.writers.superdb23`'s vector layout is written from those, with no
Python value per row.  The vectors are the ones :func:`superdb23.write_values`
writes for the same values (a null is a ``null`` member of a two-member union,
integers in intcomp with min/max, strings as bytes and intcomp offsets), so a
file reads the same whichever route made it.

Rows that arrive one at a time (values the vectorised shredders leave to the
per-value path, ``fuse=False``) and super types this module has no vectors for
(sets, maps, named types, ip/net/type values) are written by
:mod:`.superdb23`'s row builders.  An object holds rows of one route only, so a
switch between the two starts a new object (objects are independent in v23; the
footer's fused type covers them all).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..decode.kernels import decode_primitive, decode_varbinary, take_binary
from ..format.bsup import check_type, decode_value
from ..format.superdb import intcomp
from ..format.superdb.bsup5 import sort_union
from ..model.errors import CsupError, EncodeError
from ..model.heap import keep_freed_memory
from ..model.types import NULL, ArrayType, Field, PrimitiveType, RecordType, Type, UnionType
from ..model.values import Value, infer_type
from . import superdb23 as rows23
from . import superdb23_scalars as scalars23
from .batch import Arr, Batch, Node, Prim, Rec, Slot, UnionNode

__all__ = ["Writer23", "open_writer"]


def open_writer(out: BinaryIO, *, target: str | None = "csup-async", **options: Any) -> Any:
    """The writer core every input path feeds (``add_rows``, ``write``, ``write_body``):
    this library's :class:`~csup_async.writers.writer.Writer`, or for ``super`` the
    :class:`Writer23` that writes CSUP v23 straight from the same column batches."""
    from .targets import resolve
    from .writer import Writer

    if resolve(target).name == "super":
        return Writer23(out, **options)
    return Writer(out, **options)

_INTS = frozenset("int8 int16 int32 int64 duration time".split())
_UINTS = frozenset("uint8 uint16 uint32 uint64".split())
_FLOATS = frozenset("float16 float32 float64".split())
BYTES_T = scalars23.BYTES_T


def _load_intcomp() -> Callable[[Any, int], bytes] | None:
    try:
        from ._wkernels import intcomp
    except ImportError:
        return None
    return intcomp  # type: ignore[no-any-return]


_INTCOMP = _load_intcomp()


def encode_intcomp(values: np.ndarray, width: int) -> bytes:
    """``values`` in SuperDB's intcomp blocks: the writer's C loop, or the numpy
    reference (:func:`csup_async.format.superdb.intcomp.encode`, the same bytes)."""
    if _INTCOMP is None:
        return intcomp.encode(values, width)
    v = np.ascontiguousarray(values)
    if v.dtype != np.uint64:
        v = v.astype(np.int64, copy=False).view(np.uint64) if v.dtype.kind == "i" else (
            v.astype(np.uint64))
    return _INTCOMP(v, width)


class Ctx(scalars23.Ctx):
    """:class:`superdb23.Ctx` with its integer segments in C."""

    def uint32s(self, vals: Any) -> dict[str, int]:
        arr = np.asarray(vals, dtype=np.uint64)
        return self.seg(encode_intcomp(arr, 32), 4 * arr.size if arr.size else 0)


class _NoVector(Exception):
    """A super type this module has no vectors for (its rows take the row builders)."""


# ------------------------------------------------------------ primitives ---
class _Prim:
    """A primitive vector: values arrive as tag-encoded nodes, nulls in band."""

    prim = True

    def __init__(self, t: PrimitiveType) -> None:
        self.t = t
        self.parts: list[Any] = []
        self.n = 0

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        return self.t

    def take(self, node: Node | None, m: int) -> np.ndarray | None:
        """Append the non-null of the ``m`` values of ``node``; their validity (None:
        none null)."""
        if not isinstance(node, Prim):
            raise EncodeError("target super: a primitive column without its values")
        d = decode_primitive(self.t, node.values.data, m)
        self._add(d.values, d.validity, d.offsets)
        return d.validity

    def _add(self, values: np.ndarray, ok: np.ndarray | None, offsets: Any) -> None:
        v = values if ok is None else values[ok]
        self.parts.append(v)
        self.n += v.size


class _Int(_Prim):
    def __init__(self, t: PrimitiveType, signed: bool) -> None:
        super().__init__(t)
        self.signed = signed

    def _add(self, values: np.ndarray, ok: np.ndarray | None, offsets: Any) -> None:
        if values.dtype.kind in "mM":
            values = values.view(np.int64)
        super()._add(values.astype(np.int64 if self.signed else np.uint64, copy=False), ok,
                     offsets)

    def emit(self, c: Ctx) -> int:
        arr = _concat(self.parts, np.int64 if self.signed else np.uint64)
        seg = c.seg(encode_intcomp(arr, 64), 8 * arr.size)
        lo = int(arr.min()) if arr.size else 0
        hi = int(arr.max()) if arr.size else 0
        return c.enter("Int" if self.signed else "Uint", {
            "Type": self.t, "Location": seg, "Min": lo, "Max": hi, "Count": arr.size})


class _Float(_Prim):
    def _add(self, values: np.ndarray, ok: np.ndarray | None, offsets: Any) -> None:
        super()._add(values.astype("<f8", copy=False), ok, offsets)

    def emit(self, c: Ctx) -> int:
        arr = _concat(self.parts, np.dtype("<f8"))
        seg = c.seg(arr.tobytes(), compress=True)
        lo = float(np.min(arr)) if arr.size else 0.0
        hi = float(np.max(arr)) if arr.size else 0.0
        return c.enter("Float", {"Type": self.t, "Location": seg, "Min": lo, "Max": hi,
                                 "Count": arr.size})


class _Bool(_Prim):
    def emit(self, c: Ctx) -> int:
        vals = _concat(self.parts, np.bool_)
        n = vals.size
        bits = np.zeros(((n + 63) // 64) * 64, dtype=np.uint8)
        bits[:n] = vals
        raw = np.packbits(bits, bitorder="little").tobytes()
        return c.enter("Bool", {"Location": c.seg(raw, compress=True), "Count": n})


class _Bytes(_Prim):
    """Strings and bytes: (offsets, data) pieces, joined at emit."""

    def _add(self, values: np.ndarray, ok: np.ndarray | None, offsets: Any) -> None:
        if ok is not None:
            offsets, values = take_binary(offsets, values, np.flatnonzero(ok))
        self.parts.append((offsets, values))
        self.n += offsets.size - 1

    def take(self, node: Node | None, m: int) -> np.ndarray | None:
        if not isinstance(node, Prim):
            raise EncodeError("target super: a primitive column without its values")
        offsets, data, ok = decode_varbinary(node.values.data, m)
        self._add(data, ok, offsets)
        return ok

    def emit(self, c: Ctx) -> int:
        offs, data = _join_binary(self.parts)
        b = c.seg(data.tobytes(), compress=True)
        o = c.uint32s(offs)
        lo, hi = minmax_bytes(offs, data) if self.n else (None, None)
        return c.enter("Bytes", {"Type": self.t, "Bytes": b, "Offsets": o, "Min": lo,
                                 "Max": hi, "Count": self.n})


def _concat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _join_binary(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """One (offsets from 0, data) of several."""
    if not parts:
        return np.zeros(1, np.int64), np.zeros(0, np.uint8)
    datas, offs = [], [np.zeros(1, np.int64)]
    base = 0
    for o, d in parts:
        datas.append(d[o[0]: o[-1]])
        offs.append(o[1:] - o[0] + base)
        base += int(o[-1] - o[0])
    return np.concatenate(offs), np.concatenate(datas)


def minmax_bytes(offs: np.ndarray, data: np.ndarray) -> tuple[bytes, bytes]:
    """The least and the greatest of the byte strings ``data[offs[i]:offs[i+1]]`` in
    byte order (Go's ``bytes.Compare``): the writer's C loop, or without it eight bytes
    at a time over the candidates still tied, never a Python object per value."""
    try:
        from ._wkernels import minmax
    except ImportError:
        minmax = None
    if minmax is not None:
        offs64 = np.ascontiguousarray(offs, np.int64)
        found = minmax(np.ascontiguousarray(data, np.uint8), offs64, None)
        if found is not None:
            lo, hi = found
            return (data[offs64[lo]: offs64[lo + 1]].tobytes(),
                    data[offs64[hi]: offs64[hi + 1]].tobytes())
    return minmax_bytes_numpy(offs, data)


def minmax_bytes_numpy(offs: np.ndarray, data: np.ndarray) -> tuple[bytes, bytes]:
    """:func:`minmax_bytes` without the C loop."""
    starts, lens = offs[:-1].astype(np.int64), np.diff(offs).astype(np.int64)
    padded = np.concatenate((data, np.zeros(8, np.uint8)))
    out = []
    for pick in (np.argmin, np.argmax):
        cand = np.arange(starts.size)
        k = 0
        while True:
            s, rem = starts[cand] + k, lens[cand] - k
            idx = s[:, None] + np.arange(8)
            chunk = padded[np.minimum(idx, padded.size - 1)]
            chunk = np.where(np.arange(8) < rem[:, None], chunk, 0).astype(np.uint8)
            word = chunk.view(">u8").reshape(-1)
            best = word[pick(word)]
            cand, rem = cand[word == best], rem[word == best]
            crem = np.minimum(rem, 9)  # 9: goes on past these eight bytes
            r = crem[pick(crem)]
            cand = cand[crem == r]
            if r <= 8 or cand.size == 1:
                i = int(cand[0])
                out.append(data[starts[i]: starts[i] + lens[i]].tobytes())
                break
            k += 8
    return out[0], out[1]


# ------------------------------------------------------ nulls and slots ---
class _NullCol(scalars23.NullB):
    """A column of the null type: only a count (super's ``Null`` vector), as the value
    writer's :class:`superdb23_scalars.NullB`, counted a slot at a time."""

    def add_slot(self, slot: Slot) -> None:
        self.n += slot.n

    def add_covered(self, presence: Any, node: Node | None, n: int) -> None:
        self.n += n


class _Slot:
    """Values that may be null: the inner vector's, plus a ``null`` member (a union of
    two, run-length tags) when some are null, as :class:`superdb23.Slot` writes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.masks: list[tuple[int, np.ndarray | None]] = []
        self.nulls = 0
        self.n = 0

    def _mark(self, n: int, ok: np.ndarray | None) -> None:
        if ok is not None:
            k = n - int(np.count_nonzero(ok))
            if k:
                self.nulls += k
                self.masks.append((n, ok))
                self.n += n
                return
        self.masks.append((n, None))
        self.n += n

    def add_slot(self, slot: Slot) -> None:
        """``slot.n`` values no presence covers (rows, elements, members)."""
        n = slot.n
        if not n:
            return
        if self.inner.prim:
            self._mark(n, self.inner.take(slot.node, n))
            return
        ok = slot.valid
        present = n if ok is None else int(np.count_nonzero(ok))
        if present:
            self.inner.extend(slot.node, present)
        self._mark(n, ok)

    def add_covered(self, presence: Any, node: Node | None, n: int) -> None:
        """``n`` values of a record field: ``presence`` says which are there (True, False
        or a mask); ``node`` holds those."""
        if not n:
            return
        if presence is False:
            self._mark(n, np.zeros(n, np.bool_))
            return
        mask = None if presence is True else np.asarray(presence, np.bool_)
        m = n if mask is None else int(np.count_nonzero(mask))
        if self.inner.prim:
            inner_ok = self.inner.take(node, m) if m else None
            if inner_ok is not None:
                if mask is None:
                    mask = inner_ok
                else:
                    mask = mask.copy()
                    mask[mask] = inner_ok
        elif m:
            self.inner.extend(node, m)
        self._mark(n, mask)

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        t = self.inner.mtype()
        return sort_union((t, NULL)) if self.nulls else t

    def emit(self, c: Ctx) -> int:
        if not self.nulls:
            return self.inner.emit(c)
        u = sort_union((self.inner.mtype(), NULL))
        valid = np.concatenate([np.ones(n, np.bool_) if ok is None else ok
                                for n, ok in self.masks])
        vi, ni = u.types.index(self.inner.mtype()), u.types.index(NULL)
        tags = np.where(valid, vi, ni).astype(np.int64)
        nulls = self.nulls
        members: list[tuple[Type, Any]] = [
            (self.inner.mtype(), self.inner.emit),
            (NULL, lambda c: c.enter("Null", {"Count": nulls}))]
        members.sort(key=lambda m: u.types.index(m[0]))
        return scalars23.emit_union(c, tags, members)


# ------------------------------------------------------------- complex ---
class _Record:
    prim = False

    def __init__(self, t: RecordType) -> None:
        self.fields = [(f.name, vector(f.type)) for f in t.fields]
        self.n = 0

    def extend(self, node: Node | None, n: int) -> None:
        if not isinstance(node, Rec) or len(node.fields) != len(self.fields):
            raise EncodeError("target super: a record column without its fields")
        for (_, b), (presence, cnode) in zip(self.fields, node.fields, strict=True):
            b.add_covered(presence, cnode, n)
        self.n += n

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        return RecordType(tuple(Field(n, b.mtype()) for n, b in self.fields))

    def emit(self, c: Ctx) -> int:
        fields = [{"Name": n, "Values": b.emit(c)} for n, b in self.fields]
        return c.enter("Record", {"Length": self.n, "Fields": fields})


class _Array:
    prim = False

    def __init__(self, t: ArrayType) -> None:
        self.elem = vector(t.elem)
        self.lengths: list[np.ndarray] = []
        self.n = 0

    def extend(self, node: Node | None, n: int) -> None:
        if not isinstance(node, Arr):
            raise EncodeError("target super: an array column without its lengths")
        lengths = decode_primitive(scalars23.I64, node.lengths.data, n).values
        self.lengths.append(lengths)
        self.elem.add_slot(node.elems)
        self.n += n

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        return ArrayType(self.elem.mtype())

    def emit(self, c: Ctx) -> int:
        offs = np.zeros(self.n + 1, np.int64)
        if self.n:
            np.cumsum(_concat(self.lengths, np.int64), out=offs[1:])
        lengths = c.uint32s(offs)
        vid = self.elem.emit(c)
        return c.enter("Array", {"Length": self.n, "Lengths": lengths, "Values": vid})


class _Union(rows23.UnionMembers):
    """A union of the writer's: members by their super types in super's order, and a
    ``null`` member when some values are null (as :class:`superdb23.UnionB`)."""

    def __init__(self, t: UnionType) -> None:
        if NULL in t.types:
            raise _NoVector("a union with a null member")
        self.t = t
        self.members = [vector(m) for m in t.types]
        self.tags: list[np.ndarray] = []  # member index, -1 null
        self.nulls = self.nones = 0  # (no none member: a column has no absent values)

    def _add(self, n: int, valid: np.ndarray | None, node: Node | None, m: int) -> None:
        tags = np.full(n, -1, np.int64)
        if m:
            if not isinstance(node, UnionNode) or len(node.members) != len(self.members):
                raise EncodeError("target super: a union column without its tags")
            inner = decode_primitive(scalars23.I64, node.tags.data, m).values
            if valid is None:
                tags = inner
            else:
                tags[valid] = inner
            for b, slot in zip(self.members, node.members, strict=True):
                if slot is not None:
                    before = b.count()
                    b.add_slot(slot)
                    if getattr(b, "nulls", 0) and b.count() > before:
                        raise EncodeError("target super: a null inside a union member "
                                          "of a column batch")
        self.nulls += n - m
        self.tags.append(tags)

    def add_slot(self, slot: Slot) -> None:
        ok = slot.valid
        self._add(slot.n, ok, slot.node, slot.n if ok is None else int(np.count_nonzero(ok)))

    def add_covered(self, presence: Any, node: Node | None, n: int) -> None:
        if presence is False:
            self._add(n, np.zeros(n, np.bool_), None, 0)
            return
        mask = None if presence is True else np.asarray(presence, np.bool_)
        self._add(n, mask, node, n if mask is None else int(np.count_nonzero(mask)))

    def count(self) -> int:
        return sum(t.size for t in self.tags)

    def emit(self, c: Ctx) -> int:
        def tags_of(order: dict[int, int]) -> np.ndarray:
            lookup = np.zeros(len(self.members) + 1, np.int64)  # -1 (null) is the last
            for k, i in order.items():
                lookup[k] = i
            return lookup[_concat(self.tags, np.int64)]

        return self.emit_members(c, tags_of)


def vector(t: Type) -> Any:
    """The vector builder of values of ``t`` (maybe null), or _NoVector."""
    if isinstance(t, UnionType):
        return _Union(t)
    if t == NULL:
        return _NullCol()
    return _Slot(_plain(t))


def _plain(t: Type) -> Any:
    if isinstance(t, PrimitiveType):
        n = t.name
        if n in _INTS or n in _UINTS:
            return _Int(t, n in _INTS)
        if n in _FLOATS:
            return _Float(t)
        if n == "bool":
            return _Bool(t)
        if n in ("string", "bytes"):
            return _Bytes(t)
    elif isinstance(t, RecordType):
        return _Record(t)
    elif isinstance(t, ArrayType):
        return _Array(t)
    raise _NoVector(f"no vectors for {type(t).__name__}")


# -------------------------------------------------------------- writer ---
class Writer23:
    """CSUP v23 to a binary file object, fed as :class:`~.writer.Writer` is (the column
    batches of ``add_rows``, single values of ``write``/``write_body``).

    Objects hold at most ``max_object_rows`` rows (the batches are cut there, as
    :func:`superdb23.write_values` cuts its objects); the file is written object by
    object, then the footer (the fused type of every row) and the trailer at
    :meth:`close`.  The library's own layout options (``segment_thresh``,
    ``skew_thresh``, ``statistics``) have no place in v23 and are accepted unused;
    segments are LZ4-compressed where that pays, as super does.
    """

    def __init__(self, out: BinaryIO, *, max_object_rows: int | None = None,
                 **_layout_options: Any) -> None:
        if max_object_rows is None:
            max_object_rows = rows23.MAX_OBJECT_ROWS
        if max_object_rows < 1:
            raise EncodeError("max_object_rows must be at least 1")
        keep_freed_memory()  # the first write's, as our layout's writer (model.heap)
        self.out = out
        self.max_object_rows = max_object_rows
        self.rows = 0
        self.size = 0
        self.fused: Type | None = None
        self._vec: dict[Type, Any] = {}
        self._order: list[Type] = []
        self._tags: list[np.ndarray] = []
        self._vec_rows = 0
        self._values: list[tuple[Type, Any]] = []
        self._last: Type | None = None  # the last row's type, checked
        self._closed = False

    # --------------------------------------------------------- bulk input ---
    def add_rows(self, n: int, encode: Callable[[int, int], Batch]) -> None:
        """Write ``n`` rows that ``encode(a, b)`` shreds into a Batch for rows a to b,
        cut where an object fills."""
        a = 0
        while a < n:
            room = self.max_object_rows - self._vec_rows - len(self._values)
            if room <= 0:
                self._flush_object()
                continue
            b = min(n, a + room)
            self.write_batch(encode(a, b))
            a = b

    def write_batch(self, batch: Batch) -> None:
        if self._closed:
            raise CsupError("writer is closed")
        if batch.rows == 0:
            return
        try:  # new types in order of first appearance; _NoVector before any change
            made = [(t, vector(_checked(t))) for t in _first_seen(batch) if t not in self._vec]
        except _NoVector:
            for v in _batch_values(batch):
                self.write(v)
            return
        for t, b in made:
            self._vec[t] = b
            self._order.append(t)
        builders = [self._vec[t] for t in batch.types]
        if self._values:
            self._flush_object()
        index = np.array([self._order.index(t) for t in batch.types], np.int64)
        self._tags.append(index[batch.row_types])
        for b, slot in zip(builders, batch.slots, strict=True):
            b.add_slot(slot)
        self._vec_rows += batch.rows
        self.rows += batch.rows
        if self._vec_rows >= self.max_object_rows:
            self._flush_object()

    # ------------------------------------------------------ value by value ---
    def write(self, value: Any) -> None:
        """One Python value (type inferred) or ``Value``."""
        if isinstance(value, Value):
            self._row(value.type, value.value)
        else:
            self._row(infer_type(value), value)

    def write_body(self, t: Type, body: bytes | memoryview | None) -> None:
        """One value given as its BSUP body."""
        self._row(t, decode_value(t, body, typed=True))

    def _row(self, t: Type, v: Any) -> None:
        if self._closed:
            raise CsupError("writer is closed")
        if self._vec_rows:
            self._flush_object()
        if t is not self._last:
            self._last = _checked(t)
        self._values.append((t, v))
        self.rows += 1
        if len(self._values) >= self.max_object_rows:
            self._flush_object()

    # ------------------------------------------------------------ objects ---
    def _flush_object(self) -> None:
        if self._values:
            obj, types = rows23.row_object(self._values)
            self._values = []
        elif self._vec_rows:
            obj, types = self._vector_object()
        else:
            return
        self.out.write(obj)
        self.size += len(obj)
        for t in types:
            self.fused = t if self.fused is None else rows23.fuse(self.fused, t)

    def _vector_object(self) -> tuple[bytes, list[Type]]:
        c = Ctx()
        builders = [self._vec[t] for t in self._order]
        if len(builders) == 1:
            root = builders[0].emit(c)
        else:
            seg = c.uint32s(_concat(self._tags, np.int64))
            ids = [b.emit(c) for b in builders]
            root = c.enter("Dynamic", {"Tags": seg, "Values": ids, "Length": self._vec_rows})
        types = [b.mtype() for b in builders]
        self._vec, self._order, self._tags, self._vec_rows = {}, [], [], 0
        return rows23.object_bytes(c, root), types

    def close(self) -> None:
        if self._closed:
            return
        self._flush_object()
        self._closed = True
        if self.fused is None:
            return  # no values: an empty file, as super writes for no input
        end = rows23.footer_and_trailer(self.fused, self.size)
        self.out.write(end)
        self.size += len(end)

    def __enter__(self) -> Writer23:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()


def _checked(t: Type) -> Type:
    """``t``, or the EncodeError every writer gives for a type no reader could read (a
    field name twice, a surrogate in a name...)."""
    check_type(t, f"super type {str(t)[:60]}")
    return t


def _first_seen(batch: Batch) -> list[Type]:
    """The batch's types in the order their first rows come (``types`` is in another)."""
    if len(batch.types) == 1:
        return list(batch.types)
    _, first = np.unique(batch.row_types, return_index=True)
    present = np.unique(batch.row_types)
    return [batch.types[int(i)] for i in present[np.argsort(first, kind="stable")]]


def _batch_values(batch: Batch) -> list[Value]:
    """A batch's rows as exact Values (for super types without vectors here): written in
    this library's layout in memory and read back."""
    from .targets.output import file_values
    from .writer import Writer

    fd, tmp = tempfile.mkstemp(suffix=".csup", prefix="csup-v23-")
    try:
        with os.fdopen(fd, "wb") as f, Writer(f, statistics=False) as w:
            w.write_batch(batch)
        return file_values(tmp)
    finally:
        os.unlink(tmp)
