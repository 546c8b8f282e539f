"""Many files: prune those that cannot contribute, plan the rest, pack reads into tasks.

Pruning (each pruned file is reported with its reason and row count):

* ``no rows``: the file holds no values.
* ``no requested path``: no super type has any requested path.
* ``all null``: every requested path that exists in the file is all null there
  (a field column that is None), so there is nothing to read.

A file whose metadata has no column index (a SuperDB header-layout CSUP file, a
BSUP stream: anything but a :class:`~csup_async.meta.FileMeta`) has no byte
ranges to plan here.  When its reader planned it (``planned``: a SuperDB file's
:class:`~planner.superdb.HeaderLayoutPlan`, the objects its min/max rule out
already left out) that plan is packed into tasks like ours; otherwise (a BSUP
stream) it is listed in ``MultiPlan.whole``, and its reader's own scan reads it
(the caller runs it; no task holds it).

The last two drop files whose rows would only produce nulls.  That is what a
scan of values wants; a consumer that must keep row counts (``count(*)``, or
null-filled rows) adds ``PrunedFile.rows`` nulls per pruned file (``rows`` is
None when only the super column could tell).

Packing (by :func:`.packing.pack`, the one packer, rule ``FIT``): tasks of
about ``target_task_bytes`` (Spark's
``spark.sql.files.maxPartitionBytes`` is 128 MB; we default to the same).
Each request weighs its length plus ``request_cost`` bytes, the
byte-equivalent of its first-byte latency (``profile.breakeven``; Spark's
``openCostInBytes`` plays the same role, 4 MB), so many tiny files are not
packed into one task that would spend its life waiting on round trips.
Files are taken in the given order and requests in offset order (locality);
a task never splits a request.  By default a task also never splits a
*file*: a column stream cannot be decoded without all of its segments, and
segments are not row-aligned across columns, so a part of a file's requests
is useless on its own.  ``split_files=True`` lifts that (tasks are then I/O
batches; ``TaskFile.complete`` says whether a task holds all of a file's
requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from csup_async.format.meta import FileMeta
from csup_async.model.errors import ColumnNotFoundError

from .coalescing import Request
from .errors import ProfileError
from .explain import count_of, human, more_lines, shown
from .packing import Target as PackTarget
from .packing import Unit, pack
from .plan import ScanPlan, plan_resolved
from .profiles import Profile, get_profile, with_amplification
from .projection import normalize_columns, resolve_parsed

DEFAULT_TARGET_TASK_BYTES = 128 * 1024 * 1024

NO_ROWS = "no rows"
NO_REQUESTED_PATH = "no requested path"
ALL_NULL = "all null"

FileEntry = tuple[str, FileMeta] | tuple[str, FileMeta, tuple[int, int] | None]


@dataclass(frozen=True, slots=True)
class FileScan:
    """One file that contributes, with its plan (which references its metadata)."""

    name: str
    plan: ScanPlan = field(repr=False)

    def __repr__(self) -> str:
        return f"FileScan(name={shown(self.name)!r})"

    @property
    def meta(self) -> FileMeta:
        """The file's metadata (a plan its own reader made, of a SuperDB file, has none
        here: None)."""
        return getattr(self.plan, "meta", None)  # type: ignore[return-value]

    @property
    def objects_pruned(self) -> int:
        """Objects of a SuperDB file its min/max ruled out (0 for ours: zones count
        in the plan)."""
        return int(getattr(self.plan, "pruned", 0) or 0)


@dataclass(frozen=True, slots=True)
class PrunedFile:
    name: str
    reason: str
    rows: int | None

    def __repr__(self) -> str:
        return f"PrunedFile(name={shown(self.name)!r}, reason={self.reason!r}, rows={self.rows})"


@dataclass(frozen=True, slots=True)
class WholeFile:
    """A file with no column index (SuperDB header layout, BSUP): its reader's own scan
    reads it; ``size`` is the object's bytes, ``rows`` its row count when known."""

    name: str
    rows: int | None
    size: int

    def __repr__(self) -> str:
        return f"WholeFile(name={shown(self.name)!r}, rows={self.rows})"


@dataclass(frozen=True, slots=True)
class TaskFile:
    """The requests of one file that one task reads (all of them unless ``split_files``)."""

    name: str
    plan: ScanPlan = field(repr=False)
    requests: tuple[Request, ...] = field(repr=False)
    complete: bool = True

    def __repr__(self) -> str:
        return f"TaskFile(name={shown(self.name)!r}, complete={self.complete})"

    @property
    def meta(self) -> FileMeta:
        """As :attr:`FileScan.meta` (None for a SuperDB file's own plan)."""
        return getattr(self.plan, "meta", None)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Task:
    index: int
    files: tuple[TaskFile, ...] = field(repr=False)
    bytes_to_read: int
    request_count: int


