"""A PySpark data source for Super Columnar files: ``csup_async.spark.register(spark)``.

After ``register(spark)``::

    df = spark.read.format("csup").load("s3://bucket/events/")       # schema inferred
    df = spark.read.format("csup").schema("kind string, amount long").load(path)  # projection
    df.write.format("csup").mode("append").save("s3://bucket/out/")

This package imports pyspark (and pyarrow); ``import csup_async`` does not.
"""

from __future__ import annotations

from typing import Any

from .source import CsupDataSource, CsupFilteringReader, CsupReader

__all__ = ["PUSHDOWN_CONF", "CsupDataSource", "CsupFilteringReader", "CsupReader", "register"]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register format ``csup`` with ``spark`` (a SparkSession); nothing else changes.

    Filter pushdown is opt-in per read (``.option("pushdown", "true")``) and
    then also needs ``spark.sql.python.filterPushdown.enabled=true`` (Spark
    refuses a reader that implements ``pushFilters`` while that flag is off).
    Why opt-in: PySpark 4.3 keeps the partitions planned for a filtered query
    and reuses them for later queries on the same DataFrame that push no
    filter, so files pruned for one query would go missing from the next (see
    :mod:`csup_async.spark.filters`).
    """
    spark.dataSource.register(CsupDataSource)
