"""A pool at a branch or commit: its live objects, scans in key order, and loads."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import planner as P
from planner.filters import Expr

from ..model.errors import AccessDeniedError, CsupError, NotFoundError
from ..model.types import Type
from ..readers.reader import ScanResult
from . import ksuid as K
from .commits import DataObject, PoolState
from .filter import PoolFilter, filter_columns, is_expr, pool_filter
from .keys import KeyRange
from .objects import gather_all
from .plan import CSUP_MIN_OBJECT, ScanPlan, csup_usable, ordered, plan_scan, seek_index

if TYPE_CHECKING:
    from .config import PoolConfig
    from .objects import LakeHandle
    from .read import PoolRead
    from .source import PoolSource

__all__ = ["Pool", "FilterArg"]

#: What ``filter=`` takes: a filter of the common model (``col("ts") >= x``, or its
#: text form ``"ts >= 5 and kind = 'a'"``), a KeyRange, ``(lo, hi)`` (inclusive,
#: either None), comparisons of the pool key ``[("ts", ">=", x), ...]``, or a
#: PoolFilter already resolved (``resolve_filter``'s answer).
FilterArg = (Expr | str | KeyRange | tuple[Any, Any] | Sequence[tuple[str, str, Any]]
             | PoolFilter | None)


class Pool:
    """Pool ``config`` at ``commit`` (reached from ``branch``, or named directly)."""

    def __init__(self, lake: LakeHandle, config: PoolConfig, branch: str | None, commit: bytes,
                 state: PoolState, journal_id: int | None) -> None:
        self.lake = lake
        self.config = config
        self.branch = branch
        self.commit = commit
        self.state = state
        self.journal_id = journal_id
        self._csup_present: bool | None = None

    async def has_csup(self) -> bool:
        """Whether this pool's objects have ``.csup`` copies (probed once, on one object:
        a loader writes them for all of its objects or none)."""
        if self._csup_present is None and self.state.vectors:
            self._csup_present = True  # Zed's vector commits say which objects have one
        if self._csup_present is None:
            objs = self.objects
            if not objs:
                return False
            io = self.lake.io
            try:
                await io.store.info(io.key(f"{self.config.id_str}/data/{objs[0].name}.csup"))
                self._csup_present = True
            except (NotFoundError, AccessDeniedError):  # (S3 without ListBucket: 403)
                self._csup_present = False
            io.requests += 1
        return self._csup_present

    async def _use_csup(self, csup: bool | None, cols: list[str] | None) -> bool | None:
        """True (use copies), None (auto: large objects), False (never)."""
        if csup is False or not csup_usable(cols):
            return False
        if csup:
            return True
        if not any(o.size >= CSUP_MIN_OBJECT for o in self.state.objects.values()):
            return False
        return None if await self.has_csup() else False

    def __repr__(self) -> str:
        at = self.branch or K.to_str(self.commit)
        return (f"Pool({self.config.name}@{at}, key={self.config.key_name} "
                f"{self.config.order}, {len(self.state.objects)} objects)")

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def commit_id(self) -> str:
        return K.to_str(self.commit)

    @property
    def objects(self) -> list[DataObject]:
        """Live data objects in Zed's listing order (by key span)."""
        return ordered(list(self.state.objects.values()), self.config.order)

    def has_vector(self, o: DataObject) -> bool:
        return o.id in self.state.vectors

    @property
    def key_type(self) -> Type | None:
        """The pool key's type, as the objects' minimums have it (None: no object)."""
        return next((o.min.type for o in self.state.objects.values() if o.min is not None),
                    None)

    def resolve_filter(self, filter: FilterArg = None,
                       key_range: tuple[Any, Any] | None = None) -> PoolFilter:
        """A ``filter``/``key_range`` argument (see FilterArg) as the expression to
        evaluate on the rows (None: the key range alone is exact) and the key range."""
        if isinstance(filter, PoolFilter) and key_range is None:
            return filter
        r = KeyRange()
        expr: Any = None
        for f in (filter, key_range):
            if f is None:
                continue
            if isinstance(f, str) or is_expr(f):
                pf = pool_filter(f, self.config.key, self.key_type)
                expr, r2 = pf.expr, pf.key_range
            elif isinstance(f, KeyRange):
                r2 = f
            elif isinstance(f, tuple) and len(f) == 2 and not _is_comparison(f):
                r2 = KeyRange.between(*f)
            elif isinstance(f, (list, tuple)):
                comps = [f] if _is_comparison(f) else list(f)
                r2 = KeyRange.from_comparisons(self.config.key_name, comps)
            else:
                raise CsupError(f"filter must be a filter expression (col(...) or its text), "
                                f"a KeyRange, (lo, hi) or a list of (key, op, value) "
                                f"comparisons, not {type(f).__name__}")
            r = r.narrow(r2.lo, r2.hi, r2.lo_inclusive, r2.hi_inclusive)
        return PoolFilter(expr, r)

    def key_range(self, filter: FilterArg = None, key_range: tuple[Any, Any] | None = None
                  ) -> KeyRange:
        """The key range a ``filter``/``key_range`` argument allows (see FilterArg)."""
        return self.resolve_filter(filter, key_range).key_range

    async def plan(self, filter: FilterArg = None, *, key_range: tuple[Any, Any] | None = None,
                   profile: str | None = None) -> ScanPlan:
        """Which objects a scan reads and which byte ranges of each (metadata only);
        ``profile``: the planner profile that coalesces them (default: the store's)."""
        kr = self.key_range(filter, key_range)
        return await plan_scan(self.lake.io, self.config.id_str,
                               list(self.state.objects.values()), self.config.order, kr,
                               profile=profile)

    async def source(self, filter: FilterArg = None, *,
                     key_range: tuple[Any, Any] | None = None,
                     profile: str | None = None) -> PoolSource:
        """The objects a scan reads (URLs, sizes, key spans, byte ranges, columnar
        copies) and its whole filter in the common filter model (metadata only); any
        reader can read them: see ``csup_async.lake.source``."""
        return await self._source(self.resolve_filter(filter, key_range), profile)

    async def _source(self, pf: PoolFilter, profile: str | P.Profile | None = None,
                      columnar: bool = True) -> PoolSource:
        """The source of a scan with ``pf`` (``columnar`` False: its columnar copies
        are not looked for, which may take a request)."""
        from .source import pool_source

        plan = await self.plan(pf.key_range, profile=profile)
        copies: dict[bytes, str] = {}
        if columnar:
            for r in plan.reads:
                if r.object.id in self.state.vectors:
                    copies[r.object.id] = ".vng"
            if len(copies) < len(plan.reads) and await self.has_csup():
                for r in plan.reads:
                    copies.setdefault(r.object.id, ".csup")
        return pool_source(self, plan, pf.expr, self.lake.url, copies)

    async def explain(self, filter: FilterArg = None, *,
                      key_range: tuple[Any, Any] | None = None) -> dict[str, Any]:
        plan = await self.plan(filter, key_range=key_range)
        d = plan.describe()
        d = {"pool": self.config.name, "branch": self.branch, "commit": self.commit_id,
             "key": self.config.key_name, **d}
        return d

    async def _read(self, columns: Sequence[str] | str | None, filter: FilterArg,
                    key_range: tuple[Any, Any] | None, csup: bool | None,
                    profile: str | P.Profile | None = None) -> PoolRead:
        """The read of a scan: its source, and how each kept object is opened."""
        from planner.request import ScanRequest

        from .read import PoolRead

        pf = self.resolve_filter(filter, key_range)
        cols = _columns(columns)
        request = ScanRequest.parse(cols, filter=pf.expr)  # the scan's, parsed once here
        use = await self._use_csup(csup, _read_columns(cols, pf))
        src = await self._source(pf, profile, columnar=use is not False)
        columnar: bool | frozenset[str] = use if use is not None else frozenset(
            o.id for o in src.objects if o.size >= CSUP_MIN_OBJECT)
        return PoolRead(self.lake.io, self.config.id_str, src, request, columnar=columnar,
                        profile=profile)

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           filter: FilterArg = None, key_range: tuple[Any, Any] | None = None,
                           csup: bool | None = None) -> AsyncIterator[ScanResult]:
        """One ScanResult per group of overlapping objects, in pool-key order."""
        read = await self._read(columns, filter, key_range, csup)
        for g in read.source.groups:
            t0 = time.perf_counter()
            res = await read.read_group(g)
            res.stats.wall = time.perf_counter() - t0
            yield res

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: FilterArg = None, key_range: tuple[Any, Any] | None = None,
                   csup: bool | None = None, profile: str | None = None) -> ScanResult:
        """All rows the filter keeps, in pool-key order; ``columns`` None: every field.

        ``filter``: see FilterArg.  Its comparisons of the pool key narrow what is
        read; the whole filter is evaluated on the rows (SQL semantics, as
        ``Reader.scan``).  The kept objects are read as the fragments of one dataset
        (``csup_async.lake.read``).

        ``csup``: True reads whole objects from their ``.csup`` copies, or the ``.vng``
        copies ``zed vector add`` made (only the columns asked for, top-level fields);
        None (default) does so for objects of 1 MiB or more when the pool has copies;
        False never.  Objects narrowed by
        the seek index are read as ``.zng`` ranges either way (a CSUP object has no
        seek index).  ``profile``: the planner profile whose coalescing makes the
        requests (default: the store's)."""
        t0 = time.perf_counter()
        io = self.lake.io
        r0, b0 = io.requests, io.bytes_read
        read = await self._read(columns, filter, key_range, csup, profile)
        res = await read.read()
        res.stats.requests = io.requests - r0
        res.stats.bytes_read = io.bytes_read - b0
        res.stats.wall = time.perf_counter() - t0
        return res

    async def count_rows(self, filter: FilterArg = None, *,
                         key_range: tuple[Any, Any] | None = None) -> int:
        """Rows the filter keeps (from commit metadata alone when there is no filter)."""
        pf = self.resolve_filter(filter, key_range)
        if pf.key_range.unbounded and pf.expr is None:
            return sum(o.count for o in self.state.objects.values())
        res = await self.scan([self.config.key_name], filter=filter, key_range=key_range)
        return res.num_rows

    async def sample_types(self, n: int) -> list[Type]:
        """The record types of the first seek-index chunk of up to ``n`` objects spread
        over the pool (what a schema is inferred from; one chunk read per object)."""
        from .read import first_chunk_types

        objs = self.objects
        picked = objs[::max(1, len(objs) // max(n, 1))][:n]
        io, pdir = self.lake.io, self.config.id_str

        async def one(o: DataObject) -> list[Type]:
            entries = await seek_index(io, pdir, o)
            run = (entries[0].offset, entries[0].length) if entries else (0, o.size)
            return await first_chunk_types(io, pdir, o.name, run)

        return [t for ts in await gather_all([one(o) for o in picked]) for t in ts]

    async def load(self, data: Any, *, message: str = "", author: str = "",
                   csup: bool = False, target: str | None = None) -> str:
        """Commit ``data`` (rows as dicts or typed Values) to this pool's branch; returns
        the new commit ID.  ``target`` (:mod:`csup_async.targets`): the layout of the
        ``csup=True`` copy (default: the lake's).  See ``csup_async.lake.load``."""
        from .load import load

        if self.branch is None:
            raise CsupError("load needs a branch, not a commit: open the pool as "
                            "'name@branch'")
        return await load(self.lake, self.config, self.branch, data, message=message,
                          author=author, csup=csup, target=target)


def _is_comparison(f: Any) -> bool:
    return (isinstance(f, tuple) and len(f) == 3 and isinstance(f[0], str)
            and isinstance(f[1], str) and f[1] in ("==", "=", "<", "<=", ">", ">="))


def _read_columns(cols: list[str] | None, pf: PoolFilter) -> list[str] | None:
    """The columns to read: those asked for and those the filter reads (None: all)."""
    if cols is None or pf.expr is None:
        return cols
    return list(dict.fromkeys([*cols, *filter_columns(pf.expr)]))


def _columns(columns: Sequence[str] | str | None) -> list[str] | None:
    if columns is None:
        return None
    cols = columns.split(",") if isinstance(columns, str) else list(columns)
    return [c for c in cols if c] or None
