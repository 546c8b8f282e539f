"""The command line's grammar: the argparse parser, its shared flag groups, and the
checks argparse cannot make.  Building it loads no reader, store or lake module (the
lake's subcommand is added by its own light ``cli.lake``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..model.errors import CsupError
from .sources import is_csup_input


def _store_flags() -> argparse.ArgumentParser:
    """Store options as flags; credentials come from the environment (never from argv)."""
    s = argparse.ArgumentParser(add_help=False)
    g = s.add_argument_group("store options (also from AWS_*, GOOGLE_*, STORAGE_EMULATOR_HOST)")
    g.add_argument("--endpoint", "--endpoint-url", dest="endpoint_url", metavar="URL",
                   help="S3-compatible endpoint (e.g. http://127.0.0.1:9000), or a GCS "
                        "JSON-API endpoint for gs:// URLs (the endpoint option of "
                        "open() and Spark; --endpoint-url is the old spelling)")
    g.add_argument("--region", help="S3 region")
    g.add_argument("--anonymous", action="store_true", help="unsigned S3 / anonymous GCS")
    g.add_argument("--request-payer", action="store_true",
                   help="S3: pay for the requests to a requester-pays bucket")
    g.add_argument("--concurrency", type=int, default=None, help="requests in flight per file")
    g.add_argument("--max-connections", type=int, default=None, metavar="N",
                   help="connections the store may open at once (default 64)")
    g.add_argument("--file-concurrency", type=int, default=None,
                   help="files read at once in a multi-file source (default 64)")
    g.add_argument("--no-verify-ssl", action="store_true", help="skip TLS verification")
    g.add_argument("--no-verify", action="store_true",
                   help="skip the segments' crc32 checks (value counts are still checked)")
    g.add_argument("--calibrate", action="store_true",
                   help="plan with the latency and bandwidth measured on the endpoint (kept "
                        "across runs in $CSUP_METADATA_CACHE) instead of the static profile")
    g.add_argument("--immutable", action="store_true",
                   help="objects never change: with $CSUP_METADATA_CACHE, one opened "
                        "before is not asked again (no metadata request)")
    return s


def _budget_flags() -> argparse.ArgumentParser:
    """--max-requests and --max-bytes: a read whose plan needs more is refused first."""
    s = argparse.ArgumentParser(add_help=False)
    g = s.add_argument_group("budget (a plan over it is refused before its data requests, "
                             "exit code 6)")
    g.add_argument("--max-requests", type=int, default=None, metavar="N",
                   help="the most data requests the read may make")
    g.add_argument("--max-bytes", type=int, default=None, metavar="BYTES",
                   help="the most bytes the read may fetch (a number of bytes)")
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


def _add_convert(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``csup-async convert``: its inputs, output and the writer's flags."""
    c = sub.add_parser(
        "convert", parents=parents,
        help="convert between CSUP, BSUP/ZNG, JSON/NDJSON, Parquet",
        description="Convert a file (BSUP/ZNG, JSON/NDJSON, Parquet, CSUP) or CSUP objects to "
                    "a .csup, .bsup, .parquet or .ndjson/.jsonl file (the format from the "
                    "output's suffix, or --to), streamed in batches.",
        epilog="What changes on the way: JSON integers become int64 (uint64 above its range), "
               "other numbers float64; Parquet/Arrow timestamps of any unit become time (ns, "
               "UTC) and date32/date64 become time at midnight UTC; decimals and times of day "
               "are refused. Several inputs must all be CSUP (read as one dataset). To "
               "NDJSON, each value is printed as `cat` prints it; to Parquet, columns are "
               "typed as ScanResult.to_arrow() types them (unions unified, each change "
               "noted on stderr).")
    c.add_argument("input", nargs="+",
                   help="a file, or CSUP objects (URL, prefix, glob or several URLs)")
    c.add_argument("output", help="a .csup, .bsup, .parquet or .ndjson/.jsonl file (.csup "
                                  "may be an object store URL)")
    c.add_argument("--to", choices=("csup", "bsup", "parquet", "ndjson"), default=None,
                   help="the output's format (default: from its suffix)")
    c.add_argument("--target", default=None, metavar="TOOL",
                   help="the tool the output is for: super (the default: CSUP v23, BSUP 5, "
                        "what super main reads), csup-async (this library's layout, BSUP 0: "
                        "segment statistics, checksums for verify, typed nulls), super-0.3 "
                        "(CSUP v16, BSUP 2: super v0.3.0), zed-1.12 (VNG v3, BSUP 0: zq)")
    c.add_argument("--segment-thresh", type=int, default=None, metavar="BYTES",
                   help="cut a column's segment once it holds this many bytes "
                        "(CSUP output; default 1 MiB)")
    c.add_argument("--skew-thresh", type=int, default=None, metavar="BYTES",
                   help="flush every column once the buffered data reaches this many bytes, "
                        "bounding memory (CSUP output; default 64 MiB)")
    c.add_argument("--no-compress", action="store_true",
                   help="store segments uncompressed (default: LZ4 where it saves space)")
    c.add_argument("--no-fuse", action="store_true",
                   help="write each JSON/Python row under its own exact type (default: rows "
                        "that differ by nulls, missing fields or a conflicting field share "
                        "one fused type; CSUP output)")
    c.add_argument("--copy", action="store_true",
                   help="write one local CSUP (or BSUP) file as it is, without re-encoding, "
                        "once its metadata reads: the way to upload an existing file "
                        "(a CSUP file of this library is copied so anyway when no "
                        "--segment-thresh/--skew-thresh/--no-compress is given)")
    c.add_argument("--infer-times", action="store_true",
                   help="write a JSON string field whose strings are all RFC 3339 "
                        "timestamps (with a Z or an offset) as time, decided per 8,192 rows "
                        "(default: strings stay strings; CSUP output)")


