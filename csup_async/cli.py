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
import json
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


def _store_flags() -> argparse.ArgumentParser:
    """Store options as flags; credentials come from the environment (never from argv)."""
    s = argparse.ArgumentParser(add_help=False)
    g = s.add_argument_group("store options (also from AWS_*, GOOGLE_*, STORAGE_EMULATOR_HOST)")
    g.add_argument("--endpoint-url", help="S3-compatible endpoint (e.g. http://127.0.0.1:9000), "
                   "or a GCS JSON-API endpoint for gs:// URLs")
    g.add_argument("--region", help="S3 region")
    g.add_argument("--anonymous", action="store_true", help="unsigned S3 / anonymous GCS")
    g.add_argument("--request-payer", action="store_true",
                   help="S3: pay for the requests to a requester-pays bucket")
    g.add_argument("--concurrency", type=int, default=None, help="requests in flight per file")
    g.add_argument("--file-concurrency", type=int, default=None,
                   help="files read at once in a multi-file source (default 64)")
    g.add_argument("--no-verify-ssl", action="store_true", help="skip TLS verification")
    g.add_argument("--no-verify", action="store_true",
                   help="skip the segments' crc32 checks (value counts are still checked)")
    return s


def _common_flags(p: argparse.ArgumentParser, default: Any) -> argparse.ArgumentParser:
    """--debug and --progress, before or after the command (SUPPRESS keeps the first one)."""
    p.add_argument("--debug", action="store_true", default=default or False,
                   help="show tracebacks on errors")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=default,
                   help="progress bars on stderr (default: when stderr is a terminal)")
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("csup-async")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``, looked up only when asked: reading the package metadata scans
    every installed distribution (tens of ms), a cost no other command should pay."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str = "show the version and exit"
                 ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser._print_message(f"{parser.prog} {_version()}\n", sys.stdout)
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = _common_flags(argparse.ArgumentParser(
        prog="csup-async", description="Read and write Super Columnar (CSUP) files.",
        epilog="URL: one object, or a prefix/directory, a glob or several URLs (a dataset)."),
        None)
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True)
    common = _common_flags(argparse.ArgumentParser(add_help=False), argparse.SUPPRESS)
    store = _store_flags()
    urls = {"nargs": "+", "metavar": "URL",
            "help": "an object, or many: a prefix or directory, a glob, several URLs"}

    c = sub.add_parser(
        "convert", parents=[common, store],
        help="convert between CSUP, BSUP/ZNG, JSON/NDJSON, Parquet",
        description="Convert a file (BSUP/ZNG, JSON/NDJSON, Parquet, CSUP) or CSUP objects to "
                    "a .csup or .bsup file.",
        epilog="What changes on the way: JSON integers become int64 (uint64 above its range), "
               "other numbers float64; Parquet/Arrow timestamps of any unit become time (ns, "
               "UTC) and date32/date64 become time at midnight UTC; decimals and times of day "
               "are refused. Several inputs must all be CSUP (read as one dataset).")
    c.add_argument("input", nargs="+",
                   help="a file, or CSUP objects (URL, prefix, glob or several URLs)")
    c.add_argument("output", help="a .csup or .bsup file")
    c.add_argument("--segment-thresh", type=int, default=None, metavar="BYTES",
                   help="cut a column's segment once it holds this many bytes "
                        "(CSUP output; default 1 MiB)")
    c.add_argument("--skew-thresh", type=int, default=None, metavar="BYTES",
                   help="flush every column once the buffered data reaches this many bytes, "
                        "bounding memory (CSUP output; default 64 MiB)")
    c.add_argument("--no-compress", action="store_true",
                   help="store segments uncompressed (default: LZ4 where it saves space)")

    c = sub.add_parser("demo", help="sample data -> local S3 server -> planned scan",
                       parents=[common])
    c.add_argument("--rows", type=int, default=100_000,
                   help="rows of sample data to write (default 100000)")

    c = sub.add_parser("cat", parents=[common, store],
                       help="print every value as deterministic JSON lines")
    c.add_argument("input", nargs="+",
                   help="a file, or CSUP objects (URL, prefix, glob or several URLs)")
    c.add_argument("--match", default=None, metavar="PATTERN", help=_MATCH_HELP)
    c.add_argument("--where", default=None, metavar="FILTER", help=_WHERE_HELP)

    c = sub.add_parser("inspect", help="trailer, sections, super types and column tree",
                       parents=[common, store])
    c.add_argument("url", **urls)
    c.add_argument("--match", default=None, metavar="PATTERN", help=_MATCH_HELP)
    c.add_argument("--json", action="store_true",
                   help="one JSON object per file (statistics per column included)")
    c.add_argument("--verify", action="store_true",
                   help="read every segment of every column and check its crc32, value "
                        "count and decoding; name every failing segment and exit 4")

    for name, helptext in (("scan", "read a projection of columns"),
                           ("plan", "show the reads a projection needs")):
        c = sub.add_parser(name, help=helptext, parents=[common, store])
        c.add_argument("url", **urls)
        c.add_argument("-c", "--columns", default=None, metavar="PATHS", help=_COLUMNS_HELP)
        c.add_argument("--profile", default=None, help="planner profile: s3, gcs, http, local")
        c.add_argument("--match", default=None, metavar="PATTERN", help=_MATCH_HELP)
        c.add_argument("--where", default=None, metavar="FILTER", help=_WHERE_HELP)
        if name == "scan":
            c.add_argument("--format", choices=("table", "json", "csv"), default=None,
                           help="default: table on a terminal, JSON lines when piped")
            c.add_argument("--limit", type=int, default=None, metavar="N",
                           help="print the first N rows (N >= 0) and read only what they need")
            c.add_argument("--explain", action="store_true",
                           help="print the plan first (to stderr with json/csv)")
            c.add_argument("--stats", action="store_true",
                           help="requests, bytes read vs needed, time (to stderr)")
        else:
            c.add_argument("--explain", action="store_true",
                           help="accepted for symmetry with scan: plan always explains")
    from .lake.cli import add_parser as add_lake_parser

    add_lake_parser(sub, common, store)
    return p


