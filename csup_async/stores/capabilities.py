"""What some stores can do beyond the :class:`~csup_async.stores.base.Store` protocol.

A reader needs only tail reads, ranged reads and sizes; listing objects, naming a
key safely in an error, suggesting a planner profile, writing, measuring latency
and the rest are extras a store may have (a user's own store may have none of
them).  Each extra is a Protocol here, and the Protocols are the one way code
asks: never by probing attribute names.

``isinstance`` against a runtime Protocol costs 10-20 us a call (it walks every
member), too much for the per-open and per-plan path, so :func:`abilities`
answers every Protocol at once as a frozen :class:`Abilities`, computed once per
store class and kept in a dict keyed by the class.  A class is cached only when
its own attributes give the same answers as the instance asked about (no
``__getattr__`` forwarding, no ability added per instance), and an instance
whose own attributes name a member of an ability its class lacks is not
answered from the class.  Any other store is answered once per instance (an
ability given to such an instance after it was first asked about is not seen),
or on every call if it can be neither hashed nor weakly referenced.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

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


@runtime_checkable
class Identified(Protocol):
    """A store that resolved settings from the environment that, beside its options, say
    which object a key names (an endpoint, an emulator host): part of its cache scope."""

    def identity(self) -> tuple[Any, ...]:
        ...


@runtime_checkable
class HeadReader(Protocol):
    """A store that can read an object's head with its size and version in one response
    (S3, GCS, HTTP: ``RangedStore.read_head``), and name the endpoint a key is served
    from: what a speculative head read needs (readers/headhint)."""

    async def read_head(self, key: str, length: int) -> Any:
        ...

    def endpoint_for(self, key: str) -> str:
        ...


@runtime_checkable
class SizeLister(Protocol):
    """A store whose listings name each object's size, kept for the opens after them
    (S3, GCS: stores/sizes.py)."""

    @property
    def listed_sizes(self) -> Any:
        ...


@runtime_checkable
class Abandoning(Protocol):
    """A store holding resources of a loop that is gone (an aiohttp session), which it can
    drop without awaiting anything."""

    def abandon(self) -> None:
        ...


@runtime_checkable
class ObjectWriter(Protocol):
    """A store that can write whole objects (S3, GCS, fsspec), conditionally if absent."""

    async def write_object(self, key: str, data: bytes, if_absent: bool, path: str) -> bool:
        ...


@runtime_checkable
class CacheKeyed(Protocol):
    """A store that names a key the same way in every process (a local store makes a
    relative path absolute) for the metadata cache."""

    def cache_key(self, key: str) -> str:
        ...


@runtime_checkable
class Measuring(Protocol):
    """A store that measures its endpoint's latency and bandwidth (for calibrated plans)."""

    def measurements_of(self, key: str) -> Any:
        ...


@runtime_checkable
class TailRevalidating(Protocol):
    """A store that can make a tail read conditional on a version (``If-None-Match``):
    None when the object is unchanged."""

    async def read_tail_unless(self, key: str, length: int, version: str) -> Any:
        ...


@runtime_checkable
class TailAlso(Protocol):
    """A store that reads an object's tail and given ranges of it, when it is still of a
    given version, in one operation (local files: one thread hand-off): what a warm open
    of a SuperDB v23 file sends (readers/openhint)."""

    async def read_tail_also(self, key: str, length: int, ranges: Any, version: str) -> Any:
        ...


@runtime_checkable
class Pooled(Protocol):
    """A store with a connection pool that says how many connections it holds open."""

    def warm_connections(self) -> int:
        ...


@dataclass(frozen=True, slots=True)
class Abilities:
    """Which of the Protocols above a store satisfies (see :func:`abilities`)."""

    lister: bool
    profiled: bool
    key_namer: bool
    identified: bool
    abandoning: bool
    object_writer: bool
    cache_keyed: bool
    measuring: bool
    tail_revalidating: bool
    pooled: bool
    head_reader: bool
    tail_also: bool


