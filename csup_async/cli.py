"""The ``csup-async`` command: convert, cat, inspect, scan and plan CSUP files.

Errors print as one line on stderr with a distinct exit code per kind
(``--debug`` shows the traceback): 2 usage, 3 not found (object or column),
4 invalid or unsupported data, 5 store failure, 1 anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import os
import sys
import traceback
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


def _store_flags() -> argparse.ArgumentParser:
    """Store options as flags; credentials come from the environment (never from argv)."""
    s = argparse.ArgumentParser(add_help=False)
    g = s.add_argument_group("store options (also from AWS_*, GOOGLE_*, STORAGE_EMULATOR_HOST)")
    g.add_argument("--endpoint-url", help="S3-compatible endpoint (e.g. http://127.0.0.1:9000)")
    g.add_argument("--region", help="S3 region")
    g.add_argument("--anonymous", action="store_true", help="unsigned S3 / anonymous GCS")
    g.add_argument("--concurrency", type=int, default=None, help="requests in flight")
    g.add_argument("--no-verify-ssl", action="store_true", help="skip TLS verification")
    return s


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="csup-async",
                                description="Read and write Super Columnar (CSUP) files.")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)
    store = _store_flags()

    c = sub.add_parser("convert", help="convert between CSUP, BSUP/ZNG, JSON/NDJSON, Parquet")
    c.add_argument("input")
    c.add_argument("output", help="a .csup or .bsup file")
    c.add_argument("--segment-thresh", type=int, default=None)
    c.add_argument("--skew-thresh", type=int, default=None)
    c.add_argument("--no-compress", action="store_true")

    c = sub.add_parser("demo", help="sample data -> local S3 server -> planned scan")
    c.add_argument("--rows", type=int, default=100_000)

    c = sub.add_parser("cat", help="print every value as deterministic JSON lines")
    c.add_argument("input")

    c = sub.add_parser("inspect", help="trailer, sections, super types and column tree",
                       parents=[store])
    c.add_argument("url")

    for name, helptext in (("scan", "read a projection of columns"),
                           ("plan", "show the reads a projection needs")):
        c = sub.add_parser(name, help=helptext, parents=[store])
        c.add_argument("url")
        c.add_argument("-c", "--columns", default=None, help="comma-separated dotted paths")
        c.add_argument("--profile", default=None, help="planner profile: s3, gcs, http, local")
        if name == "scan":
            c.add_argument("--format", choices=("table", "json", "csv"), default=None)
            c.add_argument("--limit", type=int, default=None)
            c.add_argument("--explain", action="store_true")
            c.add_argument("--stats", action="store_true")
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


def _convert(args: argparse.Namespace) -> int:
    from .inputs import kind_of, read_values

    out_kind = kind_of(args.output)
    values = _progress(read_values(args.input), f"converting {args.input}")
    if out_kind == "csup":
        from .writer import write

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


def _progress(values: Any, label: str) -> Any:
    """Count values on a live line when stderr is a terminal; stay silent when piped."""
    if not sys.stderr.isatty():
        yield from values
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"),
               TextColumn("{task.completed:,} values"), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=None)
        for i, v in enumerate(values, 1):
            yield v
            if i % 1000 == 0:
                bar.update(task, completed=i)


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
    from .inputs import read_values
    from .jsonout import dumps
    from .values import Value

    out = sys.stdout
    for v in read_values(args.input):
        out.write(dumps(v.to_python() if isinstance(v, Value) else v))
        out.write("\n")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from .inspect import describe_file
    from .reader import open as open_csup

    async def run() -> str:
        async with open_csup(args.url, **_open_opts(args)) as r:
            return describe_file(r.meta, r.path)

    print(asyncio.run(run()))
    return 0


def _open_opts(args: argparse.Namespace) -> dict[str, Any]:
    """Reader and store options from the flags, only those that apply to the URL's store."""
    url = getattr(args, "url", "") or ""
    opts: dict[str, Any] = {}
    if getattr(args, "profile", None):
        opts["profile"] = args.profile
    if getattr(args, "concurrency", None):
        opts["concurrency"] = args.concurrency
    s3 = url.startswith("s3://")
    remote = "://" in url and not url.startswith("file://")
    if s3 and args.endpoint_url:
        opts["endpoint_url"] = args.endpoint_url
    if s3 and args.region:
        opts["region"] = args.region
    if remote and args.anonymous and (s3 or url.startswith(("gs://", "gcs://"))):
        opts["anonymous"] = True
    if remote and args.no_verify_ssl and not url.startswith(("memory://",)):
        opts["verify_ssl"] = False
    return opts


def _plan(args: argparse.Namespace) -> int:
    from .reader import open as open_csup

    async def run() -> str:
        async with open_csup(args.url, **_open_opts(args)) as r:
            return (await r.plan(args.columns)).explain()

    print(asyncio.run(run()))
    return 0


def _scan(args: argparse.Namespace) -> int:
    from .jsonout import dumps, json_value
    from .reader import open as open_csup

    async def run() -> tuple[Any, Any]:
        async with open_csup(args.url, **_open_opts(args)) as r:
            plan = await r.plan(args.columns) if args.explain else None
            return await r.scan(args.columns), plan

    result, plan = asyncio.run(run())
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
        print(f"stats: {result.stats}", file=sys.stderr)
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
