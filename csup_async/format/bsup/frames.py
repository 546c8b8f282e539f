"""BSUP streams: frames (LZ4 when smaller), end-of-stream markers, and the reader
and writer of whole streams of values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import lz4.block

from ...model.errors import FormatError, LimitError, TruncatedError
from ...model.types import Type
from ...model.values import Value
from .limits import LZ4_MAX_RATIO, MAX_FRAME
from .tags import append_tagged, read_uvarint, uvarint
from .typecodec import TypeContext, TypedefEncoder
from .valuecodec import decode_value, encode_value

FRAME_TYPES, FRAME_VALUES, FRAME_CONTROL = 0, 1, 2


def read_frames(buf: bytes | memoryview, pos: int = 0, *, max_frame: int = MAX_FRAME,
                max_total: int | None = None
                ) -> Iterator[tuple[int, memoryview | None, int]]:
    """Yield (frame kind, payload, position after) for each frame; kind -1 = end of stream.

    Compressed payloads are decompressed here; the payload is None for an
    end-of-stream marker.  ``max_frame`` caps one frame's (decompressed) size,
    ``max_total`` all of them together (LimitError beyond either).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    total = 0
    while pos < end:
        hdr = mv[pos]
        if hdr == 0xFF:
            pos += 1
            yield -1, None, pos
            continue
        if hdr & 0x80:
            raise FormatError(f"frame header 0x{hdr:02x} has an unknown version")
        kind = (hdr >> 4) & 3
        if kind == 3:
            raise FormatError(f"frame header 0x{hdr:02x} has an unknown frame type")
        rest, pos = read_uvarint(mv, pos + 1, end)
        length = (rest << 4) | (hdr & 0x0F)
        if length > max_frame:
            raise LimitError(f"frame of {length} bytes exceeds the {max_frame}-byte limit")
        if pos + length > end:
            raise TruncatedError(f"frame of {length} bytes runs past the end of the data")
        payload = mv[pos : pos + length]
        pos += length
        if hdr & 0x40:
            budget = max_frame if max_total is None else min(max_frame, max_total - total)
            payload = _decompress_frame(payload, budget)
        total += len(payload)
        if max_total is not None and total > max_total:
            raise LimitError(f"frames hold more than {max_total} bytes")
        yield kind, payload, pos


def _decompress_frame(payload: memoryview, max_frame: int) -> memoryview:
    if len(payload) < 2:
        raise TruncatedError("compressed frame too short")
    fmt = payload[0]
    if fmt != 0:
        raise FormatError(f"compressed frame has unknown format {fmt}")
    size, pos = read_uvarint(payload, 1)
    if size > max_frame:
        raise LimitError(f"compressed frame claims {size} bytes, over the {max_frame} limit")
    if size > LZ4_MAX_RATIO * (len(payload) - pos) + 64:
        raise FormatError(f"compressed frame of {len(payload)} bytes cannot hold {size} bytes")
    try:
        out = lz4.block.decompress(bytes(payload[pos:]), uncompressed_size=size)
    except Exception as e:  # lz4 raises LZ4BlockError, ValueError, MemoryError
        raise FormatError(f"compressed frame is corrupt: {e}") from None
    if len(out) != size:
        raise FormatError(f"compressed frame decompressed to {len(out)} bytes, not {size}")
    return memoryview(out)


def iter_raw_values(buf: bytes | memoryview, pos: int = 0, *, end_at_eos: bool = False,
                    max_total: int | None = None
                    ) -> Iterator[tuple[Type, memoryview | None]]:
    """Yield (type, body) of every value in the streams from ``pos``.

    With ``end_at_eos`` reading stops after the first stream's end marker;
    ``max_total`` caps the frames' decompressed bytes (see ``read_frames``).
    """
    ctx = TypeContext()
    for kind, payload, _ in read_frames(buf, pos, max_total=max_total):
        if kind == -1:
            if end_at_eos:
                return
            ctx = TypeContext()
        elif kind == FRAME_TYPES:
            assert payload is not None
            ctx.parse_typedefs(payload)
        elif kind == FRAME_VALUES:
            assert payload is not None
            p, end = 0, len(payload)
            while p < end:
                tid, p = read_uvarint(payload, p, end)
                t = ctx.lookup(tid)
                tag, p = read_uvarint(payload, p, end)
                if tag == 0:
                    yield t, None
                    continue
                n = tag - 1
                if p + n > end:
                    raise TruncatedError(f"value of {n} bytes runs past its frame")
                yield t, payload[p : p + n]
                p += n


