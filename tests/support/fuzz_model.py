"""A CSUP file as its decoded reassembly, for structure-aware mutation.

``decode`` turns a file into a :class:`Model`: the super types, and the column
tree with every segmap replaced by the values its segments hold (``Seg``: the
tag-encoded bodies, and whether the segment was LZ4).  A mutation edits that
model (one value too many in a stream, a presence run one too long, a union
tag out of range...) and ``encode`` lays the segments out again with exact
offsets, lengths and decompressed sizes, a reassembly section encoding the
tree and a valid trailer, so the change reaches the readers' semantic checks
rather than stopping at a length or checksum.  ``layout`` gives the laid-out
tree for the mutations that lie about segments themselves (shared, reordered,
repeated, wrong sizes, wrong compression flag).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import lz4.block

from csup_async.format import bsup
from csup_async.format.colvalue import SEGMAP_TYPE, TRAILER_TYPE, column_value, segmap_value
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    ArrayColumn,
    FieldColumn,
    FileMeta,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segment,
    UnionColumn,
)
from csup_async.model.types import (
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
)


@dataclass(frozen=True)
class Seg:
    """One segment as the values it holds (``raw`` overrides them byte for byte)."""

    values: tuple[bytes | None, ...]
    lz4: bool = False
    raw: bytes | None = None

    def stored(self) -> bytes:
        if self.raw is not None:
            return self.raw
        out = bytearray()
        for v in self.values:
            bsup.append_tagged(out, v)
        return bytes(out)


Stream = tuple[Seg, ...]


@dataclass(frozen=True)
class Model:
    types: tuple[Type, ...]
    super_column: Stream
    columns: tuple[Any, ...]  # the meta column classes, holding Streams for segmaps

    def encode(self) -> bytes:
        return layout(self).encode()


@dataclass(frozen=True)
class Laid:
    """A model laid out: the data section and the metadata tree pointing into it."""

    body: bytes
    types: tuple[Type, ...]
    super_column: tuple[Segment, ...]
    columns: tuple[Any, ...]

    def encode(self) -> bytes:
        return build(self.body, self.types, self.super_column, self.columns)


def build(data: bytes, types: tuple[Type, ...], super_column: tuple[Segment, ...],
          columns: tuple[Any, ...]) -> bytes:
    """A CSUP file: ``data``, a reassembly section encoding exactly this metadata (however
    wrong, duplicate field names included) and a valid trailer."""
    out = bytearray(data)
    enc = bsup.StreamEncoder(out)
    for t in types:
        enc.write_body(t, None)
    enc.write(SEGMAP_TYPE, segmap_value(tuple(super_column)))
    for c in columns:
        enc.write_body(*column_body(c))
    enc.end_stream()
    trailer = {"magic": "super columnar", "type": "csup", "version": 1,
               "sections": [len(data), len(out) - len(data)],
               "meta": {"skew_thresh": 1 << 26, "segment_thresh": 1 << 22}}
    tenc = bsup.StreamEncoder(out, compress=False)
    tenc.write(TRAILER_TYPE, trailer)
    tenc.end_stream()
    return bytes(out)


def column_body(col: Any) -> tuple[Type, bytes | None]:
    """A column's BSUP type and body, built field by field for records (whose fields
    the plain mapping would merge when two share a name)."""
    if not isinstance(col, RecordColumn):
        t, v = column_value(col)
        return t, bsup.encode_value(t, v)
    fields, body = [], bytearray()
    for f in col.fields:
        ct, cb = column_body(f.column)
        ft = RecordType((Field("column", ct), Field("presence", SEGMAP_TYPE)))
        fb = bytearray()
        bsup.append_tagged(fb, cb)
        bsup.append_tagged(fb, bsup.encode_value(SEGMAP_TYPE, segmap_value(f.presence)))
        fields.append(Field(f.name, ft))
        bsup.append_tagged(body, bytes(fb))
    return RecordType(tuple(fields)), bytes(body)


def file_meta(data: bytes) -> FileMeta:
    t = find_trailer(data[-4096:], len(data))
    return parse_reassembly(data[t.data_size : t.data_size + t.reassembly_size], t, len(data))


# ------------------------------------------------------------- tree walk ---
def map_streams(col: Any, fn: Callable[[Any], Any]) -> Any:
    """A copy of the column tree with every segmap (or Stream) replaced by fn(it)."""
    if col is None:
        return None
    if isinstance(col, PrimitiveColumn):
        return PrimitiveColumn(fn(col.segmap))
    if isinstance(col, RecordColumn):
        return RecordColumn(tuple(FieldColumn(f.name, map_streams(f.column, fn), fn(f.presence))
                                  for f in col.fields))
    if isinstance(col, ArrayColumn):
        return ArrayColumn(map_streams(col.values, fn), fn(col.lengths))
    if isinstance(col, MapColumn):
        return MapColumn(map_streams(col.keys, fn), map_streams(col.values, fn), fn(col.lengths))
    if isinstance(col, UnionColumn):
        return UnionColumn(tuple(map_streams(c, fn) for c in col.columns), fn(col.tags))
    if isinstance(col, NullsColumn):
        return NullsColumn(map_streams(col.values, fn), fn(col.presence))
    raise TypeError(col)


@dataclass(frozen=True)
class StreamRef:
    """Where a stream sits: ``path`` (for tests.test_fuzz._set, from the columns tuple;
    ``()`` is the super column), what it holds (``values``, ``presence``, ``lengths``,
    ``tags``, ``super``) and, for values, their type (for tags, the union type);
    ``top`` is the top-level field it belongs to ("" for a whole non-record value)."""

    path: tuple[Any, ...]
    kind: str
    type: Type | None
    top: str

    @property
    def name(self) -> str:
        return "super" if not self.path else "/".join(map(str, self.path))


def streams(model: Model | Laid) -> Iterator[StreamRef]:
    """Every stream of the model with its kind and type, the super column first."""
    yield StreamRef((), "super", None, "*")
    for ci, (t, col) in enumerate(zip(model.types, model.columns, strict=True)):
        yield from _walk(t, col, (ci,), None)


def _walk(t: Type, col: Any, path: tuple[Any, ...], top: str | None) -> Iterator[StreamRef]:
    here = top if top is not None else ""
    if col is None:
        return
    if isinstance(col, NullsColumn):
        yield StreamRef((*path, "presence"), "presence", None, here)
        yield from _walk(t, col.values, (*path, "values"), top)
        return
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(col, PrimitiveColumn):
        yield StreamRef((*path, "segmap"), "values", t, here)
    elif isinstance(col, RecordColumn) and isinstance(t, RecordType):
        for i, (f, fc) in enumerate(zip(t.fields, col.fields, strict=False)):
            name = f.name if top is None else top
            yield StreamRef((*path, "fields", i, "presence"), "presence", None, name)
            yield from _walk(f.type, fc.column, (*path, "fields", i, "column"), name)
    elif isinstance(col, ArrayColumn) and isinstance(t, (ArrayType, SetType)):
        yield StreamRef((*path, "lengths"), "lengths", None, here)
        yield from _walk(t.elem, col.values, (*path, "values"), top)
    elif isinstance(col, MapColumn) and isinstance(t, MapType):
        yield StreamRef((*path, "lengths"), "lengths", None, here)
        yield from _walk(t.key, col.keys, (*path, "keys"), top)
        yield from _walk(t.value, col.values, (*path, "values"), top)
    elif isinstance(col, UnionColumn) and isinstance(t, UnionType):
        yield StreamRef((*path, "tags"), "tags", t, here)
        for i, (m, c) in enumerate(zip(t.types, col.columns, strict=False)):
            yield from _walk(m, c, (*path, "columns", i), top)


def get(model: Model | Laid, ref: StreamRef) -> Any:
    if not ref.path:
        return model.super_column
    node: Any = model.columns
    for key in ref.path:
        node = node[key] if isinstance(key, int) else getattr(node, key)
    return node


def put(model: Any, ref: StreamRef, value: Any) -> Any:
    """A copy of the model (or Laid) with the stream at ``ref`` replaced."""
    if not ref.path:
        return replace(model, super_column=value)
    return replace(model, columns=_set(model.columns, ref.path, value))


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        items = list(obj)
        items[key] = _set(items[key], rest, value)
        return tuple(items)
    return replace(obj, **{key: _set(getattr(obj, key), rest, value)})


# ------------------------------------------------------- decode / encode ---
def decode(data: bytes) -> Model:
    meta = file_meta(data)

    def stream(segmap: tuple[Segment, ...]) -> Stream:
        out = []
        for s in segmap:
            raw = data[s.offset : s.end]
            if s.compression == COMPRESSION_LZ4:
                raw = lz4.block.decompress(raw, uncompressed_size=s.mem_length)
            out.append(Seg(tuple(None if v is None else bytes(v)
                                 for v in bsup.split_tagged(raw)),
                           s.compression == COMPRESSION_LZ4))
        return tuple(out)

    return Model(meta.super_types, stream(meta.super_column),
                 tuple(map_streams(c, stream) for c in meta.columns))


def layout(model: Model, shuffle: random.Random | None = None) -> Laid:
    """Every segment written back to back, segmaps exact: in tree order, or (``shuffle``)
    in a random order of the data section (still each segment whole)."""
    blobs: list[tuple[bytes, int, int]] = []  # (stored bytes, mem_length, compression)

    def collect(stream: Stream) -> tuple[int, ...]:
        out = []
        for seg in stream:
            raw = seg.stored()
            if not raw:
                continue  # a segment whose values were all removed
            stored, fmt = raw, COMPRESSION_NONE
            if seg.lz4:
                stored, fmt = lz4.block.compress(raw, store_size=False), COMPRESSION_LZ4
            out.append(len(blobs))
            blobs.append((stored, len(raw), fmt))
        return tuple(out)

    sc = collect(model.super_column)
    cols = tuple(map_streams(c, collect) for c in model.columns)
    order = list(range(len(blobs)))
    if shuffle is not None:
        shuffle.shuffle(order)
    body, at = bytearray(), {}
    for i in order:
        stored, mem, fmt = blobs[i]
        at[i] = Segment(len(body), len(stored), mem, fmt)
        body.extend(stored)
    if not body:
        body.append(0)  # a data section is never empty

    def place(ids: tuple[int, ...]) -> tuple[Segment, ...]:
        return tuple(at[i] for i in ids)

    return Laid(bytes(body), model.types, place(sc),
                tuple(map_streams(c, place) for c in cols))


def encode(model: Model) -> bytes:
    return layout(model).encode()


# -------------------------------------------------------- stream values ---
def values(stream: Stream) -> list[bytes | None]:
    return [v for seg in stream for v in seg.values]


def with_values(stream: Stream, vals: list[bytes | None]) -> Stream:
    """The stream holding ``vals``, cut at the same segment sizes (the last takes the rest)."""
    if not stream:
        return (Seg(tuple(vals)),) if vals else ()
    out, pos = [], 0
    for i, seg in enumerate(stream):
        n = len(seg.values) if i < len(stream) - 1 else max(len(vals) - pos, 0)
        out.append(Seg(tuple(vals[pos : pos + n]), seg.lz4))
        pos += n
    return tuple(out)


def ints(stream: Stream) -> list[int | None]:
    return [None if v is None else bsup.decode_int(v) for v in values(stream)]


def with_ints(stream: Stream, vals: list[int | None]) -> Stream:
    return with_values(stream, [None if v is None else bsup.encode_int(v) for v in vals])


def is_int_type(t: Type | None) -> bool:
    return isinstance(t, PrimitiveType) and t.name.startswith("int")


def primitive_name(t: Type | None) -> str:
    if isinstance(t, EnumType):
        return "enum"
    return t.name if isinstance(t, PrimitiveType) else "?"
