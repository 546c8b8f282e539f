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
from planner.filters import Expr, columns_of
from planner.partitions import PartitionError, Partitions

from . import arrays as A
from .errors import ColumnNotFoundError, CsupError, RowSelectionError
from .partitioning import check_partitioning, partition_columns, partitions_of, root_of
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
        #: Hive-style partition columns (``partitioning="hive"``), one row per file of ``files``
        self.partitions: Partitions | None = None
        self._urls = [r.key for r in readers]
        self._by_url = {r.key: r for r in readers}
        self._open_file: Any = None  # opens one more file (a partitioned dataset's lazy loads)

    @property
    def files(self) -> list[str]:
        return list(self._urls)

    async def _select(self, filter: Expr | None, limit: int | None = None
                      ) -> tuple[list[Reader], list[int]]:
        """The readers of the files a filter's partition part keeps (all without one),
        opening them first if not yet open: a pruned file is never requested.  With
        ``limit``, files are opened in file order (``file_concurrency`` at a time) only
        until their rows cover it."""
        idx = (self.partitions.select(filter) if self.partitions is not None
               and filter is not None else list(range(len(self._urls))))
        if limit is not None:
            covered, upto = 0, 0
            while upto < len(idx) and covered < limit:
                batch = idx[upto: upto + self.file_concurrency]
                readers, _ = await self._select_idx(batch)
                for r in readers:
                    upto += 1
                    covered += r.num_rows if r.num_rows is not None else await r.count_rows()
                    if covered >= limit:
                        break
            idx = idx[:upto]
        return await self._select_idx(idx)

    async def _select_idx(self, idx: list[int]) -> tuple[list[Reader], list[int]]:
        need = list(dict.fromkeys(self._urls[i] for i in idx if self._urls[i] not in self._by_url))
        if need:
            opened = await _gather_or_cancel([self._open_file(u) for u in need])
            self._by_url.update(zip(need, opened, strict=True))
            self.readers = [self._by_url[u] for u in dict.fromkeys(self._urls)
                            if u in self._by_url]
        return [self._by_url[self._urls[i]] for i in idx], idx

    def _partition_spellings(self) -> dict[str, str]:
        names = self.partitions.names if self.partitions is not None else ()
        return {P.format_path((n,)): n for n in names}

    def _entries(self, readers: list[Reader] | None = None
                 ) -> list[tuple[str, Any, tuple[int, int]]]:
        return [(r.key, r.meta, (r.tail.offset, len(r.tail.data)))
                for r in (self.readers if readers is None else readers)]

    async def plan(self, columns: Sequence[str] | str | None = None, *,
                   filter: Expr | None = None,
                   target_task_bytes: int = P.multi.DEFAULT_TARGET_TASK_BYTES) -> P.MultiPlan:
        """Which files contribute, what each must read, and tasks of about the target size.

        With ``filter``, files its partition part rules out are left out before any
        is opened (partition columns themselves need no reads)."""
        readers, _ = await self._select(filter)
        parsed = P.parse_columns(columns)  # the one column-list parser (as Reader's)
        spell = self._partition_spellings()
        cols = ([spelling for spelling, _ in parsed if spelling not in spell]
                if parsed is not None else None)
        return P.plan_files(self._entries(readers), cols, self.profile,
                            target_task_bytes=target_task_bytes)

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   limit: int | None = None, filter: Expr | None = None) -> ScanResult:
        """Rows of every file in file order; with ``limit``, only the first files whose
        row counts (known from metadata) cover ``limit`` rows are read at all.

        ``filter`` (a ``planner.filters`` expression) keeps the rows it is true for:
        files its partition part rules out are never opened, and a filter that reads
        data columns too is then evaluated exactly on the scanned rows."""
        t0 = time.perf_counter()
        residual = filter if filter is not None and not (
            self.partitions is not None and self.partitions.only_partitions(filter)) else None
        lazy = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and (
            residual is None)
        chosen, chosen_idx = await self._select(filter, limit if lazy else None)
        spell = self._partition_spellings()
        readers = chosen
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise RowSelectionError(f"limit must be an integer >= 0, not {limit!r}")
        file_limit: dict[str, int] = {}  # the rows each file read for a limit must give
        if limit is not None and residual is None:
            readers, covered = [], 0
            for r in chosen:
                if covered >= limit:
                    break
                readers.append(r)
                file_limit[r.key] = limit - covered
                covered += r.num_rows if r.num_rows is not None else await r.count_rows()
        parsed = P.parse_columns(columns)
        cols = [spelling for spelling, _ in parsed] if parsed is not None else []
        if not cols:
            seen: dict[str, None] = {}
            for r in chosen:
                seen.update(dict.fromkeys(r._paths(None)))
            cols = [c for c in seen if c not in spell] + list(spell)
        wanted = cols
        extra = [] if residual is None else [
            P.format_path(p) for p in columns_of(residual) if P.format_path(p) not in cols]
        part_cols = [c for c in cols + extra if c in spell]
        cols = [c for c in cols + extra if c not in spell]  # data columns (partitions win)
        plan = P.plan_files(self._entries(chosen), cols, self.profile)
        missing = [p for p in plan.missing_paths if p not in extra]  # a filter's: null
        if missing and lazy and parsed is not None:  # maybe in a file past the limit's
            everything, _ = await self._select(filter)
            plan = P.plan_files(self._entries(everything), cols, self.profile)
            missing = [p for p in plan.missing_paths if p not in extra]
        if missing and (chosen or self.partitions is None):  # no file left: nothing to say
            raise self.missing_error(missing)
        if readers is not chosen:  # the files a limit needs (columns may be absent)
            plan = P.plan_files(self._entries(readers), cols, self.profile)
        kept = {f.name for f in plan.files}
        sem = asyncio.Semaphore(self.file_concurrency)
        stats = ScanStats()

        async def one(r: Reader) -> tuple[dict[str, A.Array], int]:
            if r.key not in kept:
                n = await r.count_rows()
                n = min(n, file_limit.get(r.key, n))
                return {c: A.null_array(_null_type(), n) for c in cols}, n
            async with sem:
                paths = [c for c in cols if c not in _absent(r, c)]
                res = (await r.scan(paths, limit=file_limit.get(r.key)) if paths else None)
            n = res.num_rows if res is not None else min(r.num_rows or 0,
                                                         file_limit.get(r.key, 1 << 62))
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
        if part_cols:
            assert self.partitions is not None
            where = {r.key: i for r, i in zip(chosen, chosen_idx, strict=True)}
            got = partition_columns(self.partitions, [where[r.key] for r in readers], counts,
                                    [spell[c] for c in part_cols])
            columns_out.update((c, got[spell[c]]) for c in part_cols)
        if residual is not None:
            from planner.filters import bind

            from .filtering import evaluate
            from .types import PrimitiveType

            by_path = {(spell[c],) if c in spell else P.parse_path(c): a
                       for c, a in columns_out.items()}
            typed = bind(residual, {p: a.type.name for p, a in by_path.items()
                                    if isinstance(a.type, PrimitiveType)})  # '2024-..' on time
            keep = np.flatnonzero(evaluate(typed, by_path, int(sum(counts))))
            columns_out = {c: columns_out[c].take(keep) for c in wanted}
            counts = [int(keep.size)]
        else:
            columns_out = {c: columns_out[c] for c in wanted}
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
        partitioning = check_partitioning(opts.pop("partitioning", None))
        partition_base = opts.pop("partition_base", None)
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

            parts = None
            if partitioning is not None:
                if partition_base is None and not isinstance(self.source, str):
                    raise PartitionError("a partitioned dataset given as a list of objects "
                                         "needs partition_base= (the root of its key=value "
                                         "directories)")
                parts = partitions_of(urls, partition_base or root_of(self.source))
            # a partitioned dataset loads a file's metadata when a scan first needs it
            readers = [] if parts is not None else await _gather_or_cancel(
                [one(u) for u in urls])
        except BaseException:
            if owns:
                await store.close()
            raise
        self.dataset = Dataset(readers, store, owns, file_concurrency, reader_opts["profile"])
        self.dataset.skipped = skipped
        if parts is not None:
            self.dataset.partitions, self.dataset._urls = parts, list(urls)
            self.dataset._open_file = one
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
    for all; the rest are listed in ``Dataset.skipped``), ``partitioning="hive"``
    (``key=value`` directories below the source, or below ``partition_base`` for a
    list, become columns, and a scan's filter on them skips whole files before
    opening them; files then load their metadata when a scan first needs them),
    the reader's options and the store's.  A prefix, directory or glob that selects no object raises
    NotFoundError here (an explicit list, even empty, is taken as given).
    """
    return _DatasetOpener(source, store, options)
