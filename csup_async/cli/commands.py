"""The commands: convert, cat, inspect, scan, plan, demo and lake, by name in ``COMMANDS``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from typing import Any

from ..model.errors import NotFoundError
from .batches import (
    BATCH_ROWS,
    scan_batches,
)
from .exits import EXIT_DATA, UsageError
from .output import (
    TABLE_ROWS,
    print_table,
    render_in_thread,
    render_pool,
    slow_csv,
    slow_json,
    vectorised_output,
)
from .progress import budget_options, planned_progress, progress_bar, with_progress
from .sources import Source, input_values, source_options


def _convert(args: argparse.Namespace) -> int:
    from .lines import output_kind

    out_kind = output_kind(args.output, args.to)
    remote = "://" in args.output and not args.output.startswith("file://")
    if args.copy and out_kind != "csup":
        raise UsageError("--copy writes a CSUP file as it is: the output must be .csup",
                         path=args.output)
    if not remote:
        _check_output_dir(args.output)
    if out_kind in ("parquet", "ndjson"):
        if remote:
            raise UsageError(f"{out_kind} output is a local file (write .csup to an object "
                             "store)", path=args.output)
        n = _convert_out(args, out_kind)
        print(f"wrote {n:,} {'rows' if out_kind == 'parquet' else 'values'} to "
              f"{args.output}", file=sys.stderr)
        return 0
    first = args.input[0]
    label = f"converting {os.path.basename(first.rstrip('/')) or first}"
    if out_kind == "csup":
        n = _convert_csup(args, label)
    elif remote:
        raise UsageError("BSUP output is a local file (write .csup to an object store)",
                         path=args.output)
    else:
        n = _write_bsup(args.output, with_progress(_bsup_input(args), label, args),
                        args.target)
    print(f"wrote {n:,} values to {args.output}", file=sys.stderr)
    return 0


def _check_output_dir(output: str) -> None:
    """A local output whose directory is missing fails before any input is read, naming
    the output (not the temporary file beside it that would fail first)."""
    from ..stores.put import local_path

    d = os.path.dirname(local_path(output)) or "."
    if not os.path.isdir(d):
        raise NotFoundError(f"cannot write: no such directory {d!r}", path=output)


def _convert_csup(args: argparse.Namespace, label: str) -> int:
    """To CSUP: one local file through ``csup_async.convert`` (JSON lines parsed into
    columns, a CSUP file copied as it is when nothing in it changes, ``--copy``), CSUP
    objects (a URL, a prefix, several) value by value."""
    from ..writers.writing import write

    opts: dict[str, Any] = {}
    if args.segment_thresh:
        opts["segment_thresh"] = args.segment_thresh
    if args.skew_thresh:
        opts["skew_thresh"] = args.skew_thresh
    if args.no_compress:
        opts["compress"] = False
    remote_out = "://" in args.output and not args.output.startswith("file://")
    if remote_out:
        opts.update(source_options(args, args.output)[0])  # put through its store
    flags: dict[str, Any] = {}
    if args.no_fuse:
        flags["fuse"] = False
    if args.infer_times:
        flags["infer_times"] = True
    if args.target:
        flags["target"] = args.target  # (a CSUP file in another layout is re-encoded)
    src = args.input[0]
    local = len(args.input) == 1 and ("://" not in src or src.startswith("file://")) and (
        os.path.isfile(src.removeprefix("file://")))
    if args.copy and not local:
        raise UsageError("--copy takes one local file (CSUP or BSUP) to write as it is",
                         path=src)
    if local and not _budgeted(args):
        from ..writers.converting import convert
        from ..writers.inputs import kind_of

        if args.copy:
            return convert(src, args.output, copy=True, **opts)
        writer_set = args.segment_thresh or args.skew_thresh or args.no_compress
        kind = kind_of(src.removeprefix("file://"))
        if kind == "csup" and not writer_set:
            # copied when it is already in the target's layout (the default's: super)
            return convert(src, args.output, **flags, **opts)
        from ..writers.converting import EXACT_TARGETS

        if kind == "bsup" and args.target in EXACT_TARGETS and not writer_set:
            return convert(src, args.output, **flags, **opts)  # its values as they are
    values = input_values(args)
    from ..writers.inputs import JsonFile

    if isinstance(values, JsonFile):
        with progress_bar(args, unit="rows") as bar:
            if bar is not None:
                task = bar.add_task(label, total=None)
                values.on_rows = lambda n: bar.update(task, completed=n)
            return write(args.output, values, **flags, **opts)
    return write(args.output, with_progress(values, label, args), **flags, **opts)


def _budgeted(args: argparse.Namespace) -> bool:
    return bool(budget_options(args))


def _convert_out(args: argparse.Namespace, kind: str) -> int:
    """To Parquet or NDJSON: batch by batch, the file made whole or not at all."""
    from .lines import write_lines, write_parquet

    if kind == "parquet":
        return write_parquet(args, args.output)
    tmp = f"{args.output}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            n = write_lines(args, f)
        os.replace(tmp, args.output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n


def _bsup_input(args: argparse.Namespace) -> Any:
    """The input's values for BSUP output: a local SuperDB BSUP file's exactly (fusion
    subtypes as written), others as every command reads them."""
    from ..writers.converting import EXACT_TARGETS, exact_values
    from ..writers.inputs import kind_of

    src = args.input[0]
    if len(args.input) == 1 and args.target in EXACT_TARGETS and "://" not in src and \
            os.path.isfile(src) and kind_of(src) == "bsup":
        return exact_values(src)
    return input_values(args)


def _write_bsup(path: str, values: Any, target: str | None = None) -> int:
    """BSUP of the version ``target``'s tool reads (version 0 by default)."""
    from ..writers.targets import resolve
    from ..writers.targets.output import write_bsup

    chosen = resolve(target)  # an unknown name fails before the file is touched
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            n = write_bsup(f, values, chosen)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n


