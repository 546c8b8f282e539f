"""Values as JSON lines (``cat``, ``convert … out.ndjson``) and as Parquet (``convert …
out.parquet``), streamed batch by batch so memory holds a batch, not the file.

CSUP objects are read in batches of rows (``iter_batches``) and rendered by the
vectorised JSON printer, or turned into Arrow (:meth:`ScanResult.to_arrow`: unions
unified as the API docs say, each change reported once on stderr) and appended to
one Parquet file.  Other inputs (BSUP, JSON, Parquet) are values one at a time:
as JSON lines each is printed as it comes, by its own type (a time as RFC 3339 text,
as CSUP's are printed); to make Parquet of them they are written to a CSUP file next
to the output first (the writer's exact type inference, in bounded memory), which is
then converted as any CSUP object and removed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

from ..model.errors import CsupError
from .batches import CAT_BATCH_ROWS, STREAM_PREFETCH, one_ahead
from .exits import UsageError
from .output import render_in_thread
from .progress import budget_options, planned_progress
from .sources import Source, input_values, is_csup_input

__all__ = ["OUTPUT_KINDS", "as_csup", "output_kind", "write_lines", "write_parquet"]

#: --to's choices and the suffixes that choose them
OUTPUT_KINDS = {"csup": (".csup",), "bsup": (".bsup", ".zng"),
                "ndjson": (".ndjson", ".jsonl"), "parquet": (".parquet", ".pq")}
PARQUET_BATCH_ROWS = 65536


def output_kind(path: str, to: str | None) -> str:
    """The output's format: ``--to``, else the suffix of ``path``."""
    if to is not None:
        return to
    low = path.lower()
    for kind, suffixes in OUTPUT_KINDS.items():
        if low.endswith(suffixes):
            return kind
    raise UsageError("the output's format is not known from its name: end it in .csup, "
                     ".bsup, .parquet, .ndjson or .jsonl, or pass --to", path=path)


def write_lines(args: argparse.Namespace, out: IO[bytes], limit: int | None = None) -> int:
    """Every value of the input as a JSON line on ``out`` (at most ``limit``); the count."""
    from ..arrays import jsonout as J
    from ..model.values import Value

    if limit == 0:
        return 0
    if not is_csup_input(args):
        n = 0
        for v in input_values(args):
            if limit is not None and n >= limit:
                break
            out.write((J.dumps(typed_python(v.type, v.value) if isinstance(v, Value) else v)
                       + "\n").encode())
            n += 1
        return n
    fast = J.have_pyarrow()
    where = getattr(args, "where", None)
    written = 0

    source = Source(args)

    async def run(src: Any) -> None:
        nonlocal written
        # smaller batches than scan's: every column of the row is printed, and each
        # batch's text (and the next batch decoding meanwhile) is held at once
        with planned_progress(args, f"reading {source.label}") as on_progress:
            it = source.scanner.iter_batches([""], batch_rows=CAT_BATCH_ROWS,
                                             prefetch=STREAM_PREFETCH, filter=where,
                                             limit=limit, read_whole_below=0,
                                             segment_requests=True, on_progress=on_progress,
                                             **budget_options(args))
            async with contextlib.aclosing(it), contextlib.aclosing(one_ahead(it)) as ahead:
                async for batch in ahead:
                    arr = batch.columns[""]
                    out.write(await render_in_thread(J.value_lines, arr) if fast else "".join(
                        J.dumps(v) + "\n" for v in arr.to_pylist()).encode())
                    out.flush()
                    written += batch.num_rows

    asyncio.run(source.run(run))
    return written


