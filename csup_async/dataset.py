"""Many CSUP objects scanned as one: concurrent metadata loads, pruning, concurrent scans.

Metadata of every file is fetched concurrently (one tail request per file in
the common case) through one shared store; the planner drops files that
cannot contribute and the rest are scanned ``file_concurrency`` at a time.
Rows come out in file order (files sorted by name when listed from a prefix
or glob), and a pruned file's rows are nulls, so row counts never depend on
the projection.
"""

from __future__ import annotations

import asyncio
import fnmatch
import glob as _glob
import os
import time
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

import planner as P

from . import arrays as A
from .errors import ColumnNotFoundError, CsupError
from .read.options import split_options
from .reader import Reader, ScanResult, ScanStats, _gather_or_cancel
from .reader import open as open_reader
from .stores import Store, redact_url, shared_store

DEFAULT_FILE_CONCURRENCY = 64
_GLOB_CHARS = set("*?[")


#: What a directory or prefix selects by default: CSUP objects by name.
DEFAULT_MATCH = "*.csup"


async def list_sources(source: str | Sequence[str], store: Store, *,
                       match: str | None = DEFAULT_MATCH,
                       skipped: list[str] | None = None) -> list[str]:
    """The object URLs a source names: a list as given, or a prefix/glob expanded and sorted.

    A directory or prefix selects the objects whose base name matches ``match``
    (``fnmatch``; None selects all) and appends the others to ``skipped``: a
    ``notes.txt`` beside the data is not an error.  A glob selects what it
    matches and a named object is read as named (a non-CSUP one is then an error).
    """
    if not isinstance(source, str):
        return list(source)
    is_glob = bool(_GLOB_CHARS & set(source))
    lister = getattr(store, "list", None)
    listed: list[str]
    if "://" not in source or source.startswith("file://"):
        path = source[len("file://"):] if source.startswith("file://") else source
        if is_glob:
            found = _glob.glob(path, recursive=True)
        elif os.path.isdir(path):
            found = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
        else:
            return [source]
        base = path if not is_glob else os.path.dirname(path.split("*")[0].split("?")[0])
        listed = sorted(p for p in found if os.path.isfile(p)
                        and not _hidden(os.path.relpath(p, base)))
    elif lister is None:
        if is_glob or source.endswith("/"):
            raise CsupError(f"store {store.name} cannot list objects", path=redact_url(source))
        return [source]
    elif is_glob:
        cut = min(source.index(c) for c in _GLOB_CHARS if c in source)
        prefix = source[: source.rfind("/", 0, cut) + 1]
        return sorted(u for u in await lister(prefix) if fnmatch.fnmatchcase(u, source)
                      and not _hidden(u[len(prefix):]))
    elif source.endswith("/"):
        listed = sorted(u for u in await lister(source) if not _hidden(u[len(source):]))
    else:
        return [source]
    if is_glob or match is None:
        return listed
    kept = [u for u in listed if fnmatch.fnmatch(u.rstrip("/").rsplit("/", 1)[-1], match)]
    if skipped is not None:
        skipped += [u for u in listed if u not in set(kept)]
    return kept


def _hidden(relative: str) -> bool:
    """Names starting with ``_`` or ``.`` (``_SUCCESS``, staging dirs) are not data,
    at any depth."""
    return any(part.startswith(("_", ".")) for part in relative.split("/") if part)


