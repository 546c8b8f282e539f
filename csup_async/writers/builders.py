"""The builders that shred values of one type into its column streams: one class per shape
(primitive, record, array/set, map, union, error), made by :func:`builder_for`."""

from __future__ import annotations

from ..format.bsup import (
    UNION_TAG_SIGNED,
    decode_int,
    decode_uint,
    iter_tagged,
)
from ..format.meta import (
    AnyColumn,
    ArrayColumn,
    FieldColumn,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    UnionColumn,
)
from ..model.errors import EncodeError, FormatError
from ..model.types import (
    INT32,
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
from .batch import Arr, ErrNode, MapNode, Node, Prim, Rec, Slot, UnionNode
from .segments import Runs, SegmentSink, Stream


class ColumnBuilder:
    """Shreds the values of one type into its column streams.

    Values arrive either where a presence column covers nulls (record fields:
    :meth:`append` / :meth:`extend`, never null) or where none does (rows,
    elements, members: :meth:`append_uncovered` / :meth:`extend_slot`, where a
    null of a complex type gets this builder's own presence runs).
    """

    def __init__(self, w: SegmentSink, t: Type) -> None:
        self.w = w
        self.t = t
        self.nulls: Runs | None = None  # for null complex values no presence covers
        self.count = 0  # non-null values so far

    def append(self, body: memoryview | bytes) -> None:
        raise NotImplementedError

    def extend(self, node: Node | None, n: int) -> None:
        """``n`` non-null values at once (the bulk :meth:`append`)."""
        raise NotImplementedError

    def append_covered(self, body: memoryview | bytes) -> None:
        self.count += 1
        if self.nulls is not None:
            self.nulls.mark(True)
        self.append(body)

    def extend_covered(self, node: Node | None, n: int) -> None:
        if n == 0:
            return
        self.count += n
        if self.nulls is not None:
            self.nulls.extend(True, n)
        self.extend(node, n)

    def append_uncovered(self, body: memoryview | bytes | None) -> None:
        """Append where no presence column covers a null (top level, elements, members)."""
        if body is None:
            self._start_nulls()
            assert self.nulls is not None
            self.nulls.mark(False)
            return
        self.append_covered(body)

    def extend_slot(self, slot: Slot) -> None:
        """Many values where no presence column covers a null (the bulk
        :meth:`append_uncovered`)."""
        valid = slot.valid
        if valid is None or valid.all():
            self.extend_covered(slot.node, slot.n)
            return
        self._start_nulls()
        assert self.nulls is not None
        present = self.nulls.extend(valid, slot.n)
        self.count += present
        if present:
            self.extend(slot.node, present)

    def _start_nulls(self) -> None:
        if self.nulls is None:
            self.nulls = Runs(self.w)
            self.nulls.extend(True, self.count)

    def streams(self) -> list[Stream]:
        """Streams in layout order (presence before the values it places)."""
        own = self.nulls.streams() if self.nulls else []
        return own + self.own_streams()

    def runs(self) -> list[Runs]:
        """Every presence-run builder under this one (to finalize before the last flush)."""
        return [self.nulls] if self.nulls else []

    def own_streams(self) -> list[Stream]:
        raise NotImplementedError

    def column(self) -> AnyColumn | None:
        inner = self.inner_column()
        if self.nulls is not None and self.nulls.has_nulls:
            if not self.nulls.present:
                return None  # every value null: no column, as for an all-null record field
            return NullsColumn(inner, self.nulls.finish())
        return inner

    def inner_column(self) -> AnyColumn | None:
        raise NotImplementedError


class _PrimitiveBuilder(ColumnBuilder):
    def __init__(self, w: SegmentSink, t: Type) -> None:
        super().__init__(w, t)
        self.stream = Stream(w, t)

    def append(self, body: memoryview | bytes) -> None:
        self.stream.append(body)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, Prim)
        self.stream.extend(node.values)

    def append_uncovered(self, body: memoryview | bytes | None) -> None:
        self.count += 1
        self.stream.append(body)  # primitive nulls are in-band

    def extend_slot(self, slot: Slot) -> None:
        self.count += slot.n
        if slot.n:
            self.extend(slot.node, slot.n)  # nulls in band, in the node's values

    def own_streams(self) -> list[Stream]:
        return [self.stream]

    def inner_column(self) -> AnyColumn | None:
        self.stream.flush()
        return PrimitiveColumn(tuple(self.stream.segments))


class _RecordBuilder(ColumnBuilder):
    def __init__(self, w: SegmentSink, t: RecordType) -> None:
        super().__init__(w, t)
        self.fields = [(f.name, Runs(w), builder_for(w, f.type)) for f in t.fields]

    def append(self, body: memoryview | bytes) -> None:
        it = iter_tagged(body, 0, len(body))
        for _name, runs, child in self.fields:
            try:
                v = next(it)
            except StopIteration:
                raise FormatError("record value has too few fields") from None
            runs.mark(v is not None)
            if v is not None:
                child.append_covered(v)
        if next(it, None) is not None:
            raise FormatError("record value has too many fields")

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, Rec) and len(node.fields) == len(self.fields)
        for (_name, runs, child), (presence, cnode) in zip(self.fields, node.fields,
                                                           strict=True):
            present = runs.extend(presence, n)
            if present:
                child.extend_covered(cnode, present)

    def own_streams(self) -> list[Stream]:
        out: list[Stream] = []
        for _, runs, child in self.fields:
            out += runs.streams() + child.streams()
        return out

    def runs(self) -> list[Runs]:
        out = super().runs()
        for _, runs, child in self.fields:
            out += [runs, *child.runs()]
        return out

    def inner_column(self) -> AnyColumn | None:
        fields = []
        for name, runs, child in self.fields:
            col = child.column() if runs.present else None
            fields.append(FieldColumn(name, col, runs.finish()))
        return RecordColumn(tuple(fields))


