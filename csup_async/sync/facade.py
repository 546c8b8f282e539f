"""The synchronous face: ``read``, ``open_sync`` and ``open_dataset_sync``.

One design, twins of the async objects: a :class:`SyncReader` (and
:class:`SyncDataset`) holds the async reader and runs each of its methods on the
process-wide I/O loop (:mod:`.loop`), with the same names, arguments and
results minus ``await``.  Twins rather than a ``sync=True`` flag on the async
objects, so that a type says whether its methods block, and an async object is
never driven from two loops.  ``iter_batches`` gives a :class:`BatchStream`: a
plain iterator of results that is also an Arrow stream (``__arrow_c_stream__``),
read lazily, one batch at a time.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from ..arrays.arrowschema import ArrowSchema
from ..model.errors import CsupError
from ..model.options import DEFAULT_BATCH_ROWS
from .loop import AsyncIteration, run


def request(columns: Any = None, *, path: str | None = None, **arguments: Any) -> Any:
    """The verb's :class:`planner.request.ScanRequest`, every argument checked here, at the
    sync face's edge (imported when a call needs it: the planner is not light)."""
    from planner.request import ScanRequest

    return ScanRequest.parse(columns, path=path, **arguments)

__all__ = ["ArrowSchema", "BatchStream", "SyncDataset", "SyncReader", "open_dataset_sync",
           "open_sync", "read"]

Columns = Sequence[str] | str | None
Progress = Callable[[Any], object] | None


def metered_verbs(reader: Any, req: Any) -> Any:
    """What runs ``req`` on ``reader``: the Reader itself without a budget or when it
    plans its reads (CSUP, VNG), else (BSUP, SuperDB's layout: read whole by their own
    scans) a Fragment over it, which claims their reads against the budget as they
    start."""
    if not req.budget.given:
        return reader
    from ..datasets.fragment import Fragment, plans_scans

    return reader if plans_scans(reader) else Fragment(reader.key, reader=reader)


class BatchStream(Iterator[Any]):
    """Results of ``batch_rows`` rows, one at a time; also an Arrow C stream.

    ``pa.RecordBatchReader.from_stream(s)``, ``pl.DataFrame(s)`` or DuckDB read it
    batch by batch, each from its result's own buffers.  A stream is read once
    (by iterating or by one consumer); ``close()`` or ``with`` stop it early.
    """

    def __init__(self, make: Callable[[], AsyncIterator[Any]],
                 schema: Callable[[], ArrowSchema], unions: str = "struct") -> None:
        self._it: AsyncIteration[Any] = AsyncIteration(make)
        self._schema = schema
        self._schema_made: ArrowSchema | None = None
        self._started = False
        #: how the Arrow stream exports a column of several kinds (``ScanResult.to_arrow``)
        self.unions = unions

    @property
    def schema(self) -> ArrowSchema:
        """The Arrow schema every batch has (from metadata: no data is read), made once
        (DuckDB asks for it several times)."""
        if self._schema_made is None:
            self._schema_made = self._schema()
        return self._schema_made

    def __iter__(self) -> BatchStream:
        return self

    def __next__(self) -> Any:
        self._started = True
        return next(self._it)

    def close(self) -> None:
        self._it.close()

    def __enter__(self) -> BatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        from ..arrays.capsule import check_requested, export_batch, stream_of

        check_requested(requested_schema)
        if self._started:
            raise CsupError("this batch stream has been read already: call iter_batches "
                            "again for another")
        schema = self.schema.c_schema

        def batches() -> Iterator[Any]:
            # started at the first batch asked for, not at the export: a consumer may
            # export the stream for its schema, drop it unread and export it again
            # (DuckDB 1.5's from_arrow, then its query)
            if self._started:
                raise CsupError("this batch stream has been read already: call "
                                "iter_batches again for another")
            self._started = True
            with self._it:
                for res in self._it:
                    yield export_batch(res.unified_columns(self.unions), res.num_rows)[1]

        return stream_of(schema, batches())