_COLUMNS_HELP = ("comma-separated column paths: a.b is field b of record a; backquote a name "
                 "holding a dot, comma, backquote or outer spaces (`a.b`, `x``y`); spaces "
                 "around names are ignored. Default: every top-level column")
_MATCH_HELP = ("which objects of a directory or prefix are read (default '*.csup'; '*' for "
               "all); others are skipped and named on stderr. Globs and named objects are "
               "read as given")


_WHERE_HELP = (
    "keep the rows this filter is true for (SQL WHERE: null and missing fields match "
    "nothing), e.g. \"ts >= '2024-01-01T00:00:00Z' and kind = 'push'\". Grammar: "
    "PATH OP LITERAL (OP: = == != <> < <= > >=), PATH [not] in (LIT, ...), PATH is [not] "
    "null, PATH startswith 'text', combined with and, or, not and parentheses; literals: "
    "numbers, 'strings' (a quote doubled: 'it''s'), true, false; a string compared with a "
    "time column is an RFC 3339 time. Files whose statistics rule every row out are "
    "not read")


class UsageError(CsupError):
    """A command line that makes no sense (exit code 2)."""


def _check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse what argparse cannot: an empty column list, a negative limit, bad paths."""
    from planner import InvalidPathError, parse_columns

    if getattr(args, "columns", None) is not None:
        if not args.columns.strip():
            p.error("-c/--columns needs at least one column (leave it out for every column)")
        try:
            parse_columns(args.columns)
        except InvalidPathError as e:
            p.error(str(e))
    if getattr(args, "limit", None) is not None and args.limit < 0:
        p.error(f"--limit must be 0 or more, not {args.limit}")
    if getattr(args, "where", None) is not None and args.command in ("scan", "cat", "plan"):
        from planner.filters import FilterError, parse_filter

        try:
            csup = args.command != "cat" or _is_csup_input(args)
        except CsupError as e:
            p.error(str(e))
        if not csup:
            p.error("--where reads CSUP objects only (convert the file first)")
        try:
            args.where = parse_filter(args.where)
        except FilterError as e:
            p.error(f"--where: {e}")


def _exit_code(e: CsupError) -> int:
    from planner import FilterError, InvalidPathError

    if isinstance(e, (UsageError, InvalidPathError, FilterError)):
        return EXIT_USAGE
    if isinstance(e, (NotFoundError, ColumnNotFoundError)):
        return EXIT_NOT_FOUND
    if isinstance(e, (FormatError, UnsupportedTypeError, EncodeError)):
        return EXIT_DATA
    if isinstance(e, StoreError):
        return EXIT_STORE
    return EXIT_OTHER


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _check(parser, args)
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

    @property
    def metered(self) -> Any:
        """The store whose reads this one counts."""
        return self._store

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
    if getattr(args, "no_verify", False):
        reader["verify_checksums"] = False
    store: dict[str, Any] = {}
    s3 = url.startswith(("s3://", "s3a://"))
    remote = "://" in url and not url.startswith("file://")
    gcs = url.startswith(("gs://", "gcs://"))
    if s3 and getattr(args, "endpoint_url", None):
        store["endpoint_url"] = args.endpoint_url
    if gcs and getattr(args, "endpoint_url", None):
        store["endpoint"] = args.endpoint_url
    if s3 and getattr(args, "region", None):
        store["region"] = args.region
    if s3 and getattr(args, "request_payer", False):
        store["request_payer"] = True
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
    from .stores.listing import has_glob

    if url.startswith(("http://", "https://")):
        return False
    if has_glob(url) or url.endswith("/"):
        return True
    local = url[len("file://"):] if url.startswith("file://") else url
    return "://" not in local and os.path.isdir(local)


class _Source:
    """One object (a Reader) or many (a Dataset) behind one store the command owns."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .opening import warm_up
        from .stores import store_for

        warm_up()  # the reader's side imports in a thread while the store's side does here
        self.args = args
        self.urls = _urls(args)
        store_opts, self.reader_opts = _options(args, self.urls[0])
        self.store = _Metered(store_for(self.urls[0], **store_opts)[0])
        self.reader: Any = None
        self.dataset: Any = None
        self.skipped: list[str] = []

    @property
    def match(self) -> str | None:
        """Which objects of a prefix are read (looked up only for many objects: the
        dataset module is not loaded before one object's first request)."""
        from .stores.listing import DEFAULT_MATCH

        raw = getattr(self.args, "match", None)
        return None if raw == "*" else (raw or DEFAULT_MATCH)

    @property
    def label(self) -> str:
        from .stores import redact_url

        return " ".join(redact_url(u) for u in self.urls)

    async def open(self) -> Any:
        """The Reader or Dataset for the URLs (closed by :meth:`close`)."""
        from .opening import open as open_reader
        from .stores.capabilities import Lister

        one = self.urls[0]
        if len(self.urls) == 1 and not _looks_many(one):
            try:
                self.reader = await open_reader(one, store=self.store, **self.reader_opts)
                return self.reader
            except NotFoundError:  # ``s3://b/events`` may be a prefix, as Spark reads it
                if "://" not in one or not isinstance(self.store.metered, Lister):
                    raise
                from .dataset import list_sources

                found = await list_sources(one.rstrip("/") + "/", self.store,
                                           match=self.match, skipped=self.skipped)
                if not found and not self.skipped:
                    raise
        else:
            from .dataset import list_sources

            found = []
            for url in self.urls:
                found += await list_sources(url, self.store, match=self.match,
                                            skipped=self.skipped)
        if self.skipped:
            from .stores import redact_url

            names = ", ".join(redact_url(u) for u in self.skipped[:5])
            more = f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            print(f"csup-async: skipped {len(self.skipped)} object(s) not matching "
                  f"{self.match!r}: {names}{more}", file=sys.stderr)
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


