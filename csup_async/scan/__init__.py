"""The read pipeline: one segment source, one column walker, one executor with sinks.

* :mod:`.fetch` - the segment source: plan's requests streamed under a bound,
  bytes already held served, segments decompressed and decoded off the loop;
* :mod:`.columns` - the column walker: cursors over the type tree, every
  count checked, the caps counted;
* :mod:`.scan` - the executor: whole columns, batches, rows, a row count;
* :mod:`.result` - ``ScanResult`` and ``ScanStats``;
* :mod:`.options` - the reader's options and the caps.

``Reader`` (scans of one object), ``Dataset`` and the Spark executor all read
through :mod:`.scan`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use (PEP 562): ``open`` needs only :mod:`.options` before its
# first request, and imports the rest (numpy, the decoders) while that request
# is in flight (see csup_async.readers.opening).
_LAZY = {"READER_OPTIONS": ".options", "Limits": ".options", "ReadOptions": ".options",
         "split_options": ".options", "ScanResult": ".result", "ScanStats": ".result",
         "count_rows": ".scan", "iter_batches": ".scan", "read_rows": ".scan",
         "scan_columns": ".scan", "type_counts": ".scan"}

__all__ = ["READER_OPTIONS", "Limits", "ReadOptions", "ScanResult", "ScanStats", "count_rows",
           "iter_batches", "read_rows", "scan_columns", "split_options", "type_counts"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

