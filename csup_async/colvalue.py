"""The column tree as BSUP values: writing it into, and parsing it out of, the reassembly section.

Parsing walks each value together with its BSUP type rather than through the
plain Python mapping, because our ``csup.nulls`` convention is recognised by
its named type, which the plain mapping would erase.
"""

from __future__ import annotations

from typing import Any

from .bsup import (
    LZ4_MAX_RATIO,
    UNION_TAG_SIGNED,
    decode_int,
    decode_uint,
    decode_value,
    split_tagged,
)
from .errors import FormatError
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
    UnionColumn,
)
from .types import (
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
from .values import UnionValue

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


def column_value(col: AnyColumn | None) -> tuple[Type, Any]:
    """(BSUP type, typed Python value) of a column for the reassembly section."""
    if col is None:
        return NULL, None
    if isinstance(col, PrimitiveColumn):
        return SEGMAP_TYPE, segmap_value(col.segmap)
    if isinstance(col, RecordColumn):
        fields, value = [], {}
        for f in col.fields:
            ct, cv = column_value(f.column)
            ft = RecordType((Field("column", ct), Field("presence", SEGMAP_TYPE)))
            fields.append(Field(f.name, ft))
            value[f.name] = {"column": cv, "presence": segmap_value(f.presence)}
        return RecordType(tuple(fields)), value
    if isinstance(col, ArrayColumn):
        vt, vv = column_value(col.values)
        t = RecordType((Field("values", vt), Field("lengths", SEGMAP_TYPE)))
        return t, {"values": vv, "lengths": segmap_value(col.lengths)}
    if isinstance(col, MapColumn):
        kt, kv = column_value(col.keys)
        vt, vv = column_value(col.values)
        t = RecordType((Field("key", kt), Field("value", vt), Field("lengths", SEGMAP_TYPE)))
        return t, {"key": kv, "value": vv, "lengths": segmap_value(col.lengths)}
    if isinstance(col, UnionColumn):
        parts = [column_value(c) for c in col.columns]
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
        t = RecordType((Field("columns", ArrayType(elem)), Field("tags", SEGMAP_TYPE)))
        return t, {"columns": values, "tags": segmap_value(col.tags)}
    if isinstance(col, NullsColumn):
        vt, vv = column_value(col.values)
        t = NamedType(NULLS_TYPE_NAME, RecordType((Field("values", vt),
                                                   Field("presence", SEGMAP_TYPE))))
        return t, {"values": vv, "presence": segmap_value(col.presence)}
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
    if _is_segmap_type(vtype):
        rows = _segment_rows(body)
        if rows is not None:
            return _segments(rows, what)
    return _parse_segmap_generic(vtype, body, what)


# Types already compared with SEGMAP_TYPE, by id (the type is kept, so its id stays
# its own): metadata types are shared between files (bsup's typedef memo), and a
# structural comparison per segmap would cost more than decoding it.
_SEGMAP_LIKE: dict[int, tuple[Type, bool]] = {}


def _is_segmap_type(t: Type) -> bool:
    if t is SEGMAP_TYPE:
        return True
    known = _SEGMAP_LIKE.get(id(t))
    if known is not None and known[0] is t:
        return known[1]
    same = t == SEGMAP_TYPE
    if len(_SEGMAP_LIKE) >= 1024:
        _SEGMAP_LIKE.clear()
    _SEGMAP_LIKE[id(t)] = (t, same)
    return same


def _segment_rows(body: Any) -> list[tuple[int, int, int, int]] | None:
    """The segments of a SEGMAP_TYPE body in its usual shape, or None for anything else.

    The usual shape: every element and field non-null, one-byte tags, integers
    within their widths (uint64, uint32, uint32, uint8).  That is every segmap a
    writer produces, decoded here without the generic decoder's per-value
    dispatch (metadata parsing is most of a driver's CPU per file).  For
    anything else the caller uses the generic decoder, so what is rejected,
    and how, is unchanged.
    """
    b = bytes(body)
    n = len(b)
    pos = 0
    out = []
    frm = int.from_bytes
    while pos < n:
        tag = b[pos]
        end = pos + tag  # the element's body is b[pos + 1 : end]
        if tag == 0 or tag >= 0x80 or end > n:
            return None
        pos += 1
        vals = []
        for limit in (9, 5, 5, 2):  # 1 + the widest body of uint64, uint32, uint32, uint8
            if pos >= end:
                return None
            t = b[pos]
            if t == 0 or t > limit or pos + t > end:
                return None
            vals.append(frm(b[pos + 1 : pos + t], "little"))
            pos += t
        if pos != end:
            return None
        out.append((vals[0], vals[1], vals[2], vals[3]))
    return out


def _parse_segmap_generic(vtype: Type, body: Any, what: str | _What) -> Segmap:
    """Any segmap value, through the generic decoder (the reference for the fast path)."""
    value = decode_value(vtype, body)
    if not isinstance(value, list):
        raise FormatError(f"{what} is not an array")
    out = []
    for el in value:
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
        out.append(_segment(off, length, mem, comp, what))
    return tuple(out)


def _segments(rows: list[tuple[int, int, int, int]], what: str | _What) -> Segmap:
    return tuple([_segment(off, length, mem, comp, what) for off, length, mem, comp in rows])


def _segment(off: int, length: int, mem: int, comp: int, what: str | _What) -> Segment:
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
    return Segment(off, length, mem, comp)


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
            raise FormatError("map column has no lengths (the seed's map layout cannot be "
                              "decoded; see CSUP-DECISIONS)")
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