class Dataset:
    """Open CSUP objects with their metadata loaded; scans across all of them."""

    def __init__(self, readers: list[Reader], store: Store, owns_store: bool,
                 file_concurrency: int, profile: Any) -> None:
        self.readers = readers
        self.store = store
        self._owns_store = owns_store
        self.file_concurrency = file_concurrency
        self.profile = P.get_profile(profile)
        #: objects a directory or prefix listed but ``match`` left out (not read)
        self.skipped: list[str] = []

    @property
    def files(self) -> list[str]:
        return [r.key for r in self.readers]

    def _entries(self, readers: list[Reader] | None = None
                 ) -> list[tuple[str, Any, tuple[int, int]]]:
        return [(r.key, r.meta, (r.tail.offset, len(r.tail.data)))
                for r in (self.readers if readers is None else readers)]

    async def plan(self, columns: Sequence[str] | str | None = None, *,
                   target_task_bytes: int = P.multi.DEFAULT_TARGET_TASK_BYTES) -> P.MultiPlan:
        """Which files contribute, what each must read, and tasks of about the target size."""
        parsed = P.parse_columns(columns)  # the one column-list parser (as Reader's)
        cols = [spelling for spelling, _ in parsed] if parsed is not None else None
        return P.plan_files(self._entries(), cols, self.profile,
                            target_task_bytes=target_task_bytes)

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   limit: int | None = None) -> ScanResult:
        """Rows of every file in file order; with ``limit``, only the first files whose
        row counts (known from metadata) cover ``limit`` rows are read at all."""
        t0 = time.perf_counter()
        readers = self.readers
        if limit is not None:
            if limit < 0:
                raise CsupError(f"limit must be >= 0, got {limit}")
            readers, covered = [], 0
            for r in self.readers:
                if covered >= limit:
                    break
                readers.append(r)
                covered += r.num_rows if r.num_rows is not None else await r.count_rows()
        parsed = P.parse_columns(columns)
        cols = [spelling for spelling, _ in parsed] if parsed is not None else []
        if not cols:
            seen: dict[str, None] = {}
            for r in self.readers:
                seen.update(dict.fromkeys(r._paths(None)))
            cols = list(seen)
        plan = await self.plan(cols)
        if plan.missing_paths:
            raise self.missing_error(plan.missing_paths)
        if readers is not self.readers:  # the files a limit needs (columns may be absent)
            plan = P.plan_files(self._entries(readers), cols, self.profile)
        kept = {f.name for f in plan.files}
        sem = asyncio.Semaphore(self.file_concurrency)
        stats = ScanStats()

        async def one(r: Reader) -> tuple[dict[str, A.Array], int]:
            if r.key not in kept:
                n = await r.count_rows()
                return {c: A.null_array(_null_type(), n) for c in cols}, n
            async with sem:
                paths = [c for c in cols if c not in _absent(r, c)]
                res = await r.scan(paths) if paths else None
            n = res.num_rows if res is not None else (r.num_rows or 0)
            if res is not None:
                stats.requests += res.stats.requests
                stats.bytes_read += res.stats.bytes_read
                stats.bytes_needed += res.stats.bytes_needed
                if stats.ttfb is None:
                    stats.ttfb = res.stats.ttfb
            out = {c: (res.columns[c] if res is not None and c in res.columns
                       else A.null_array(_null_type(), n)) for c in cols}
            return out, n

        parts = await _gather_or_cancel([one(r) for r in readers])
        counts = [n for _, n in parts]
        ids = np.repeat(np.arange(len(parts), dtype=np.int32), counts)
        columns_out = {c: A.combine([p[c] for p, _ in parts], ids) for c in cols}
        if limit is not None and int(sum(counts)) > limit:
            columns_out = {c: a.slice(0, limit) for c, a in columns_out.items()}
            counts = [limit]
        stats.wall = time.perf_counter() - t0
        stats.metadata_requests = sum(r.open_stats.requests for r in self.readers)
        return ScanResult(columns_out, int(sum(counts)), stats, plan)

    def missing_error(self, missing: Sequence[str]) -> ColumnNotFoundError:
        """The error for paths no file has, listing the paths the files do have."""
        types = [t for r in self.readers for t in r.meta.super_types]
        return ColumnNotFoundError(f"no file has column {', '.join(map(repr, missing))}; "
                                   f"columns: {P.describe_paths(types)}")

    async def close(self) -> None:
        await asyncio.gather(*(r.close() for r in self.readers), return_exceptions=True)
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> Dataset:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _null_type() -> Any:
    from .types import NULL

    return NULL


def _absent(r: Reader, path: str) -> set[str]:
    res = P.resolve_paths(r.meta, [path])
    return set(res.missing_paths)


class _DatasetOpener:
    def __init__(self, source: str | Sequence[str], store: Store | None,
                 options: dict[str, Any]) -> None:
        self.source, self.store, self.options = source, store, options
        self.dataset: Dataset | None = None

    async def _open(self) -> Dataset:
        opts = dict(self.options)
        file_concurrency = int(opts.pop("file_concurrency", DEFAULT_FILE_CONCURRENCY))
        match = opts.pop("match", DEFAULT_MATCH)
        store, owns = self.store, False
        first = self.source if isinstance(self.source, str) else (
            self.source[0] if self.source else "")
        reader_opts, store_opts = split_options(opts)
        if store is None:
            store, _, shared = await shared_store(first or ".", **store_opts)
            owns = not shared
        reader_opts.setdefault("profile", getattr(store, "default_profile", "local"))
        skipped: list[str] = []
        try:
            urls = await list_sources(self.source, store, match=match, skipped=skipped)
            if not urls and isinstance(self.source, str):  # a list is taken as given
                from .errors import NotFoundError

                raise NotFoundError("no objects match" + (
                    f" ({len(skipped)} skipped: not {match})" if skipped else ""),
                    path=redact_url(self.source))
            sem = asyncio.Semaphore(file_concurrency)

            async def one(url: str) -> Reader:
                async with sem:
                    return await open_reader(url, store=store, **reader_opts)

            readers = await _gather_or_cancel([one(u) for u in urls])
        except BaseException:
            if owns:
                await store.close()
            raise
        self.dataset = Dataset(readers, store, owns, file_concurrency, reader_opts["profile"])
        self.dataset.skipped = skipped
        return self.dataset

    def __await__(self) -> Generator[Any, None, Dataset]:
        return self._open().__await__()

    async def __aenter__(self) -> Dataset:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        if self.dataset is not None:
            await self.dataset.close()


def open_dataset(source: str | Sequence[str], *, store: Store | None = None,
                 **options: Any) -> _DatasetOpener:
    """Open many CSUP objects: a list of URLs, a prefix ending in ``/``, a directory or a glob.

    ``async with open_dataset("s3://bucket/events/") as ds: await ds.scan(["a"])``.
    Options: ``file_concurrency`` (files read at once, default 64), ``match``
    (which objects of a directory or prefix to read, default ``"*.csup"``; None
    for all; the rest are listed in ``Dataset.skipped``), the reader's options
    and the store's.  A prefix, directory or glob that selects no object raises
    NotFoundError here (an explicit list, even empty, is taken as given).
    """
    return _DatasetOpener(source, store, options)