_PROTOCOLS: dict[str, Any] = {
    "lister": Lister, "profiled": Profiled, "key_namer": KeyNamer,
    "identified": Identified, "abandoning": Abandoning, "object_writer": ObjectWriter,
    "cache_keyed": CacheKeyed, "measuring": Measuring,
    "tail_revalidating": TailRevalidating, "pooled": Pooled,
    "head_reader": HeadReader, "tail_also": TailAlso,
}
assert list(_PROTOCOLS) == [f.name for f in fields(Abilities)]
#: per class: its abilities, and the members of those it lacks (an instance attribute of
#: one of those names sends that instance down the slow path)
_BY_CLASS: dict[type, tuple[Abilities, frozenset[str]]] = {}
#: stores whose class does not answer for them (a wrapper forwarding to another store),
#: answered once per instance while it lives
_BY_INSTANCE: weakref.WeakKeyDictionary[Any, Abilities] = weakref.WeakKeyDictionary()


def abilities(store: object) -> Abilities:
    """Every ability of ``store`` at once, by the Protocols; once per class (a dict
    lookup after the first store of a class), per call for a store whose instance
    differs from its class (the module docstring says why)."""
    hit = _BY_CLASS.get(type(store))
    if hit is not None:
        got, absent = hit
        own = getattr(store, "__dict__", None)
        if not own or own.keys().isdisjoint(absent):  # no instance attribute adds one
            return got
    return _resolve(store)


def _resolve(store: object) -> Abilities:
    cls = type(store)
    got = None
    with contextlib.suppress(TypeError):  # neither hashable nor weakly referable: asked
        got = _BY_INSTANCE.get(store)     # each time
    if got is not None:
        return got
    got = Abilities(**{n: isinstance(store, p) for n, p in _PROTOCOLS.items()})
    if _answers_by_class(cls, got):
        _BY_CLASS[cls] = (got, frozenset(
            m for n, members in _MEMBERS.items() if not getattr(got, n) for m in members))
    else:
        with contextlib.suppress(TypeError):
            _BY_INSTANCE[store] = got
    return got


def _members(proto: Any) -> tuple[str, ...]:
    """A Protocol's members: its own methods and annotated attributes."""
    return tuple(dict.fromkeys(
        [k for k in vars(proto) if not k.startswith("_")]
        + [k for k in vars(proto).get("__annotations__", {}) if not k.startswith("_")]))


_MEMBERS = {name: _members(proto) for name, proto in _PROTOCOLS.items()}


def _answers_by_class(cls: type, got: Abilities) -> bool:
    """Whether ``cls``'s own attributes give the answers ``got`` holds for an instance."""
    if hasattr(cls, "__getattr__"):  # forwards to another object: its answers vary
        return False
    return all(all(hasattr(cls, m) for m in _MEMBERS[name]) == getattr(got, name)
               for name in _PROTOCOLS)


def cache_key(store: object, key: str) -> str:
    """``key`` as the metadata cache names it (:class:`CacheKeyed`; else the key)."""
    return (store.cache_key(key)  # type: ignore[attr-defined]
            if abilities(store).cache_keyed else key)


def cache_scope(store: object) -> Any:
    """The metadata-cache scope the shared-store registry (or the loader) attached to
    ``store``: state set on the instance, not an ability (None when unset)."""
    return getattr(store, "cache_scope", None)


def profile_of(store: object) -> str:
    """The planner profile ``store`` suggests, else :data:`FALLBACK_PROFILE`."""
    return (store.default_profile  # type: ignore[attr-defined]
            if abilities(store).profiled else FALLBACK_PROFILE)


def display_of(store: object, key: str) -> str:
    """How a message names ``key`` of ``store``: the store's own form, else the key redacted."""
    return (store.display(key)  # type: ignore[attr-defined]
            if abilities(store).key_namer else redact_url(key))
