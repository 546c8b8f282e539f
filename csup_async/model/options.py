"""Every option a read takes, typed: each setting's name, default, type and check, once.

``open(url, **options)``, ``open_dataset``, ``reader_from_meta`` and the Spark source
take one bag of keyword options.  It is turned into these frozen objects once, at the
API's edge (:func:`parse_open`, :func:`parse_dataset`); everything below takes the
typed object, never the bag.  The bag's other names belong to the store
(:mod:`csup_async.stores.config` parses and checks them: its own frozen dataclasses).

The arguments of the read verbs (``columns``, ``filter``, ``rows``, ``limit``,
``batch_rows``, the budget) are not options of ``open``; their defaults are here too
(:data:`DEFAULT_BATCH_ROWS`), and they are parsed, each once, into a
``planner.request.ScanRequest`` where a verb is entered (the filter's one normal form,
``planner.dnf.as_expr``, made there).

This module has no side effects and imports only the errors: the planner, the stores
and the readers all read their defaults from it.
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, CsupError

# ------------------------------------------------------------- defaults ---
#: Requests in flight for one read (and, for ``iter_batches``, the fetch window).
DEFAULT_CONCURRENCY = 16
#: Parsing metadata costs about 3 us a byte: 16 MiB bounds a hostile open to ~1 min of
#: CPU while holding the column trees of files with hundreds of thousands of segments.
DEFAULT_MAX_METADATA = 16 << 20
#: Largest decompressed segment (a writer's default segment is 1 MiB).
DEFAULT_MAX_MEM_LENGTH = 256 << 20
#: Values any one column may claim (a count is not always backed by bytes: one
#: 5-byte length can claim 2**31 all-null elements).
DEFAULT_MAX_ROWS = 1 << 28
#: Values all the columns of one read may claim together.
DEFAULT_MAX_VALUES = 1 << 30
#: Rows per batch of ``iter_batches`` (the Reader's, a Dataset's, the sync face's, the
#: polars and DuckDB sources' and Spark's ``batchRows``).
DEFAULT_BATCH_ROWS = 65536
#: Files a dataset opens and reads at once.
DEFAULT_FILE_CONCURRENCY = 64
#: Which objects of a directory, prefix or glob a dataset reads (None: all).
DEFAULT_MATCH = "*.csup"
#: The planner profile a Reader made by hand assumes; ``open`` and ``open_dataset``
#: take the store's own (``stores.capabilities.profile_of``) when none is given.
DEFAULT_PROFILE = "local"
#: Whether a reader of an object store (S3, GCS, HTTP: stores that measure their
#: requests) plans with the profile measured on its endpoint when ``calibrate`` is not
#: given; local files never do. bench/results/calibrate.md has the numbers behind it:
#: off until calibrated plans are measured no slower where the static profile is right
#: (on the s3 network 183 ms against 145 ms in the recorded run) and under a busy client,
#: which measures its own CPU wait as low bandwidth and would add connections and parts.
CALIBRATE_BY_DEFAULT = False

# ------------------------------------------------------- names refused ---
#: names other libraries give the rows to read: here they are ``limit=``
ROW_COUNT_HABITS = ("n_rows", "nrows", "num_rows", "max_rows_to_read")
#: arguments of the read verbs (``scan``, ``take``, ``iter_batches``, ``read``...), not of
#: ``open``: given to ``open`` they would reach the store and be refused as its options
VERB_ARGUMENTS = ("max_requests", "max_bytes", "on_progress", "columns", "filter",
                  "filters", "rows", "batch_rows")
#: Options both the reader and the store take: ``timeout`` bounds a whole read and each
#: store operation in it.
SHARED_OPTIONS = ("timeout",)


# --------------------------------------------------------------- checks ---
def check_int(name: str, value: Any, *, least: int = 0, optional: bool = True) -> int | None:
    """``value`` as an int (numpy's too, never a bool or a float), at least ``least``;
    None passes when ``optional``.  A ConfigError names the option and the value."""
    if value is None and optional:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise ConfigError(f"{name} must be an integer, got {value!r}") from None
    if n < least:
        if least == 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")
        raise ConfigError(f"{name} must be at least {least}, got {value}")
    return n


def check_concurrency(value: Any) -> int | None:
    """Requests in flight: None (the default) or an int of at least 1."""
    return check_int("concurrency", value, least=1)


def check_timeout(value: Any) -> float | None:
    """Seconds a whole read may take: None (no deadline) or a positive number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {value!r}")
    return value


# ------------------------------------------------------------- objects ---
def _opt(default: Any, doc: str) -> Any:
    """A field with its default and the line docs/api.md's table of options shows."""
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True, slots=True)
class OpenOptions:
    """The reader's options of ``open`` (every other keyword goes to the store).

    Each field's default is the default of the keyword of the same name; ``None``
    where the value is resolved later, from the store or at the read (said per field,
    in its ``doc``: docs/api.md's table of options is made of them).
    """

    profile: Any = _opt(None, "planner profile (a name or a `planner.Profile`); None: the "
                              "store's (`local`, `s3`, `gcs`, `http`)")
    concurrency: int | None = _opt(None, f"requests in flight per read; None: "
                                         f"{DEFAULT_CONCURRENCY}, or more when the profile "
                                         f"plans more connections")
    max_metadata: int = _opt(DEFAULT_MAX_METADATA, "bytes of metadata an open may parse "
                                                   "(None or 0: the default)")
    max_mem_length: int = _opt(DEFAULT_MAX_MEM_LENGTH, "bytes of the largest decompressed "
                                                       "segment")
    max_rows: int | None = _opt(None, f"values one column may claim; None: "
                                      f"{DEFAULT_MAX_ROWS:,} (`scan.options.DEFAULT_MAX_ROWS` "
                                      f"when a read starts)")
    max_values: int | None = _opt(None, f"values one read may claim; None: "
                                        f"{DEFAULT_MAX_VALUES:,} "
                                        f"(`scan.options.DEFAULT_MAX_VALUES`)")
    timeout: float | None = _opt(None, "seconds one `scan`, `iter_batches`, `read_rows` or "
                                       "`count_rows` may take (the store's too, per "
                                       "operation); None: no deadline")
    metadata_cache: Any = _opt(None, "a `MetadataCache`, True (the process's), a directory "
                                     "(str or Path), False (none); None: "
                                     "`$CSUP_METADATA_CACHE` if set")
    immutable: bool = _opt(False, "with a metadata cache: an object opened before is not "
                                  "asked again")
    verify_checksums: bool = _opt(True, "each segment's `crc32`, where the file has one, "
                                        "checked before decompression")
    trust_counts: bool = _opt(False, "row selection skips the totals check too (the "
                                     "earlier opt-out)")
    verify_counts: bool = _opt(False, "row selection also decodes and checks every segment "
                                      "before the last selected row")
    calibrate: bool | None = _opt(None, f"plan with the latency and bandwidth measured on "
                                        f"the endpoint; None: {CALIBRATE_BY_DEFAULT} for "
                                        f"object stores, never for local files")

    def __post_init__(self) -> None:
        fix = object.__setattr__
        fix(self, "concurrency", check_concurrency(self.concurrency))
        for name in ("max_rows", "max_values"):
            fix(self, name, check_int(name, getattr(self, name)))
        fix(self, "max_metadata", check_int("max_metadata", self.max_metadata)
            or DEFAULT_MAX_METADATA)
        fix(self, "max_mem_length", check_int("max_mem_length", self.max_mem_length,
                                              optional=False))
        fix(self, "timeout", check_timeout(self.timeout))
        for name in ("immutable", "verify_checksums", "trust_counts", "verify_counts"):
            fix(self, name, bool(getattr(self, name)))
        if self.calibrate is not None:
            fix(self, "calibrate", bool(self.calibrate))
        if self.trust_counts and self.verify_counts:
            raise CsupError("trust_counts=True and verify_counts=True contradict each other")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The keyword names, in the order of the fields."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> OpenOptions:
        """The options of these keywords, every one a reader option (a ConfigError
        lists the valid names otherwise)."""
        unknown = [k for k in options if k not in cls.names()]
        if unknown:
            raise ConfigError(f"unknown reader option{'s' if len(unknown) > 1 else ''} "
                              f"{', '.join(map(repr, unknown))}; the reader's options are "
                              f"{', '.join(cls.names())}")
        return cls(**options)

    def given(self) -> dict[str, Any]:
        """The keywords that differ from their defaults (what a caller passed)."""
        return _given(self)

    def with_profile(self, profile: Any) -> OpenOptions:
        """These options with ``profile`` where none was given (the store's)."""
        return self if self.profile is not None else dataclasses.replace(self,
                                                                         profile=profile)


