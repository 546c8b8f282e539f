"""What some stores can do beyond the :class:`~csup_async.stores.base.Store` protocol.

A reader needs only tail reads, ranged reads and sizes; listing objects, naming a
key safely in an error and suggesting a planner profile are extras a store may
have (a user's own store may have none of them).  Each extra is a Protocol, so a
caller asks ``isinstance(store, Lister)`` instead of probing attribute names.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..model.redact import redact_url

#: The planner profile for a store that suggests none.
FALLBACK_PROFILE = "local"


@runtime_checkable
class Lister(Protocol):
    """A store that can list the objects under a prefix (S3, GCS, fsspec)."""

    async def list(self, prefix: str) -> list[str]:
        """Full URLs of the objects whose keys start with ``prefix`` (a full URL)."""
        ...


@runtime_checkable
class Profiled(Protocol):
    """A store that knows which planner profile suits it ("s3", "gcs", "http", "local")."""

    default_profile: str


@runtime_checkable
class KeyNamer(Protocol):
    """A store that can name one of its keys in a message: a full URL, no secrets."""

    def display(self, key: str) -> str:
        ...


def profile_of(store: object) -> str:
    """The planner profile ``store`` suggests, else :data:`FALLBACK_PROFILE`."""
    return store.default_profile if isinstance(store, Profiled) else FALLBACK_PROFILE


def display_of(store: object, key: str) -> str:
    """How a message names ``key`` of ``store``: the store's own form, else the key redacted."""
    return store.display(key) if isinstance(store, KeyNamer) else redact_url(key)
