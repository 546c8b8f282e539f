"""Bytes of one object read so far, kept as disjoint, merged ranges.

The open's reads (tail, head, the chain of header reads) and a scan's requests
overlap in any way; merging touching and overlapping pieces as they arrive makes
every later slice a lookup in one piece (:class:`csup_async.stores.rangebuf.RangeBuffer`
keeps pieces as given, which suits the trailer layout's disjoint requests).
"""

from __future__ import annotations

import bisect

from ...model.errors import FormatError


class HeldBytes:
    def __init__(self) -> None:
        self._starts: list[int] = []
        self._data: list[bytes | bytearray] = []

    def add(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        start, end = offset, offset + len(data)
        lo = bisect.bisect_left(self._starts, start)
        if lo and self._starts[lo - 1] + len(self._data[lo - 1]) >= start:
            lo -= 1  # the piece before touches or overlaps
        hi = lo
        while hi < len(self._starts) and self._starts[hi] <= end:
            hi += 1
        if hi == lo:
            self._starts.insert(lo, start)
            self._data.insert(lo, bytes(data))
            return
        new_start = min(start, self._starts[lo])
        new_end = max(end, *(s + len(d) for s, d in zip(self._starts[lo:hi],
                                                       self._data[lo:hi], strict=True)))
        merged = bytearray(new_end - new_start)
        for s, d in zip(self._starts[lo:hi], self._data[lo:hi], strict=True):
            merged[s - new_start:s - new_start + len(d)] = d
        merged[start - new_start:end - new_start] = data
        self._starts[lo:hi] = [new_start]
        self._data[lo:hi] = [merged]

    def _find(self, offset: int, length: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self._starts, offset) - 1
        if i < 0 or offset + length > self._starts[i] + len(self._data[i]):
            return None
        return i, offset - self._starts[i]

    def held_until(self, offset: int) -> int:
        """Where the held bytes from ``offset`` on end (``offset``: none held there)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i < 0:
            return offset
        return max(offset, self._starts[i] + len(self._data[i]))

    def covers(self, offset: int, length: int) -> bool:
        return length == 0 or self._find(offset, length) is not None

    def get(self, offset: int, length: int) -> memoryview:
        if length == 0:
            return memoryview(b"")
        got = self._find(offset, length)
        if got is None:
            raise FormatError(f"bytes {offset}+{length} were not read (plan bug)")
        i, at = got
        return memoryview(self._data[i])[at:at + length]

    def ranges(self) -> list[tuple[int, int]]:
        return [(s, len(d)) for s, d in zip(self._starts, self._data, strict=True)]
