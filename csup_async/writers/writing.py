"""``csup_async.write``: pick the input path, write the file, put it in place.

Every path ends in the one writer core (:class:`csup_async.writers.writer.Writer`):
Arrow input and mappings of numpy columns through
:mod:`csup_async.writers.arrow_write`, Python rows through :mod:`csup_async.writers.pyrows`
(vectorised where it can, value by value where it cannot), Arrow input the
columnar path cannot take (maps) value by value.
"""

from __future__ import annotations

import io
import itertools
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO

from ..model.errors import (
    AccessDeniedError,
    ArgumentError,
    CsupError,
    EncodeError,
    NotFoundError,
    ObjectExistsError,
    StoreError,
)
from .v23cols import open_writer
from .write_inputs import writable

__all__ = ["WRITER_OPTIONS", "write", "write_bytes"]

#: The options the writer takes; any other option of a URL destination is its store's.
WRITER_OPTIONS = frozenset({"segment_thresh", "skew_thresh", "compress", "statistics"})


def write(dest: str | os.PathLike[str] | BinaryIO, data: Any, *, fuse: bool = True,
          infer_times: bool = False, store: Any = None, if_absent: bool = False,
          target: str | None = None, **options: Any) -> int:
    """Write ``data`` as one CSUP file at ``dest``; return the number of rows.

    ``data``: an iterable of Python values or ``Value``s (rows), or a pyarrow
    Table / RecordBatch / RecordBatchReader, a pandas or polars DataFrame (its
    columns, through Arrow), or a mapping of column names to 1-d numpy arrays
    (masked arrays for nulls), one row per index.  Any other mapping is an
    EncodeError (pass ``[row]`` to write one dict as a row), as is an object that
    iterates but is not rows (a Series, a 2-d array, a string).
    ``dest``: a path (written to a temporary name unique to this call in the
    same directory and renamed into place, so no partial file is ever visible
    and of two writers to one path the later rename wins, whole), an object store
    URL (``s3://``, ``gs://``, any fsspec protocol: the file is built in memory and
    put whole in one request, so no partial object is ever visible either; through
    ``store`` if given, else a store made from the other options, as ``open``'s), or
    a binary file object.  ``if_absent``: write only if no object or file has that
    name (atomic where the store can: local files, S3, GCS), else ObjectExistsError.
    Options: ``segment_thresh``, ``skew_thresh``, ``compress``, ``statistics``.

    ``fuse`` (Python rows only; Arrow and numpy input have one schema already):
    rows whose types differ only by nulls, missing fields or a conflicting field
    are written under one fused super type (:mod:`csup_async.writers.fuse`, docs/format.md
    "Fused types"); ``fuse=False`` writes each row under its own exact type.
    ``infer_times`` (Python rows only): a string field whose strings are all RFC
    3339 timestamps, in a chunk of 8,192 rows, is written as ``time``.

    ``target``: the tool the file is for (:mod:`csup_async.targets`): ``"super"`` (the
    default: CSUP v23, what super main reads, written straight from the column
    batches), ``"csup-async"`` (this library's own layout: segment statistics,
    checksums, typed nulls, the options above), ``"super-0.3"`` (CSUP v16 of super
    v0.3.0) or ``"zed-1.12"`` (VNG v3 of Zed's zq);
    an unknown name is an ``UnknownTargetError`` (an ``ArgumentError``) listing them.
    What each keeps and loses: docs/format.md, "Writing for other tools".
    """
    try:
        return _write(dest, data, store, if_absent, options, fuse, infer_times, target)
    except CsupError as e:  # errors found before the destination is touched name it too
        raise e.with_path(_shown(dest)) from None


def write_bytes(dest: str | os.PathLike[str] | BinaryIO, data: bytes, *, store: Any = None,
                if_absent: bool = False, **options: Any) -> None:
    """Put the bytes of a finished file at ``dest`` the way :func:`write` puts the file it
    makes (a temporary name renamed into place, one whole-object put, ``if_absent``);
    ``options`` are a URL's store options (``csup_async.convert(copy=True)``)."""

    def write_to(f: BinaryIO) -> int:
        f.write(data)
        return 0

    try:
        url = _url(dest)
        if options and (url is None or store is not None):
            raise ArgumentError(f"unknown option{'s' if len(options) > 1 else ''} "
                                f"{', '.join(map(repr, sorted(options)))}")
        if url is not None:
            _write_object(url, write_to, {}, store, options, if_absent)
        elif isinstance(dest, (str, os.PathLike)):
            _write_file(_local(os.fspath(dest)), write_to, {}, if_absent)
        elif if_absent:
            raise ArgumentError("if_absent applies to a path or URL, not a file object")
        else:
            write_to(dest)
    except CsupError as e:
        raise e.with_path(_shown(dest)) from None


def _shown(dest: Any) -> str | None:
    from ..stores import redact_url

    return redact_url(os.fspath(dest)) if isinstance(dest, (str, os.PathLike)) else None