#: The option names that belong to the reader alone; every other option goes to the
#: store (``timeout``, in SHARED_OPTIONS, to both).
READER_OPTIONS = tuple(n for n in OpenOptions.names() if n not in SHARED_OPTIONS)


@dataclass(frozen=True, slots=True)
class DatasetOptions:
    """What ``open_dataset`` takes besides the reader's and the store's options."""

    file_concurrency: int = _opt(DEFAULT_FILE_CONCURRENCY, "files opened and read at once")
    match: str | None = _opt(DEFAULT_MATCH, "which objects of a directory, prefix or glob "
                                            "to read; None: all")
    partitioning: str | None = _opt(None, "`\"hive\"`: `key=value` directories become "
                                          "columns; None or `\"none\"`: off")
    partition_base: str | None = _opt(None, "the root of those directories (a dataset "
                                            "given as a list needs it)")

    def __post_init__(self) -> None:
        fc = self.file_concurrency
        if not isinstance(fc, bool):  # the CLI and Spark may pass numbers as text
            try:
                fc = int(fc)
            except (TypeError, ValueError):
                raise ConfigError(f"file_concurrency must be an integer, got {fc!r}"
                                  ) from None
        object.__setattr__(self, "file_concurrency",
                           check_int("file_concurrency", fc, least=1, optional=False))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def given(self) -> dict[str, Any]:
        """The keywords that differ from their defaults (what a caller passed)."""
        return _given(self)


