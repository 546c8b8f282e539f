"""Segment statistics and checksums, as the writer records them in the segmap.

docs/format.md, "Segment statistics and checksums": every segmap element of a
primitive, presence, lengths or tags column may carry ``count``, ``nulls``,
``min``, ``max``, ``nan`` and ``crc32``.  Readers that do not know a field
ignore it, so a file with them stays valid CSUP.  They are computed here from
a segment's bytes when the writer cuts it, with the project's own column
decoders, so the statistics describe exactly what a reader will decode.

Bounds are never tighter than the truth: strings and bytes longer than
:data:`MAX_BOUND_BYTES` get a cut ``min`` (a prefix is still a lower bound) and
no ``max``; NaN is left out of float bounds and flagged with ``nan``; types
with no numpy form (ip, net, type, 128/256-bit ints, enums) get no bounds.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..decode.columns import decode_primitive
from ..decode.scan import scan_tags
from ..model.errors import CsupError
from ..model.types import (
    BOOL,
    INT32,
    PRIMITIVE_BY_NAME,
    UINT32,
    ArrayType,
    Field,
    PrimitiveType,
    RecordType,
    Type,
)

__all__ = ["segment_stats", "segmap_type", "MAX_BOUND_BYTES", "INT32"]

#: Longest string or bytes bound written (longer ones are cut, see above).
MAX_BOUND_BYTES = 64
_BOUNDED = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "bool", "time", "duration", "string", "bytes"}


def bound_type(t: Type) -> Type:
    """The type of ``min``/``max`` for a column of ``t`` (itself where bounds exist)."""
    return t if isinstance(t, PrimitiveType) else PRIMITIVE_BY_NAME["null"]


def segmap_type(base: RecordType, t: Type) -> ArrayType:
    """The segmap type of a column of ``t``: the seed's segment fields, then ours."""
    bt = bound_type(t)
    return ArrayType(RecordType((*base.fields, Field("count", UINT32), Field("nulls", UINT32),
                                 Field("min", bt), Field("max", bt), Field("nan", BOOL),
                                 Field("crc32", UINT32))))


def segment_stats(t: Type, raw: bytes, stored: bytes, ends: np.ndarray) -> dict[str, Any]:
    """The statistics of one segment: ``raw`` its tag-encoded values, ``stored`` the
    bytes as they lie in the file, ``ends`` where each value ends in ``raw``."""
    count = int(ends.size)
    out: dict[str, Any] = {"count": count, "nulls": None, "min": None, "max": None,
                           "nan": False, "crc32": zlib.crc32(stored)}
    name = t.name if isinstance(t, PrimitiveType) else None
    buf = np.frombuffer(raw, np.uint8)
    starts = np.zeros(count, np.int64)
    starts[1:] = ends[:-1]
    tags = buf[starts]
    if count and int(tags.max()) < 0x80:  # one-byte tags: the bodies are where they seem
        valid = tags != 0
        nulls = count - int(np.count_nonzero(valid))
        out["nulls"] = nulls
        at = starts + 1 if nulls == 0 else starts[valid] + 1
        lengths = (tags if nulls == 0 else tags[valid]).astype(np.int64) - 1
        if name in _VARINTS:
            _int_bounds(out, name, buf, at, lengths)
            return out
        width = _FIXED.get(name or "")
        if width is not None and at.size == 0:
            return out  # every value null: no bounds
        if width is not None and (lengths == width).all():
            if nulls == 0:  # a constant stride: a view
                body = buf.reshape(count, width + 1)[:, 1:]
            else:
                body = np.lib.stride_tricks.sliding_window_view(buf, width)[at]
            kind = "bool" if name == "bool" else f"<f{width}"
            values = np.ascontiguousarray(body).view(kind).reshape(-1)
            _bounds(out, name or "", values, None, None)
            return out
        if name in ("string", "bytes"):
            keep = np.ones(buf.size, bool)
            keep[starts] = False
            offsets = np.zeros(lengths.size + 1, np.int64)
            np.cumsum(lengths, out=offsets[1:])
            _bounds(out, name, buf[keep], None, offsets)
            return out
    if name in _BOUNDED:
        try:
            d = decode_primitive(t, raw, count)  # type: ignore[arg-type]
        except CsupError:
            d = None
        if d is not None:
            valid_d = d.validity
            out["nulls"] = 0 if valid_d is None else int(count - np.count_nonzero(valid_d))
            _bounds(out, name, d.values, valid_d, d.offsets)
            return out
    _, lengths_all = scan_tags(raw, count)
    out["nulls"] = int(np.count_nonzero(lengths_all < 0))
    return out


_FIXED = {"float16": 2, "float32": 4, "float64": 8, "bool": 1}
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], np.uint64)
_VARINTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "time",
            "duration"}


def _int_bounds(out: dict[str, Any], name: str, buf: np.ndarray, at: np.ndarray,
                lengths: np.ndarray) -> None:
    """Bounds of little-endian varint bodies (sign and magnitude for signed types)."""
    if at.size == 0:
        return
    padded = np.concatenate((buf, np.zeros(8, np.uint8)))
    words = np.lib.stride_tricks.sliding_window_view(padded, 8)[at]  # 8 bytes from each
    u = np.ascontiguousarray(words).view("<u8").reshape(-1) & _LOW_BYTES[lengths]
    if name.startswith("uint"):
        out["min"], out["max"] = int(u.min()), int(u.max())
        return
    neg = (u & np.uint64(1)).astype(bool)
    mag = (u >> np.uint64(1)).astype(np.int64)
    v = np.where(neg, -mag, mag)
    v[neg & (mag == 0)] = np.iinfo(np.int64).min  # "minus zero": int64's minimum
    lo, hi = v.min(), v.max()
    if name == "time":
        out["min"], out["max"] = lo.view("datetime64[ns]"), hi.view("datetime64[ns]")
    elif name == "duration":
        out["min"], out["max"] = lo.view("timedelta64[ns]"), hi.view("timedelta64[ns]")
    else:
        out["min"], out["max"] = int(lo), int(hi)


