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

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..model.errors import CsupError, EncodeError
from ..model.types import (
    NULL,
    ArrayType,
    RecordType,
    Type,
)
from ..model.values import infer_type
from .batch import Batch, Slot
from .fuse import encode_fused, fuse_all, fuse_types
from .pycolumns import (
    K_DICT,
    K_LIST,
    K_NONE,
    PRIM_TYPE,
    Column,
    How,
    Unhandled,
)
from .writer import Writer

__all__ = ["write_rows", "write_chunks", "CHUNK_ROWS"]

#: Rows typed and shredded at once.
CHUNK_ROWS = 1 << 13
#: Below this many rows a chunk that cannot be shredded goes value by value.
_SMALLEST = 256


class Chunk:
    """Rows typed and shredded once; :meth:`batch` gives any range of them.

    Fusing (``open_types`` given: the super type each kind of row is written as so
    far, updated here), rows are written under one super type per kind (every
    dict row under one record type, every list row under one array type), the
    fusion of the chunk's with the one before: a chunk that adds a field or a
    member starts a new super type from its first row (a bounded window: nothing
    is buffered beyond the chunk).
    """

    def __init__(self, rows: list[Any], open_types: dict[int, Type] | None = None,
                 times: bool = False, col: Column | None = None) -> None:
        self.col = col if col is not None else Column(rows, 0, How(open_types is not None,
                                                                     times))
        if open_types is None:
            self.types, ids = self.col.types, self.col.ids
        else:
            kinds = sorted(self.col.parts)
            for k in kinds:
                if k != K_NONE:
                    open_types[k] = fuse_types(open_types.get(k, NULL),
                                               self.col.parts[k].types[0])
            self.types = [open_types.get(k, NULL) for k in kinds]
            lookup = np.zeros(len(PRIM_TYPE) + 2, np.int64)
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


def write_chunk(w: Writer, rows: list[Any], open_types: dict[int, Type] | None,
                 times: bool) -> None:
    try:
        chunk = Chunk(rows, open_types, times)
    except (Unhandled, RecursionError):
        if len(rows) <= _SMALLEST:
            _write_values(w, rows, open_types)
            return
        step = max(_SMALLEST, len(rows) // 8)
        for s in range(0, len(rows), step):
            write_chunk(w, rows[s: s + step], open_types, times)
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
    seen: dict[int, list[Type]] = {K_DICT: [], K_LIST: []}
    for r in rows:
        kind = None
        if isinstance(r, (dict, list, tuple)):
            try:
                t = infer_type(r)
            except CsupError:
                t = None  # w.write below raises the same error at the same row
            kind = K_DICT if isinstance(t, RecordType) else K_LIST if isinstance(
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
        write_chunk(w, chunk, open_types, infer_times)
