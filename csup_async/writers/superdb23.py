"""Writing CSUP version 23, the layout ``super`` main reads (``target="super"``).

Values are grouped by type into one vector tree each (a root ``Dynamic`` with
row tags when there are several), in objects of at most 120,000 values, then a
footer with the fused type of every value and the 16-byte trailer
(:mod:`.v23` describes the layout).  Vectors are written as super main's writer
writes them: integers in intcomp blocks with their min/max, floats as float64
words, strings and bytes as a byte run with intcomp offsets and min/max,
``bool`` as bits, ``ip``/``net`` as their address bytes, type values as IDs
into the object's typedefs table.  Where a value is null or an optional field
absent, the vector becomes a union with ``null``/``none`` (two members: run
lengths, as super stores them), since super main has no null in a typed vector.
Segments over a few bytes are LZ4-compressed when that makes them smaller, as
super does.  Dictionary and constant vectors (super's own optimisation) are not
made: super reads the plain vectors the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

import numpy as np

from ..format.bsup.valuecodec import select_member
from ..format.superdb.bsup2 import FusionType, OptField
from ..format.superdb.bsup5 import NONE, NONE_T, RecRef, sort_union
from ..format.superdb.bsup5w import Stream, encode_type_value, encode_value, main_type
from ..format.superdb.v23 import MAGIC, VERSION
from ..model.errors import EncodeError, UnsupportedTypeError
from ..model.types import (
    NULL,
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
from ..model.values import UnionValue, Value
from .superdb23_scalars import (
    BYTES_T,
    IPB,
    BoolB,
    Builder,
    BytesB,
    Ctx,
    EnumB,
    FloatB,
    IntB,
    NoneB,
    NullB,
    TypeB,
    emit_union,
)

MAX_OBJECT_ROWS = 120_000
_INTS = frozenset("int8 int16 int32 int64 duration time".split())
_UINTS = frozenset("uint8 uint16 uint32 uint64".split())
_FLOATS = frozenset("float16 float32 float64".split())


def make(t: Type, names: dict[str, NamedType] | None = None) -> Builder:
    """The builder of values of ``t`` (original type), nulls and absences handled;
    ``names``: the named types around (a recursive type refers to its own name)."""
    names = {} if names is None else names
    if isinstance(t, UnionType):
        return UnionB(t, names)
    if isinstance(t, PrimitiveType) and t.name == "null":
        return Slot(NullB())
    if t == NONE_T:
        return NoneB()
    if isinstance(t, RecRef):
        return Slot(RefB(t.name, names))
    return Slot(_plain(t, names))


def _plain(t: Type, names: dict[str, NamedType]) -> Builder:
    if isinstance(t, PrimitiveType):
        n = t.name
        if n in _INTS:
            return IntB(t, True)
        if n in _UINTS:
            return IntB(t, False)
        if n in _FLOATS:
            return FloatB(t)
        if n == "bool":
            return BoolB()
        if n in ("string", "bytes"):
            return BytesB(t)
        if n == "ip":
            return IPB(False)
        if n == "net":
            return IPB(True)
        if n == "type":
            return TypeB()
        raise UnsupportedTypeError(f"super main has no vectors for {n} values")
    if isinstance(t, RecordType):
        return RecordB(t, names)
    if isinstance(t, ArrayType | SetType):
        return ListB(t, names)
    if isinstance(t, MapType):
        return MapB(t, names)
    if isinstance(t, NamedType):
        return NamedB(t, names)
    if isinstance(t, ErrorType):
        return ErrorB(t, names)
    if isinstance(t, EnumType):
        return EnumB(t)
    if isinstance(t, FusionType):
        return _plain(t.inner, names)  # read as its supertype's values: written as them
    raise UnsupportedTypeError(f"type {t} cannot be written as CSUP v23")


class Slot(Builder):
    """A vector that may hold nulls and absent values among its own: a union with
    ``null``/``none`` when it does (0 value, 1 null, 2 none)."""

    def __init__(self, inner: Builder) -> None:
        self.inner = inner
        self.tags: list[int] | None = None
        self.n = 0

    def add(self, v: Any) -> None:
        if isinstance(v, Value):
            v = v.value
        if (v is None and not _holds_null(self.inner)) or v is NONE:
            if self.tags is None:
                self.tags = [0] * self.n
            self.tags.append(1 if v is None else 2)
        else:
            if self.tags is not None:
                self.tags.append(0)
            self.inner.add(v)
        self.n += 1

    def count(self) -> int:
        return self.n

    def _members(self) -> list[tuple[Type, int]]:
        ms = [(self.inner.mtype(), 0)]
        if self.tags is not None:
            if 1 in self.tags:
                ms.append((NULL, 1))
            if 2 in self.tags:
                ms.append((NONE_T, 2))
        return ms

    def mtype(self) -> Type:
        ms = self._members()
        return ms[0][0] if len(ms) == 1 else sort_union(t for t, _ in ms)

    def emit(self, c: Ctx) -> int:
        ms = self._members()
        if len(ms) == 1:
            return self.inner.emit(c)
        u = sort_union(t for t, _ in ms)
        order = {k: u.types.index(t) for t, k in ms}
        tags = np.array([order[k] for k in self.tags or ()], dtype=np.int64)
        nulls, nones = self.tags.count(1), self.tags.count(2)  # type: ignore[union-attr]

        def em(k: int) -> Any:
            if k == 0:
                return self.inner.emit
            if k == 1:
                return lambda c: c.enter("Null", {"Count": nulls})
            return lambda c: c.enter("None", {"Count": nones})

        members = sorted(((t, em(k)) for t, k in ms), key=lambda m: u.types.index(m[0]))
        return emit_union(c, tags, members)


def _holds_null(b: Builder) -> bool:
    """Whether None is a value of ``b``'s own type (null, error(null)): super main has no
    null of any other type, so there None is a null member beside the type."""
    if isinstance(b, NullB):
        return True
    if isinstance(b, ErrorB | NamedB):
        inner = b.inner
        return isinstance(inner, Slot) and _holds_null(inner.inner)
    return False


class RefB(Builder):
    """Values of a recursive type at its own name: a builder of the named type, made
    when a value arrives (the data is finite; the type is not)."""

    def __init__(self, name: str, names: dict[str, NamedType]) -> None:
        self.name, self.names = name, names
        self.inner: Builder | None = None

    def _b(self) -> Builder:
        if self.inner is None:
            if self.name not in self.names:
                raise UnsupportedTypeError(f"recursive type {self.name} without its definition")
            self.inner = NamedB(self.names[self.name], self.names)
        return self.inner

    def add(self, v: Any) -> None:
        self._b().add(v)

    def count(self) -> int:
        return self.inner.count() if self.inner is not None else 0

    def mtype(self) -> Type:
        return RecRef(self.name)

    def emit(self, c: Ctx) -> int:
        if self.inner is None or not self.count():
            return c.enter("Empty", {"Type": main_type(self.names[self.name])})
        return self.inner.emit(c)


class RecordB(Builder):
    def __init__(self, t: RecordType, names: dict[str, NamedType]) -> None:
        self.t = t
        self.fields = [(f.name, isinstance(f, OptField), make(f.type, names))
                       for f in t.fields]
        self.n = 0

    def add(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise EncodeError(f"record {self.t} needs a dict, not {type(v).__name__}")
        for name, opt, b in self.fields:
            if name in v:
                b.add(v[name])
            elif opt:
                b.add(NONE)
            else:
                raise EncodeError(f"record {self.t} needs field {name!r}")
        self.n += 1

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        return RecordType(tuple(Field(n, b.mtype()) for n, _, b in self.fields))

    def emit(self, c: Ctx) -> int:
        fields = [{"Name": n, "Values": b.emit(c)} for n, _, b in self.fields]
        return c.enter("Record", {"Length": self.n, "Fields": fields})


class ListB(Builder):
    def __init__(self, t: ArrayType | SetType, names: dict[str, NamedType]) -> None:
        self.set = isinstance(t, SetType)
        self.elem = make(t.elem, names)
        self.offs = [0]

    def add(self, v: Any) -> None:
        if isinstance(v, dict | str | bytes) or not hasattr(v, "__iter__"):
            raise EncodeError(f"an array or set needs a list, not {type(v).__name__}")
        items = list(v)
        if self.set:
            items = _set_order(items, self.elem)
        for x in items:
            self.elem.add(x)
        self.offs.append(self.offs[-1] + len(items))

    def count(self) -> int:
        return len(self.offs) - 1

    def mtype(self) -> Type:
        e = self.elem.mtype()
        return SetType(e) if self.set else ArrayType(e)

    def emit(self, c: Ctx) -> int:
        lengths = c.uint32s(self.offs)
        vid = self.elem.emit(c)
        return c.enter("Set" if self.set else "Array",
                       {"Length": self.count(), "Lengths": lengths, "Values": vid})


def _set_order(items: list[Any], elem: Builder) -> list[Any]:
    """A set's elements unique and in the order of their encodings (super's normal form)."""
    t = elem.inner.t if isinstance(elem, Slot) and hasattr(elem.inner, "t") else None
    if t is None:
        return items
    keyed = {}
    for x in items:
        try:
            k = encode_value(main_type(t), x)
        except Exception:
            return items
        keyed.setdefault(k or b"", x)
    return [keyed[k] for k in sorted(keyed)]


class MapB(Builder):
    def __init__(self, t: MapType, names: dict[str, NamedType]) -> None:
        self.keys, self.vals = make(t.key, names), make(t.value, names)
        self.offs = [0]

    def add(self, v: Any) -> None:
        items = list(v.items()) if isinstance(v, dict) else list(v)
        for k, x in items:
            self.keys.add(k)
            self.vals.add(x)
        self.offs.append(self.offs[-1] + len(items))

    def count(self) -> int:
        return len(self.offs) - 1

    def mtype(self) -> Type:
        return MapType(self.keys.mtype(), self.vals.mtype())

    def emit(self, c: Ctx) -> int:
        lengths = c.uint32s(self.offs)
        k = self.keys.emit(c)
        v = self.vals.emit(c)
        return c.enter("Map", {"Length": self.count(), "Lengths": lengths, "Keys": k,
                               "Values": v})


class NamedB(Builder):
    def __init__(self, t: NamedType, names: dict[str, NamedType]) -> None:
        self.t = t
        names.setdefault(t.name, t)
        self.inner = make(t.inner, names)

    def add(self, v: Any) -> None:
        self.inner.add(v)

    def count(self) -> int:
        return self.inner.count()

    def mtype(self) -> Type:
        return NamedType(self.t.name, self.inner.mtype())

    def emit(self, c: Ctx) -> int:
        if not self.count():
            return c.enter("Empty", {"Type": main_type(self.t)})
        vid = self.inner.emit(c)
        return c.enter("Named", {"Name": self.t.name, "Values": vid})


class ErrorB(Builder):
    def __init__(self, t: ErrorType, names: dict[str, NamedType]) -> None:
        self.inner = make(t.inner, names)

    def add(self, v: Any) -> None:
        self.inner.add(v)

    def count(self) -> int:
        return self.inner.count()

    def mtype(self) -> Type:
        return ErrorType(self.inner.mtype())

    def emit(self, c: Ctx) -> int:
        return c.enter("Error", {"Values": self.inner.emit(c)})


class UnionMembers:
    """What both v23 writers' unions (the value writer's :class:`UnionB`, the column
    writer's) share: the members' super-main types in super's order, with a null
    member (tag -1) and a none member (tag -2) when met, and their emission."""

    t: UnionType
    members: list[Any]
    nulls: int
    nones: int

    def member_types(self) -> list[tuple[Type, int]]:
        """(super-main type, tag) of every member written: -1 null, -2 none."""
        ms = [(b.mtype(), i) for i, b in enumerate(self.members)]
        if self.nulls:
            ms.append((NULL, -1))
        if self.nones:
            ms.append((NONE_T, -2))
        return ms

    def mtype(self) -> Type:
        return sort_union(t for t, _ in self.member_types())

    def emit_members(self, c: Ctx, tags_of: Callable[[dict[int, int]], np.ndarray]) -> int:
        """The union's vector; ``tags_of`` turns {tag: member's index in super's order}
        into the values' tags."""
        ms = self.member_types()
        u = sort_union(t for t, _ in ms)
        if len(u.types) != len(ms):
            raise UnsupportedTypeError(f"union {self.t} has members super main would merge")
        tags = tags_of({k: u.types.index(t) for t, k in ms})

        def em(k: int) -> Any:
            if k == -1:
                return lambda c: c.enter("Null", {"Count": self.nulls})
            if k == -2:
                return lambda c: c.enter("None", {"Count": self.nones})
            return self.members[k].emit

        members = sorted(((t, em(k)) for t, k in ms), key=lambda m: u.types.index(m[0]))
        return emit_union(c, tags, members)


