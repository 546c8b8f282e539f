"""The column tree as BSUP values: writing it into, and parsing it out of, the reassembly section.

Parsing walks each value together with its BSUP type rather than through the
plain Python mapping, because our ``csup.nulls`` convention is recognised by
its named type, which the plain mapping would erase.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model.errors import FormatError
from ..model.types import (
    INT64,
    NULL,
    UINT8,
    UINT32,
    UINT64,
    ArrayType,
    EnumType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
    underlying,
)
from ..model.values import UnionValue
from .bsup import (
    LZ4_MAX_RATIO,
    UNION_TAG_SIGNED,
    decode_int,
    decode_uint,
    decode_value,
    split_tagged,
)
from .meta import (
    NULLS_TYPE_NAME,
    AnyColumn,
    ArrayColumn,
    FieldColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    Segment,
    SegmentStats,
    UnionColumn,
)

SEGMENT_TYPE = RecordType((
    Field("offset", UINT64), Field("length", UINT32), Field("mem_length", UINT32),
    Field("compression_format", UINT8),
))
SEGMAP_TYPE = ArrayType(SEGMENT_TYPE)
TRAILER_TYPE = RecordType((
    Field("magic", PrimitiveType("string", 25)), Field("type", PrimitiveType("string", 25)),
    Field("version", INT64), Field("sections", ArrayType(INT64)),
    Field("meta", RecordType((Field("skew_thresh", INT64), Field("segment_thresh", INT64)))),
))


def segmap_value(segmap: Segmap) -> list[dict[str, int]]:
    return [{"offset": s.offset, "length": s.length, "mem_length": s.mem_length,
             "compression_format": s.compression} for s in segmap]


def _plain_segmap(segmap: Segmap) -> tuple[Type, Any]:
    return SEGMAP_TYPE, segmap_value(segmap)


def column_value(col: AnyColumn | None,
                 segmap: Callable[[Segmap], tuple[Type, Any]] = _plain_segmap
                 ) -> tuple[Type, Any]:
    """(BSUP type, typed Python value) of a column for the reassembly section;
    ``segmap`` gives each segmap's (type, value) (the writer's adds statistics)."""
    if col is None:
        return NULL, None
    if isinstance(col, PrimitiveColumn):
        return segmap(col.segmap)
    if isinstance(col, RecordColumn):
        fields, value = [], {}
        for f in col.fields:
            ct, cv = column_value(f.column, segmap)
            pt, pv = segmap(f.presence)
            ft = RecordType((Field("column", ct), Field("presence", pt)))
            fields.append(Field(f.name, ft))
            value[f.name] = {"column": cv, "presence": pv}
        return RecordType(tuple(fields)), value
    if isinstance(col, ArrayColumn):
        vt, vv = column_value(col.values, segmap)
        lt, lv = segmap(col.lengths)
        t = RecordType((Field("values", vt), Field("lengths", lt)))
        return t, {"values": vv, "lengths": lv}
    if isinstance(col, MapColumn):
        kt, kv = column_value(col.keys, segmap)
        vt, vv = column_value(col.values, segmap)
        lt, lv = segmap(col.lengths)
        t = RecordType((Field("key", kt), Field("value", vt), Field("lengths", lt)))
        return t, {"key": kv, "value": vv, "lengths": lv}
    if isinstance(col, UnionColumn):
        parts = [column_value(c, segmap) for c in col.columns]
        distinct: list[Type] = []
        for pt, _ in parts:
            if pt != NULL and pt not in distinct:
                distinct.append(pt)
        if len(distinct) <= 1:
            elem = distinct[0] if distinct else NULL
            values = [pv for _, pv in parts]
        else:
            elem = UnionType(tuple(distinct))
            values = [None if pt == NULL else UnionValue(distinct.index(pt), pt, pv)
                      for pt, pv in parts]
        tt, tv = segmap(col.tags)
        t = RecordType((Field("columns", ArrayType(elem)), Field("tags", tt)))
        return t, {"columns": values, "tags": tv}
    if isinstance(col, NullsColumn):
        vt, vv = column_value(col.values, segmap)
        pt, pv = segmap(col.presence)
        t = NamedType(NULLS_TYPE_NAME, RecordType((Field("values", vt), Field("presence", pt))))
        return t, {"values": vv, "presence": pv}
    raise TypeError(f"not a column: {col!r}")


# ------------------------------------------------------------------ parsing ---

MAX_COLUMN_DEPTH = 100


def _resolve(vtype: Type, body: Any) -> tuple[Type, Any]:
    """Look through unions (decoding the tag) to the member type and body."""
    while isinstance(vtype, UnionType) and body is not None:
        parts = split_tagged(body)
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a tag and a value")
        idx = decode_int(parts[0]) if UNION_TAG_SIGNED else decode_uint(parts[0])
        if not 0 <= idx < len(vtype.types):
            raise FormatError(f"union tag {idx} out of range")
        vtype, body = vtype.types[idx], parts[1]
    return vtype, body


class _What:
    """An error message's subject, formatted only if an error needs it: printing a
    column's record type for every column of every file cost more than parsing it."""

    __slots__ = ("arg", "fmt")

    def __init__(self, fmt: str, arg: object) -> None:
        self.fmt, self.arg = fmt, arg

    def __str__(self) -> str:
        return self.fmt.format(self.arg)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _record_parts(vtype: Type, body: Any, what: str | _What) -> dict[str, tuple[Type, Any]]:
    vtype = underlying(vtype)
    if not isinstance(vtype, RecordType) or body is None:
        raise FormatError(f"{what} is not a record (got {vtype})")
    parts = split_tagged(body)
    if len(parts) != len(vtype.fields):
        raise FormatError(f"{what} has {len(parts)} fields, its type {len(vtype.fields)}")
    return {f.name: (f.type, p) for f, p in zip(vtype.fields, parts, strict=True)}


