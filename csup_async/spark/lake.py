"""Spark reads of a lake pool: ``spark.read.format("csup").option("pool", "logs@main").load(lake)``.

The driver resolves the branch, prunes objects by the pool key (from the
``where`` option, and from pushed filters on the key when ``pushdown`` is on)
and narrows each kept ``.zng`` object to seek-index byte ranges; partitions
carry those plans (groups of overlapping objects stay together, so each
partition's rows come out in key order).  Executors fetch the ranges and
decode them.  Pushed filters are still handed back to Spark: it evaluates
them on the rows, so SQL semantics hold exactly; pruning only skips bytes.

The schema is inferred from the first chunk (per the seek index) of up to
``SAMPLE_OBJECTS`` objects, or given by the user.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceReader, InputPartition

from ..errors import CsupError
from ..lake.filter import PoolFilter
from ..lake.keys import KeyRange, as_value
from ..lake.objects import gather_all
from ..lake.scan import ObjectRead, ScanPlan, read_group, read_group_parts, seek_index
from ..types import underlying
from .options import Settings

__all__ = ["lake_schema", "LakeReader", "LakeFilteringReader", "LakePartition"]

SAMPLE_OBJECTS = 16
_KEY_OPS = {"EqualTo": "==", "GreaterThan": ">", "GreaterThanOrEqual": ">=",
            "LessThan": "<", "LessThanOrEqual": "<="}


def _lake_url(settings: Settings) -> str:
    if len(settings.paths) != 1:
        raise CsupError("a pool read takes one path: the lake's root")
    return settings.paths[0]


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _open_pool(settings: Settings) -> tuple[Any, Any]:
    from ..lake.lake import open_lake

    url = _lake_url(settings)
    lake = await open_lake(url, **settings.store_options(url))
    try:
        at: Any = settings.pool_at
        if isinstance(at, str) and at.isdigit():
            at = int(at)
        pool = await lake.pool(settings.pool or "", at=at)
    except BaseException:
        await lake.close()
        raise
    return lake, pool


def lake_schema(settings: Settings) -> T.StructType:
    from .schema import merge_types, spark_type

    async def sample() -> list[Any]:
        lake, pool = await _open_pool(settings)
        try:
            objs = pool.objects
            step = max(1, len(objs) // SAMPLE_OBJECTS)
            picked = objs[::step][:SAMPLE_OBJECTS]
            io, pdir = lake.io, pool.config.id_str

            async def first_chunk(o: Any) -> list[Any]:
                entries = await seek_index(io, pdir, o)
                rng = [(entries[0].offset, entries[0].length)] if entries else None
                return await read_group(io, pdir, [ObjectRead(o, rng)], pool.config.key,
                                        KeyRange(), pool.config.order)

            parts = await gather_all([first_chunk(o) for o in picked])
            return [t for p in parts for _, t, _ in p]
        finally:
            await lake.close()

    fields: dict[str, T.DataType] = {}
    seen: set[Any] = set()
    for t in _run(sample()):
        if t in seen:
            continue
        seen.add(t)
        for f in getattr(underlying(t), "fields", ()):
            st = spark_type(f.type)
            fields[f.name] = merge_types(fields[f.name], st) if f.name in fields else st
    if not fields:
        raise CsupError("the pool has no rows to infer a schema from (give a schema)")
    return T.StructType([T.StructField(n, t, True) for n, t in fields.items()])


class LakePartition(InputPartition):
    """Groups of overlapping objects (with their byte ranges) read by one task."""

    def __init__(self, index: int, pool_dir: str, key: tuple[str, ...], order: str,
                 key_range: KeyRange, groups: tuple[tuple[ObjectRead, ...], ...],
                 expr: Any = None) -> None:
        self.index = index
        self.pool_dir = pool_dir
        self.key = key
        self.order = order
        self.key_range = key_range
        self.groups = groups
        self.expr = expr  # the where option's filter, evaluated on the rows

    def __repr__(self) -> str:
        return f"LakePartition(index={self.index}, groups={len(self.groups)})"


def pool_filter_from(pool: Any, settings: Settings, filters: Sequence[Any]) -> PoolFilter:
    """The ``where`` option (``;``-separated filters in the --where grammar, ANDed) bound
    to the pool, its key range narrowed further by the pushed filters on the key."""
    from ..lake.filter import where_filter

    wheres = [w for w in (settings.pool_where or "").split(";") if w.strip()]
    pf = pool.resolve_filter(where_filter(wheres))
    return PoolFilter(pf.expr, key_range_from(pool, pf.key_range, filters))


def key_range_from(pool: Any, kr: KeyRange, filters: Sequence[Any]) -> KeyRange:
    key = pool.config.key
    for f in filters:
        op = _KEY_OPS.get(type(f).__name__)
        if op is None or tuple(getattr(f, "attribute", ())) != key:
            continue
        v = as_value(f.value)
        if v is None:
            continue
        r = KeyRange.from_comparisons(pool.config.key_name, [(pool.config.key_name, op, v)])
        kr = kr.narrow(r.lo, r.hi, r.lo_inclusive, r.hi_inclusive)
    return kr


def _pack(plan: ScanPlan, target: int, min_parts: int) -> list[list[tuple[ObjectRead, ...]]]:
    total = plan.bytes_to_read
    target = max(1, min(target, total // max(min_parts, 1) or 1))
    parts: list[list[tuple[ObjectRead, ...]]] = []
    size = 0
    for g in plan.groups:
        b = sum(r.bytes for r in g)
        if not parts or (size + b > target and parts[-1]):
            parts.append([])
            size = 0
        parts[-1].append(tuple(g))
        size += b
    return parts


class LakeReader(DataSourceReader):
    def __init__(self, schema: T.StructType, settings: Settings) -> None:
        self.schema = schema
        self.settings = settings
        self.filters: list[Any] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(pool={self.settings.pool!r})"

    def _plan(self) -> list[LakePartition]:
        async def go() -> tuple[Any, PoolFilter, ScanPlan]:
            lake, pool = await _open_pool(self.settings)
            try:
                pf = pool_filter_from(pool, self.settings, self.filters)
                return pool, pf, await pool.plan(pf.key_range)
            finally:
                await lake.close()

        pool, pf, plan = _run(go())
        if self.settings.plan_report:
            d = {"pool": pool.name, "commit": pool.commit_id, **plan.describe()}
            tmp = f"{self.settings.plan_report}.tmp-{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(d, f, default=str)
            os.replace(tmp, self.settings.plan_report)
        packed = _pack(plan, self.settings.target_partition_bytes,
                       self.settings.min_partitions)
        return [LakePartition(i, pool.config.id_str, pool.config.key, pool.config.order,
                              plan.key_range, tuple(gs), pf.expr)
                for i, gs in enumerate(packed)]

    def partitions(self) -> Sequence[InputPartition]:
        return self._plan()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, LakePartition):
            return iter(())
        return read_lake_partition(partition, self.schema, self.settings)


class LakeFilteringReader(LakeReader):
    def pushFilters(self, filters: list[Any]) -> list[Any]:
        self.filters = list(filters)
        return list(filters)  # Spark evaluates them on the rows; we only prune


def read_lake_partition(part: LakePartition, schema: T.StructType, settings: Settings
                        ) -> Iterator[pa.RecordBatch]:
    from pyspark.sql.pandas.types import to_arrow_schema

    from ..lake.filter import filter_columns, keep_matching
    from ..lake.objects import LakeIO
    from ..lake.pool import scan_result
    from ..reader import ScanStats
    from ..stores import store_for
    from .executor import record_batches

    url = _lake_url(settings)
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    names = [f.name for f in schema.fields]
    columns = tuple((n, n) for n in names)
    read = names if part.expr is None else list(dict.fromkeys(
        [*names, *filter_columns(part.expr)]))
    loop = asyncio.new_event_loop()
    store, root = store_for(url.rstrip("/"), **settings.store_options(url))
    io = LakeIO(store, root, concurrency=settings.concurrency)
    try:
        for g in part.groups:
            got = loop.run_until_complete(read_group_parts(io, part.pool_dir, list(g), part.key,
                                                           part.key_range, part.order, read))
            res = scan_result([got], read, ScanStats(), None)
            if part.expr is not None:
                res = keep_matching(res, part.expr, names)
            yield from record_batches(res.columns, res.num_rows, columns, arrow_schema,
                                settings.batch_rows)
    finally:
        loop.run_until_complete(store.close())
        loop.close()
