"""Finding the values of a stream: the lanes where they pay, the serial scanner
elsewhere, and the check that makes the lanes' answer trustworthy."""

from __future__ import annotations

import numpy as np

from .lanes import _lane_tags, _sample
from .tags import (
    _ANY,
    Buffer,
    _check_count,
    _count_error,
    _padded,
    _Profile,
    _serial_scan,
    _serial_tags,
    _Tags,
    _u8,
    _varints,
)

_SERIAL_BELOW = 4096  # streams shorter than this are scanned serially (lanes cost ~1 ms)
_MAX_RESTARTS = 32  # values the lanes cannot follow (very long, or errors) before going serial
_CHUNK = 1 << 24  # bytes the lanes take at a time: bounds their memory to ~3x this
_STRICT = False  # tests set this: let the lanes' own exceptions through instead of falling back


def _verify(bpad: np.ndarray, n: int, tags: np.ndarray, end: int) -> tuple[_Tags, int]:
    """Check speculative tag offsets against the chain rule (each value ends where
    the next begins, the last at ``end``; ``n`` is the stream's length).

    Returns the values and -1, or the values before the first offset that is
    not followed correctly and that offset (the serial scanner takes over
    there).  Tags the type does not allow are not rejected here: the lanes
    step over them by one byte, which the chain rule catches unless the tag
    is 0 or 1, and the decoders check lengths anyway.
    """
    if not tags.size or tags[0] != 0:
        return _Tags(tags[:0], bpad[:0]), 0
    v = bpad[tags]
    hi = np.flatnonzero(v >= 0x80)
    if hi.size == 0:
        ends = tags + np.maximum(v, 1)
        lengths = starts = None
    else:
        lengths = v.astype(np.int64)
        lengths -= 1
        starts = tags + 1
        nbytes, val, good = _varints(bpad, tags[hi], n)
        lengths[hi] = np.where(good, val - 1, n + 1)
        starts[hi] = tags[hi] + nbytes
        ends = starts + np.maximum(lengths, 0)
    bad = ends[:-1] != tags[1:]
    if bad.any() or ends[-1] != end:
        i = int(bad.argmax()) if bad.any() else tags.size - 1
        if lengths is None:
            return _Tags(tags[:i], v[:i]), int(tags[i])
        return _Tags(tags[:i], None, starts[:i], lengths[:i]), int(tags[i])  # type: ignore[index]
    if lengths is None:
        return _Tags(tags, v), -1
    return _Tags(tags, None, starts, lengths), -1


def _scan(buf: np.ndarray, bpad: np.ndarray | None, count: int | None, prof: _Profile) -> _Tags:
    """Every value's tag offset, body offset and length, checked against ``count``."""
    _check_count(count)
    n = buf.size
    parts: list[_Tags] = []
    pos = index = 0
    if n >= _SERIAL_BELOW and bpad is not None:
        avg, likely = _sample(buf, count, prof)
        view = memoryview(buf)
        restarts = 0
        while n - pos >= _SERIAL_BELOW and restarts <= _MAX_RESTARTS:
            sub = bpad[pos:]
            try:
                rest = n - pos
                found = _lane_tags(sub, rest, prof, avg, likely,
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
            pos = _serial_scan(view, pos + resume, index, count, one, limit=1)
            parts.append(_serial_tags(one))
            index += 1
            restarts += 1
    if pos < n or not parts:
        tail: tuple[list[int], list[int], list[int]] = ([], [], [])
        _serial_scan(buf.tobytes() if n - pos > 4096 else memoryview(buf), pos, index, count,
                     tail)
        parts.append(_serial_tags(tail))
    elif count is not None and index != count:
        raise _count_error(count, index)
    return _Tags.join(parts)


def scan_tags(stream: Buffer, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start offset of each value's body, its length or -1 for null), both int64.

    With ``count``, the stream must hold exactly that many values and end with
    the last; without, it must end exactly after a whole value.
    """
    buf = _u8(stream)
    res = _scan(buf, _padded(buf) if buf.size >= _SERIAL_BELOW else None, count, _ANY)
    return res.starts, res.lengths
