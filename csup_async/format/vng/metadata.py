"""Zed's VNG metadata section, read into this library's metadata tree (``FileMeta``).

Zed (v1.4 to v1.12) writes a VNG object as ``[data][metadata][trailer]``: the
trailer is a ZNG record ``{magic: "ZNG Trailer", type: "vng", version: 3,
sections: [data size, metadata size], meta: {skew_thresh, segment_thresh}}``, and
the metadata is a ZNG stream of Go structs marshalled with their type names as
named types: first the segmap of the root column (the type number of each
value), then one tree per distinct top-level type (``Record{Fields}``,
``Field{Name, Values}``, ``Array``/``Set{Lengths, Values}``, ``Map{Lengths, Keys,
Values}``, ``Union{Tags, Values}``, ``Named{Name, Values}``, ``Nulls{Runs,
Values}``, ``Primitive{Type, Segmap, ...}``, ``Const{Value, Count}``).

That layout is the one this library's own CSUP files inherited, so the tree maps
onto the same column classes: a ``Nulls`` around a record field becomes the
field's presence runs (alternating runs of values and nulls, values first, in
both), elsewhere a :class:`~csup_async.format.meta.NullsColumn`; ``Named`` is only a
type.  The two encodings CSUP lacks become attributes of a primitive column, so
planning is unchanged: a dictionary (v1.9+: one selector byte per value) and a
constant (v1.9+: no data at all).  Which fields the structs have tells which
Zed versions could have written the file (:func:`writer_versions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from ...model.errors import CsupError, FormatError
from ...model.types import (
    ArrayType,
    Field,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from ..bsup import (
    append_tagged,
    decode_type_value,
    decode_value,
    iter_raw_values,
    iter_tagged,
)
from ..meta import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    AnyColumn,
    ArrayColumn,
    Constant,
    FieldColumn,
    FileMeta,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segmap,
    Segment,
    Trailer,
    UnionColumn,
    iter_segmaps,
)

MAGIC = "ZNG Trailer"
TYPE = "vng"
VERSION = 3
MAX_DEPTH = 200

_Raw = tuple[Type, "memoryview | None"]


@dataclass(frozen=True)
class WriterInfo:
    """What the metadata's Go structs say about the Zed version that wrote the file."""

    segment_fields: tuple[str, ...]
    primitive_fields: tuple[str, ...]
    has_const: bool

    @property
    def versions(self) -> str:
        """The Zed releases whose VNG writer has exactly these structs."""
        seg, prim = set(self.segment_fields), set(self.primitive_fields)
        if "Count" in seg:
            return "v1.12"
        if "Dict" in prim or self.has_const:
            return "v1.9-v1.11"
        if not seg:
            return "v1.4-v1.12"  # an empty file: no segment says which
        if "MemLength" not in seg:
            return "v1.4"
        if prim:
            return "v1.5-v1.8"
        return "v1.5-v1.11"


def _bare(t: Type) -> Type:
    return t.inner if isinstance(t, NamedType) else t


class _Fields(dict[str, _Raw]):
    """A struct's fields; one the struct lacks is a format error, not a KeyError."""

    def __init__(self, name: str, items: dict[str, _Raw]) -> None:
        super().__init__(items)
        self.name = name

    def __missing__(self, key: str) -> _Raw:
        raise FormatError(f"VNG metadata: a {self.name} struct has no field {key!r}")


def _struct(t: Type, body: memoryview | None, want: str) -> _Fields:
    """The fields of a marshalled Go struct named ``want`` (its named type)."""
    if not isinstance(t, NamedType) or t.name != want or not isinstance(t.inner, RecordType):
        raise FormatError(f"VNG metadata: expected a {want} struct, found {t}")
    if body is None:
        raise FormatError(f"VNG metadata: a {want} struct is null")
    parts = list(iter_tagged(body, 0, len(body)))
    if len(parts) != len(t.inner.fields):
        raise FormatError(f"VNG metadata: a {want} struct has the wrong number of fields")
    return _Fields(want, {f.name: (f.type, p) for f, p in zip(t.inner.fields, parts,
                                                              strict=True)})


def _elements(t: Type, body: memoryview | None) -> Iterator[_Raw]:
    """The elements of a marshalled Go slice; a union element (a slice of interface
    values of several types) is resolved to its member."""
    t = _bare(t)
    if body is None:
        return
    if not isinstance(t, ArrayType):
        raise FormatError(f"VNG metadata: expected a slice, found {t}")
    for part in iter_tagged(body, 0, len(body)):
        yield _member(t.elem, part)


