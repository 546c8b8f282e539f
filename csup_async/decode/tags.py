"""Tag-level primitives shared by the scanners: type profiles, the values found in a
stream (:class:`TagIndex`), buffers, uvarints and the serial reference scanner."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model.errors import FormatError, TruncatedError

Buffer = bytes | bytearray | memoryview

PAD = 1024  # zero bytes after a stream copy: gathers and lanes may run past the end
_MAX_TAG_BYTES = 10  # a uvarint of a 64-bit value


class TagProfile(NamedTuple):
    """What tags a column type allows, as lookup tables for the lockstep lanes.

    ``steps`` maps a tag's first byte to how far a lane moves: the value's size
    when the type allows that single-byte tag, 1 ("not a tag here,
    resynchronise") when it does not, 0 for the first byte of a multi-byte tag
    (computed separately).  It is a ``bytes.translate`` table: that is the
    fastest byte-to-byte lookup Python has.  ``allowed[b]`` says whether ``b``
    can begin a tag of the type.
    """

    steps: bytes
    allowed: np.ndarray
    multibyte: bool


def _profile(tags: np.ndarray | None) -> TagProfile:
    """Lookup tables for a type whose single-byte tags are ``tags`` (None: any)."""
    byte = np.arange(256)
    ok = np.zeros(256, bool)
    if tags is None:
        ok[:128] = True
    else:
        ok[tags] = True
    steps = np.where(ok, np.maximum(byte, 1), 1)
    if tags is None:
        steps[128:] = 0
        ok[128:] = True
    return TagProfile(steps.astype(np.uint8).tobytes(), ok, tags is None)


ANY_PROFILE = _profile(None)  # strings, bytes, and scan_tags for any type
INT_PROFILES = {w: _profile(np.arange(w + 2)) for w in (1, 2, 4, 8)}  # 0..w bytes, or null
# Signed ints are sign-and-magnitude (``|v| << 1 | sign``), so a narrow type's most
# negative value takes one byte more than its width (int8's -128 is ``01 01``).
SINT_PROFILES = {w: _profile(np.arange(min(w + 1, 8) + 2)) for w in (1, 2, 4, 8)}
INT32_PROFILE = _profile(np.arange(1, 6))  # lengths, tags, runs: never null
FLOAT_PROFILES = {w: _profile(np.array([0, w + 1])) for w in (2, 4, 8)}
BOOL_PROFILE = _profile(np.array([0, 2]))


class TagIndex:
    """The values of a stream: tag offsets and, lazily, body offsets and lengths.

    When every tag is one byte (nearly always) the tag bytes ``v`` say it all:
    body = tag offset + 1, length = v - 1 (-1 for null); decoders use ``v``
    directly and skip materialising the rest.
    """

    __slots__ = ("_lengths", "_starts", "tags", "v")

    def __init__(self, tags: np.ndarray, v: np.ndarray | None,
                 starts: np.ndarray | None = None, lengths: np.ndarray | None = None) -> None:
        self.tags, self.v, self._starts, self._lengths = tags, v, starts, lengths

    @property
    def starts(self) -> np.ndarray:
        if self._starts is None:
            self._starts = self.tags + 1
        return self._starts

    @property
    def lengths(self) -> np.ndarray:
        if self._lengths is None:
            assert self.v is not None
            self._lengths = self.v.astype(np.int64)
            self._lengths -= 1
        return self._lengths

    def shifted(self, by: int) -> TagIndex:
        return TagIndex(self.tags + by, self.v, None if self._starts is None else self._starts + by,
                     self._lengths)

    @staticmethod
    def join(parts: list[TagIndex]) -> TagIndex:
        if len(parts) == 1:
            return parts[0]
        tags = np.concatenate([t.tags for t in parts])
        if all(t.v is not None for t in parts):
            return TagIndex(tags, np.concatenate([t.v for t in parts]))  # type: ignore[misc]
        return TagIndex(tags, None, np.concatenate([t.starts for t in parts]),
                     np.concatenate([t.lengths for t in parts]))


def as_u8(stream: Buffer) -> np.ndarray:
    """A zero-copy uint8 view of any contiguous buffer (a copy only if it is not)."""
    if isinstance(stream, np.ndarray):
        return np.ascontiguousarray(stream).reshape(-1).view(np.uint8)
    try:
        mv = memoryview(stream)
    except TypeError:
        raise FormatError(f"a column stream must be bytes, not {type(stream).__name__}") from None
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    return np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv,
                         dtype=np.uint8)


def padded(b: np.ndarray) -> np.ndarray:
    """A copy of the stream with zero padding, so that gathers may overrun the end."""
    out = np.empty(b.size + PAD, np.uint8)
    out[: b.size] = b
    out[b.size:] = 0
    return out


def check_count(count: int | None) -> None:
    if count is not None and (not isinstance(count, (int, np.integer)) or count < 0):
        raise FormatError(f"invalid value count {count!r}")


def count_error(count: int, found: int) -> FormatError:
    return FormatError(f"expected {count} values, the stream holds {found}")


def serial_scan(buf: bytes | memoryview, pos: int, index: int, count: int | None,
                 out: tuple[list[int], list[int], list[int]], limit: int | None = None) -> int:
    """The reference scanner: append (tag offset, body offset, length) of each value from
    ``pos`` (value number ``index``) on; return where it stopped.

    Plain Python, ~8 MB/s: it handles small streams, the rare inputs where
    speculation does not settle, and every error, with an exact message.
    ``limit`` stops it after that many values.
    """
    tags, starts, lengths = out
    n = len(buf)
    stop = -1 if limit is None else index + limit
    while pos < n:
        if index == stop:
            return pos
        if count is not None and index >= count:
            raise FormatError(f"expected {count} values, but {n - pos} bytes follow the "
                              f"last of them (from stream offset {pos})")
        tpos = pos
        t = buf[pos]
        pos += 1
        if t >= 0x80:
            t &= 0x7F
            shift = 7
            while True:
                if pos >= n:
                    raise TruncatedError(f"the tag of value {index} at stream offset {tpos} "
                                         f"is cut by the end of the stream")
                c = buf[pos]
                pos += 1
                t |= (c & 0x7F) << shift
                if c < 0x80:
                    break
                shift += 7
                if shift >= 7 * _MAX_TAG_BYTES:
                    raise FormatError(f"the tag of value {index} at stream offset {tpos} "
                                      f"is longer than {_MAX_TAG_BYTES} bytes")
        size = t - 1
        if size > n - pos:
            raise TruncatedError(f"value {index} at stream offset {tpos} claims {size} "
                                 f"bytes, but only {n - pos} remain in the stream")
        tags.append(tpos)
        starts.append(pos)
        lengths.append(size)
        if size > 0:
            pos += size
        index += 1
    if count is not None and index != count:
        raise count_error(count, index)
    return pos


def serial_tags(out: tuple[list[int], list[int], list[int]]) -> TagIndex:
    tags, starts, lengths = (np.array(x, np.int64) for x in out)
    if ((starts - tags) == 1).all() and (lengths < 127).all():
        return TagIndex(tags, (lengths + 1).astype(np.uint8), starts, lengths)
    return TagIndex(tags, None, starts, lengths)


def read_varints(bpad: np.ndarray, q: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Decode the uvarint tags at offsets ``q``: (byte count, value, well-formed).

    Values that cannot fit in the stream are clipped to ``n + 1``; a tag of
    more than ten bytes is not well-formed.
    """
    w = bpad[q[:, None] + np.arange(_MAX_TAG_BYTES)]
    stop = w < 0x80
    good = stop.any(axis=1)
    nbytes = stop.argmax(axis=1) + 1
    val = np.zeros(q.size, np.uint64)
    for j in range(9):  # 9 groups are 63 bits; a 10-byte tag is beyond any stream anyway
        part = (w[:, j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        val |= np.where(j < nbytes, part, np.uint64(0))
    val = np.where(nbytes >= _MAX_TAG_BYTES, np.uint64(n + 1),
                   np.minimum(val, np.uint64(n + 1))).astype(np.int64)
    return nbytes, val, good
