"""A local SparkSession that talks to nothing but 127.0.0.1, for tests, examples and laptops.

Spark binds its driver to the host's address and starts a web UI by default;
on a laptop or CI box that means a firewall prompt or a port clash, and the
Python workers must run this interpreter (with csup_async importable), not
whatever ``python3`` is on PATH.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from pyspark.sql import SparkSession

from . import register


def spark_unavailable() -> str | None:
    """Why a local Spark cannot start here (None when it can): no pyspark, or no Java."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install 'csup-async[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and os.path.exists(
            os.path.join(java_home, "bin", "java"))):
        return "no Java runtime (java on PATH or JAVA_HOME) for Spark"
    return None


def local_session(app_name: str = "csup", cores: int = 2, **conf: str) -> Any:
    """A ``local[cores]`` SparkSession bound to 127.0.0.1 with the UI off and ``csup`` registered.

    ``conf`` adds Spark settings (dots written as given, e.g.
    ``**{"spark.sql.shuffle.partitions": "4"}``).
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # also for the JVM's own lookups
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH", "")
    if root not in path.split(os.pathsep):  # workers import csup_async from this checkout
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, path) if p)
    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", str(max(cores * 2, 2)))
               .config("spark.sql.session.timeZone", "UTC"))
    # the Python workers of a JVM started earlier in this process do not see a setting
    # made since: hand this library's own settings (CSUP_*) to them explicitly
    for k, v in os.environ.items():
        if k.startswith("CSUP_"):
            builder = builder.config(f"spark.executorEnv.{k}", v)
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
