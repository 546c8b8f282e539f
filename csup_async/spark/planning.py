"""The driver's second step: prune files, plan their reads, pack them into partitions.

With every file's metadata loaded (:mod:`.listing`), per file and with no
data read:

* pushed filters that metadata decides drop files outright (``filters``);
* files with no rows are dropped;
* files where every requested column is missing or all null need no reads:
  their rows are nulls, produced on an executor from the metadata's row count
  (dropping them would change ``count(*)``);
* every other file gets a scan plan, and the needed bytes the driver already
  holds from its tail read (the whole object, for a small one) are shipped
  with the partition, up to ``shipTailBytes`` in all: small files then cost
  executors no request at all.

Files are packed in order into partitions of about ``targetPartitionBytes``
of work: bytes to decode plus, per request, the profile's byte-equivalent of
a round trip divided by ``fileConcurrency`` (a partition has that many files
in flight, so round trips overlap).  The target is lowered until there are
``minPartitions`` partitions, so every core gets a share, but not below one
round trip's worth of bytes: splitting less than that costs more than it saves.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import InputPartition

import planner as P
from planner.packing import NEAREST, Packing, Target, Unit, pack
from planner.request import NO_BUDGET, ScanRequest

from ..format.meta import FileMeta
from ..model.budget import check_budget
from ..stores import TailRead, redact_url
from .filters import conjunction, decide, describe
from .listing import Loaded, LoadedFile
from .options import Settings

log = logging.getLogger("csup_async.spark")


@dataclass(frozen=True, slots=True)
class FilePart:
    """One file of a partition: what the executor needs, and nothing live."""

    url: str
    meta: FileMeta = field(repr=False)
    version: str | None = field(repr=False)
    plan: P.ScanPlan | None = field(repr=False)  # None: no reads, ``rows`` nulls
    rows: int | None = None  # for plan None; None = count from the super column
    served: tuple[tuple[int, bytes], ...] = field(default=(), repr=False)
    """(offset, bytes) the driver already read that the plan's served requests need."""
    whole: bool = False
    """A file with no column index (SuperDB header layout, BSUP): the executor opens it
    and its reader's own scan reads it (no byte plan ships)."""
    held: tuple[tuple[int, bytes], ...] | None = field(default=None, repr=False)
    """A v23 file's metadata bytes (and its data's, when the driver held them within
    ``shipTailBytes``): the executor's reader opens from them, no request
    (readers/held23.py); None: it opens the file itself."""
    size: int = 0  # of the object (for ``held``)
    objects: tuple[int, ...] | None = field(default=None, repr=False)
    """The only objects of a v23 file the task reads: the driver proved the others hold
    no row the pushed filters keep (None: every object)."""

    def __repr__(self) -> str:  # Spark shows partitions' files in task descriptions
        return f"FilePart(url={redact_url(self.url)!r}, rows={self.rows})"


class CsupPartition(InputPartition):
    """Files read by one Spark task, with the columns' CSUP paths and the read's request
    (parsed on the driver: the task's verbs run it, parsing nothing)."""

    def __init__(self, index: int, files: tuple[FilePart, ...],
                 columns: tuple[tuple[str, str], ...],
                 partition_values: tuple[tuple[str, Any], ...] = (),
                 request: ScanRequest | None = None) -> None:
        self.index = index
        self.files = files
        self.columns = columns
        #: Hive-style partition columns' values, the same for every file of the partition
        self.partition_values = partition_values
        #: what each task reads of its files: the columns' paths and ``batchRows``
        self.request = request if request is not None else task_request(Settings(), columns)

    def __repr__(self) -> str:  # Spark prints partitions; keep it short and secret-free
        return f"CsupPartition(index={self.index}, files={len(self.files)})"


@dataclass(repr=False)
class ReadPlan:
    partitions: list[CsupPartition]
    remaining_filters: list[Any]
    report: dict[str, Any]


def _ship(fs: P.FileScan, tail: TailRead, budget: int
          ) -> tuple[tuple[int, bytes], ...] | None:
    """The needed bytes of ``fs``'s served requests, cut from the tail, if they fit ``budget``.

    Segments, not requests: a served request may span other columns' bytes
    (requests merge across small gaps to save round trips, which served bytes
    do not cost), and those must not eat the budget.
    """
    runs: list[list[int]] = []
    for r in fs.plan.requests:
        if not r.served:
            continue
        for p in r.pieces:
            start = r.offset + p.offset_in_request
            if runs and runs[-1][1] >= start:
                runs[-1][1] = max(runs[-1][1], start + p.length)
            else:
                runs.append([start, start + p.length])
    if sum(b - a for a, b in runs) > budget:
        return None
    base = tail.offset
    return tuple((a, tail.data[a - base : b - base]) for a, b in runs)