def build_parser() -> argparse.ArgumentParser:
    p = _common_flags(argparse.ArgumentParser(
        prog="csup-async", description="Read and write Super Columnar (CSUP) files.",
        epilog="URL: one object, or a prefix/directory, a glob or several URLs (a dataset)."),
        None)
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True)
    common = _common_flags(argparse.ArgumentParser(add_help=False), argparse.SUPPRESS)
    store = _store_flags()
    budget = _budget_flags()
    urls = {"nargs": "+", "metavar": "URL",
            "help": "an object, or many: a prefix or directory, a glob, several URLs"}

    _add_convert(sub, [common, store, budget])

    c = sub.add_parser("demo", help="sample data -> local S3 server -> planned scan",
                       parents=[common])
    c.add_argument("--rows", type=int, default=100_000,
                   help="rows of sample data to write (default 100000)")

    c = sub.add_parser("cat", parents=[common, store, budget],
                       help="print every value as deterministic JSON lines")
    c.add_argument("input", nargs="+",
                   help="a file, or CSUP objects (URL, prefix, glob or several URLs)")
    c.add_argument("--match", default=None, metavar="PATTERN", help=_MATCH_HELP)
    c.add_argument("--where", default=None, metavar="FILTER", help=_WHERE_HELP)
    c.add_argument("--limit", type=int, default=None, metavar="N",
                   help="print the first N values (N >= 0) and read only what they need")

    c = sub.add_parser("inspect", help="trailer, sections, super types and column tree",
                       parents=[common, store])
    c.add_argument("url", **urls)
    c.add_argument("--match", default=None, metavar="PATTERN", help=_MATCH_HELP)
    c.add_argument("--json", action="store_true",
                   help="one JSON object per file (statistics per column included)")
    c.add_argument("--types", action="store_true",
                   help="each super type's column tree too (a file of several super types "
                        "shows the fused view: per path, its types and their rows)")
    c.add_argument("--verify", action="store_true",
                   help="read every segment of every column and check its crc32, value "
                        "count and decoding; name every failing segment and exit 4")

    for name, helptext in (("scan", "read a projection of columns"),
                           ("plan", "show the reads a projection needs")):
        c = sub.add_parser(name, help=helptext,
                           parents=[common, store] + ([budget] if name == "scan" else []))
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
    from .lake import add_parser as add_lake_parser

    add_lake_parser(sub, common, store)
    for name, cp in sub.choices.items():  # usage errors show the sub-command's usage
        if name != "lake":
            cp.set_defaults(command_parser=cp)
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


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse what argparse cannot: an empty column list, a negative limit, bad paths.
    Errors show the usage of the sub-command ``p`` parsed (not the top level's)."""
    p = getattr(args, "command_parser", None) or p

    if getattr(args, "columns", None) is not None:
        from planner import InvalidPathError, parse_columns  # not for convert: 0.1 s of import

        if not args.columns.strip():
            p.error("-c/--columns needs at least one column (leave it out for every column)")
        try:
            parse_columns(args.columns)
        except InvalidPathError as e:
            p.error(str(e))
    if getattr(args, "limit", None) is not None and args.limit < 0:
        p.error(f"--limit must be 0 or more, not {args.limit}")
    for flag in ("max_requests", "max_bytes"):
        v = getattr(args, flag, None)
        if v is not None and v < 0:
            p.error(f"--{flag.replace('_', '-')} must be 0 or more, not {v}")
    if getattr(args, "where", None) is not None and args.command in ("scan", "cat", "plan"):
        from planner.filters import FilterError
        from planner.filtertext import parse_filter

        try:
            csup = args.command != "cat" or is_csup_input(args)
        except CsupError as e:
            p.error(str(e))
        if not csup:
            p.error("--where reads CSUP objects only (convert the file first)")
        try:
            args.where = parse_filter(args.where)
        except FilterError as e:
            p.error(f"--where: {e}")
