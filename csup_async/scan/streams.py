"""Segment streams for the column walker: the decoders of one segment's values, what building
a cursor tree needs (Build), and a column stream's decoded segments in order (Stream), which
a cursor takes values from (:class:`~.cursors.Chunks`)."""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from .. import arrays as A
from .. import decode as D
from ..format.bsup import append_tagged, decode_value
from ..format.bsup import decode_primitive as decode_one
from ..format.meta import (
    Segmap,
)
from ..model.errors import FormatError, LimitError
from ..model.types import (
    NULL,
    EnumType,
    PrimitiveType,
    Type,
)
from .fetch import SegmentSource
from .jobs import Decoder, Job
from .options import Limits

_VECTOR = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "time",
           "duration", "float16", "float32", "float64", "bool", "string", "bytes"}


def decode_values(t: PrimitiveType | EnumType, stream: Any, count: int | None = None
                  ) -> A.Array:
    """The values of one segment of a primitive column (however many it holds), or of a
    slice of one holding exactly ``count``."""
    if isinstance(t, EnumType):
        values, validity = D.decode_ints(stream, count, signed=False, bits=64)
        if values.size and int(values[validity if validity is not None else ...].max(
                initial=0)) >= len(t.symbols):
            raise FormatError(f"enum position out of range for {t}")
        return A.PrimitiveArray(t, values, validity)
    if t == NULL:
        starts, lengths = D.scan_tags(stream, count)
        if (lengths != -1).any():
            raise FormatError("a null-type column holds a non-null value")
        return A.NullArray(len(lengths))
    if t.name in _VECTOR:
        dec = D.decode_primitive(t, stream, count)
        if dec.offsets is not None:
            return A.BinaryArray(t, dec.offsets, dec.values, dec.validity, utf8_checked=True)
        return A.PrimitiveArray(t, dec.values, dec.validity)
    # the rare kinds without a numpy dtype: one Python object per value
    starts, lengths = D.scan_tags(stream, count)
    mv = memoryview(stream)
    count = len(lengths)
    out = np.empty(count, dtype=object)
    valid = lengths >= 0
    for i in np.flatnonzero(valid).tolist():
        s = int(starts[i])
        out[i] = decode_one(t, mv[s: s + int(lengths[i])])
    return A.PrimitiveArray(t, out, None if valid.all() else valid)


def decode_int32s(stream: Any) -> np.ndarray:
    return D.decode_int32s(stream, None)


# ---------------------------------------------------------------- streams ---

class Claimant(Protocol):
    """A node of the cursor tree as the caps see it: the values it has handed out."""

    claimed: int


class Build:
    """What building a cursor tree needs: the source, the caps, how far to decode ahead,
    and whether primitive values are decoded a slice at a time (``lazy``, batches) or
    a whole segment at a time in the pool (whole columns)."""

    def __init__(self, source: SegmentSource, limits: Limits, ahead: int, *,
                 lazy: bool = False, keep: dict[int, frozenset[int]] | None = None) -> None:
        self.source = source
        self.limits = limits
        self.ahead = ahead
        self.lazy = lazy
        self.claimed = 0
        self._claims = threading.Lock()  # columns assembled at once (scan.Read.apart)
        # row selection: per value stream (id of its segmap), the segments to read; the
        # others are skipped() over by their count, never fetched (read/selection.py)
        self.keep = keep or {}

    def claim(self, node: Claimant, n: int) -> None:
        """Count ``n`` values a node hands out against the caps (LimitError past one)."""
        node.claimed += n
        if node.claimed > self.limits.max_rows:
            raise LimitError(f"a column claims {node.claimed} values, over "
                             f"max_rows={self.limits.max_rows}")
        with self._claims:
            self.claimed += n
            claimed = self.claimed
        if claimed > self.limits.max_values:
            raise LimitError(f"the columns claim more than max_values={self.limits.max_values} "
                             "values in all")


class Skipped:
    """``n`` values of a segment a row selection does not read: they can only be skipped."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def slice(self, start: int, stop: int | None) -> Skipped:
        return Skipped((self.n if stop is None else stop) - start)


class Stream:
    """The decoded segments of one column stream, in order, one job each (a row selection's
    skipped segments: a :class:`Skipped` placeholder of their ``count``)."""

    def __init__(self, b: Build, segmap: Segmap, decode: Decoder,
                 ahead: int | None = None, selectable: bool = False) -> None:
        self.source = b.source
        self.ahead = b.ahead if ahead is None else ahead
        keep = b.keep.get(id(segmap)) if selectable and b.keep else None
        self.jobs: list[Job | Skipped | None] = (
            [b.source.job(s, decode) for s in segmap] if keep is None else
            [b.source.job(s, decode) if i in keep else Skipped(s.count or 0)
             for i, s in enumerate(segmap)])
        self.next_index = 0

    def want_next(self) -> None:
        """The next segment will be needed soon: have it fetched and decoded (no wait)."""
        i = self.next_index
        if i < len(self.jobs):
            job = self.jobs[i]
            if isinstance(job, Job):  # a skipped segment is never fetched
                self.source.want(job)

    def next(self) -> Any | None:
        """The next segment's decoded values, or None after the last."""
        i = self.next_index
        if i >= len(self.jobs):
            return None
        job = self.jobs[i]
        assert job is not None
        if isinstance(job, Skipped):
            self.jobs[i] = None
            self.next_index = i + 1
            return job
        self.source.want(job, [j for j in self.jobs[i + 1: i + 1 + self.ahead]
                               if isinstance(j, Job)])
        self.jobs[i] = None
        self.next_index = i + 1
        return job.take()


def decode_any(t: Type, stream: Any) -> A.Array:
    """Tag-encoded values of any type: a VNG "primitive" column holds whole bodies of
    every type that is not a container, errors of records included."""
    if isinstance(t, (PrimitiveType, EnumType)):
        return decode_values(t, stream)
    starts, lengths = D.scan_tags(stream, None)
    mv = memoryview(stream)
    return A.from_pylist(t, [None if n < 0 else decode_value(t, mv[s: s + n], typed=True)
                             for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)])


def dictionary_values(t: Type, entries: tuple[bytes | None, ...]) -> A.Array:
    """A VNG dictionary's values, decoded once as a column of their own."""
    stream = bytearray()
    for body in entries:
        append_tagged(stream, body)
    return decode_any(t, bytes(stream))


def decode_selectors(data: Any, size: int) -> np.ndarray:
    """One VNG dictionary segment: a selector byte per value, each below ``size``."""
    sel = np.frombuffer(data, dtype=np.uint8)
    if sel.size and int(sel.max()) >= size:
        raise FormatError(f"dictionary selector {int(sel.max())} is out of range "
                          f"(the dictionary has {size} entries)")
    return sel
