"""Object sizes a listing gave, kept for the opens that follow it.

S3's ListObjectsV2 and GCS's object listing name each object's size beside its key.
An open that knows the size before its first read can choose that read: a file
smaller than the tail read is read whole by it and needs nothing else, so no
speculative head read is sent beside it (readers/headhint).  A size is a hint for
that choice only: every read still checks the size and version its response names,
so a listing older than the object costs at most one request, never wrong data.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["ListedSizes", "listed_size"]

KEEP = 100_000  # objects remembered per store (a large dataset's listing: ~10 MB at most)


class ListedSizes:
    """The sizes the last listings named, by the URL the listing returned (bounded)."""

    __slots__ = ("_sizes",)

    def __init__(self) -> None:
        self._sizes: OrderedDict[str, int] = OrderedDict()

    def note(self, url: str, size: Any) -> None:
        """Keep ``size`` for ``url`` when the listing gave a usable one."""
        try:
            n = int(size)
        except (TypeError, ValueError):
            return
        if n < 0:
            return
        self._sizes[url] = n
        self._sizes.move_to_end(url)
        while len(self._sizes) > KEEP:
            self._sizes.popitem(last=False)

    def get(self, url: str) -> int | None:
        return self._sizes.get(url)


def listed_size(store: Any, key: str) -> int | None:
    """The size a listing through ``store`` gave for ``key`` (None when none did)."""
    from .capabilities import SizeLister

    if not isinstance(store, SizeLister):
        return None
    sizes = store.listed_sizes
    return sizes.get(key) if isinstance(sizes, ListedSizes) else None
