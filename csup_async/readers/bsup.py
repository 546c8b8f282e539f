"""Reading a BSUP (ZNG) object through the library's Reader API.

``open()`` reads the tail as for any CSUP object; when it holds no CSUP trailer,
the object starts with a sound BSUP frame and its frames walk to the end (or its
name says BSUP: then a damaged stream is a BSUP error), the reader becomes a
:class:`BsupReader`: the same verbs (``scan``, ``iter_batches``, ``read_rows``,
``read_values``, ``take``, ``count_rows``, ``schema``) over the values of the
stream.  BSUP has no column index, so the open reads the whole object (one
or two more requests for what the tail read did not hold) and walks its frames once
(types, row count), decoding no body.

A scan of top-level columns of a stream of records is decoded column-wise
(:mod:`csup_async.scan.bsup`, the path the lake's ``.zng`` objects take); anything else
(a nested path, a value that is not a record, ``limit=``, which stops
decoding at the frame holding the last row it needs) goes value by value.
``filter=`` is evaluated exactly on the decoded columns by the evaluator every
reader uses.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import planner as P
from planner.request import ScanRequest

from .. import arrays as A
from ..format.bsup.frames import iter_raw_values, read_frames, stream_shape
from ..format.bsup.tags import read_uvarint
from ..format.bsup.valuecodec import decode_value
from ..format.csup import find_trailer
from ..format.superdb import bsup2, bsup5
from ..format.superdb.bsup5 import NONE, columnar
from ..model.errors import (
    CsupError,
    FormatError,
    LimitError,
    TruncatedError,
)
from ..model.progress import Planned
from ..model.types import RecordType, Type, underlying
from ..model.values import UnionValue, Value
from ..scan.bsup import NotColumnar, Walked, decode_records, part_column, walk
from ..scan.result import ScanResult, ScanStats
from ..scan.superdb.columns import as_member, has_union, lookup
from ..stores import Store
from ..stores.rangebuf import RangeBuffer
from ..stores.tasks import gather_or_cancel
from .reader import Reader
from .wholeobject import WholeObjectReader

__all__ = ["BsupReader", "BsupMeta", "to_bsup", "open_runs", "reader_of_frames",
           "start_problem"]

#: Suffixes that name a BSUP object: a hint for the error message only (content decides).
SUFFIXES = (".zng", ".bsup")


#: ``start_problem``'s answer when the first frame runs past the bytes given it.
MORE = "its first frame runs past the bytes read"


def start_problem(data: bytes, size: int) -> str | None:
    """Why ``data`` (the first bytes of a ``size``-byte object) does not start a BSUP
    stream, or None when it does: its first frame is whole and sound (a known version
    and kind; typedefs that parse, or values of types it has), or the end marker.
    :data:`MORE` when the first frame's header is sound but the frame runs past ``data``
    (yet not past the object): the caller reads more and asks again."""
    if not data:
        return "the object is empty"
    try:
        _, _, end = next(read_frames(data))
    except StopIteration:
        return "the object is empty"
    except TruncatedError:
        try:
            rest, pos = read_uvarint(data, 1, len(data))
        except CsupError:
            return MORE
        length = (rest << 4) | (data[0] & 0x0F)
        return MORE if pos + length <= size else (
            f"its first frame of {length} bytes runs past the {size}-byte object")
    except CsupError as e:
        return f"its first frame is not BSUP: {e.message}"
    try:
        stream_shape(data[:end])
    except CsupError as e:
        return f"its first frame is not BSUP: {e.message}"
    return None


class BsupMeta:
    """What the open learned of the stream: its size, types and row count."""

    def __init__(self, object_size: int, super_types: tuple[Type, ...], row_count: int) -> None:
        self.object_size = object_size
        self.super_types = super_types
        self.row_count = row_count
        self.columns: tuple[Any, ...] = ()  # no column index (the CLI's inspect asks)


class BsupReader(WholeObjectReader):
    """A Reader over a BSUP object (made by ``open``, never directly)."""

    bsup = True
    holds = "value"
    _walked: Walked | None = None  # the values walked by ``hold`` (records only)
    #: the SuperDB BSUP version held as it is, decoded by its own codec: 5 (super main),
    #: or 1/2 with what version 0 cannot say (optional fields, fusion types); 0: the
    #: stream is (or was made) version 0
    _held = 0
    _source_version = 0  # the BSUP version of the object as stored (before any to-v0)
    meta: BsupMeta  # type: ignore[assignment]

    def _load_bsup(self, data: bytes, types: list[Type], rows: int, t0: float) -> None:
        limit = self.read_options.limits.max_rows
        if rows > limit:
            raise LimitError(f"the stream holds {rows:,} values, over max_rows={limit:,}",
                             path=self.path)
        self._data = data
        self.meta = BsupMeta(len(data), tuple(types), rows)
        self.open_stats.metadata_requests = self.open_stats.requests
        self.open_stats.wall = time.perf_counter() - t0

    def hold(self, data: bytes, t0: float) -> None:
        """Read ``data``, whole BSUP streams, as this reader's values: its frames are
        walked (types, row count), no body decoded.  BSUP versions 1 and 2 (a
        SuperDB database's objects) are read as version 0 (:mod:`..superdb.tov0`)."""
        try:
            if data[:1] == b"\x85":  # version 5: held as it is
                types, rows = held_shape(data, 5)
                self._held = 5
                self._load_bsup(data, types, rows, t0)
                return
            if data and data[0] != 0xFF and data[0] & 0x80:
                from ..format.superdb.tov0 import NoV0Form, to_v0

                try:
                    data = to_v0(data)
                except NoV0Form:  # optional fields or fusion types: held as it is
                    version = data[0] & 0x7F
                    types, rows = held_shape(data, version)
                    self._held = version
                    self._load_bsup(data, types, rows, t0)
                    return
            try:  # records (as a lake's objects hold): the one walk a scan decodes from
                self._walked = walk([data], max_total=self.max_mem_length)
                types = list(dict.fromkeys(self._walked.types))
                rows = int(self._walked.slot.size)
            except NotColumnar:
                types, rows = stream_shape(data, max_total=self.max_mem_length)
        except CsupError as e:
            raise e.with_path(self.path) from None
        self._load_bsup(data, types, rows, t0)

    @property
    def bsup_version(self) -> int:
        """The BSUP version of the object as stored (0 Zed's; 1, 2, 5 SuperDB's)."""
        return self._held or self._source_version

    @property
    def frames(self) -> bytes:
        """The bytes of the frames this reader holds (the whole object, or the runs it
        was opened on)."""
        return self._data

    # -------------------------------------------------------------- schema ---
    @property
    def schema(self) -> Any:
        from .superdb import HeaderLayoutSchema

        return HeaderLayoutSchema(self.meta)  # type: ignore[arg-type]  # (super_types only)

    # -------------------------------------------------------------- decode ---
    def _values(self, typed: bool = False, fused: bool = False) -> Iterator[Value]:
        """Every value of the stream, decoded exactly, in order (``typed``: unions inside
        as UnionValue; ``fused``: a SuperDB fusion value as its subtype's, as super reads
        it, :mod:`~csup_async.format.superdb.defuse`)."""
        if self._held:
            yield from self._values_held(typed, fused)
            return
        for t, body in iter_raw_values(self._data, max_total=self.max_mem_length):
            yield Value(t, decode_value(t, body, typed=typed))

    def _values_held(self, typed: bool, fused: bool = False) -> Iterator[Value]:
        """The values of a SuperDB stream held as it is, by its version's decoder."""
        from ..format.superdb.defuse import top_value

        for t, body in _held_values(self._data, self._held):
            try:
                v = _held_decode(t, body, self._held, typed, fused)
            except CsupError:
                raise
            except (ValueError, IndexError, KeyError, TypeError, RecursionError,
                    struct.error) as e:
                raise FormatError(f"a corrupt BSUP version-{self._held} value: "
                                  f"{type(e).__name__}: {e}") from None
            yield top_value(t, v) if fused else Value(t, v)

    def _scan_values(self, typed: bool) -> Iterator[Value]:
        """The values a scan puts in columns: version 5's ``none`` (an absent value) as
        null, as its column types say (:meth:`_types`)."""
        if not self._held:
            return self._values(typed)
        return (Value(v.type, _none_as_null(v.value)) for v in self._values(typed))

    def _types(self, paths: list[str]) -> dict[str, Type]:
        """Each path's column type (version 5's ``none`` as null: see bsup5.columnar)."""
        got = super()._types(paths)
        if not self._held:
            return got

        return {p: columnar(t) for p, t in got.items()}

    def _columnar(self, paths: list[str]) -> dict[str, A.Array] | None:
        """The columns of ``paths`` decoded column-wise, or None when that path does not
        take them (see the module docstring)."""
        if self._held or not paths or any(len(_comps(p)) != 1 for p in paths):
            return None
        if not all(isinstance(underlying(t), RecordType) for t in self.meta.super_types):
            return None

        if any(has_union(t) for t in self._types(paths).values()):
            return None  # column-wise values are plain: a union's members would be lost
        names = {p: _comps(p)[0] for p in paths}
        try:
            part = decode_records(self._walked or [self._data], frozenset(names.values()))
        except NotColumnar:
            return None
        return {p: part_column([part], names[p], part.n) for p in paths}

    def _decode(self, paths: list[str], limit: int | None) -> tuple[dict[str, A.Array], int]:
        """The columns of ``paths`` over the first ``limit`` rows (all when None)."""
        try:
            if limit is None:
                got = self._columnar(paths)
                if got is not None:
                    return got, self.meta.row_count
            types = self._types(paths)
            if not any(has_union(t) for t in types.values()):
                values = list(itertools.islice(self._scan_values(False), limit))
                cols = {p: A.from_pylist(types[p], [_at(v, _comps(p)) for v in values])
                        for p in paths}
            else:  # each union value tagged with its member (see scan.superdb.columns)
                values = list(itertools.islice(self._scan_values(True), limit))
                cols = {p: A.from_pylist(types[p], [
                    as_member(lookup(v, _comps(p), typed=True), None, types[p])
                    for v in values]) for p in paths}
        except CsupError as e:
            raise e.with_path(self.path) from None
        return cols, len(values)

    # ---------------------------------------------------------------- read ---
    async def plan_with(self, request: ScanRequest) -> Any:
        """What ``scan`` with the same arguments reads: nothing more (the open read the
        whole object; a stream has no column index), the columns decoded from it."""
        from planner.whole import WholeObjectPlan

        paths = self.paths_of(request)
        self._check_paths(paths)
        wanted = self._filter_paths(self._filter(request.filter), paths)
        return WholeObjectPlan(tuple(wanted), (), self.meta.object_size, self.meta.row_count,
                               f"BSUP version {self.bsup_version}")

    async def scan_with(self, request: ScanRequest) -> ScanResult:
        """These columns of the rows (``rows``: a slice of them; ``limit``: at most so
        many, decoding stopped once they are had when there is no filter).

        Budget and progress as for :meth:`Reader.scan`: the open read the whole stream,
        so a scan sends no request (the budget always holds; progress is one event, 0
        of 0 bytes, the file done)."""
        async def prepare() -> Planned:
            return Planned((0, 0), lambda: self._scan(request))

        return await self._metered(request, prepare)  # type: ignore[no-any-return]

    async def _scan(self, request: ScanRequest) -> ScanResult:
        """:meth:`scan` of a request."""
        paths = self.paths_of(request)
        self._check_paths(paths)
        expr = self._filter(request.filter)
        limit = request.limit
        t0 = time.perf_counter()
        lo, hi = self._row_bounds(request.rows)
        stop = hi if expr is not None or limit is None else min(hi, lo + limit)
        cols, n = await self._in_thread(self._decode, self._filter_paths(expr, paths),
                                  None if stop >= self.meta.row_count else stop)
        cols = {p: a.slice(lo, min(stop, n)) for p, a in cols.items()}
        n = max(0, min(stop, n) - lo)
        if expr is not None:
            cols, n = self._keep(expr, cols, n, paths)
            if limit is not None and n > limit:
                cols, n = {p: a.slice(0, limit) for p, a in cols.items()}, limit
        stats = ScanStats(bytes_needed=self.meta.object_size, wall=time.perf_counter() - t0)
        return ScanResult(cols, n, stats, None)

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` off the event loop, within the reader's ``timeout``."""
        return await self._timed(asyncio.to_thread(fn, *args))

    async def batches_with(self, request: ScanRequest) -> AsyncIterator[ScanResult]:
        """Batches of at most ``batch_rows`` rows of one whole-object scan (``prefetch``
        checked, not used: the stream is held; budget and progress as for :meth:`scan`)."""
        batch_rows = request.batch_rows
        res = await self.scan_with(request)
        for lo in range(0, res.num_rows, batch_rows):
            hi = min(res.num_rows, lo + batch_rows)
            yield ScanResult({p: a.slice(lo, hi) for p, a in res.columns.items()}, hi - lo,
                             res.stats if lo == 0 else ScanStats(), None)

    async def read_values(self) -> list[Value]:
        """Every value with its type (unions inside as UnionValue), as the BSUP codec
        decodes it; a SuperDB fusion value with its own subtype, as super reads it."""
        return await self._all(True)

    async def read_rows(self) -> list[Any]:
        """Every value in order, in the plain Python mapping."""
        return [v.value for v in await self._all(False)]

    async def _all(self, typed: bool) -> list[Value]:
        try:
            return await self._in_thread(  # type: ignore[no-any-return]
                lambda: list(self._values(typed, fused=typed)))
        except CsupError as e:
            raise e.with_path(self.path) from None


def _none_as_null(v: Any) -> Any:
    """``v`` with version 5's ``none`` values (bsup5.NONE) as None, at any depth."""
    if v is NONE:
        return None
    if isinstance(v, dict):
        return {k: _none_as_null(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_none_as_null(x) for x in v]
    if isinstance(v, UnionValue) and v.value is NONE:
        return None
    return v


def _comps(path: str) -> tuple[str, ...]:
    return P.parse_path(path) if path else ()


def _at(v: Value, comps: tuple[str, ...]) -> Any:
    """The plain value at ``comps`` in ``v`` (None past a missing field or a non-record)."""
    x: Any = v.value
    for c in comps:
        if not isinstance(x, dict):
            return None
        x = x.get(c)
    return x


async def to_bsup(reader: Reader, t0: float | None = None) -> BsupReader | None:
    """The :class:`BsupReader` of the object ``reader`` was opening (its open found no
    CSUP trailer in ``reader.tail``) when it starts a BSUP stream, read whole; None
    when it does not (the caller raises the trailer error), unless its name says BSUP
    (``.zng``, ``.bsup``): then a FormatError says what its first bytes are."""
    tail = getattr(reader, "tail", None)
    if tail is None:
        return None
    t0 = time.perf_counter() if t0 is None else t0
    size = tail.info.size
    try:
        find_trailer(tail.data, size)
    except CsupError:
        pass  # no trailer (or a BSUP record where one would be): maybe a BSUP stream
    else:
        return None  # a trailer: a CSUP or VNG object whose metadata failed
    if tail.offset == 0:
        head = bytes(tail.data)
    else:
        head = await _read(reader, 0, min(size, P.tail_prefetch_size(reader.profile, size),
                                           tail.offset))
    named = reader.key.split("?", 1)[0].lower().endswith(SUFFIXES)
    source_version = 0
    if head[:1] == b"\x85":  # BSUP 5 (super main): held as it is, read by its decoder
        return await _as_held(reader, head, size, t0, 5)
    if head[:1] in (b"\x81", b"\x82"):  # BSUP 1/2 (super v0.2.0/v0.3.0): as version 0
        raw_version = head[0] & 0x7F
        v0, raw = await _as_v0(reader, head, size)
        if v0 is None:  # optional fields or fusion types: held as it is
            return await _as_held(reader, raw, size, t0, raw[0] & 0x7F)
        head, size, source_version = v0, len(v0), raw_version
    problem = start_problem(head, size) if size else None
    if problem == MORE and tail.offset > 0:
        if size > reader.max_mem_length:
            problem = (f"its first frame is larger than its first {len(head):,} bytes, and "
                       f"the object is larger than max_mem_length={reader.max_mem_length:,}")
        else:  # the object whole (as a BSUP object is read anyway), then its first frame
            head = await _whole(reader, head)
            problem = start_problem(head, size)
    if not named and head[:1] == b"\xff":  # no values, no types: nothing says BSUP
        problem = "it starts with an end-of-stream marker"
    # an empty object is no values: what super main writes for no rows (a CSUP v23 file
    # of no objects has no footer nor trailer), read as a stream of none
    if problem is not None:
        if named:
            raise FormatError(f"not a CSUP object (no trailer) nor a BSUP stream: {problem}",
                              path=reader.path)
        return None
    if len(head) < size:
        if size > reader.max_mem_length:
            if named:
                raise LimitError(f"a BSUP object is read whole: {size:,} bytes exceed "
                                 f"max_mem_length={reader.max_mem_length:,}", path=reader.path)
            return None
        head = await _whole(reader, head)
    try:  # the frames walked, no body decoded: a truncated or corrupt stream fails here
        types, rows = stream_shape(head, max_total=reader.max_mem_length)
    except CsupError as e:
        if named:
            raise e.with_path(reader.path) from None
        # unnamed, the object must be a whole BSUP stream to be one (a damaged CSUP or
        # VNG file may start like a frame): else the trailer error stands
        return None
    new = reader.successor(BsupReader)
    new._source_version = source_version
    try:
        new._load_bsup(head, types, rows, t0)
    except BaseException:
        await new.close()  # it owns the store now
        raise
    return new


async def _as_held(reader: Reader, head: bytes, size: int, t0: float,
                   version: int) -> BsupReader:
    """The reader of a SuperDB BSUP object read whole and held as it is: version 0
    cannot say version 5's optional fields, ``none``, fusion or recursive types (nor
    version 1/2's optional fields and fusion types), so its values are decoded by
    :mod:`..format.superdb.bsup5` or ``bsup2`` (rows, not columns)."""
    head = await _whole_within(reader, head, size)
    try:
        types, rows = held_shape(head, version)
    except CsupError as e:
        raise e.with_path(reader.path) from None
    new = reader.successor(BsupReader)
    new._held = version
    try:
        new._load_bsup(head, types, rows, t0)
    except BaseException:
        await new.close()
        raise
    return new


def _held_values(data: bytes, version: int) -> list[tuple[Type, Any]]:
    if version == 5:
        return bsup5.read_values(data)
    return bsup2.read_values(data, bsup2.V1 if version == 1 else bsup2.V2)


def _held_decode(t: Type, body: Any, version: int, typed: bool, fused: bool = False) -> Any:
    if version == 5:
        return bsup5.decode_value(t, body, typed=typed, fused=fused, empty=True)
    return bsup2.decode_value(t, body, typed=typed, fused=fused,
                              dialect=bsup2.V1 if version == 1 else bsup2.V2)


def held_shape(data: bytes, version: int) -> tuple[list[Type], int]:
    """The types (first seen first) and value count of SuperDB BSUP ``data`` of
    ``version`` (1, 2 or 5); a truncated or corrupt stream is a CsupError, never another
    exception.  A fusion type is given as its supertype
    (:func:`..format.superdb.bsup5.defused`): its values decode as that, and CSUP gives
    the same values those super types."""
    try:
        raw = _held_values(data, version)
    except CsupError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, AssertionError,
            RecursionError, struct.error) as e:
        raise FormatError(f"a corrupt BSUP version-{version} stream: {type(e).__name__}: "
                          f"{e}") from None
    return list(dict.fromkeys(bsup5.defused(t) for t, _ in raw)), len(raw)


async def _as_v0(reader: Reader, head: bytes, size: int) -> tuple[bytes | None, bytes]:
    """The object whole, BSUP version 1 or 2, as version 0 (:mod:`..superdb.tov0`):
    ``(version-0 bytes, b"")``, or ``(None, the object's bytes)`` when version 0 cannot
    say its values (optional fields, fusion types)."""
    from ..format.superdb.tov0 import NoV0Form, to_v0

    head = await _whole_within(reader, head, size)
    try:
        return to_v0(head), b""
    except NoV0Form:
        return None, head
    except CsupError as e:
        raise e.with_path(reader.path) from None


async def _read(reader: Reader, off: int, n: int) -> bytes:
    """``n`` bytes at ``off`` of the object (the version the tail read saw)."""
    data = bytes(await reader.store.read_range(reader.key, off, n, reader.tail.info.version))
    reader.open_stats.requests += 1
    reader.open_stats.bytes_read += len(data)
    if len(data) != n:
        raise TruncatedError(f"short read: {len(data)} of {n} bytes at {off}",
                             path=reader.path)
    return data


async def _whole_within(reader: Reader, head: bytes, size: int) -> bytes:
    """The object whole (:func:`_whole`), or a LimitError when it is larger than
    ``max_mem_length`` (a BSUP object that is not a stream of frames is held whole)."""
    if size > reader.max_mem_length:
        raise LimitError(f"a BSUP object is read whole: {size:,} bytes exceed "
                         f"max_mem_length={reader.max_mem_length:,}", path=reader.path)
    return await _whole(reader, head) if len(head) < size else head


async def _whole(reader: Reader, head: bytes) -> bytes:
    """The object whole: ``head`` (its first bytes, none past the tail read), the bytes
    between it and the tail read, and the tail read."""
    tail = reader.tail
    if len(head) < tail.offset:
        head += await _read(reader, len(head), tail.offset - len(head))
    return head[:tail.offset] + bytes(tail.data)


async def open_runs(store: Store, key: str, runs: Sequence[tuple[int, int]], *,
                    requests: Sequence[tuple[int, int]] | None = None,
                    **options: Any) -> BsupReader:
    """A :class:`BsupReader` over the frames in ``runs`` of the BSUP object at ``key``:
    byte ranges ``(offset, length)``, each whole streams (frames are self-delimiting and
    a stream ends with its end-of-stream marker, so the runs one after another are one
    stream of their values: a lake's seek-index chunks, or ``[(0, size)]`` for all of
    it).  ``requests`` are the reads that fetch them (default: the planner's coalescing
    of the runs for the reader's profile); they are sent at once, and the reader's
    ``open_stats`` counts them.  ``options`` are ``open``'s reader options."""
    t0 = time.perf_counter()
    reader = BsupReader(store, key, owns_store=False, **options)
    if requests is None:
        requests = [(q.offset, q.length) for q in P.coalesce(runs, reader.profile)]
    sem = asyncio.Semaphore(max(1, reader.concurrency))
    held = RangeBuffer()

    async def one(off: int, n: int) -> None:
        async with sem:
            data = await store.read_range(key, off, n)
        if reader.open_stats.ttfb is None:
            reader.open_stats.ttfb = time.perf_counter() - t0
        reader.open_stats.requests += 1
        reader.open_stats.bytes_read += len(data)
        if len(data) != n:
            raise TruncatedError(f"read {len(data)} of the {n} bytes at {off}: the object "
                                 f"is shorter than its frames were said to be",
                                 path=reader.path)
        held.add(off, data)

    try:
        await gather_or_cancel([one(off, n) for off, n in requests])
        for off, n in runs:
            if not held.covers(off, n):
                raise CsupError(f"the reads do not cover the frames at {off} (+{n})",
                                path=reader.path)
        data = b"".join(bytes(held.get(off, n)) for off, n in runs)
    except CsupError as e:
        raise e.with_path(reader.path) from None
    if len(data) <= _WALK_ON_LOOP:  # a walk of this size takes less than a thread hop
        reader.hold(data, t0)
    else:
        await asyncio.to_thread(reader.hold, data, t0)
    return reader


#: Frames up to this many bytes are walked on the event loop (about a millisecond).
_WALK_ON_LOOP = 128 << 10


def reader_of_frames(store: Store, key: str, data: bytes, **options: Any) -> BsupReader:
    """A :class:`BsupReader` over frames already read (``BsupReader.frames`` of an
    earlier one): the object at ``key`` is not read again."""
    reader = BsupReader(store, key, owns_store=False, **options)
    reader.hold(data, time.perf_counter())
    return reader
