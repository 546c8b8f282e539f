"""Projection -> streams: which column streams of which super type a set of paths needs.

Rules (the reader's assembly depends on every one of them):

* A path descends through record fields only.  Named and error types are
  transparent (their column is the underlying type's column) and so is our
  ``NullsColumn`` wrapper, whose ``presence`` is needed whenever anything
  under it is.  Arrays, maps and unions end a path: ``a.b`` where ``a`` is an
  array of records does not match (project ``a`` to get the whole array).
* Existence is decided by the *type*: a super type has path ``a.b`` when its
  record type has field ``a`` whose type is a record with field ``b``.  A field
  whose column is None (every value null) exists but needs no data: it is
  "null" rather than "missing".
* A path that ends at a column takes that column's whole subtree; on the way
  down, the ``presence`` of every record field passed (and of every
  ``NullsColumn``) is needed, because a reader places values in rows with the
  ancestors' presence.
* A path no super type has is *missing* and reported; a path only some super
  types have is fine (the other rows give null) and needs nothing from them.
* ``None`` or an empty list projects every column.  ``""`` is the path of the
  top-level value itself, so it also takes everything (and is the only path a
  non-record top-level value such as ``int64`` can match).  Duplicates
  (including different spellings of one path) count once; overlapping paths
  (``a`` and ``a.b``) simply union their streams.
* The super column is needed only when the file has more than one super type
  and the projection matched something: with one type, the row count is in the
  metadata (``FileMeta.row_count``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from csup_async.format.meta import (
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
from csup_async.model.errors import FormatError
from csup_async.model.types import ErrorType, NamedType, RecordType, Type

from .paths import Columns, format_path, parse_columns, quote_component

VALUES = "values"
PRESENCE = "presence"
LENGTHS = "lengths"
TAGS = "tags"
SUPER = "super"
ROLES = (VALUES, PRESENCE, LENGTHS, TAGS, SUPER)

SUPER_ID_NONE = -1  # the super_id of the super column's StreamRef: it belongs to no super type


@dataclass(frozen=True, slots=True)
class StreamRef:
    """One needed column stream, labeled so a plan can be explained.

    ``path`` names the stream's column: record fields joined by dots
    (backquoted when needed), ``[]`` for array/set elements, ``{key}`` and
    ``{value}`` for map entries, ``<i>`` for union member ``i``; ``""`` is the
    top-level value.  ``role`` is one of :data:`ROLES`.
    """

    super_id: int
    path: str
    role: str
    segmap: Segmap

    @property
    def nbytes(self) -> int:
        return sum(s.length for s in self.segmap)


class Leg(NamedTuple):
    """How one super type holds one requested path: the pipeline builds the path's
    cursor from this, so the projection is walked once (here), never again by the reader.

    ``presences`` are the presence runs met on the way down (outermost first): each
    narrows the rows that reach the next.  ``column`` is the target's column, None
    when every value there is null (then nothing is read, not even the presences);
    ``type`` is the declared type at the path.  ``error`` says why the metadata's
    column does not match the type (the reader raises it as a FormatError).
    """

    sid: int
    type: Type
    column: AnyColumn | None
    presences: tuple[Segmap, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a projection needs from one file, before any byte-range decisions."""

    columns: tuple[str, ...] | None
    """The requested paths, deduplicated, as spelled by the caller; None = every column."""
    streams: tuple[tuple[StreamRef, ...], ...]
    """Per super type, the needed streams in layout (depth-first) order."""
    super_stream: StreamRef | None
    found: tuple[tuple[str, ...], ...]
    """Per super type, the requested paths it has (empty when ``columns`` is None)."""
    missing_paths: tuple[str, ...]
    """Requested paths no super type has."""
    null_paths: tuple[str, ...]
    """Requested paths some super type has, but whose values are all null wherever present."""
    legs: tuple[tuple[Leg, ...], ...] = ()
    """Per requested path (in ``columns`` order), each super type that has it, by super ID
    (empty when ``columns`` is None: whole rows)."""


_MISSING, _NULL, _FOUND = 0, 1, 2