def _cat(args: argparse.Namespace) -> int:
    """Every value (the first ``--limit``) as a JSON line; CSUP objects stream in batches
    of rows, vectorised (:mod:`csup_async.cli.lines`)."""
    from .lines import write_lines

    write_lines(args, sys.stdout.buffer, args.limit)
    return 0


def _inspect(args: argparse.Namespace) -> int:
    """One object's layout and statistics; for many, each object's in turn (file order).
    ``--verify`` reads and checks every segment and reports every failure (exit 4)."""
    from ..scan.describe import check_json, check_lines, describe_file, file_json
    from ..scan.verify import verify_file

    failed = False
    source = Source(args)

    async def run(src: Any) -> str:
        nonlocal failed
        parts = []
        for fragment in source.scanner.fragments:
            r = await fragment.open()
            if getattr(r, "header_layout", False):  # SuperDB's own files
                parts.append(await _inspect_header_layout(r, args))
                continue
            if getattr(r, "bsup", False):  # a row stream: its version and types
                parts.append(await _inspect_bsup(r, args))
                continue
            check = await verify_file(r) if args.verify else None
            failed = failed or (check is not None and not check.ok)
            rows = await r.count_rows() if check is None or check.ok else r.num_rows
            counts = await r.type_counts() if check is None or check.ok else None
            if args.json:
                doc = file_json(r.meta, r.path, rows, counts)
                if check is not None:
                    doc["verify"] = check_json(check)
                parts.append(json.dumps(doc))
            else:
                text = describe_file(r.meta, r.path, rows, counts, args.types)
                parts.append(text + ("\n" + "\n".join(check_lines(check)) if check else ""))
        return ("\n" if args.json else "\n\n").join(parts)

    print(asyncio.run(source.run(run)))
    if failed:
        print("csup-async: verify failed: see the errors above", file=sys.stderr)
    return EXIT_DATA if failed else 0


async def _inspect_header_layout(r: Any, args: argparse.Namespace) -> str:
    """A SuperDB file: its objects and vectors; ``--verify`` decodes every value."""
    from ..format.superdb.describe import describe_file, file_json

    if args.verify:
        await r.read_rows()  # a CsupError (exit 4) names the file and what was wrong
    parts = getattr(r, "parts", ())  # CSUP v23: its parts and their fused types
    if args.json:
        return json.dumps(file_json(r.meta, r.path, parts))
    return describe_file(r.meta, r.path, parts) + ("\nverify: ok, every value decoded"
                                             if args.verify else "")


