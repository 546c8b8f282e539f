"""``scan_polars``: CSUP objects as a polars LazyFrame, projection and filters pushed in.

polars' IO plugins hand the source the columns a query needs, its predicate and
its row limit.  The columns become the scan's projection; the predicate's parts
that the library's filter model says exactly the same thing about (comparisons
of a column with a number, string or bool, ``is_null``, ``is_not_null``,
``str.starts_with``, joined by ``&``, ``|``, ``~``) become the scan's ``filter=``,
so segment statistics skip zones and other columns are read for the kept rows
only; polars applies the whole predicate again to what arrives (exact whatever
was left out).  The row limit is pushed when nothing is left for polars to filter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from planner.filters import FilterError, col, columns_of
from planner.paths import format_path

from ..arrays import require
from ..arrays.nested import has_union
from ..model.options import DEFAULT_BATCH_ROWS
from .facade import is_many, open_dataset_sync, open_sync, request

__all__ = ["pushable_filter", "scan_polars"]

_OPS = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NUMBERS = {"Int", "Float", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32",
            "UInt64", "Float32", "Float64"}


class _NotPushable(Exception):
    """A part of a polars expression the filter model cannot say exactly."""


def _literal(node: Any) -> Any:
    """The Python value of a polars literal node (numbers, strings, bools)."""
    if not isinstance(node, dict) or set(node) != {"Literal"}:
        raise _NotPushable
    inner = node["Literal"]
    body = inner.get("Dyn") or inner.get("Scalar") if isinstance(inner, dict) else None
    if not isinstance(body, dict) or len(body) != 1:
        raise _NotPushable
    ((kind, value),) = body.items()
    if kind in _NUMBERS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if kind == "String" and isinstance(value, str):
        return value
    if kind == "Boolean" and isinstance(value, bool):
        return value
    raise _NotPushable


def _column(node: Any) -> str:
    if isinstance(node, dict) and set(node) == {"Column"} and isinstance(node["Column"], str):
        return node["Column"]
    raise _NotPushable


_ORDERED = frozenset({"<", "<=", ">", ">="})


def _translate(node: Any, floats: frozenset[str] = frozenset()) -> Any:
    """The filter-model expression of a polars expression node.  An ordered comparison
    of a float column is not pushed: polars orders NaN above every number (``f > 1.5``
    keeps a NaN row), the filter model by IEEE rules (it drops it), so polars filters
    those itself; nor is a comparison with a NaN literal."""
    if not isinstance(node, dict) or len(node) != 1:
        raise _NotPushable
    ((kind, body),) = node.items()
    if kind == "BinaryExpr":
        op = body["op"]
        if op in ("And", "LogicalAnd"):
            return _translate(body["left"], floats) & _translate(body["right"], floats)
        if op in ("Or", "LogicalOr"):
            return _translate(body["left"], floats) | _translate(body["right"], floats)
        if op not in _OPS:
            raise _NotPushable
        sym = _OPS[op]
        try:
            name, value = _column(body["left"]), _literal(body["right"])
        except _NotPushable:
            name, value = _column(body["right"]), _literal(body["left"])
            sym = _FLIP[sym]
        if (sym in _ORDERED and name in floats) or (isinstance(value, float)
                                                    and value != value):
            raise _NotPushable
        c = col(name)
        return {"==": c.eq, "!=": c.ne, "<": c.lt, "<=": c.le, ">": c.gt, ">=": c.ge}[sym](
            value)
    if kind == "Function":
        fn, args = body.get("function"), body.get("input") or []
        if fn == {"Boolean": "Not"} and len(args) == 1:
            return ~_translate(args[0], floats)
        if fn == {"Boolean": "IsNull"} and len(args) == 1:
            return col(_column(args[0])).is_null()
        if fn == {"Boolean": "IsNotNull"} and len(args) == 1:
            return col(_column(args[0])).is_not_null()
        if fn == {"StringExpr": "StartsWith"} and len(args) == 2:
            prefix = _literal(args[1])
            if isinstance(prefix, str):
                return col(_column(args[0])).startswith(prefix)
    raise _NotPushable


def _conjuncts(node: Any) -> list[Any]:
    if isinstance(node, dict) and "BinaryExpr" in node and node["BinaryExpr"].get("op") in (
            "And", "LogicalAnd"):
        return _conjuncts(node["BinaryExpr"]["left"]) + _conjuncts(node["BinaryExpr"]["right"])
    return [node]


def pushable_filter(predicate: Any, converted: frozenset[str] = frozenset(),
                    floats: frozenset[str] = frozenset()) -> tuple[Any, bool]:
    """``(filter, whole)``: the ``planner.filters`` expression for the parts of a polars
    predicate that translate exactly (None if none do), and whether that is all of it.
    A part naming a ``converted`` column (one of several kinds, which polars sees as
    its supertype: a number as text...) is left to polars: the scan's filter compares
    the values as they are stored; so is an ordered comparison of a ``floats`` column
    (polars orders NaN above every number)."""
    if predicate is None:
        return None, True
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # a polars without JSON serialization: nothing is pushed
        return None, False
    pushed, whole = None, True
    for part in _conjuncts(tree):
        try:
            expr = _translate(part, floats)
        except (_NotPushable, KeyError, TypeError, ValueError):
            whole = False
            continue
        if converted and _names(expr) & converted:
            whole = False
            continue
        pushed = expr if pushed is None else pushed & expr
    return pushed, whole


def _names(expr: Any) -> set[str]:
    """The columns a filter names, spelled as a scan's result keys them."""
    return {format_path(p) for p in columns_of(expr)}