def _scan_parts(scans: list[P.FileScan], by_url: dict[str, LoadedFile], paths: list[str],
                profile: P.Profile, budget: int, cost: int, conj: Any = None
                ) -> tuple[list[tuple[FilePart, int]], int]:
    """The planned files' parts, each with its weight (bytes to decode plus ``cost`` per
    request), and the bytes shipped with them (at most ``budget``)."""
    parts: list[tuple[FilePart, int]] = []
    shipped = 0
    for fs in scans:
        lf = by_url[fs.name]
        if lf.reader is not None:  # SuperDB: its reader, opened from the bytes shipped
            part, size = _superdb_part(fs, lf, budget, cost, conj)
            budget -= size
            shipped += size
            parts.append(part)
            continue
        plan, served = fs.plan, _ship(fs, lf.tail, budget)
        if served is None:
            plan, served = P.plan_scan(lf.meta, paths, profile, available=None), ()
        size = sum(len(b) for _, b in served)
        budget -= size
        shipped += size
        parts.append((FilePart(fs.name, lf.meta, lf.tail.info.version, plan, None, served),
                      plan.bytes_needed + cost * plan.request_count))
    return parts, shipped


def task_request(settings: Settings, columns: Sequence[tuple[str, str]]) -> ScanRequest:
    """The request a query's tasks run: the options' (``Settings.request``, parsed once
    on the driver) for the columns' CSUP paths (canonical spellings already:
    ``schema.column_paths``), without the budget (the query's, checked on the driver
    against every task's plan, not again per task).  It pickles with the partitions."""
    paths = tuple(dict.fromkeys(p for _, p in columns))
    return settings.request.but(columns=paths, budget=NO_BUDGET)


def _own_plans(files: Sequence[LoadedFile], request: ScanRequest) -> dict[str, Any]:
    """The plans SuperDB files' readers make of the paths they have (None: none of
    them; the file's rows are nulls); no request."""
    out: dict[str, Any] = {}
    for f in files:
        r = f.reader
        if r is None:
            continue
        have = tuple(p for p in request.columns or () if not r.missing_paths([p]))
        out[f.url] = r.plan_now(request.but(columns=have)) if have else None
    return out


def _superdb_part(fs: P.FileScan, lf: LoadedFile, budget: int, cost: int,
                  conj: Any = None) -> tuple[tuple[FilePart, int], int]:
    """A SuperDB file's part (its weight: its plan's reads) and the bytes shipped with it:
    a v23 file's metadata, and the data the driver holds when within ``budget``, so the
    task's reader opens with no request (older versions: the task opens the file); the
    objects whose min/max rule the pushed filters' conjunction ``conj`` out are left to
    no task (``FilePart.objects``)."""
    r, plan = lf.reader, fs.plan
    held = r.held_ranges(plan, budget)
    size = sum(len(b) for _, b in held or ())
    if held is not None and size > budget:  # the metadata alone
        held = r.held_ranges(plan, 0)
        size = sum(len(b) for _, b in held or ())
    keep = _kept_objects(lf.meta, conj) if held is not None else None
    rows = lf.meta.row_count if keep is None else sum(lf.meta.objects[i].length for i in keep)
    part = FilePart(fs.name, None if held is not None else lf.meta,  # type: ignore[arg-type]
                    lf.tail.info.version, None, rows, whole=True, held=held,
                    size=lf.tail.info.size, objects=keep)
    return (part, plan.bytes_to_read + cost * plan.request_count), size


def _kept_objects(meta: Any, conj: Any) -> tuple[int, ...] | None:
    """The objects of a SuperDB file whose min/max do not prove ``conj`` false (None:
    every one, or no conjunction)."""
    if conj is None:
        return None
    from planner.filters import Truth

    from ..scan.superdb.pruning import object_truths, typed_filter

    typed = typed_filter(meta, conj)
    if typed is None:
        return None
    keep = tuple(i for i, t in enumerate(object_truths(meta.objects, typed))
                 if t is not Truth.FALSE)
    return None if len(keep) == len(meta.objects) else keep


def _check_plan_budget(settings: Settings, report: dict[str, Any], files: int,
                       partitions: int) -> None:
    """A BudgetError on the driver when the plan's requests or bytes pass the query's
    budget: every task's requests are in the plan, so the query is refused before any
    task runs."""
    if settings.max_requests is None and settings.max_bytes is None:
        return

    check_budget(report["requests"], report["bytes_to_read"], settings.max_requests,
                 settings.max_bytes, None,
                 f"on the driver, before any task ran ({files:,} files to read in "
                 f"{partitions:,} partitions)")


