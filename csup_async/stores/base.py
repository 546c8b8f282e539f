"""The store protocol every backend implements.

Three operations are all a CSUP reader needs: one suffix read that also
reports the object's size and version (so metadata costs one round trip),
ranged reads pinned to that version (so a scan never mixes two versions of an
object), and the size alone.  Stores are shared between readers and own their
connection pools; ``close`` releases them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from ..model.errors import StoreError

#: How much of a response body a stream hands over at a time, at most.  Big
#: enough that per-chunk overhead vanishes, small enough that a decoder can
#: start on a segment while the rest of a large range is still arriving.
CHUNK_SIZE = 256 * 1024


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
    """What a reader needs from a store.

    Implementations also carry ``default_profile``, the planner profile that
    suits them ("s3", "gcs", "http" or "local"), and are async context managers
    that ``close`` on exit.  They may have ``warm_connections()``: how many
    connections their pool holds open (the planner charges new ones their
    setup; without it a pool counts as cold).
    """

    name: str

    async def read_tail(self, key: str, length: int) -> TailRead:
        """The last ``length`` bytes (all of a smaller object) plus size and version."""
        ...

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        """Exactly ``length`` bytes at ``offset``; ObjectChangedError if not ``version``."""
        ...

    def stream_range(self, key: str, offset: int, length: int,
                     version: str | None = None) -> AsyncIterator[bytes]:
        """The same bytes as ``read_range``, handed over as they arrive.

        Every chunk is handed over only once it is known to belong to ``version``
        (or to the version the first response named), so a consumer may decode
        as it goes.  Close the iterator (``contextlib.aclosing``) if you stop
        early: that releases the connection at once.
        """
        ...

    async def info(self, key: str) -> ObjectInfo:
        ...

    async def close(self) -> None:
        ...


async def collect(chunks: AsyncIterator[bytes], length: int, path: str | None) -> bytearray:
    """Gather a stream of exactly ``length`` bytes into one preallocated buffer.

    One allocation and one copy per chunk, however many chunks arrive (joining
    as they come would be quadratic, a list then ``join`` doubles peak memory).
    The result is a ``bytearray``: returning ``bytes`` would copy it once more.
    """
    buf = bytearray(length)
    view = memoryview(buf)
    got = 0
    async with aclosing(chunks) as stream:  # type: ignore[type-var]
        async for chunk in stream:
            n = len(chunk)
            if got + n > length:
                raise StoreError(f"the store returned more than the {length} bytes asked for",
                                 path=path)
            view[got:got + n] = chunk
            got += n
    if got != length:
        raise StoreError(f"the store returned {got} of the {length} bytes asked for", path=path)
    return buf


class StoreBase:
    """What every store shares: ``async with store:`` and ``read_range`` over ``stream_range``."""

    name: str
    default_profile: str

    def _display(self, key: str) -> str:
        """How errors name ``key``: a full URL, never with secrets in it (stores override)."""
        return key

    def display(self, key: str) -> str:
        """How a message names ``key`` (see :class:`.capabilities.KeyNamer`)."""
        return self._display(key)

    def stream_range(self, key: str, offset: int, length: int,
                     version: str | None = None) -> AsyncIterator[bytes]:
        raise NotImplementedError

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        check_range(offset, length, self._display(key))
        buf = await collect(self.stream_range(key, offset, length, version), length,
                            self._display(key))
        return buf  # a bytearray (see collect): bytes-like, and one copy fewer

    async def close(self) -> None:
        return None

    def warm_connections(self) -> int:
        """Connections held open for the next request (none: a store without a pool)."""
        return 0

    def cache_key(self, key: str) -> str:
        """``key`` as the metadata cache names its object: the same string wherever
        the process runs (a local store makes a relative path absolute)."""
        return key

    def identity(self) -> tuple[Any, ...]:
        """What, beside its options, says which object a key names: settings this store
        resolved from the environment (an S3 endpoint from ``AWS_ENDPOINT_URL``, a GCS
        emulator from ``STORAGE_EMULATOR_HOST``).  Part of the scope the metadata cache
        keys entries by (on disk too), so a process pointed elsewhere never gets
        another endpoint's object; empty when a key alone names its object."""
        return ()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


def check_range(offset: int, length: int, path: str | None) -> None:
    if offset < 0 or length < 0:
        raise StoreError(f"invalid range: offset {offset}, length {length}", path=path)