def stream_shape(buf: bytes | memoryview, *, max_total: int | None = None
                 ) -> tuple[list[Type], int]:
    """(the value types in first-seen order, the number of values) of the streams in
    ``buf``, walking the frames without decoding a body: what a reader of a whole
    stream learns at its open (a truncated or corrupt frame fails here)."""
    types: dict[Type, None] = {}
    count = 0
    ctx = TypeContext()
    seen: set[int] = set()  # type IDs of this context already in ``types``
    for kind, payload, _ in read_frames(buf, max_total=max_total):
        if kind == -1:
            ctx, seen = TypeContext(), set()
        elif kind == FRAME_TYPES:
            assert payload is not None
            ctx.parse_typedefs(payload)
        elif kind == FRAME_VALUES:
            assert payload is not None
            b = bytes(payload)
            p, end = 0, len(b)
            while p < end:
                tid = b[p]
                if tid < 0x80:
                    p += 1
                else:
                    tid, p = read_uvarint(b, p, end)
                if tid not in seen:
                    types.setdefault(ctx.lookup(tid), None)
                    seen.add(tid)
                if p >= end:
                    raise TruncatedError("value runs past its frame")
                tag = b[p]
                if tag < 0x80:
                    p += 1
                else:
                    tag, p = read_uvarint(b, p, end)
                if tag > 1 and p + tag - 1 > end:
                    raise TruncatedError(f"value of {tag - 1} bytes runs past its frame")
                p += max(tag - 1, 0)
                count += 1
    return list(types), count


def read_values(buf: bytes | memoryview, *, typed: bool = True) -> list[Value]:
    """Every value of a BSUP byte string, as typed ``Value``s."""
    return [Value(t, decode_value(t, b, typed=typed)) for t, b in iter_raw_values(buf)]


class StreamEncoder:
    """Writes values as BSUP: one types frame per batch of new types, LZ4 frames when smaller.

    ``frame_size`` bounds a values frame (and so memory); ``compress``
    compresses a frame when that makes it smaller.
    """

    def __init__(self, out: BinaryIO | bytearray, *, compress: bool = True,
                 frame_size: int = 1 << 20) -> None:
        self.out = out
        self.compress = compress
        self.frame_size = frame_size
        self._types = TypedefEncoder()
        self._values = bytearray()

    def _write(self, b: bytes | bytearray) -> None:
        if isinstance(self.out, bytearray):
            self.out += b
        else:
            self.out.write(b)

    def type_id(self, t: Type) -> int:
        return self._types.type_id(t)

    def write_body(self, t: Type, body: bytes | None) -> None:
        """Append one value given its BSUP body."""
        tid = self._types.type_id(t)
        if self._types.pending:
            # a values frame may only use types already defined: flush values first
            if self._values:
                self._flush_values()
            self._emit(FRAME_TYPES, self._types.take())
        self._values += uvarint(tid)
        append_tagged(self._values, body)
        if len(self._values) >= self.frame_size:
            self._flush_values()

    def write(self, t: Type, v: Any) -> None:
        self.write_body(t, encode_value(t, v))

    def _flush_values(self) -> None:
        if self._values:
            self._emit(FRAME_VALUES, self._values)
            self._values = bytearray()

    def _emit(self, kind: int, payload: bytes | bytearray) -> None:
        body = bytes(payload)
        compressed = False
        if self.compress and len(body) > 64:
            c = lz4.block.compress(body, store_size=False)
            framed = b"\x00" + uvarint(len(body)) + c
            if len(framed) < len(body):
                body, compressed = framed, True
        n = len(body)
        hdr = (kind << 4) | (n & 0x0F) | (0x40 if compressed else 0)
        self._write(bytes([hdr]) + uvarint(n >> 4) + body)

    def end_stream(self) -> None:
        """Flush and write the end-of-stream marker; the next value starts a new context."""
        self._flush_values()
        if self._types.pending:
            self._emit(FRAME_TYPES, self._types.take())
        self._write(b"\xff")
        self._types.reset()


def encode_stream(values: Iterable[tuple[Type, Any]], *, compress: bool = True) -> bytes:
    """A whole BSUP stream (ended with 0xff) of (type, Python value) pairs."""
    out = bytearray()
    enc = StreamEncoder(out, compress=compress)
    for t, v in values:
        enc.write(t, v)
    enc.end_stream()
    return bytes(out)
