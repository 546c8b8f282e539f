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
import dataclasses
import os
import time
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

import planner as P
from planner.filters import Expr, columns_of
from planner.partitions import PartitionError, Partitions

from . import arrays as A
from .errors import ColumnNotFoundError, RowSelectionError, not_awaited, source_text
from .opening import open as open_reader
from .partitioning import check_partitioning, partition_columns, partitions_of, root_of
from .read.options import split_options
from .reader import Reader, ScanResult, ScanStats
from .stores import Store, redact_url, shared_store
from .stores.capabilities import profile_of
from .stores.listing import DEFAULT_MATCH, list_sources
from .tasks import gather_or_cancel

DEFAULT_FILE_CONCURRENCY = 64


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
            opened = await gather_or_cancel([self._open_file(u) for u in need])
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
                   target_task_bytes: int = P.multi.DEFAULT_TARGET_TASK_BYTES,
                   filters: Any = None) -> P.MultiPlan:
        """Which files contribute, what each must read, and tasks of about the target size.

        With ``filter`` (an expression or its text form), files its partition part
        rules out are left out before any is opened (partition columns themselves
        need no reads), and files whose segment statistics prove it false for every
        row are listed in ``pruned`` with the reason ``planner.pruning.STATISTICS``."""
        filter = _as_filter(filter, filters)
        readers, idx = await self._select(filter)
        self._check_filter_paths(filter)
        readers, _, pruned = self._by_statistics(readers, idx, filter)
        parsed = P.parse_columns(columns)  # the one column-list parser (as Reader's)
        spell = self._partition_spellings()
        cols = ([spelling for spelling, _ in parsed if spelling not in spell]
                if parsed is not None else None)
        extra: list[str] = []
        if cols is not None and filter is not None:  # a scan reads the filter's columns too
            extra = [c for c in dict.fromkeys(P.format_path(p) for p in columns_of(filter))
                     if c not in spell and c not in cols]
            cols += extra
        plan = P.plan_files(self._entries(readers), cols, self.profile,
                            target_task_bytes=target_task_bytes)
        if extra:  # a filter's column no file has is null: not missing
            plan = dataclasses.replace(plan, missing_paths=tuple(
                p for p in plan.missing_paths if p not in extra))
        if pruned:
            from planner.pruning import STATISTICS

            found = {p for r in pruned for p in plan.missing_paths
                     if p not in absent_paths(r, p)}  # a pruned file has them: not missing
            plan = dataclasses.replace(plan, missing_paths=tuple(
                p for p in plan.missing_paths if p not in found), pruned=plan.pruned + tuple(
                P.multi.PrunedFile(r.key, STATISTICS, r.meta.row_count) for r in pruned))
        return plan

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   limit: int | None = None, filter: Expr | None = None,
                   filters: Any = None) -> ScanResult:
        """Rows of every file in file order; with ``limit``, only the first files whose
        row counts (known from metadata) cover ``limit`` rows are read at all.

        ``filter`` (a ``planner.filters`` expression) keeps the rows it is true for:
        files its partition part rules out are never opened, files whose segment
        statistics (in the metadata read at open) prove it false for every row get no
        data request, and a filter that reads data columns is evaluated exactly on the
        scanned rows."""
        t0 = time.perf_counter()
        filter = _as_filter(filter, filters)
        residual = filter if filter is not None and not (
            self.partitions is not None and self.partitions.only_partitions(filter)) else None
        lazy = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and (
            residual is None)
        candidates, chosen_idx = await self._select(filter, limit if lazy else None)
        self._check_filter_paths(filter)
        spell = self._partition_spellings()
        chosen, chosen_idx, _ = self._by_statistics(candidates, chosen_idx, residual)
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
            for r in candidates:  # a file pruned by statistics still names its columns
                seen.update(dict.fromkeys(r._paths(None)))
            cols = [c for c in seen if c not in spell] + list(spell)
        wanted = cols
        extra = [] if residual is None else [
            P.format_path(p) for p in columns_of(residual) if P.format_path(p) not in cols]
        part_cols = [c for c in cols + extra if c in spell]
        cols = [c for c in cols + extra if c not in spell]  # data columns (partitions win)
        plan = P.plan_files(self._entries(candidates), cols, self.profile)
        missing = [p for p in plan.missing_paths if p not in extra]  # a filter's: null
        if missing and lazy and parsed is not None:  # maybe in a file past the limit's
            everything, _ = await self._select(filter)
            plan = P.plan_files(self._entries(everything), cols, self.profile)
            missing = [p for p in plan.missing_paths if p not in extra]
        if missing and (candidates or self.partitions is None):  # no file left: nothing to say
            raise self.missing_error(missing)
        if readers is not candidates:  # the files a limit or statistics keep
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
                paths = [c for c in cols if c not in absent_paths(r, c)]
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

        parts = await gather_or_cancel([one(r) for r in readers])
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

    def prune_by_statistics(self, filter: Expr | str) -> tuple[list[Reader], list[Reader]]:
        """``(kept, pruned)``: the open files whose segment statistics do not, and do,
        prove ``filter`` false for every row (no request: the metadata is loaded)."""
        readers = list(self.readers)
        kept, _, pruned = self._by_statistics(readers, list(range(len(readers))),
                                              _as_filter(filter))
        return kept, pruned

    def _by_statistics(self, readers: list[Reader], idx: list[int], filter: Expr | None
                       ) -> tuple[list[Reader], list[int], list[Reader]]:
        """``(kept, their indices, pruned)``: files whose segment statistics prove the
        filter false for every row are dropped (metadata already loaded: no request)."""
        if filter is None or not readers:
            return readers, idx, []
        from planner.pruning import prune_files

        from .colvalue import segment_stats

        partition_paths = {(n,) for n in self._partition_spellings().values()}
        verdict = prune_files([r.meta for r in readers], filter, segment_stats,
                              unknown=partition_paths)
        if not verdict.pruned:
            return readers, idx, []
        return ([readers[i] for i in verdict.kept], [idx[i] for i in verdict.kept],
                [readers[i] for i in verdict.pruned])

    def _check_filter_paths(self, filter: Expr | None) -> None:
        """ColumnNotFoundError when the filter names a data path no file of the dataset
        has (a misspelling would match nothing, silently).  Only said when every file is
        open: a file a partition filter kept closed may have it."""
        if filter is None or len(self.readers) < len(set(self._urls)):
            return
        spell = self._partition_spellings()
        from planner.pruning import type_has_path

        paths = [p for p in dict.fromkeys(columns_of(filter)) if P.format_path(p) not in spell]
        missing = [P.format_path(p) for p in paths
                   if not any(type_has_path(t, p) for r in self.readers
                              for t in r.meta.super_types)]
        if missing:
            types = [t for r in self.readers for t in r.meta.super_types]
            raise ColumnNotFoundError(
                f"the filter names {', '.join(map(repr, missing))}, which no file has; "
                f"columns: {P.describe_paths(types)}")

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


