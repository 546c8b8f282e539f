"""``df.write.format("csup").save(dest)``: one CSUP file per task, committed by the driver.

The commit rule (no partial and no duplicate file is ever visible):

1. A task attempt builds its file locally (or in place on local disk) and
   uploads it, complete, to ``dest/_csup_staging/<job>/part-<p>-a<attempt>.csup``;
   names starting with ``_`` are hidden from readers, and the attempt number
   keeps a retried or speculative attempt from overwriting another.
2. The task's commit message names that object.  Spark hands the driver one
   message per partition, from the attempt it accepted.
3. ``commit`` (driver) moves exactly those objects to
   ``dest/part-<p>-<job>.csup`` (a rename on disk, copy + delete on S3; the
   names are fixed per partition and job, so a repeated commit rewrites the
   same names instead of adding files), then deletes the whole staging prefix
   (attempts that failed or lost), then writes ``_SUCCESS``.  With
   ``mode("overwrite")`` the visible files under ``dest`` are deleted first.
4. ``abort`` (driver) deletes the staging prefix; nothing was made visible.

What S3 cannot give: the moves of one commit are not atomic together, so a
reader listing during a commit may see some of the job's files but not others
(each one complete).  A task still running when its job aborts may leave a
staged object behind; it stays hidden.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from planner.partitions import format_partition_path

from ..model.errors import CsupError, UnsupportedTypeError
from ..writers import writing as W
from .listing import is_hidden
from .options import Settings, parse_options
from .sinks import Sink, sink_for

STAGING = "_csup_staging"


@dataclass
class CsupCommitMessage(WriterCommitMessage):
    partition: int
    attempt: int
    staged: str | None  # None: the task had no rows and wrote nothing
    rows: int
    size: int
    #: with ``partitionBy``: (staged object, its ``k=v/`` directories, size) per file
    files: tuple[tuple[str, str, int], ...] = ()


def _dest(path: str) -> str:
    if path.startswith("file://"):
        path = path[len("file://"):]
    return path.rstrip("/") if path.rstrip("/") else path


class CsupWriter(DataSourceArrowWriter):
    """Writes Spark's Arrow batches, one CSUP file per task (module docstring: the commit)."""

    def __init__(self, dest: str, settings: Settings, overwrite: bool) -> None:
        self.dest = _dest(dest)
        self.settings = settings
        self.overwrite = overwrite
        self.job = uuid.uuid4().hex

    def __repr__(self) -> str:
        return f"CsupWriter(job={self.job}, overwrite={self.overwrite})"

    @property
    def staging(self) -> str:
        return f"{self.dest}/{STAGING}/{self.job}/"

    def final_name(self, partition: int, directories: str = "") -> str:
        return f"{self.dest}/{directories}part-{partition:05d}-{self.job}.csup"

    def _sink(self) -> Sink:
        scheme = self.dest.split("://", 1)[0].lower() if "://" in self.dest else ""
        if scheme in ("", "s3", "s3a"):
            return sink_for(self.dest, self.settings.store_options(self.dest))
        return sink_for(self.dest, dict(self.settings.store))

    # ------------------------------------------------------------ executors ---
    def write(self, iterator: Iterator[pa.RecordBatch]) -> CsupCommitMessage:
        ctx = TaskContext.get()
        if ctx is None:
            raise CsupError("CsupWriter.write runs inside a Spark task")
        return self.write_task(iterator, ctx.partitionId(), ctx.attemptNumber())

    def write_task(self, batches: Iterable[pa.RecordBatch], partition: int,
                   attempt: int) -> CsupCommitMessage:
        """One attempt of one task: build the file, stage it, say where it is."""
        it = iter(batches)
        first = next(it, None)
        if first is None:
            return CsupCommitMessage(partition, attempt, None, 0, 0)
        if self.settings.partition_by:
            return asyncio.run(self._stage_partitioned(chain([first], it), partition, attempt))
        staged = f"{self.staging}part-{partition:05d}-a{attempt}.csup"
        return asyncio.run(self._stage(chain([first], it), first.schema, staged, partition,
                                       attempt))

    async def _stage(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema,
                     staged: str, partition: int, attempt: int) -> CsupCommitMessage:
        sink = self._sink()
        spool = None
        try:
            fd, spool = tempfile.mkstemp(prefix=".csup-spool-", suffix=".csup",
                                         dir=sink.spool_dir(staged))
            with os.fdopen(fd, "wb") as f:
                reader = pa.RecordBatchReader.from_batches(schema, batches)
                try:
                    rows = W.write(f, reader, **self.settings.writer_options())
                except UnsupportedTypeError as e:
                    raise UnsupportedTypeError(
                        f"{e.message}: cast such columns (decimals, times of day) to double "
                        "or string before writing CSUP") from None
            if rows == 0:
                return CsupCommitMessage(partition, attempt, None, 0, 0)
            # mkstemp makes 0600; a moved or uploaded local file keeps its mode, so give it
            # what open() gives csup_async.write and convert: 0666 less the umask
            os.chmod(spool, 0o666 & ~_umask())
            size = os.path.getsize(spool)
            await sink.put_file(spool, staged)
            return CsupCommitMessage(partition, attempt, staged, rows, size)
        finally:
            if spool is not None and os.path.exists(spool):
                os.unlink(spool)
            await sink.close()

    async def _stage_partitioned(self, batches: Iterator[pa.RecordBatch], partition: int,
                                 attempt: int) -> CsupCommitMessage:
        """One file per distinct value of the ``partitionBy`` columns, in ``k=v/``
        directories as Spark's file writers name them, without those columns.  The
        task's rows are held in memory to be split (Spark's own writer sorts instead)."""
        table = pa.Table.from_batches(list(batches))
        keys = self.settings.partition_by
        missing = [k for k in keys if k not in table.column_names]
        if missing:
            raise CsupError(f"partitionBy column(s) {', '.join(missing)} not in the data "
                            f"(columns: {', '.join(table.column_names)})")
        if len(set(keys)) == table.num_columns:
            raise CsupError("partitionBy cannot use every column: no data would be left")
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, combo in enumerate(zip(*(table.column(k).to_pylist() for k in keys),
                                      strict=True)):
            groups.setdefault(combo, []).append(i)
        data = table.drop_columns(list(keys))
        files, rows, size = [], 0, 0
        for combo, idx in groups.items():
            sub = data.take(pa.array(idx, pa.int64()))
            dirs = format_partition_path(dict(zip(keys, combo, strict=True)))
            staged = f"{self.staging}{dirs}part-{partition:05d}-a{attempt}.csup"
            m = await self._stage(iter(sub.to_batches()), sub.schema, staged, partition,
                                  attempt)
            if m.staged is not None:
                files.append((m.staged, dirs, m.size))
                rows, size = rows + m.rows, size + m.size
        return CsupCommitMessage(partition, attempt, None, rows, size, tuple(files))

    # --------------------------------------------------------------- driver ---
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        asyncio.run(self._commit(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        asyncio.run(self._abort())

    async def _commit(self, messages: list[WriterCommitMessage | None]) -> None:
        chosen: dict[int, CsupCommitMessage] = {}
        for m in messages:
            if isinstance(m, CsupCommitMessage) and (m.staged is not None or m.files):
                chosen.setdefault(m.partition, m)
        sink = self._sink()
        try:
            if self.overwrite:
                base = self.dest + "/"
                old = [k for k in await sink.list(base) if not is_hidden(base, k)]
                await sink.delete(old)
            sem = asyncio.Semaphore(16)

            moves = [(m.staged, self.final_name(m.partition), m.size) for m in chosen.values()
                     if m.staged is not None]
            moves += [(staged, self.final_name(m.partition, dirs), size)
                      for m in chosen.values() for staged, dirs, size in m.files]

            async def move(src: str, dst: str, size: int) -> None:
                async with sem:
                    await sink.move(src, dst, size)

            await asyncio.gather(*(move(*mv) for mv in moves))
            await sink.delete_prefix(self.staging)
            summary = {"job": self.job, "time": time.time(),
                       "files": sorted(dst[len(self.dest) + 1:] for _, dst, _ in moves),
                       "rows": sum(m.rows for m in chosen.values())}
            await sink.put_bytes(f"{self.dest}/_SUCCESS", json.dumps(summary).encode())
        finally:
            await sink.close()

    async def _abort(self) -> None:
        sink = self._sink()
        try:
            await sink.delete_prefix(self.staging)
        finally:
            await sink.close()


def writer_for(options: Any, overwrite: bool) -> CsupWriter:
    settings = parse_options(options, write=True)
    if len(settings.paths) != 1:
        raise CsupError("save(path) takes one destination (a directory or prefix)")
    return CsupWriter(settings.paths[0], settings, overwrite)


def _umask() -> int:
    """The process umask, read without changing it (os.umask sets it: racy with threads)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022
