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
    ConfigError,
    CsupError,
)
from ..model.options import (
    CALIBRATE_BY_DEFAULT,
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_METADATA,
    DEFAULT_PROFILE,
    OpenOptions,
    parse_reader,
)
from ..scan.colstats import column_stats, has_statistics
from ..scan.describe import describe_schema
from ..scan.result import ScanResult, ScanStats
from ..stores import ObjectInfo, Store, TailRead, redact_url, store_for
from ..stores.calibrate import Measurements
from ..stores.capabilities import abilities, profile_of
from .execution import Execution
from .loading import Loading, metadata_cache_of
from .planning import Planning

__all__ = ["Reader", "ScanResult", "ScanStats", "Schema", "reader_from_meta"]
AnyReader = TypeVar("AnyReader", bound="Reader")


class Reader(Loading, Planning, Execution):
    """An open CSUP object: its metadata, and scans of it.

    Its jobs live in one module each: opening (:mod:`.loading`), planning
    (:mod:`.planning`) and execution (:mod:`.execution`); this module holds its state."""

    #: A head read sent with the tail read (readers/headhint), until the open uses it.
    speculative_head: Any = None
    #: The reads the last open of this file made, sent with the tail read (readers/openhint).
    recalled: Any = None

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

    def __init__(self, store: Store, key: str, *, owns_store: bool,
                 options: OpenOptions | None = None, **kwargs: Any) -> None:
        """A reader of ``key`` through ``store``, not loaded yet.  ``options``: the typed
        options ``open`` parsed (:class:`~csup_async.model.options.OpenOptions`); a
        reader made by hand may pass the same names as keywords instead."""
        if options is None:
            options = OpenOptions.from_kwargs(kwargs)
        elif kwargs:
            raise ConfigError(f"pass options= or keyword options, not both: "
                              f"{', '.join(kwargs)}")
        # how it was made, for a reader of another format to be made alike (successor)
        self.options = options
        self.store = store
        self.key = key
        self.path = redact_url(key)  # what errors and reprs show: never a signed query
        self._owns_store = owns_store
        self.static_profile = P.get_profile(
            DEFAULT_PROFILE if options.profile is None else options.profile)
        # plan with latency/bandwidth measured on this store's endpoint once it has enough
        # requests (planner.calibration); False: always the static profile; None: the
        # default for the store (on for object stores, which measure; off for local files)
        calibrate = options.calibrate
        if calibrate is None:
            calibrate = CALIBRATE_BY_DEFAULT and abilities(store).measuring
        self.calibrate = bool(calibrate)
        # None: DEFAULT_CONCURRENCY, or more when the profile plans more connections
        self._concurrency_given = options.concurrency is not None
        self.concurrency = (DEFAULT_CONCURRENCY if options.concurrency is None
                            else options.concurrency)
        self.max_metadata = options.max_metadata or DEFAULT_MAX_METADATA
        self.max_mem_length = options.max_mem_length
        self.max_rows = options.max_rows  # None: scan.options.DEFAULT_MAX_ROWS at a read
        self.max_values = options.max_values  # None: scan.options.DEFAULT_MAX_VALUES
        self.timeout = options.timeout  # seconds a scan/iter_batches/read_rows/count_rows
        self.verify_checksums = options.verify_checksums  # segments' crc32 checked on read
        # row selection reads only the segments holding the rows, each checked against
        # its count, every column's counts against its rows (planner.waves)
        # trust_counts: skip the totals check too; verify_counts: decode and check every
        # segment before a selected row as well (counts shifted between unread segments)
        self.trust_counts = options.trust_counts
        self.verify_counts = options.verify_counts
        self.meta: FileMeta
        self.tail: TailRead
        self._extra: list[tuple[int, bytes]] = []
        self.open_stats = ScanStats()
        self.metadata_cache = metadata_cache_of(options.metadata_cache)
        self.immutable = options.immutable
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
        new = cls(self.store, self.key, owns_store=self._owns_store, options=self.options)
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
    reader_opts, store_opts = parse_reader(options)
    if store is None:
        store, url = store_for(url, **store_opts)
    r = Reader(store, url, owns_store=owns, options=reader_opts.with_profile(profile_of(store)))
    r.meta = meta
    r.tail = TailRead(b"", ObjectInfo(meta.object_size, version))
    r._extra = list(available)
    return r