def _is_csup_input(args: argparse.Namespace) -> bool:
    """Whether the inputs are CSUP objects (read as one source) or one file of another format."""
    inputs = _urls(args)
    kinds = [_is_csup_source(u) for u in inputs]
    if all(kinds):
        return True
    if len(inputs) > 1:
        raise UsageError("several inputs must all be CSUP objects (read as one dataset); "
                         "convert other formats one file at a time")
    return False


def _values(args: argparse.Namespace) -> Any:
    """Values of the input: CSUP through a store (any URL, prefix, glob), others from a file."""
    if _is_csup_input(args):
        return _csup_values(args)
    from .inputs import read_values

    return read_values(_urls(args)[0])


# --------------------------------------------------------------- commands ---
def _convert(args: argparse.Namespace) -> int:
    from .inputs import kind_of

    try:
        out_kind = kind_of(args.output)
    except CsupError:
        out_kind = None
    if out_kind not in ("csup", "bsup"):
        raise UsageError("the output must be a .csup or .bsup file", path=args.output)
    first = args.input[0]
    label = f"converting {os.path.basename(first.rstrip('/')) or first}"
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
    else:
        n = _write_bsup(args.output, values)
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
    """Every value as a JSON line; CSUP objects stream in batches of rows, vectorised."""
    from . import jsonout as J
    from .values import Value

    out = sys.stdout.buffer
    if not _is_csup_input(args):
        for v in _values(args):
            out.write((J.dumps(v.to_python() if isinstance(v, Value) else v) + "\n").encode())
        return 0
    fast = J.have_pyarrow()

    async def run(src: Any) -> None:
        for r in _readers(src, args.where):
            # smaller batches than scan's: every column of the row is printed, and each
            # batch's text (and the next batch decoding meanwhile) is held at once
            _plan_per_segment(r)
            it = r.iter_batches([""], batch_rows=CAT_BATCH_ROWS, prefetch=STREAM_PREFETCH,
                                filter=args.where)
            async with contextlib.aclosing(it), contextlib.aclosing(_one_ahead(it)) as ahead:
                async for batch in ahead:
                    arr = batch.columns[""]
                    out.write(await _render(J.value_lines, arr) if fast else "".join(
                        J.dumps(v) + "\n" for v in arr.to_pylist()).encode())
                    out.flush()

    asyncio.run(_Source(args).run(run))
    return 0


