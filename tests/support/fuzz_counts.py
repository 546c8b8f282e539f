"""Files whose segment ``count`` statistics lie but still sum to the stream's values.

Row selection (``take``, ``rows=``, ``limit=``) maps rows to segments by the
running sum of each segment's ``count`` (planner.selection), so counts that shift
between two segments (``[10, 10]`` written as ``[11, 9]``) point a row at the
wrong segment while every total still agrees.  These files keep the seed's bytes
and rewrite only its reassembly section with each segmap's ``count`` and ``crc32``
(the statistics a reader checks), one stream's counts shifted.  Kept apart from
tests/support/fuzz_mutations.py (whose builder writes plain segmaps) so that the
family is one import there.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from csup_async import bsup
from csup_async.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value
from csup_async.meta import Segment
from csup_async.types import UINT32, ArrayType, Field, RecordType, Type
from tests.support.fuzz_model import Laid, file_meta, get, put, streams

__all__ = ["shifted_counts", "with_statistics"]


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


def laid_of(data: bytes) -> Laid:
    """A file written by csup_async.write (with statistics) as a Laid, segments and all."""
    meta = file_meta(data)
    return Laid(data[: meta.trailer.data_size], tuple(meta.super_types),
                tuple(meta.super_column), tuple(meta.columns))


def shifted_counts(data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """(label, file) for each stream of several counted segments: ``k`` of one segment's
    values claimed by its neighbour (the total unchanged), either way, ``k`` 1 or more."""
    laid = laid_of(data)
    for ref in streams(laid):
        segmap = get(laid, ref)
        if len(segmap) < 2 or any(s.count is None for s in segmap):
            continue
        i = rng.randrange(len(segmap) - 1)
        a, b = segmap[i], segmap[i + 1]
        for k in sorted({1, max(1, min(a.count, b.count) // 2)}):
            for label, da, db in ((f"[{i}]+{k}", k, -k), (f"[{i}]-{k}", -k, k)):
                if a.count + da < 0 or b.count + db < 0:
                    continue
                cut = list(segmap)
                cut[i] = replace(a, count=a.count + da)
                cut[i + 1] = replace(b, count=b.count + db)
                yield (f"{ref.name}:counts{label}",
                       with_statistics(put(laid, ref, tuple(cut))))
