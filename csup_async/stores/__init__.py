"""Object stores: a tiny protocol (tail read, ranged read, size) and its implementations.

S3Store, GCSStore, HTTPStore and FsspecStore are imported on first use, so that
reading a local file never pays for importing aiohttp or aiobotocore.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..model.redact import redact_text, redact_url
from .base import CHUNK_SIZE, ObjectInfo, Store, TailRead
from .hedge import HedgePolicy
from .local import LocalStore
from .retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy

if TYPE_CHECKING:
    from .fsspec_store import FsspecStore
    from .gcs import GCSStore
    from .http import HTTPStore
    from .s3 import S3Store

__all__ = ["CHUNK_SIZE", "DEFAULT_RETRY", "NO_RETRY", "FsspecStore", "GCSStore", "HTTPStore",
           "HedgePolicy", "LocalStore", "ObjectInfo", "RetryPolicy", "S3Store", "Store", "TailRead",
           "close_stores", "redact_text", "redact_url", "shared_store", "store_for"]

_LAZY = {"S3Store": ".s3", "GCSStore": ".gcs", "HTTPStore": ".http",
         "FsspecStore": ".fsspec_store"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


async def shared_store(url: str, **options: Any) -> tuple[Store, str, bool]:
    """The shared store of this event loop for ``url`` and ``options`` (see stores.shared)."""
    from .shared import shared_store as _shared_store

    return await _shared_store(url, **options)


async def close_stores() -> None:
    """Close the shared stores of the running event loop."""
    from .shared import close_stores as _close_stores

    await _close_stores()


def store_for(url: str, **options: Any) -> tuple[Store, str]:
    """The store that serves ``url`` and the key to ask it for."""
    from .resolve import store_for as _store_for

    return _store_for(url, **options)