def _inspect(args: argparse.Namespace) -> int:
    """One object's layout and statistics; for many, each object's in turn (file order).
    ``--verify`` reads and checks every segment and reports every failure (exit 4)."""
    from .describe import check_json, check_lines, describe_file, file_json
    from .read.verify import verify_file

    failed = False

    async def run(src: Any) -> str:
        nonlocal failed
        readers = src.readers if hasattr(src, "readers") else [src]
        parts = []
        for r in readers:
            check = await verify_file(r) if args.verify else None
            failed = failed or (check is not None and not check.ok)
            rows = await r.count_rows() if check is None or check.ok else r.num_rows
            if args.json:
                doc = file_json(r.meta, r.path, rows)
                if check is not None:
                    doc["verify"] = check_json(check)
                parts.append(json.dumps(doc))
            else:
                text = describe_file(r.meta, r.path, rows)
                parts.append(text + ("\n" + "\n".join(check_lines(check)) if check else ""))
        return ("\n" if args.json else "\n\n").join(parts)

    print(asyncio.run(_Source(args).run(run)))
    if failed:
        print("csup-async: verify failed: see the errors above", file=sys.stderr)
    return EXIT_DATA if failed else 0


def _readers(src: Any, where: Any) -> list[Any]:
    """The readers to read: a dataset's files its filter's statistics do not rule out."""
    if not hasattr(src, "readers"):
        return [src]
    if where is None:
        return list(src.readers)
    return src.prune_by_statistics(where)[0]


