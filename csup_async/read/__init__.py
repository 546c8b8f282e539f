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

from .options import READER_OPTIONS, Limits, ReadOptions, split_options
from .result import ScanResult, ScanStats
from .scan import count_rows, iter_batches, read_rows, scan_columns

__all__ = ["READER_OPTIONS", "Limits", "ReadOptions", "ScanResult", "ScanStats", "count_rows",
           "iter_batches", "read_rows", "scan_columns", "split_options"]