def _given(options: Any) -> dict[str, Any]:
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if getattr(options, f.name) != f.default}


# ------------------------------------------------------------ the edge ---
def check_habits(options: Mapping[str, Any]) -> None:
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


def renamed_options(options: Mapping[str, Any], stacklevel: int = 3) -> dict[str, Any]:
    """``options`` with the old name of the connection count (``limit``, which means
    rows in ``scan``, ``read`` and the CLI) taken as ``max_connections``, with a
    DeprecationWarning pointing ``stacklevel`` frames up (the caller of
    ``open``/``open_dataset``); another library's name for a read argument is refused
    with the name to use (:func:`check_habits`)."""
    check_habits(options)
    if "limit" not in options:
        return dict(options)
    warnings.warn("open(..., limit=) is deprecated: the number of connections is "
                  "max_connections= (limit= means rows in scan, read and the CLI)",
                  DeprecationWarning, stacklevel=stacklevel)
    out = {k: v for k, v in options.items() if k != "limit"}
    if "max_connections" in out and out["max_connections"] != options["limit"]:
        raise CsupError("limit= (deprecated) and max_connections= disagree: pass "
                        "max_connections= only")
    out["max_connections"] = options["limit"]
    return out


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(reader options, store options) of one bag of keyword options, as keywords
    (``timeout`` is in both)."""
    reader = {k: v for k, v in options.items() if k in READER_OPTIONS or k in SHARED_OPTIONS}
    store = {k: v for k, v in options.items() if k not in READER_OPTIONS}
    return reader, store


def parse_reader(options: Mapping[str, Any]) -> tuple[OpenOptions, dict[str, Any]]:
    """(the reader's typed options, the store's keywords) of one bag, names as given
    (no renaming, no habits: :func:`parse_open` does those)."""
    reader, store = split_options(options)
    return OpenOptions(**reader), store


def parse_open(options: Mapping[str, Any], *, stacklevel: int = 4
               ) -> tuple[OpenOptions, dict[str, Any]]:
    """The one parse of ``open``'s keywords: habits refused, ``limit=`` renamed, the
    reader's options typed and checked, and the store's keywords left for the store.
    ``stacklevel``: the deprecation warning's, counted as ``warnings.warn`` counts from
    here (3: whoever called this; 4, the default: whoever called ``open``)."""
    return parse_reader(renamed_options(options, stacklevel=stacklevel))


def parse_dataset(options: Mapping[str, Any], *, stacklevel: int = 4
                  ) -> tuple[DatasetOptions, OpenOptions, dict[str, Any]]:
    """The one parse of ``open_dataset``'s keywords: the dataset's own, the reader's
    (typed) and the store's."""
    opts = renamed_options(options, stacklevel=stacklevel)
    own = {k: opts.pop(k) for k in DatasetOptions.names() if k in opts}
    reader, store = parse_reader(opts)
    return DatasetOptions(**own), reader, store
