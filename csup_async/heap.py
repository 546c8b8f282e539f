"""glibc's malloc, told to keep what one scan frees for the next.

A whole scan allocates about twice the table's decoded size (request buffers,
decoded segments, the columns they are joined into) and the next scan frees all
of it.  With glibc's defaults most of it comes back as fresh pages the kernel
must zero: buffers of 32 MiB and more are mappings of their own, freed heap tops
are trimmed, and the threads of each scan may take new arenas.  On the 1M x 24
table that zeroing was half of a warm local scan's CPU, and 2-4x more when
another allocator (pyarrow's) churned memory in between
(``bench/results/local_profile.md``).  So ``import csup_async`` asks glibc to keep
freed memory for reuse, as pyarrow's and polars' own allocators do: blocks under
64 MiB come from the heap, up to 256 MiB of free heap top is kept, and at most two
arenas are made (the limit must be set before other threads allocate, hence at
import).  A process's resident size then stays near its largest scan's;
``csup_async.read.memory.trim`` still hands a batch read's free pages back.

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
MALLOC_SETTINGS = {_M_MMAP_THRESHOLD: 64 << 20, _M_TRIM_THRESHOLD: 256 << 20, _M_ARENA_MAX: 2}
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
