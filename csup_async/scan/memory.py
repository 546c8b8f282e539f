"""Where a batch read's big buffers live, and giving freed memory back.

A batch read allocates and frees the same few sizes over and over in several
threads (pieces on the event loop, segment bytes in the pool, batches in the
read thread, freed by the consumer).  With glibc's malloc that fragments the
per-thread arenas: after the first large buffer is freed, its dynamic mmap
threshold rises (up to 32 MiB), later buffers come from the arenas, and the
process keeps their high-water mark (measured on the 1M x 24 table: 240 MB
resident for 120 MB in use).  So the buffers that live longest (fetched
pieces, segment bytes) are anonymous mappings of their own, returned to the
system when dropped, and :func:`trim` asks malloc to return the free pages of
its arenas once a batch is done.  Elsewhere (another libc) both are plain.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
from collections.abc import Callable

import numpy as np

#: Buffers at least this large get a mapping of their own (smaller ones are cheap to
#: keep in malloc's arenas, and a mapping costs a system call and page faults).
OWN_PAGES_FROM = 256 << 10


def pages(n: int) -> np.ndarray:
    """A writable uint8 array of ``n`` bytes (not zeroed for small ones) whose memory goes
    back to the system as soon as the array is gone."""
    if n < OWN_PAGES_FROM:
        return np.empty(n, np.uint8)
    if _PRIVATE is None:  # not POSIX
        return np.frombuffer(mmap.mmap(-1, n), np.uint8)
    # private: a shared anonymous mapping would be backed by shmem, slower to fault in
    return np.frombuffer(mmap.mmap(-1, n, flags=_PRIVATE), np.uint8)


_PRIVATE = (mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
            if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS") else None)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        fn = libc.malloc_trim  # glibc only
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


_TRIM: list[Callable[[int], int] | None] = []  # looked up on first use


def trim() -> None:
    """Return malloc's free pages to the system, where malloc can (glibc)."""
    if not _TRIM:
        _TRIM.append(_malloc_trim())
    fn = _TRIM[0]
    if fn is not None:
        fn(0)
