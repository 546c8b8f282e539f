"""The ``csup`` data source: Spark's entry points, delegating to the driver and executor halves.

Spark runs each entry point in a different Python process: ``schema()`` in
one, ``reader()`` + ``pushFilters()`` + ``partitions()`` in another (the
reader is pickled to executors *before* ``partitions()`` runs), ``read()`` in
executors.  So the loaded metadata lives only in the planning process: the
reader drops it when pickled, and each partition carries exactly its files'
metadata and plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..model.errors import ConfigError, CsupError
from .listing import Loaded, load_sync, load_types_sync
from .options import Settings, parse_options
from .planning import CsupPartition, ReadPlan, plan_read
from .scaleout import plan_unopened
from .schema import column_paths, infer_schema, with_partitions


class CsupDataSource(DataSource):
    """Super Columnar files: ``spark.read.format("csup").load(p)``, ``df.write.format("csup")``."""

    @classmethod
    def name(cls) -> str:
        return "csup"

    def schema(self) -> StructType:
        settings = parse_options(self.options)
        if settings.pool:
            from .lake import lake_schema

            return lake_schema(settings)
        loaded = load_types_sync(settings)  # a v23 file: its footer, in one request
        if not loaded.files:
            raise CsupError("no CSUP files to infer a schema from (give a schema to read an "
                            "empty location)")
        schema = infer_schema(loaded.files)
        if loaded.partitions is not None:
            schema = with_partitions(schema, ((c.name, c.type)
                                              for c in loaded.partitions.columns))
        return schema

    def reader(self, schema: StructType) -> DataSourceReader:
        settings = parse_options(self.options)
        if settings.pool:
            from .lake import LakeFilteringReader, LakeReader

            return (LakeFilteringReader if settings.pushdown else LakeReader)(schema, settings)
        cls = CsupFilteringReader if settings.pushdown else CsupReader
        return cls(schema, settings)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from .write import writer_for

        return writer_for(self.options, overwrite)


class CsupReader(DataSourceReader):
    """Plans on the driver (once per query), reads partitions on executors."""

    def __init__(self, schema: StructType, settings: Settings) -> None:
        self.schema = schema
        self.settings = settings
        self.filters: list[Any] = []
        self._plan: ReadPlan | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.schema.fields)} columns)"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_plan"] = None  # executors get their files through partitions
        return state

    def _planned(self) -> ReadPlan:
        if self._plan is None:
            # pushed filters on partition columns rule files out before they are opened
            # more files than the threshold are listed only: tasks open them (scaleout)
            loaded: Loaded = load_sync(self.settings, self.filters,
                                       self.settings.plan_on_executors_threshold)
            metas = [f.meta for f in loaded.files]
            names = set(loaded.partitions.names) if loaded.partitions is not None else set()
            columns = tuple((n, p) for n, p in column_paths(self.schema, metas).items()
                            if n not in names)
            if loaded.unopened and (self.settings.max_requests is not None
                                    or self.settings.max_bytes is not None):
                raise ConfigError(
                    "maxRequests/maxBytes are checked against the driver's plan, and past "
                    "planOnExecutorsThreshold tasks plan their own files: raise "
                    f"planOnExecutorsThreshold above the {len(loaded.unopened):,} files")
            plan = plan_unopened if loaded.unopened else plan_read
            self._plan = plan(loaded, columns, self.filters, self.settings)
        return self._plan

    def read_plan(self) -> ReadPlan:
        """The driver's plan of this read, made once per query (and again after
        ``pushFilters``): its partitions, and a ``report`` of the files read, pruned
        and why, to show a user what a query will read.  It is not pickled: executors
        get their files through the partitions."""
        return self._planned()

    def partitions(self) -> Sequence[InputPartition]:
        return list(self._planned().partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from .executor import read_partition

        if not isinstance(partition, CsupPartition):
            return iter(())  # Spark's placeholder when planning found no files
        values = dict(getattr(partition, "partition_values", ()))
        if not values:
            return read_partition(partition, self.schema, self.settings)
        return _with_constants(partition, self.schema, values, self.settings)


class CsupFilteringReader(CsupReader):
    """The reader with filter pushdown (needs ``spark.sql.python.filterPushdown.enabled``)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        self.filters = list(filters)
        self._plan = None
        return self._planned().remaining_filters


def _with_constants(partition: CsupPartition, schema: StructType, values: dict[str, Any],
                    settings: Settings) -> Iterator[pa.RecordBatch]:
    """The files' columns read as usual, and the partition columns added as constants."""
    from .executor import read_partition

    data = StructType([f for f in schema.fields if f.name not in values])
    arrow = to_arrow_schema(schema, timezone="UTC")
    for batch in read_partition(partition, data, settings):
        n = batch.num_rows
        cols = [batch.column(f.name) if f.name not in values
                else pa.repeat(pa.scalar(values[f.name]), n).cast(f.type) for f in arrow]
        yield pa.RecordBatch.from_arrays(cols, schema=arrow)