def _polars() -> Any:
    return require("polars", "scan_polars needs polars: pip install 'csup-async[polars]'")


def scan_polars(source: str | Sequence[str], columns: Sequence[str] | str | None = None, *,
                batch_rows: int = DEFAULT_BATCH_ROWS,
                max_requests: int | None = None, max_bytes: int | None = None,
                on_progress: Any = None, unions: str = "supertype", **options: Any) -> Any:
    """A ``polars.LazyFrame`` over a CSUP object or several (a list, glob or prefix).

    ``columns`` are the frame's columns, as ``read(source, columns)`` gives them: a
    dotted path asked for is one column named by its path (``"user.name"``); without
    them, every top-level column (a record as a struct).  The schema comes from
    metadata (no data is read until the frame is collected);
    each collect reads only the columns the query uses, with the predicate's exact
    parts as the scan's filter and its row limit pushed in.  One object read without
    a filter streams in batches of ``batch_rows`` rows (bounded memory); a filtered
    read, and a dataset, is one scan handed over in batches.  ``max_requests``,
    ``max_bytes`` and ``on_progress`` hold for each collect's read (as for ``scan``).
    A column of several kinds takes the one type ``pl.read_ndjson`` gives it
    (``unions="supertype"``: numbers float64, anything beside a string its text);
    ``unions="struct"`` keeps each member as ``to_arrow`` does.  ``options`` are those
    of ``open`` (or ``open_dataset``).
    """
    pl = _polars()
    from polars.io.plugins import register_io_source

    from ..scan.result import check_unions

    # checked here, once, before anything is opened: each collect narrows this request
    base = request(batch_rows=batch_rows, max_requests=max_requests, max_bytes=max_bytes,
                   on_progress=on_progress)
    check_unions(unions)

    many = is_many(source)
    handle: Any = open_dataset_sync(source, **options) if many else open_sync(
        source, **options)  # type: ignore[arg-type]
    empty = handle.scan(columns, limit=0)
    schema = pl.DataFrame(empty.exported(unions)).schema

    # columns polars sees in another type than stored: no filter on them is pushed
    converted = frozenset(p for p, a in empty.columns.items() if has_union(a.type))
    names = list(schema)
    # float columns: polars orders NaN above every number; their ordered comparisons
    # stay polars' own (see _translate)
    floats = frozenset(n for n, t in schema.items() if t in (pl.Float32, pl.Float64))

    def frames(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
               batch_size: int | None) -> Iterator[Any]:
        size = max(1, batch_size or base.batch_rows)
        pushed, whole = pushable_filter(predicate, converted, floats)
        wanted = list(with_columns) if with_columns is not None else names
        if predicate is not None:
            needed = set(wanted) | set(predicate.meta.root_names())
            read = [n for n in names if n in needed]
        else:
            read = wanted
        limit = n_rows if whole else None
        req = base.but(columns=tuple(read) or None, filter=pushed, limit=limit,
                       batch_rows=size)  # canonical names, an expression: no check again
        for res in _results(handle, many, req):
            df = pl.DataFrame(res.exported(unions))
            if predicate is not None:
                df = df.filter(predicate)
            df = df.select(wanted)
            if n_rows is not None:
                df = df.head(n_rows)
                n_rows -= df.height
            if df.height:
                yield df
            if n_rows is not None and n_rows <= 0:
                return

    return register_io_source(frames, schema=schema, is_pure=True, explain_name="csup")


def _results(handle: Any, many: bool, req: Any) -> Iterator[Any]:
    """Results of at most ``req.batch_rows`` rows for a collect's request (its columns,
    the pushed filter and limit, the read's budget and progress)."""
    size = req.batch_rows
    if not many and req.filter is None and req.limit is None:
        with handle.batches_with(req) as batches:
            yield from batches
        return
    try:
        res = handle.scan_with(req)
    except FilterError:  # types the filter model will not compare: polars filters alone
        if req.filter is None:
            raise
        res = handle.scan_with(req.but(filter=None, limit=None))
    for start in range(0, max(res.num_rows, 1), size):
        if res.num_rows == 0:
            yield res
            return
        yield _slice(res, start, min(res.num_rows, start + size))


def _slice(res: Any, start: int, stop: int) -> Any:
    from ..scan.result import ScanResult

    if start == 0 and stop == res.num_rows:
        return res
    return ScanResult({p: a.slice(start, stop) for p, a in res.columns.items()},
                      stop - start, res.stats, res.plan)
