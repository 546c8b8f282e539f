"""Telling SuperDB's header layout from the trailer layout, from bytes ``open`` reads.

Kept apart from :mod:`.superdb` (which builds on :class:`csup_async.readers.reader.Reader`)
so the trailer-layout reader can ask without importing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..stores import TailRead

MAGIC = b"CSUP"


class HeaderLayout(Exception):
    """Raised by ``Reader.load`` for ``open`` to read the object as SuperDB's layout."""

    def __init__(self, tail: TailRead, head: bytes | None, t0: float) -> None:
        super().__init__("a SuperDB (header layout) CSUP object")
        self.tail, self.head, self.t0 = tail, head, t0


def is_header_layout(data: bytes | memoryview, offset: int) -> bool:
    """Whether bytes read at ``offset`` start a SuperDB CSUP file."""
    return offset == 0 and bytes(data[:4]) == MAGIC


async def probe(reader: Any, tail: TailRead) -> bytes | None:
    """The head of an object whose tail holds no trailer, when it starts like a SuperDB
    file (None: it does not, and the caller raises its trailer error).  The head read
    is as big as the tail read, so it holds the first objects' metadata too."""
    import planner as P

    size = tail.info.size
    if tail.offset == 0 or size < 4:
        return None
    spec = getattr(reader, "speculative_head", None)
    if spec is not None:  # a head read sent with the tail read (readers/headhint): its bytes
        from .headhint import speculated

        reader.speculative_head = None  # consumed here
        got = await speculated(reader, tail, spec)
        if got is not None:
            return got if got[:4] == MAGIC else None
    n = min(size, P.tail_prefetch_size(reader.profile, size))
    head = bytes(await reader.store.read_range(reader.key, 0, n, tail.info.version))
    reader.open_stats.requests += 1
    reader.open_stats.bytes_read += n
    return head if head[:4] == MAGIC else None
