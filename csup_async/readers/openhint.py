"""Where a CSUP v23 file's metadata was, the last time this process opened it.

A v23 open finds its metadata one read after the other: the tail (the last part's
trailer and footer), the head of the part (its first object's metadata), then each
further object's header from the sizes before it, and each earlier part's trailer
from the part after it.  Opened again, the same file (the same key, size and
version) has its metadata where it was: a warm open sends the reads the last open
made beside its tail read, all at once (one round trip on an object store; one
thread hand-off for a local file, :meth:`~csup_async.stores.local.LocalStore.read_tail_also`),
and the open's chain then finds each byte it needs held.

Nothing recalled is trusted: the reads are pinned to the version remembered
(a changed object fails them, and they are dropped), their bytes are used only
when the tail read names the same size and version, and the chain parses and
checks every header as a cold open does (a range that no longer holds what it held
only costs the reads it would have made anyway).  The memory is the process's,
bounded (:data:`KEEP` files, :data:`MAX_RANGES` reads each); ``headhint.forget``
clears it too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..stores import TailRead

Ranges = tuple[tuple[int, int], ...]

_SEEN: OrderedDict[tuple[str, str], tuple[int, str, Ranges]] = OrderedDict()
KEEP = 1024  # files remembered (least recently opened forgotten first)
MAX_RANGES = 64  # a file whose open made more reads is not remembered


def head_reader(store: Any) -> bool:
    """Whether ``store`` is a :class:`~csup_async.stores.capabilities.HeadReader` (by
    :func:`~csup_async.stores.capabilities.abilities`: once per class, not a Protocol
    check per open, ~30 us each)."""
    from ..stores.capabilities import abilities

    return abilities(store).head_reader


def _ident(store: Any, key: str) -> tuple[str, str] | None:
    from ..stores.capabilities import cache_key

    try:
        where = str(store.endpoint_for(key)) if head_reader(store) else ""
        return f"{type(store).__name__}:{where}", cache_key(store, key)
    except Exception:  # a hint: no name, no hint
        return None


def recall(store: Any, key: str) -> tuple[int, str, Ranges] | None:
    """``(size, version, ranges)`` the last open of ``key`` through a store like
    ``store`` read besides its tail (and head) reads; None when not known."""
    ident = _ident(store, key)
    return None if ident is None else _SEEN.get(ident)


def remember(store: Any, key: str, size: int, version: str | None,
             ranges: Sequence[tuple[int, int]]) -> None:
    """Note the reads an open of ``key`` (``size`` bytes at ``version``) made beside its
    tail read; nothing (and what was known forgotten) when there are none or too many,
    or the version is unknown (nothing could check the reads against it)."""
    ident = _ident(store, key)
    if ident is None:
        return
    if version is None or not ranges or len(ranges) > MAX_RANGES:
        _SEEN.pop(ident, None)
        return
    _SEEN[ident] = (size, version, tuple(sorted(set(ranges))))
    _SEEN.move_to_end(ident)
    while len(_SEEN) > KEEP:
        _SEEN.popitem(last=False)


def forget() -> None:
    """Forget every file (tests that count requests start from a cold open)."""
    _SEEN.clear()


Recalled = tuple[int, str, list[tuple[int, bytes]]]


async def _ranges(store: Any, key: str, entry: tuple[int, str, Ranges]) -> Recalled | None:
    size, version, ranges = entry
    try:
        got = await asyncio.gather(*(store.read_range(key, o, n, version)
                                     for o, n in ranges))
    except Exception:  # speculative: the chain reads what it needs
        return None
    return size, version, [(o, bytes(d)) for (o, _), d in zip(ranges, got, strict=True)]


def send(store: Any, key: str, tail_size: int
         ) -> tuple[asyncio.Future[TailRead] | None, asyncio.Future[Any] | None]:
    """The tail read of ``key`` (``tail_size`` bytes), and the reads the last open of it
    made, sent together: ``(tail, recalled)``; ``(None, None)`` when nothing is known of
    it (the open reads its tail as usual); ``tail`` None when the store reads them
    apart (then the open sends its tail read itself)."""
    entry = recall(store, key)
    if entry is None:
        return None, None
    from ..stores.capabilities import abilities

    if not abilities(store).tail_also:
        return None, asyncio.ensure_future(_ranges(store, key, entry))
    both = asyncio.ensure_future(store.read_tail_also(key, tail_size, entry[2], entry[1]))

    async def tail() -> TailRead:
        return (await both)[0]  # type: ignore[no-any-return]

    async def recalled() -> Recalled | None:
        _, got = await both
        return None if got is None else (entry[0], entry[1], got)

    return asyncio.ensure_future(tail()), asyncio.ensure_future(recalled())


async def drop(recalled: Any) -> None:
    """Cancel reads no one will use, and wait for them."""
    if isinstance(recalled, asyncio.Future):
        recalled.cancel()
        with contextlib.suppress(BaseException):
            await recalled


async def take(reader: Any, tail: TailRead, recalled: Any) -> list[tuple[int, bytes]]:
    """The bytes the recalled reads sent with the tail read got, when the tail read names
    the size and version they were read at (each counted in ``reader.open_stats``
    when made); none when the tail read holds the whole file or they failed."""
    if recalled is None:
        return []
    if tail.offset == 0:
        await drop(recalled)
        return []
    try:
        got = await recalled
    except Exception:
        return []
    if got is None:
        return []
    size, version, pieces = got
    reader.open_stats.requests += len(pieces)
    reader.open_stats.bytes_read += sum(len(d) for _, d in pieces)
    if size != tail.info.size or version is None or version != tail.info.version:
        return []
    return pieces
