"""The ``csup-async`` command: convert, cat, inspect, scan and plan CSUP files and datasets.

A URL names one object, or many: a prefix or directory (``s3://b/events/``,
``./events``), a glob (``'s3://b/events/*.csup'``) or several URLs.  Many
objects are read as one dataset (:func:`csup_async.open_dataset`): metadata
concurrently, files that cannot contribute pruned, rows in file order.

Errors print as one line on stderr with a distinct exit code per kind
(``--debug`` shows the traceback): 2 usage, 3 not found (object or column),
4 invalid or unsupported data, 5 store failure, 1 anything else.

Progress bars go to stderr, only when stderr is a terminal (``--progress`` /
``--no-progress`` override), so piped output stays exactly the data.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import os
import sys
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .errors import (
    ColumnNotFoundError,
    CsupError,
    EncodeError,
    FormatError,
    NotFoundError,
    StoreError,
    UnsupportedTypeError,
)

EXIT_OTHER, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DATA, EXIT_STORE = 1, 2, 3, 4, 5

#: Options that configure readers; every other option is the store's.
_READER_OPTIONS = ("profile", "concurrency")
_GLOB_CHARS = frozenset("*?[")


def _store_flags() -> argparse.ArgumentParser:
    """Store options as flags; credentials come from the environment (never from argv)."""
    s = argparse.ArgumentParser(add_help=False)
    g = s.add_argument_group("store options (also from AWS_*, GOOGLE_*, STORAGE_EMULATOR_HOST)")
    g.add_argument("--endpoint-url", help="S3-compatible endpoint (e.g. http://127.0.0.1:9000)")
    g.add_argument("--region", help="S3 region")
    g.add_argument("--anonymous", action="store_true", help="unsigned S3 / anonymous GCS")
    g.add_argument("--concurrency", type=int, default=None, help="requests in flight per file")
    g.add_argument("--file-concurrency", type=int, default=None,
                   help="files read at once in a multi-file source (default 64)")
    g.add_argument("--no-verify-ssl", action="store_true", help="skip TLS verification")
    return s


def _common_flags(p: argparse.ArgumentParser, default: Any) -> argparse.ArgumentParser:
    """--debug and --progress, before or after the command (SUPPRESS keeps the first one)."""
    p.add_argument("--debug", action="store_true", default=default or False,
                   help="show tracebacks on errors")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=default,
                   help="progress bars on stderr (default: when stderr is a terminal)")
    return p


def _parser() -> argparse.ArgumentParser:
    p = _common_flags(argparse.ArgumentParser(
        prog="csup-async", description="Read and write Super Columnar (CSUP) files.",
        epilog="URL: one object, or a prefix/directory, a glob or several URLs (a dataset)."),
        None)
    sub = p.add_subparsers(dest="command", required=True)
    common = _common_flags(argparse.ArgumentParser(add_help=False), argparse.SUPPRESS)
    store = _store_flags()
    urls = {"nargs": "+", "metavar": "URL",
            "help": "an object, or many: a prefix or directory, a glob, several URLs"}

    c = sub.add_parser("convert", parents=[common, store],
                       help="convert between CSUP, BSUP/ZNG, JSON/NDJSON, Parquet")
    c.add_argument("input", help="a file, or CSUP objects (URL, prefix or glob)")
    c.add_argument("output", help="a .csup or .bsup file")
    c.add_argument("--segment-thresh", type=int, default=None)
    c.add_argument("--skew-thresh", type=int, default=None)
    c.add_argument("--no-compress", action="store_true")

    c = sub.add_parser("demo", help="sample data -> local S3 server -> planned scan",
                       parents=[common])
    c.add_argument("--rows", type=int, default=100_000)

    c = sub.add_parser("cat", parents=[common, store],
                       help="print every value as deterministic JSON lines")
    c.add_argument("input", help="a file, or CSUP objects (URL, prefix or glob)")

    c = sub.add_parser("inspect", help="trailer, sections, super types and column tree",
                       parents=[common, store])
    c.add_argument("url", **urls)

    for name, helptext in (("scan", "read a projection of columns"),
                           ("plan", "show the reads a projection needs")):
        c = sub.add_parser(name, help=helptext, parents=[common, store])
        c.add_argument("url", **urls)
        c.add_argument("-c", "--columns", default=None, help="comma-separated dotted paths")
        c.add_argument("--profile", default=None, help="planner profile: s3, gcs, http, local")
        if name == "scan":
            c.add_argument("--format", choices=("table", "json", "csv"), default=None,
                           help="default: table on a terminal, JSON lines when piped")
            c.add_argument("--limit", type=int, default=None, help="print the first N rows")
            c.add_argument("--explain", action="store_true",
                           help="print the plan first (to stderr with json/csv)")
            c.add_argument("--stats", action="store_true",
                           help="requests, bytes read vs needed, time (to stderr)")
    return p


def _exit_code(e: CsupError) -> int:
    if isinstance(e, (NotFoundError, ColumnNotFoundError)):
        return EXIT_NOT_FOUND
    if isinstance(e, (FormatError, UnsupportedTypeError, EncodeError)):
        return EXIT_DATA
    if isinstance(e, StoreError):
        return EXIT_STORE
    return EXIT_OTHER


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args) or 0
    except CsupError as e:
        if args.debug:
            traceback.print_exc()
        print(f"csup-async: error: {e}", file=sys.stderr)
        return _exit_code(e)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


# --------------------------------------------------------------- progress ---
def _progress_on(args: argparse.Namespace) -> bool:
    flag = getattr(args, "progress", None)
    return sys.stderr.isatty() if flag is None else bool(flag)


@contextlib.contextmanager
def _bar(args: argparse.Namespace, unit: str = "bytes") -> Iterator[Any]:
    """A transient rich progress display on stderr, or None when progress is off.

    stderr, not stdout: the data a command prints must stay exactly the data
    when it is piped or redirected, with or without a bar.
    """
    if not _progress_on(args):
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    console = Console(stderr=True, force_terminal=True if args.progress else None)
    amount: tuple[Any, ...] = ((DownloadColumn(), TransferSpeedColumn()) if unit == "bytes"
                               else (MofNCompleteColumn(),) if unit == "files"
                               else (TextColumn("{task.completed:,} " + unit),))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), *amount,
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        yield bar


def _progress(values: Any, label: str, args: argparse.Namespace) -> Any:
    """Count values on a live line when progress is on; pass them through untouched if not."""
    from .arrow_input import ArrowValues

    if not _progress_on(args):
        return values
    if isinstance(values, ArrowValues):  # count whole batches: the writer's fast path stays
        return ArrowValues(_counted_batches(values.source, label, args))
    return _counted_values(values, label, args)


def _counted_values(values: Any, label: str, args: argparse.Namespace) -> Iterator[Any]:
    with _bar(args, unit="values") as bar:
        task = bar.add_task(label, total=None)
        for i, v in enumerate(values, 1):
            yield v
            if i % 1000 == 0:
                bar.update(task, completed=i)


def _counted_batches(batches: Any, label: str, args: argparse.Namespace) -> Iterator[Any]:
    """Record batches as they are, with their rows counted: still Arrow, still vectorised."""
    with _bar(args, unit="rows") as bar:
        task = bar.add_task(label, total=None)
        for batch in batches:
            yield batch
            bar.advance(task, batch.num_rows)


class _Metered:
    """A store that reports what arrives (tail reads, data bytes) to a progress display.

    Wrapping the store, not the reader, measures exactly what the dataset and
    reader code read, without a hook in either; everything else is delegated.
    """

    def __init__(self, store: Any) -> None:
        self._store = store
        self.on_tail: Callable[[], None] = lambda: None
        self.on_bytes: Callable[[int], None] = lambda n: None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def read_tail(self, key: str, length: int) -> Any:
        tail = await self._store.read_tail(key, length)
        self.on_tail()
        return tail

    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> Any:
        data = await self._store.read_range(key, offset, length, version)
        self.on_bytes(len(data))
        return data

    async def stream_range(self, key: str, offset: int, length: int,
                           version: str | None = None) -> AsyncIterator[bytes]:
        async with contextlib.aclosing(self._store.stream_range(key, offset, length,
                                                                version)) as chunks:
            async for chunk in chunks:
                self.on_bytes(len(chunk))
                yield chunk

    async def close(self) -> None:
        await self._store.close()


# ---------------------------------------------------------------- sources ---
def _urls(args: argparse.Namespace) -> list[str]:
    raw = args.url if hasattr(args, "url") else args.input
    return list(raw) if isinstance(raw, list) else [raw]


def _options(args: argparse.Namespace, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(store options, reader options) from the flags, only those that apply to the URL."""
    reader: dict[str, Any] = {}
    if getattr(args, "profile", None):
        reader["profile"] = args.profile
    if getattr(args, "concurrency", None):
        reader["concurrency"] = args.concurrency
    store: dict[str, Any] = {}
    s3 = url.startswith(("s3://", "s3a://"))
    remote = "://" in url and not url.startswith("file://")
    if s3 and getattr(args, "endpoint_url", None):
        store["endpoint_url"] = args.endpoint_url
    if s3 and getattr(args, "region", None):
        store["region"] = args.region
    if remote and getattr(args, "anonymous", False) and (
            s3 or url.startswith(("gs://", "gcs://"))):
        store["anonymous"] = True
    if remote and getattr(args, "no_verify_ssl", False) and not url.startswith("memory://"):
        store["verify_ssl"] = False
    return store, reader