@dataclass(frozen=True, slots=True)
class MultiPlan:
    columns: tuple[str, ...] | None
    missing_paths: tuple[str, ...]
    bytes_needed: int
    bytes_to_read: int
    request_count: int
    target_task_bytes: int | None  # None: each file planned, none packed (tasks empty)
    request_cost: int
    profile: Profile
    files: tuple[FileScan, ...] = field(repr=False)
    tasks: tuple[Task, ...] = field(repr=False)
    pruned: tuple[PrunedFile, ...] = field(repr=False)
    #: files no byte plan covers (no column index), read by their readers' own scans
    whole: tuple[WholeFile, ...] = field(default=(), repr=False)

    @property
    def amplification(self) -> float:
        return self.bytes_to_read / self.bytes_needed if self.bytes_needed else 1.0

    @property
    def objects_pruned(self) -> int:
        """Objects of the files read (SuperDB's) that their min/max ruled out."""
        return sum(f.objects_pruned for f in self.files)

    def explain(self, limit: int = 20) -> str:
        return explain_multi(self, limit)


def plan_files(files: Iterable[FileEntry] | Mapping[str, FileMeta],
               columns: Iterable[str] | str | None = None, profile: str | Profile = "s3", *,
               target_task_bytes: int | None = DEFAULT_TARGET_TASK_BYTES,
               request_cost: int | None = None, split_files: bool = False,
               max_amplification: float | None = None, strict: bool = False,
               planned: Mapping[str, Any] | None = None) -> MultiPlan:
    """Plan a scan of many files' loaded metadata: prune, plan each file, pack into tasks.

    ``files`` holds ``(name, meta)`` or ``(name, meta, available)`` entries, or
    maps names to metadata.  ``strict`` raises :class:`ColumnNotFoundError`
    when a path exists in no file.  ``target_task_bytes=None`` plans each file and
    packs none (``tasks`` is empty): for a caller that packs its own units of work
    (Spark's partitions carry more than these plans) with :func:`.packing.pack`.
    ``planned`` maps a file without a column index to the plan its reader made
    (a SuperDB file's ``HeaderLayoutPlan``), which is then packed as ours.
    """
    prof = with_amplification(get_profile(profile), max_amplification)
    if target_task_bytes is not None and target_task_bytes < 1:
        raise ProfileError(f"target_task_bytes={target_task_bytes} must be >= 1")
    cost = prof.breakeven if request_cost is None else request_cost
    parsed = normalize_columns(columns)
    entries = files.items() if isinstance(files, Mapping) else files
    kept: list[FileScan] = []
    pruned: list[PrunedFile] = []
    whole: list[WholeFile] = []
    n_paths = len(parsed) if parsed is not None else 0
    seen = [False] * n_paths
    for entry in entries:
        name, meta = entry[0], entry[1]
        available = entry[2] if len(entry) > 2 else None  # type: ignore[misc]
        if not isinstance(meta, FileMeta):  # no column index: its reader scans it whole
            if parsed is not None:  # a path its super types have counts as found
                for k, (_, comps) in enumerate(parsed):
                    if not seen[k] and any(_has_path(t, comps) for t in meta.super_types):
                        seen[k] = True
            own = (planned or {}).get(name)
            if meta.row_count == 0:
                pruned.append(PrunedFile(name, NO_ROWS, 0))
            elif own is None and name in (planned or {}):  # its reader: nothing to read
                pruned.append(PrunedFile(name, NO_REQUESTED_PATH, meta.row_count))
            elif own is None:
                whole.append(WholeFile(name, meta.row_count, int(meta.object_size)))
            elif parsed is not None and len(own.missing_paths) == n_paths:
                pruned.append(PrunedFile(name, NO_REQUESTED_PATH, meta.row_count))
            else:
                kept.append(FileScan(name, own))
            continue
        res = resolve_parsed(meta, parsed)
        if parsed is not None:
            absent = set(res.missing_paths)
            for k, (spelling, _) in enumerate(parsed):
                if not seen[k] and spelling not in absent:
                    seen[k] = True
        rows = meta.row_count
        if rows == 0:
            pruned.append(PrunedFile(name, NO_ROWS, 0))
            continue
        if parsed is not None:
            if len(res.missing_paths) == n_paths:
                pruned.append(PrunedFile(name, NO_REQUESTED_PATH, rows))
                continue
            if len(res.missing_paths) + len(res.null_paths) == n_paths:
                pruned.append(PrunedFile(name, ALL_NULL, rows))
                continue
        kept.append(FileScan(name, plan_resolved(meta, res, prof, available)))
    missing = tuple(p for (p, _), s in zip(parsed or (), seen, strict=True) if not s)
    if strict and missing:
        raise ColumnNotFoundError(
            f"no file has column {', '.join(map(repr, missing))}")
    tasks = (_pack(kept, target_task_bytes, cost, split_files)
             if target_task_bytes is not None else ())
    return MultiPlan(
        columns=tuple(p for p, _ in parsed) if parsed is not None else None,
        missing_paths=missing,
        bytes_needed=sum(f.plan.bytes_needed for f in kept),
        bytes_to_read=sum(f.plan.bytes_to_read for f in kept),
        request_count=sum(f.plan.request_count for f in kept),
        target_task_bytes=target_task_bytes, request_cost=cost, profile=prof,
        files=tuple(kept), tasks=tasks, pruned=tuple(pruned), whole=tuple(whole),
    )