def parse_segmap(vtype: Type, body: Any, what: str | _What = "segmap") -> Segmap:
    vtype, body = _resolve(vtype, body)
    if body is None:
        return ()
    shape = segmap_shape(vtype)
    if shape is not None:
        rows = segment_rows(body, shape)
        if rows is not None:
            return segmap_from_rows(rows, shape, what)
    return parse_segmap_generic(vtype, body, what)


#: Integer types a statistic may be written in (the writer uses uint32).
_UINT_NAMES = frozenset(("uint8", "uint16", "uint32", "uint64"))


@dataclass(frozen=True, slots=True)
class _SegmapShape:
    """How a segmap's element type extends SEGMENT_TYPE: ``extra`` more fields,
    with ``count`` and ``crc32`` (as unsigned integers) at these indexes among them."""

    elem: RecordType
    extra: int
    count_at: int | None
    crc32_at: int | None


# Types already classified, by id (the type is kept, so its id stays its own):
# metadata types are shared between files (bsup's typedef memo), and a structural
# comparison per segmap would cost more than decoding it.
_SEGMAP_LIKE: dict[int, tuple[Type, _SegmapShape | None]] = {}


def _uint_field_at(fields: tuple[Field, ...], name: str) -> int | None:
    for i, f in enumerate(fields):
        if f.name == name:
            t = underlying(f.type)
            return i if isinstance(t, PrimitiveType) and t.name in _UINT_NAMES else None
    return None


def segmap_shape(t: Type) -> _SegmapShape | None:
    """The shape of ``t`` as a segmap, or None when ``t`` is not an array of
    records that starts with exactly the four fields of SEGMENT_TYPE."""
    known = _SEGMAP_LIKE.get(id(t))
    if known is not None and known[0] is t:
        return known[1]
    shape = None
    if isinstance(t, ArrayType) and isinstance(t.elem, RecordType):
        base = SEGMENT_TYPE.fields
        fields = t.elem.fields
        if len(fields) >= len(base) and fields[:len(base)] == base:
            rest = fields[len(base):]
            shape = _SegmapShape(t.elem, len(rest), _uint_field_at(rest, "count"),
                                 _uint_field_at(rest, "crc32"))
    if len(_SEGMAP_LIKE) >= 1024:
        _SEGMAP_LIKE.clear()
    _SEGMAP_LIKE[id(t)] = (t, shape)
    return shape


def _uvarint(b: bytes, pos: int, n: int) -> tuple[int, int]:
    """A uvarint tag at ``pos`` and the position after it; (-1, pos) when cut or over-long."""
    v = shift = 0
    while pos < n and shift < 63:
        c = b[pos]
        pos += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, pos
        shift += 7
    return -1, pos


_Row = tuple[int, int, int, int, "int | None", "int | None", "bytes | None"]


