"""Files whose segment ``count`` statistics lie but still sum to the stream's values.

Row selection (``take``, ``rows=``, ``limit=``) maps rows to segments by the
running sum of each segment's ``count`` (planner.selection), so counts that shift
between two segments (``[10, 10]`` written as ``[11, 9]``) point a row at the
wrong segment while every total still agrees.  These files are the seed's
model laid out with each segmap's ``count`` (and ``crc32`` where known), one
stream's counts shifted.  Kept apart from
tests/support/fuzz_mutations.py (whose builder writes plain segmaps) so that the
family is one import there.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from csup_async.format import bsup
from csup_async.format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value
from csup_async.format.meta import Segment
from csup_async.model.types import UINT32, ArrayType, Field, RecordType, Type
from tests.support.fuzz_model import Laid, Model, get, layout, put, streams

__all__ = ["counted", "shifted_counts", "with_statistics"]


def _segmap(segmap: tuple[Segment, ...]) -> tuple[Type, Any]:
    """A segmap with ``count`` (and ``crc32`` where every segment has one)."""
    plain = [{"offset": s.offset, "length": s.length, "mem_length": s.mem_length,
              "compression_format": s.compression} for s in segmap]
    if not segmap or any(s.count is None for s in segmap):
        return SEGMAP_TYPE, plain
    extra = [Field("count", UINT32)]
    crc = all(s.crc32 is not None for s in segmap)
    if crc:
        extra.append(Field("crc32", UINT32))
    for el, s in zip(plain, segmap, strict=True):
        el["count"] = s.count
        if crc:
            el["crc32"] = s.crc32
    return ArrayType(RecordType((*SEGMAP_TYPE.elem.fields, *extra))), plain


def with_statistics(laid: Laid) -> bytes:
    """The file ``laid`` describes, its segmaps carrying count and crc32."""
    out = bytearray(laid.body)
    enc = bsup.StreamEncoder(out)
    for t in laid.types:
        enc.write_body(t, None)
    enc.write(*_segmap(tuple(laid.super_column)))
    for c in laid.columns:
        enc.write(*column_value(c, _segmap))
    enc.end_stream()
    tenc = bsup.StreamEncoder(out, compress=False)
    tenc.write(TRAILER_TYPE, {"magic": "super columnar", "type": "csup", "version": 1,
                              "sections": [len(laid.body), len(out) - len(laid.body)],
                              "meta": {"skew_thresh": 1 << 26, "segment_thresh": 1 << 22}})
    tenc.end_stream()
    return bytes(out)


class _File:
    """A case's file, already encoded (the families hand ``.encode()``-able cases)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def encode(self) -> bytes:
        return self.data


def counted(model: Model) -> Laid:
    """``model`` laid out with each segment's ``count`` (its values), as the writer does
    for every stream but the super column."""
    laid = layout(model)
    for ref in streams(model):
        if not ref.path:
            continue
        segs = [s for s in get(model, ref) if s.stored()]  # layout drops empty segments
        segmap = get(laid, ref)
        if len(segs) == len(segmap):
            laid = put(laid, ref, tuple(replace(g, count=len(s.values))
                                        for g, s in zip(segmap, segs, strict=True)))
    return laid


def shifted_counts(model: Model, rng: random.Random) -> Iterator[tuple[str, Any]]:
    """Counts that move ``k`` values between two segments of one stream, the total
    unchanged: neighbours, and segments two apart (the segment between them then
    decodes to its own count while starting elsewhere than the counts say)."""
    laid = counted(model)
    for ref in streams(laid):
        segmap = get(laid, ref)
        if len(segmap) < 2 or any(s.count is None for s in segmap):
            continue
        i = rng.randrange(len(segmap) - 1)
        pairs = [(i, i + 1)] + ([(i, i + 2)] if i + 2 < len(segmap) else [])
        if len(segmap) > 2:
            pairs.append((0, len(segmap) - 1))
        for a, b in dict.fromkeys(pairs):
            for k in (1, -1):
                ca, cb = segmap[a].count + k, segmap[b].count - k
                if ca < 0 or cb < 0:
                    continue
                cut = list(segmap)
                cut[a], cut[b] = replace(cut[a], count=ca), replace(cut[b], count=cb)
                yield (f"{ref.name}:counts[{a}]{k:+d}[{b}]{-k:+d}",
                       _File(with_statistics(put(laid, ref, tuple(cut)))))
