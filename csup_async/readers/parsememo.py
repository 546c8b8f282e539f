"""The process's memo of parsed reassembly sections, keyed by their bytes.

A service that opens the same object per request (``open(url)`` with no
``metadata_cache``) made the tail read and then parsed the same reassembly
section again every time: on the service benchmark's 50,000-row object that
was about a quarter of the event loop's CPU per scan.  The parse is a pure
function of the section's bytes, the trailer, the object's size and
``max_metadata``, so its result is kept here under exactly those, and an open
whose tail holds the same bytes takes it (and the plans made for it) without
parsing.  Nothing is trusted that was not read by this open: unlike the
metadata cache, no request is skipped and no version is assumed, so a
replaced object with a different section is simply a miss; a replaced object
with the *same* section bytes, trailer and size has the same metadata.

Bounded: sections above ``MAX_SECTION`` bytes are not kept, and the memo
holds at most ``MAX_BYTES`` of sections (least recently used first out; the
parsed form is estimated at four times its section, as the metadata cache
does).  Thread-safe: several event loops may share it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["MAX_BYTES", "MAX_SECTION", "ParseMemo", "parse_memo"]

MAX_SECTION = 1 << 20
"""Sections larger than this are parsed every time (their parse is rare and costly to
keep)."""
MAX_BYTES = 16 << 20
"""The memo's bound, sections and their estimated parsed form together."""
_PARSED_FACTOR = 4


class ParseMemo:
    """An LRU of (section bytes, trailer, object size, max_metadata) -> (meta, plans)."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[Any, dict[Hashable, Any], int]] = \
            OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(section: bytes | memoryview, trailer: Any, object_size: int,
            max_metadata: int) -> Hashable | None:
        """The entry a section would have (None: too large to keep)."""
        if len(section) > MAX_SECTION:
            return None
        return (bytes(section), trailer, object_size, max_metadata)

    def get(self, key: Hashable | None) -> tuple[Any, dict[Hashable, Any]] | None:
        """The parsed metadata and its plan memo, or None."""
        if key is None:
            return None
        with self._lock:
            got = self._entries.get(key)
            if got is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return got[0], got[1]

    def put(self, key: Hashable | None, meta: Any) -> dict[Hashable, Any]:
        """Keep ``meta`` for ``key``; the plan memo readers of it share (a new dict when
        nothing is kept)."""
        plans: dict[Hashable, Any] = {}
        if key is None:
            return plans
        cost = (1 + _PARSED_FACTOR) * len(key[0]) + 512  # type: ignore[index]
        if cost > self.max_bytes:
            return plans
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            self._entries[key] = (meta, plans, cost)
            self._bytes += cost
            while self._bytes > self.max_bytes:
                _, (_, _, c) = self._entries.popitem(last=False)
                self._bytes -= c
        return plans

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_memo = ParseMemo()


def parse_memo() -> ParseMemo:
    """The process's memo."""
    return _memo


# ------------------------------------------------------------- tail sizes ---

MAX_HINTS = 4096
"""Objects whose metadata size the process remembers (least recently opened first out)."""

_hints: OrderedDict[Hashable, tuple[int, int]] = OrderedDict()
_hints_lock = threading.Lock()


def note_tail(ident: Hashable, object_size: int, metadata_size: int) -> None:
    """Remember an opened object's size and the bytes its metadata takes at its end
    (reassembly section and trailer), for the next open's tail read."""
    with _hints_lock:
        _hints[ident] = (object_size, metadata_size)
        _hints.move_to_end(ident)
        while len(_hints) > MAX_HINTS:
            _hints.popitem(last=False)


def tail_hint(ident: Hashable) -> tuple[int, int] | None:
    """``(object size, metadata size)`` seen when ``ident`` was opened last, or None."""
    with _hints_lock:
        return _hints.get(ident)


def forget_tails() -> None:
    with _hints_lock:
        _hints.clear()