def _plan(args: argparse.Namespace) -> int:
    async def run(src: Any) -> str:
        return (await src.plan(args.columns, filter=args.where)).explain()

    print(asyncio.run(_Source(args).run(run)))
    return 0


BATCH_ROWS = 65536
CAT_BATCH_ROWS = 16384
TABLE_ROWS = 1000
#: Segment-sized requests read ahead of the batch being decoded when streaming: enough
#: to keep a remote store busy, few enough that memory stays near one segment a column.
STREAM_PREFETCH = 4
_RENDER: Any = None


async def _render(fn: Callable[[Any], bytes], batch: Any) -> bytes:
    """``fn(batch)`` in the one output thread: Arrow's kernels release the GIL, so the
    next batch decodes meanwhile; one thread, as Arrow's allocator keeps memory per
    thread and a pool of them would each keep a batch's worth."""
    return await asyncio.get_running_loop().run_in_executor(_render_pool(), fn, batch)


def _render_pool() -> Any:
    global _RENDER
    if _RENDER is None:
        from concurrent.futures import ThreadPoolExecutor

        _RENDER = ThreadPoolExecutor(1, thread_name_prefix="csup-cli-render")
    return _RENDER


def _column_list(src: Any, columns: str | None) -> list[str]:
    """The canonical paths to print: the ones asked for, or every file's top-level columns."""
    import planner as P

    parsed = P.parse_columns(columns)
    if parsed is not None:
        return [spelling for spelling, _ in parsed]
    readers = src.readers if hasattr(src, "readers") else [src]
    seen: dict[str, None] = {}
    for r in readers:
        seen.update(dict.fromkeys(r._paths(None)))
    return list(seen)


#: Projections of a file that decode to at most this many bytes are read whole with the
#: parallel decoder (faster), then printed in batches; larger ones stream batch by batch.
WHOLE_SCAN_BYTES = 64 << 20


async def _batches(src: Any, cols: list[str], limit: int | None, stats: Any,
                   batch_rows: int = BATCH_ROWS, where: Any = None
                   ) -> AsyncIterator[dict[str, Any]]:
    """Columns of ``cols`` in batches of rows, file by file, stopping once ``limit`` rows are
    out (the batch readers are closed then, so nothing further is fetched).

    Memory holds one batch and what decoding it needs, or a whole projection
    when it decodes to at most ``WHOLE_SCAN_BYTES``.  ``stats`` accumulates
    what every file's reads cost.
    """
    from . import arrays as A
    from .dataset import absent_paths
    from .types import NULL

    readers = _readers(src, where)
    left = limit
    rows = min(batch_rows, left) if left is not None else batch_rows
    for r in readers:
        if left is not None and left <= 0:
            return
        present = [c for c in cols if c not in absent_paths(r, c)]
        if not present and where is not None:  # the matching rows' count, as nulls
            from planner import format_path
            from planner.filters import columns_of

            needed = [p for p in dict.fromkeys(format_path(c) for c in columns_of(where))
                      if p not in absent_paths(r, p)] or r._paths(None)
            async for _, n in _file_batches(r, needed, rows, left, stats, where):
                yield {c: A.null_array(NULL, n) for c in cols}
                if left is not None:
                    left -= n
            continue
        if not present:  # nothing of this file is printed but its row count, as nulls
            n = r.num_rows if r.num_rows is not None else await r.count_rows()
            n = n if left is None else min(n, left)
            for lo in range(0, n, rows):
                k = min(rows, n - lo)
                yield {c: A.null_array(NULL, k) for c in cols}
            if left is not None:
                left -= n
            continue
        async for got, n in _file_batches(r, present, rows, left, stats, where):
            # [null] beside [string] and the like print as the one type, as to_arrow gives
            yield {c: A.fold_nulls(got[c]) if c in got else A.null_array(NULL, n)
                   for c in cols}
            if left is not None:
                left -= n


