"""The one packer of work into tasks: units of work in, tasks (lists of unit indices) out.

Every caller that hands work to parallel workers packs through :func:`pack`:

* :func:`planner.plan_files` (the Dataset's ``plan``): files, or with
  ``split_files`` the requests of files, into tasks of ``target_task_bytes``;
* the Spark source planned on the driver (``spark/planning.py``): files into
  partitions of ``targetPartitionBytes``, one set of Hive partition values per
  partition;
* the Spark source planned on executors (``spark/scaleout.py``): unopened URLs,
  all of one estimated weight, spread evenly;
* Spark reads of a lake pool (``spark/lake.py``): groups of overlapping objects.

A :class:`Unit` is the smallest piece a task takes whole (a file, a request, a
group of objects): its ``weight`` is its work in bytes-equivalent (bytes to read
plus a byte price per round trip, as the caller's cost model says), ``rows`` the
rows it yields, ``key`` a label two units must share to land in one task (Hive
partition values: an executor adds them as constants, one value per task).

Units of one key are packed in the order given (a caller that needs locality
or row order keeps it); keys are packed in the order they first appear.  How a
unit is placed (:data:`FIT`, :data:`NEAREST`, :data:`EVEN`) is the caller's
choice in its :class:`Target`; in every rule a task is never empty, a unit is
never split, and a unit of weight 0 joins the open task (it costs nothing) unless
the row target forbids.  :data:`EVEN` uses the row target only to choose how many
tasks to make.

Why the target moves: ``min_tasks`` lowers it until the work makes that many
tasks (every core gets a share), but never below ``floor`` (splitting work
smaller than one round trip's worth costs more than it saves).  The target
used is returned in :attr:`Packing.target`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from .errors import ProfileError

#: a unit joins the open task only if the task stays within the target
FIT = "fit"
#: a unit joins the open task unless more than half of it would land past the target
#: (equal units then split evenly, and tasks come out nearest the target)
NEAREST = "nearest"
#: as many tasks as the target needs, cut where the running weight crosses equal shares
#: (equal units make tasks whose unit counts differ by at most one)
EVEN = "even"
RULES = (FIT, NEAREST, EVEN)


@dataclass(frozen=True, slots=True)
class Unit:
    """One piece of work a task takes whole."""

    weight: int
    rows: int = 0
    key: Hashable = None


@dataclass(frozen=True, slots=True)
class Target:
    """How big a task should be, and how a unit at the boundary is placed."""

    bytes: int
    rows: int | None = None  # at most this many rows per task (None: no row target)
    rule: str = FIT
    min_tasks: int = 1
    floor: int = 1

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ProfileError(f"packing rule {self.rule!r} is not one of {', '.join(RULES)}")
        if self.bytes < 1 or (self.rows is not None and self.rows < 1):
            raise ProfileError(f"a task target must be >= 1 (bytes={self.bytes}, "
                               f"rows={self.rows})")


@dataclass(frozen=True, slots=True)
class Packed:
    """One task: the indices of its units (into the caller's list), in the order given."""

    units: tuple[int, ...]
    weight: int
    rows: int
    key: Hashable = None


@dataclass(frozen=True, slots=True)
class Packing:
    tasks: tuple[Packed, ...]
    target: int  # the byte target used (after ``min_tasks`` and ``floor``)


def spread(total: int, target: int, min_tasks: int = 1, floor: int = 1) -> int:
    """``target`` lowered so ``total`` makes about ``min_tasks`` tasks, not below ``floor``."""
    return max(1, min(target, max(floor, math.ceil(total / max(min_tasks, 1)))))


def pack(units: Sequence[Unit], target: Target) -> Packing:
    """Pack ``units`` into tasks (the module docstring says how); deterministic."""
    total = sum(u.weight for u in units)
    size = spread(total, target.bytes, target.min_tasks, target.floor)
    runs: dict[Hashable, list[int]] = {}
    for i, u in enumerate(units):
        runs.setdefault(u.key, []).append(i)
    tasks: list[Packed] = []
    for key, idx in runs.items():
        if target.rule == EVEN:
            tasks += _even(units, idx, size, target.rows, key)
        else:
            tasks += _greedy(units, idx, size, target.rows, target.rule == NEAREST, key)
    return Packing(tuple(tasks), size)


def _greedy(units: Sequence[Unit], idx: list[int], size: int, max_rows: int | None,
            nearest: bool, key: Hashable) -> list[Packed]:
    out: list[Packed] = []
    cur: list[int] = []
    weight = rows = 0
    for i in idx:
        u = units[i]
        if cur and ((u.weight > 0 and (2 * weight + u.weight > 2 * size if nearest
                                       else weight + u.weight > size))
                    or (max_rows is not None and rows + u.rows > max_rows)):
            out.append(Packed(tuple(cur), weight, rows, key))
            cur, weight, rows = [], 0, 0
        cur.append(i)
        weight += u.weight
        rows += u.rows
    if cur:
        out.append(Packed(tuple(cur), weight, rows, key))
    return out


def _even(units: Sequence[Unit], idx: list[int], size: int, max_rows: int | None,
          key: Hashable) -> list[Packed]:
    weights = [units[i].weight for i in idx]
    total = sum(weights)
    k = math.ceil(total / size)
    if max_rows is not None:
        k = max(k, math.ceil(sum(units[i].rows for i in idx) / max_rows))
    k = max(1, min(k, len(idx)))
    out: list[Packed] = []
    start, run, share = 0, 0, 1
    for pos, w in enumerate(weights):
        run += w
        # cut after this unit once the running weight reaches the next equal share
        # (with every weight 0, by count instead)
        reached = (run * k >= share * total) if total else ((pos + 1) * k >= share * len(idx))
        if reached and share < k and pos + 1 < len(idx):
            out.append(_packed(units, idx[start:pos + 1], key))
            start = pos + 1
            while share < k and ((run * k >= share * total) if total
                                 else ((pos + 1) * k >= share * len(idx))):
                share += 1
    out.append(_packed(units, idx[start:], key))
    return out


def _packed(units: Sequence[Unit], idx: list[int], key: Hashable) -> Packed:
    return Packed(tuple(idx), sum(units[i].weight for i in idx),
                  sum(units[i].rows for i in idx), key)
