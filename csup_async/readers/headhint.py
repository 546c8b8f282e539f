"""Whether to read an object's head beside its tail: what the last object opened
from the same place (endpoint and directory) was.

A CSUP v23 file (super main's) keeps its objects' metadata at its head and its
trailer at its tail, so a file larger than the tail read costs the tail read, then
the head read: two round trips before any data.  Only the tail says the file is v23;
but where the last file opened was such a file (a dataset, a directory, a Spark
job: files written alike) the next most likely is too, and then the head read is
sent with the tail read, its bytes used when the object's version is the tail's
(``RangedStore.read_head``).  Where it was not (this library's layout, a small file
read whole by its tail) no head read is sent: a wrong guess costs one request, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections import OrderedDict
from typing import Any

_LAST: OrderedDict[tuple[str, str], bool] = OrderedDict()
_KEEP = 1024  # places remembered (least recently opened forgotten first)


def _place(store: Any, key: str) -> tuple[str, str] | None:
    from ..stores.capabilities import HeadReader

    if not isinstance(store, HeadReader):
        return None
    try:
        return str(store.endpoint_for(key)), posixpath.dirname(key)
    except Exception:  # a hint: no place, no hint
        return None


def expect_head(store: Any, key: str) -> bool:
    """Whether the last object opened from ``key``'s place needed a head read."""
    place = _place(store, key)
    return place is not None and _LAST.get(place, False)


def remember(store: Any, key: str, needed_head: bool) -> None:
    """Note whether the object ``key`` just opened through ``store`` needed a head read."""
    place = _place(store, key)
    if place is None:
        return
    _LAST[place] = needed_head
    _LAST.move_to_end(place)
    while len(_LAST) > _KEEP:
        _LAST.popitem(last=False)


def forget() -> None:
    """Forget every place (tests that count requests start from no hint)."""
    _LAST.clear()


async def drop_head(head: Any) -> None:
    """Cancel a speculative head read no one will use, and wait for it."""
    if isinstance(head, asyncio.Future):
        head.cancel()
        with contextlib.suppress(BaseException):
            await head
