"""``csup_async.write``: pick the input path, write the file, put it in place.

Every path ends in the one writer core (:class:`csup_async.writer.Writer`):
Arrow input and mappings of numpy columns through
:mod:`csup_async.arrow_write`, Python rows through :mod:`csup_async.pyrows`
(vectorised where it can, value by value where it cannot), Arrow input the
columnar path cannot take (maps) value by value.
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO

from .errors import EncodeError
from .writer import Writer

__all__ = ["write"]


def write(dest: str | os.PathLike[str] | BinaryIO, data: Any, *, fuse: bool = True,
          infer_times: bool = False, **options: Any) -> int:
    """Write ``data`` as one CSUP file at ``dest``; return the number of rows.

    ``data``: an iterable of Python values or ``Value``s (rows), or a pyarrow
    Table / RecordBatch / RecordBatchReader, or a mapping of column names to
    1-d numpy arrays (masked arrays for nulls), one row per index.  Any other
    mapping is an EncodeError (pass ``[row]`` to write one dict as a row).
    ``dest``: a path (written to a temporary name unique to this call in the
    same directory and renamed into place, so no partial file is ever visible
    and of two writers to one path the later rename wins, whole) or a binary
    file object.  Options: ``segment_thresh``, ``skew_thresh``, ``compress``.

    ``fuse`` (Python rows only; Arrow and numpy input have one schema already):
    rows whose types differ only by nulls, missing fields or a conflicting field
    are written under one fused super type (:mod:`csup_async.fuse`, docs/format.md
    "Fused types"); ``fuse=False`` writes each row under its own exact type.
    ``infer_times`` (Python rows only): a string field whose strings are all RFC
    3339 timestamps, in a chunk of 8,192 rows, is written as ``time``.
    """
    from .arrow_input import ArrowValues

    if isinstance(data, ArrowValues):  # rows of a Parquet file: encode its batches whole
        data = _batch_reader(data.source)
    for name, flag in (("fuse", fuse), ("infer_times", infer_times)):
        if not isinstance(flag, bool):
            raise EncodeError(f"{name} must be True or False, not {flag!r}")
    write_to = _columnar_writer(data) or _row_writer(data, fuse, infer_times)
    if isinstance(dest, (str, os.PathLike)):
        path = os.fspath(dest)
        tmp = f"{path}.tmp-{os.getpid()}-{secrets.token_hex(8)}"
        try:
            with open(tmp, "xb") as f:  # exclusive: never another writer's file
                n = write_to(f, **options)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return n
    return write_to(dest, **options)


def _columnar_writer(data: Any) -> Callable[..., int] | None:
    """The vectorised writer for Arrow input and column mappings, or None."""
    is_arrow = type(data).__module__.startswith("pyarrow")
    if not (is_arrow or isinstance(data, Mapping)):
        return None
    if isinstance(data, Mapping) and not all(
            type(v).__module__.startswith("numpy") for v in data.values()):
        raise EncodeError("a mapping is written as columns (names to 1-d numpy arrays); "
                          "to write one dict as a row, pass a list of rows: [row]")
    from .arrow_write import fast_writer

    return fast_writer(data)


def _row_writer(data: Any, fuse: bool, infer_times: bool) -> Callable[..., int]:
    """Rows: Python values shredded in chunks; Arrow rows the columnar path cannot
    take, value by value."""
    if type(data).__module__.startswith("pyarrow"):
        from .arrow_input import arrow_values

        values = arrow_values(data)
        return lambda f, **options: _write_each(f, values, options)
    return lambda f, **options: _write_rows(f, data, options, fuse, infer_times)


def _write_rows(f: BinaryIO, rows: Iterable[Any], options: dict[str, Any],
                fuse: bool, infer_times: bool) -> int:
    from .pyrows import write_rows

    with Writer(f, **options) as w:
        write_rows(w, rows, fuse, infer_times)
    return w.rows


def _write_each(f: BinaryIO, rows: Iterable[Any], options: dict[str, Any]) -> int:
    with Writer(f, **options) as w:
        for v in rows:
            w.write(v)
    return w.rows


def _batch_reader(source: Any) -> Any:
    """An iterator of record batches as a RecordBatchReader (its schema from the first)."""
    if type(source).__module__.startswith("pyarrow"):
        return source
    import pyarrow as pa

    it = iter(source)
    first = next(it, None)
    if first is None:
        return pa.table({})
    return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], it))
