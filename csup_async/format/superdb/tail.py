"""Whether an object's tail is a CSUP version-23 file's (``super`` main): the one test
every ``open`` makes, kept apart from :mod:`.v23` so that opening this library's own files
does not import the SuperDB readers' modules."""

from __future__ import annotations

import struct

VERSION = 23
TRAILER = 16
MAGIC = b"CSUP"

__all__ = ["is_v23_tail"]


def is_v23_tail(data: bytes | memoryview, offset: int, size: int) -> bool:
    """Whether bytes read at ``offset`` of a ``size``-byte object end in a v23 trailer
    (and, when they hold the head, start with a v23 section)."""
    if offset + len(data) != size or len(data) < TRAILER or bytes(data[-4:]) != MAGIC:
        return False
    if offset == 0 and len(data) >= 8:
        return bytes(data[:4]) == MAGIC and struct.unpack_from("<I", data, 4)[0] == VERSION
    return True
