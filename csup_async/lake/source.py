"""A pool as a source: the objects a branch (or commit) holds and what to read of each.

``Pool.source(filter=)`` resolves the branch and journal position to the live data
objects, drops those the key range rules out by their min/max, narrows the others to
seek-index byte ranges, and states the whole filter in the common filter model (the
key range as comparisons of the key column, ANDed with the caller's filter), so any
reader can be handed the objects and the filter: ``open_dataset([o.columnar for o in
source.objects], filter=source.filter)`` reads the columnar copies as any other
CSUP/VNG files.  Nothing here reads data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.filters import And, Expr

from ..model.values import Value
from .commits import DataObject
from .keys import KeyRange, display
from .plan import ScanPlan

__all__ = ["PoolSource", "SourceObject", "combine"]


@dataclass(frozen=True)
class SourceObject:
    """One kept data object: where it is, its key span and what of it to read."""

    id: str
    url: str  # the ``.zng`` (BSUP) object the commit names
    size: int
    count: int
    min: Any  # the key span as people read it (times as ISO strings)
    max: Any
    runs: tuple[tuple[int, int], ...] | None  # seek-index chunk runs (None: all of it)
    requests: tuple[tuple[int, int], ...] | None  # the planner's requests for the runs
    columnar: str | None  # its ``.vng`` (Zed's vector copy) or ``.csup`` copy, if any
    key_min: Value | None = field(default=None, repr=False)  # the span as typed values
    key_max: Value | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PoolSource:
    """What a scan of a pool reads, and the filter every row must pass."""

    pool: str
    branch: str | None
    commit: str
    journal_id: int | None
    key: tuple[str, ...]
    order: str
    key_range: KeyRange
    filter: Expr | None  # the key range and the caller's filter, in the common model
    objects: tuple[SourceObject, ...]  # kept, in Zed's listing order
    groups: tuple[tuple[int, ...], ...]  # indexes into objects: runs whose spans overlap
    pruned: tuple[tuple[str, str], ...]  # (object ID, "min/max" or "seek index")

    @property
    def urls(self) -> list[str]:
        return [o.url for o in self.objects]

    @property
    def columnar_urls(self) -> list[str] | None:
        """Every kept object's columnar copy (None unless each has one)."""
        got = [o.columnar for o in self.objects]
        return None if any(u is None for u in got) else [u for u in got if u is not None]


def combine(*exprs: Expr | None) -> Expr | None:
    """The AND of the given filters (None: no filter)."""
    parts: dict[Expr, None] = {}  # a conjunct given twice is kept once
    for e in exprs:
        if e is not None:
            parts.update(dict.fromkeys(e.parts if isinstance(e, And) else (e,)))
    got = list(parts)
    return None if not got else got[0] if len(got) == 1 else And(tuple(got))


def pool_source(pool: Any, plan: ScanPlan, expr: Expr | None, base_url: str,
                copies: dict[bytes, str]) -> PoolSource:
    """The PoolSource of a planned scan of ``pool`` (``copies``: object ID to the
    suffix of its columnar copy)."""
    pdir = f"{base_url.rstrip('/')}/{pool.config.id_str}/data"
    index = {id(r): i for i, r in enumerate(plan.reads)}

    def obj(o: DataObject, runs: Any, requests: Any) -> SourceObject:
        suffix = copies.get(o.id)
        return SourceObject(o.name, f"{pdir}/{o.name}.zng", o.size, o.count, display(o.min),
                            display(o.max), None if runs is None else tuple(runs),
                            None if requests is None else tuple(requests),
                            None if suffix is None else f"{pdir}/{o.name}{suffix}",
                            o.min, o.max)

    key_filter = plan.key_range.to_filter(pool.config.key)
    return PoolSource(
        pool.config.name, pool.branch, pool.commit_id, pool.journal_id, pool.config.key,
        plan.order, plan.key_range, combine(key_filter, expr),
        tuple(obj(r.object, r.runs, r.ranges) for r in plan.reads),
        tuple(tuple(index[id(r)] for r in g) for g in plan.groups),
        tuple([(o.name, "min/max") for o in plan.pruned_by_range]
              + [(o.name, "seek index") for o in plan.pruned_by_seek]))
