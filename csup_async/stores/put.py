"""Putting a whole object on a store: the one write path of the lake and ``write(url)``.

The stores read; writing an object is one request of its whole bytes, so a reader
never sees a partial object: a temporary file moved into place locally, one
``PutObject`` on S3, one media upload on GCS, ``pipe_file`` through fsspec.
``if_absent`` makes the put atomic against other writers where the store can
(``link`` locally, S3's ``If-None-Match: *``, GCS's ``ifGenerationMatch=0``);
asked of a store that cannot, it is refused rather than silently overwriting.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from ..errors import CsupError, StoreError
from .base import Store
from .capabilities import display_of
from .local import LocalStore

__all__ = ["WRITABLE", "put_object"]

#: The stores ``put_object`` writes to, by ``Store.name``.
WRITABLE = ("local", "s3", "gcs", "fsspec")


async def put_object(store: Store, key: str, data: bytes, *, if_absent: bool = False,
                     path: str | None = None) -> bool:
    """Write (or replace) the object ``key`` with ``data``; with ``if_absent`` only if no
    object has that name: False when another writer got there first."""
    path = path or display_of(store, key)
    try:
        if isinstance(store, LocalStore):
            return await asyncio.to_thread(_local_put, local_path(key), data, if_absent)
        if store.name == "s3":
            return await _s3_put(store, key, data, if_absent, path)
        if store.name == "gcs":
            return await _gcs_put(store, key, data, if_absent, path)
        if store.name == "fsspec" and hasattr(store, "fs"):
            return await _fsspec_put(store, key, data, if_absent, path)
    except CsupError as e:
        raise e.with_path(path) from None
    except OSError as e:
        raise StoreError(f"cannot write: {e.strerror or e}", path=path) from None
    raise StoreError(f"the {store.name} store cannot write objects (the "
                     f"{', '.join(WRITABLE)} stores can)", path=path)


def local_path(key: str) -> str:
    """The file a LocalStore key names (a ``file://`` URL or a path)."""
    return key[len("file://"):] if key.startswith("file://") else key


def _local_put(path: str, data: bytes, if_absent: bool) -> bool:
    """Write a temporary file, then move it in: readers never see a partial object.
    ``link`` fails if the name exists, which makes put-if-absent atomic."""
    d = os.path.dirname(path) or "."
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

    from .s3 import split_s3_key

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

    from .gcs import split_gcs_key

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


async def _fsspec_put(store: Any, key: str, data: bytes, if_absent: bool, path: str) -> bool:
    if if_absent:  # fsspec has no atomic create across its filesystems
        raise StoreError("the fsspec store cannot put an object only if absent "
                         "(the local, s3 and gcs stores can)", path=path)
    target = store.fs._strip_protocol(key)
    await store._call("pipe_file", path, target, data)
    return True
