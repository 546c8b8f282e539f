"""Getting and putting lake objects on any store, with a cache for the immutable ones.

Reads go through the project's stores (``read_tail`` with a length beyond any
object reads it whole in one request; ``read_range`` for seek-index ranges).
The stores are read-only, so writes live here: a plain put and an atomic
put-if-absent per backend (``O_EXCL``-style ``link`` locally, S3's
``If-None-Match: *``, GCS's ``ifGenerationMatch=0``).

Data objects, commit objects, commit snapshots, seek indexes and journal
entries never change once written (Zed names them by KSUID or journal ID), so
they are cached by key; HEAD, TAIL and ``snap.zng`` are read fresh every time.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections import OrderedDict
from typing import Any

from ..errors import AccessDeniedError, CsupError, NotFoundError, StoreError
from ..stores import LocalStore, Store
from ..stores.capabilities import Lister, display_of
from ..tasks import gather_or_cancel
from .errors import LakeError

__all__ = ["LakeIO", "WHOLE", "gather_all", "DEFAULT_MAX_JOURNAL_ENTRIES"]

WHOLE = 1 << 62  # a suffix length beyond any object: read_tail returns all of it
DEFAULT_CACHE_BYTES = 256 << 20
DEFAULT_CONCURRENCY = 32
#: The most entries one journal replay reads (``max_journal_entries=`` changes it).
DEFAULT_MAX_JOURNAL_ENTRIES = 1_000_000


class LakeIO:
    """The store of one lake: keys relative to its root, bounded concurrency, a cache."""

    def __init__(self, store: Store, root: str, *, concurrency: int = DEFAULT_CONCURRENCY,
                 cache_bytes: int = DEFAULT_CACHE_BYTES,
                 max_journal_entries: int = DEFAULT_MAX_JOURNAL_ENTRIES) -> None:
        self.store = store
        self.max_journal_entries = max_journal_entries
        self.root = root.rstrip("/")
        self.sem = asyncio.Semaphore(concurrency)
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached = 0
        self.requests = 0
        self.bytes_read = 0

    def key(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def display(self, rel: str) -> str:
        return display_of(self.store, self.key(rel))

    # ------------------------------------------------------------- reads ---
    async def get(self, rel: str, *, immutable: bool = False) -> bytes:
        """The whole object (NotFoundError if absent)."""
        if immutable:
            hit = self._cache.get(rel)
            if hit is not None:
                self._cache.move_to_end(rel)
                return hit
        async with self.sem:
            tail = await self.store.read_tail(self.key(rel), WHOLE)
        data = bytes(tail.data)
        self.requests += 1
        self.bytes_read += len(data)
        if len(data) != tail.info.size:
            raise LakeError(f"read {len(data)} of {tail.info.size} bytes", path=self.display(rel))
        if immutable:
            self._remember(rel, data)
        return data

    async def get_or_none(self, rel: str, *, immutable: bool = False,
                          probe: bool = False) -> bytes | None:
        """The object, or None if absent.  ``probe``: an object that is usually absent
        (a snapshot, the entry after HEAD): S3 answers 403 rather than 404 for a missing
        key to credentials without ListBucket, so a denial means absent too."""
        try:
            return await self.get(rel, immutable=immutable)
        except NotFoundError:
            return None
        except AccessDeniedError:
            if probe:
                return None
            raise

    async def get_range(self, rel: str, offset: int, length: int) -> bytes:
        ck = f"{rel}#{offset}+{length}"
        hit = self._cache.get(ck)
        if hit is not None:
            return hit
        async with self.sem:
            data = bytes(await self.store.read_range(self.key(rel), offset, length))
        self.requests += 1
        self.bytes_read += len(data)
        self._remember(ck, data)
        return data

    def _remember(self, k: str, data: bytes) -> None:
        if len(data) > self.cache_bytes // 4:
            return
        self._cache[k] = data
        self._cached += len(data)
        while self._cached > self.cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)

    async def list(self, rel_prefix: str) -> list[str]:
        """Keys (relative to the root) of the objects under ``rel_prefix``."""
        if isinstance(self.store, LocalStore):
            base = _local(self.key(rel_prefix))
            out = []
            for d, _, files in os.walk(base):
                out += [os.path.relpath(os.path.join(d, f), _local(self.root)) for f in files]
            return sorted(out)
        if not isinstance(self.store, Lister):
            raise LakeError(f"store {self.store.name} cannot list objects",
                            path=self.display(rel_prefix))
        scheme = {"s3": "s3://", "gcs": "gs://"}.get(self.store.name, "")
        urls = await self.store.list(scheme + self.key(rel_prefix))
        cut = len(scheme) + len(self.root) + 1
        return sorted(u[cut:] for u in urls)

    # ------------------------------------------------------------ writes ---
    async def put(self, rel: str, data: bytes) -> None:
        """Write (or replace) an object."""
        await self._put(rel, data, if_absent=False)

    async def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Write an object only if none exists by that name: True if written,
        False if another writer got there first (atomic on every backend)."""
        return await self._put(rel, data, if_absent=True)

    async def _put(self, rel: str, data: bytes, *, if_absent: bool) -> bool:
        path = self.display(rel)
        name = self.store.name
        async with self.sem:
            try:
                if isinstance(self.store, LocalStore):
                    return await asyncio.to_thread(_local_put, _local(self.key(rel)), data,
                                                   if_absent)
                if name == "s3":
                    return await _s3_put(self.store, self.key(rel), data, if_absent, path)
                if name == "gcs":
                    return await _gcs_put(self.store, self.key(rel), data, if_absent, path)
            except CsupError as e:
                raise e.with_path(path) from None
            except OSError as e:
                raise StoreError(f"cannot write: {e.strerror or e}", path=path) from None
        raise LakeError(f"writing to a lake on the {name} store is not supported "
                        "(local, s3 and gcs are)", path=path)