_StreamKey = tuple[str, str, int]


def normalize_columns(columns: Iterable[str | tuple[str, ...]] | str | None
                      ) -> Columns | None:
    """Requested paths as ``(canonical spelling, components)``: :func:`paths.parse_columns`,
    the one column-list parser (kept under this name for the planner's callers)."""
    return parse_columns(columns)


def top_level_paths(types: Iterable[Type]) -> list[str]:
    """The default column list: each top-level field once (canonical spelling), and
    ``""`` (the whole value) once if some super type is not a record."""
    names: dict[str | None, None] = {}  # None: the whole value ("")
    for t in types:
        u = _bare(t)
        if isinstance(u, RecordType):
            names.update(dict.fromkeys([f.name for f in u.fields]))
        else:
            names.setdefault(None, None)
    return ["" if n is None else _quote(n) for n in names]


def all_paths(types: Iterable[Type]) -> list[str]:
    """Every path a projection can name, records descended (canonical spellings)."""
    out: dict[str, None] = {}

    def walk(t: Type, prefix: tuple[str, ...]) -> None:
        u = _bare(t)
        if not isinstance(u, RecordType):
            out[format_path(prefix)] = None
            return
        if not u.fields and prefix:
            out[format_path(prefix)] = None
        for f in u.fields:
            walk(f.type, (*prefix, f.name))

    for t in types:
        walk(t, ())
    return list(out)


def describe_paths(types: Iterable[Type], limit: int = 40) -> str:
    """The paths a file has, for an error message: comma-separated, capped at ``limit``."""
    paths = ['""' if p == "" else p for p in all_paths(types)]
    if not paths:
        return "(none)"
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def _bare(t: Type) -> Type:
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    return t


def resolve_paths(meta: FileMeta,
                  columns: Iterable[str | tuple[str, ...]] | str | None = None) -> Resolution:
    """The streams each super type needs for ``columns`` (see the module rules)."""
    return resolve_parsed(meta, normalize_columns(columns))


def resolve_parsed(meta: FileMeta,
                   parsed: tuple[tuple[str, tuple[str, ...]], ...] | None) -> Resolution:
    """:func:`resolve_paths` on already normalized paths (parse once for many files)."""
    types = meta.super_types
    cols = meta.columns
    streams: list[tuple[StreamRef, ...]] = []
    found: list[tuple[str, ...]] = []
    status = [_MISSING] * len(parsed) if parsed is not None else []
    legs: list[list[Leg]] = [[] for _ in parsed] if parsed is not None else []
    matched = False
    # which paths start with each name: a type is walked only for the paths that can be
    # in it, so the work follows the metadata, not super types x paths
    by_first: dict[str, list[int]] = {}
    rootless: list[int] = []  # paths with no component ("" the whole value)
    for k, (_, comps) in enumerate(parsed or ()):
        (by_first.setdefault(comps[0], []) if comps else rootless).append(k)
    simple = parsed is not None and not rootless and all(len(c) == 1 for _, c in parsed)
    only = {comps[0]: k for k, (_, comps) in enumerate(parsed)} if simple else {}  # type: ignore[arg-type]
    spellings_of = [p for p, _ in parsed or ()]
    for sid, t in enumerate(types):
        col = cols[sid] if sid < len(cols) else None
        out: dict[_StreamKey, StreamRef] = {}
        if parsed is None:
            _subtree(sid, col, "", out)
            has: tuple[str, ...] = ()
            matched = True
        elif (simple and type(t) is RecordType and type(col) is RecordColumn
              and len(t.fields) == len(col.fields)):
            # top-level paths of a plain record type (most scans of most files): one pass
            # over its fields, no lookups
            refs: list[StreamRef] = []
            hits_k = _fields_pass(sid, t, col, only, refs, legs, status)
            if hits_k:
                matched = True
                hits_k.sort()
            has = tuple([spellings_of[k] for k in hits_k])
            streams.append(tuple(refs))
            found.append(has)
            continue
        else:
            hits = []
            for k in _candidates(t, by_first, rootless):
                spelling, comps = parsed[k]
                st = _walk(sid, t, col, comps, out, legs[k])
                if st != _MISSING:
                    hits.append(spelling)
                    matched = True
                    if st > status[k]:
                        status[k] = st
            has = tuple(hits)
        streams.append(tuple(out.values()))
        found.append(has)
    super_stream = None
    if len(types) > 1 and matched and meta.super_column:
        super_stream = StreamRef(SUPER_ID_NONE, "", SUPER, meta.super_column)
    if parsed is None:
        return Resolution(None, tuple(streams), super_stream, tuple(found), (), ())
    spellings = tuple(p for p, _ in parsed)
    missing = tuple(p for p, s in zip(spellings, status, strict=True) if s == _MISSING)
    null = tuple(p for p, s in zip(spellings, status, strict=True) if s == _NULL)
    return Resolution(spellings, tuple(streams), super_stream, tuple(found), missing, null,
                      tuple(map(tuple, legs)))