def segment_rows(body: Any, shape: _SegmapShape) -> list[_Row] | None:
    """The segments of a segmap body in its usual shape, or None for anything else.

    The usual shape: every element and its four segment fields non-null, those
    fields' tags one byte, integers within their widths (uint64, uint32, uint32,
    uint8), followed by ``shape.extra`` fields of any kind (the segment statistics),
    which are split by their tags here: ``count`` and ``crc32`` are read (a reader
    checks them on every segment), the rest kept as the element's bytes.  That is
    every segmap a writer produces, decoded here without the generic decoder's
    per-value dispatch (metadata parsing is most of a driver's CPU per file).  For
    anything else the caller uses the generic decoder, so what is rejected, and
    how, is unchanged.
    """
    b = bytes(body)
    n = len(b)
    pos = 0
    out: list[_Row] = []
    frm = int.from_bytes
    extra, count_at, crc_at = shape.extra, shape.count_at, shape.crc32_at
    while pos < n:
        tag = b[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _uvarint(b, pos, n)
        start = pos
        end = pos + tag - 1  # the element's body is b[pos:end]
        if tag <= 0 or end > n:
            return None
        vals = []
        for limit in (9, 5, 5, 2):  # 1 + the widest body of uint64, uint32, uint32, uint8
            if pos >= end:
                return None
            t = b[pos]
            if t == 0 or t > limit or pos + t > end:
                return None
            vals.append(frm(b[pos + 1 : pos + t], "little"))
            pos += t
        count = crc = None
        for i in range(extra):
            if pos >= end:
                return None
            t = b[pos]
            if t < 0x80:
                pos += 1
            else:
                t, pos = _uvarint(b, pos, n)
                if t < 0:
                    return None
            if t:
                if i in (count_at, crc_at):
                    if t > 9:
                        return None
                    v = frm(b[pos : pos + t - 1], "little")
                    if i == count_at:
                        count = v
                    else:
                        crc = v
                pos += t - 1
            if pos > end:
                return None
        if pos != end:
            return None
        out.append((vals[0], vals[1], vals[2], vals[3], count, crc,
                    b[start:end] if extra else None))
    return out


_SEGMENT_FIELDS = frozenset(("offset", "length", "mem_length", "compression_format"))
_CHECKED_STATS = frozenset(("count", "crc32"))


def _segment_elements(vtype: Type, body: Any, what: str | _What
                      ) -> list[tuple[dict[str, Any] | None, bytes | None]]:
    """The elements of a segmap as dicts of the four segment fields (those present)
    and of ``count``/``crc32`` when typed as unsigned integers, each with the
    element's bytes when it has other fields.

    Other fields (the rest of the segment statistics, or any a later writer adds)
    are split off by their tags and not decoded: a reader that does not use them
    neither pays for nor judges them (they are judged where they are used), so
    this and the fast path agree on every body."""
    t = underlying(vtype)
    elem = underlying(t.elem) if isinstance(t, ArrayType) else None
    if not isinstance(elem, RecordType):
        value = decode_value(vtype, body)
        if not isinstance(value, list):
            raise FormatError(f"{what} is not an array")
        return [(v, None) for v in value]
    wanted = set(_SEGMENT_FIELDS)
    for name in _CHECKED_STATS:
        if _uint_field_at(elem.fields, name) is not None:
            wanted.add(name)
    has_extra = any(f.name not in _SEGMENT_FIELDS for f in elem.fields)
    out: list[tuple[dict[str, Any] | None, bytes | None]] = []
    for part in split_tagged(body):
        if part is None:
            out.append((None, None))
            continue
        fields = split_tagged(part)
        if len(fields) != len(elem.fields):
            raise FormatError(f"{what} element has {len(fields)} fields, its type "
                              f"{len(elem.fields)}")
        out.append(({f.name: (None if b is None else decode_value(f.type, b))
                     for f, b in zip(elem.fields, fields, strict=True)
                     if f.name in wanted}, bytes(part) if has_extra else None))
    return out


def parse_segmap_generic(vtype: Type, body: Any, what: str | _What) -> Segmap:
    """Any segmap value, through the generic decoder (the reference for the fast path)."""
    out = []
    t = underlying(vtype)
    elem = underlying(t.elem) if isinstance(t, ArrayType) else None
    for el, raw in _segment_elements(vtype, body, what):
        if not isinstance(el, dict):
            raise FormatError(f"{what} element is not a record")
        try:
            off, length = el["offset"], el["length"]
        except KeyError as e:
            raise FormatError(f"{what} element lacks {e.args[0]}") from None
        mem = el.get("mem_length", length)
        comp = el.get("compression_format", 0)
        if any(not isinstance(x, int) or isinstance(x, bool) for x in (off, length, mem, comp)):
            raise FormatError(f"{what} element has a non-integer field")
        seg = _segment(off, length, mem, comp, what, el.get("count"), el.get("crc32"),
                       None if raw is None or not isinstance(elem, RecordType) else (elem, raw))
        out.append(seg)
    return tuple(out)


def segmap_from_rows(rows: list[_Row], shape: _SegmapShape, what: str | _What) -> Segmap:
    """The checked segments of the rows :func:`segment_rows` read (the fast path's end)."""
    elem = shape.elem
    return tuple([_segment(off, length, mem, comp, what, count, crc,
                           None if raw is None else (elem, raw))
                  for off, length, mem, comp, count, crc, raw in rows])


def _segment(off: int, length: int, mem: int, comp: int, what: str | _What,
             count: int | None = None, crc: int | None = None,
             extra: tuple[RecordType, bytes] | None = None) -> Segment:
    """One checked segment (the same checks whichever decoder read it)."""
    if off < 0 or length < 0 or mem < 0:
        raise FormatError(f"{what} element has a negative offset or length")
    if comp not in (0, 1):
        raise FormatError(f"{what} has unknown compression_format {comp}")
    if comp == 0 and mem != length:
        raise FormatError(f"{what} has an uncompressed segment whose mem_length "
                          f"{mem} differs from its length {length}")
    if comp == 1 and (mem > LZ4_MAX_RATIO * length + 64 or (length == 0) != (mem == 0)):
        # checked here, not only when decompressing: a super column's mem_length
        # is its row count, which a reader uses without decompressing anything
        raise FormatError(f"{what} has an LZ4 segment of {length} bytes that claims "
                          f"to decompress to {mem} bytes")
    if crc is not None and crc > 0xFFFFFFFF:
        raise FormatError(f"{what} has a crc32 of {crc}, more than 32 bits")
    if count is not None and count > mem:
        # every value takes at least one byte (its tag), so more values than
        # decompressed bytes cannot be true
        raise FormatError(f"{what} claims {count} values in {mem} bytes")
    return Segment(off, length, mem, comp, count, crc, extra)


@functools.lru_cache(maxsize=1 << 16)
def segment_stats(seg: Segment) -> SegmentStats:
    """All statistics of ``seg`` (decoded on first ask: they are kept as bytes until then;
    planning, pruning and inspect ask for the same segments again, so answers are kept,
    bounded, by segment).

    What the file says is given as it is, except a ``nulls`` that is no count and a
    ``nan`` that is no bool, given as None (unknown).  Statistics are an optional
    extension a reader may ignore, so statistics that cannot be true (``nulls`` above
    ``count``, a ``min`` above the ``max``, bounds of another type than the column)
    are not an error: planning ignores them (:mod:`planner.bounds`) and reads those
    segments."""
    if seg.extra is None:
        return SegmentStats(count=seg.count, crc32=seg.crc32)
    elem, raw = seg.extra
    parts = split_tagged(raw)
    got: dict[str, Any] = {}
    for f, b in zip(elem.fields, parts, strict=False):
        if f.name in ("nulls", "min", "max", "nan") and b is not None:
            got[f.name] = decode_value(f.type, b)
    nulls, nan = got.get("nulls"), got.get("nan")
    if not isinstance(nulls, int) or isinstance(nulls, bool):
        nulls = None
    if not isinstance(nan, bool):
        nan = None
    return SegmentStats(count=seg.count, nulls=nulls, min=got.get("min"), max=got.get("max"),
                        nan=nan, crc32=seg.crc32)


def check_field_names(t: Type) -> None:
    """FormatError if a record anywhere in ``t`` names two fields alike.

    Such a type has no meaning (which ``i`` does ``{i:string,i:int64}.i`` name?),
    and readers that look fields up by name would each pick a different one.
    Types are shared DAGs (a 2**90-node type can be 90 objects), so each
    object is visited once, without recursion.
    """
    seen: set[int] = set()
    todo = [t]
    while todo:
        u = todo.pop()
        if id(u) in seen:
            continue
        seen.add(id(u))
        if isinstance(u, RecordType):
            names = {f.name for f in u.fields}
            if len(names) != len(u.fields):
                dup = next(f.name for i, f in enumerate(u.fields)
                           if any(g.name == f.name for g in u.fields[:i]))
                raise FormatError(f"record type has a duplicate field name {dup!r}")
            todo += [f.type for f in u.fields]
        elif isinstance(u, (ArrayType, SetType)):
            todo.append(u.elem)
        elif isinstance(u, MapType):
            todo += [u.key, u.value]
        elif isinstance(u, UnionType):
            todo += list(u.types)
        elif isinstance(u, (NamedType, ErrorType)):
            todo.append(u.inner)


def parse_column(stype: Type, vtype: Type, body: Any, depth: int = 0) -> AnyColumn | None:
    """The column for values of super type ``stype`` from its reassembly value."""
    if depth > MAX_COLUMN_DEPTH:
        raise FormatError("column tree nested too deeply")
    if depth == 0:
        check_field_names(stype)
    vtype, body = _resolve(vtype, body)
    if body is None:
        return None
    if isinstance(vtype, NamedType) and vtype.name == NULLS_TYPE_NAME:
        parts = _record_parts(vtype, body, "nulls column")
        if "values" not in parts or "presence" not in parts:
            raise FormatError("nulls column lacks values or presence")
        return NullsColumn(parse_column(stype, *parts["values"], depth + 1),
                           parse_segmap(*parts["presence"], "presence"))
    st = stype
    while isinstance(st, (NamedType, ErrorType)):
        st = st.inner
    d = depth + 1
    if isinstance(st, (PrimitiveType, EnumType)):
        return PrimitiveColumn(parse_segmap(vtype, body, _What("{} column", st)))
    if isinstance(st, RecordType):
        parts = _record_parts(vtype, body, _What("record column for {}", st))
        fields = []
        for f in st.fields:
            if f.name not in parts:
                raise FormatError(f"record column lacks field {f.name!r}")
            fparts = _record_parts(*parts[f.name], _What("field {!r}", f.name))
            if "column" not in fparts or "presence" not in fparts:
                raise FormatError(f"field {f.name!r} lacks column or presence")
            fields.append(FieldColumn(f.name, parse_column(f.type, *fparts["column"], d),
                                      parse_segmap(*fparts["presence"], "presence")))
        return RecordColumn(tuple(fields))
    if isinstance(st, (ArrayType, SetType)):
        parts = _record_parts(vtype, body, _What("array column for {}", st))
        if "values" not in parts or "lengths" not in parts:
            raise FormatError("array column lacks values or lengths")
        return ArrayColumn(parse_column(st.elem, *parts["values"], d),
                           parse_segmap(*parts["lengths"], "lengths"))
    if isinstance(st, MapType):
        parts = _record_parts(vtype, body, _What("map column for {}", st))
        if "lengths" not in parts:
            raise FormatError("map column has no lengths (the specification's map layout "
                              "cannot be decoded; see docs/format.md, Column kinds)")
        if "key" not in parts or "value" not in parts:
            raise FormatError("map column lacks key or value")
        return MapColumn(parse_column(st.key, *parts["key"], d),
                         parse_column(st.value, *parts["value"], d),
                         parse_segmap(*parts["lengths"], "lengths"))
    if isinstance(st, UnionType):
        parts = _record_parts(vtype, body, _What("union column for {}", st))
        if "columns" not in parts or "tags" not in parts:
            raise FormatError("union column lacks columns or tags")
        ctype, cbody = _resolve(*parts["columns"])
        ctype = underlying(ctype)
        if not isinstance(ctype, ArrayType) or cbody is None:
            raise FormatError("union column's columns is not an array")
        elems = split_tagged(cbody)
        if len(elems) != len(st.types):
            raise FormatError(f"union column has {len(elems)} columns for "
                              f"{len(st.types)} members")
        cols = tuple(parse_column(m, ctype.elem, e, d)
                     for m, e in zip(st.types, elems, strict=True))
        return UnionColumn(cols, parse_segmap(*parts["tags"], "tags"))
    raise FormatError(f"no column layout for type {st}")
