"""Fetched byte ranges of one object, serving any sub-range that they cover."""

from __future__ import annotations

import bisect

from ..model.errors import FormatError


class RangeBuffer:
    """Holds (offset, bytes) pieces; ``get`` slices a range out of one or several."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._pieces: list[tuple[int, memoryview]] = []

    def add(self, offset: int, data: bytes | memoryview) -> None:
        i = bisect.bisect_left(self._starts, offset)
        self._starts.insert(i, offset)
        self._pieces.insert(i, (offset, memoryview(data)))

    def pieces(self) -> list[tuple[int, memoryview]]:
        return list(self._pieces)

    def covers(self, offset: int, length: int) -> bool:
        try:
            self.get(offset, length)
        except FormatError:
            return False
        return True

    def get(self, offset: int, length: int) -> bytes | memoryview:
        end = offset + length
        i = bisect.bisect_right(self._starts, offset) - 1
        out: list[memoryview] = []
        pos = offset
        while pos < end:
            if i < 0 or i >= len(self._pieces):
                break
            start, data = self._pieces[i]
            if start > pos or start + len(data) <= pos:
                # try the next piece (pieces may overlap or be out of order)
                j = bisect.bisect_right(self._starts, pos) - 1
                if j == i:
                    break
                i = j
                continue
            take = min(end, start + len(data)) - pos
            out.append(data[pos - start : pos - start + take])
            pos += take
            i += 1
        if pos < end:
            raise FormatError(f"bytes {offset}+{length} were not fetched (plan bug)")
        if length == 0:
            return b""
        return out[0] if len(out) == 1 else b"".join(out)
