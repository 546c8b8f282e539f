"""A CSUP v23 file's metadata bytes, handed from one process to another: no second open.

A Spark driver opens every file to plan (the tail read, and for a file larger than
it a head read); a task then opened the file again, two more round trips per object
before its first data byte.  What the open needs is small: each part's footer and
trailer, and each object's header, metadata and types sections.  The driver cuts
those ranges from the bytes its open read (:func:`.superdb23.held_ranges`; with the bytes of
the data it already holds, within a budget), the task carries them, and
:func:`from_held` builds the reader from them with no request: the open reads only
bytes it does not hold (:func:`.superdb23.load_v23`), and it holds them all.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..model.options import parse_reader
from ..stores import ObjectInfo, Store, TailRead
from ..stores.capabilities import profile_of
from .reader import Reader

__all__ = ["from_held"]


async def from_held(url: str, size: int, version: str | None,
                    held: Sequence[tuple[int, bytes]], *, store: Store,
                    objects: Sequence[int] | None = None, **options: Any) -> Reader:
    """The reader of the v23 object at ``url`` (``size`` bytes, pinned to ``version``;
    ``objects``: the indices of the only objects it reads, see ``keep_objects``)
    from the ranges :func:`.superdb23.held_ranges` cut: no request, unless a range is missing (then
    the open reads what it lacks, as any open does)."""
    from .superdb import to_header_layout

    reader_opts, _ = parse_reader(options)
    r = Reader(store, url, owns_store=False,
               options=reader_opts.with_profile(profile_of(store)))
    last = [h for h in held if h[0] + len(h[1]) == size]
    tail = TailRead(last[0][1] if last else b"", ObjectInfo(size, version))
    r.tail = tail
    rest = [h for h in held if not last or h is not last[0]]
    got = await to_header_layout(r, tail, time.perf_counter(), None, held=rest)
    if objects is not None:
        got.keep_objects(objects)
    return got
