"""A written CSUP file with the segment statistics of one column rewritten.

Other writers, old versions and corrupt files give statistics this project's
writer never would (a ``min`` above the ``max``, a string bound on an int64
column, more nulls than values, NaN bounds, NaT as a time's minimum); tests
make such files from a good one: same data section, same column tree, a
reassembly section whose segmaps carry the edited statistics, a valid trailer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from csup_async.format import bsup
from csup_async.format.colvalue import (
    SEGMAP_TYPE,
    TRAILER_TYPE,
    column_value,
    segmap_value,
    segment_stats,
)
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import FileMeta, NullsColumn, PrimitiveColumn, RecordColumn, Segment
from csup_async.model.types import BOOL, UINT32, Field, RecordType, Type

#: Edit of one segment's statistics: (segment index, its statistics as a dict with
#: ``count``, ``nulls``, ``min``, ``max``, ``nan``) -> the statistics to write.
Edit = Callable[[int, dict[str, Any]], dict[str, Any]]


def meta_of(data: bytes) -> FileMeta:
    t = find_trailer(data[-4096:], len(data))
    return parse_reassembly(data[t.data_size: t.data_size + t.reassembly_size], t, len(data))


def _leaf(meta: FileMeta, path: str) -> tuple[Segment, ...]:
    col: Any = meta.columns[0]
    for name in path.split("."):
        while isinstance(col, NullsColumn):
            col = col.values
        assert isinstance(col, RecordColumn), f"{path}: not below records"
        fc = col.field(name)
        assert fc is not None and fc.column is not None, f"{path}: no column"
        col = fc.column
    while isinstance(col, NullsColumn):
        col = col.values
    assert isinstance(col, PrimitiveColumn), f"{path}: not a primitive column"
    return col.segmap


def restat(data: bytes, path: str, edit: Edit, bound_type: Type) -> bytes:
    """``data`` (a file of one super type) with the statistics of the value segments at
    ``path`` replaced by ``edit``'s, ``min``/``max`` written as ``bound_type``; every
    other segmap keeps the statistics it had."""
    meta = meta_of(data)
    target = _leaf(meta, path)
    t = find_trailer(data[-4096:], len(data))
    out = bytearray(data[: t.data_size])

    def stats_type(bt: Type) -> Type:
        return type(SEGMAP_TYPE)(RecordType((
            *SEGMAP_TYPE.elem.fields, Field("count", UINT32), Field("nulls", UINT32),
            Field("min", bt), Field("max", bt), Field("nan", BOOL), Field("crc32", UINT32))))

    def segmap(segs: tuple[Segment, ...]) -> tuple[Type, Any]:
        plain = segmap_value(segs)
        stats = [segment_stats(s) for s in segs]
        if segs is target:
            for i, (el, st) in enumerate(zip(plain, stats, strict=True)):
                el.update(edit(i, {"count": st.count, "nulls": st.nulls, "min": st.min,
                                   "max": st.max, "nan": st.nan}), crc32=st.crc32)
            return stats_type(bound_type), plain
        if not segs or any(s.extra is None for s in segs):
            return SEGMAP_TYPE, plain
        bt = next(f.type for f in segs[0].extra[0].fields if f.name == "min")
        for el, st in zip(plain, stats, strict=True):
            el.update(count=st.count, nulls=st.nulls, min=st.min, max=st.max, nan=st.nan,
                      crc32=st.crc32)
        return stats_type(bt), plain

    enc = bsup.StreamEncoder(out)
    for st in meta.super_types:
        enc.write_body(st, None)
    enc.write(SEGMAP_TYPE, segmap_value(tuple(meta.super_column)))
    for c in meta.columns:
        ct, cv = column_value(c, segmap)
        enc.write(ct, cv)
    enc.end_stream()
    trailer = {"magic": "super columnar", "type": "csup", "version": 1,
               "sections": [t.data_size, len(out) - t.data_size],
               "meta": {"skew_thresh": t.skew_thresh, "segment_thresh": t.segment_thresh}}
    tenc = bsup.StreamEncoder(out, compress=False)
    tenc.write(TRAILER_TYPE, trailer)
    tenc.end_stream()
    return bytes(out)
