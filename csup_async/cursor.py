"""Streaming reassembly: cursors that take the next N values of a column, segment by segment.

``Reader.iter_batches`` uses these so a scan larger than memory is read with
memory bounded by about one segment per column plus the fetch window, not by
the size of the result.  Each segment holds whole values (the format's
rule), so a segment decodes on its own; a cursor keeps the undelivered rest
of its current segment and pulls the next one when asked for more.

Cursors run in a worker thread; they ask a :class:`SegmentFeed` for bytes,
which fetches the plan's requests on the event loop (a window ahead, in file
order) and frees each request's bytes once every segment in it is consumed.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from . import arrays as A
from . import decode as D
from . import parallel
from .assemble import _primitive
from .errors import FormatError
from .meta import (
    AnyColumn,
    ArrayColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    Segment,
    UnionColumn,
)
from .rangebuf import RangeBuffer
from .types import (
    INT32,
    ArrayType,
    EnumType,
    ErrorType,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
    underlying,
)


class SegmentFeed:
    """Serves segments' decompressed bytes to cursor threads, fetching requests on demand."""

    def __init__(self, loop: asyncio.AbstractEventLoop, plan: Any, available: RangeBuffer,
                 fetch: Callable[[Any], Awaitable[bytes]], *, window: int = 4,
                 max_mem_length: int = 256 << 20, max_rows: int | None = None) -> None:
        from . import assemble

        self.loop = loop
        # values one take of a list column may claim (None: assemble.DEFAULT_MAX_ROWS)
        self.max_rows = assemble.DEFAULT_MAX_ROWS if max_rows is None else max_rows
        self.available = available
        self.fetch = fetch
        self.window = window
        self.max_mem_length = max_mem_length
        self.requests = [r for r in plan.requests if not r.served]
        self.starts = [r.offset for r in self.requests]
        self.futures: dict[int, concurrent.futures.Future[bytes]] = {}
        self.data: dict[int, memoryview] = {}
        # how many reads of segments each request still has to serve (see register)
        self.left: dict[int, int] = dict.fromkeys(range(len(self.requests)), 0)
        self.bytes_read = 0
        self.peak = 0

    def _covering(self, seg: Segment) -> list[int]:
        i = bisect.bisect_right(self.starts, seg.offset) - 1
        out = []
        while 0 <= i < len(self.requests) and self.requests[i].offset < seg.end:
            if self.requests[i].end > seg.offset:
                out.append(i)
            i += 1
        return out

    def register(self, segmap: Segmap) -> None:
        """Announce that a cursor will read these segments (so shared bytes stay until read)."""
        for seg in segmap:
            if seg.length and not self.available.covers(seg.offset, seg.length):
                for i in self._covering(seg):
                    self.left[i] += 1

    def _start(self, i: int) -> None:
        if i in self.futures or i in self.data or i >= len(self.requests):
            return
        self.futures[i] = asyncio.run_coroutine_threadsafe(
            self.fetch(self.requests[i]), self.loop)

    def _get(self, i: int) -> memoryview:
        got = self.data.get(i)
        if got is None:
            self._start(i)
            for j in range(i + 1, i + 1 + self.window):
                self._start(j)
            got = memoryview(self.futures.pop(i).result())
            self.data[i] = got
            self.bytes_read += len(got)
            self.peak = max(self.peak, sum(len(d) for d in self.data.values()))
        return got

    def segment(self, seg: Segment) -> bytes | memoryview:
        if seg.length == 0:
            raw: bytes | memoryview = b""
        elif self.available.covers(seg.offset, seg.length):
            raw = self.available.get(seg.offset, seg.length)
        else:
            idx = self._covering(seg)
            if not idx:
                raise FormatError(f"segment at {seg.offset} is in no planned request")
            # a segment may span requests, and the bytes already available (the tail)
            pieces = RangeBuffer()
            for off, data in self.available.pieces():
                pieces.add(off, data)
            for i in idx:
                pieces.add(self.requests[i].offset, self._get(i))
            raw = pieces.get(seg.offset, seg.length)
            out = D.decompress_segment(raw, seg, max_mem_length=self.max_mem_length)
            for i in idx:
                self.left[i] -= 1
                if self.left[i] <= 0:
                    self.data.pop(i, None)
            return out
        return D.decompress_segment(raw, seg, max_mem_length=self.max_mem_length)

    def cancel(self) -> None:
        for f in self.futures.values():
            f.cancel()
        self.futures.clear()
        self.data.clear()


