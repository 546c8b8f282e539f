"""Finding the values of a stream: the lanes where they pay, the serial scanner
elsewhere, and the check that makes the lanes' answer trustworthy."""

from __future__ import annotations

import numpy as np

from .lanes import lane_tags, sample_tags
from .tags import (
    ANY_PROFILE,
    Buffer,
    TagIndex,
    TagProfile,
    as_u8,
    check_count,
    count_error,
    padded,
    read_varints,
    serial_scan,
    serial_tags,
)

SERIAL_BELOW = 4096  # streams shorter than this are scanned serially (lanes cost ~1 ms)
_MAX_RESTARTS = 32  # values the lanes cannot follow (very long, or errors) before going serial
_CHUNK = 1 << 24  # bytes the lanes take at a time: bounds their memory to ~3x this
_STRICT = False  # tests set this: let the lanes' own exceptions through instead of falling back


def _verify(bpad: np.ndarray, n: int, tags: np.ndarray, end: int) -> tuple[TagIndex, int]:
    """Check speculative tag offsets against the chain rule (each value ends where
    the next begins, the last at ``end``; ``n`` is the stream's length).

    Returns the values and -1, or the values before the first offset that is
    not followed correctly and that offset (the serial scanner takes over
    there).  Tags the type does not allow are not rejected here: the lanes
    step over them by one byte, which the chain rule catches unless the tag
    is 0 or 1, and the decoders check lengths anyway.
    """
    if not tags.size or tags[0] != 0:
        return TagIndex(tags[:0], bpad[:0]), 0
    v = bpad[tags]
    hi = np.flatnonzero(v >= 0x80)
    if hi.size == 0:
        ends = tags + np.maximum(v, 1)
        lengths = starts = None
    else:
        lengths = v.astype(np.int64)
        lengths -= 1
        starts = tags + 1
        nbytes, val, good = read_varints(bpad, tags[hi], n)
        lengths[hi] = np.where(good, val - 1, n + 1)
        starts[hi] = tags[hi] + nbytes
        ends = starts + np.maximum(lengths, 0)
    bad = ends[:-1] != tags[1:]
    if bad.any() or ends[-1] != end:
        i = int(bad.argmax()) if bad.any() else tags.size - 1
        if lengths is None:
            return TagIndex(tags[:i], v[:i]), int(tags[i])
        return TagIndex(tags[:i], None, starts[:i], lengths[:i]), int(tags[i])  # type: ignore[index]
    if lengths is None:
        return TagIndex(tags, v), -1
    return TagIndex(tags, None, starts, lengths), -1


def scan_values(buf: np.ndarray, bpad: np.ndarray | None, count: int | None,
                prof: TagProfile) -> TagIndex:
    """Every value's tag offset, body offset and length, checked against ``count``."""
    check_count(count)
    n = buf.size
    parts: list[TagIndex] = []
    pos = index = 0
    if n >= SERIAL_BELOW and bpad is not None:
        avg, likely = sample_tags(buf, count, prof)
        view = memoryview(buf)
        restarts = 0
        while n - pos >= SERIAL_BELOW and restarts <= _MAX_RESTARTS:
            sub = bpad[pos:]
            try:
                rest = n - pos
                found = lane_tags(sub, rest, prof, avg, likely,
                                   rest if rest < 2 * _CHUNK else _CHUNK)
            except Exception:
                if _STRICT:
                    raise
                found = None  # a bug in a heuristic must not become the user's error
            if found is None:
                break
            res, resume = _verify(sub, n - pos, *found)
            if res.tags.size:
                parts.append(res.shifted(pos) if pos else res)
                index += res.tags.size
            if resume < 0:
                pos += found[1]
                continue
            # the lanes could not follow this value: take it serially (errors raise here)
            one: tuple[list[int], list[int], list[int]] = ([], [], [])
            pos = serial_scan(view, pos + resume, index, count, one, limit=1)
            parts.append(serial_tags(one))
            index += 1
            restarts += 1
    if pos < n or not parts:
        tail: tuple[list[int], list[int], list[int]] = ([], [], [])
        serial_scan(buf.tobytes() if n - pos > 4096 else memoryview(buf), pos, index, count,
                     tail)
        parts.append(serial_tags(tail))
    elif count is not None and index != count:
        raise count_error(count, index)
    return TagIndex.join(parts)


def scan_tags(stream: Buffer, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start offset of each value's body, its length or -1 for null), both int64.

    With ``count``, the stream must hold exactly that many values and end with
    the last; without, it must end exactly after a whole value.
    """
    buf = as_u8(stream)
    res = scan_values(buf, padded(buf) if buf.size >= SERIAL_BELOW else None, count, ANY_PROFILE)
    return res.starts, res.lengths
