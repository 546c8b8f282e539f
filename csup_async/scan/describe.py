"""Human-readable descriptions of a file's layout (``csup-async inspect``, ``reader.schema``)."""

from __future__ import annotations

import math
from typing import Any

from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    FileMeta,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    UnionColumn,
)
from ..model.types import (
    ArrayType,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from .colstats import ColumnStatistics, column_stats, has_statistics


def _seg(label: str, segmap: Segmap) -> str:
    if not segmap:
        return f"{label}: -"
    stored = sum(s.length for s in segmap)
    mem = sum(s.mem_length for s in segmap)
    lz4 = sum(1 for s in segmap if s.compression)
    extra = f", {lz4} lz4" if lz4 else ""
    return f"{label}: {len(segmap)} seg, {stored:,} B stored, {mem:,} B mem{extra}"


def _column_lines(col: AnyColumn | None, indent: str, out: list[str]) -> None:
    if col is None:
        out.append(f"{indent}(all null: no column)")
    elif isinstance(col, PrimitiveColumn) and col.constant is not None:
        out.append(f"{indent}constant: {col.constant.count:,} copies of one value, nothing "
                   "stored")
    elif isinstance(col, PrimitiveColumn):
        kind = (f"dictionary of {len(col.dictionary)}, selectors" if col.dictionary
                else "values")
        out.append(f"{indent}{_seg(kind, col.segmap)}")
    elif isinstance(col, RecordColumn):
        for f in col.fields:
            pres = f"  [{_seg('presence', f.presence)}]" if f.presence else ""
            out.append(f"{indent}.{f.name}{pres}")
            _column_lines(f.column, indent + "    ", out)
    elif isinstance(col, ArrayColumn):
        out.append(f"{indent}{_seg('lengths', col.lengths)}")
        out.append(f"{indent}[elements]")
        _column_lines(col.values, indent + "    ", out)
    elif isinstance(col, MapColumn):
        out.append(f"{indent}{_seg('lengths', col.lengths)}")
        out.append(f"{indent}[keys]")
        _column_lines(col.keys, indent + "    ", out)
        out.append(f"{indent}[values]")
        _column_lines(col.values, indent + "    ", out)
    elif isinstance(col, UnionColumn):
        out.append(f"{indent}{_seg('tags', col.tags)}")
        for i, c in enumerate(col.columns):
            out.append(f"{indent}[member {i}]")
            _column_lines(c, indent + "    ", out)
    elif isinstance(col, NullsColumn):
        out.append(f"{indent}{_seg('nulls', col.presence)}")
        _column_lines(col.values, indent, out)


def describe_schema(meta: FileMeta) -> str:
    out = []
    for i, (t, col) in enumerate(zip(meta.super_types, meta.columns, strict=True)):
        out.append(f"super type {i}: {t}")
        _column_lines(col, "    ", out)
    return "\n".join(out)


def fused_view(types: list[Type] | tuple[Type, ...], counts: list[int]
               ) -> dict[str, dict[str, int]]:
    """Per path (``""`` the rows, ``a.b`` a field, ``a[]`` elements), each type found
    there and the rows of the super types that have it there; ``missing``: rows whose
    record lacks the field.  A union counts its rows for every member."""
    view: dict[str, dict[str, int]] = {}
    records: dict[str, int] = {}  # rows of the record at a path
    has: dict[str, int] = {}  # rows whose record has the field at a path

    def add(path: str, label: str, n: int) -> None:
        labels = view.setdefault(path, {})
        labels[label] = labels.get(label, 0) + n

    def walk(t: Type, path: str, n: int) -> None:
        if isinstance(t, UnionType):
            for m in t.types:
                walk(m, path, n)
        elif isinstance(t, RecordType):
            add(path, "record", n)
            records[path] = records.get(path, 0) + n
            for f in t.fields:
                child = f"{path}.{f.name}" if path else f.name
                has[child] = has.get(child, 0) + n
                walk(f.type, child, n)
        elif isinstance(t, (ArrayType, SetType)):
            add(path, "array" if isinstance(t, ArrayType) else "set", n)
            walk(t.elem, f"{path}[]", n)
        elif isinstance(t, MapType):
            add(path, "map", n)
            walk(t.key, f"{path}{{key}}", n)
            walk(t.value, f"{path}{{value}}", n)
        elif isinstance(t, PrimitiveType):
            add(path, t.name, n)
        elif isinstance(t, NamedType):
            add(path, str(t), n)
        else:
            add(path, str(t), n)

    for t, n in zip(types, counts, strict=True):
        walk(t, "", n)
    for child, n in has.items():
        parent = child.rpartition(".")[0] if "." in child else ""
        lacking = records.get(parent, 0) - n
        if lacking > 0:
            view[child]["missing"] = lacking
    return {p: view[p] for p in _tree_order(list(view))}


def _parent(path: str) -> str:
    for suffix in ("[]", "{key}", "{value}"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path.rpartition(".")[0]


def _tree_order(paths: list[str]) -> list[str]:
    """``paths`` with each one's descendants right after it (first seen order among
    siblings), so a nested field follows its record."""
    known = set(paths)
    kids: dict[str, list[str]] = {}
    for p in paths:
        if p:
            parent = _parent(p)
            kids.setdefault(parent if parent in known else "", []).append(p)
    out: list[str] = []
    todo = [""] if "" in known else []
    todo += [] if todo else list(reversed(kids.get("", [])))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(reversed(kids.get(p, [])))
    return out


def describe_fused(types: list[Type] | tuple[Type, ...], counts: list[int]) -> str:
    """:func:`fused_view` as text: one line per path, its types by rows."""
    view = fused_view(types, counts)
    width = max((len(p or "(rows)") for p in view), default=6)
    lines = [f"fused view: {sum(counts):,} rows in {len(types):,} super types "
             "(per path: each type there and the rows that have it; --types: each super "
             "type)"]
    for path, labels in view.items():
        text = ", ".join(f"{label} {n:,}" for label, n in labels.items())
        lines.append(f"    {(path or '(rows)').ljust(width)}  {text}")
    return "\n".join(lines)


def describe_file(meta: FileMeta, path: str, rows: int | None = None,
                  counts: list[int] | None = None, types: bool = False) -> str:
    """The layout of a file; ``rows`` is its row count when the caller counted it (files
    with several super types: the super column was read, see ``Reader.count_rows``).
    With several super types and their row ``counts``, the fused view comes first and
    each super type's column tree only with ``types``."""
    t = meta.trailer
    counted = meta.row_count is None and rows is not None
    rows = meta.row_count if meta.row_count is not None else rows
    lines = [
        f"file: {path}",
        f"size: {meta.object_size:,} bytes",
        *([f"writer: {meta.writer}"] if meta.writer else []),
        "layout: " + ("VNG version 3, as zq v1.4-v1.12 write it (target zed-1.12)"
                      if t.type == "vng" else
                      f"csup-async's trailer layout, version {t.version} (target csup-async: "
                      "segment statistics and checksums)"),
        f"trailer: magic={t.magic!r} type={t.type!r} version={t.version} ({t.size} bytes)",
        f"sections: data {t.data_size:,} bytes, reassembly {t.reassembly_size:,} bytes",
        f"thresholds: segment {t.segment_thresh:,}, skew {t.skew_thresh:,}",
        (f"rows: {rows:,}" + (" (counted from the super column)" if counted else ""))
        if rows is not None else "rows: unknown (read the super column: count_rows())",
        f"super types: {len(meta.super_types)}",
        _seg("super column", meta.super_column),
    ]
    several = len(meta.super_types) > 1 and counts is not None
    if several:
        assert counts is not None
        lines.append(describe_fused(meta.super_types, counts))
    if types or not several:
        lines.append(describe_schema(meta))
    lines.append(describe_stats(meta))
    return "\n".join(lines)


_BOUND_CHARS = 40


def _count(n: int, what: str) -> str:
    """``1 segment``, ``2 segments``."""
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _bound(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (str, bytes, bytearray)) and not v:
        return '""'  # an empty string is a bound, not a blank cell
    text = v.hex() if isinstance(v, (bytes, bytearray)) else str(v)
    return text if len(text) <= _BOUND_CHARS else text[: _BOUND_CHARS - 3] + "..."


def describe_stats(meta: FileMeta) -> str:
    """Per primitive column: values, nulls, min and max from the segment statistics."""
    if not has_statistics(meta):
        return "statistics: no statistics (the writer recorded none: nothing to prune by, " \
               "no checksums)"
    rows = [("column", "type", "segments", "values", "nulls", "min", "max")]
    for st in column_stats(meta).values():
        rows.append((st.path or "(the rows)", st.type, f"{st.segments:,}",
                     "-" if st.values is None else f"{st.values:,}",
                     "-" if st.nulls is None else f"{st.nulls:,}",
                     _bound(st.min), _bound(st.max) + (" (and NaN)" if st.nan else "")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["statistics (from the segment metadata, no data read; - = unknown):"]
    for r in rows:
        lines.append("    " + "  ".join(c.ljust(w) if i in (0, 1, 5) else c.rjust(w)
                                        for i, (c, w) in enumerate(zip(r, widths, strict=True))
                                        ).rstrip())
    return "\n".join(lines)


def _jsonable(v: Any) -> Any:
    """A bound as JSON: bytes as hex, non-finite floats and other kinds as text."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


def file_json(meta: FileMeta, path: str, rows: int | None = None,
              counts: list[int] | None = None) -> dict[str, Any]:
    """What ``describe_file`` says, as one JSON-ready object (``inspect --json``)."""
    t = meta.trailer
    stats = column_stats(meta)

    def col(st: ColumnStatistics) -> dict[str, Any]:
        return {k: _jsonable(v) for k, v in st.to_dict().items()}

    return {
        "file": path, "size": meta.object_size,
        "rows": meta.row_count if meta.row_count is not None else rows,
        "trailer": {"magic": t.magic, "type": t.type, "version": t.version, "size": t.size},
        "sections": {"data": t.data_size, "reassembly": t.reassembly_size},
        "thresholds": {"segment": t.segment_thresh, "skew": t.skew_thresh},
        "super_types": [str(x) for x in meta.super_types],
        "type_rows": counts,
        "fused": fused_view(meta.super_types, counts) if counts is not None else None,
        "statistics": has_statistics(meta),
        "columns": {p: col(st) for p, st in stats.items()},
    }


def check_lines(check: Any) -> list[str]:
    """``inspect --verify``'s report of a ``read.verify.FileCheck``: per column stream the
    segments checked, then every failure."""
    lines = [f"verify: {check.path}: " + (
        f"ok, {_count(check.segments, 'segment')} checked" if check.ok
        else f"FAILED, {len(check.errors)} problem(s) in {_count(check.segments, 'segment')}")]
    for c in check.columns:
        if c.segments:
            bad = f", {len(c.errors)} failed" if c.errors else ""
            lines.append(f"    {c.label}: {_count(c.segments, 'segment')} "
                         f"({c.with_crc:,} with crc32, {c.with_count:,} with count){bad}")
    lines += [f"error: {e}" for e in check.errors]
    return lines


def check_json(check: Any) -> dict[str, Any]:
    return {"ok": check.ok, "segments": check.segments, "errors": check.errors,
            "columns": [{"column": c.label, "segments": c.segments, "with_crc32": c.with_crc,
                         "with_count": c.with_count, "errors": c.errors}
                        for c in check.columns if c.segments]}
