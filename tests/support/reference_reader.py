"""A small, obviously correct CSUP reader for tests: one stream at a time, value by value.

It reads the whole object, concatenates each stream's segments, walks the
tagged values with ``bsup`` and rebuilds every row in the typed form
(``read_values``' form: unions as UnionValue, maps as lists of pairs, enums
as symbols).  Slow and simple on purpose: the pipeline is tested against it,
not against a second assembler.  Any count that does not add up is a
``FormatError``, as the format says it must be.
"""

from __future__ import annotations

from typing import Any

from csup_async import decode as D
from csup_async.format import bsup
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import (
    ArrayColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    UnionColumn,
)
from csup_async.model.errors import FormatError
from csup_async.model.types import (
    NULL,
    ArrayType,
    EnumType,
    ErrorType,
    MapType,
    NamedType,
    PrimitiveType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from csup_async.model.values import UnionValue, Value


def reference_values(data: bytes) -> list[Value]:
    """Every row of a CSUP object with its super type."""
    trailer = find_trailer(data, len(data))
    start = trailer.data_size
    meta = parse_reassembly(data[start: start + trailer.reassembly_size], trailer, len(data))

    def stream(segmap: Any) -> bytes:
        return b"".join(bytes(D.decompress_segment(data[s.offset: s.end], s)) for s in segmap)

    def bodies(segmap: Any) -> list[Any]:
        b = stream(segmap)
        return list(bsup.iter_tagged(b, 0, len(b)))

    def ints(segmap: Any) -> list[int]:
        out = []
        for body in bodies(segmap):
            if body is None:
                raise FormatError("null in an int32 stream")
            out.append(bsup.decode_int(body, 64))
        return out

    def mask(segmap: Any, n: int) -> list[bool]:
        out: list[bool] = []
        for i, run in enumerate(ints(segmap)):
            if run < 0:
                raise FormatError("negative run")
            out += [i % 2 == 0] * run
        if len(out) != n:
            raise FormatError(f"runs sum to {len(out)}, not {n}")
        return out

    def place(valid: list[bool], vals: list[Any]) -> list[Any]:
        it = iter(vals)
        return [next(it) if v else None for v in valid]

    def values(t: Type, col: Any, n: int) -> list[Any]:
        if col is None:
            return [None] * n
        if isinstance(col, NullsColumn):
            valid = mask(col.presence, n) if col.presence else [True] * n
            return place(valid, values(t, col.values, sum(valid)))
        while isinstance(t, (NamedType, ErrorType)):
            t = t.inner
        if isinstance(t, (PrimitiveType, EnumType)):
            assert isinstance(col, PrimitiveColumn)
            bs = bodies(col.segmap)
            if len(bs) != n:
                raise FormatError(f"{len(bs)} values for {n}")
            if isinstance(t, EnumType):
                return [None if b is None else t.symbols[bsup.decode_uint(b)] for b in bs]
            if t == NULL:
                if any(b is not None for b in bs):
                    raise FormatError("non-null null")
                return bs
            return [None if b is None else bsup.decode_primitive(t, b) for b in bs]
        if isinstance(t, RecordType):
            assert isinstance(col, RecordColumn)
            cols = []
            for f, fc in zip(t.fields, col.fields, strict=True):
                if fc.column is None:
                    cols.append([None] * n)
                    continue
                valid = mask(fc.presence, n) if fc.presence else [True] * n
                cols.append(place(valid, values(f.type, fc.column, sum(valid))))
            return [{f.name: c[i] for f, c in zip(t.fields, cols, strict=True)}
                    for i in range(n)]
        if isinstance(t, (ArrayType, SetType, MapType)):
            assert isinstance(col, (ArrayColumn, MapColumn))
            lengths = ints(col.lengths) if n else []
            if len(lengths) != n:
                raise FormatError("lengths count")
            total = sum(lengths)
            if isinstance(t, MapType):
                assert isinstance(col, MapColumn)
                items = list(zip(values(t.key, col.keys, total),
                                 values(t.value, col.values, total), strict=True))
            else:
                assert isinstance(col, ArrayColumn)
                items = values(t.elem, col.values, total)
            out, pos = [], 0
            for k in lengths:
                out.append(items[pos: pos + k])
                pos += k
            return out
        if isinstance(t, UnionType):
            assert isinstance(col, UnionColumn)
            tags = ints(col.tags) if n else []
            if len(tags) != n:
                raise FormatError("tags count")
            members = [iter(values(m, c, tags.count(i)))
                       for i, (m, c) in enumerate(zip(t.types, col.columns, strict=True))]
            return [UnionValue(k, t.types[k], next(members[k])) for k in tags]
        raise FormatError(f"no reference for {t}")

    types = meta.super_types
    if len(types) == 1:
        ids = [0] * (meta.row_count or 0)
    else:
        ids = ints(meta.super_column)
    per_type = [iter(values(t, c, ids.count(i)))
                for i, (t, c) in enumerate(zip(types, meta.columns, strict=True))]
    return [Value(types[i], next(per_type[i])) for i in ids]