def _as_filter(filter: Expr | str | list[Any] | None, filters: Any = None) -> Expr | None:
    """A filter given as text (the CLI's ``--where`` grammar) or in pyarrow's list form
    (``filters=``) as an expression; an expression as given."""
    from planner.dnf import as_expr

    return as_expr(filter, filters)  # type: ignore[no-any-return]


def _null_type() -> Any:
    from .types import NULL

    return NULL


def absent_paths(r: Reader, path: str) -> set[str]:
    """The spellings of ``path`` no super type of ``r``'s file has (empty: it is there)."""
    if getattr(r, "header_layout", False):  # a SuperDB file (csup_async.superdb)
        return set(r.missing_paths([path]))
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
        reader_opts.setdefault("profile", profile_of(store))
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
            readers = [] if parts is not None else await gather_or_cancel(
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

    def __getattr__(self, name: str) -> Any:
        """A dataset's attribute asked of the opener: ``await`` was forgotten."""
        if name.startswith("_"):  # private and protocol probes (IPython's _repr_html_...)
            raise AttributeError(name)
        raise not_awaited("open_dataset", name, "open_dataset_sync")

    def __enter__(self) -> Any:
        raise not_awaited("open_dataset", "__enter__ (a plain `with`)", "open_dataset_sync")

    def __exit__(self, *exc: object) -> None:
        return None


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
    from .read.options import renamed_options

    return _DatasetOpener(source, store, renamed_options(options))