def _bounds(out: dict[str, Any], name: str, values: np.ndarray, valid: np.ndarray | None,
            offsets: np.ndarray | None) -> None:
    if offsets is not None:  # strings, bytes
        found = _varbinary_bounds(values, valid, offsets)
        if found is None:
            return
        lo, hi = found
        lo = lo[:MAX_BOUND_BYTES]
        if name == "string":
            out["min"] = lo.decode("utf-8", "ignore")  # a prefix: still a lower bound
            out["max"] = hi.decode("utf-8") if len(hi) <= MAX_BOUND_BYTES else None
        else:
            out["min"] = lo
            out["max"] = hi if len(hi) <= MAX_BOUND_BYTES else None
        return
    v = values if valid is None else values[valid]
    if name.startswith("float"):
        nan = np.isnan(v)
        if nan.any():
            out["nan"] = True
            v = v[~nan]
    if v.size == 0:
        return
    lo, hi = v.min(), v.max()
    if name == "bool":
        out["min"], out["max"] = bool(lo), bool(hi)
    elif name in ("time", "duration"):
        out["min"], out["max"] = lo, hi
    elif name.startswith("float"):
        out["min"], out["max"] = float(lo), float(hi)
    else:
        out["min"], out["max"] = int(lo), int(hi)


def _varbinary_bounds(data: np.ndarray, valid: np.ndarray | None,
                      offsets: np.ndarray) -> tuple[bytes, bytes] | None:
    """(min, max) of the non-null values, byte-wise, each cut to one byte past
    MAX_BOUND_BYTES (enough to cut it and to know it was cut)."""
    offsets = np.asarray(offsets, np.int64)
    found = native_min_max(data, valid, offsets)
    if found is not None:
        return found
    if offsets.size > _ARROW_FROM:
        found = _arrow_min_max(data, valid, offsets)
        if found is not None:
            return found
    starts = offsets[:-1] if valid is None else offsets[:-1][valid]
    lengths = np.diff(offsets) if valid is None else np.diff(offsets)[valid]
    if starts.size == 0:
        return None
    return (_extreme(data, starts, lengths, largest=False),
            _extreme(data, starts, lengths, largest=True))


def native_min_max(data: np.ndarray, valid: np.ndarray | None,
                    offsets: np.ndarray) -> tuple[bytes, bytes] | None:
    """The C loop's (min, max) (csup_async/writers/_wkernels.c), or None without it or with no
    valid value (the callers below then decide)."""
    try:
        from ._wkernels import minmax
    except ImportError:
        return None
    data = np.ascontiguousarray(data, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int64)
    mask = None if valid is None else np.ascontiguousarray(valid, np.bool_)
    found = minmax(data, offsets, mask)
    if found is None:
        return None
    lo, hi = found
    cut = MAX_BOUND_BYTES + 1
    return (data[offsets[lo]: min(offsets[lo + 1], offsets[lo] + cut)].tobytes(),
            data[offsets[hi]: min(offsets[hi + 1], offsets[hi] + cut)].tobytes())


#: Values from which Arrow's min/max kernel is worth importing pyarrow for.
_ARROW_FROM = 20_000


def _arrow_min_max(data: np.ndarray, valid: np.ndarray | None,
                   offsets: np.ndarray) -> tuple[bytes, bytes] | None:
    """pyarrow.compute.min_max over the values, zero-copy, or None without pyarrow."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    n = offsets.size - 1
    mask = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(pa.large_binary(), n, [
        mask, pa.py_buffer(np.ascontiguousarray(offsets)), pa.py_buffer(data)])
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None:
        return None
    return lo[:MAX_BOUND_BYTES + 1], hi[:MAX_BOUND_BYTES + 1]


_HIGH_BYTES = np.array([((1 << (8 * k)) - 1) << (8 * (8 - k)) for k in range(9)], np.uint64)


def _extreme(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, *,
             largest: bool) -> bytes:
    """The lexicographically smallest (largest) value, 8 bytes at a time: keep the
    candidates whose next 8 bytes (big-endian, missing bytes as zeros) are the
    extreme, then those of them with the fewest (most) bytes left; stop once one
    remains or the rest are equal."""
    padded = np.concatenate((data, np.zeros(8, np.uint8)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, 8)
    cand = np.arange(starts.size)
    j = 0
    while cand.size > 1 and j <= MAX_BOUND_BYTES:
        have = np.clip(lengths[cand] - j, 0, 8)
        at = np.minimum(starts[cand] + j, data.size)
        key = np.ascontiguousarray(windows[at]).view(">u8").reshape(-1) & _HIGH_BYTES[have]
        pick = key == (key.max() if largest else key.min())
        cand, have = cand[pick], have[pick]
        pick = have == (have.max() if largest else have.min())
        cand, have = cand[pick], have[pick]
        if have[0] < 8:
            break  # the remaining candidates all end here: they are equal
        j += 8
    i = int(cand[0])
    n = min(int(lengths[i]), MAX_BOUND_BYTES + 1)
    return data[starts[i]: starts[i] + n].tobytes()
