"""The I/O-side glue of Hive-style partitioned datasets (the rules: ``planner.partitions``).

Where a dataset's root is (the paths below it carry the ``key=value``
directories), and partition values as columns: constant per file, so a column
is built from one value per file and repeated by the files' row counts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

import numpy as np

from planner.partitions import PartitionError, Partitions, infer_partitions

from .. import arrays as A
from ..model import types as T
from ..stores import redact_url
from ..stores.listing import glob_base

__all__ = ["PARTITIONINGS", "check_partitioning", "constant_column", "partition_columns",
           "partitions_of", "root_of"]

#: the values of ``open_dataset(partitioning=...)`` (and Spark's ``partitioning`` option)
PARTITIONINGS = ("hive", "none")

_TYPES = {"int64": T.INT64, "float64": T.FLOAT64, "string": T.STRING, "null": T.NULL}


def check_partitioning(value: Any) -> str | None:
    """``"hive"``, or None for no partitioning (``None``/``"none"``); anything else is refused."""
    if value is None or value == "none":
        return None
    if value != "hive":
        raise PartitionError(f"partitioning must be one of {PARTITIONINGS}, not {value!r}")
    return value


def root_of(source: str) -> str:
    """The dataset root a directory, prefix or glob names: partition directories lie below it."""
    path = source[len("file://"):] if source.startswith("file://") else source
    base = glob_base(path)
    if base is not None:
        return base
    if "://" not in path and os.path.isfile(path):
        return os.path.dirname(path) + "/"
    return path.rstrip("/") + "/"


def partitions_of(urls: Sequence[str], root: str | Sequence[str]) -> Partitions:
    """The partition columns of objects below ``root`` (one root, or one per URL; an
    http(s) URL's path is unescaped once first: the directory names are the escaped ones)."""
    roots = [root] * len(urls) if isinstance(root, str) else list(root)
    rels = []
    for u, r in zip(urls, roots, strict=True):
        base = r[len("file://"):] if r.startswith("file://") else r
        path = u[len("file://"):] if u.startswith("file://") else u
        if not path.startswith(base):
            raise PartitionError(f"{redact_url(u)} is not below the partitioned dataset's root "
                                 f"{redact_url(r)} (give partition_base)")
        rel = path[len(base):]
        rels.append(unquote(rel) if base.startswith(("http://", "https://")) else rel)
    return infer_partitions(rels)


def partition_columns(parts: Partitions, files: Sequence[int], counts: Sequence[int],
                      names: Sequence[str]) -> dict[str, A.Array]:
    """Columns ``names`` (partition columns) over the rows of ``files`` (indices into
    ``parts``), ``counts[i]`` rows each, in that order."""
    ids = np.repeat(np.arange(len(files), dtype=np.int64), np.asarray(counts, dtype=np.int64))
    out: dict[str, A.Array] = {}
    for name in names:
        j = parts.names.index(name)
        t = _TYPES[parts.columns[j].type]
        if t is T.NULL:
            out[name] = A.null_array(T.NULL, int(ids.size))
            continue
        per_file = A.from_pylist(t, [parts.values[i][j] for i in files])
        out[name] = per_file.take(ids)
    return out


def constant_column(type_name: str, value: Any, n: int) -> A.Array:
    """A partition column over one file's ``n`` rows: ``value`` (None: null) on every row,
    typed by the column (``int64``, ``float64``, ``string``, ``null``), so the files of a
    dataset give one type whatever their values."""
    t = _TYPES[type_name]
    if t is T.NULL or value is None:
        return A.null_array(t, n)
    return A.from_pylist(t, [value]).take(np.zeros(n, dtype=np.int64))
