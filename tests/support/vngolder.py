"""Re-marshal a real VNG file as an older Zed release's writer would have laid it out.

No binary of Zed v1.4 or v1.9-v1.11 is at hand, but their VNG metadata differs
from v1.7's and v1.12's only in the Go structs (read from the tags' sources under
``vng/vector/``): v1.4's ``Segment`` is ``{Offset, Length}`` (no compression, so
every segment is stored as is), v1.9-v1.11's lacks v1.12's ``Count``.  This
rewrites a real file into that shape, values untouched: the data section is
rebuilt with every segment decompressed (v1.4) and the metadata values are
re-encoded with the older ``Segment`` type.  The result is a construction, not
a file those releases wrote; it tests that the reader maps their structs.
"""

from __future__ import annotations

from typing import Any

from csup_async.decode import decompress_segment
from csup_async.format.bsup import encode_stream, read_values
from csup_async.format.csup import find_trailer
from csup_async.format.meta import Segment
from csup_async.model.types import (
    ArrayType,
    Field,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from csup_async.model.values import UnionValue

SEGMENT_FIELDS = {"v1.4": ("Offset", "Length"),
                  "v1.9": ("Offset", "Length", "MemLength", "CompressionFormat")}


def _retype(t: Type, keep: tuple[str, ...]) -> Type:
    if isinstance(t, NamedType):
        if t.name == "Segment" and isinstance(t.inner, RecordType):
            return NamedType("Segment", RecordType(tuple(f for f in t.inner.fields
                                                         if f.name in keep)))
        return NamedType(t.name, _retype(t.inner, keep))
    if isinstance(t, RecordType):
        return RecordType(tuple(Field(f.name, _retype(f.type, keep)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_retype(t.elem, keep))
    if isinstance(t, SetType):
        return SetType(_retype(t.elem, keep))
    if isinstance(t, MapType):
        return MapType(_retype(t.key, keep), _retype(t.value, keep))
    if isinstance(t, UnionType):
        return UnionType(tuple(_retype(m, keep) for m in t.types))
    return t


def _revalue(t: Type, v: Any, keep: tuple[str, ...], moved: dict[int, tuple[int, int]]) -> Any:
    if v is None:
        return None
    if isinstance(v, UnionValue):
        return UnionValue(v.index, _retype(v.type, keep), _revalue(v.type, v.value, keep, moved))
    if isinstance(t, NamedType):
        if t.name == "Segment":
            off, length = moved.get(v["Offset"], (v["Offset"], v["Length"]))
            seg = {**v, "Offset": off, "Length": length}
            if "MemLength" in seg and moved:
                seg["CompressionFormat"] = 0
            return {k: seg[k] for k in keep}
        return _revalue(t.inner, v, keep, moved)
    if isinstance(t, RecordType):
        return {f.name: _revalue(f.type, v[f.name], keep, moved) for f in t.fields}
    if isinstance(t, (ArrayType, SetType)):
        return [_revalue(t.elem, x, keep, moved) for x in v]
    return v


def _segments(t: Type, v: Any, out: list[Segment]) -> None:
    if v is None:
        return
    if isinstance(v, UnionValue):
        _segments(v.type, v.value, out)
    elif isinstance(t, NamedType):
        if t.name == "Segment":
            out.append(Segment(v["Offset"], v["Length"], v.get("MemLength", v["Length"]),
                               v.get("CompressionFormat", 0)))
        else:
            _segments(t.inner, v, out)
    elif isinstance(t, RecordType):
        for f in t.fields:
            _segments(f.type, v[f.name], out)
    elif isinstance(t, (ArrayType, SetType)):
        for x in v:
            _segments(t.elem, x, out)


def as_release(data: bytes, release: str) -> bytes:
    """``data`` (a real VNG file) laid out as Zed ``release`` ("v1.4" or "v1.9") writes."""
    keep = SEGMENT_FIELDS[release]
    trailer = find_trailer(data[-4096:], len(data))
    start, end = trailer.data_size, trailer.data_size + trailer.reassembly_size
    values = read_values(data[start:end])
    moved: dict[int, tuple[int, int]] = {}
    body = data[:start]
    if release == "v1.4":  # no compression then: every segment stored as is
        segs: list[Segment] = []
        for v in values:
            _segments(v.type, v.value, segs)
        out = bytearray()
        for seg in sorted(set(segs), key=lambda s: s.offset):
            raw = decompress_segment(data[seg.offset:seg.end], seg)
            moved[seg.offset] = (len(out), len(raw))
            out += raw
        body = bytes(out)
    meta = encode_stream([(_retype(v.type, keep), _revalue(v.type, v.value, keep, moved))
                          for v in values])
    (tv,) = read_values(data[end:])
    tval = dict(tv.value, sections=[len(body), len(meta)])
    return body + meta + encode_stream([(tv.type, tval)])