def _candidates(t: Type, by_first: dict[str, list[int]], rootless: list[int]) -> list[int]:
    """Indexes (in request order) of the paths that may be in super type ``t``."""
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if not isinstance(t, RecordType) or not by_first:
        return rootless
    ks = list(rootless)
    for f in t.fields:
        ks += by_first.get(f.name, ())
    return sorted(set(ks))


def _walk(sid: int, t: Type, col: AnyColumn | None, comps: tuple[str, ...],
          out: dict[_StreamKey, StreamRef], legs: list[Leg]) -> int:
    """Add the streams ``comps`` needs in super type ``sid`` (and its :class:`Leg` to
    ``legs``); return its status there.

    Ancestor streams are staged and only committed once the type is known to have
    the path, so a super type lacking it contributes nothing.
    """
    staged: list[tuple[str, str, Segmap]] = []
    label = ""
    for depth, name in enumerate(comps):
        while True:
            if isinstance(col, NullsColumn):
                if col.presence:
                    staged.append((label, PRESENCE, col.presence))
                col = col.values
            elif isinstance(t, (NamedType, ErrorType)):
                t = t.inner
            else:
                break
        if not isinstance(t, RecordType):
            return _MISSING
        ft = t.field(name)
        if ft is None:
            return _MISSING
        label = label + "." + _quote(name) if label else _quote(name)
        fc = col.field(name) if isinstance(col, RecordColumn) else None
        if fc is None or fc.column is None:
            # every value null (or a column that does not match its type, which the
            # reader reports): nothing to read below, if the type has the rest of the path
            target = path_type(ft.type, comps[depth + 1:]) if depth + 1 < len(comps) else ft.type
            if target is None:
                return _MISSING
            error = None
            if col is not None and not isinstance(col, RecordColumn):
                error = f"column for {t} is not a record column"
            elif col is not None and fc is None:
                error = f"record column lacks field {name!r}"
            # the presences on the way stay planned (the plan says what the path spans),
            # though the reader, knowing every value is null, reads none of them
            _commit(sid, staged, out)
            legs.append(Leg(sid, target, None, (), error))
            return _NULL
        if fc.presence:
            staged.append((label, PRESENCE, fc.presence))
        col = fc.column
        t = ft.type
    _commit(sid, staged, out)
    if col is None:  # the top-level value of a type with no column: all null
        legs.append(Leg(sid, t, None))
        return _NULL
    legs.append(Leg(sid, t, col, tuple(seg for _, _, seg in staged)))
    _subtree(sid, col, label, out)
    return _FOUND