class _ArrayBuilder(ColumnBuilder):
    def __init__(self, w: SegmentSink, t: ArrayType | SetType) -> None:
        super().__init__(w, t)
        self.lengths = Stream(w, INT32)
        self.values = builder_for(w, t.elem)

    def append(self, body: memoryview | bytes) -> None:
        n = 0
        for el in iter_tagged(body, 0, len(body)):
            self.values.append_uncovered(el)
            n += 1
        self.lengths.append_int(n)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, Arr)
        self.values.extend_slot(node.elems)
        self.lengths.extend(node.lengths)

    def own_streams(self) -> list[Stream]:
        return [self.lengths, *self.values.streams()]

    def runs(self) -> list[Runs]:
        return super().runs() + self.values.runs()

    def inner_column(self) -> AnyColumn | None:
        self.lengths.flush()
        return ArrayColumn(self.values.column(), tuple(self.lengths.segments))


class _MapBuilder(ColumnBuilder):
    def __init__(self, w: SegmentSink, t: MapType) -> None:
        super().__init__(w, t)
        self.lengths = Stream(w, INT32)
        self.keys = builder_for(w, t.key)
        self.values = builder_for(w, t.value)

    def append(self, body: memoryview | bytes) -> None:
        items = list(iter_tagged(body, 0, len(body)))
        if len(items) % 2:
            raise FormatError("map value has a key without a value")
        for k, v in zip(items[0::2], items[1::2], strict=True):
            self.keys.append_uncovered(k)
            self.values.append_uncovered(v)
        self.lengths.append_int(len(items) // 2)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, MapNode)
        self.keys.extend_slot(node.keys)
        self.values.extend_slot(node.values)
        self.lengths.extend(node.lengths)

    def own_streams(self) -> list[Stream]:
        return [self.lengths, *self.keys.streams(), *self.values.streams()]

    def runs(self) -> list[Runs]:
        return super().runs() + self.keys.runs() + self.values.runs()

    def inner_column(self) -> AnyColumn | None:
        self.lengths.flush()
        return MapColumn(self.keys.column(), self.values.column(), tuple(self.lengths.segments))


class _UnionBuilder(ColumnBuilder):
    def __init__(self, w: SegmentSink, t: UnionType) -> None:
        super().__init__(w, t)
        self.tags = Stream(w, INT32)
        self.members = [builder_for(w, m) for m in t.types]

    def append(self, body: memoryview | bytes) -> None:
        parts = list(iter_tagged(body, 0, len(body)))
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a tag and a value")
        idx = decode_int(parts[0]) if UNION_TAG_SIGNED else decode_uint(parts[0])
        if not 0 <= idx < len(self.members):
            raise FormatError(f"union tag {idx} out of range")
        self.tags.append_int(idx)
        self.members[idx].append_uncovered(parts[1])

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, UnionNode) and len(node.members) == len(self.members)
        self.tags.extend(node.tags)
        for member, slot in zip(self.members, node.members, strict=True):
            if slot is not None and slot.n:
                member.extend_slot(slot)

    def own_streams(self) -> list[Stream]:
        out = [self.tags]
        for m in self.members:
            out += m.streams()
        return out

    def runs(self) -> list[Runs]:
        out = super().runs()
        for m in self.members:
            out += m.runs()
        return out

    def inner_column(self) -> AnyColumn | None:
        self.tags.flush()
        cols = tuple(m.column() if m.count or m.nulls else None for m in self.members)
        return UnionColumn(cols, tuple(self.tags.segments))


class _ErrorBuilder(ColumnBuilder):
    """An error's column is its wrapped type's; a null error needs our nulls wrapper."""

    def __init__(self, w: SegmentSink, t: ErrorType) -> None:
        super().__init__(w, t)
        self.inner = builder_for(w, t.inner)

    def append(self, body: memoryview | bytes) -> None:
        # the body of an error is its wrapped value's body (Zed's encoding)
        self.inner.append_uncovered(body)

    def extend(self, node: Node | None, n: int) -> None:
        assert isinstance(node, ErrNode)
        self.inner.extend_slot(node.inner)

    def own_streams(self) -> list[Stream]:
        return self.inner.streams()

    def runs(self) -> list[Runs]:
        return super().runs() + self.inner.runs()

    def inner_column(self) -> AnyColumn | None:
        return self.inner.column()


def builder_for(w: SegmentSink, t: Type) -> ColumnBuilder:
    if isinstance(t, NamedType):
        return builder_for(w, t.inner)
    if isinstance(t, (PrimitiveType, EnumType)):
        return _PrimitiveBuilder(w, t)
    if isinstance(t, RecordType):
        return _RecordBuilder(w, t)
    if isinstance(t, (ArrayType, SetType)):
        return _ArrayBuilder(w, t)
    if isinstance(t, MapType):
        return _MapBuilder(w, t)
    if isinstance(t, UnionType):
        return _UnionBuilder(w, t)
    if isinstance(t, ErrorType):
        return _ErrorBuilder(w, t)
    raise EncodeError(f"cannot write values of type {t!r}")