class _Chunks:
    """The undelivered values of one stream, decoded a segment at a time."""

    def __init__(self, segmap: Segmap, feed: SegmentFeed,
                 decode: Callable[[bytes | memoryview], A.Array | np.ndarray]) -> None:
        self.segmap = segmap
        self.feed = feed
        self.decode = decode
        feed.register(segmap)
        self.next_seg = 0
        self.pending: list[Any] = []
        self.avail = 0

    def _pull(self) -> bool:
        while self.next_seg < len(self.segmap):
            seg = self.segmap[self.next_seg]
            self.next_seg += 1
            arr = self.decode(self.feed.segment(seg))
            if len(arr):
                self.pending.append(arr)
                self.avail += len(arr)
                return True
        return False

    def take(self, n: int, exact: bool = True) -> list[Any]:
        while self.avail < n:
            if not self._pull():
                if exact:
                    raise FormatError(f"column stream ended {n - self.avail} values early")
                n = self.avail
                break
        out, need = [], n
        while need:
            head = self.pending[0]
            if len(head) <= need:
                out.append(head)
                self.pending.pop(0)
                need -= len(head)
            else:
                out.append(head[:need] if isinstance(head, np.ndarray) else head.slice(0, need))
                self.pending[0] = (head[need:] if isinstance(head, np.ndarray)
                                   else head.slice(need, None))
                need = 0
        self.avail -= n
        return out

    def exhausted(self) -> bool:
        return self.avail == 0 and not self._pull()


class Int32Cursor:
    def __init__(self, segmap: Segmap, feed: SegmentFeed) -> None:
        self.chunks = _Chunks(segmap, feed, lambda b: parallel.decode_int32s(b, None))

    def take(self, n: int, exact: bool = True) -> np.ndarray:
        parts = self.chunks.take(n, exact)
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)


class RunsCursor:
    """Presence runs (present, absent, ...) turned into validity for the next N positions."""

    def __init__(self, segmap: Segmap, feed: SegmentFeed) -> None:
        self.ints = Int32Cursor(segmap, feed)
        self.state = True  # the next run's kind
        self.left = 0  # positions left in the current run
        self.cur = True

    def take(self, n: int) -> np.ndarray:
        out = np.empty(n, bool)
        pos = 0
        while pos < n:
            if self.left == 0:
                run = int(self.ints.take(1)[0])
                if run < 0:
                    raise FormatError("negative presence run")
                self.cur = self.state
                self.state = not self.state
                self.left = run
                continue
            k = min(self.left, n - pos)
            out[pos : pos + k] = self.cur
            pos += k
            self.left -= k
        return out


class Cursor:
    def take(self, n: int) -> A.Array:
        raise NotImplementedError


class _Null(Cursor):
    def __init__(self, t: Type) -> None:
        self.t = t

    def take(self, n: int) -> A.Array:
        return A.null_array(self.t, n)


class _Prim(Cursor):
    def __init__(self, t: PrimitiveType | EnumType, segmap: Segmap, feed: SegmentFeed) -> None:
        self.t = t
        self.chunks = _Chunks(segmap, feed, lambda b: _primitive(t, b, None))

    def take(self, n: int) -> A.Array:
        parts = self.chunks.take(n)
        if not parts:
            return A.null_array(self.t, 0)
        return parts[0] if len(parts) == 1 else A.concat(parts, self.t)


class _Masked(Cursor):
    """Values placed by presence runs: the child holds only the present positions."""

    def __init__(self, runs: RunsCursor, child: Cursor) -> None:
        self.runs, self.child = runs, child

    def take(self, n: int) -> A.Array:
        valid = self.runs.take(n)
        return self.child.take(int(valid.sum())).expand(valid)


class _Retyped(Cursor):
    def __init__(self, t: Type, child: Cursor) -> None:
        self.t, self.child = t, child

    def take(self, n: int) -> A.Array:
        return self.child.take(n).with_type(self.t)


class _Record(Cursor):
    def __init__(self, t: RecordType, fields: list[Cursor]) -> None:
        self.t, self.fields = t, fields

    def take(self, n: int) -> A.Array:
        return A.StructArray(self.t, n, tuple(f.take(n) for f in self.fields))


class _List(Cursor):
    def __init__(self, t: Type, lengths: Int32Cursor, children: list[Cursor],
                 max_rows: int) -> None:
        self.t, self.lengths, self.children = t, lengths, children
        self.max_rows = max_rows

    def take(self, n: int) -> A.Array:
        offsets = (D.lengths_to_offsets(self.lengths.take(n), max_total=self.max_rows)
                   if n else np.zeros(1, np.int64))
        total = int(offsets[-1])
        kids = [c.take(total) for c in self.children]
        if isinstance(self.t, MapType):
            return A.MapArray(self.t, offsets, kids[0], kids[1])
        return A.ListArray(self.t, offsets, kids[0])


