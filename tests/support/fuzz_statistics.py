"""The ``statistics`` fuzz family: valid data whose segment statistics lie.

Statistics are an optional extension a reader may ignore, so the data of these
files is the seed's, exactly; only the ``count``/``nulls``/``min``/``max``/``nan``
of one value stream's segments say what cannot be true: a ``min`` above the
``max``, bounds of another type than the column (strings on numbers, numbers
on strings), more nulls than values, a NaN float bound, NaT as a time's
minimum (true under CSUP, where NaT is the least time, and loose).  The other
value streams carry honest ``count`` and ``nulls`` (and no bounds), so row
selection and zone pruning are live.  Every read, filtered ones included, must
give the seed's rows (tests/e2e/fuzz/test_fuzz_semantic.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from csup_async.format import bsup
from csup_async.format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from csup_async.format.meta import Segment
from csup_async.model.types import (
    BOOL,
    FLOAT64,
    INT64,
    STRING,
    TIME,
    UINT32,
    Field,
    PrimitiveType,
    RecordType,
    Type,
)
from tests.support.fuzz_model import Laid, Model, StreamRef, get, layout, streams, values

_BOUNDED = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "string", "bytes", "time", "duration"}


def _stats_type(bound: Type) -> Type:
    return type(SEGMAP_TYPE)(RecordType((
        *SEGMAP_TYPE.elem.fields, Field("count", UINT32), Field("nulls", UINT32),
        Field("min", bound), Field("max", bound), Field("nan", BOOL), Field("crc32", UINT32))))


def _lies(t: PrimitiveType) -> list[tuple[str, Type, Any, Any, str]]:
    """(label, bound type, min, max, nulls rule) for a column of ``t``."""
    name = t.name
    if name in ("string", "bytes"):
        lo, hi = ("b", "a") if name == "string" else (b"b", b"a")
        out = [("min>max", t, lo, hi, "true"), ("numbers", INT64, 0, 1, "true")]
    elif name == "time":
        out = [("min>max", t, np.datetime64(10, "ns"), np.datetime64(0, "ns"), "true"),
               ("strings", STRING, "a", "b", "true"),
               ("nat-min", t, np.datetime64("NaT", "ns"), np.datetime64(2**62, "ns"), "true")]
    elif name == "duration":
        out = [("min>max", t, np.timedelta64(10, "ns"), np.timedelta64(0, "ns"), "true"),
               ("nat-min", t, np.timedelta64("NaT", "ns"), np.timedelta64(2**62, "ns"),
                "true")]
    elif name.startswith("float"):
        out = [("min>max", FLOAT64, 1.0, 0.0, "true"), ("strings", STRING, "a", "b", "true"),
               ("nan-bound", FLOAT64, float("nan"), 0.0, "true"),
               ("time-bounds", TIME, np.datetime64(0, "ns"), np.datetime64(1, "ns"), "true")]
    else:
        out = [("min>max", t, 1, 0, "true"), ("strings", STRING, "a", "b", "true")]
    out.append(("nulls>count", t if name != "float16" else FLOAT64, None, None, "more"))
    return out


@dataclass(frozen=True)
class StatsCase:
    """A laid-out model whose value stream at ``ref`` carries the lying statistics."""

    laid: Laid
    ref: StreamRef
    bound: Type
    lo: Any
    hi: Any
    nulls: str

    def encode(self) -> bytes:
        laid = self.laid
        target = get(laid, self.ref)
        honest = {id(get(laid, r)) for r in streams(laid) if r.kind == "values"}
        counts = _counts(self.laid)
        out = bytearray(laid.body)

        def segmap(segs: tuple[Segment, ...]) -> tuple[Type, Any]:
            plain = segmap_value(segs)
            if id(segs) not in honest or not segs:
                return SEGMAP_TYPE, plain
            for el, s in zip(plain, segs, strict=True):
                count, nulls = counts[s.offset]
                el.update(count=count, nulls=nulls, min=None, max=None, nan=None, crc32=None)
                if segs is target:
                    el.update(nulls=count + 1 if self.nulls == "more" else nulls,
                              min=self.lo, max=self.hi, nan=False)
            return _stats_type(self.bound if segs is target else INT64), plain

        enc = bsup.StreamEncoder(out)
        for t in laid.types:
            enc.write_body(t, None)
        enc.write(SEGMAP_TYPE, segmap_value(tuple(laid.super_column)))
        for c in laid.columns:
            enc.write(*column_value(c, segmap))
        enc.end_stream()
        trailer = {"magic": "super columnar", "type": "csup", "version": 1,
                   "sections": [len(laid.body), len(out) - len(laid.body)],
                   "meta": {"skew_thresh": 1 << 26, "segment_thresh": 1 << 22}}
        tenc = bsup.StreamEncoder(out, compress=False)
        tenc.write(TRAILER_TYPE, trailer)
        tenc.end_stream()
        return bytes(out)


def _counts(laid: Laid) -> dict[int, tuple[int, int]]:
    """(values, nulls) of every segment, by offset, from the stored bytes."""
    import lz4.block

    out = {}
    for r in streams(laid):
        if r.kind != "values":
            continue
        for s in get(laid, r):
            raw = laid.body[s.offset: s.offset + s.length]
            if s.compression == 1:
                raw = lz4.block.decompress(raw, uncompressed_size=s.mem_length)
            vals = bsup.split_tagged(raw)
            out[s.offset] = (len(vals), sum(v is None for v in vals))
    return out


def statistics(model: Model, rng: random.Random) -> Iterator[tuple[str, StatsCase]]:
    """Per primitive value stream with bounds, each lie (see the module docstring)."""
    laid = layout(model)
    for ref in streams(laid):
        t = ref.type
        if ref.kind != "values" or not isinstance(t, PrimitiveType) or t.name not in _BOUNDED:
            continue
        segs = get(model, ref)
        if not any(values((s,)) for s in segs):
            continue
        for label, bound, lo, hi, nulls in _lies(t):
            yield f"{ref.name}:{label}", StatsCase(laid, ref, bound, lo, hi, nulls)
    del rng
