"""csup-async: read Super Columnar (CSUP) files from object stores, fast.

Imports are lazy (PEP 562) so that ``import csup_async`` and a small query
stay light: heavy modules load on first use of the name that needs them.  Importing
runs nothing but definitions: the process's malloc settings
(:func:`csup_async.model.heap.keep_freed_memory`) are made before the first of this
library's threads starts, not at import (a Spark driver that only plans keeps its own).
"""

from __future__ import annotations

import importlib
from typing import Any

from .model.errors import (
    AccessDeniedError,
    ArgumentError,
    BudgetError,
    ColumnNotFoundError,
    ConfigError,
    CsupError,
    EncodeError,
    FormatError,
    LimitError,
    NotAwaitedError,
    NotFoundError,
    ObjectChangedError,
    ObjectExistsError,
    RowSelectionError,
    StoreError,
    StoreTimeoutError,
    TruncatedError,
    UnsupportedTypeError,
)

__version__ = "0.2.0"

_LAZY = {
    "open": "csup_async.readers.opening",
    "Reader": "csup_async.readers.reader",
    "write": "csup_async.writers.writing",
    "convert": "csup_async.writers.converting",
    "Writer": "csup_async.writers.writer",
    "Value": "csup_async.model.values",
    "UnionValue": "csup_async.model.values",
    "infer_type": "csup_async.model.values",
    "types": "csup_async.model.types",
    "open_dataset": "csup_async.datasets.opening",
    "Dataset": "csup_async.datasets.dataset",
    "ScanResult": "csup_async.readers.reader",
    "close_stores": "csup_async.stores",
    "MetadataCache": "csup_async.stores.metacache",
    "DiskMetadataCache": "csup_async.stores.diskcache",
    "open_lake": "csup_async.lake",
    "create_lake": "csup_async.lake",
    "LakeError": "csup_async.lake",
    "read": "csup_async.sync",
    "open_sync": "csup_async.sync",
    "open_dataset_sync": "csup_async.sync",
    "scan_polars": "csup_async.sync.polars_source",
    "to_duckdb": "csup_async.sync.duckdb_source",
    "col": "planner.filters",
    "parse_filter": "planner.filtertext",
    "FilterError": "planner.filters",
    "S3Config": "csup_async.stores.config",
    "GCSConfig": "csup_async.stores.config",
    "HTTPConfig": "csup_async.stores.config",
    "RetryConfig": "csup_async.stores.config",
}

__all__ = [
    "AccessDeniedError", "ArgumentError", "BudgetError", "ColumnNotFoundError", "ConfigError",
    "CsupError", "EncodeError", "FormatError", "LimitError", "NotAwaitedError",
    "NotFoundError", "ObjectChangedError", "ObjectExistsError", "RowSelectionError",
    "StoreError", "StoreTimeoutError", "TruncatedError", "UnsupportedTypeError", *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'csup_async' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, the lazy names included (``dir()`` would list a lazy name only
    after its first use), and the module's own dunders."""
    return sorted(set(__all__) | {"__version__"} | {n for n in globals() if n.startswith("__")})
