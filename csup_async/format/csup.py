"""Finding the trailer and parsing the reassembly section: bytes in, FileMeta out.

No I/O here, so the same code serves local files, object stores and Spark
drivers, and can be fuzzed directly.
"""

from __future__ import annotations

from ..model.errors import CsupError, FormatError, LimitError, TruncatedError
from ..model.types import NamedType, RecordType, Type
from .bsup import (
    FIRST_TYPEDEF_ID,
    FRAME_TYPES,
    FRAME_VALUES,
    TypeContext,
    decode_value,
    read_frames,
    read_uvarint,
)
from .colvalue import parse_column, parse_segmap
from .meta import FileMeta, Trailer, iter_segmaps
from .vng import metadata as vng

MAX_TRAILER = 4096
MAGIC = "super columnar"
SUPPORTED_VERSIONS = (1,)
#: The parser's own bound, for metadata this process wrote or accepted before (the
#: writer's check of its output, the disk cache): an object read from a store is held
#: to the reader's ``max_metadata`` (``csup_async.scan.options.DEFAULT_MAX_METADATA``).
TRUSTED_MAX_METADATA = 256 << 20


# Decompressed frame bytes the whole backward search may decode: the real
# trailer (~150 bytes) is met first, so only a hostile tail spends this.
MAX_SEARCH_WORK = 256 << 10


class _Chains:
    """Which offsets of the tail start a chain of frames ending with the stream's one
    end-of-stream byte exactly at the end of the object.  Memoised: each frame header
    is read once however many candidate starts share the chain (linear, not quadratic)."""

    def __init__(self, mv: memoryview) -> None:
        self.mv = mv
        self.ok: dict[int, bool] = {}

    def starts_chain(self, start: int) -> bool:
        mv, end = self.mv, len(self.mv)
        path: list[int] = []
        pos = start
        result = False
        while True:
            known = self.ok.get(pos)
            if known is not None:
                result = known
                break
            path.append(pos)
            if pos >= end:
                break
            hdr = mv[pos]
            if hdr == 0xFF:
                result = pos + 1 == end
                break
            if hdr & 0x80 or (hdr >> 4) & 3 == 3:
                break
            try:
                rest, p = read_uvarint(mv, pos + 1, end)
            except CsupError:
                break
            length = (rest << 4) | (hdr & 0x0F)
            if length > MAX_TRAILER * 4 or p + length > end:
                break
            pos = p + length
        for q in path:
            self.ok[q] = result
        return result


def _try_trailer(buf: memoryview, budget: list[int]) -> dict | None:
    """Decode ``buf`` as exactly one BSUP stream holding one record, or None.

    ``budget`` is what is left of MAX_SEARCH_WORK: each frame's (decompressed)
    payload is charged to it, and the search fails once it is spent.
    """
    ctx = TypeContext()
    values = []
    try:
        for kind, payload, _ in read_frames(buf, 0, max_frame=MAX_TRAILER * 4,
                                            max_total=MAX_TRAILER * 4):
            if kind == -1:
                break
            assert payload is not None
            budget[0] -= len(payload)
            if budget[0] < 0:
                raise LimitError("the backward search for the trailer decoded more than "
                                 f"{MAX_SEARCH_WORK} bytes of candidates (corrupt tail)")
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
                    if len(values) > 1:
                        return None
    except LimitError as e:
        if "backward search" in e.message:
            raise
        return None
    except CsupError:
        return None
    if len(values) != 1 or values[0][1] is None:
        return None
    t, body = values[0]
    rt = t.inner if isinstance(t, NamedType) else t  # Zed's is the named zngio.Trailer
    if not isinstance(rt, RecordType):
        return None
    names = {f.name for f in rt.fields}
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
    stream that ends exactly at the end of the object.  Only starts whose frame
    headers chain to the end are decoded, within a work budget, so a hostile
    tail costs linear time.
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
    chains = _Chains(mv)
    budget = [MAX_SEARCH_WORK]
    for start in range(n - 2, lowest - 1, -1):
        at_object_start = start == 0 and object_size == n
        if not at_object_start and (start == 0 or mv[start - 1] != 0xFF):
            continue
        if not chains.starts_chain(start):
            continue
        v = _try_trailer(mv[start:], budget)
        if v is not None:
            return _check_trailer(v, n - start, object_size)
    raise FormatError("no CSUP trailer found in the last "
                      f"{min(n, MAX_TRAILER)} bytes (wrong format, truncated or corrupt)")