class _Union(Cursor):
    def __init__(self, t: UnionType, tags: Int32Cursor, members: list[Cursor]) -> None:
        self.t, self.tags, self.members = t, tags, members

    def take(self, n: int) -> A.Array:
        tags = self.tags.take(n) if n else np.zeros(0, np.int32)
        if tags.size and (tags.min() < 0 or tags.max() >= len(self.members)):
            raise FormatError("union tag out of range")
        counts = np.bincount(tags, minlength=len(self.members))
        return A.UnionArray(self.t, tags.astype(np.int32, copy=False),
                            tuple(m.take(int(k)) for m, k in zip(self.members, counts,
                                                                  strict=True)))


def cursor_for(t: Type, col: AnyColumn | None, feed: SegmentFeed) -> Cursor:
    """A cursor over the values of type ``t`` stored in ``col``."""
    if col is None:
        return _Null(t)
    if isinstance(col, NullsColumn):
        inner = cursor_for(t, col.values, feed)
        return _Masked(RunsCursor(col.presence, feed), inner) if col.presence else inner
    u = underlying(t)
    if isinstance(u, ErrorType):
        return _Retyped(t, cursor_for(u.inner, col, feed))
    if u is not t:
        return _Retyped(t, cursor_for(u, col, feed))
    if isinstance(t, (PrimitiveType, EnumType)) and isinstance(col, PrimitiveColumn):
        return _Prim(t, col.segmap, feed)
    if isinstance(t, RecordType) and isinstance(col, RecordColumn):
        return _Record(t, [_field(f.type, fc.column, fc.presence, feed)
                           for f, fc in zip(t.fields, col.fields, strict=True)])
    if isinstance(t, (ArrayType, SetType)) and isinstance(col, ArrayColumn):
        return _List(t, Int32Cursor(col.lengths, feed), [cursor_for(t.elem, col.values, feed)],
                     feed.max_rows)
    if isinstance(t, MapType) and isinstance(col, MapColumn):
        return _List(t, Int32Cursor(col.lengths, feed),
                     [cursor_for(t.key, col.keys, feed), cursor_for(t.value, col.values, feed)],
                     feed.max_rows)
    if isinstance(t, UnionType) and isinstance(col, UnionColumn):
        return _Union(t, Int32Cursor(col.tags, feed),
                      [cursor_for(m, c, feed) for m, c in zip(t.types, col.columns, strict=True)])
    raise FormatError(f"column does not match type {t}")


def _field(t: Type, col: AnyColumn | None, presence: Segmap, feed: SegmentFeed) -> Cursor:
    if col is None:
        return _Null(t)
    inner = cursor_for(t, col, feed)
    return _Masked(RunsCursor(presence, feed), inner) if presence else inner


def path_cursor(t: Type, col: AnyColumn | None, path: tuple[str, ...],
                feed: SegmentFeed) -> Cursor | None:
    """A cursor over the values at ``path``, or None when this type has no such path."""
    if not path:
        return cursor_for(t, col, feed)
    name, rest = path[0], path[1:]
    if isinstance(col, NullsColumn):
        inner = path_cursor(t, col.values, path, feed)
        if inner is None or not col.presence or isinstance(inner, _Null):
            return inner  # absent, or all null: the presence need not be read
        return _Masked(RunsCursor(col.presence, feed), inner)
    u = t
    while isinstance(u, (NamedType, ErrorType)):
        u = u.inner
    if not isinstance(u, RecordType) or u.field(name) is None:
        return None
    ft = u.field(name)
    assert ft is not None
    target = _path_type(ft.type, rest)
    if target is None:
        return None
    if col is None:
        return _Null(target)
    if not isinstance(col, RecordColumn) or col.field(name) is None:
        raise FormatError(f"record column lacks field {name!r}")
    fc = col.field(name)
    assert fc is not None
    if fc.column is None:
        return _Null(target)
    inner = path_cursor(ft.type, fc.column, rest, feed)
    if inner is None or isinstance(inner, _Null):
        return inner
    return _Masked(RunsCursor(fc.presence, feed), inner) if fc.presence else inner


def _path_type(t: Type, path: tuple[str, ...]) -> Type | None:
    for name in path:
        while isinstance(t, (NamedType, ErrorType)):
            t = t.inner
        if not isinstance(t, RecordType) or t.field(name) is None:
            return None
        f = t.field(name)
        assert f is not None
        t = f.type
    return t


__all__ = ["INT32", "Cursor", "Int32Cursor", "RunsCursor", "SegmentFeed", "cursor_for",
           "path_cursor"]
