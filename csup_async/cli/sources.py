"""What a command reads: the URLs and flags resolved to one object (a Reader) or many
(a Dataset) behind one store the command owns, metered for the progress display, and
whether an input is CSUP (read through a store) or a local file of another format."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ..model.errors import CsupError, NotFoundError
from .exits import UsageError
from .progress import budget_options, progress_bar


class MeteredStore:
    """A store that reports what arrives (tail reads, data bytes) to a progress display.

    Wrapping the store, not the reader, measures exactly what the dataset and
    reader code read, without a hook in either; everything else is delegated.
    """

    def __init__(self, store: Any) -> None:
        self._store = store
        self.on_tail: Callable[[], None] = lambda: None
        self.on_bytes: Callable[[int], None] = lambda n: None

    @property
    def metered(self) -> Any:
        """The store whose reads this one counts."""
        return self._store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def read_tail(self, key: str, length: int) -> Any:
        tail = await self._store.read_tail(key, length)
        self.on_tail()
        return tail

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> Any:
        data = await self._store.read_range(key, offset, length, version)
        self.on_bytes(len(data))
        return data

    async def stream_range(self, key: str, offset: int, length: int,
                           version: str | None = None) -> AsyncIterator[bytes]:
        async with contextlib.aclosing(self._store.stream_range(key, offset, length,
                                                                version)) as chunks:
            async for chunk in chunks:
                self.on_bytes(len(chunk))
                yield chunk

    async def close(self) -> None:
        await self._store.close()


def source_urls(args: argparse.Namespace) -> list[str]:
    raw = args.url if hasattr(args, "url") else args.input
    return list(raw) if isinstance(raw, list) else [raw]


def source_options(args: argparse.Namespace, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(store options, reader options) from the flags, only those that apply to the URL."""
    reader: dict[str, Any] = {}
    if getattr(args, "profile", None):
        reader["profile"] = args.profile
    if getattr(args, "concurrency", None):
        reader["concurrency"] = args.concurrency
    if getattr(args, "no_verify", False):
        reader["verify_checksums"] = False
    if getattr(args, "calibrate", False):
        reader["calibrate"] = True
    if getattr(args, "immutable", False):
        from ..stores.diskcache import CACHE_ENV

        if not os.environ.get(CACHE_ENV):
            raise UsageError(f"--immutable needs ${CACHE_ENV} (the directory of the "
                             "metadata cache it answers from)")
        reader["immutable"] = True
    store: dict[str, Any] = {}
    s3 = url.startswith(("s3://", "s3a://"))
    remote = "://" in url and not url.startswith("file://")
    gcs = url.startswith(("gs://", "gcs://"))
    if (s3 or gcs) and getattr(args, "endpoint_url", None):
        store["endpoint"] = args.endpoint_url  # one spelling: csup_async.stores.config
    if remote and getattr(args, "max_connections", None) and not url.startswith("memory://"):
        store["max_connections"] = args.max_connections
    if s3 and getattr(args, "region", None):
        store["region"] = args.region
    if s3 and getattr(args, "request_payer", False):
        store["request_payer"] = True
    if remote and getattr(args, "anonymous", False) and (
            s3 or url.startswith(("gs://", "gcs://"))):
        store["anonymous"] = True
    if remote and getattr(args, "no_verify_ssl", False) and not url.startswith("memory://"):
        store["verify_ssl"] = False
    return store, reader


def looks_many(url: str) -> bool:
    """A glob, a prefix ending in ``/`` or a local directory: many objects, by its spelling.

    Never an ``http(s)://`` URL: HTTP cannot list, and ``?`` starts its query string.
    """
    from ..stores.listing import has_glob

    if url.startswith(("http://", "https://")):
        return False
    if has_glob(url) or url.endswith("/"):
        return True
    local = url[len("file://"):] if url.startswith("file://") else url
    return "://" not in local and os.path.isdir(local)