def plan_read(loaded: Loaded, columns: Sequence[tuple[str, str]], filters: Sequence[Any],
              settings: Settings) -> ReadPlan:
    """Prune, plan and pack (the module docstring says how)."""
    t0 = time.perf_counter()
    files = loaded.files
    name_to_path = dict(columns)
    request = task_request(settings, columns)
    paths = list(request.columns or ())
    decided: list[Any] = []
    if loaded.partitions is not None:  # their files were pruned before loading (listing)
        from .partition_filters import split

        _, decided, filters = split(filters, {c.name: c.type for c in loaded.partitions.columns})
    if filters:
        kept_idx, reasons, remaining = decide(filters, [f.meta for f in files], name_to_path)
    else:
        kept_idx, reasons, remaining = list(range(len(files))), [None] * len(files), []
    pruned: list[dict[str, str]] = [
        {"file": redact_url(u), "reason": "partition filter"} for u in loaded.partition_pruned]
    pruned += [{"file": redact_url(f.url), "reason": f"filter: {r}"}
               for f, r in zip(files, reasons, strict=True) if r is not None]
    kept = [files[i] for i in kept_idx]
    by_url = {f.url: f for f in kept}
    profile = loaded.profile
    whole: list[P.WholeFile] = []
    if paths:
        entries = [(f.url, f.meta, (f.tail.offset, len(f.tail.data))) for f in kept]
        mp = P.plan_files(entries, paths, profile, target_task_bytes=None,
                          planned=_own_plans(kept, request))
        scans, nothing, cost = list(mp.files), list(mp.pruned), mp.request_cost
        whole = list(mp.whole)
    else:  # no columns (count only): every file is its row count
        scans, cost = [], profile.breakeven
        nothing = [P.PrunedFile(f.url, P.NO_REQUESTED_PATH, f.meta.row_count) for f in kept]
    floor, cost = cost, max(1, cost // settings.file_concurrency)
    parts, shipped = _scan_parts(scans, by_url, paths, profile, settings.ship_tail_bytes,
                                 cost, conjunction(filters, name_to_path) if filters else None)
    for wf in whole:  # the executor opens and reads it (its reader's own scan)
        lf = by_url[wf.name]
        parts.append((FilePart(wf.name, lf.meta, lf.tail.info.version, None, wf.rows,
                               whole=True), wf.size + cost))
    null_files = 0
    for pf in nothing:
        lf = by_url[pf.name]
        if pf.reason == P.NO_ROWS:
            pruned.append({"file": redact_url(pf.name), "reason": P.NO_ROWS})
            continue
        null_files += 1
        weight = (pf.rows or 0) * max(len(paths), 1) + (cost if pf.rows is None else 0)
        parts.append((FilePart(pf.name, lf.meta, lf.tail.info.version, None, pf.rows), weight))
    cols = tuple(columns)
    packing = _pack_by_values(parts, floor, settings, loaded)
    target = packing.target
    partitions = [CsupPartition(i, tuple(parts[u][0] for u in t.units), cols, t.key or (),
                                request) for i, t in enumerate(packing.tasks)]
    reads = [fp.plan for fp, _ in parts if fp.plan is not None]
    reads += [fs.plan for fs in scans if by_url[fs.name].reader is not None]
    reasons_count = Counter(p["reason"].split(":")[0] for p in pruned)
    report = {
        "paths": [redact_url(p) for p in settings.paths],
        "planned_on": "driver",
        "files_listed": len(files) + len(loaded.partition_pruned),
        "metadata_requests": loaded.metadata_requests,
        "metadata_seconds": round(loaded.seconds, 4),
        "files_pruned": len(pruned),
        "pruned_by": dict(reasons_count),
        "files_null_rows": null_files,
        "files_read": len(reads) + len(whole),
        "objects_pruned": sum(len(by_url[fp.url].meta.objects) - len(fp.objects)
                              for fp, _ in parts if fp.objects is not None),
        "files_read_whole": len(whole),
        "partitions": len(partitions),
        "target_partition_bytes": target,
        "requests": sum(p.request_count for p in reads),
        "bytes_to_read": sum(p.bytes_to_read for p in reads),
        "bytes_shipped": shipped,
        "columns": [n for n, _ in columns],
        "pushed_filters": [describe(f) for f in decided + list(filters)],
        "filters_for_spark": [describe(f) for f in remaining],
        "planning_seconds": round(time.perf_counter() - t0, 4),
        "pruned_files": pruned[:1000],
    }
    _check_plan_budget(settings, report, len(reads), len(partitions))
    log.info("csup plan: %d files, %d pruned, %d partitions, %d requests, %d bytes",
             len(files), len(pruned), len(partitions), report["requests"],
             report["bytes_to_read"])
    if settings.plan_report:
        write_report(settings.plan_report, report)
    return ReadPlan(partitions, list(remaining), report)


def _pack_by_values(parts: list[tuple[FilePart, int]], floor: int, settings: Settings,
                    loaded: Loaded) -> Packing:
    """Files packed in order, nearest the target (a file joins the open partition unless
    more than half of it would land past the target, so equal files split evenly), within
    each set of files that share partition values, so a Spark partition has one value per
    partition column (the executor adds them as constants)."""
    keys: dict[str, tuple[tuple[str, Any], ...]] = {}
    if loaded.partitions is not None:
        names = loaded.partitions.names
        keys = {f.url: tuple(zip(names, vals, strict=True))
                for f, vals in zip(loaded.files, loaded.partitions.values, strict=True)}
    units = [Unit(w, key=keys.get(fp.url, ())) for fp, w in parts]
    return pack(units, Target(settings.target_partition_bytes, rule=NEAREST,
                              min_tasks=settings.min_partitions, floor=floor))


def write_report(path: str, report: dict[str, Any]) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)