def _write(dest: str | os.PathLike[str] | BinaryIO, data: Any, store: Any, if_absent: bool,
           options: dict[str, Any], fuse: bool, infer_times: bool,
           target: str | None = None) -> int:
    from .arrow_input import ArrowValues
    from .targets import resolve
    from .targets.output import transcoder

    chosen = resolve(target)

    writer_opts = {k: v for k, v in options.items() if k in WRITER_OPTIONS}
    store_opts = {k: v for k, v in options.items() if k not in WRITER_OPTIONS}
    url = _url(dest)
    if store_opts and (url is None or store is not None):
        why = ("store options apply only when write makes the store (no store=)"
               if url is not None else f"the writer's: {', '.join(sorted(WRITER_OPTIONS))}")
        raise ArgumentError(f"unknown option{'s' if len(store_opts) > 1 else ''} "
                            f"{', '.join(map(repr, sorted(store_opts)))}; {why}")
    if isinstance(data, ArrowValues):  # rows of a Parquet file: encode its batches whole
        data = _batch_reader(data.source)
    for name, flag in (("fuse", fuse), ("infer_times", infer_times)):
        if not isinstance(flag, bool):
            raise EncodeError(f"{name} must be True or False, not {flag!r}")
    data = writable(data)
    write_to = transcoder(_columnar_writer(data) or _row_writer(data, fuse, infer_times),
                          chosen)
    if url is not None:
        return _write_object(url, write_to, writer_opts, store, store_opts, if_absent)
    if isinstance(dest, (str, os.PathLike)):
        return _write_file(_local(os.fspath(dest)), write_to, writer_opts, if_absent)
    if if_absent:
        raise ArgumentError("if_absent applies to a path or URL, not a file object")
    return write_to(dest, **writer_opts)


def _url(dest: Any) -> str | None:
    """``dest`` when it is an object store URL (not a path, not ``file://``)."""
    if not isinstance(dest, str) or "://" not in dest or dest.startswith("file://"):
        return None
    return dest


def _local(path: str) -> str:
    from ..stores.put import local_path

    return local_path(path)


def _write_file(path: str, write_to: Callable[..., int], options: dict[str, Any],
                if_absent: bool) -> int:
    """Write a temporary file next to ``path``, then move (or, ``if_absent``, link) it in."""
    tmp = f"{path}.tmp-{os.getpid()}-{secrets.token_hex(8)}"
    try:
        with open(tmp, "xb") as f:  # exclusive: never another writer's file
            n = write_to(f, **options)
        if if_absent:
            try:
                os.link(tmp, path)  # fails if the name exists: atomic against other writers
            except FileExistsError:
                raise ObjectExistsError("a file exists by that name (if_absent=True)",
                                        path=path) from None
        else:
            os.replace(tmp, path)
    except CsupError as e:
        raise e.with_path(path) from None
    except OSError as e:  # the temporary file's name is ours, never the user's
        raise _write_error(e, path) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n


def _write_error(e: OSError, path: str) -> CsupError:
    """An OSError of writing ``path`` (through its temporary file) as the store error a
    user can act on, naming ``path``: a missing directory, no permission, a full disk."""
    d = os.path.dirname(path) or "."
    if isinstance(e, FileNotFoundError) and not os.path.isdir(d):
        return NotFoundError(f"cannot write: no such directory {d!r}", path=path)
    if isinstance(e, NotADirectoryError):
        return NotFoundError("cannot write: a part of the path is not a directory",
                             path=path)
    if isinstance(e, PermissionError):
        return AccessDeniedError(f"cannot write: {e.strerror or e}", path=path)
    return StoreError(f"cannot write: {e.strerror or e}", path=path)


def _write_object(url: str, write_to: Callable[..., int], options: dict[str, Any],
                  store: Any, store_opts: dict[str, Any], if_absent: bool) -> int:
    """Encode into memory, then put the whole object through the store (the lake's put)."""
    from ..stores import redact_url, store_for
    from ..stores.put import put_object
    from ..stores.tasks import run_to_end

    shown = redact_url(url)
    buf = io.BytesIO()
    try:
        n = write_to(buf, **options)
    except CsupError as e:
        raise e.with_path(shown) from None
    data = buf.getbuffer().tobytes()
    del buf

    async def put() -> bool:
        own, key = (store, url) if store is not None else store_for(url, **store_opts)
        try:
            return await put_object(own, key, data, if_absent=if_absent)
        finally:
            if store is None:
                await own.close()

    try:
        written = run_to_end(put, "csup-put")
    except CsupError as e:
        raise e.with_path(shown) from None
    if not written:
        raise ObjectExistsError("an object exists by that name (if_absent=True)", path=shown)
    return n


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
    take, value by value; a JSON file's lines parsed into columns
    (:mod:`csup_async.writers.ndjson`)."""
    from .inputs import JsonFile

    if isinstance(data, JsonFile):
        return lambda f, **options: _write_json(f, data, options, fuse, infer_times)
    if type(data).__module__.startswith("pyarrow"):
        from .arrow_input import arrow_values

        values = arrow_values(data)
        return lambda f, **options: _write_each(f, values, options)
    return lambda f, **options: _write_rows(f, data, options, fuse, infer_times)


def _write_rows(f: BinaryIO, rows: Iterable[Any], options: dict[str, Any],
                fuse: bool, infer_times: bool) -> int:
    from .pyrows import write_rows

    with open_writer(f, **options) as w:
        write_rows(w, rows, fuse, infer_times)
    return w.rows


def _write_json(f: BinaryIO, data: Any, options: dict[str, Any], fuse: bool,
                infer_times: bool) -> int:
    from .ndjson import write_ndjson

    with open_writer(f, **options) as w:
        write_ndjson(w, data.path, fuse=fuse, infer_times=infer_times, on_rows=data.on_rows)
    return w.rows


def _write_each(f: BinaryIO, rows: Iterable[Any], options: dict[str, Any]) -> int:
    with open_writer(f, **options) as w:
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
