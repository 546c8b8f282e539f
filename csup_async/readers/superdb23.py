"""Opening a CSUP version-23 file: its parts from the end, its objects' metadata from
each part's head, in as few round trips as the layout allows.

The opener's tail read holds the last part's trailer and footer (its fused
type), and the whole file when it is small.  Otherwise one read at the head of
the part (sized as the tail read) holds its first object's header, metadata
and types: a file of one part and one object (at most 120,000 values) costs the
tail read and this head read.  Earlier parts (``cat`` of files) are found from
each trailer's part size, further objects of a part from each object's sizes
(a chain, as for v16: :func:`planner.superdb.hop_read`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import planner as P
from planner.superdb import OpenCost, hop_read, window_read

from ..format.superdb.bsup5 import sort_union
from ..format.superdb.meta import Header, check_row_count, file_types
from ..format.superdb.v23 import (
    FOOTER_HEADER,
    OBJECT_HEADER,
    TRAILER,
    ObjectMeta5,
    Part,
    is_v23_tail,
    parse_footer,
    parse_metadata,
    parse_object_header,
    parse_trailer,
)
from ..model.errors import CsupError, LimitError, TruncatedError
from ..model.types import Type
from ..scan.superdb.held import HeldBytes
from .parsememo import parse_memo

if TYPE_CHECKING:
    from ..stores import TailRead


async def load_v23(self: Any, tail: TailRead, t0: float, head: bytes | None,
                   view: Any, speculative: Any = None,
                   held: Sequence[tuple[int, bytes]] = ()) -> None:
    """Read the parts and objects of the v23 file ``self`` (a HeaderLayoutReader) opened
    on ``tail``; ``view``: the class of its ``meta`` (readers.superdb.FileView);
    ``speculative``: a head read sent with the tail read (:mod:`.headhint`); ``held``:
    ``(offset, bytes)`` held already (a Spark driver's, shipped: :mod:`.held23`)."""

    if head is None and speculative is not None:
        from .headhint import speculated

        head = await speculated(self, tail, speculative)
    recalled, self.recalled = await _recalled(self, tail), None
    size, version = tail.info.size, tail.info.version
    buf, made = _seed(self, tail, head, recalled, held)
    reqs, nbytes = self.open_stats.requests, self.open_stats.bytes_read
    first_reads = reqs
    head_read = head is not None or any(o == 0 for o, _ in recalled)
    prefetch = P.tail_prefetch_size(self.profile, size)

    async def read(off: int, n: int) -> None:
        nonlocal reqs, nbytes
        data = bytes(await self.store.read_range(self.key, off, n, version))
        if len(data) != n:
            raise TruncatedError(f"short read: {len(data)} of {n} bytes at {off}")
        buf.add(off, data)
        self._held.append((off, data))
        made.append((off, n))
        reqs += 1
        nbytes += n

    async def need(off: int, n: int, lo: int, hi: int) -> None:
        """Hold ``[off, off + n)``: a read ending there, widened backwards to the prefetch
        size (not before ``lo``), as the trailers and footers are read towards the head."""
        if buf.covers(off, n):
            return
        start = max(lo, min(off, off + n - prefetch))
        await read(start, off + n - start)

    parts: list[Part] = []
    objects: list[ObjectMeta5] = []
    in_first = 0
    try:
        parts = await _read_parts(buf, size, need)
        largest = 0
        for part in parts:
            off, in_part = part.start, 0
            while off < part.footer:
                if part.footer - off < OBJECT_HEADER:
                    raise TruncatedError(f"{part.footer - off} bytes at {off} before the "
                                         "footer are not a CSUP object")
                if not buf.covers(off, OBJECT_HEADER):
                    if off == part.start and not head_read:
                        end = min(off + prefetch, part.footer)
                        if tail.offset > off:  # the tail read holds the rest already
                            end = max(min(end, tail.offset), off + OBJECT_HEADER)
                        await read(off, end - off)
                        head_read = True
                    elif (win := window_read(*_gap(buf, self._held, part.start, off,
                                                   part.footer),
                                             off - part.start, in_part,
                                             self.profile)) is not None:
                        # small objects: the rest of the part from the first byte not
                        # held (the data of those before it too) at once
                        await asyncio.gather(*(read(o, n) for o, n in win))
                    else:
                        await read(*hop_read(off, part.footer, largest))
                hdr = _object_header(buf, off, part.footer, self.max_metadata)
                start = off + OBJECT_HEADER
                n = hdr.meta_size + hdr.type_size
                if not buf.covers(start, n):
                    have = min(buf.held_until(start), start + n) if buf.covers(start, 1) else (
                        start)
                    await read(have, start + n - have)
                if reqs == first_reads + (1 if head_read and head is None and not recalled
                                          else 0):
                    in_first += 1
                objects.append(_parsed(self, buf, start, off, hdr, size))
                largest = max(largest, n)
                off += hdr.object_size
                in_part += 1
        types = file_types(objects)
    except CsupError as e:
        raise e.with_path(self.path) from None
    check_row_count(objects, self.read_options.limits.max_rows, self.path)
    self.meta = view(tuple(objects), size, types)
    self.parts = tuple(parts)
    self._buf = buf
    self._open_cost = OpenCost(len(objects), reqs, nbytes, in_first,
                               head_read and tail.offset > 0, len(recalled))
    self.open_stats.requests = reqs
    self.open_stats.bytes_read = nbytes
    self.open_stats.metadata_requests = reqs
    self.open_stats.wall = time.perf_counter() - t0
    _remember(self, tail, head_read, made, held)


def _seed(self: Any, tail: TailRead, head: bytes | None, recalled: list[tuple[int, bytes]],
          held: Sequence[tuple[int, bytes]]) -> tuple[HeldBytes, list[tuple[int, int]]]:
    """The open's buffer, holding the tail read, the head read, the recalled reads and the
    bytes held already (also kept in ``self._held``); and the reads made so far."""
    buf = HeldBytes()
    buf.add(tail.offset, tail.data)
    self._held = [(tail.offset, tail.data)]
    for off, data in [*([(0, head)] if head is not None else []), *recalled, *held]:
        buf.add(off, data)
        self._held.append((off, data))
    made = [(0, len(head))] if head is not None else []
    return buf, made + [(o, len(d)) for o, d in recalled]


def _remember(self: Any, tail: TailRead, head_read: bool, made: list[tuple[int, int]],
              held: Sequence[tuple[int, bytes]]) -> None:
    """What the next opens learn from this one: whether its place's files need a head
    read (:mod:`.headhint`), where this file's metadata was (:mod:`.openhint`; not for a
    reader made from held bytes, which read none of them)."""
    from .headhint import remember
    from .openhint import remember as remember_reads

    remember(self.store, self.key, head_read and tail.offset > 0)
    if not held:
        remember_reads(self.store, self.key, tail.info.size, tail.info.version,
                       made if tail.offset else ())


async def _recalled(self: Any, tail: TailRead) -> list[tuple[int, bytes]]:
    """The bytes of the reads the last open of this file made, sent with ``tail``
    (:mod:`.openhint`; none when there were none, or the file is not as it was)."""
    if self.recalled is None:
        return []
    from .openhint import take

    return await take(self, tail, self.recalled)


def _parsed(self: Any, buf: HeldBytes, start: int, off: int, hdr: Header, size: int
            ) -> ObjectMeta5:
    """The metadata of the object at ``off`` (its metadata and types sections from
    ``start``, held in ``buf``): parsed, or as this process parsed the same bytes of the
    same object of the same file before (:mod:`.parsememo`, as v14/v16 and the trailer
    layout do).  The parsed object keeps what scans learn of it (its typedefs, which
    fusion subtypes hold unions), so a warm open skips those too."""
    n = hdr.meta_size + hdr.type_size
    memo = parse_memo()
    key = memo.key(buf.get(start, n), ("superdb23", self.path, off, hdr), size,
                   self.max_metadata)
    known = memo.get(key)
    if known is not None:
        return known[0]  # type: ignore[no-any-return]
    obj = parse_metadata(buf.get(start, hdr.meta_size), off, hdr,
                         bytes(buf.get(start + hdr.meta_size, hdr.type_size)))
    memo.put(key, obj)
    return obj


def _gap(buf: HeldBytes, held: list[tuple[int, bytes]], start: int, off: int, end: int
         ) -> tuple[int, int]:
    """The bytes of a part (from ``start`` to its footer at ``end``) a window should
    read for the object at ``off``: from the first byte the reads so far do not hold
    (at most ``off``) to the next they do (the tail read), at most ``end``."""
    a = min(off, buf.held_until(start)) if buf.covers(start, 1) else start
    b = min([end, *(o for o, _ in held if a < o < end)])
    return a, max(a, b)


async def _read_parts(buf: HeldBytes, size: int,
                      need: Callable[[int, int, int, int], Awaitable[None]]) -> list[Part]:
    """The file's parts, first to last, found from its end: each part's trailer gives the
    part's size and its footer (the fused type), read through ``need``."""
    parts: list[Part] = []
    end = size
    while end > 0:
        if end < FOOTER_HEADER + TRAILER:
            raise TruncatedError(f"{end} bytes before byte {end} are too few for a "
                                 "CSUP part (truncated)")
        await need(end - TRAILER, TRAILER, 0, end)
        tr = parse_trailer(buf.get(end - TRAILER, TRAILER), end)
        footer = end - TRAILER - tr.type_size - FOOTER_HEADER
        await need(footer, FOOTER_HEADER + tr.type_size, 0, end)
        fused = parse_footer(buf.get(footer, FOOTER_HEADER + tr.type_size), footer,
                             tr.type_size)
        parts.append(Part(end - tr.part_size, footer, end, fused))
        end -= tr.part_size
    parts.reverse()
    return parts


def _object_header(buf: HeldBytes, off: int, footer: int, max_metadata: int) -> Header:
    """The header of the object at ``off`` (held in ``buf``), checked to end before its
    part's ``footer`` and to hold at most ``max_metadata`` bytes of metadata."""
    hdr = parse_object_header(buf.get(off, OBJECT_HEADER), off)
    if off + hdr.object_size > footer:
        raise TruncatedError(f"the CSUP object at byte {off} ends at "
                             f"{off + hdr.object_size}, past its part's footer "
                             f"at {footer} (truncated or corrupt)")
    if hdr.meta_size + hdr.type_size > max_metadata:
        raise LimitError(f"metadata of {hdr.meta_size + hdr.type_size} bytes "
                         f"exceeds max_metadata={max_metadata}")
    return hdr


def fused_type(parts: tuple[Part, ...]) -> Type | None:
    """The file's type from its footers (one part: its fused type)."""
    if not parts:
        return None
    ts: list[Type] = []
    for p in parts:
        if p.fused not in ts:
            ts.append(p.fused)
    if len(ts) == 1:
        return ts[0]

    return sort_union(ts)


def footer_type(tail: TailRead) -> Type | None:
    """The fused type of the v23 file whose tail read is ``tail``, from its footers
    alone, when the tail read holds every part's trailer and footer (a file of one
    part with a footer smaller than the tail read: the usual case); None when it does
    not, or the bytes are not a v23 tail (then the file must be opened).

    What the driver of a Spark read needs to infer a schema: one request per file,
    where opening the file costs a second read at its head for the objects' metadata.
    """
    data, base, size = tail.data, tail.offset, tail.info.size
    if not is_v23_tail(data, base, size):
        return None
    parts: list[Part] = []
    end = size
    try:
        while end > 0:
            footer_end = end - TRAILER
            if footer_end - FOOTER_HEADER < base:
                return None
            tr = parse_trailer(data[footer_end - base:end - base], end)
            footer = footer_end - tr.type_size - FOOTER_HEADER
            if footer < base or tr.part_size <= 0 or tr.part_size > end:
                return None
            parts.append(Part(end - tr.part_size, footer, end,
                              parse_footer(data[footer - base:footer_end - base], footer,
                                           tr.type_size)))
            end -= tr.part_size
    except CsupError:
        return None  # opening the file says what is wrong with it
    parts.reverse()
    return fused_type(tuple(parts))


def held_ranges(self: Any, plan: Any = None, budget: int = 0
                ) -> tuple[tuple[int, bytes], ...] | None:
    """``(offset, bytes)`` of the v23 file ``self`` (an open HeaderLayoutReader) that a
    reader made by :func:`from_held` needs for its open: every part's footer and
    trailer, every object's header and metadata; and the bytes of the segments
    ``plan``'s columns need that the open's reads hold already (a small file's data),
    when they fit ``budget``.
    None for a file of another version (its reader opens it again)."""
    parts = getattr(self, "parts", None)
    if not parts or self.meta.version < 23:
        return None
    spans = [(p.footer, p.end) for p in parts]
    spans += [(o.offset, o.data_offset) for o in self.meta.objects]
    if plan is not None:
        segs = self._segments(list(plan.paths), self.meta.objects)
        data = [(g.offset, g.offset + g.length) for g in segs
                if g.length and self._buf.covers(g.offset, g.length)]
        if sum(b - a for a, b in data) <= budget:
            spans += data
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return tuple((a, bytes(self._buf.get(a, b - a))) for a, b in merged if b > a)