def _member(t: Type, body: memoryview | None) -> _Raw:
    if isinstance(t, UnionType) and body is not None:
        parts = list(iter_tagged(body, 0, len(body)))
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("VNG metadata: a union value is not a tag and a value")
        tag = decode_value(_INT64, parts[0])
        if not 0 <= tag < len(t.types):
            raise FormatError(f"VNG metadata: union tag {tag} out of range")
        return t.types[tag], parts[1]
    return t, body


def _int(raw: _Raw, what: str) -> int:
    t, body = raw
    v = decode_value(_bare(t), body)
    if not isinstance(v, int) or v < 0:
        raise FormatError(f"VNG metadata: {what} is {v!r}, not a non-negative integer")
    return v


def _segmap(raw: _Raw, seen: set[str]) -> Segmap:
    elem = _bare(raw[0])
    if isinstance(elem, ArrayType) and isinstance(_bare(elem.elem), RecordType):
        seen.update(f.name for f in _bare(elem.elem).fields)  # type: ignore[union-attr]
    out = []
    for t, body in _elements(*raw):
        f = _struct(t, body, "Segment")
        seen.update(f)
        offset, length = _int(f["Offset"], "a segment offset"), _int(f["Length"], "a length")
        mem = _int(f["MemLength"], "a segment size") if "MemLength" in f else length
        comp = _int(f["CompressionFormat"], "a compression") if "CompressionFormat" in f \
            else COMPRESSION_NONE
        if comp not in (COMPRESSION_NONE, COMPRESSION_LZ4):
            raise FormatError(f"VNG segment compression format {comp} is unknown")
        if comp == COMPRESSION_NONE and mem != length:
            raise FormatError(f"uncompressed VNG segment of {length} bytes says it holds {mem}")
        count = _int(f["Count"], "a segment count") if "Count" in f else None
        out.append(Segment(offset, length, mem, comp, count))
    return tuple(out)


_INT64 = decode_type_value(b"\x09")


