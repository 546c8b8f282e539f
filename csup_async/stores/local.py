"""Local files: positioned reads (``os.pread``) in worker threads, off the event loop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence

from ..model.errors import (
    AccessDeniedError,
    NotFoundError,
    ObjectChangedError,
    StoreError,
    TruncatedError,
)
from .base import CHUNK_SIZE, ObjectInfo, StoreBase, TailRead, check_range


def _version(st: os.stat_result) -> str:
    return f"{st.st_ino}-{st.st_size}-{st.st_mtime_ns}"


def _local_path(key: str) -> str:
    return key[len("file://"):] if key.startswith("file://") else key


def _close_opened(fut: asyncio.Future[int]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        os.close(fut.result())


#: Bytes a scan's local read fills per thread hand-off (decoding starts per step).
FILL_STEP = 4 << 20


def _preadv_full(fd: int, view: memoryview, offset: int) -> int:
    """Fill ``view`` from ``offset`` (preadv may return short); fewer bytes only at EOF."""
    got, n = 0, len(view)
    while got < n:
        k = os.preadv(fd, [view[got:]], offset + got)
        if k <= 0:
            break
        got += k
    return got


class LocalStore(StoreBase):
    """Reads local files; the version is inode, size and mtime, checked on every read."""

    name = "local"
    default_profile = "local"

    def __init__(self, *, chunk_size: int = CHUNK_SIZE) -> None:
        self.chunk_size = chunk_size

    def __repr__(self) -> str:
        return "LocalStore()"

    def cache_key(self, key: str) -> str:
        """The absolute path: ``a.csup`` opened from another directory is another file
        (with ``immutable=True`` the cache would otherwise answer for it)."""
        return os.path.abspath(_local_path(key))

    def _open(self, key: str) -> int:
        path = _local_path(key)
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise NotFoundError("no such file", path=key) from None
        except PermissionError:
            raise AccessDeniedError("permission denied", path=key) from None
        except IsADirectoryError:
            raise StoreError("is a directory", path=key) from None
        except OSError as e:
            raise StoreError(f"cannot open: {e.strerror}", path=key) from None

    @staticmethod
    def _tail_of(fd: int, key: str, length: int) -> tuple[TailRead, os.stat_result]:
        """The last ``length`` bytes of the open file (all of a shorter one)."""
        st = os.fstat(fd)
        if not os.path.isfile(_local_path(key)):
            raise StoreError("not a regular file", path=key)
        n = min(length, st.st_size)
        data = os.pread(fd, n, st.st_size - n) if n else b""
        if len(data) != n:
            raise TruncatedError("file shrank while being read", path=key)
        return TailRead(data, ObjectInfo(st.st_size, _version(st))), st

    def _read_tail(self, key: str, length: int) -> TailRead:
        fd = self._open(key)
        try:
            return self._tail_of(fd, key, length)[0]
        finally:
            os.close(fd)

    def _open_range(self, key: str, offset: int, length: int, version: str | None) -> int:
        """An fd whose file is ``version`` and holds the range (the fd keeps reading
        that file even if the path is replaced by a rename)."""
        fd = self._open(key)
        try:
            st = os.fstat(fd)
            if version is not None and _version(st) != version:
                raise ObjectChangedError("file changed since its metadata was read", path=key)
            if offset < 0 or length < 0 or offset + length > st.st_size:
                raise TruncatedError(f"range {offset}+{length} is outside the "
                                     f"{st.st_size}-byte file", path=key)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read_range(self, key: str, offset: int, length: int, version: str | None) -> bytes:
        fd = self._open_range(key, offset, length, version)
        try:
            chunks = []
            got = 0
            while got < length:  # pread may return short reads for large ranges
                b = os.pread(fd, length - got, offset + got)
                if not b:
                    raise TruncatedError("file ended early", path=key)
                chunks.append(b)
                got += len(b)
            return b"".join(chunks) if len(chunks) != 1 else chunks[0]
        finally:
            os.close(fd)

    async def read_tail(self, key: str, length: int) -> TailRead:
        return await asyncio.to_thread(self._read_tail, key, length)

    def _read_tail_also(self, key: str, length: int, ranges: Sequence[tuple[int, int]],
                        version: str) -> tuple[TailRead, list[tuple[int, bytes]] | None]:
        fd = self._open(key)
        try:
            tail, st = self._tail_of(fd, key, length)
            if _version(st) != version or any(o < 0 or k < 0 or o + k > st.st_size
                                              for o, k in ranges):
                return tail, None
            got = [(o, os.pread(fd, k, o)) for o, k in ranges]
            return tail, (got if all(len(d) == k for (_, d), (_, k) in
                                     zip(got, ranges, strict=True)) else None)
        finally:
            os.close(fd)

    async def read_tail_also(self, key: str, length: int, ranges: Sequence[tuple[int, int]],
                             version: str) -> tuple[TailRead, list[tuple[int, bytes]] | None]:
        """The tail read, and ``ranges`` (``(offset, length)``) of the file when it is
        still ``version`` (else None with the tail): one thread hand-off for what a warm
        open of a SuperDB v23 file reads (readers/openhint)."""
        return await asyncio.to_thread(self._read_tail_also, key, length, ranges, version)

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        check_range(offset, length, key)
        return await asyncio.to_thread(self._read_range, key, offset, length, version)

    async def stream_range(self, key: str, offset: int, length: int,
                           version: str | None = None) -> AsyncIterator[bytes]:
        check_range(offset, length, key)
        opening = asyncio.ensure_future(
            asyncio.to_thread(self._open_range, key, offset, length, version))
        try:
            fd = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the thread still opens the file: close it then
            opening.add_done_callback(_close_opened)
            raise
        try:
            pos, end = offset, offset + length
            while pos < end:
                b = await asyncio.to_thread(os.pread, fd, min(self.chunk_size, end - pos), pos)
                if not b:
                    raise TruncatedError("file ended early", path=key)
                pos += len(b)
                yield b
        finally:
            os.close(fd)

    async def fill_range(self, key: str, offset: int, into: memoryview,
                         version: str | None = None) -> AsyncIterator[int]:
        """Read ``len(into)`` bytes at ``offset`` straight into ``into``, yielding how many
        have arrived so far (the same checks as :meth:`stream_range`).

        A scan's request buffer is filled by ``os.preadv`` in steps of ``FILL_STEP``:
        no bytes object per chunk to allocate, copy and free, and a thread hand-off
        per step rather than per 256 KiB chunk (see bench/results/local_profile.md).
        """
        length = len(into)
        check_range(offset, length, key)
        opening = asyncio.ensure_future(
            asyncio.to_thread(self._open_range, key, offset, length, version))
        try:
            fd = await asyncio.shield(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_opened)
            raise
        try:
            got = 0
            while got < length:
                step = min(FILL_STEP, length - got)
                n = await asyncio.to_thread(_preadv_full, fd, into[got:got + step],
                                            offset + got)
                if n < step:
                    raise TruncatedError("file ended early", path=key)
                got += n
                yield got
        finally:
            os.close(fd)

    async def info(self, key: str) -> ObjectInfo:
        tail = await self.read_tail(key, 0)
        return tail.info

    async def close(self) -> None:
        return None
