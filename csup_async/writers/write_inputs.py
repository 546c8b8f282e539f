"""What ``csup_async.write`` takes as ``data``, before a writer sees it.

A data frame is columns, not rows: iterating a pandas DataFrame yields its column
*names*, so writing one as rows would silently store the names.  pandas and polars
frames go through Arrow (``Table.from_pandas``, the Arrow C stream), any other
object exporting an Arrow C stream too; objects that iterate but are not rows (a
Series, a 2-d array, a string) are refused with what to pass instead.  pandas and
polars are never imported here: an object is recognised by its type's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.errors import EncodeError

__all__ = ["writable"]

_ARROW_HINT = "pip install 'csup-async[arrow]'"


def writable(data: Any) -> Any:
    """``data`` as the writer paths take it (rows, Arrow input, a column mapping), or an
    EncodeError saying what to pass instead."""
    owner = type(data).__module__.split(".", 1)[0]
    kind = type(data).__name__
    if owner == "pandas":
        return _pandas(data, kind)
    if owner == "polars":
        return _polars(data, kind)
    if owner == "pyarrow":
        return _plain(data)
    if isinstance(data, Mapping):
        return data
    if isinstance(data, (str, bytes, bytearray, memoryview)):
        raise EncodeError(f"data is a {kind}, not rows (it would be written one "
                          f"{'character' if isinstance(data, str) else 'byte'} per row): "
                          "pass [value] to write it as one row")
    if owner == "numpy" and getattr(data, "ndim", 1) != 1:
        raise EncodeError(f"data is a {data.ndim}-d numpy array, not rows: pass a mapping "
                          "of column names to 1-d arrays ({'a': arr[:, 0], ...}) to write "
                          "columns, or arr.tolist() to write each row as a list")
    if hasattr(data, "__arrow_c_stream__"):
        return _arrow_stream(data, kind, "list(rows)")
    if not hasattr(data, "__iter__"):
        raise EncodeError(f"data is a {kind}, not rows: pass an iterable of rows, a pyarrow "
                          "Table, RecordBatch or RecordBatchReader, a pandas or polars "
                          "DataFrame, or a mapping of column names to 1-d numpy arrays")
    return data


def _pandas(data: Any, kind: str) -> Any:
    if kind == "Series":
        raise EncodeError("data is a pandas Series (one column), not rows: pass "
                          "series.to_frame() to write it as a column, or series.tolist() "
                          "to write each value as a row")
    if kind != "DataFrame":
        raise EncodeError(f"data is a pandas {kind}, not rows: pass a DataFrame, or "
                          "list(data) to write each element as a row")
    pa = _pyarrow("a pandas DataFrame", "df.to_dict('records')")
    try:
        # the index is not data here (a RangeIndex would become a column of row numbers):
        # df.reset_index() keeps it as a column
        return _plain(pa.Table.from_pandas(data, preserve_index=False))
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise EncodeError(f"cannot convert the pandas DataFrame to Arrow ({e}); pass "
                          "df.to_dict('records') to write its rows value by value") from None


def _polars(data: Any, kind: str) -> Any:
    if kind == "LazyFrame":
        raise EncodeError("data is a polars LazyFrame: pass lazy.collect() (a DataFrame)")
    if kind == "Series":
        raise EncodeError("data is a polars Series (one column), not rows: pass "
                          "series.to_frame() to write it as a column, or series.to_list() "
                          "to write each value as a row")
    if kind != "DataFrame" or not hasattr(data, "__arrow_c_stream__"):
        raise EncodeError(f"data is a polars {kind}, not rows: pass a DataFrame, or "
                          "list(data) to write each element as a row")
    return _arrow_stream(data, "polars DataFrame", "df.to_dicts()")


def _arrow_stream(data: Any, kind: str, rows_hint: str) -> Any:
    """An object exporting the Arrow C stream interface, as a RecordBatchReader."""
    pa = _pyarrow(f"a {kind}", rows_hint)
    try:
        return _plain(pa.RecordBatchReader.from_stream(data))
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise EncodeError(f"cannot read the {kind} as an Arrow stream of records ({e}); "
                          f"pass {rows_hint} to write its rows value by value") from None


def _plain(data: Any) -> Any:
    """Arrow input with its view, run-end and dictionary types made plain (the writer's
    kernels have none for them: ``arrow_input.plain_arrow``)."""
    import pyarrow as pa

    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        from .arrow_input import plain_arrow

        return plain_arrow(data)
    return data


def _pyarrow(what: str, rows_hint: str) -> Any:
    try:
        import pyarrow as pa
    except ImportError:
        raise EncodeError(f"writing {what} as columns needs pyarrow ({_ARROW_HINT}); or "
                          f"pass {rows_hint} to write its rows value by value") from None
    return pa