async def _file_batches(r: Any, paths: list[str], rows: int, left: int | None, stats: Any,
                        where: Any = None) -> AsyncIterator[tuple[dict[str, Any], int]]:
    """One file's batches: (columns, rows), at most ``left`` rows in all (of the rows
    ``where`` keeps, when given)."""
    from planner.selection import FilterPlan

    plan = await r.plan(paths, filter=where)
    last = None
    size = (plan.bytes_all if isinstance(plan, FilterPlan)
            else sum(s.mem_length for s in plan.segments))
    whole = left is None and size <= WHOLE_SCAN_BYTES
    if not whole:
        _plan_per_segment(r)
    if whole or (left is not None and left <= BATCH_ROWS):  # only the first rows' segments
        res = await r.scan(paths, filter=where, limit=left)
        last = res.stats
        for lo in range(0, res.num_rows, rows):
            hi = min(lo + rows, res.num_rows)
            yield {c: a.slice(lo, hi) for c, a in res.columns.items()}, hi - lo
    else:
        # a limit within one batch may stop early: fetch only what each batch needs
        prefetch = 0 if left is not None and left <= BATCH_ROWS else STREAM_PREFETCH
        it = r.iter_batches(paths, batch_rows=rows, prefetch=prefetch, filter=where)
        async with contextlib.aclosing(it), contextlib.aclosing(_one_ahead(it)) as ahead:
            async for batch in ahead:
                last = batch.stats
                got, n = batch.columns, batch.num_rows
                if left is not None and n >= left:
                    yield {c: a.slice(0, left) for c, a in got.items()}, left
                    break
                yield got, n
                if left is not None:
                    left -= n
    if last is not None:
        stats.requests += last.requests
        stats.bytes_read += last.bytes_read
        stats.bytes_needed += last.bytes_needed
        if stats.ttfb is None:
            stats.ttfb = last.ttfb


def _plan_per_segment(r: Any) -> None:
    """Plan this reader's reads in requests of at most one segment's size, merging no
    gaps, for reading in batches: a read that stops after its first rows fetches
    little beyond the segments they lie in, and the read-ahead window (``concurrency``
    requests) holds that many segments, not that many merged tens of megabytes that
    stay until their last segment is decoded.

    Adjacent small segments may still share a request (up to the largest segment's
    size); no segment is split."""
    import dataclasses

    import planner as P

    cap = max((s.length for c in r.meta.columns for s in _segments(c)), default=1) or 1
    r.profile = dataclasses.replace(P.get_profile(r.profile), max_gap=0, max_request=cap,
                                    split_size=cap, min_part=0)


def _segments(col: Any) -> Any:
    from .meta import iter_segmaps

    for segmap in iter_segmaps(col):
        yield from segmap


