"""The reader: one tail read for metadata, a planned set of ranged reads per scan.

``open`` fetches the trailer and, in the common case, the whole reassembly
section with one suffix request; ``scan`` asks the planner which byte ranges a
projection needs and hands the plan to the read pipeline (:mod:`csup_async.scan`),
which fetches it pinned to the version the tail read saw and decodes segments
off the event loop as they land.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from typing import Any, TypeVar

import planner as P
from planner.calibration import Calibration

from ..arrays.arrowschema import arrow_schema
from ..format.meta import FileMeta
from ..model.errors import (
    ColumnNotFoundError,
    CsupError,
)
from ..scan.colstats import column_stats, has_statistics
from ..scan.describe import describe_schema
from ..scan.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_METADATA,
    split_options,
)
from ..scan.result import ScanResult, ScanStats
from ..stores import ObjectInfo, Store, TailRead, redact_url, store_for
from ..stores.calibrate import Measurements
from ..stores.capabilities import abilities, profile_of
from .execution import Execution
from .loading import Loading, metadata_cache_of
from .planning import Planning

__all__ = ["Reader", "ScanResult", "ScanStats", "Schema", "reader_from_meta"]
AnyReader = TypeVar("AnyReader", bound="Reader")
#: Whether a reader of an object store (S3, GCS, HTTP: stores that measure their
#: requests) plans with the profile measured on its endpoint when ``calibrate`` is not
#: given; local files never do. bench/results/calibrate.md has the numbers behind it:
#: off until calibrated plans are measured no slower where the static profile is right
#: (on the s3 network 183 ms against 145 ms in the recorded run) and under a busy client,
#: which measures its own CPU wait as low bandwidth and would add connections and parts.
CALIBRATE_BY_DEFAULT = False


class Reader(Loading, Planning, Execution):
    """An open CSUP object: its metadata, and scans of it.

    Its jobs live in one module each: opening (:mod:`.loading`), planning
    (:mod:`.planning`) and execution (:mod:`.execution`); this module holds its state."""

    @property
    def profile(self) -> P.Profile:
        """The profile plans assume: the static one, calibrated from measured requests."""
        m = self.measurements
        if not self.calibrate or m is None:
            return self.static_profile
        return m.profile(self.static_profile)

    @property
    def measurements(self) -> Measurements | None:
        """The process's recent requests to this object's endpoint (None: the store
        measures nothing, as local files)."""
        m = (self.store.measurements_of(self.key)  # type: ignore[attr-defined]
             if abilities(self.store).measuring else None)
        return m if isinstance(m, Measurements) else None

    def calibration(self) -> Calibration | None:
        """The static profile, the one measured on the endpoint and which plans assume."""
        m = self.measurements
        if m is None:
            return None
        measured = m.profile(self.static_profile)
        return Calibration(self.static_profile, measured, len(m.samples), m.endpoint,
                           self.calibrate)

    @profile.setter
    def profile(self, value: P.Profile) -> None:
        self.static_profile = value

    def __init__(self, store: Store, key: str, *, owns_store: bool, profile: Any = "local",
                 concurrency: int | None = None, max_metadata: int | None = None,
                 max_mem_length: int = 256 << 20, max_rows: int | None = None,
                 max_values: int | None = None, timeout: float | None = None,
                 metadata_cache: Any = None, immutable: bool = False,
                 verify_checksums: bool = True, trust_counts: bool = False,
                 verify_counts: bool = False, calibrate: bool | None = None) -> None:
        # how it was made, for a reader of another format to be made alike (successor)
        self._options = {k: v for k, v in locals().items()
                         if k not in ("self", "store", "key", "owns_store", "__class__")}
        self.store = store
        self.key = key
        self.path = redact_url(key)  # what errors and reprs show: never a signed query
        self._owns_store = owns_store
        self.static_profile = P.get_profile(profile)
        # plan with latency/bandwidth measured on this store's endpoint once it has enough
        # requests (planner.calibration); False: always the static profile; None: the
        # default for the store (on for object stores, which measure; off for local files)
        if calibrate is None:
            calibrate = CALIBRATE_BY_DEFAULT and abilities(store).measuring
        self.calibrate = bool(calibrate)
        # None: DEFAULT_CONCURRENCY, or more when the profile plans more connections
        self._concurrency_given = concurrency is not None
        self.concurrency = DEFAULT_CONCURRENCY if concurrency is None else concurrency
        self.max_metadata = max_metadata or DEFAULT_MAX_METADATA
        self.max_mem_length = max_mem_length
        self.max_rows = max_rows  # None: read.options.DEFAULT_MAX_ROWS when a read starts
        self.max_values = max_values  # None: read.options.DEFAULT_MAX_VALUES
        self.timeout = timeout  # seconds one scan/iter_batches/read_rows/count_rows may take
        self.verify_checksums = bool(verify_checksums)  # segments' crc32 checked on read
        # row selection reads only the segments holding the rows, each checked against
        # its count, every column's counts against its rows (pipeline.selection.plan_rows)
        # trust_counts: skip the totals check too; verify_counts: decode and check every
        # segment before a selected row as well (counts shifted between unread segments)
        self.trust_counts = bool(trust_counts)
        self.verify_counts = bool(verify_counts)
        if self.trust_counts and self.verify_counts:
            raise CsupError("trust_counts=True and verify_counts=True contradict each other")
        self.meta: FileMeta
        self.tail: TailRead
        self._extra: list[tuple[int, bytes]] = []
        self.open_stats = ScanStats()
        self.metadata_cache = metadata_cache_of(metadata_cache)
        self.immutable = bool(immutable)
        if self.immutable and self.metadata_cache is None:
            raise CsupError("immutable=True needs a metadata_cache (a MetadataCache, or True "
                            "for the process's default)")
        self._counted_rows: int | None = None
        self._rowmap: Any = None  # several super types: the row map read (RowMap)
        # plans made for this metadata (shared with its metadata-cache entry), see _plan
        self._plans: dict[Hashable, P.ScanPlan] = {}





    # -------------------------------------------------------------- schema ---
    @property
    def schema(self) -> Schema:
        return Schema(self.meta)

    @property
    def num_rows(self) -> int | None:
        """Rows in the object when known: from metadata with one super type; with several
        (IDs are varints of unknown width), once :meth:`count_rows` has read the super
        column; None until then."""
        n = self.meta.row_count
        return n if n is not None else self._counted_rows































    async def close(self) -> None:
        self._keep_measurements()
        if self._owns_store:
            await self.store.close()



    def successor(self, cls: type[AnyReader]) -> AnyReader:
        """A reader of another kind (``cls``) for this object, made with this one's
        options, holding what its open read so far (the tail, extra bytes, counts) and
        owning the store in its place: how the loader builds the reader the bytes call
        for (:mod:`.loader`)."""
        new = cls(self.store, self.key, owns_store=self._owns_store, **self._options)
        new.tail = self.tail
        new._extra = self._extra
        new.open_stats = self.open_stats
        new.metadata_cache = self.metadata_cache
        self._owns_store = False
        return new

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()







class Schema:
    """The super types and column tree of a file, printable."""

    def __init__(self, meta: FileMeta) -> None:
        self.meta = meta
        self.super_types = meta.super_types

    def __str__(self) -> str:
        return describe_schema(self.meta)

    def __repr__(self) -> str:
        return f"<Schema {len(self.super_types)} super types>"

    def arrow(self, columns: Sequence[str] | str | None = None) -> Any:
        """The Arrow schema ``scan(columns)`` gives (an ``ArrowSchema``: pass it to
        ``pa.schema``, ``nanoarrow.c_schema``...), from metadata: no data is read."""
        return arrow_schema(self.meta, columns)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow schema of a scan of every top-level column (from metadata)."""
        return self.arrow().__arrow_c_schema__()

    @property
    def has_statistics(self) -> bool:
        """Whether the writer recorded segment statistics (``column_stats`` is all None
        without them)."""
        return has_statistics(self.meta)

    @functools.cached_property
    def column_stats(self) -> dict[str, Any]:
        """Every primitive column's ``colstats.ColumnStatistics`` (values, nulls, min,
        max...) by path, from the metadata alone: no data is read."""
        return column_stats(self.meta)

    def stats(self, path: str) -> Any:
        """The ``ColumnStatistics`` of the primitive column at ``path`` (as keyed in
        ``column_stats``); ColumnNotFoundError if there is none."""
        got = self.column_stats.get(path)
        if got is None:
            raise ColumnNotFoundError(f"no primitive column {path!r}; columns with "
                                      f"statistics: {', '.join(self.column_stats) or 'none'}")
        return got


def reader_from_meta(url: str, meta: FileMeta, version: str | None, *,
                     store: Store | None = None,
                     available: Sequence[tuple[int, bytes]] = (), **options: Any) -> Reader:
    """A reader over metadata loaded elsewhere (a Spark driver): no metadata request.

    Reads stay pinned to ``version``, the one the driver's tail read saw, so
    an object replaced since planning gives ObjectChangedError, not mixed data.
    ``available`` is ``(offset, bytes)`` of the object the caller already holds
    (the driver's tail read shipped with a partition): requests they cover are
    served from them, so a small file costs no request at all.
    """
    owns = store is None
    reader_opts, store_opts = split_options(options)
    if store is None:
        store, url = store_for(url, **store_opts)
    reader_opts.setdefault("profile", profile_of(store))
    r = Reader(store, url, owns_store=owns, **reader_opts)
    r.meta = meta
    r.tail = TailRead(b"", ObjectInfo(meta.object_size, version))
    r._extra = list(available)
    return r