def _fields_pass(sid: int, t: RecordType, col: RecordColumn, only: dict[str, int],
                 refs: list[StreamRef], legs: list[list[Leg]], status: list[int]) -> list[int]:
    """:func:`_walk` of every requested top-level field of a plain record type at once
    (``only``: each path's one name), into ``refs`` (this type's streams): one pass over
    its fields and their columns, no lookups (a field whose column is named otherwise is
    one the reader reports).  Returns the indexes of the paths the type has."""
    hits: list[int] = []
    new = tuple.__new__
    for f, fc in zip(t.fields, col.fields, strict=True):
        k = only.get(f.name)
        if k is None:
            continue
        hits.append(k)
        c = fc.column
        if c is None or fc.name != f.name:
            legs[k].append(new(Leg, (sid, f.type, None, (), None if fc.name == f.name else
                                     f"record column lacks field {f.name!r}")))
            if not status[k]:
                status[k] = _NULL
            continue
        status[k] = _FOUND
        label = _QUOTED.get(f.name) or _quote(f.name)
        if fc.presence:
            refs.append(StreamRef(sid, label, PRESENCE, fc.presence))
            legs[k].append(new(Leg, (sid, f.type, c, (fc.presence,), None)))
        else:
            legs[k].append(new(Leg, (sid, f.type, c, (), None)))
        if type(c) is PrimitiveColumn:
            if c.segmap:
                refs.append(StreamRef(sid, label, VALUES, c.segmap))
        else:
            out: dict[_StreamKey, StreamRef] = {}
            _subtree(sid, c, label, out)
            refs.extend(out.values())
    return hits


def _leg(fields: tuple[Any, ...]) -> Leg:
    """A Leg from its five fields (without the NamedTuple's Python-level constructor)."""
    return tuple.__new__(Leg, fields)  # type: ignore[type-var, arg-type]


_QUOTED: dict[str, str] = {}


def _quote(name: str) -> str:
    """:func:`quote_component`, remembered: the same field names recur in every super type."""
    got = _QUOTED.get(name)
    if got is None:
        got = quote_component(name)
        if len(_QUOTED) < 4096:
            _QUOTED[name] = got
    return got


def path_type(t: Type, path: tuple[str, ...]) -> Type | None:
    """The type at ``path`` below ``t`` (through named and error types), or None when
    there is none."""
    for name in path:
        while isinstance(t, (NamedType, ErrorType)):
            t = t.inner
        if not isinstance(t, RecordType):
            return None
        f = t.field(name)
        if f is None:
            return None
        t = f.type
    return t


def _commit(sid: int, staged: list[tuple[str, str, Segmap]],
            out: dict[_StreamKey, StreamRef]) -> None:
    for label, role, segmap in staged:
        key = (label, role, id(segmap))
        if key not in out:
            out[key] = StreamRef(sid, label, role, segmap)


def _add(out: dict[_StreamKey, StreamRef], sid: int, label: str, role: str,
         segmap: Segmap) -> None:
    if segmap:
        key = (label, role, id(segmap))
        if key not in out:
            out[key] = StreamRef(sid, label, role, segmap)


def _subtree(sid: int, col: AnyColumn | None, label: str,
             out: dict[_StreamKey, StreamRef]) -> None:
    """Every non-empty stream under ``col``, in the order ``iter_segmaps`` yields them."""
    if col is None:
        return
    if isinstance(col, PrimitiveColumn):
        _add(out, sid, label, VALUES, col.segmap)
    elif isinstance(col, RecordColumn):
        prefix = label + "." if label else ""
        for f in col.fields:
            flabel = prefix + _quote(f.name)
            _add(out, sid, flabel, PRESENCE, f.presence)
            _subtree(sid, f.column, flabel, out)
    elif isinstance(col, ArrayColumn):
        _add(out, sid, label, LENGTHS, col.lengths)
        _subtree(sid, col.values, label + "[]", out)
    elif isinstance(col, MapColumn):
        _add(out, sid, label, LENGTHS, col.lengths)
        _subtree(sid, col.keys, label + "{key}", out)
        _subtree(sid, col.values, label + "{value}", out)
    elif isinstance(col, UnionColumn):
        _add(out, sid, label, TAGS, col.tags)
        for i, c in enumerate(col.columns):
            _subtree(sid, c, f"{label}<{i}>", out)
    elif isinstance(col, NullsColumn):
        _add(out, sid, label, PRESENCE, col.presence)
        _subtree(sid, col.values, label, out)
    else:
        raise FormatError(f"not a column: {type(col).__name__}")
