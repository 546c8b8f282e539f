"""``open(url)``: light to import, and quick the first time a process calls it.

In a fresh process most of the first ``open`` is imports: the decoding side
(numpy, the planner, the read pipeline: about 70 ms of CPU) and the store's
networking side (aiohttp, whose import loads the CA certificates twice,
about 80 ms), and then the tail request waits a round trip.  Done one after
the other, they add up; here, when the reader module is not loaded yet, the
decoding side is imported in a thread of its own (:func:`warm_up`) while this
thread makes the store, and the tail request is sent before that import is
waited for: certificate loading and the round trip are spent importing.
Once the reader is loaded, ``open`` is what it always was.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..model.errors import source_text
from ..model.heap import keep_freed_memory
from ..model.opener import Opener
from ..model.options import OpenOptions, parse_open
from ..stores import Store, shared_store

if TYPE_CHECKING:
    from ..stores import TailRead
    from .reader import Reader

__all__ = ["open", "open_parsed"]

#: What a scan needs that ``open`` need not wait for (imported off the loop when cold).
_DECODING = ("csup_async.readers.loader", "csup_async.scan.scan")


_warming: concurrent.futures.Future[None] | None = None
_warming_lock = threading.Lock()


def warm_up() -> concurrent.futures.Future[None] | None:
    """Start importing the decoding side in a thread of its own (once per process).

    None when it is loaded already.  ``open`` calls this; a program that knows it
    will open an object soon (the CLI, before it parses its options and makes its
    store) may call it earlier, so that more of the import overlaps other work.
    """
    global _warming
    if all(name in sys.modules for name in _DECODING) and _warming is None:
        return None
    with _warming_lock:
        if _warming is None:
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # an open cancelled while it waits
            # for the import must not cancel the import for the opens after it

            def run() -> None:
                try:
                    for name in _DECODING:
                        importlib.import_module(name)
                except BaseException as e:  # handed to whoever waits for it
                    future.set_exception(e)
                else:
                    future.set_result(None)

            # not a daemon: an interpreter that exits meanwhile waits for the import
            # to finish rather than stopping it halfway through an extension module
            threading.Thread(target=run, name="csup-import", daemon=False).start()
            _warming = future
        return _warming


class _Opener(Opener["Reader"]):
    """What ``open`` returns: awaitable, or an async context manager that closes."""

    verb, sync_verb = "open", "open_sync"

    def __init__(self, url: str, store: Store | None, options: OpenOptions,
                 store_options: dict[str, Any], tail: TailRead | None = None) -> None:
        self.url, self.store = url, store
        self.reader_options, self.store_options = options, store_options
        self.given_tail = tail  # a tail read made already (open_with_tail)
        self.reader: Reader | None = None

    @property
    def options(self) -> dict[str, Any]:
        """The keywords this open was given (``limit=`` renamed; the reader's as
        :meth:`~csup_async.model.options.OpenOptions.given` has them), as one bag."""
        return {**self.reader_options.given(), **self.store_options}

    async def _open(self) -> Reader:
        store, key, owns = self.store, self.url, False
        reader_opts = self.reader_options
        warming = warm_up()
        loading = None if warming is None or warming.done() else asyncio.wrap_future(warming)
        tail: asyncio.Future[TailRead] | None = None
        head: asyncio.Future[TailRead | None] | None = None
        asked = self.given_tail is not None  # whether the head read was decided on
        recalled: asyncio.Future[Any] | None = None  # the reads its last open made
        try:
            if store is None:
                # shared per loop and options; private (owned) only when it cannot be shared
                store, key, shared = await shared_store(self.url, **self.store_options)
                owns = not shared
            if reader_opts.profile is None:
                from ..stores.capabilities import profile_of

                reader_opts = reader_opts.with_profile(profile_of(store))
            if self.given_tail is not None:
                tail = asyncio.get_running_loop().create_future()
                tail.set_result(self.given_tail)
            elif loading is None:  # a file opened before: its reads go with the tail read
                tail, recalled = _recall(store, key, reader_opts)
                asked = recalled is not None  # they hold its head
            if loading is not None:
                if tail is None:
                    tail = self._early_tail(store, key, reader_opts)
                    if tail is not None:  # its head read goes with it, not after the import
                        head, asked = _early_head(store, key, reader_opts), True
                await loading
        except BaseException:
            await _discard(tail)
            await _discard(head)
            await _discard(recalled)
            if loading is not None:
                with contextlib.suppress(BaseException):
                    await loading  # an import left running would outlive the caller's error
            if owns and store is not None:
                await store.close()
            raise
        from .loader import load_reader

        if not asked:
            head = _early_head(store, key, reader_opts)
        try:
            r = await load_reader(store, key, owns_store=owns, options=reader_opts,
                                  pending=tail, head=head, recalled=recalled)
        except BaseException:
            await _discard(tail)
            await _discard(head)
            await _discard(recalled)
            raise
        self.reader = r
        return r

    @staticmethod
    def _early_tail(store: Store, key: str, reader_opts: OpenOptions
                    ) -> asyncio.Task[TailRead] | None:
        """The tail read ``Reader.load`` would make, sent now; None when it might not
        make one (a metadata cache may answer without a request)."""
        if reader_opts.metadata_cache or reader_opts.immutable:
            return None
        if reader_opts.metadata_cache is None and os.environ.get("CSUP_METADATA_CACHE"):
            return None  # the on-disk cache (diskcache.py) may revalidate instead
        import planner as P

        size = P.tail_prefetch_size(P.get_profile(reader_opts.profile))
        return asyncio.ensure_future(store.read_tail(key, size))


def _recall(store: Store, key: str, reader_opts: OpenOptions
            ) -> tuple[asyncio.Future[TailRead] | None, asyncio.Future[Any] | None]:
    """The tail read and the reads the last open of ``key`` made, sent together
    (:mod:`.openhint`); ``(None, None)`` when none are known, or a metadata cache may
    answer the open without a request."""
    cache = reader_opts.metadata_cache
    if (cache is not None and cache is not False) or reader_opts.immutable or (
            cache is None and os.environ.get("CSUP_METADATA_CACHE")):
        return None, None
    import planner as P

    from .openhint import send

    return send(store, key, P.tail_prefetch_size(P.get_profile(reader_opts.profile)))


def _early_head(store: Store, key: str, reader_opts: OpenOptions
                ) -> asyncio.Task[TailRead | None] | None:
    """A head read sent with the tail read, sized by :func:`.headhint.head_size` (what a
    listing said of the object's size, what the last file opened from the same place
    was); None when none is needed."""
    from ..stores.capabilities import HeadReader

    cache = reader_opts.metadata_cache  # (an empty MetadataCache is falsy: compare)
    if (cache is not None and cache is not False) or reader_opts.immutable or \
            not isinstance(store, HeadReader):
        return None  # a metadata cache may answer the open without a request
    if cache is None and os.environ.get("CSUP_METADATA_CACHE"):
        return None  # the on-disk cache may answer the open without a request
    import planner as P

    from ..stores.sizes import listed_size
    from .headhint import head_size

    size = head_size(store, key, P.get_profile(reader_opts.profile),
                     listed_size(store, key))
    if size is None:
        return None
    return asyncio.ensure_future(store.read_head(key, size))


async def _discard(task: Awaitable[Any] | None) -> None:
    """Cancel an early tail read no one will use, and wait for it (no connection left)."""
    if isinstance(task, asyncio.Future):
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


def open_with_tail(url: str, tail: TailRead, *, store: Store, **options: Any) -> _Opener:
    """``open(url, store=store, **options)`` on a tail read made already (``store``'s
    ``read_tail`` of ``url`` at the size the reader's profile asks for): a caller that
    looked at the tail first (Spark's schema inference: a v23 footer) pays no second
    tail request for the files it must open after all."""
    return _Opener(source_text(url), store, *parse_open(options), tail)


def open(url: str, *, store: Store | None = None, **options: Any) -> _Opener:
    """Open a CSUP object: ``async with open(url) as r`` or ``r = await open(url)``.

    ``store`` is the store to read through (the caller closes it); without
    one, the event loop's shared store for the URL's kind and these options
    is used (made on first use, closed by ``close_stores()``, at the end of
    ``asyncio.run`` or at exit; never by the reader).  Options:
    ``profile`` (planner profile), ``concurrency``, ``max_metadata``,
    ``max_mem_length``, ``max_rows``, ``max_values``, ``metadata_cache`` (a
    MetadataCache, or True for the process's: metadata parsed before is reused
    for the same object version), ``immutable`` (with a cache: an object opened
    before is not asked again), ``timeout`` (seconds: the whole of any one scan,
    ``iter_batches``, ``read_rows`` or ``count_rows``, StoreTimeoutError past it;
    given to the store too, where it bounds each store operation),
    ``verify_checksums`` (True: each segment's ``crc32``, where the file has one,
    is checked before decompression; a mismatch is a FormatError naming the
    column and segment), ``verify_counts`` (False: ``take``, ``rows=`` and ``limit=``
    read only the segments holding the rows, each checked against its count and each
    column's counts against its rows; True also decodes every segment before the last
    selected row, so counts shifted between unread segments are a FormatError),
    ``trust_counts`` (the earlier opt-out: reads what the default reads),
    ``calibrate`` (default False: the static ``profile``; True, for S3, GCS and HTTP:
    plans assume the latency and bandwidth measured on the endpoint once 5 requests
    are known, :mod:`planner.calibration`), and the
    store's own options (``max_connections``, ``endpoint``, credentials, ...: see
    :mod:`csup_async.stores.config`; ``storage_options={...}`` with fsspec's, polars'
    or object_store's names works too).  ``limit=`` as the connection count is
    deprecated (``max_connections=``): ``limit`` means rows.
    """
    keep_freed_memory()  # before the import thread and the pools (csup_async.model.heap)
    return _Opener(source_text(url), store, *parse_open(options))


def open_parsed(url: str, options: OpenOptions, *, store: Store,
                store_options: dict[str, Any] | None = None) -> _Opener:
    """``open`` with options parsed already (:func:`~csup_async.model.options.parse_open`):
    how a dataset opens its files, parsing its keywords once for all of them."""
    keep_freed_memory()
    return _Opener(source_text(url), store, options, dict(store_options or {}))
