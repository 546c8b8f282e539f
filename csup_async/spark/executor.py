"""The executor's half of a read: run the driver's plans, yield Arrow record batches.

One event loop per worker thread, kept across partitions, and the loop's
shared store (``stores.shared``): a reused Python worker keeps its
connections from one partition to the next instead of a new pool and TLS
handshakes per task.  Nothing live crosses a pickle; a partition's own
tasks are cancelled and awaited when it ends (also when Spark stops early,
e.g. for ``limit``), and the shared stores are closed at exit.  Files are read
``fileConcurrency`` at a time and come out in partition order; the loop runs
the reads still in flight while the generator waits for the next one, so the
network stays busy while earlier files are converted.  A partition planned on
the driver carries each file's plan (and the bytes of it the driver held); an
unopened one (past ``planOnExecutorsThreshold``, :mod:`.scaleout`) carries URLs,
and each file is opened, pruned and planned here.  Consecutive small files'
rows are joined into batches of up to ``batchRows``: Spark's cost is per batch.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from .. import arrays as A
from ..datasets.dataset import Dataset
from ..datasets.fragment import Fragment
from ..model.errors import CsupError
from ..readers.held23 import from_held
from ..readers.opening import open as open_reader
from ..readers.reader import reader_from_meta
from ..stores import Store, shared_store
from .convert import conform
from .options import Settings
from .planning import CsupPartition, FilePart
from .scaleout import UnopenedPartition, open_and_read

_Columns = tuple[dict[str, A.Array], int, tuple[tuple[str, str], ...]]
_thread = threading.local()


def _worker_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, made once and kept for the partitions that follow."""
    loop = getattr(_thread, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread.loop = asyncio.new_event_loop()
    return loop


def fragment_of(fp: FilePart, paths: list[str], store: Store,
                reader_opts: dict[str, Any]) -> Fragment:
    """A planned file as a Fragment that runs the driver's plan (or, with none, gives
    its rows as nulls); ``fp.served``, the driver's bytes for the plan's served
    requests, are held by its reader, so they cost no request.  A file with no column
    index (``fp.whole``: SuperDB header layout, BSUP) is opened here and read by its
    reader's own scan."""
    if fp.whole and fp.held is not None:  # a v23 file: opened from the driver's bytes
        held = fp.held
        return Fragment(fp.url, opener=lambda url: from_held(
            url, fp.size, fp.version, held, store=store, objects=fp.objects, **reader_opts))
    if fp.whole:
        return Fragment(fp.url, opener=lambda url: open_reader(url, store=store, **reader_opts))
    reader = reader_from_meta(fp.url, fp.meta, fp.version, store=store,
                              available=fp.served, **reader_opts)
    return Fragment(fp.url, reader=reader, plan=fp.plan, plan_columns=paths,
                    unread=fp.plan is None)


async def _unopened(part: UnopenedPartition, schema: StructType, store: Store,
                    settings: Settings) -> AsyncIterator[_Columns]:
    """An unopened partition's files, in order, ``fileConcurrency`` in flight: each is
    opened, pruned, planned and read here (:func:`.scaleout.open_and_read`; a file's
    columns depend on its own types, so each is its own one-file read)."""
    names = [f.name for f in schema.fields]
    opts = settings.reader_options()
    urls = iter(part.urls)
    pending: collections.deque[asyncio.Future[_Columns]] = collections.deque()

    def submit() -> None:
        url = next(urls, None)
        if url is not None:
            pending.append(asyncio.ensure_future(
                open_and_read(url, names, part.filters, store, opts, part.request)))

    try:
        for _ in range(settings.file_concurrency):
            submit()
        while pending:
            got = await pending.popleft()
            submit()
            yield got
    finally:
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


async def _planned(part: CsupPartition, store: Store, settings: Settings
                   ) -> AsyncIterator[_Columns]:
    """A planned partition's rows, through the dataset scanner: its files in order,
    ``fileConcurrency`` read ahead, each by the driver's plan and the driver's request
    (``part.request``: its columns' paths and ``batchRows``, parsed there)."""
    request = part.request
    paths = list(request.columns or ())
    opts = settings.reader_options()
    if not paths:  # no column (a count): every file's rows, from its metadata
        for fp in part.files:
            yield {}, await fragment_of(fp, paths, store, opts).count_with(request), \
                part.columns
        return
    ds = Dataset([fragment_of(fp, paths, store, opts) for fp in part.files], store,
                 file_concurrency=settings.file_concurrency, missing_ok=True,
                 profile=opts.get("profile") or "local")
    batches = ds.batches_with(request, whole_files=True, files_ahead=settings.file_concurrency)
    async with contextlib.aclosing(batches):
        async for b in batches:
            yield b.columns, b.num_rows, part.columns


def read_partition(part: CsupPartition, schema: StructType, settings: Settings
                   ) -> Iterator[pa.RecordBatch]:
    """Record batches of ``schema`` for the partition's files, in file order; the rows
    of consecutive small files are joined into batches of up to ``batchRows`` rows
    (Spark's cost per batch is the same for 100 rows as for 65,536)."""
    first = part.urls[0] if isinstance(part, UnopenedPartition) and part.urls else (
        part.files[0].url if part.files else None)
    if first is None:
        return
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    loop = _worker_loop()
    store, _, shared = loop.run_until_complete(
        shared_store(first, **settings.store_options(first)))
    if isinstance(part, UnopenedPartition):
        files = _unopened(part, schema, store, settings)
    else:
        files = _planned(part, store, settings)

    def batches() -> Iterator[pa.RecordBatch]:
        while True:
            try:
                cols, n, columns = loop.run_until_complete(files.__anext__())
            except StopAsyncIteration:
                return
            yield from record_batches(cols, n, columns, arrow_schema, settings.batch_rows)

    try:
        yield from _joined(batches(), settings.batch_rows)
    finally:
        loop.run_until_complete(files.aclose())
        if not shared:
            loop.run_until_complete(store.close())


def _joined(batches: Iterator[pa.RecordBatch], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Consecutive batches joined up to ``batch_rows`` rows (order kept, none split)."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for b in batches:
        if held and rows + b.num_rows > batch_rows:
            yield held[0] if len(held) == 1 else pa.concat_batches(held)
            held, rows = [], 0
        if b.num_rows:
            held.append(b)
            rows += b.num_rows
    if held:
        yield held[0] if len(held) == 1 else pa.concat_batches(held)


def record_batches(cols: dict[str, A.Array], n: int, columns: tuple[tuple[str, str], ...],
             schema: pa.Schema, batch_rows: int) -> Iterator[pa.RecordBatch]:
    if not columns:
        for start in range(0, n, batch_rows):
            k = min(batch_rows, n - start)
            yield pa.RecordBatch.from_struct_array(pa.repeat(pa.scalar({}, pa.struct([])), k))
        return
    for start in range(0, n, batch_rows):
        stop = min(n, start + batch_rows)
        arrays = []
        for (name, path), f in zip(columns, schema, strict=True):
            col = cols.get(path)
            if col is None:
                arr = pa.nulls(stop - start, f.type)
            else:
                arr = conform(col.slice(start, stop), f.type, name)
            if not f.nullable and arr.null_count:
                raise CsupError(f"column {name} is declared NOT NULL but holds nulls")
            arrays.append(arr)
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)