class UnionB(UnionMembers, Builder):
    """A union of the original type: members by their super-main types, in super's
    order, plus null (None) and none (absent) members when met."""

    def __init__(self, t: UnionType, names: dict[str, NamedType]) -> None:
        self.t = t
        self.members = [make(m, names) for m in t.types]
        self.tags: list[int] = []  # original member index; -1 null, -2 none
        self.nulls = self.nones = 0

    def add(self, v: Any) -> None:
        if isinstance(v, Value):
            v = v.value
        if v is NONE:
            self.tags.append(-2)
            self.nones += 1
            return
        if v is None and NULL not in self.t.types:
            self.tags.append(-1)
            self.nulls += 1
            return
        if isinstance(v, UnionValue):
            i, inner = v.index, v.value
            if not 0 <= i < len(self.t.types):
                raise EncodeError(f"union member {i} of {self.t}")
        else:
            i, _, inner = select_member(self.t, v)
        if inner is None and self.t.types[i] != NULL:  # a null is the union's null member
            if NULL in self.t.types:
                i = self.t.types.index(NULL)
            else:
                self.tags.append(-1)
                self.nulls += 1
                return
        self.tags.append(i)
        self.members[i].add(inner)

    def count(self) -> int:
        return len(self.tags)

    def emit(self, c: Ctx) -> int:
        return self.emit_members(c, lambda order: np.array([order[k] for k in self.tags],
                                                           dtype=np.int64))


