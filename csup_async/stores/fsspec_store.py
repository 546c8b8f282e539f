"""Any fsspec filesystem (memory://, local, sftp://, abfs://, ...) as a store.

Async filesystems are awaited natively (``_cat_file``/``_info``) when the
instance is in asynchronous mode; any other is called in a worker thread so
the event loop never blocks.  fsspec has no way to pin a read to a version,
so the version (size plus whichever of ETag, generation, version id,
modification time and inode ``info()`` reports) is read again *after* every
pinned read: a read whose object was replaced before or during it then fails
with ObjectChangedError instead of returning mixed bytes.  That costs one
``info`` per read, and streams are handed over only once that check passed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..model.errors import (
    AccessDeniedError,
    CsupError,
    NotFoundError,
    ObjectChangedError,
    StoreError,
    StoreTimeoutError,
    TruncatedError,
)
from ..model.redact import redact_url
from ._aio import describe
from .base import CHUNK_SIZE, ObjectInfo, StoreBase, TailRead, check_range
from .retry import DEFAULT_RETRY, Retryable, RetryPolicy

__all__ = ["FsspecStore", "fsspec_version"]

_PROFILES = {"file": "local", "local": "local", "memory": "local", "s3": "s3", "s3a": "s3",
             "gs": "gcs", "gcs": "gcs"}
_STRONG = ("ETag", "etag", "generation", "VersionId", "version_id")
_TIMES = ("mtime", "LastModified", "last_modified", "updated", "modified", "created")


def fsspec_version(info: Mapping[str, Any]) -> str:
    """A version token from an fsspec ``info()`` dict: whatever identifies the content."""
    parts = [f"size={info.get('size')}"]
    parts += [f"{k}={info[k]}" for k in _STRONG if info.get(k) is not None]
    for k in _TIMES:  # the first time field only: ctime-like ones change on chmod
        if info.get(k) is not None:
            parts.append(f"{k}={info[k]}")
            break
    if info.get("ino") is not None:
        parts.append(f"ino={info['ino']}")
    return ";".join(parts)


#: Environment variables by which fsspec filesystems (s3fs, gcsfs, adlfs, ...) may be
#: pointed at another place: part of a store's identity (see ``FsspecStore.identity``).
_ENDPOINT_ENV_PREFIXES = ("AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_REGION",
                          "STORAGE_EMULATOR_HOST", "AZURE_STORAGE_", "FSSPEC_", "HF_ENDPOINT")
_IN_PROCESS = frozenset({"memory"})


class FsspecStore(StoreBase):
    """Reads through an fsspec filesystem: pass ``fs``, or ``protocol`` and ``storage_options``.

    Other options: ``retry`` (a RetryPolicy; only timeouts and connection
    errors are retried, plus a tail read that raced a writer), ``chunk_size``,
    ``timeout`` (seconds for one operation, retries included).
    """

    name = "fsspec"
    default_profile = "http"  # (per instance: by protocol, below)

    def __init__(self, fs: Any = None, *, protocol: str | None = None,
                 storage_options: Mapping[str, Any] | None = None,
                 retry: RetryPolicy = DEFAULT_RETRY, chunk_size: int = CHUNK_SIZE,
                 timeout: float | None = None) -> None:
        if fs is None:
            if protocol is None:
                raise CsupError("FsspecStore needs a filesystem (fs=) or a protocol")
            import fsspec

            try:
                fs = fsspec.filesystem(protocol, **dict(storage_options or {}))
            except ImportError as e:
                raise CsupError(f"no usable fsspec implementation for {protocol}://: "
                                f"{describe(e)}") from None
            except (TypeError, ValueError) as e:
                raise CsupError(f"cannot make an fsspec filesystem for {protocol}://: "
                                f"{describe(e)}") from None
        elif storage_options:
            raise CsupError("storage_options apply only when FsspecStore makes the filesystem")
        if not isinstance(retry, RetryPolicy):
            raise CsupError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        if chunk_size < 1:
            raise CsupError(f"chunk_size must be positive, not {chunk_size}")
        if timeout is not None and not timeout > 0:
            raise CsupError(f"timeout must be positive (or None), not {timeout}")
        self.timeout = timeout
        self.fs = fs
        protos = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        self.protocol = str(protocol or protos[0])
        self.default_profile = _PROFILES.get(self.protocol, "http")
        self.retry = retry
        self.chunk_size = chunk_size
        self._native_async = bool(getattr(fs, "async_impl", False)
                                  and getattr(fs, "asynchronous", False))

    def identity(self) -> tuple[Any, ...]:
        """What an fsspec filesystem may read from the environment to find its
        objects (endpoints, regions, accounts, fsspec's own ``FSSPEC_*`` settings),
        and, for a filesystem that lives in this process (``memory://``), the process:
        another process's objects of the same name are others."""
        env = tuple(sorted((k, v) for k, v in os.environ.items()
                           if k.startswith(_ENDPOINT_ENV_PREFIXES)))
        here = (os.getpid(),) if self.protocol in _IN_PROCESS else ()
        return ("fsspec", self.protocol, env, *here)

    def __repr__(self) -> str:
        return f"FsspecStore(protocol={self.protocol!r}, fs={type(self.fs).__name__})"

    def _display(self, key: str) -> str:
        return redact_url(key if "://" in key else f"{self.protocol}://{key}")

    def _path(self, key: str) -> str:
        return self.fs._strip_protocol(key)

    async def _call(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        try:
            if self._native_async:
                return await getattr(self.fs, "_" + method)(*args, **kwargs)
            return await asyncio.to_thread(getattr(self.fs, method), *args, **kwargs)
        except FileNotFoundError:
            raise NotFoundError("no such object", path=path) from None
        except PermissionError:
            raise AccessDeniedError("permission denied", path=path) from None
        except IsADirectoryError:
            raise StoreError("is a directory", path=path) from None
        except TimeoutError as e:
            raise Retryable(StoreTimeoutError(f"timed out: {describe(e)}", path=path)) from None
        except ConnectionError as e:
            raise Retryable(StoreError(f"connection failed: {describe(e)}", path=path)) from None
        except CsupError:
            raise
        except Exception as e:  # the filesystem's own errors, whatever they are
            raise StoreError(f"{method} failed: {describe(e)}", path=path) from None

    async def list(self, prefix: str) -> list[str]:
        """URLs of every file under ``prefix``."""
        path = self._display(prefix)
        found = await self._call("find", path, self._path(prefix))
        return [f"{self.protocol}://{p.lstrip('/')}" if self.protocol not in ("file", "local")
                else p for p in found]

    async def _info(self, key: str, path: str) -> tuple[int, str]:
        info = await self._call("info", path, self._path(key))
        if info.get("type") == "directory":
            raise StoreError("is a directory", path=path)
        if not isinstance(info.get("size"), int):
            raise StoreError("the filesystem does not report the object's size", path=path)
        return info["size"], fsspec_version(info)

    async def _cat(self, key: str, start: int, end: int, path: str) -> bytes:
        data = await self._call("cat_file", path, self._path(key), start=start, end=end)
        return bytes(data)

    async def _retrying(self, path: str, attempt: Any) -> Any:
        """``attempt`` under the retry policy, all within ``timeout`` if one is set (a sync
        filesystem's call in its worker thread cannot be stopped: it is abandoned)."""
        async def tries() -> Any:
            attempts = self.retry.start(path)
            while True:
                try:
                    return await attempt()
                except Retryable as e:
                    await attempts.failed(e)

        if self.timeout is None:
            return await tries()
        try:
            async with asyncio.timeout(self.timeout):
                return await tries()
        except TimeoutError:
            raise StoreTimeoutError(f"the operation did not finish within the "
                                    f"{self.timeout:g} s timeout", path=path) from None

    async def info(self, key: str) -> ObjectInfo:
        path = self._display(key)

        async def attempt() -> ObjectInfo:
            size, version = await self._info(key, path)
            return ObjectInfo(size, version)

        return await self._retrying(path, attempt)

    async def read_tail(self, key: str, length: int) -> TailRead:
        path = self._display(key)
        check_range(0, length, path)

        async def attempt() -> TailRead:
            size, version = await self._info(key, path)
            start = max(0, size - length)
            data = await self._cat(key, start, size, path) if size > start else b""
            if (await self._info(key, path))[1] != version or len(data) != size - start:
                raise Retryable(StoreError("the object changed during the tail read",
                                           path=path))
            return TailRead(data, ObjectInfo(size, version))

        return await self._retrying(path, attempt)

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes:
        path = self._display(key)
        check_range(offset, length, path)
        if length == 0:
            return b""
        return await self._retrying(
            path, lambda: self._range_once(key, offset, length, version, path))

    async def _range_once(self, key: str, offset: int, length: int, pin: str | None,
                          path: str) -> bytes:
        data = await self._cat(key, offset, offset + length, path)
        if pin is None and len(data) == length:
            return data
        size, now = await self._info(key, path)  # after the read: proves what it read
        if pin is not None and now != pin:
            raise ObjectChangedError("the object was replaced since its metadata was read "
                                     f"(expected version {pin}, found {now})", path=path)
        if offset + length > size:
            raise TruncatedError(f"bytes {offset}-{offset + length - 1} lie beyond the end "
                                 f"of the {size}-byte object", path=path)
        if len(data) != length:
            raise Retryable(StoreError(f"the filesystem returned {len(data)} of {length} "
                                       "bytes", path=path))
        return data

    async def stream_range(self, key: str, offset: int, length: int,
                           version: str | None = None) -> AsyncIterator[bytes]:
        data = await self.read_range(key, offset, length, version)
        for i in range(0, len(data), self.chunk_size):
            yield data[i:i + self.chunk_size]

    async def write_object(self, key: str, data: bytes, if_absent: bool, path: str) -> bool:
        """``pipe_file`` (fsspec has no atomic create: ``if_absent`` is refused)."""
        if if_absent:  # fsspec has no atomic create across its filesystems
            raise StoreError("the fsspec store cannot put an object only if absent "
                             "(the local, s3 and gcs stores can)", path=path)
        target = self.fs._strip_protocol(key)
        await self._call("pipe_file", path, target, data)
        return True