#: Types whose order Zed's comparison (which chose Min and Max) and this library's
#: pruning agree on; floats are left out (where Zed puts NaN is not pruning's rule).
_PRUNABLE = frozenset({"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                       "int64", "duration", "time", "string", "bytes", "bool"})


def _with_stats(segmap: Segmap, t: Type, f: _Fields) -> Segmap:
    """v1.9+ ``Primitive{Min, Max, Nulls}`` describe the whole column; with one segment
    (v1.12 always writes one) they are that segment's statistics, kept the way CSUP's
    are (``Segment.extra``) so pruning uses them."""
    if len(segmap) != 1 or not {"Min", "Max", "Nulls"} <= f.keys():
        return segmap
    if not isinstance(t, PrimitiveType) or t.name not in _PRUNABLE:
        return segmap
    (lo_t, lo), (hi_t, hi) = f["Min"], f["Max"]
    if lo_t != t or hi_t != t or lo is None or hi is None:
        return segmap
    nulls_t, nulls = f["Nulls"]
    raw = bytearray()
    for body in (nulls, lo, hi):
        append_tagged(raw, None if body is None else bytes(body))
    elem = RecordType((Field("nulls", nulls_t), Field("min", t), Field("max", t)))
    return (replace(segmap[0], extra=(elem, bytes(raw))),)


class _Parser:
    def __init__(self) -> None:
        self.segment_fields: set[str] = set()
        self.primitive_fields: set[str] = set()
        self.has_const = False

    def node(self, raw: _Raw, depth: int = 0) -> tuple[Type, AnyColumn | None]:
        """The type and column a metadata node describes."""
        if depth > MAX_DEPTH:
            raise FormatError(f"VNG metadata nested deeper than {MAX_DEPTH}")
        t, body = _member(*raw)
        kind = t.name if isinstance(t, NamedType) else str(t)
        d = depth + 1
        if kind == "Record":
            fields, cols = [], []
            for ft, fb in _elements(*_struct(t, body, kind)["Fields"]):
                f = _struct(ft, fb, "Field")
                name = decode_value(_bare(f["Name"][0]), f["Name"][1])
                if not isinstance(name, str):
                    raise FormatError("VNG metadata: a field name is not a string")
                vt, vb = _member(*f["Values"])
                presence: Segmap = ()
                if isinstance(vt, NamedType) and vt.name == "Nulls":
                    nulls = _struct(vt, vb, "Nulls")
                    presence = _segmap(nulls["Runs"], self.segment_fields)
                    vt, vb = _member(*nulls["Values"])
                ftype, col = self.node((vt, vb), d)
                fields.append(Field(name, ftype))
                cols.append(FieldColumn(name, col, presence))
            return RecordType(tuple(fields)), RecordColumn(tuple(cols))
        if kind in ("Array", "Set"):
            f = _struct(t, body, kind)
            et, ec = self.node(f["Values"], d)
            lengths = _segmap(f["Lengths"], self.segment_fields)
            return (ArrayType(et) if kind == "Array" else SetType(et)), ArrayColumn(ec, lengths)
        if kind == "Map":
            f = _struct(t, body, kind)
            kt, kc = self.node(f["Keys"], d)
            vt, vc = self.node(f["Values"], d)
            return MapType(kt, vt), MapColumn(kc, vc, _segmap(f["Lengths"], self.segment_fields))
        if kind == "Union":
            f = _struct(t, body, kind)
            members = [self.node(m, d) for m in _elements(*f["Values"])]
            return (UnionType(tuple(m[0] for m in members)),
                    UnionColumn(tuple(m[1] for m in members),
                                _segmap(f["Tags"], self.segment_fields)))
        if kind == "Named":
            f = _struct(t, body, kind)
            name = decode_value(_bare(f["Name"][0]), f["Name"][1])
            inner, col = self.node(f["Values"], d)
            return NamedType(str(name), inner), col
        if kind == "Nulls":
            f = _struct(t, body, kind)
            inner, col = self.node(f["Values"], d)
            return inner, NullsColumn(col, _segmap(f["Runs"], self.segment_fields))
        if kind == "Primitive":
            f = _struct(t, body, kind)
            self.primitive_fields.update(f)
            tb = f["Type"][1]
            if tb is None:
                raise FormatError("VNG metadata: a primitive's type is null")
            ptype = decode_type_value(tb)
            dictionary = None
            if "Dict" in f:
                entries = [_struct(et, eb, "DictEntry")["Value"][1]
                           for et, eb in _elements(*f["Dict"])]
                if entries:
                    dictionary = tuple(None if e is None else bytes(e) for e in entries)
            segmap = _with_stats(_segmap(f["Segmap"], self.segment_fields), ptype, f)
            return ptype, PrimitiveColumn(segmap, dictionary)
        if kind == "Const":
            self.has_const = True
            f = _struct(t, body, kind)
            vt, vb = f["Value"]
            count = _int(f["Count"], "a constant's count")
            return vt, PrimitiveColumn((), None, Constant(None if vb is None else bytes(vb),
                                                          count))
        raise FormatError(f"VNG metadata: unknown node {kind!r}")


def parse_metadata(buf: bytes | memoryview, trailer: Trailer, object_size: int
                   ) -> tuple[FileMeta, WriterInfo]:
    """The metadata section of a VNG object (its bytes) as a ``FileMeta``."""
    try:
        values = list(iter_raw_values(buf))
    except CsupError as e:
        raise FormatError(f"VNG metadata section is not a ZNG stream: {e.message}") from e
    if not values:
        raise FormatError("VNG metadata section holds no root segmap")
    p = _Parser()
    root = _segmap(values[0], p.segment_fields)
    types, columns = [], []
    for raw in values[1:]:
        t, col = p.node(raw)
        types.append(t)
        columns.append(col)
    if len(set(types)) != len(types):
        raise FormatError("VNG metadata describes a type twice")
    data_size = trailer.data_size
    for segmap in (root, *(s for c in columns for s in iter_segmaps(c))):
        for seg in segmap:
            if seg.offset + seg.length > data_size:
                raise FormatError(f"VNG segment at {seg.offset}+{seg.length} runs past the "
                                  f"{data_size}-byte data section")
    info = WriterInfo(tuple(sorted(p.segment_fields)), tuple(sorted(p.primitive_fields)),
                      p.has_const)
    writer = f"Zed {info.versions} (VNG version {VERSION})"
    return FileMeta(trailer, tuple(types), root, tuple(columns), object_size, writer), info