def _check_trailer(v: dict, size: int, object_size: int) -> Trailer:
    if v.get("magic") == vng.MAGIC:
        if v.get("type") != vng.TYPE or v.get("version") != vng.VERSION:
            raise FormatError(f"ZNG trailer of type {v.get('type')!r} version "
                              f"{v.get('version')!r} is not a VNG version 3 object")
    elif v.get("magic") != MAGIC:
        raise FormatError(f"wrong magic {v.get('magic')!r} (not a CSUP file)")
    elif v.get("type") != "csup":
        raise FormatError(f"trailer type {v.get('type')!r} is not 'csup'")
    version = v.get("version")
    if v.get("magic") == MAGIC and version not in SUPPORTED_VERSIONS:
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
    return Trailer(v["magic"], v["type"], version, tuple(sections), skew, seg, size)


def _reassembly_values(buf: bytes | memoryview, max_metadata: int
                       ) -> list[tuple[Type, memoryview | None]]:
    """The (type, body) values of a reassembly section, refusing more than it can hold.

    Its 2N+1 values describe N distinct super types, each of which the stream
    must define, so a section holding more values than twice the types it
    defines (plus one) is corrupt: stopping there bounds the work and memory a
    section of a few compressed bytes can ask for.  Compressed frames count
    their decompressed bytes against ``max_metadata`` too.
    """
    ctx = TypeContext()
    defined = 0  # types available across the section's streams
    values: list[tuple[Type, memoryview | None]] = []
    for kind, payload, _ in read_frames(buf, 0, max_total=max_metadata):
        if kind == -1:
            defined += len(ctx.types) - FIRST_TYPEDEF_ID
            ctx = TypeContext()
            continue
        assert payload is not None
        if kind == FRAME_TYPES:
            ctx.parse_typedefs(payload)
        elif kind == FRAME_VALUES:
            p, end = 0, len(payload)
            while p < end:
                tid, p = read_uvarint(payload, p, end)
                t = ctx.lookup(tid)
                tag, p = read_uvarint(payload, p, end)
                body = None
                if tag:
                    if p + tag - 1 > end:
                        raise TruncatedError(f"value of {tag - 1} bytes runs past its frame")
                    body = payload[p : p + tag - 1]
                    p += tag - 1
                values.append((t, body))
                if len(values) > 2 * (defined + len(ctx.types)) + 1:
                    raise FormatError(f"the reassembly section holds more values than its "
                                      f"{defined + len(ctx.types)} types can describe")
    return values


def parse_reassembly(buf: bytes | memoryview, trailer: Trailer, object_size: int, *,
                     max_metadata: int = TRUSTED_MAX_METADATA) -> FileMeta:
    """Parse the reassembly section into the typed metadata tree."""
    if trailer.reassembly_size > max_metadata:
        raise LimitError(f"reassembly section of {trailer.reassembly_size} bytes exceeds "
                         f"max_metadata={max_metadata}")
    if len(buf) != trailer.reassembly_size:
        raise TruncatedError(f"reassembly section is {len(buf)} bytes, the trailer says "
                             f"{trailer.reassembly_size}")
    if trailer.type == vng.TYPE:
        return vng.parse_metadata(buf, trailer, object_size)[0]
    values = _reassembly_values(buf, max_metadata)
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
