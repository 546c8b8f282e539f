"""Spark reads of a lake pool: ``spark.read.format("csup").option("pool", "logs@main").load(lake)``.

The driver resolves the branch to the pool's source (``Pool.source``: objects
pruned by the pool key from the ``where`` option, and from pushed filters on
the key when ``pushdown`` is on, each kept ``.zng`` object narrowed to
seek-index byte runs); partitions carry parts of that source (groups of
overlapping objects stay together, so each partition's rows come out in key
order).  Executors read their part as any pool scan does
(``csup_async.lake.read``: the objects as fragments of one dataset).  Pushed
filters are still handed back to Spark: it evaluates them on the rows, so SQL
semantics hold exactly; pruning only skips bytes.

The schema is inferred from the first chunk (per the seek index) of up to
``SAMPLE_OBJECTS`` objects, or given by the user.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from planner.packing import Target, Unit, pack
from planner.request import ScanRequest

from ..lake.filter import PoolFilter, where_filter
from ..lake.keys import KeyRange, as_value
from ..lake.objects import LakeIO
from ..lake.source import PoolSource
from ..model.errors import CsupError
from ..model.types import underlying
from ..stores import store_for
from .options import Settings
from .schema import merge_types, spark_type

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
    async def sample() -> list[Any]:
        lake, pool = await _open_pool(settings)
        try:
            return await pool.sample_types(SAMPLE_OBJECTS)  # type: ignore[no-any-return]
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
    """Groups of overlapping objects (the part of the pool's source) read by one task."""

    def __init__(self, index: int, pool_dir: str, source: PoolSource,
                 request: ScanRequest | None = None) -> None:
        self.index = index
        self.pool_dir = pool_dir
        self.source = source  # its objects and groups: this task's share
        #: the read's columns (the schema's) and the ``where`` option's filter (evaluated
        #: on the rows), parsed once on the driver: the task's object scans parse nothing
        self.request = request if request is not None else ScanRequest()

    @property
    def expr(self) -> Any:
        """The ``where`` option's filter."""
        return self.request.filter

    def __repr__(self) -> str:
        return f"LakePartition(index={self.index}, groups={len(self.source.groups)})"


def pool_filter_from(pool: Any, settings: Settings, filters: Sequence[Any]) -> PoolFilter:
    """The ``where`` option (``;``-separated filters in the --where grammar, ANDed) bound
    to the pool, its key range narrowed further by the pushed filters on the key."""
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


def _bytes(o: Any) -> int:
    return o.size if o.runs is None else sum(n for _, n in o.runs)


def _pack(src: PoolSource, target: int, min_parts: int) -> list[PoolSource]:
    """The source split into parts of about ``target`` bytes (lowered until there are
    ``min_parts``), groups kept whole and in order (:func:`planner.packing.pack`)."""
    units = [Unit(sum(_bytes(src.objects[i]) for i in g)) for g in src.groups]
    out = []
    for task in pack(units, Target(target, min_tasks=min_parts)).tasks:
        gs = [src.groups[u] for u in task.units]
        objs = [src.objects[i] for g in gs for i in g]
        groups, k = [], 0
        for g in gs:
            groups.append(tuple(range(k, k + len(g))))
            k += len(g)
        out.append(dataclasses.replace(src, objects=tuple(objs), groups=tuple(groups)))
    return out


class LakeReader(DataSourceReader):
    def __init__(self, schema: T.StructType, settings: Settings) -> None:
        self.schema = schema
        self.settings = settings
        self.filters: list[Any] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(pool={self.settings.pool!r})"

    def _plan(self) -> list[LakePartition]:
        async def go() -> tuple[Any, PoolFilter, PoolSource, Any]:
            lake, pool = await _open_pool(self.settings)
            try:
                pf = pool_filter_from(pool, self.settings, self.filters)
                src = await pool.source(pf)
                plan = (await pool.plan(pf.key_range) if self.settings.plan_report
                        else None)  # (the seek indexes are cached: no request)
                return pool, pf, src, plan
            finally:
                await lake.close()

        pool, pf, src, plan = _run(go())
        if plan is not None:
            d = {"pool": pool.name, "commit": pool.commit_id, **plan.describe()}
            tmp = f"{self.settings.plan_report}.tmp-{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(d, f, default=str)
            os.replace(tmp, self.settings.plan_report)
        packed = _pack(src, self.settings.target_partition_bytes,
                       self.settings.min_partitions)
        # the tasks' request: once per query, here (the schema's fields as columns, as
        # a pool scan takes them; the budget is not the tasks')
        names = [f.name for f in self.schema.fields]
        request = ScanRequest.parse(names, filter=pf.expr, batch_rows=self.settings.batch_rows)
        return [LakePartition(i, pool.config.id_str, part, request)
                for i, part in enumerate(packed)]

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
    from ..lake.read import PoolRead
    from .executor import record_batches

    url = _lake_url(settings)
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    names = [f.name for f in schema.fields]
    columns = tuple((n, n) for n in names)
    loop = asyncio.new_event_loop()
    store, root = store_for(url.rstrip("/"), **settings.store_options(url))
    io = LakeIO(store, root, concurrency=settings.concurrency)
    read = PoolRead(io, part.pool_dir, part.source, part.request)
    try:
        for g in part.source.groups:
            res = loop.run_until_complete(read.read_group(g))
            yield from record_batches(res.columns, res.num_rows, columns, arrow_schema,
                                      settings.batch_rows)
    finally:
        loop.run_until_complete(store.close())
        loop.close()
