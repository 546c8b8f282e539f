"""Human-readable descriptions of a file's layout (``csup-async inspect``, ``reader.schema``)."""

from __future__ import annotations

from .meta import (
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
    elif isinstance(col, PrimitiveColumn):
        out.append(f"{indent}{_seg('values', col.segmap)}")
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


def describe_file(meta: FileMeta, path: str, rows: int | None = None) -> str:
    """The layout of a file; ``rows`` is its row count when the caller counted it (files
    with several super types: the super column was read, see ``Reader.count_rows``)."""
    t = meta.trailer
    counted = meta.row_count is None and rows is not None
    rows = meta.row_count if meta.row_count is not None else rows
    lines = [
        f"file: {path}",
        f"size: {meta.object_size:,} bytes",
        f"trailer: magic={t.magic!r} type={t.type!r} version={t.version} ({t.size} bytes)",
        f"sections: data {t.data_size:,} bytes, reassembly {t.reassembly_size:,} bytes",
        f"thresholds: segment {t.segment_thresh:,}, skew {t.skew_thresh:,}",
        (f"rows: {rows:,}" + (" (counted from the super column)" if counted else ""))
        if rows is not None else "rows: unknown (read the super column: count_rows())",
        f"super types: {len(meta.super_types)}",
        _seg("super column", meta.super_column),
        describe_schema(meta),
    ]
    return "\n".join(lines)
