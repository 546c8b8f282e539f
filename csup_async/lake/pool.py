"""A pool at a branch or commit: its live objects, scans in key order, and loads."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from planner.filters import Expr

from .. import arrays as A
from ..bsup.columns import Part, build_column, part_column
from ..errors import CsupError
from ..reader import ScanResult, ScanStats
from ..types import NULL, RecordType, Type, underlying
from . import ksuid as K
from .commits import DataObject, PoolState
from .filter import PoolFilter, filter_columns, is_expr, keep_matching, pool_filter
from .keys import KeyRange
from .scan import Row, ScanPlan, plan_scan, read_group_parts

if TYPE_CHECKING:
    from .config import PoolConfig
    from .objects import LakeHandle
    from .source import PoolSource

__all__ = ["Pool", "FilterArg"]

#: What ``filter=`` takes: a filter of the common model (``col("ts") >= x``, or its
#: text form ``"ts >= 5 and kind = 'a'"``), a KeyRange, ``(lo, hi)`` (inclusive,
#: either None), or comparisons of the pool key ``[("ts", ">=", x), ...]``.
FilterArg = Expr | str | KeyRange | tuple[Any, Any] | Sequence[tuple[str, str, Any]] | None


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
            from ..errors import AccessDeniedError, NotFoundError

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
        from .scan import CSUP_MIN_OBJECT, csup_usable

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
        from .scan import ordered

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
        from .source import pool_source

        pf = self.resolve_filter(filter, key_range)
        plan = await self.plan(pf.key_range, profile=profile)
        copies: dict[bytes, str] = {}
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

    async def iter_batches(self, columns: Sequence[str] | str | None = None, *,
                           filter: FilterArg = None, key_range: tuple[Any, Any] | None = None,
                           csup: bool | None = None) -> AsyncIterator[ScanResult]:
        """One ScanResult per group of overlapping objects, in pool-key order."""
        pf = self.resolve_filter(filter, key_range)
        plan = await self.plan(pf.key_range)
        cols = _columns(columns)
        read_cols = _read_columns(cols, pf)
        use_csup = await self._use_csup(csup, read_cols)
        io = self.lake.io
        for g in plan.groups:
            r0, b0 = io.requests, io.bytes_read
            t0 = time.perf_counter()
            rows = await read_group_parts(io, self.config.id_str, g, self.config.key,
                                           plan.key_range, self.config.order, read_cols,
                                           use_csup, self.state.vectors)
            stats = ScanStats(requests=io.requests - r0, bytes_read=io.bytes_read - b0,
                              bytes_needed=sum(r.bytes for r in g),
                              wall=time.perf_counter() - t0)
            yield _filtered([rows], cols, read_cols, pf, stats, plan)

    async def scan(self, columns: Sequence[str] | str | None = None, *,
                   filter: FilterArg = None, key_range: tuple[Any, Any] | None = None,
                   csup: bool | None = None, profile: str | None = None) -> ScanResult:
        """All rows the filter keeps, in pool-key order; ``columns`` None: every field.

        ``filter``: see FilterArg.  Its comparisons of the pool key narrow what is
        read; the whole filter is evaluated on the rows (SQL semantics, as
        ``Reader.scan``).

        ``csup``: True reads whole objects from their ``.csup`` copies, or the ``.vng``
        copies ``zed vector add`` made (only the columns asked for, top-level fields);
        None (default) does so for objects of 1 MiB or more when the pool has copies;
        False never.  Objects narrowed by
        the seek index are read as ``.zng`` ranges either way (a CSUP object has no
        seek index).  ``profile``: the planner profile whose coalescing makes the
        requests (default: the store's)."""
        from .objects import gather_all

        t0 = time.perf_counter()
        io = self.lake.io
        r0, b0 = io.requests, io.bytes_read
        pf = self.resolve_filter(filter, key_range)
        plan = await self.plan(pf.key_range, profile=profile)
        cols = _columns(columns)
        read_cols = _read_columns(cols, pf)
        use_csup = await self._use_csup(csup, read_cols)
        parts = await gather_all([read_group_parts(io, self.config.id_str, g, self.config.key,
                                                   plan.key_range, self.config.order,
                                                   read_cols, use_csup, self.state.vectors)
                                  for g in plan.groups])
        stats = ScanStats(requests=io.requests - r0, bytes_read=io.bytes_read - b0,
                          bytes_needed=plan.bytes_to_read, wall=time.perf_counter() - t0)
        return _filtered(parts, cols, read_cols, pf, stats, plan)

    async def count_rows(self, filter: FilterArg = None, *,
                         key_range: tuple[Any, Any] | None = None) -> int:
        """Rows the filter keeps (from commit metadata alone when there is no filter)."""
        pf = self.resolve_filter(filter, key_range)
        if pf.key_range.unbounded and pf.expr is None:
            return sum(o.count for o in self.state.objects.values())
        res = await self.scan([self.config.key_name], filter=filter, key_range=key_range)
        return res.num_rows

    async def load(self, data: Any, *, message: str = "", author: str = "",
                   csup: bool = False) -> str:
        """Commit ``data`` (rows as dicts or typed Values) to this pool's branch; returns
        the new commit ID.  See ``csup_async.lake.load``."""
        from .load import load

        if self.branch is None:
            raise CsupError("load needs a branch, not a commit: open the pool as "
                            "'name@branch'")
        return await load(self.lake, self.config, self.branch, data, message=message,
                          author=author, csup=csup)


def _is_comparison(f: Any) -> bool:
    return (isinstance(f, tuple) and len(f) == 3 and isinstance(f[0], str)
            and isinstance(f[1], str) and f[1] in ("==", "=", "<", "<=", ">", ">="))


def _read_columns(cols: list[str] | None, pf: PoolFilter) -> list[str] | None:
    """The columns to read: those asked for and those the filter reads (None: all)."""
    if cols is None or pf.expr is None:
        return cols
    return list(dict.fromkeys([*cols, *filter_columns(pf.expr)]))


def _filtered(pieces: list[list[Row] | Part], cols: list[str] | None,
              read_cols: list[str] | None, pf: PoolFilter, stats: ScanStats,
              plan: ScanPlan | None) -> ScanResult:
    """The ScanResult of ``pieces`` with the filter applied to its rows."""
    res = scan_result(pieces, read_cols, stats, plan)
    if pf.expr is None:
        return res
    if cols is None and res.num_rows:
        # every top-level field was read; a nested path the filter reads is taken from
        # the same decoded rows (by rows: a path through a null parent is null)
        nested = [c for c in filter_columns(pf.expr) if c not in res.columns and "." in c]
        if nested:
            rows = [p.to_rows() if isinstance(p, Part) else p for p in pieces]
            extra = scan_result(rows, nested, stats, plan)
            both = ScanResult({**res.columns, **extra.columns}, res.num_rows, stats, plan)
            return keep_matching(both, pf.expr, list(res.columns))
    return keep_matching(res, pf.expr, cols)


def _columns(columns: Sequence[str] | str | None) -> list[str] | None:
    if columns is None:
        return None
    cols = columns.split(",") if isinstance(columns, str) else list(columns)
    return [c for c in cols if c] or None


def _get(v: Any, t: Type, path: list[str]) -> tuple[Any, Type]:
    for name in path:
        u = underlying(t)
        f = u.field(name) if hasattr(u, "field") else None
        if f is None or not isinstance(v, dict):
            return None, NULL
        t, v = f.type, v.get(name)
    return v, t


_MISSING = object()


def _column(rows: list[Row], c: str) -> A.Array:
    """One column of the rows: values by field (types looked up once per row type, by
    identity), then an array; times decoded as int nanoseconds go straight into one."""
    path = c.split(".")
    name = path[0]
    single = len(path) == 1
    field_types: dict[int, Any] = {}
    vals: list[Any] = []
    vtypes: list[Type] = []
    for _, t, v in rows:
        if single:
            ft = field_types.get(id(t), _MISSING)
            if ft is _MISSING:
                u = underlying(t)
                f = u.field(name) if isinstance(u, RecordType) else None
                ft = field_types[id(t)] = None if f is None else f.type
            x = v.get(name) if ft is not None and isinstance(v, dict) else None
            xt = ft if ft is not None else NULL
        else:
            x, xt = _get(v, t, path)
        vals.append(x)
        vtypes.append(xt)
    return build_column(vals, vtypes)


def scan_result(pieces: list[list[Row] | Part], columns: list[str] | None, stats: ScanStats,
            plan: ScanPlan | None) -> ScanResult:
    """The ScanResult of the rows of ``pieces`` (in order): column-wise parts are joined
    as arrays; any row list among them turns them all into rows (the reference)."""
    if all(isinstance(p, Part) for p in pieces):
        return _parts_result([p for p in pieces if isinstance(p, Part)], columns, stats, plan)
    rows: list[Row] = []
    for p in pieces:
        rows += p.to_rows() if isinstance(p, Part) else p
    return _rows_result(rows, columns, stats, plan)


def _parts_result(parts: list[Part], columns: list[str] | None, stats: ScanStats,
                  plan: ScanPlan | None) -> ScanResult:
    n = sum(p.n for p in parts)
    if columns is None:  # every field, in the order the rows' types first show them
        firsts: list[tuple[int, Type]] = []
        off = 0
        for part in parts:
            for t, pos in zip(part.types, part.rows, strict=True):
                if pos.size:
                    firsts.append((off + int(pos.min()), t))
            off += part.n
        firsts.sort(key=lambda x: x[0])
        seen: dict[str, None] = {}
        for _, t in firsts:
            for f in getattr(underlying(t), "fields", ()):
                seen.setdefault(f.name, None)
        columns = list(seen)
    out = {c: part_column(parts, c, n) for c in columns}
    return ScanResult(out, n, stats, plan)


def _rows_result(rows: list[Row], columns: list[str] | None, stats: ScanStats,
                 plan: ScanPlan | None) -> ScanResult:
    if columns is None:
        seen: dict[str, None] = {}
        ids: set[int] = set()
        for _, t, _v in rows:
            if id(t) in ids:
                continue
            ids.add(id(t))
            u = underlying(t)
            for f in getattr(u, "fields", ()):
                seen.setdefault(f.name, None)
        columns = list(seen)
    out = {c: _column(rows, c) for c in columns}
    return ScanResult(out, len(rows), stats, plan)