def _combined(schemas: list[Any], label: str) -> Any:
    """One Arrow schema for the objects' own (from their metadata): every column, in
    order of first appearance, each type widened as Arrow promotes types."""
    import pyarrow as pa

    try:
        return pa.unify_schemas([pa.schema(s) for s in schemas], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise CsupError(f"the objects' columns have types one Parquet schema cannot hold "
                        f"({e}): convert them one at a time, or to NDJSON",
                        path=label) from None


def _conform(table: Any, schema: Any, label: str) -> Any:
    """``table`` with ``schema``'s columns in its order: a column the object lacks is
    null, one of another type is cast where Arrow can cast it exactly."""
    import pyarrow as pa

    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        try:
            columns.append(column if column.type == field.type else column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            raise CsupError(
                f"column {field.name!r} is {column.type} here and {field.type} in the "
                "output; one Parquet file has one schema: convert the objects one at a "
                "time, or to NDJSON", path=label) from None
    return pa.Table.from_arrays(columns, schema=schema)


def typed_python(t: Any, x: Any) -> Any:
    """A value of type ``t`` as the JSON printer prints that type: times and durations
    (integer nanoseconds in a ``Value``) as numpy's, so a time prints as RFC 3339 text
    whether it came from CSUP, BSUP or Parquet; unions as their member."""
    import numpy as np

    from ..model.types import (
        ArrayType,
        ErrorType,
        MapType,
        NamedType,
        PrimitiveType,
        RecordType,
        SetType,
        UnionType,
    )
    from ..model.values import UnionValue

    if x is None:
        return None
    if isinstance(t, (NamedType, ErrorType)):
        return typed_python(t.inner, x)
    if isinstance(t, PrimitiveType):
        if isinstance(x, int) and not isinstance(x, bool) and t.name in ("time", "duration"):
            return np.datetime64(x, "ns") if t.name == "time" else np.timedelta64(x, "ns")
        return x
    if isinstance(t, UnionType):
        return typed_python(x.type, x.value) if isinstance(x, UnionValue) else x
    if isinstance(x, UnionValue):
        return typed_python(x.type, x.value)
    if isinstance(t, RecordType) and isinstance(x, dict):
        types = {f.name: f.type for f in t.fields}
        return {k: typed_python(types.get(k), v) for k, v in x.items()}
    if isinstance(t, (ArrayType, SetType)) and isinstance(x, (list, tuple)):
        return [typed_python(t.elem, e) for e in x]
    if isinstance(t, MapType) and isinstance(x, dict):
        return {typed_python(t.key, k): typed_python(t.value, v) for k, v in x.items()}
    return x


def write_parquet(args: argparse.Namespace, path: str) -> int:
    """The input as one Parquet file at ``path`` (made whole or not at all); the row count."""
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UsageError("Parquet output needs pyarrow: pip install 'csup-async[arrow]'"
                         ) from None
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with as_csup(args, path) as csup_args:
            n = _parquet_of_csup(csup_args, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n


@contextlib.contextmanager
def as_csup(args: argparse.Namespace, output: str) -> Iterator[argparse.Namespace]:
    """``args`` whose input is CSUP: as given, or the other formats' values written to a
    CSUP file beside ``output`` (the writer's exact type inference, in bounded memory),
    removed afterwards."""
    if is_csup_input(args):
        yield args
        return
    from ..writers.writing import write

    staged = f"{output}.tmp-{os.getpid()}.csup"
    try:
        write(staged, input_values(args))
        staged_args = copy.copy(args)
        staged_args.input = [staged]
        yield staged_args
    finally:
        if os.path.exists(staged):
            os.unlink(staged)


def _parquet_of_csup(args: argparse.Namespace, tmp: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = getattr(args, "where", None)
    state: dict[str, Any] = {"writer": None, "rows": 0, "said": set()}

    def append(table: pa.Table, label: str) -> None:
        writer = state["writer"]
        if writer is None:
            schema = state.get("schema") or table.schema
            state["writer"] = writer = pq.ParquetWriter(tmp, schema)
        if not table.schema.equals(writer.schema):
            table = _conform(table, writer.schema, label)
        writer.write_table(table)
        state["rows"] += table.num_rows

    source = Source(args)

    async def run(src: Any) -> None:
        scanner = source.scanner
        await scanner.column_names(None)  # opens every object: their schemas are known
        own = [r.schema.arrow() for r in scanner.readers] if len(scanner.readers) > 1 else []
        with planned_progress(args, f"reading {source.label}") as on_progress:
            it = scanner.iter_batches(None, batch_rows=PARQUET_BATCH_ROWS, filter=where,
                                      prefetch=STREAM_PREFETCH, on_progress=on_progress,
                                      **budget_options(args))
            async with contextlib.aclosing(it), contextlib.aclosing(one_ahead(it)) as ahead:
                async for batch in ahead:
                    table = batch.to_arrow()
                    for note in getattr(batch, "conversions", ()) or ():
                        if note not in state["said"]:
                            state["said"].add(note)
                            print(f"csup-async: {note}", file=sys.stderr)
                    if "schema" not in state:  # the batch's columns (partition ones too)
                        # in its order, each typed to hold every object's values
                        state["schema"] = _combined([table.schema, *own], source.label)
                    await asyncio.to_thread(append, table, source.label)

    try:
        asyncio.run(source.run(run))
    finally:
        if state["writer"] is not None:
            state["writer"].close()
    if state["writer"] is None:  # no rows at all: an empty file of no columns
        pq.write_table(pa.table({}), tmp)
    return int(state["rows"])
