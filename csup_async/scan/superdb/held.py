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
    """Pieces kept disjoint: overlapping ones merged, touching ones kept apart (a scan's
    read continuing the open's head read is not copied into it; a range across touching
    pieces is joined when asked for, copying only that range)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._data: list[bytes | bytearray] = []

    def add(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        start, end = offset, offset + len(data)
        if start == end:
            return
        lo = bisect.bisect_left(self._starts, start)
        if lo and self._starts[lo - 1] + len(self._data[lo - 1]) > start:
            lo -= 1  # the piece before overlaps
        hi = lo
        while hi < len(self._starts) and self._starts[hi] < end:
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

    def _find(self, offset: int, length: int) -> tuple[int, int, int] | None:
        """``(first piece, last piece, offset in the first)`` of a held range: touching
        pieces from the one holding ``offset``; None when a byte of it is not held."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i < 0:
            return None
        j, end, stop = i, self._starts[i] + len(self._data[i]), offset + length
        while end < stop:
            j += 1
            if j == len(self._starts) or self._starts[j] != end:
                return None
            end += len(self._data[j])
        return i, j, offset - self._starts[i]

    def held_until(self, offset: int) -> int:
        """Where the held bytes from ``offset`` on end (``offset``: none held there)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i < 0:
            return offset
        end = self._starts[i] + len(self._data[i])
        while i + 1 < len(self._starts) and self._starts[i + 1] == end:
            i += 1
            end += len(self._data[i])
        return max(offset, end)

    def covers(self, offset: int, length: int) -> bool:
        return length == 0 or self._find(offset, length) is not None

    def get(self, offset: int, length: int) -> memoryview:
        if length == 0:
            return memoryview(b"")
        got = self._find(offset, length)
        if got is None:
            raise FormatError(f"bytes {offset}+{length} were not read (plan bug)")
        i, j, at = got
        if i == j:
            return memoryview(self._data[i])[at:at + length]
        joined = b"".join(memoryview(d) for d in self._data[i:j + 1])
        return memoryview(joined)[at:at + length]

    def ranges(self) -> list[tuple[int, int]]:
        return [(s, len(d)) for s, d in zip(self._starts, self._data, strict=True)]