async def _one_ahead(it: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``it``'s items, decoding the next while the caller prints this one (in a thread)."""
    nxt: asyncio.Future[Any] = asyncio.ensure_future(it.__anext__())
    try:
        while True:
            try:
                item = await nxt
            except StopAsyncIteration:
                return
            nxt = asyncio.ensure_future(it.__anext__())
            yield item
    finally:
        if not nxt.done():
            nxt.cancel()
        with contextlib.suppress(BaseException):
            await nxt


def _vectorised_output() -> bool:
    from .jsonout import have_pyarrow

    return have_pyarrow()


def _scan(args: argparse.Namespace) -> int:
    source = _Source(args)
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    out = sys.stdout.buffer
    stats: Any = None  # a ScanStats, made once the reader side is loaded (after open)
    # The output side (numpy, pyarrow's vectorised renderers) is imported by the render
    # thread while the object is opened and its first segments fetched (the reader's
    # side is imported meanwhile too: see csup_async.opening), not before the first request
    fast = _render_pool().submit(_vectorised_output) if fmt in ("json", "csv") else None

    async def run(src: Any) -> None:
        import time

        from . import jsonout as J
        from .read.result import ScanStats

        nonlocal stats
        stats = ScanStats()
        t0 = time.perf_counter()
        cols = _column_list(src, args.columns)
        plan = await src.plan(cols, filter=args.where)
        if plan.missing_paths:
            raise src.missing_error(plan.missing_paths)
        if args.explain:
            text = plan.explain()
            if args.limit is not None:
                rows = f"{args.limit:,} row" + ("" if args.limit == 1 else "s")
                text += (f"\n--limit {args.limit}: reading stops after the first {rows}, "
                         "so fewer requests may be made (--stats counts those made)")
            print(text, file=sys.stderr if fmt in ("json", "csv") else sys.stdout, flush=True)
        if fmt == "csv":
            out.write(J.csv_header(cols))
        with _bar(args) as bar:
            if bar is not None:
                from planner import MultiPlan
                from planner.selection import FilterPlan

                files = len(plan.files) if isinstance(plan, MultiPlan) else 1
                what = f"{files:,} objects" if source.dataset is not None else "1 object"
                total = (plan.bytes_one_wave if isinstance(plan, FilterPlan)
                         else plan.bytes_to_read)
                task = bar.add_task(f"scanning {what}", total=total or None)
                source.store.on_bytes = lambda n: bar.advance(task, n)
            renderers = {"json": (J.json_lines, _slow_json),
                         "csv": (J.csv_lines, _slow_csv)}.get(fmt)
            render = None
            # a table is for reading on a terminal: one of a few rows at a time appears
            # at once, where rich would lay out tens of thousands of rows first
            rows = TABLE_ROWS if renderers is None else BATCH_ROWS
            async with contextlib.aclosing(_batches(src, cols, args.limit, stats,
                                                    rows, args.where)) as it:
                async for batch in it:
                    if renderers is None:
                        _print_table(batch)
                        continue
                    if render is None:
                        assert fast is not None
                        render = renderers[0 if await asyncio.wrap_future(fast) else 1]
                    out.write(await _render(render, batch))
                    out.flush()
        stats.wall = time.perf_counter() - t0
        if source.dataset is not None:
            stats.metadata_requests = sum(r.open_stats.requests for r in src.readers)

    asyncio.run(source.run(run))
    if args.stats:
        extra = (f", {len(source.dataset.files):,} objects, "
                 f"{stats.metadata_requests} metadata requests"
                 if source.dataset is not None else "")
        print(f"stats: {stats}{extra}", file=sys.stderr)
    return 0


def _slow_json(batch: dict[str, Any]) -> bytes:
    """JSON lines without pyarrow: a Python object per value (slow, same text)."""
    from .jsonout import dumps

    cols = {c: a.to_pylist() for c, a in batch.items()}
    n = len(next(iter(batch.values()))) if batch else 0
    return "".join(dumps({c: v[i] for c, v in cols.items()}) + "\n"
                   for i in range(n)).encode()


def _slow_csv(batch: dict[str, Any]) -> bytes:
    from .jsonout import json_value

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = [[_cell(json_value(v)) for v in a.to_pylist()] for a in batch.values()]
    for row in zip(*cols, strict=True):
        w.writerow(row)
    return buf.getvalue().encode()


def _print_table(batch: dict[str, Any]) -> None:
    """A rich table of one batch: null shows as a dim ``null``, the empty string as ``""``."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from .jsonout import json_value

    def cell(v: Any) -> Text:
        if v is None:
            return Text("null", style="dim italic")
        if v == "":
            return Text('""', style="dim")
        return Text(_cell(json_value(v)))

    table = Table(*batch.keys(), show_lines=False)
    cols = [a.to_pylist() for a in batch.values()]
    for row in zip(*cols, strict=True):
        table.add_row(*(cell(v) for v in row))
    Console().print(table)


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


def _lake(args: argparse.Namespace) -> int:
    from .lake.cli import run

    return run(args, _options(args, args.url)[0])


COMMANDS["lake"] = _lake

if __name__ == "__main__":
    sys.exit(main())
