"""``open_dataset``: list the objects of a source, open them (or, for a Hive-partitioned
dataset, prepare to open each on first need) and hand back a :class:`~.dataset.Dataset`.

Apart from :mod:`.dataset` because opening is the API's edge (options parsed, the store
chosen, the source listed) and the Dataset's verbs never look at any of it again.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from planner.partitions import PartitionError

from ..model.errors import NotFoundError, source_text
from ..model.opener import Opener
from ..model.options import DatasetOptions, OpenOptions, parse_dataset
from ..readers.opening import open_parsed
from ..readers.reader import Reader
from ..scan.partitioning import check_partitioning, partitions_of, root_of
from ..stores import Store, redact_url, shared_store
from ..stores.capabilities import profile_of
from ..stores.listing import list_sources
from ..stores.tasks import gather_or_cancel
from .dataset import Dataset
from .fragment import Fragment

__all__ = ["open_dataset"]


class _DatasetOpener(Opener["Dataset"]):
    """What ``open_dataset`` returns: awaitable, or an async context manager that closes."""

    verb, sync_verb = "open_dataset", "open_dataset_sync"

    def __init__(self, source: str | Sequence[str], store: Store | None,
                 options: tuple[DatasetOptions, OpenOptions, dict[str, Any]]) -> None:
        self.source, self.store = source, store
        self.dataset_options, self.reader_options, self.store_options = options
        self.dataset: Dataset | None = None

    @property
    def options(self) -> dict[str, Any]:
        """The keywords this open was given (``limit=`` renamed; the typed ones as
        their non-default values), as one bag."""
        return {**self.dataset_options.given(), **self.reader_options.given(),
                **self.store_options}

    async def _open(self) -> Dataset:
        own = self.dataset_options
        file_concurrency, match = own.file_concurrency, own.match
        partitioning = check_partitioning(own.partitioning)
        partition_base = own.partition_base
        store, owns = self.store, False
        first = self.source if isinstance(self.source, str) else (
            self.source[0] if self.source else "")
        if store is None:
            store, _, shared = await shared_store(first or ".", **self.store_options)
            owns = not shared
        reader_opts = self.reader_options.with_profile(profile_of(store))
        skipped: list[str] = []
        try:
            urls = await list_sources(self.source, store, match=match, skipped=skipped)
            if not urls and isinstance(self.source, str):  # a list is taken as given
                raise NotFoundError("no objects match" + (
                    f" ({len(skipped)} skipped: not {match})" if skipped else ""),
                    path=redact_url(self.source))
            sem = asyncio.Semaphore(file_concurrency)

            async def one(url: str) -> Reader:
                async with sem:
                    return await open_parsed(url, reader_opts, store=store)

            parts = None
            if partitioning is not None:
                if partition_base is None and not isinstance(self.source, str):
                    raise PartitionError("a partitioned dataset given as a list of objects "
                                         "needs partition_base= (the root of its key=value "
                                         "directories)")
                parts = partitions_of(urls, partition_base or root_of(self.source))
            # a partitioned dataset loads a file's metadata when a scan first needs it
            readers = [] if parts is not None else await gather_or_cancel(
                [one(u) for u in urls])
        except BaseException:
            if owns:
                await store.close()
            raise
        if parts is None:
            fragments = [Fragment(u, reader=r) for u, r in zip(urls, readers, strict=True)]
        else:
            types = {c.name: c.type for c in parts.columns}
            fragments = [Fragment(u, opener=one, partition=parts.row(i), partition_types=types)
                         for i, u in enumerate(urls)]
        self.dataset = Dataset(fragments, store, owns_store=owns,
                               file_concurrency=file_concurrency,
                               profile=reader_opts.profile, partitions=parts)
        self.dataset.skipped = skipped
        return self.dataset


def open_dataset(source: str | Sequence[str], *, store: Store | None = None,
                 **options: Any) -> _DatasetOpener:
    """Open many CSUP objects: a list of URLs, a prefix ending in ``/``, a directory or a glob.

    ``async with open_dataset("s3://bucket/events/") as ds: await ds.scan(["a"])``.
    Options: ``file_concurrency`` (files read at once, default 64), ``match``
    (which objects of a directory or prefix to read, default ``"*.csup"``; None
    for all; the rest are listed in ``Dataset.skipped``), ``partitioning="hive"``
    (``key=value`` directories below the source, or below ``partition_base`` for a
    list, become columns, and a scan's filter on them skips whole files before
    opening them; files then load their metadata when a scan first needs them),
    the reader's options and the store's.  A prefix, directory or glob that selects no object raises
    NotFoundError here (an explicit list, even empty, is taken as given).
    """
    if isinstance(source, str | os.PathLike):
        source = source_text(source, "source")
    elif isinstance(source, Sequence):
        source = [source_text(s, "each source") for s in source]
    else:
        source = source_text(source, "source")  # raises: neither text, a path nor a list
    return _DatasetOpener(source, store, parse_dataset(options))
