"""``to_duckdb``: CSUP objects as a DuckDB relation over an Arrow stream.

DuckDB reads any object with ``__arrow_c_stream__`` (``duckdb.sql("select ...
from result")`` works on a result or a batch stream as it is), but pushes no
projection or filter into such a stream: it reads every column the stream has.
So the columns and filter are given here, and only they are read; DuckDB's
own SQL then runs over the stream, batch by batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..arrays import require
from ..model.options import DEFAULT_BATCH_ROWS
from .facade import is_many, open_sync, request, scan_many

__all__ = ["to_duckdb"]


def to_duckdb(source: str | Sequence[str], columns: Sequence[str] | str | None = None, *,
              filter: Any = None, limit: int | None = None, connection: Any = None,
              batch_rows: int = DEFAULT_BATCH_ROWS, max_requests: int | None = None,
              max_bytes: int | None = None, on_progress: Any = None,
              unions: str = "supertype", **options: Any) -> Any:
    """A ``duckdb.DuckDBPyRelation`` over ``columns`` of a CSUP object or several.

    ``filter`` (a ``planner.filters`` expression or its text form) and ``limit`` are
    applied by the scan (statistics skip zones, other columns are read for kept rows
    only).  One object without a filter or limit streams in ``batch_rows`` batches;
    otherwise the scan's result is the stream.  The relation reads its stream once:
    make another for a second query.  ``connection`` defaults to DuckDB's default
    connection; ``max_requests``, ``max_bytes`` and ``on_progress`` hold for the read
    (as for ``scan``).  A column of several kinds takes one SQL type by default
    (``unions="supertype"``: numbers DOUBLE, anything beside a string VARCHAR of its
    text, as polars and Spark type it); ``unions="struct"`` keeps each member in a
    STRUCT.  ``options`` are those of ``open`` (``open_dataset`` for several).
    """
    duckdb = require("duckdb", "to_duckdb needs duckdb: pip install 'csup-async[duckdb]'")
    from ..scan.result import check_unions

    check_unions(unions)
    arguments = {"filter": filter, "limit": limit, "batch_rows": batch_rows,
                 "max_requests": max_requests, "max_bytes": max_bytes,
                 "on_progress": on_progress}
    con = connection if connection is not None else duckdb.default_connection()
    if is_many(source):  # checked before anything is opened (a dataset's errors name none)
        req = request(columns, **arguments)
        return con.from_arrow(scan_many(source, req, **options).exported(unions))
    # one object: its arguments are parsed once, when it is open, so that an error names
    # the object as its reader does (``s3://b/k`` is ``b/k`` there), as ``read`` does
    reader = open_sync(source, **options)  # type: ignore[arg-type]
    try:
        req = request(columns, path=reader.path, **arguments)
    except BaseException:
        reader.close()
        raise
    if req.plain:  # streamed in ``batch_rows`` batches, the reader open while it is read
        return con.from_arrow(reader.batches_with(req, unions))
    with reader:  # the scan's result is the stream
        return con.from_arrow(reader.scan_with(req).exported(unions))
