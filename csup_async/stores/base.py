"""The store protocol every backend implements.

Three operations are all a CSUP reader needs: one suffix read that also
reports the object's size and version (so metadata costs one round trip),
ranged reads pinned to that version (so a scan never mixes two versions of an
object), and the size alone.  Stores are shared between readers and own their
connection pools; ``close`` releases them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    size: int
    version: str | None  # ETag, S3 version id, GCS generation, or local mtime/inode


@dataclass(frozen=True, slots=True)
class TailRead:
    """The last ``len(data)`` bytes of an object, with what the response said about it."""

    data: bytes
    info: ObjectInfo

    @property
    def offset(self) -> int:
        return self.info.size - len(self.data)


@runtime_checkable
class Store(Protocol):
    name: str

    async def read_tail(self, key: str, length: int) -> TailRead:
        """The last ``length`` bytes (all of a smaller object) plus size and version."""
        ...

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        """Exactly ``length`` bytes at ``offset``; ObjectChangedError if not ``version``."""
        ...

    async def info(self, key: str) -> ObjectInfo:
        ...

    async def close(self) -> None:
        ...