async def gather_all(coros: list[Any]) -> list[Any]:
    """All results in order; on the first failure the rest are cancelled and awaited, so
    no request outlives the call (the readers' own helper)."""
    return await gather_or_cancel(coros)


def _local(key: str) -> str:
    return key[len("file://"):] if key.startswith("file://") else key


def _local_put(path: str, data: bytes, if_absent: bool) -> bool:
    """Write a temporary file, then move it in: readers never see a partial object.
    ``link`` fails if the name exists, which makes put-if-absent atomic."""
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if if_absent:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
        else:
            os.replace(tmp, path)
            tmp = ""
        return True
    finally:
        if tmp:
            os.unlink(tmp)


async def _s3_put(store: Any, key: str, data: bytes, if_absent: bool, path: str) -> bool:
    from botocore.exceptions import ClientError

    from ..stores.s3 import split_s3_key

    bucket, name = split_s3_key(key)
    params: dict[str, Any] = {"Bucket": bucket, "Key": name, "Body": data}
    if if_absent:
        params["IfNoneMatch"] = "*"
    client = await store._client()
    try:
        await client.put_object(**params)
    except ClientError as e:
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = e.response.get("Error", {}).get("Code")
        if if_absent and (status == 412 or code in ("PreconditionFailed",
                                                     "ConditionalRequestConflict")):
            return False
        raise store._error(e, path) from None
    except Exception as e:
        raise store._error(e, path) from None
    return True


async def _gcs_put(store: Any, key: str, data: bytes, if_absent: bool, path: str) -> bool:
    from urllib.parse import quote

    import aiohttp

    from ..stores.gcs import split_gcs_key

    bucket, name = split_gcs_key(key)
    url = (f"{store.endpoint}/upload/storage/v1/b/{quote(bucket, safe='')}/o?uploadType=media"
           f"&name={quote(name, safe='')}")
    if if_absent:
        url += "&ifGenerationMatch=0"
    headers = await store._headers(path)
    headers["Content-Type"] = "application/octet-stream"
    try:
        async with store._session().post(url, data=data, headers=headers) as resp:
            if resp.status == 412 and if_absent:
                return False
            if resp.status >= 300:
                body = (await resp.read())[:300].decode("utf-8", "replace")
                raise StoreError(f"upload failed with HTTP {resp.status}: {body}", path=path)
    except (aiohttp.ClientError, OSError, TimeoutError) as e:
        raise StoreError(f"upload failed: {type(e).__name__}: {e}", path=path) from None
    return True