class Source:
    """One object (a Reader) or many (a Dataset) behind one store the command owns.

    :attr:`scanner` is a Dataset either way (one object: a one-fragment dataset), so
    commands read through one set of verbs and never ask which they were given."""

    def __init__(self, args: argparse.Namespace) -> None:
        from ..readers.opening import warm_up
        from ..stores import store_for
        from ..stores.shared import with_stable_scope

        warm_up()  # the reader's side imports in a thread while the store's side does here
        self.args = args
        self.urls = source_urls(args)
        store_opts, self.reader_opts = source_options(args, self.urls[0])
        # the scope a shared store of these options has: the on-disk metadata cache
        # ($CSUP_METADATA_CACHE) then serves this command's objects to the next one
        inner = with_stable_scope(store_for(self.urls[0], **store_opts)[0], store_opts)
        self.store = MeteredStore(inner)
        self.reader: Any = None
        self.dataset: Any = None
        self._scanner: Any = None
        self.skipped: list[str] = []

    @property
    def scanner(self) -> Any:
        """The Dataset the opened object or objects are read through (after :meth:`open`)."""
        if self._scanner is None:
            if self.dataset is not None:
                self._scanner = self.dataset
            else:
                from ..datasets.dataset import Dataset

                self._scanner = Dataset.of_readers([self.reader], self.store)
        return self._scanner

    @property
    def match(self) -> str | None:
        """Which objects of a prefix are read (looked up only for many objects: the
        dataset module is not loaded before one object's first request)."""
        from ..stores.listing import DEFAULT_MATCH

        raw = getattr(self.args, "match", None)
        return None if raw == "*" else (raw or DEFAULT_MATCH)

    @property
    def label(self) -> str:
        from ..stores import redact_url

        return " ".join(redact_url(u) for u in self.urls)

    async def open(self) -> Any:
        """The Reader or Dataset for the URLs (closed by :meth:`close`)."""
        from ..readers.opening import open as open_reader
        from ..stores.capabilities import Lister

        one = self.urls[0]
        if len(self.urls) == 1 and not looks_many(one):
            try:
                self.reader = await open_reader(one, store=self.store, **self.reader_opts)
                return self.reader
            except NotFoundError:  # ``s3://b/events`` may be a prefix, as Spark reads it
                if "://" not in one or not isinstance(self.store.metered, Lister):
                    raise
                from ..datasets.dataset import list_sources

                found = await list_sources(one.rstrip("/") + "/", self.store,
                                           match=self.match, skipped=self.skipped)
                if not found and not self.skipped:
                    raise
        else:
            from ..datasets.dataset import list_sources

            found = []
            for url in self.urls:
                found += await list_sources(url, self.store, match=self.match,
                                            skipped=self.skipped)
        if self.skipped:
            from ..stores import redact_url

            names = ", ".join(redact_url(u) for u in self.skipped[:5])
            more = f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            print(f"csup-async: skipped {len(self.skipped)} object(s) not matching "
                  f"{self.match!r}: {names}{more}", file=sys.stderr)
        if not found:
            raise NotFoundError("no objects match", path=self.label)
        return await self._open_dataset(found)

    async def _open_dataset(self, found: list[str]) -> Any:
        from ..datasets.opening import open_dataset

        opts = dict(self.reader_opts)
        if getattr(self.args, "file_concurrency", None):
            opts["file_concurrency"] = self.args.file_concurrency
        with progress_bar(self.args, unit="files") as bar:
            if bar is not None:
                task = bar.add_task(f"reading metadata of {len(found):,} objects",
                                    total=len(found))
                self.store.on_tail = lambda: bar.advance(task)
            try:
                self.dataset = await open_dataset(found, store=self.store, **opts)
            finally:
                self.store.on_tail = lambda: None
        return self.dataset

    async def close(self) -> None:
        try:
            if self.reader is not None:
                await self.reader.close()
            if self.dataset is not None:
                await self.dataset.close()
        finally:
            await self.store.close()

    async def __aenter__(self) -> Any:
        try:
            return await self.open()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(self, fn: Callable[[Any], Any]) -> Any:
        """``await fn(reader_or_dataset)``, with errors that know no object naming the URLs."""
        try:
            async with self as src:
                return await fn(src)
        except CsupError as e:
            raise e.with_path(self.label) from None


def _is_csup_source(url: str) -> bool:
    """CSUP is read through a store (any URL, prefix, glob); other formats from a local file."""
    from ..writers.inputs import CSUP_EXT, kind_of

    if not ("://" in url and not url.startswith("file://")):
        return looks_many(url) or url.lower().endswith(CSUP_EXT)
    try:
        kind = kind_of(url)
    except CsupError:  # a remote name without a known ending: taken as CSUP
        return True
    if kind != "csup":
        from ..stores import redact_url

        raise CsupError(f"{kind} input is read from local files only (download it first)",
                        path=redact_url(url))
    return True


def _csup_values(args: argparse.Namespace) -> Iterator[Any]:
    """Every value of one CSUP object or of each object of a dataset in turn, as ``Value``s.

    One file's values are in memory at a time; the event loop lives across
    the generator's steps (``asyncio.Runner``) so the store's connections do too.
    """
    source = Source(args)
    with asyncio.Runner() as runner:
        try:
            runner.run(source.__aenter__())
        except CsupError as e:
            raise e.with_path(source.label) from None
        try:
            meter = _values_meter(args, source, runner)
            for k, fragment in enumerate(source.scanner.fragments):
                try:
                    r = runner.run(fragment.open())
                    values = runner.run(_metered_values(
                        r, None if meter is None else meter[k]))
                except CsupError as e:
                    raise e.with_path(fragment.path) from None
                yield from values
        finally:
            runner.run(source.close())


def _values_meter(args: argparse.Namespace, source: Source, runner: asyncio.Runner
                  ) -> list[Any] | None:
    """With ``--max-requests``/``--max-bytes``: every object's whole read planned and the
    sum checked (a BudgetError before any data request); one meter per object."""
    budget = budget_options(args)
    if not budget:
        return None
    from planner.request import Budget

    frags = source.scanner.fragments
    readers = [runner.run(f.open()) for f in frags]
    meter = Budget.parse(**budget).meter()
    assert meter is not None
    fms = [meter.file(f.path) for f in frags]
    meter.expect([(fm, *r.whole_figures()) for fm, r in zip(fms, readers, strict=True)])
    return fms


async def _metered_values(r: Any, fm: Any) -> list[Any]:
    from ..model.progress import tracking

    with tracking(fm):
        return await r.read_values()  # type: ignore[no-any-return]


def is_csup_input(args: argparse.Namespace) -> bool:
    """Whether the inputs are CSUP objects (read as one source) or one file of another format."""
    inputs = source_urls(args)
    kinds = [_is_csup_source(u) for u in inputs]
    if all(kinds):
        return True
    if len(inputs) > 1:
        raise UsageError("several inputs must all be CSUP objects (read as one dataset); "
                         "convert other formats one file at a time")
    return False


def input_values(args: argparse.Namespace) -> Any:
    """Values of the input: CSUP through a store (any URL, prefix, glob), others from a file."""
    if is_csup_input(args):
        return _csup_values(args)
    from ..writers.inputs import read_values

    return read_values(source_urls(args)[0])
