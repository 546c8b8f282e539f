"""Stores shared without asking: one per (store kind, options) per event loop.

``open(url)`` with no store used to build a store, a connection pool and (for
S3) a client per call, and close them with the reader: a service opening an
object per request paid a TLS handshake and a client build every time.  Here,
as fsspec caches filesystem instances by their arguments, a store is kept per
event loop and per frozen set of options, and every reader that did not bring
its own store shares it; readers never close a shared store.

A store belongs to one event loop (its connections do), so the registry is
keyed by loop, weakly.  Shared stores are closed:

* by ``await csup_async.close_stores()`` (those of the running loop);
* when ``asyncio.run`` (or ``asyncio.Runner``) ends its loop: a small async
  generator registered on the loop is finalized by ``shutdown_asyncgens``,
  while the loop still runs, and closes them there;
* at interpreter exit, for loops still open and idle (closed on them) and for
  loops closed without ``shutdown_asyncgens`` (their pools are marked closed
  without touching the dead loop, so no "Unclosed client session" warning).

Options that cannot be frozen (an unhashable value) or more than
``MAX_SHARED`` distinct option sets on one loop get a private store, owned
and closed by its reader as before.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import weakref
from collections.abc import AsyncGenerator, Hashable, Mapping
from typing import Any

from .base import Store
from .capabilities import abilities
from .resolve import store_for

__all__ = ["MAX_SHARED", "STABLE_SCOPE", "close_stores", "shared_store", "shared_stores"]

#: The tag of a cache scope made of a store's kind and options, which mean the same in
#: every process (so its entries may be kept on disk and read by another process).
STABLE_SCOPE = "stable"

#: Distinct option sets shared per loop; beyond, stores are private to their reader.
MAX_SHARED = 64


class _LoopStores:
    """The shared stores of one event loop."""

    def __init__(self) -> None:
        self.stores: dict[Hashable, Store] = {}
        self.guard: AsyncGenerator[None, None] | None = None

    async def close(self) -> None:
        stores = list(self.stores.values())
        self.stores.clear()
        if stores:
            await asyncio.gather(*(s.close() for s in stores), return_exceptions=True)

    def abandon(self) -> None:
        """Mark the pools of a loop that is gone closed, without touching the loop."""
        stores = list(self.stores.values())
        self.stores.clear()
        for s in stores:
            _abandon(s)
        guard, self.guard = self.guard, None
        if guard is not None:  # finish it here: left to the GC, it would call the dead loop
            closing = guard.aclose()
            try:
                closing.send(None)  # its finally has nothing left to await
            except (StopIteration, RuntimeError):
                pass
            else:
                closing.close()


_registry: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopStores] = \
    weakref.WeakKeyDictionary()


def freeze(value: Any) -> Hashable:
    """A hashable, order-independent form of an option value (TypeError if there is none):
    the shared-store cache keys stores by their options this way."""
    if isinstance(value, Mapping):
        return ("map", tuple(sorted(((str(k), freeze(v)) for k, v in value.items()),
                                    key=lambda kv: kv[0])))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(freeze(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(freeze(v) for v in value))
    hash(value)
    return (type(value).__name__, value)


async def _guard(entry: _LoopStores) -> AsyncGenerator[None, None]:
    """Lives as long as the loop: ``shutdown_asyncgens`` finalizes it, closing the stores."""
    try:
        yield
    finally:
        await entry.close()
        entry.guard = None  # the generator refers to its loop: let both go


def store_ident(store: Store, options: dict[str, Any]) -> tuple[Any, ...] | None:
    """What makes a store of these options the same in every process: its kind, its
    options (credentials included) and what it resolved from the environment (its
    ``identity()``: an endpoint from ``AWS_ENDPOINT_URL``, an emulator host); None
    if an option has no stable form."""
    ident = store.identity() if abilities(store).identified else ()  # type: ignore[attr-defined]
    try:  # (an fsspec store's protocol is in its identity)
        return (type(store).__module__, type(store).__qualname__, freeze(options),
                freeze(ident))
    except TypeError:
        return None


def with_stable_scope(store: Store, options: dict[str, Any]) -> Store:
    """``store`` (made by ``store_for(url, **options)``) with the metadata-cache scope a
    shared store of these options has, so the on-disk cache shares its entries with
    other processes (the CLI's own store, which it wraps to meter)."""
    ident = store_ident(store, options)
    if ident is not None:
        with contextlib.suppress(AttributeError):
            store.cache_scope = (STABLE_SCOPE, ident)  # type: ignore[attr-defined]
    return store


async def shared_store(url: str, **options: Any) -> tuple[Store, str, bool]:
    """The store for ``url`` (shared when it can be) and the key to ask it for.

    The third item says whether the store is shared (the caller must not
    close it) or private (the caller owns it).
    """
    store, key = store_for(url, **options)
    ident = store_ident(store, options)
    if ident is None:
        return store, key, False
    loop = asyncio.get_running_loop()
    entry = _registry.get(loop)
    if entry is None:
        entry = _registry[loop] = _LoopStores()
    found = entry.stores.get(ident)
    if found is not None:
        return found, key, True  # the new one never opened a connection: nothing to close
    if len(entry.stores) >= MAX_SHARED:
        return store, key, False
    if entry.guard is None:
        entry.guard = _guard(entry)
        await anext(entry.guard)
    found = entry.stores.setdefault(ident, store)
    # what the metadata cache may share between stores: same kind, same options
    # (credentials included), whichever loop they belong to
    found.cache_scope = (STABLE_SCOPE, ident)  # type: ignore[attr-defined]
    return found, key, True


def shared_stores() -> list[Store]:
    """The stores shared on the running event loop now (a snapshot, for a service's
    health check or a test that checks no connection is left in use)."""
    entry = _registry.get(asyncio.get_running_loop())
    return list(entry.stores.values()) if entry is not None else []


async def close_stores() -> None:
    """Close the shared stores of the running event loop (they are made again when needed)."""
    entry = _registry.get(asyncio.get_running_loop())
    if entry is not None:
        await entry.close()
    for loop, other in list(_registry.items()):
        if loop.is_closed():
            other.abandon()
            _registry.pop(loop, None)


def _abandon(store: Any) -> None:
    if abilities(store).abandoning:  # the aiohttp stores hold a session
        store.abandon()


@atexit.register
def _close_at_exit() -> None:
    for loop, entry in list(_registry.items()):
        if not entry.stores:
            continue
        if loop.is_closed() or loop.is_running():
            entry.abandon()
            continue
        try:
            loop.run_until_complete(entry.close())
        except Exception:  # exiting: never fail the interpreter's exit over a pool
            entry.abandon()