def _looks_many(url: str) -> bool:
    """A glob, a prefix ending in ``/`` or a local directory: many objects, by its spelling.

    Never an ``http(s)://`` URL: HTTP cannot list, and ``?`` starts its query string.
    """
    if url.startswith(("http://", "https://")):
        return False
    if _GLOB_CHARS & set(url) or url.endswith("/"):
        return True
    local = url[len("file://"):] if url.startswith("file://") else url
    return "://" not in local and os.path.isdir(local)


class _Source:
    """One object (a Reader) or many (a Dataset) behind one store the command owns."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .stores import store_for

        self.args = args
        self.urls = _urls(args)
        store_opts, self.reader_opts = _options(args, self.urls[0])
        self.store = _Metered(store_for(self.urls[0], **store_opts)[0])
        self.reader: Any = None
        self.dataset: Any = None

    @property
    def label(self) -> str:
        from .stores import redact_url

        return " ".join(redact_url(u) for u in self.urls)

    async def open(self) -> Any:
        """The Reader or Dataset for the URLs (closed by :meth:`close`)."""
        from .dataset import list_sources
        from .reader import open as open_reader

        one = self.urls[0]
        if len(self.urls) == 1 and not _looks_many(one):
            try:
                self.reader = await open_reader(one, store=self.store, **self.reader_opts)
                return self.reader
            except NotFoundError:  # ``s3://b/events`` may be a prefix, as Spark reads it
                if "://" not in one or not hasattr(self.store._store, "list"):
                    raise
                found = await list_sources(one.rstrip("/") + "/", self.store)
                if not found:
                    raise
        else:
            found = []
            for url in self.urls:
                found += await list_sources(url, self.store)
        if not found:
            raise NotFoundError("no objects match", path=self.label)
        return await self._open_dataset(found)

    async def _open_dataset(self, found: list[str]) -> Any:
        from .dataset import open_dataset

        opts = dict(self.reader_opts)
        if getattr(self.args, "file_concurrency", None):
            opts["file_concurrency"] = self.args.file_concurrency
        with _bar(self.args, unit="files") as bar:
            if bar is not None:
                task = bar.add_task(f"reading metadata of {len(found):,} objects",
                                    total=len(found))
                self.store.on_tail = lambda: bar.advance(task)
            try:
                self.dataset = await open_dataset(found, store=self.store, **opts)
            finally:
                self.store.on_tail = lambda: None
        return self.dataset

    async def close(self) -> None:
        try:
            if self.reader is not None:
                await self.reader.close()
            if self.dataset is not None:
                await self.dataset.close()
        finally:
            await self.store.close()

    async def __aenter__(self) -> Any:
        try:
            return await self.open()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(self, fn: Callable[[Any], Any]) -> Any:
        """``await fn(reader_or_dataset)``, with errors that know no object naming the URLs."""
        try:
            async with self as src:
                return await fn(src)
        except CsupError as e:
            raise e.with_path(self.label) from None


def _is_csup_source(url: str) -> bool:
    """CSUP is read through a store (any URL, prefix, glob); other formats from a local file."""
    from .inputs import CSUP_EXT, kind_of

    if not ("://" in url and not url.startswith("file://")):
        return _looks_many(url) or url.lower().endswith(CSUP_EXT)
    try:
        kind = kind_of(url)
    except CsupError:  # a remote name without a known ending: taken as CSUP
        return True
    if kind != "csup":
        from .stores import redact_url

        raise CsupError(f"{kind} input is read from local files only (download it first)",
                        path=redact_url(url))
    return True


def _csup_values(args: argparse.Namespace) -> Iterator[Any]:
    """Every value of one CSUP object or of each object of a dataset in turn, as ``Value``s.

    One file's values are in memory at a time; the event loop lives across
    the generator's steps (``asyncio.Runner``) so the store's connections do too.
    """
    source = _Source(args)
    with asyncio.Runner() as runner:
        try:
            opened = runner.run(source.__aenter__())
        except CsupError as e:
            raise e.with_path(source.label) from None
        try:
            for r in opened.readers if source.dataset is not None else [opened]:
                try:
                    values = runner.run(r.read_values())
                except CsupError as e:
                    raise e.with_path(r.path) from None
                yield from values
        finally:
            runner.run(source.close())


def _values(args: argparse.Namespace) -> Any:
    """Values of the input: CSUP through a store (any URL, prefix, glob), others from a file."""
    if _is_csup_source(args.input):
        return _csup_values(args)
    from .inputs import read_values

    return read_values(args.input)


# --------------------------------------------------------------- commands ---
def _convert(args: argparse.Namespace) -> int:
    from .inputs import kind_of

    out_kind = kind_of(args.output)
    label = f"converting {os.path.basename(args.input.rstrip('/')) or args.input}"
    values = _progress(_values(args), label, args)
    if out_kind == "csup":
        from .writing import write

        opts: dict[str, Any] = {}
        if args.segment_thresh:
            opts["segment_thresh"] = args.segment_thresh
        if args.skew_thresh:
            opts["skew_thresh"] = args.skew_thresh
        if args.no_compress:
            opts["compress"] = False
        n = write(args.output, values, **opts)
    elif out_kind == "bsup":
        n = _write_bsup(args.output, values)
    else:
        raise CsupError("output must be .csup or .bsup", path=args.output)
    print(f"wrote {n:,} values to {args.output}", file=sys.stderr)
    return 0


def _write_bsup(path: str, values: Any) -> int:
    from .bsup import StreamEncoder, encode_value
    from .values import Value, infer_type

    tmp = f"{path}.tmp-{os.getpid()}"
    n = 0
    try:
        with open(tmp, "wb") as f:
            enc = StreamEncoder(f)
            for v in values:
                t, x = (v.type, v.value) if isinstance(v, Value) else (infer_type(v), v)
                enc.write_body(t, encode_value(t, x))
                n += 1
            enc.end_stream()
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n


def _cat(args: argparse.Namespace) -> int:
    from .jsonout import dumps
    from .values import Value

    out = sys.stdout
    for v in _values(args):
        out.write(dumps(v.to_python() if isinstance(v, Value) else v))
        out.write("\n")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    """One object's layout; for many, each object's in turn (file order)."""
    from .inspect import describe_file

    async def run(src: Any) -> str:
        readers = src.readers if hasattr(src, "readers") else [src]
        return "\n\n".join(describe_file(r.meta, r.path) for r in readers)

    print(asyncio.run(_Source(args).run(run)))
    return 0


def _plan(args: argparse.Namespace) -> int:
    async def run(src: Any) -> str:
        return (await src.plan(args.columns)).explain()

    print(asyncio.run(_Source(args).run(run)))
    return 0


def _scan(args: argparse.Namespace) -> int:
    from .jsonout import dumps, json_value

    source = _Source(args)

    async def run(src: Any) -> tuple[Any, Any]:
        plan = await src.plan(args.columns)
        files = len(getattr(plan, "files", ())) or 1
        with _bar(args) as bar:
            if bar is not None:
                what = f"{files:,} objects" if source.dataset is not None else "1 object"
                task = bar.add_task(f"scanning {what}", total=plan.bytes_to_read or None)
                source.store.on_bytes = lambda n: bar.advance(task, n)
            if source.dataset is not None and args.limit is not None:
                result = await src.scan(args.columns, limit=args.limit)  # reads only enough files
            else:
                result = await src.scan(args.columns)
            if bar is not None:
                bar.update(task, completed=plan.bytes_to_read)
        return result, plan if args.explain else None

    result, plan = asyncio.run(source.run(run))
    if plan is not None:
        print(plan.explain(), file=sys.stderr if args.format in ("json", "csv") else sys.stdout)
    rows = result.to_pylist()
    if args.limit is not None:
        rows = rows[: args.limit]
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        for row in rows:
            sys.stdout.write(dumps(row) + "\n")
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(list(result.columns))
        for row in rows:
            w.writerow([_cell(json_value(v)) for v in row.values()])
        sys.stdout.write(buf.getvalue())
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(*result.columns.keys(), show_lines=False)
        for row in rows:
            table.add_row(*(_cell(json_value(v)) for v in row.values()))
        Console().print(table)
    if args.stats:
        sys.stdout.flush()  # rows before stats when both go to one terminal or file
        extra = (f", {len(source.dataset.files):,} objects, "
                 f"{result.stats.metadata_requests} metadata requests"
                 if source.dataset is not None else "")
        print(f"stats: {result.stats}{extra}", file=sys.stderr)
    return 0


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        import json

        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return str(v)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(args.rows)


COMMANDS = {"demo": _demo, "convert": _convert, "cat": _cat, "inspect": _inspect, "scan": _scan,
            "plan": _plan}

if __name__ == "__main__":
    sys.exit(main())
