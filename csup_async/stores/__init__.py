"""Object stores: a tiny protocol (tail read, ranged read, size) and its implementations."""

from .base import ObjectInfo, Store, TailRead
from .local import LocalStore

__all__ = ["LocalStore", "ObjectInfo", "Store", "TailRead", "store_for"]


def store_for(url: str, **options: object) -> tuple[Store, str]:
    """The store that serves ``url`` and the key to ask it for."""
    from .resolve import store_for as _store_for

    return _store_for(url, **options)