def _has_path(t: object, comps: tuple[str, ...]) -> bool:
    from .pruning import type_has_path

    return bool(type_has_path(t, comps))


def _pack(kept: list[FileScan], target: int, cost: int, split_files: bool) -> tuple[Task, ...]:
    """Files (or, with ``split_files``, their requests) packed by :func:`.packing.pack`."""
    units: list[Unit] = []
    # per unit: (file's index in kept, first request, stop request, bytes, requests)
    spans: list[tuple[int, int, int, int, int]] = []
    for k, fs in enumerate(kept):
        plan = fs.plan
        if not split_files or plan.request_count <= 1:
            units.append(Unit(plan.bytes_to_read + cost * plan.request_count))
            spans.append((k, 0, len(plan.requests), plan.bytes_to_read, plan.request_count))
            continue
        for j, r in enumerate(plan.requests):  # a served request costs nothing: weight 0
            units.append(Unit(0 if r.served else r.length + cost))
            spans.append((k, j, j + 1, 0 if r.served else r.length, 0 if r.served else 1))
    tasks: list[Task] = []
    for t in pack(units, PackTarget(target)).tasks:
        files: list[TaskFile] = []
        nbytes = count = 0
        i = 0
        while i < len(t.units):  # a file's consecutive units become one TaskFile
            k, lo, hi, b, c = spans[t.units[i]]
            i += 1
            while i < len(t.units) and spans[t.units[i]][0] == k:
                _, _, hi, b2, c2 = spans[t.units[i]]
                b, c, i = b + b2, c + c2, i + 1
            plan = kept[k].plan
            files.append(TaskFile(kept[k].name, plan, plan.requests[lo:hi],
                                  hi - lo == len(plan.requests)))
            nbytes, count = nbytes + b, count + c
        tasks.append(Task(len(tasks), tuple(files), nbytes, count))
    return tuple(tasks)


def explain_multi(mp: MultiPlan, limit: int = 20) -> str:
    p = mp.profile
    n_tasks = len(mp.tasks)
    size = (f" of {human(mp.bytes_needed / n_tasks)} on average (target "
            f"{human(mp.target_task_bytes or 0)})" if n_tasks else "")
    out = [
        f"multi-file plan (profile {p.name}): {count_of(len(mp.files), 'file')} to read, "
        f"{len(mp.pruned):,} pruned, {count_of(n_tasks, 'task')}{size}"
        + (f"; {count_of(len(mp.whole), 'file')} read by their own readers"
           if mp.whole else ""),
        "columns: " + ("all" if mp.columns is None
                       else ", ".join(c or '""' for c in mp.columns)),
    ]
    if mp.missing_paths:
        out.append("missing in every file: " + ", ".join(mp.missing_paths))
    amp = (f"amplification {mp.amplification:.3f}x" if mp.bytes_to_read >= mp.bytes_needed
           else "the tail reads held " + ("them" if not mp.bytes_to_read else "the rest"))
    out.append(f"requests: {mp.request_count:,}, {human(mp.bytes_to_read)} to read for "
               f"{human(mp.bytes_needed)} needed ({amp})")
    if mp.objects_pruned:
        out.append(f"objects ruled out by their min/max (SuperDB files): "
                   f"{mp.objects_pruned:,}")
    out.append("tasks:")
    for t in mp.tasks[:limit]:
        names = ", ".join(shown(f.name) for f in t.files[:3])
        if len(t.files) > 3:
            names += f", ... ({len(t.files):,} files)"
        out.append(f"    task {t.index:<5} {count_of(t.request_count, 'request'):>15} "
                   f"{human(t.bytes_to_read):>10}  {names}")
    out += more_lines(limit, len(mp.tasks), "tasks")
    if mp.whole:
        out.append("read whole (no column index: SuperDB header layout or BSUP):")
        out.extend(f"    {shown(f.name)}: {human(f.size)}"
                   + (f", {f.rows:,} rows" if f.rows is not None else "")
                   for f in mp.whole[:limit])
        out += more_lines(limit, len(mp.whole), "files read whole")
    if mp.pruned:
        out.append("pruned:")
        out.extend(f"    {shown(f.name)}: {f.reason}" for f in mp.pruned[:limit])
        out += more_lines(limit, len(mp.pruned), "pruned files")
    return "\n".join(out)
