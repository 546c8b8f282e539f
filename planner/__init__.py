"""The pure scan planner: a file's metadata and a projection in, the reads to make out.

Plain data in, plain data out: frozen dataclasses and pure functions, no I/O,
nothing heavier than the standard library and ``csup_async.format.meta``/``types``
(the reader imports this on every open, and Spark ships plans to executors).

* :func:`resolve_paths` - projection -> the streams each super type needs
* :func:`coalesce` - byte ranges -> read requests (the cost model in :mod:`.profiles`)
* :func:`plan_scan` - both, for one file -> :class:`ScanPlan` (``.explain()``)
* :func:`tail_prefetch_size`, :func:`metadata_followup` - the metadata reads
* :func:`plan_files` - many files -> pruned files and tasks (:class:`MultiPlan`)
* :mod:`.filters` - row filters as data (:func:`col`; their text form, :func:`parse_filter`,
  in :mod:`.filtertext`) and what
  segment statistics prove about them (:func:`zone_truth`)
* :mod:`.selection` - row ranges -> the segments holding them; zones of rows a filter's
  statistics prove false; the one-or-two-waves cost model (``FilterPlan.explain()``)
"""

from __future__ import annotations

from .coalescing import Piece, Request, coalesce, wave_seconds
from .errors import InvalidPathError, InvalidRangeError, ProfileError
from .filters import ColumnStats, FilterError, Truth, col, zone_truth
from .filtertext import parse_filter
from .metadata import metadata_followup, tail_prefetch_size
from .multi import (
    ALL_NULL,
    NO_REQUESTED_PATH,
    NO_ROWS,
    FileScan,
    MultiPlan,
    PrunedFile,
    Task,
    TaskFile,
    WholeFile,
    plan_files,
)
from .paths import format_path, parse_columns, parse_path
from .plan import ScanPlan, plan_scan
from .profiles import PROFILES, Profile, get_profile
from .projection import (
    ROLES,
    Leg,
    Resolution,
    StreamRef,
    all_paths,
    describe_paths,
    resolve_paths,
    top_level_paths,
)

__all__ = [
    "ALL_NULL", "NO_REQUESTED_PATH", "NO_ROWS", "PROFILES", "ROLES", "ColumnStats",
    "FileScan", "FilterError", "Truth", "col", "parse_filter", "zone_truth",
    "InvalidPathError", "InvalidRangeError", "MultiPlan", "Piece", "Profile", "ProfileError",
    "Leg", "PrunedFile", "Request", "Resolution", "ScanPlan", "StreamRef", "Task", "TaskFile",
    "WholeFile",
    "all_paths", "coalesce", "describe_paths", "format_path", "get_profile",
    "metadata_followup", "parse_columns", "parse_path", "plan_files", "plan_scan",
    "resolve_paths", "tail_prefetch_size", "top_level_paths", "wave_seconds",
]
