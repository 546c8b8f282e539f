"""glibc's malloc, told to keep what one scan frees for the next.

A whole scan allocates about twice the table's decoded size (request buffers,
decoded segments, the columns they are joined into) and the next scan frees all
of it.  With glibc's defaults most of it comes back as fresh pages the kernel
must zero: buffers of 32 MiB and more are mappings of their own, freed heap tops
are trimmed, and the threads of each scan may take new arenas.  On the 1M x 24
table that zeroing was half of a warm local scan's CPU, and 2-4x more when
another allocator (pyarrow's) churned memory in between
(``bench/results/local_profile.md``).  So the first read or write asks glibc to keep
freed memory for reuse, as pyarrow's and polars' own allocators do: blocks under
32 MiB come from the heap (glibc's own largest threshold, fixed: with its default
one moving, a trim threshold cannot be set), up to 256 MiB of free heap top is
kept, and at most one arena per core is made (glibc's default is eight per core;
a limit that must be set before other threads allocate, hence before this library
starts its first thread: :func:`keep_freed_memory` is called where each of them is
started, and by ``open``, ``open_dataset`` and the writer; never by an import; on the
2-core machine of the figures below, two).  Measured on that table: a warm scan's CPU
0.26-0.36 s alternating with pyarrow (was 0.53-1.19 s), the peak of one whole scan
555 MB (was 524 MB; with 64 MiB, 752 MB), ``iter_batches`` unchanged at 159 MB
(``csup_async.scan.memory`` maps its buffers itself and trims after each batch).

``CSUP_ASYNC_MALLOC=system`` in the environment, or any of glibc's own
``MALLOC_*_`` / ``GLIBC_TUNABLES`` settings, leaves malloc as it is; so does any
other libc.
"""

from __future__ import annotations

import os

__all__ = ["MALLOC_SETTINGS", "keep_freed_memory", "kept"]

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
#: What :func:`keep_freed_memory` sets, by mallopt parameter.
# arenas: one per core, so a service's decode threads on a large machine do not contend
# for two, while a scan's threads still reuse the arenas the last scan filled
MALLOC_SETTINGS = {_M_MMAP_THRESHOLD: 32 << 20, _M_TRIM_THRESHOLD: 256 << 20,
                   _M_ARENA_MAX: max(2, os.cpu_count() or 2)}
_USER_SETTINGS = ("MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_MMAP_THRESHOLD_",
                  "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_",
                  "GLIBC_TUNABLES")

_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Set :data:`MALLOC_SETTINGS` (once per process); True when glibc took them."""
    if _done:
        return _done[0]
    ok = False
    if (os.environ.get("CSUP_ASYNC_MALLOC", "").lower() != "system"
            and not any(k in os.environ for k in _USER_SETTINGS)):
        try:
            import ctypes

            libc = ctypes.CDLL(None)  # the interpreter's own libc: no library search
            libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl's mallopt ignores all)
            mallopt = libc.mallopt
        except (OSError, AttributeError, ImportError):
            mallopt = None
        if mallopt is not None:
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            mallopt.restype = ctypes.c_int
            ok = all([mallopt(k, v) == 1 for k, v in MALLOC_SETTINGS.items()])
    _done.append(ok)
    return ok


def kept() -> bool:
    """Whether this process's malloc keeps freed memory (:func:`keep_freed_memory` took)."""
    return bool(_done and _done[0])
