"""The reader's own options, split once from the store's, and the caps a file meets.

``open(url, **options)``, ``open_dataset`` and the Spark source all take one
bag of keyword options: these names belong to the reader, every other one to
the store.  The caps are module values read when a read starts (not when a
reader is made), so a process can lower them for every reader at once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ..model.errors import ConfigError, CsupError

#: Values any one column may claim (a count is not always backed by bytes: one
#: 5-byte length can claim 2**31 all-null elements).
DEFAULT_MAX_ROWS = 1 << 28
#: Values all the columns of one read may claim together.
DEFAULT_MAX_VALUES = 1 << 30
#: Largest decompressed segment (a writer's default segment is 1 MiB).
DEFAULT_MAX_MEM_LENGTH = 256 << 20
#: Requests in flight for one read (and, for ``iter_batches``, the fetch window).
DEFAULT_CONCURRENCY = 16
#: Parsing metadata costs about 3 us a byte: 16 MiB bounds a hostile open to ~1 min of
#: CPU while holding the column trees of files with hundreds of thousands of segments.
DEFAULT_MAX_METADATA = 16 << 20

#: The option names that belong to the reader; every other option goes to the store.
READER_OPTIONS = ("profile", "concurrency", "max_metadata", "max_mem_length", "max_rows",
                  "max_values", "metadata_cache", "immutable", "verify_checksums",
                  "trust_counts", "verify_counts", "calibrate")
#: Options both take: ``timeout`` bounds a whole read and each store operation in it.
SHARED_OPTIONS = ("timeout",)


#: names other libraries give the rows to read: here they are ``limit=``
ROW_COUNT_HABITS = ("n_rows", "nrows", "num_rows", "max_rows_to_read")
#: arguments of the read verbs (``scan``, ``take``, ``iter_batches``, ``read``...), not of
#: ``open``: given to ``open`` they would reach the store and be refused as its options
VERB_ARGUMENTS = ("max_requests", "max_bytes", "on_progress", "columns", "filter",
                  "filters", "rows", "batch_rows")


def check_habits(options: dict[str, Any]) -> None:
    """A ConfigError naming what to write instead, for an option that is another
    library's name for a read argument (``n_rows``: polars', ``nrows``: pandas') or an
    argument of the read verbs given where an object is opened."""
    for name in options:
        if name in ROW_COUNT_HABITS:
            raise ConfigError(f"{name}= is not an option here: the rows to read are limit= "
                            "(read(p, limit=10), r.scan(limit=10); in a LazyFrame from "
                            "scan_polars, .head(10))")
        if name in VERB_ARGUMENTS:
            raise ConfigError(f"{name}= is an argument of the read verbs (scan, take, "
                            f"iter_batches, count_rows, read), not an option of open: "
                            f"pass it to the read")


def renamed_options(options: dict[str, Any], stacklevel: int = 3) -> dict[str, Any]:
    """``options`` with the old name of the connection count (``limit``, which means
    rows in ``scan``, ``read`` and the CLI) taken as ``max_connections``, with a
    DeprecationWarning pointing at the caller of ``open``/``open_dataset``; another
    library's name for a read argument is refused with the name to use
    (:func:`check_habits`)."""
    check_habits(options)
    if "limit" not in options:
        return options
    warnings.warn("open(..., limit=) is deprecated: the number of connections is "
                  "max_connections= (limit= means rows in scan, read and the CLI)",
                  DeprecationWarning, stacklevel=stacklevel)
    out = {k: v for k, v in options.items() if k != "limit"}
    if "max_connections" in out and out["max_connections"] != options["limit"]:
        raise CsupError("limit= (deprecated) and max_connections= disagree: pass "
                        "max_connections= only")
    out["max_connections"] = options["limit"]
    return out


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reader options, store options) of one bag of keyword options."""
    reader = {k: v for k, v in options.items() if k in READER_OPTIONS or k in SHARED_OPTIONS}
    store = {k: v for k, v in options.items() if k not in READER_OPTIONS}
    return reader, store


@dataclass(frozen=True, slots=True)
class Limits:
    """What one read may make the process fetch, decompress and allocate."""

    max_rows: int
    max_values: int
    max_mem_length: int

    @classmethod
    def of(cls, max_rows: int | None = None, max_values: int | None = None,
           max_mem_length: int | None = None) -> Limits:
        """Limits with the module defaults (as they are now) where None."""
        return cls(DEFAULT_MAX_ROWS if max_rows is None else int(max_rows),
                   DEFAULT_MAX_VALUES if max_values is None else int(max_values),
                   DEFAULT_MAX_MEM_LENGTH if max_mem_length is None else int(max_mem_length))


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How one read runs: requests in flight, its caps and its deadline (seconds or None).

    ``verify_checksums`` (default True): every segment whose statistics carry a
    ``crc32`` is checked against its stored bytes before they are decompressed,
    and every segment with a ``count`` against the values it decodes to
    (:mod:`csup_async.scan.checks`); False skips the CRC only (it is the one
    check that costs CPU), for a caller who trusts the store's own integrity.
    """

    concurrency: int
    limits: Limits
    timeout: float | None = None
    verify_checksums: bool = True

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise CsupError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.timeout is not None and not self.timeout > 0:
            raise CsupError(f"timeout must be a positive number of seconds, got {self.timeout}")
