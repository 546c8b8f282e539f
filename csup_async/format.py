"""Finding the trailer and parsing the reassembly section: bytes in, FileMeta out.

No I/O here, so the same code serves local files, object stores and Spark
drivers, and can be fuzzed directly.
"""

from __future__ import annotations

from .bsup import (
    FRAME_TYPES,
    FRAME_VALUES,
    TypeContext,
    decode_value,
    iter_raw_values,
    read_frames,
    read_uvarint,
)
from .colvalue import parse_column, parse_segmap
from .errors import CsupError, FormatError, LimitError, TruncatedError
from .meta import FileMeta, Trailer, iter_segmaps
from .types import RecordType

MAX_TRAILER = 4096
MAGIC = "super columnar"
SUPPORTED_VERSIONS = (1,)
DEFAULT_MAX_METADATA = 256 << 20


def _try_trailer(buf: memoryview) -> dict | None:
    """Decode ``buf`` as exactly one BSUP stream holding one record, or None."""
    ctx = TypeContext()
    values = []
    try:
        frames = list(read_frames(buf, 0, max_frame=MAX_TRAILER * 4))
        if not frames or frames[-1][0] != -1 or frames[-1][2] != len(buf):
            return None
        if sum(1 for k, _, _ in frames if k == -1) != 1:
            return None
        for kind, payload, _ in frames:
            if kind == FRAME_TYPES:
                ctx.parse_typedefs(payload)
            elif kind == FRAME_VALUES:
                p = 0
                while p < len(payload):
                    tid, p = read_uvarint(payload, p)
                    t = ctx.lookup(tid)
                    tag, p = read_uvarint(payload, p)
                    body = None if tag == 0 else payload[p : p + tag - 1]
                    if tag and p + tag - 1 > len(payload):
                        return None
                    p += max(tag - 1, 0)
                    values.append((t, body))
    except CsupError:
        return None
    if len(values) != 1 or not isinstance(values[0][0], RecordType) or values[0][1] is None:
        return None
    t, body = values[0]
    names = {f.name for f in t.fields}
    if not {"magic", "type", "version", "sections"} <= names:
        return None
    try:
        v = decode_value(t, body)
    except CsupError:
        return None
    return v if isinstance(v, dict) else None


def find_trailer(tail: bytes | memoryview, object_size: int) -> Trailer:
    """Find and check the trailer in the last bytes of an object.

    ``tail`` is the object's last ``len(tail)`` bytes.  Scans backward for a
    start (object start, or just after a ``0xff``) of a valid one-record BSUP
    stream that ends exactly at the end of the object.
    """
    mv = memoryview(tail)
    n = len(mv)
    if object_size < n:
        raise FormatError(f"tail of {n} bytes is longer than the object ({object_size})")
    if n == 0:
        raise TruncatedError("object is empty: no CSUP trailer")
    if mv[n - 1] != 0xFF:
        raise FormatError("no CSUP trailer: the object does not end a BSUP stream "
                          "(wrong format, or truncated)")
    lowest = max(0, n - MAX_TRAILER)
    for start in range(n - 2, lowest - 1, -1):
        at_object_start = start == 0 and object_size == n
        if not at_object_start and (start == 0 or mv[start - 1] != 0xFF):
            continue
        v = _try_trailer(mv[start:])
        if v is not None:
            return _check_trailer(v, n - start, object_size)
    raise FormatError("no CSUP trailer found in the last "
                      f"{min(n, MAX_TRAILER)} bytes (wrong format, truncated or corrupt)")


def _check_trailer(v: dict, size: int, object_size: int) -> Trailer:
    if v.get("magic") != MAGIC:
        raise FormatError(f"wrong magic {v.get('magic')!r} (not a CSUP file)")
    if v.get("type") != "csup":
        raise FormatError(f"trailer type {v.get('type')!r} is not 'csup'")
    version = v.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise FormatError(f"unsupported CSUP version {version!r}")
    sections = v.get("sections")
    if (not isinstance(sections, list) or not 1 <= len(sections) <= 16
            or not all(isinstance(s, int) and s >= 0 for s in sections)):
        raise FormatError(f"trailer sections {sections!r} are not non-negative sizes")
    if sum(sections) + size != object_size:
        raise FormatError(f"sections {sections} plus the {size}-byte trailer do not add up "
                          f"to the object size {object_size} (truncated or corrupt)")
    meta = v.get("meta") or {}
    skew = meta.get("skew_thresh", 0) if isinstance(meta, dict) else 0
    seg = meta.get("segment_thresh", 0) if isinstance(meta, dict) else 0
    if not isinstance(skew, int) or not isinstance(seg, int) or skew < 0 or seg < 0:
        raise FormatError("trailer thresholds are not non-negative integers")
    return Trailer(MAGIC, "csup", version, tuple(sections), skew, seg, size)


def parse_reassembly(buf: bytes | memoryview, trailer: Trailer, object_size: int, *,
                     max_metadata: int = DEFAULT_MAX_METADATA) -> FileMeta:
    """Parse the reassembly section into the typed metadata tree."""
    if trailer.reassembly_size > max_metadata:
        raise LimitError(f"reassembly section of {trailer.reassembly_size} bytes exceeds "
                         f"max_metadata={max_metadata}")
    if len(buf) != trailer.reassembly_size:
        raise TruncatedError(f"reassembly section is {len(buf)} bytes, the trailer says "
                             f"{trailer.reassembly_size}")
    values = list(iter_raw_values(buf, end_at_eos=False))
    if len(values) % 2 != 1:
        raise FormatError(f"reassembly section holds {len(values)} values, not 2*N+1")
    n = len(values) // 2
    super_types = []
    for t, body in values[:n]:
        if body is not None:
            raise FormatError("a super type entry of the reassembly section is not null")
        super_types.append(t)
    if len(set(super_types)) != n:
        raise FormatError("the reassembly section lists a super type twice")
    super_column = parse_segmap(*values[n], "super column")
    columns = tuple(parse_column(st, vt, vb) for st, (vt, vb) in zip(
        super_types, values[n + 1 :], strict=True))
    data_size = trailer.data_size
    for segmap in (super_column, *(s for c in columns for s in iter_segmaps(c))):
        for seg in segmap:
            if seg.offset + seg.length > data_size:
                raise FormatError(f"segment at {seg.offset}+{seg.length} runs past the "
                                  f"{data_size}-byte data section")
    if n and not super_column and any(c is not None for c in columns):
        raise FormatError("the super column is empty but columns hold data")
    return FileMeta(trailer, tuple(super_types), super_column, columns, object_size)