class SyncReader:
    """A CSUP object opened for synchronous use: ``with open_sync(url) as r: r.scan()``.

    The methods of :class:`csup_async.Reader`, blocking; ``r.reader`` is the async
    reader (to be used only on the I/O loop).
    """

    def __init__(self, reader: Any) -> None:
        self.reader = reader

    @property
    def schema(self) -> Any:
        return self.reader.schema

    @property
    def num_rows(self) -> int | None:
        n: int | None = self.reader.num_rows
        return n

    @property
    def path(self) -> str:
        p: str = self.reader.path
        return p

    def arrow_schema(self, columns: Columns = None) -> ArrowSchema:
        """The Arrow schema of ``scan(columns)`` (``__arrow_c_schema__``), from metadata."""
        schema: ArrowSchema = self.reader.schema.arrow(columns)
        return schema

    def scan(self, columns: Columns = None, *, filter: Any = None, rows: slice | None = None,
             limit: int | None = None, filters: Any = None, max_requests: int | None = None,
             max_bytes: int | None = None, on_progress: Progress = None) -> Any:
        """The rows of ``columns`` (all when None) that ``filter`` keeps (an expression,
        its text, or pyarrow's list form as ``filters=``), of ``rows`` (a slice), the
        first ``limit``: a :class:`~csup_async.ScanResult`.  ``max_requests`` and
        ``max_bytes`` refuse, before any data request, a read that would pass them
        (BudgetError); ``on_progress`` is called with the bytes and files done.  As
        :meth:`csup_async.Reader.scan`, blocking."""
        req = request(columns, filter=filter, filters=filters, rows=rows, limit=limit,
                      max_requests=max_requests, max_bytes=max_bytes,
                      on_progress=on_progress, path=self.path)
        return self.scan_with(req)

    def scan_with(self, req: Any) -> Any:
        """:meth:`scan` of a request (``planner.request.ScanRequest``, checked where the
        call entered: this face, or ``scan_polars``)."""
        return run(metered_verbs(self.reader, req).scan_with(req))

    def to_arrow(self, columns: Columns = None, *, filter: Any = None,
                 limit: int | None = None, filters: Any = None, **budget_options: Any) -> Any:
        """``scan(...)`` as one pyarrow Table (:meth:`ScanResult.to_arrow`)."""
        return self.scan(columns, filter=filter, filters=filters, limit=limit,
                         **budget_options).to_arrow()

    def plan(self, columns: Columns = None, *, filter: Any = None, rows: slice | None = None,
             limit: int | None = None, filters: Any = None) -> Any:
        """The reads ``scan`` with the same arguments makes, and why (``.explain()``):
        from metadata, nothing is read."""
        return run(self.reader.plan_with(request(columns, filter=filter, filters=filters,
                                                 rows=rows, limit=limit, path=self.path)))

    def take(self, indices: Any, columns: Columns = None, *, max_requests: int | None = None,
             max_bytes: int | None = None, on_progress: Progress = None) -> Any:
        """The rows at ``indices`` (row numbers from 0, any order, repeats allowed), in
        the order given; only the segments holding them are read.  Budget and progress
        as for :meth:`scan`."""
        req = request(columns, indices=indices, max_requests=max_requests,
                      max_bytes=max_bytes, on_progress=on_progress, path=self.path)
        return run(metered_verbs(self.reader, req).take_with(req))

    def count_rows(self, filter: Any = None, *, filters: Any = None,
                   max_requests: int | None = None, max_bytes: int | None = None,
                   on_progress: Progress = None) -> int:
        """Rows of the object (that ``filter`` keeps): from metadata when it can be; a
        filter reads only its own columns, of the zones it may match.  Budget and
        progress as for :meth:`scan`."""
        req = request(filter=filter, filters=filters, max_requests=max_requests,
                      max_bytes=max_bytes, on_progress=on_progress, path=self.path)
        if req.filter is None:
            n: int = run(self.reader.count_with(req.budget))
            return n
        from ..datasets.fragment import Fragment

        return int(run(Fragment(self.reader.key, reader=self.reader).count_with(req)))

    def read_rows(self) -> list[Any]:
        """Every row as Python values (records as dicts): exact, absent fields left out."""
        rows: list[Any] = run(self.reader.read_rows())
        return rows

    def read_values(self) -> list[Any]:
        """Every row as a typed :class:`~csup_async.values.Value`."""
        values: list[Any] = run(self.reader.read_values())
        return values

    def iter_batches(self, columns: Columns = None, *, batch_rows: int = DEFAULT_BATCH_ROWS,
                     prefetch: int | None = None, filter: Any = None,
                     filters: Any = None, max_requests: int | None = None,
                     max_bytes: int | None = None, on_progress: Progress = None,
                     unions: str = "struct") -> BatchStream:
        """``Reader.iter_batches`` as a :class:`BatchStream` (bounded memory, lazy):
        results of at most ``batch_rows`` rows.  Budget and progress as for :meth:`scan`
        (checked before each wave of requests); ``unions``: how its Arrow stream exports
        a column of several kinds (as ``ScanResult.to_arrow``)."""
        from ..scan.result import check_unions

        req = request(columns, filter=filter, filters=filters, batch_rows=batch_rows,
                      prefetch=prefetch, max_requests=max_requests, max_bytes=max_bytes,
                      on_progress=on_progress, path=self.path)
        check_unions(unions)
        return self.batches_with(req, unions)

    def batches_with(self, req: Any, unions: str = "struct") -> BatchStream:
        """:meth:`iter_batches` of a request (checked where the call entered)."""
        from planner.request import NO_BUDGET

        r = self.reader
        verbs = metered_verbs(r, req)
        columns = None if req.columns is None else list(req.columns)
        # the types every batch has, unified as the stream exports them: a scan of no rows
        # (of the request's columns, nothing parsed again), made once for the stream
        bare = req.but(filter=None, rows=None, limit=0, budget=NO_BUDGET)

        def schema() -> ArrowSchema:
            if unions == "struct":
                return r.schema.arrow(columns)  # type: ignore[no-any-return]
            return ArrowSchema(run(r.scan_with(bare)).unified_columns(unions))

        return BatchStream(lambda: verbs.batches_with(req), schema, unions)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Every column, batch by batch (``duckdb.sql("select ... from r")``)."""
        return self.iter_batches().__arrow_c_stream__(requested_schema)

    def close(self) -> None:
        """Close the reader (and its store, when it owns one)."""
        run(self.reader.close())

    def __enter__(self) -> SyncReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SyncReader {self.path}>"


class SyncDataset:
    """Many CSUP objects opened for synchronous use (:class:`csup_async.Dataset`'s twin)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    @property
    def files(self) -> list[str]:
        files: list[str] = self.dataset.files
        return files

    def arrow_schema(self, columns: Columns = None) -> ArrowSchema:
        """The Arrow schema of ``scan(columns)``: every file's types combined, as a
        scan's batches export them (a scan that reads no rows: metadata only)."""
        return ArrowSchema(run(self.dataset.scan(columns, limit=0)).unified_columns("struct"))

    def scan(self, columns: Columns = None, *, filter: Any = None,
             limit: int | None = None, filters: Any = None, rows: slice | None = None,
             max_requests: int | None = None, max_bytes: int | None = None,
             on_progress: Progress = None) -> Any:
        """Rows of every file in file order (``Dataset.scan``): those ``filter`` keeps,
        of the dataset's ``rows``, the first ``limit``; budget and progress over every
        file."""
        return self.scan_with(request(
            columns, filter=filter, filters=filters, limit=limit, rows=rows,
            max_requests=max_requests, max_bytes=max_bytes, on_progress=on_progress))

    def scan_with(self, req: Any) -> Any:
        """:meth:`scan` of a request (checked where the call entered)."""
        return run(self.dataset.scan_with(req))

    def to_arrow(self, columns: Columns = None, *, filter: Any = None,
                 limit: int | None = None, filters: Any = None, **budget_options: Any) -> Any:
        """``scan(...)`` as one pyarrow Table."""
        return self.scan(columns, filter=filter, filters=filters, limit=limit,
                         **budget_options).to_arrow()

    def plan(self, columns: Columns = None, *, filter: Any = None,
             filters: Any = None) -> Any:
        """Which files contribute and what each reads (``Dataset.plan``): metadata only."""
        return run(self.dataset.plan(columns, filter=filter, filters=filters))

    def take(self, indices: Any, columns: Columns = None, *, max_requests: int | None = None,
             max_bytes: int | None = None, on_progress: Progress = None) -> Any:
        """Rows by their number over every file in file order (``Dataset.take``)."""
        return run(self.dataset.take_with(request(
            columns, indices=indices, max_requests=max_requests, max_bytes=max_bytes,
            on_progress=on_progress)))

    def count_rows(self, filter: Any = None, *, filters: Any = None) -> int:
        """Rows of every file (that ``filter`` keeps): from metadata where it can be."""
        n: int = run(self.dataset.count_with(request(filter=filter, filters=filters)))
        return n

    def head(self, n: int = 5, columns: Columns = None, *, filter: Any = None) -> Any:
        """The first ``n`` rows in file order (of those ``filter`` keeps)."""
        return run(self.dataset.head(n, columns, filter=filter))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Every column of every file, as one scan (a dataset's files may type a column
        differently, so batches come from the combined result)."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def close(self) -> None:
        """Close every file's reader (and the store, when the dataset owns it)."""
        run(self.dataset.close())

    def __enter__(self) -> SyncDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sync(url: str, **options: Any) -> SyncReader:
    """Open a CSUP object for synchronous use (options as :func:`csup_async.open`)."""
    from ..readers.opening import open as open_async

    async def opened() -> Any:
        return await open_async(url, **options)

    return SyncReader(run(opened()))


def open_dataset_sync(source: str | Sequence[str], **options: Any) -> SyncDataset:
    """Open many CSUP objects for synchronous use (as :func:`csup_async.open_dataset`)."""
    from ..datasets.opening import open_dataset

    async def opened() -> Any:
        return await open_dataset(source, **options)

    return SyncDataset(run(opened()))


def is_many(source: str | Sequence[str]) -> bool:
    """Whether ``source`` names several objects: a list, a glob, a prefix or directory
    (ending in ``/``)."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        return True
    return source.endswith("/") or any(c in source for c in "*?[")


def scan_many(source: str | Sequence[str], req: Any, **options: Any) -> Any:
    """The rows ``req`` (a ``planner.request.ScanRequest``, parsed by the caller) asks
    for of the objects ``source`` names, read as one dataset that is closed after."""

    async def scanned() -> Any:
        from ..datasets.opening import open_dataset

        async with open_dataset(source, **options) as ds:
            return await ds.scan_with(req)

    return run(scanned())


def read(source: str | Sequence[str], columns: Columns = None, *, filter: Any = None,
         rows: slice | None = None, limit: int | None = None, filters: Any = None,
         max_requests: int | None = None, max_bytes: int | None = None,
         on_progress: Progress = None, **options: Any) -> Any:
    """Read ``columns`` of a CSUP object, or of several (a list, glob or prefix), and
    close it: a :class:`ScanResult`, without ``await``; works in a script and in a
    notebook (whose loop is running) alike.  Arguments as ``scan`` (``filters=``:
    pyarrow's list form; ``max_requests``/``max_bytes``/``on_progress``: the read's
    budget and progress); ``options`` as ``open`` (or ``open_dataset`` for several
    objects)."""
    arguments = {"filter": filter, "filters": filters, "rows": rows, "limit": limit,
                 "max_requests": max_requests, "max_bytes": max_bytes,
                 "on_progress": on_progress}
    if is_many(source):
        if rows is not None:
            raise CsupError("rows= selects rows of one object; a dataset takes limit=")
        return scan_many(source, request(columns, **arguments), **options)

    async def scan_one() -> Any:
        from ..readers.opening import open as open_async

        async with open_async(source, **options) as r:  # type: ignore[arg-type]
            req = request(columns, path=r.path, **arguments)  # the error names the object
            return await metered_verbs(r, req).scan_with(req)

    return run(scan_one())
