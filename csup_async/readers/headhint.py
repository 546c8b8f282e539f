"""Whether to read an object's head beside its tail, and how much of it.

A CSUP v23 file (super main's) keeps its objects' metadata at its head and its
trailer at its tail, so a file larger than the tail read, read one request after
the other, costs the tail read, then the head read: two round trips before any
data.  Only the tail says the file is v23, so the head read is sent with the tail
read, its bytes used when the object's version is the tail's
(``RangedStore.read_head``), chosen by what is known when the open starts:

* the object's size, from a listing (stores/sizes.py): a file the tail read holds
  whole needs no head read, whatever it is;
* what the last object opened from the same place (endpoint and directory) was: a
  v23 file that needed a head read (the next most likely is alike: a dataset, a
  directory, a Spark job's files) gets a head read as large as the tail read, whose
  data the scan uses; this library's layout, or a file read whole, gets none;
* nothing (a place not seen before, as every place is in a new process): a small
  head read (the profile's ``tail_min``, 64 KiB on S3: super's metadata is ~2 KB for
  6 columns, ~19 KB for 500), so that a v23 file costs one metadata round trip even
  cold.  For a file of this library's layout that read is the cost of not knowing:
  one more GET of at most ``tail_min`` bytes, for each file opened in the place before
  the first of them answers (docs/format.md).
  A program that reads only this library's layout turns that read off:
  ``$CSUP_COLD_HEAD_READ=0``, or :data:`cold_head_reads` set False.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
from collections import OrderedDict
from typing import Any

from .openhint import forget as forget_reads
from .openhint import head_reader

#: Whether an open in a place not seen before sends a small head read beside its tail read
#: (``$CSUP_COLD_HEAD_READ=0`` says no, too).
cold_head_reads = True

_LAST: OrderedDict[tuple[str, str], bool] = OrderedDict()
_KEEP = 1024  # places remembered (least recently opened forgotten first)


def _place(store: Any, key: str) -> tuple[str, str] | None:
    if not head_reader(store):
        return None
    try:
        return str(store.endpoint_for(key)), posixpath.dirname(key)
    except Exception:  # a hint: no place, no hint
        return None


def head_size(store: Any, key: str, profile: Any, size: int | None = None) -> int | None:
    """How many bytes of ``key``'s head to read beside its tail read (None: no head read),
    from its ``size`` when a listing gave it and what its place's last object was."""
    import planner as P

    place = _place(store, key)
    if place is None:
        return None
    tail = P.tail_prefetch_size(profile)
    if size is not None and P.tail_prefetch_size(profile, size) >= size:
        return None  # the tail read holds the whole file
    last = _LAST.get(place)
    if last is None:  # a place not seen before: a small head read, the metadata only
        if not cold_head_reads or os.environ.get("CSUP_COLD_HEAD_READ", "1") == "0":
            return None
        return min(profile.tail_min, tail) if size is None else min(profile.tail_min, size)
    return tail if last else None


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
    """Forget every place, and every file's reads (:mod:`.openhint`): tests that count
    requests start from no hint."""
    _LAST.clear()
    forget_reads()


async def drop_head(head: Any) -> None:
    """Cancel a speculative head read no one will use, and wait for it."""
    if isinstance(head, asyncio.Future):
        head.cancel()
        with contextlib.suppress(BaseException):
            await head


async def speculated(reader: Any, tail: Any, spec: Any) -> bytes | None:
    """The bytes of the head read sent with the tail read, when they are of the tail's
    version and the tail read did not hold the whole file already (its request and
    bytes counted either way, when it was made)."""
    if tail.offset == 0 and isinstance(spec, asyncio.Future) and not spec.done():
        await drop_head(spec)  # a small file: the tail read holds it all
        return None
    try:
        got = await spec
    except Exception:  # speculative: the chain reads it again
        return None
    if got is None:
        return None
    reader.open_stats.requests += 1
    reader.open_stats.bytes_read += len(got.data)
    if tail.offset == 0 or got.info.version is None or got.info != tail.info:
        return None
    return bytes(got.data)
