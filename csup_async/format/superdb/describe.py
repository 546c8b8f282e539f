"""``csup-async inspect`` for SuperDB (header-layout) files: the writer, version and objects."""

from __future__ import annotations

from typing import Any

from .meta import VERSIONS, Node, ObjectMeta, SuperDBMeta, node_len, root_types


def _vector_lines(nodes: tuple[Node, ...], i: int, indent: str, label: str,
                  out: list[str], depth: int = 0) -> None:
    n = nodes[i]
    segs = [s for _, s in n.segs if s.size]
    stored = sum(s.size for s in segs)
    lz4 = sum(1 for s in segs if s.lz4)
    what = f"{n.kind}" + (f" {n.type}" if n.type is not None else "") + (
        f" {n.name!r}" if n.name else "")
    extra = f", {len(segs)} seg, {stored:,} B" + (f", {lz4} lz4" if lz4 else "") if segs else ""
    count = f" x{node_len(nodes, i):,}" if n.kind not in ("named", "error") and (
        n.count < 1 << 32 - 1) else ""
    out.append(f"{indent}{label}{what}{count}{extra}")
    if depth > 50:
        return
    names = [f".{name}{'?' if opt else ''} " for name, opt in n.fields] if n.fields else None
    for j, k in enumerate(n.kids):
        sub = names[j] if names else ("" if len(n.kids) == 1 else f"[{j}] ")
        _vector_lines(nodes, k, indent + "    ", sub, out, depth + 1)


def _object_lines(k: int, o: ObjectMeta, out: list[str]) -> None:
    h = o.header
    out.append(f"object {k}: at {o.offset:,}, {h.object_size:,} bytes (header {h.size}, "
               f"metadata {h.meta_size:,}, types {h.type_size:,}, data {h.data_size:,}), "
               f"{o.length:,} rows, {len(root_types(o))} super type(s)")
    _vector_lines(o.nodes, h.root, "    ", "", out)


def _part_lines(parts: tuple[Any, ...], out: list[str]) -> None:
    from .suptext import format_type

    for k, p in enumerate(parts):
        out.append(f"part {k}: bytes {p.start:,}-{p.end:,}, footer at {p.footer:,}, "
                   f"fused type {format_type(p.fused)}")


#: The ``target=`` that writes each version (so csup-async's files say it too).
_TARGET = {23: " (target super, csup-async's default)", 16: " (target super-0.3)"}


def describe_file(meta: SuperDBMeta, path: str, parts: tuple[Any, ...] = ()) -> str:
    v = meta.version
    layout = ("CSUP version 23 (objects, then a footer with the fused type and a trailer "
              "per part)" if v >= 23 else "SuperDB CSUP (header layout)")
    lines = [
        f"file: {path}",
        f"size: {meta.object_size:,} bytes",
        f"layout: {layout}, the layout of {VERSIONS.get(v, 'super')}{_TARGET.get(v, '')}, "
        f"header version {v}",
        *([f"parts: {len(parts)}"] if v >= 23 else []),
        f"objects: {len(meta.objects)}",
        f"rows: {meta.row_count:,}",
        f"super types: {len(meta.super_types)}",
        *(f"super type {i}: {t}" for i, t in enumerate(meta.super_types)),
    ]
    _part_lines(parts, lines)
    for k, o in enumerate(meta.objects):
        _object_lines(k, o, lines)
    lines.append("statistics: min/max per vector in the metadata (filters skip objects by them)")
    return "\n".join(lines)


def file_json(meta: SuperDBMeta, path: str, parts: tuple[Any, ...] = ()) -> dict[str, Any]:
    from .suptext import format_type

    v = meta.version
    return {
        "parts": [{"start": p.start, "end": p.end, "footer": p.footer,
                   "fused_type": format_type(p.fused)} for p in parts],
        "file": path, "size": meta.object_size, "rows": meta.row_count,
        "layout": "header", "writer": VERSIONS.get(v, "super"), "version": v,
        "objects": [{"offset": o.offset, "size": o.header.object_size,
                     "metadata": o.header.meta_size, "types": o.header.type_size,
                     "data": o.header.data_size, "rows": o.length} for o in meta.objects],
        "super_types": [str(t) for t in meta.super_types],
        "statistics": False,
    }


#: Which tools write each BSUP version (the version byte that starts each frame of
#: SuperDB's versions; none in Zed's version 0).
BSUP_WRITERS = {0: "Zed (zq/zed v1.x) or csup-async", 1: "super v0.2.0", 2: "super v0.3.0",
                5: "super main (2026)"}


def describe_bsup(path: str, version: int, size: int, rows: int,
                  types: tuple[Any, ...]) -> str:
    """``inspect`` of a BSUP stream: its version, the tool that writes it, its values."""
    lines = [f"file: {path}", f"size: {size:,} bytes",
             f"layout: BSUP version {version} (a row stream, read whole: no column index), "
             f"written by {BSUP_WRITERS.get(version, 'an unknown tool')}",
             f"values: {rows:,}", f"types: {len(types)}",
             *(f"type {i}: {t}" for i, t in enumerate(types))]
    return "\n".join(lines)


def bsup_json(path: str, version: int, size: int, rows: int,
              types: tuple[Any, ...]) -> dict[str, Any]:
    return {"file": path, "size": size, "rows": rows, "layout": "bsup", "version": version,
            "writer": BSUP_WRITERS.get(version, "unknown"),
            "super_types": [str(t) for t in types], "statistics": False}