# ------------------------------------------------------------------ fuse ---
def fuse(a: Type, b: Type) -> Type:
    """A supertype of ``a`` and ``b`` as the footer holds it (super's ``fuse``: records
    merge by field, a field missing from one optional, other differences unions)."""
    if a == b:
        return a
    if isinstance(a, RecordType) and isinstance(b, RecordType):
        names = [f.name for f in a.fields] + [f.name for f in b.fields
                                               if a.field(f.name) is None]
        out = []
        for n in names:
            fa, fb = a.field(n), b.field(n)
            if fa is None or fb is None:
                t = (fa or fb).type  # type: ignore[union-attr]
                out.append(Field(n, sort_union((t, NONE_T))))
            else:
                out.append(Field(n, fuse(fa.type, fb.type)))
        return RecordType(tuple(out))
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(fuse(a.elem, b.elem))
    if isinstance(a, SetType) and isinstance(b, SetType):
        return SetType(fuse(a.elem, b.elem))
    return sort_union((a, b))


# ---------------------------------------------------------------- writer ---
def row_object(rows: list[tuple[Type, Any]]) -> tuple[bytes, list[Type]]:
    """One object of values given one at a time (grouped by type in order of first
    appearance, a Dynamic root over several): its bytes and its values' types."""
    groups: dict[Type, tuple[int, Builder]] = {}
    tags = np.zeros(len(rows), dtype=np.int64)
    for r, (t, v) in enumerate(rows):
        g = groups.get(t)
        if g is None:
            g = groups[t] = (len(groups), make(t))
        tags[r] = g[0]
        g[1].add(v)
    c = Ctx()
    builders = [b for _, b in groups.values()]
    if len(builders) == 1:
        root = builders[0].emit(c)
    else:
        seg = c.uint32s(tags)
        ids = [b.emit(c) for b in builders]
        root = c.enter("Dynamic", {"Tags": seg, "Values": ids, "Length": len(rows)})
    return object_bytes(c, root), [b.mtype() for b in builders]


