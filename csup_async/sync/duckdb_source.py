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
from .facade import is_many, open_sync, read, request

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

    # checked here, before anything is opened
    batch_rows = request(batch_rows=batch_rows).batch_rows
    check_unions(unions)
    spent = request(max_requests=max_requests, max_bytes=max_bytes,
                    on_progress=on_progress).budget.keywords()
    con = connection if connection is not None else duckdb.default_connection()
    if is_many(source) or filter is not None or limit is not None:
        stream: Any = read(source, columns, filter=filter, limit=limit, **spent,
                           **options).exported(unions)
    else:
        reader = open_sync(source, **options)  # type: ignore[arg-type]
        stream = reader.iter_batches(columns, batch_rows=batch_rows, unions=unions, **spent)
    return con.from_arrow(stream)
