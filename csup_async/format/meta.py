"""The typed metadata tree of a CSUP file: trailer, super types and column tree.

This is the contract between the format code (which parses it from the
reassembly section, or builds it while writing) and the pure planner (which
only reads it).  Everything here is plain, immutable data so it can be pickled
to Spark executors and hashed for caching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from ..model.types import Type

COMPRESSION_NONE = 0
COMPRESSION_LZ4 = 1


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """A segment's statistics (docs/format.md, "Segment statistics and checksums").

    ``count`` values (in-band nulls included), ``nulls`` of them null; ``min``/``max``
    bound the non-null, non-NaN values in the column's own Python form (None when
    the writer left them out); ``nan`` whether a float NaN is among them.  Any field
    a file lacks is None: a reader must treat None as "unknown", never as zero.
    """

    count: int | None = None
    nulls: int | None = None
    min: Any = None
    max: Any = None
    nan: bool | None = None
    crc32: int | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """A byte range of the data section holding whole tag-encoded values.

    ``count`` and ``crc32`` are the segment statistics a reader checks on every
    read (so they are parsed with the segmap); the other statistics stay in
    ``extra`` as the element's type and bytes until something asks for them
    (:func:`csup_async.format.colvalue.segment_stats`), because planning a projection
    needs none of them and metadata parsing is most of a driver's CPU per file.
    """

    offset: int
    length: int
    mem_length: int
    compression: int = COMPRESSION_NONE
    count: int | None = None
    crc32: int | None = None
    extra: tuple[Any, bytes] | None = None

    @property
    def end(self) -> int:
        return self.offset + self.length


Segmap = tuple[Segment, ...]


@dataclass(frozen=True, slots=True)
class PrimitiveColumn:
    """Tag-encoded values in ``segmap``, or one of Zed VNG's two other encodings.

    ``dictionary`` (VNG v1.9+): the segments hold one selector byte per value, an
    index into these value bodies (None for a null).  ``constant`` (VNG v1.9+): no
    segments; ``count`` copies of one body.  Planning sees an ordinary primitive
    column either way (a constant one has nothing to fetch).
    """

    segmap: Segmap
    dictionary: tuple[bytes | None, ...] | None = None
    constant: Constant | None = None


@dataclass(frozen=True, slots=True)
class Constant:
    body: bytes | None
    count: int


@dataclass(frozen=True, slots=True)
class FieldColumn:
    """One record field: its column (None when every value is null) and presence runs."""

    name: str
    column: AnyColumn | None
    presence: Segmap


@dataclass(frozen=True, slots=True)
class RecordColumn:
    fields: tuple[FieldColumn, ...]

    def field(self, name: str) -> FieldColumn | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


@dataclass(frozen=True, slots=True)
class ArrayColumn:
    """Arrays and sets: int32 lengths, then the flattened elements."""

    values: AnyColumn | None
    lengths: Segmap


@dataclass(frozen=True, slots=True)
class MapColumn:
    """Maps: int32 entry counts (this project's addition), keys and values."""

    keys: AnyColumn | None
    values: AnyColumn | None
    lengths: Segmap


@dataclass(frozen=True, slots=True)
class UnionColumn:
    """Unions: int32 tags and one column per member (None when the member never occurs)."""

    columns: tuple[AnyColumn | None, ...]
    tags: Segmap


@dataclass(frozen=True, slots=True)
class NullsColumn:
    """This project's convention for null complex values no presence column covers.

    Written as the BSUP named type ``csup.nulls`` over ``{values:<any_column>,
    presence:<segmap>}``: ``presence`` runs (as for record fields) over the
    positions of this column, ``values`` the column of the non-null values.
    """

    values: AnyColumn | None
    presence: Segmap


AnyColumn = Union[  # noqa: UP007 (a runtime alias; the | form needs the names defined)
    PrimitiveColumn, RecordColumn, ArrayColumn, MapColumn, UnionColumn, NullsColumn]

NULLS_TYPE_NAME = "csup.nulls"


@dataclass(frozen=True, slots=True)
class Trailer:
    magic: str
    type: str
    version: int
    sections: tuple[int, ...]
    skew_thresh: int
    segment_thresh: int
    size: int  # bytes of the trailer stream itself

    @property
    def data_size(self) -> int:
        return self.sections[0]

    @property
    def reassembly_size(self) -> int:
        return self.sections[1] if len(self.sections) > 1 else 0


@dataclass(frozen=True, slots=True)
class FileMeta:
    """Everything the reassembly section and trailer say about one file."""

    trailer: Trailer
    super_types: tuple[Type, ...]
    super_column: Segmap
    columns: tuple[AnyColumn | None, ...]  # one per super type
    object_size: int
    #: who wrote the file when the format says so (Zed VNG: the versions whose structs
    #: the metadata has); None for this library's CSUP
    writer: str | None = None

    @property
    def row_count(self) -> int | None:
        """Rows in the file when knowable from metadata alone.

        With one super type every super-column value is ``0``, which encodes
        as the single tag byte ``0x01``, so the count is the super column's
        decompressed size.  With several, IDs are varints of any width: the sum
        of the super column segments' ``count`` statistics when every segment has
        one (this library's writer records them), else unknown until the super
        column is read.
        """
        if len(self.super_types) == 1:
            return sum(s.mem_length for s in self.super_column)
        if not self.super_types:
            return 0
        counts = [s.count for s in self.super_column]
        if any(c is None for c in counts):
            return None
        return sum(counts)  # type: ignore[arg-type]

    @property
    def reassembly_offset(self) -> int:
        return self.trailer.data_size


def iter_segmaps(column: AnyColumn | None):
    """Yield every segmap under ``column`` (depth first, in layout order)."""
    if column is None:
        return
    if isinstance(column, PrimitiveColumn):
        yield column.segmap
    elif isinstance(column, RecordColumn):
        for f in column.fields:
            yield f.presence
            yield from iter_segmaps(f.column)
    elif isinstance(column, ArrayColumn):
        yield column.lengths
        yield from iter_segmaps(column.values)
    elif isinstance(column, MapColumn):
        yield column.lengths
        yield from iter_segmaps(column.keys)
        yield from iter_segmaps(column.values)
    elif isinstance(column, UnionColumn):
        yield column.tags
        for c in column.columns:
            yield from iter_segmaps(c)
    elif isinstance(column, NullsColumn):
        yield column.presence
        yield from iter_segmaps(column.values)
