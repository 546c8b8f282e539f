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
import sys
import types
from typing import Any

# Loaded on first use (PEP 562): ``open`` needs only :mod:`.options` before its
# first request, and imports the rest (numpy, the decoders) while that request
# is in flight (see csup_async.opening).
_LAZY = {"READER_OPTIONS": ".options", "Limits": ".options", "ReadOptions": ".options",
         "split_options": ".options", "ScanResult": ".result", "ScanStats": ".result",
         "count_rows": ".scan", "iter_batches": ".scan", "read_rows": ".scan",
         "scan_columns": ".scan"}

__all__ = ["READER_OPTIONS", "Limits", "ReadOptions", "ScanResult", "ScanStats", "count_rows",
           "iter_batches", "read_rows", "scan_columns", "split_options"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class ReadPackage(types.ModuleType):
    """This package, callable: ``csup_async.read(url, ...)`` is the synchronous read.

    The package had the name first, and importing it sets ``csup_async.read`` to it
    whatever ``csup_async`` holds, so the package itself answers the call, handing
    it to :func:`csup_async.sync.read` (loaded by name: the synchronous face is
    built on this package, not the other way round).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return importlib.import_module("csup_async.sync").read(*args, **kwargs)


sys.modules[__name__].__class__ = ReadPackage