def object_bytes(c: Ctx, root: int) -> bytes:
    """One object's bytes: header, metadata, typedefs, data (super main's layout)."""
    meta = c.metas.bytes()
    types = Stream()
    types.add(BYTES_T, bytes(c.typedefs.buf))
    tsec = types.bytes()
    head = (MAGIC + VERSION.to_bytes(4, "little") + b"O"
            + len(meta).to_bytes(8, "little") + len(tsec).to_bytes(8, "little")
            + len(c.data).to_bytes(8, "little") + root.to_bytes(4, "little")
            + bytes(8))  # the 36-byte data header's unused tail
    return head + meta + tsec + bytes(c.data)


def footer_and_trailer(fused: Type, size: int) -> bytes:
    """The footer (the fused type of every value) and the 16-byte trailer that end a
    part whose objects took ``size`` bytes."""
    tv = encode_type_value(fused)
    footer = MAGIC + VERSION.to_bytes(4, "little") + b"F" + len(tv).to_bytes(4, "little") + tv
    trailer = ((size + len(footer) + 16).to_bytes(8, "little") + len(tv).to_bytes(4, "little")
               + MAGIC)
    return footer + trailer


def write_values(out: BinaryIO, values: Iterable[Value], *,
                 max_object_rows: int = MAX_OBJECT_ROWS) -> int:
    """Write ``values`` as one CSUP v23 part (objects, footer, trailer); bytes written.
    No values: an empty file, as super writes for no input."""
    if max_object_rows < 1:
        raise ValueError("max_object_rows must be at least 1")
    size = 0
    fused: Type | None = None
    rows: list[tuple[Type, Any]] = []

    def flush() -> None:
        nonlocal size, fused
        if not rows:
            return
        obj, types = row_object(rows)
        out.write(obj)
        size += len(obj)
        for t in types:
            fused = t if fused is None else fuse(fused, t)
        rows.clear()

    for v in values:
        if not isinstance(v, Value):
            raise EncodeError(f"write_values needs Values, not {type(v).__name__}")
        rows.append((v.type, v.value))
        if len(rows) >= max_object_rows:
            flush()
    flush()
    if fused is None:
        return 0
    end = footer_and_trailer(fused, size)
    out.write(end)
    return size + len(end)
