"""Checking a whole file (``csup-async inspect --verify``): every segment read and checked.

A scan checks the segments it reads and stops at the first bad one; a check
of a file wants every segment of every column, whatever a projection would
read, and every failure, not the first.  So each segment becomes a job of its
own on one :class:`~.fetch.SegmentSource` (the same fetch, CRC, decompress,
decode and count checks as every read, in the same pool), decoded by what its
column holds, and each job's error is collected instead of raised.  When every
segment passes, the file is read whole once more through the ordinary scan,
which checks what no single segment can show (presence runs, lengths and
super IDs that agree with the values they place).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from planner.coalescing import plan_ranges
from planner.paths import quote_component

from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    UnionColumn,
)
from ..model.errors import CsupError, FormatError
from ..model.types import (
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
)
from .checks import column_label
from .fetch import SegmentSource
from .jobs import Decoder
from .result import ScanStats
from .streams import decode_any, decode_int32s, decode_selectors, decode_values


@dataclass
class ColumnCheck:
    """One column stream's outcome: segments checked, and what failed."""

    label: str
    segments: int = 0
    with_crc: int = 0
    with_count: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class FileCheck:
    """A whole file's outcome (``ok`` when no segment failed and the file read whole)."""

    path: str
    columns: list[ColumnCheck]
    read_error: str | None = None
    stats: ScanStats | None = None

    @property
    def errors(self) -> list[str]:
        out = [e for c in self.columns for e in c.errors]
        return out + ([self.read_error] if self.read_error else [])

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def segments(self) -> int:
        return sum(c.segments for c in self.columns)


def typed_segmaps(t: Type, col: AnyColumn | None, path: str, sid: int
                  ) -> Iterator[tuple[str, Segmap, Decoder]]:
    """Every segmap under ``col`` (values of type ``t``): its label and how to decode it."""
    if col is None:
        return
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(col, NullsColumn):
        yield column_label(path, "nulls", sid), col.presence, decode_int32s
        yield from typed_segmaps(t, col.values, path, sid)
    elif isinstance(col, PrimitiveColumn):
        prim = t
        if col.dictionary is not None:  # Zed VNG: a selector byte per value
            size = len(col.dictionary)
            yield (column_label(path, "dictionary selectors", sid), col.segmap,
                   lambda data: decode_selectors(data, size))
        elif isinstance(prim, (PrimitiveType, EnumType)):
            yield (column_label(path, "values", sid), col.segmap,
                   lambda data: decode_values(prim, data))
        else:  # Zed VNG: whole bodies of a complex type (errors of records)
            yield (column_label(path, "values", sid), col.segmap,
                   lambda data: decode_any(prim, data))
    elif isinstance(col, RecordColumn) and isinstance(t, RecordType):
        for f, fc in zip(t.fields, col.fields, strict=False):
            sub = f"{path}.{quote_component(f.name)}" if path else quote_component(f.name)
            yield column_label(sub, "presence", sid), fc.presence, decode_int32s
            yield from typed_segmaps(f.type, fc.column, sub, sid)
    elif isinstance(col, ArrayColumn) and isinstance(t, (ArrayType, SetType)):
        yield column_label(path, "lengths", sid), col.lengths, decode_int32s
        yield from typed_segmaps(t.elem, col.values, f"{path}[]", sid)
    elif isinstance(col, MapColumn) and isinstance(t, MapType):
        yield column_label(path, "lengths", sid), col.lengths, decode_int32s
        yield from typed_segmaps(t.key, col.keys, f"{path}{{keys}}", sid)
        yield from typed_segmaps(t.value, col.values, f"{path}{{values}}", sid)
    elif isinstance(col, UnionColumn) and isinstance(t, UnionType):
        yield column_label(path, "union tags", sid), col.tags, decode_int32s
        for i, (m, c) in enumerate(zip(t.types, col.columns, strict=False)):
            yield from typed_segmaps(m, c, f"{path}|{i}", sid)
    else:
        raise FormatError(f"column of super type {sid} at {path or 'the top'} does not "
                          f"match its type {t}")


async def verify_file(reader: Any) -> FileCheck:
    """Read and check every segment of ``reader``'s file; see the module docstring."""
    meta = reader.meta
    # the super column too, though a read of a one-type file never needs it
    streams: list[tuple[str, Segmap, Decoder]] = [
        ("the super column", meta.super_column, decode_int32s)]
    try:
        for sid, (t, col) in enumerate(zip(meta.super_types, meta.columns, strict=True)):
            streams += typed_segmaps(t, col, "", sid)
    except CsupError as e:
        return FileCheck(reader.path, [], read_error=str(e.with_path(reader.path)))
    segs = [s for _, segmap, _ in streams for s in segmap]
    plan = plan_ranges(list(segs), reader.profile, reader.held_span())
    stats = ScanStats(bytes_needed=plan.bytes_needed)
    options = dataclasses.replace(reader.read_options, verify_checksums=True)
    source = SegmentSource(reader.target(), plan, options, stats, eager=True, meta=meta)
    checks = []
    jobs = []
    for label, segmap, decode in streams:
        c = ColumnCheck(label, len(segmap), sum(s.crc32 is not None for s in segmap),
                        sum(s.count is not None for s in segmap))
        checks.append(c)
        jobs.append((c, [source.job(s, decode) for s in segmap]))

    def collect() -> None:
        for c, js in jobs:
            for job in js:
                try:
                    job.take()
                except CsupError as e:
                    c.errors.append(str(e.with_path(reader.path)))

    try:
        source.start()
        await source.settled()  # on the loop: then collecting waits for nothing
        collect()
    finally:
        await source.close()
    if isinstance(source.error, CsupError):  # the store failed: no verdict on the file
        raise source.error.with_path(reader.path)
    out = FileCheck(reader.path, checks, stats=stats)
    if out.ok:
        try:
            await reader.scan()
        except CsupError as e:
            out.read_error = str(e.with_path(reader.path))
    return out