async def _inspect_bsup(r: Any, args: argparse.Namespace) -> str:
    """A BSUP file: its version, the tool that writes it, its values' types;
    ``--verify`` decodes every value."""
    from ..format.superdb.describe import bsup_json, describe_bsup

    if args.verify:
        await r.read_rows()  # a CsupError (exit 4) names the file and what was wrong
    what = (r.path, r.bsup_version, r.meta.object_size, r.meta.row_count,
            tuple(r.meta.super_types))
    if args.json:
        return json.dumps(bsup_json(*what))
    return describe_bsup(*what) + ("\nverify: ok, every value decoded" if args.verify else "")


def _plan(args: argparse.Namespace) -> int:
    async def run(src: Any) -> str:
        return (await src.plan(args.columns, filter=args.where)).explain()

    print(asyncio.run(Source(args).run(run)))
    return 0


def _scan(args: argparse.Namespace) -> int:
    source = Source(args)
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    out = sys.stdout.buffer
    stats: Any = None  # a ScanStats, made once the reader side is loaded (after open)
    # The output side (numpy, pyarrow's vectorised renderers) is imported by the render
    # thread while the object is opened and its first segments fetched (the reader's
    # side is imported meanwhile too: see csup_async.readers.opening), not before the first request
    fast = render_pool().submit(vectorised_output) if fmt in ("json", "csv") else None

    async def run(src: Any) -> None:
        from ..arrays import jsonout as J
        from ..scan.result import ScanStats

        nonlocal stats
        stats = ScanStats()
        t0 = time.perf_counter()
        scanner = source.scanner
        cols = await scanner.column_names(args.columns)
        plan = await src.plan(cols, filter=args.where)
        if plan.missing_paths:
            raise scanner.missing_error(plan.missing_paths)
        if args.explain:
            text = plan.explain()
            if args.limit is not None:
                rows = f"{args.limit:,} row" + ("" if args.limit == 1 else "s")
                text += (f"\n--limit {args.limit}: reading stops after the first {rows}, "
                         "so fewer requests may be made (--stats counts those made)")
            print(text, file=sys.stderr if fmt in ("json", "csv") else sys.stdout, flush=True)
        # the CSV header goes out with the first rows (a scan refused by its budget
        # prints nothing), or alone after a scan of none
        header = J.csv_header(cols) if fmt == "csv" else None
        what = (f"{len(source.dataset.files):,} objects" if source.dataset is not None
                else "1 object")
        with planned_progress(args, f"scanning {what}") as on_progress:
            renderers = {"json": (J.json_lines, slow_json),
                         "csv": (J.csv_lines, slow_csv)}.get(fmt)
            render = None
            # a table is for reading on a terminal: one of a few rows at a time appears
            # at once, where rich would lay out tens of thousands of rows first
            rows = TABLE_ROWS if renderers is None else BATCH_ROWS
            async with contextlib.aclosing(scan_batches(
                    scanner, cols, args.limit, stats, rows, args.where,
                    on_progress=on_progress, **budget_options(args))) as it:
                async for batch in it:
                    if renderers is None:
                        print_table(batch)
                        continue
                    if render is None:
                        assert fast is not None
                        render = renderers[0 if await asyncio.wrap_future(fast) else 1]
                    if header is not None:
                        out.write(header)
                        header = None
                    out.write(await render_in_thread(render, batch))
                    out.flush()
            if header is not None:
                out.write(header)
        stats.wall = time.perf_counter() - t0
        if source.dataset is not None:
            stats.metadata_requests = scanner.metadata_requests

    asyncio.run(source.run(run))
    if args.stats:
        extra = (f", {len(source.dataset.files):,} objects, "
                 f"{stats.metadata_requests} metadata requests"
                 if source.dataset is not None else "")
        print(f"stats: {stats}{extra}", file=sys.stderr)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(args.rows)


COMMANDS = {"demo": _demo, "convert": _convert, "cat": _cat, "inspect": _inspect, "scan": _scan,
            "plan": _plan}


def _lake(args: argparse.Namespace) -> int:
    from .lake import run

    return run(args, source_options(args, args.url)[0])


COMMANDS["lake"] = _lake
