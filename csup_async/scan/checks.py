"""The checks a segment's statistics allow on every read: its CRC-32 and its value count.

docs/format.md ("Segment statistics and checksums"): ``crc32`` is the CRC-32
(zlib's polynomial) of a segment's stored bytes as they lie in the file, so it
is checked *before* the bytes reach the decompressor (a flipped bit never
becomes an LZ4 overrun or a plausible wrong value); ``count`` is the number of
values the segment decodes to.  Both run in the decode pool, once per segment
read.  The CRC is zlib-ng's when installed (the same CRC-32, SIMD: 5-10x the
1-2 GB/s of zlib 1.2's, which made the check cost about 10 % of a local scan;
``bench/bench_segments.py``), else ``zlib.crc32``; both release the GIL.
A mismatch is a FormatError that says where: the file, the column path and
role, and the segment's index in its segmap and its offset.  Finding the
column walks the metadata, which is done only when a check fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from planner.paths import quote_component

try:
    from zlib_ng.zlib_ng import crc32
except ImportError:  # pragma: no cover (a dependency; zlib's is the same function, slower)
    from zlib import crc32

from ..decode.kernels import ValueSlicer
from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    FileMeta,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    Segment,
    UnionColumn,
)
from ..model.errors import FormatError


def check_crc(raw: Any, seg: Segment) -> str | None:
    """What is wrong with the stored bytes ``raw`` of ``seg`` by its ``crc32``, or None."""
    if seg.crc32 is None:
        return None
    got = crc32(raw)
    if got == seg.crc32:
        return None
    return f"checksum mismatch (crc32 {got:08x}, the file says {seg.crc32:08x})"


def check_count(values: Any, seg: Segment) -> str | None:
    """What is wrong with the decoded ``values`` of ``seg`` by its ``count``, or None."""
    if seg.count is None:
        return None
    # a batch read keeps a segment as its stream, counted (not decoded) in the pool
    n = values.count if isinstance(values, ValueSlicer) else len(values)
    return count_problem(n, seg)


def count_problem(n: int, seg: Segment) -> str | None:
    """What is wrong with ``seg`` decoding to ``n`` values by its ``count``, or None."""
    if seg.count is None or n == seg.count:
        return None
    return f"decodes to {n} values, its count statistic says {seg.count}"


def segment_error(problem: str, seg: Segment, meta: FileMeta | None,
                  path: str | None) -> FormatError:
    """A FormatError naming where ``seg`` is (column, role, index, offset) and ``problem``."""
    return FormatError(f"{describe_segment(seg, meta)}: {problem}", path=path)


def describe_segment(seg: Segment, meta: FileMeta | None) -> str:
    """``column "a.b" (values, super type 0), segment 3 of 12 at offset 4096``."""
    where = [(label, i, len(segmap)) for label, segmap in iter_labelled_segmaps(meta)
             for i, s in enumerate(segmap) if s is seg] if meta is not None else []
    if not where and meta is not None:  # an equal segment, not the same object
        where = [(label, i, len(segmap)) for label, segmap in iter_labelled_segmaps(meta)
                 for i, s in enumerate(segmap) if s == seg]
    if not where:
        return f"segment at offset {seg.offset}"
    label, i, n = where[0]
    also = f" (and {len(where) - 1} more sharing its bytes)" if len(where) > 1 else ""
    return f"{label}, segment {i} of {n} at offset {seg.offset}{also}"


def iter_labelled_segmaps(meta: FileMeta) -> Iterator[tuple[str, Segmap]]:
    """Every segmap of a file with a label that says which column and role it is."""
    yield "the super column", meta.super_column
    for sid, col in enumerate(meta.columns):
        yield from _walk(col, "", sid)


def column_label(path: str, role: str, sid: int) -> str:
    name = f'column "{path}"' if path else "the rows"
    return f"{name} ({role}, super type {sid})"


def _walk(col: AnyColumn | None, path: str, sid: int) -> Iterator[tuple[str, Segmap]]:
    if col is None:
        return
    if isinstance(col, PrimitiveColumn):
        yield column_label(path, "values", sid), col.segmap
    elif isinstance(col, RecordColumn):
        for f in col.fields:
            sub = f"{path}.{quote_component(f.name)}" if path else quote_component(f.name)
            yield column_label(sub, "presence", sid), f.presence
            yield from _walk(f.column, sub, sid)
    elif isinstance(col, ArrayColumn):
        yield column_label(path, "lengths", sid), col.lengths
        yield from _walk(col.values, f"{path}[]", sid)
    elif isinstance(col, MapColumn):
        yield column_label(path, "lengths", sid), col.lengths
        yield from _walk(col.keys, f"{path}{{keys}}", sid)
        yield from _walk(col.values, f"{path}{{values}}", sid)
    elif isinstance(col, UnionColumn):
        yield column_label(path, "union tags", sid), col.tags
        for i, c in enumerate(col.columns):
            yield from _walk(c, f"{path}|{i}", sid)
    elif isinstance(col, NullsColumn):
        yield column_label(path, "nulls", sid), col.presence
        yield from _walk(col.values, path, sid)
