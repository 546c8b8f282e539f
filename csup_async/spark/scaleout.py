"""Planning on the executors: past ``planOnExecutorsThreshold`` files, tasks open their own.

Below the threshold the driver loads every file's metadata (one tail read
each) and ships exact plans (:mod:`.planning`).  That costs the driver one
core's parsing per file and a partition list holding every file's metadata:
seconds for 10,000 files, minutes and gigabytes for 100,000.  Past the
threshold the driver only lists (and prunes on Hive partition values, which
need no object) and packs the URLs into partitions; each task then does, per
file and ``fileConcurrency`` files at a time, what the driver would have done:
the tail read (for a small file the whole object, so one request in all),
pruning by the pushed filters and by rows, the plan, and the reads the tail
did not cover.  Planning then runs on every executor core at once, as Spark's
own Parquet source reads its footers in the tasks.

Why not a separate Spark job that plans and hands plans back to the driver:
PySpark (4.3) calls ``partitions()`` in a planning worker that the JVM starts
for it, with no SparkContext to submit a job from, and needs the partitions
before the query's job exists.  What the tasks cannot know beforehand:

* the bytes each file will need, so URLs are packed by an estimate (the
  profile's first read plus a round trip's byte-equivalent per file, shared by
  ``fileConcurrency`` files in flight);
* which files metadata rules out, so every pushed filter that partition
  values do not decide goes back to Spark (which evaluates it on the rows:
  results stay exact, and the tasks still skip files the filters rule out).

The column of a Spark field is found per file (only the whole-value column
``this`` depends on the file's types; see ``schema.column_paths``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pyspark.sql.types import StructField, StructType

import planner as P
from planner.packing import EVEN, Target, Unit, pack
from planner.request import NO_BUDGET, ScanRequest

from ..arrays import Array
from ..readers.opening import open as open_reader
from ..readers.wholeobject import WholeObjectReader
from ..stores import Store, redact_url
from .filters import decide, describe
from .listing import Loaded
from .options import Settings
from .planning import CsupPartition, ReadPlan, task_request, write_report
from .schema import column_paths


class UnopenedPartition(CsupPartition):
    """URLs a task opens, plans and reads itself, with the pushed filters to prune by."""

    def __init__(self, index: int, urls: tuple[str, ...], columns: tuple[tuple[str, str], ...],
                 partition_values: tuple[tuple[str, Any], ...] = (),
                 filters: tuple[Any, ...] = (), request: ScanRequest | None = None) -> None:
        super().__init__(index, (), columns, partition_values, request)
        self.urls = urls
        #: pushed filters that partition values did not decide (files they rule out are
        #: skipped; Spark still evaluates them on the rows)
        self.filters = filters

    def __repr__(self) -> str:
        return f"UnopenedPartition(index={self.index}, files={len(self.urls)})"


def file_weight(profile: P.Profile, settings: Settings) -> int:
    """Bytes-to-read equivalent of one unopened file: its first read plus its share of
    a round trip (``fileConcurrency`` files are in flight per task)."""
    return profile.tail_min + max(1, profile.breakeven // settings.file_concurrency)


def plan_unopened(loaded: Loaded, columns: Sequence[tuple[str, str]], filters: Sequence[Any],
                  settings: Settings) -> ReadPlan:
    """Partitions of URLs, packed by estimated weight within runs of equal partition
    values; every filter partition values do not decide is handed back to Spark."""
    t0 = time.perf_counter()
    urls = loaded.unopened
    decided: list[Any] = []
    others = list(filters)
    if loaded.partitions is not None:
        from .partition_filters import split

        _, decided, others = split(others, {c.name: c.type for c in loaded.partitions.columns})
    weight = file_weight(loaded.profile, settings)
    keys: list[tuple[tuple[str, Any], ...]] = [()] * len(urls)
    if loaded.partitions is not None:
        names = tuple(loaded.partitions.names)
        keys = [tuple(zip(names, vals, strict=True)) for vals in loaded.partitions.values]
    # equal weights: equal shares, and never an empty one (a target below one file)
    packing = pack([Unit(weight, key=k) for k in keys],
                   Target(settings.target_partition_bytes, rule=EVEN,
                          min_tasks=settings.min_partitions, floor=weight))
    target = packing.target
    cols = tuple(columns)
    pushed = tuple(others)
    request = task_request(settings, cols)
    partitions: list[CsupPartition] = [
        UnopenedPartition(i, tuple(urls[u] for u in t.units), cols, t.key, pushed, request)
        for i, t in enumerate(packing.tasks)]
    report = {
        "paths": [redact_url(p) for p in settings.paths],
        "planned_on": "executors",
        "files_listed": len(urls) + len(loaded.partition_pruned),
        "metadata_requests": 0,
        "metadata_seconds": round(loaded.seconds, 4),
        "files_pruned": len(loaded.partition_pruned),
        "pruned_by": {"partition filter": len(loaded.partition_pruned)}
        if loaded.partition_pruned else {},
        "files_to_open": len(urls),
        "partitions": len(partitions),
        "target_partition_bytes": target,
        "columns": [n for n, _ in columns],
        "pushed_filters": [describe(f) for f in decided + others],
        "filters_for_spark": [describe(f) for f in others],
        "planning_seconds": round(time.perf_counter() - t0, 4),
        "pruned_files": [{"file": redact_url(u), "reason": "partition filter"}
                         for u in loaded.partition_pruned[:1000]],
    }
    if settings.plan_report:
        write_report(settings.plan_report, report)
    return ReadPlan(partitions, others, report)


async def open_and_read(url: str, names: Sequence[str], filters: Sequence[Any], store: Store,
                        reader_opts: dict[str, Any], request: ScanRequest | None = None
                        ) -> tuple[dict[str, Array], int, tuple[tuple[str, str], ...]]:
    """One file, on an executor: tail read, prune, plan, read what the tail did not hold.

    Returns the columns by CSUP path, the row count and the (Spark name, CSUP path)
    of ``names`` in this file; a file the filters rule out (or with no rows) gives
    no rows.  ``request``: the task's (the driver's, parsed there), narrowed here to the
    paths this file has (nothing is parsed per file).
    """
    request = request if request is not None else ScanRequest()
    reader = await open_reader(url, store=store, **reader_opts)
    meta = reader.meta
    # column_paths only looks at names (and the file's types, for ``this``)
    probe = StructType([StructField(n, StructType()) for n in names])
    columns = tuple(column_paths(probe, [meta]).items())
    if filters:
        kept, _, _ = decide(filters, [meta], dict(columns))
        if not kept:
            return {}, 0, columns
    paths = list(dict.fromkeys(p for _, p in columns))
    if not paths:
        return {}, await reader.count_with(NO_BUDGET), columns

    if isinstance(reader, WholeObjectReader):  # no column index: its own scan reads it
        # (a path of ``columns`` its types lack, the whole-value ``this`` aside, is nulls)
        have = [p for p in paths if not reader.missing_paths([p])]
        res = await reader.scan_with(request.but(columns=tuple(have)))
        return res.columns, res.num_rows, columns
    tail = reader.tail
    mp = P.plan_files([(url, meta, (tail.offset, len(tail.data)))], paths, reader.profile,
                      target_task_bytes=None)
    if mp.files:
        res = await reader.execute(mp.files[0].plan, paths)
        return res.columns, res.num_rows, columns
    pruned = mp.pruned[0]
    if pruned.reason == P.NO_ROWS:
        return {}, 0, columns
    n = pruned.rows if pruned.rows is not None else await reader.count_with(NO_BUDGET)
    return {}, n, columns
