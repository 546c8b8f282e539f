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

from ..model.errors import CsupError, StoreError
from .base import Store
from .capabilities import abilities, display_of
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
        if store.name in WRITABLE and abilities(store).object_writer:  # S3, GCS, fsspec
            return bool(await store.write_object(  # type: ignore[attr-defined]
                key, data, if_absent, path))
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
