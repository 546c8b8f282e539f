"""SuperDB CSUP objects: the 36-byte header and the metadata section, as plain data.

A file ``super`` writes is a sequence of objects (at most 120,000 values each),
each ``[header][metadata][types][data]``.  The header (``"CSUP"``, version,
three section sizes, the root's ID) is at the head of the object, so the next
object's offset is known only once a header has been read; the metadata section
is a BSUP version-2 stream of one value per vector (an ID is its position),
parsed here into :class:`Node` records: everything planning and decoding need
(segments, child IDs, counts, types), nothing of the Go marshaller's shape.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ...model.errors import (
    CsupError,
    FormatError,
    LimitError,
    TruncatedError,
    UnsupportedTypeError,
)
from ...model.types import (
    ArrayType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)
from .bsup2 import V1, V2, Dialect, OptField, read_values
from .compiled import decoder
from .fastnodes import builder
from .nodes import Node, Seg

MAGIC = b"CSUP"
HEADER_SIZE = 36  # version 16; version 14 has no type section, and 28 bytes
#: Header versions read here and the ``super`` release that writes each.  ``super``
#: itself accepts only its own.  Version 14 (v0.2.0) differs from 16 only in its
#: 28-byte header (no type section: no fusion types) and BSUP version 1 metadata.
VERSIONS = {14: "super v0.2.0", 16: "super v0.3.0", 23: "super main (2026)"}
#: v0.1.0 wrote version 12 with the magic ``VNG\0`` and a vector kind for nulls: not read.
OLDER = {12: "super v0.1.0"}
MAX_META = 100 << 20
MAX_DATA = 2 << 30


@dataclass(frozen=True, slots=True)
class Header:
    version: int
    meta_size: int
    type_size: int
    data_size: int
    root: int

    @property
    def size(self) -> int:
        if self.version >= 23:  # "CSUP", version, section type, then the 36-byte header
            return 9 + HEADER_SIZE
        return HEADER_SIZE if self.version >= 16 else 28

    @property
    def dialect(self) -> Dialect:
        if self.version >= 23:
            from .bsup5 import V5

            return V5
        return V2 if self.version >= 16 else V1

    @property
    def object_size(self) -> int:
        return self.size + self.meta_size + self.type_size + self.data_size


def parse_header(buf: bytes | memoryview, at: int = 0) -> Header:
    """The header at the start of ``buf`` (read at file offset ``at``), or a FormatError."""
    if len(buf) < 8:
        raise TruncatedError(f"CSUP object header at byte {at} is cut short")
    if bytes(buf[:4]) != MAGIC:
        raise FormatError(f"no CSUP object header at byte {at} (wrong format, "
                          "or the previous object's sizes are wrong)")
    (version,) = struct.unpack_from("<I", buf, 4)
    if version not in VERSIONS:
        older = f" (written by {OLDER[version]}, a layout not read here)" if (
            version in OLDER) else ""
        known = ", ".join(f"{v} ({w})" for v, w in VERSIONS.items())
        raise FormatError(f"CSUP header version {version} at byte {at}{older}: this reader "
                          f"reads versions {known}")
    need = 45 if version == 23 else HEADER_SIZE if version >= 16 else 28
    if len(buf) < need:
        raise TruncatedError(f"CSUP object header at byte {at} is cut short")
    if version == 23:  # read from its parts' trailers (readers.superdb23), not a chain
        raise FormatError(f"CSUP version 23 at byte {at} without the trailer a v23 file ends "
                          "in (truncated?)")
    if version >= 16:
        meta, types, data, root = struct.unpack_from("<QQQI", buf, 8)
    else:
        (meta, data, root), types = struct.unpack_from("<QQI", buf, 8), 0
    if meta > MAX_META or types > MAX_META or data > MAX_DATA:
        raise FormatError(f"CSUP object at byte {at} claims sections of {meta}, {types} "
                          f"and {data} bytes (over super's own limits)")
    return Header(version, meta, types, data, root)


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    offset: int  # of the header in the file
    header: Header
    nodes: tuple[Node, ...]

    @property
    def data_offset(self) -> int:
        h = self.header
        return self.offset + h.size + h.meta_size + h.type_size

    @property
    def end(self) -> int:
        return self.offset + self.header.object_size

    @property
    def root(self) -> Node:
        return self.nodes[self.header.root]

    @property
    def length(self) -> int:
        return node_len(self.nodes, self.header.root)


class SuperDBMeta:
    """Every object of one file, in order.  ``super_types`` None: found on first ask
    (:func:`file_types` walks every vector of every super type, which a projection does
    not need)."""

    __slots__ = ("_super_types", "object_size", "objects")

    def __init__(self, objects: tuple[ObjectMeta, ...], object_size: int,
                 super_types: tuple[Type, ...] | None = ()) -> None:
        self.objects, self.object_size = objects, object_size
        self._super_types = super_types

    @property
    def super_types(self) -> tuple[Type, ...]:
        if self._super_types is None:
            try:
                self._super_types = file_types(self.objects)
            except CsupError as e:  # a vector met first here: its file named
                raise e.with_path(getattr(self.objects[0].nodes, "path", None)) from None
        return self._super_types

    @property
    def version(self) -> int:
        return self.objects[0].header.version if self.objects else 0

    @property
    def row_count(self) -> int:
        return sum(o.length for o in self.objects)


def seg_of(d: Any, what: str) -> Seg:
    try:
        off, length, mem, fmt = (int(d[k]) for k in
                                 ("Offset", "Length", "MemLength", "CompressionFormat"))
    except (KeyError, TypeError, ValueError):
        raise FormatError(f"{what}: a segment is not Offset/Length/MemLength/Format") from None
    if fmt not in (0, 1):
        raise FormatError(f"{what}: unknown compression format {fmt}")
    return Seg(off, length if fmt else mem, mem, bool(fmt))


def node_of(t: Type, body: Any, what: str, dialect: Dialect) -> Node:
    """The vector one metadata value describes, through the generic decoder (the
    reference :mod:`.fastnodes` answers as; every malformed value's error is made here)."""
    if not isinstance(t, NamedType):
        raise FormatError(f"{what}: metadata value of type {t} is not a named vector kind")
    kind = t.name.lower()
    d = decoder(t, dialect)(body)  # decode_value(t, body, typed=True), made per type
    if not isinstance(d, dict):
        raise FormatError(f"{what}: metadata value of {t.name} is not a record")

    def ids(v: Any) -> tuple[int, ...]:
        return tuple(int(x) for x in v)

    try:
        if kind in ("int", "uint", "float", "primitive", "bytes") and not isinstance(
                d.get("Type"), Type):
            raise FormatError(f"{what}: {t.name} metadata's Type is not a type")
        if kind in ("int", "uint", "float", "primitive"):
            return Node(kind, int(d["Count"]), (("values", seg_of(d["Location"], what)),),
                        type=d["Type"], min=d.get("Min"), max=d.get("Max"))
        if kind == "bytes":
            return Node(kind, int(d["Count"]), (("bytes", seg_of(d["Bytes"], what)),
                                                ("offsets", seg_of(d["Offsets"], what))),
                        type=d["Type"], min=d.get("Min"), max=d.get("Max"))
        if kind == "const":
            rt = t.inner
            f = rt.field("Value") if isinstance(rt, RecordType) else None
            if f is None:
                raise FormatError(f"{what}: Const metadata lacks its value")
            return Node(kind, int(d["Count"]), type=f.type, value=d["Value"])
        if kind == "dict":
            return Node(kind, int(d["Length"]), (("counts", seg_of(d["Counts"], what)),
                                                 ("index", seg_of(d["Index"], what))),
                        kids=(int(d["Values"]),))
        if kind == "record":
            fs = d["Fields"]
            return Node(kind, int(d["Length"]),
                        tuple((f"nones:{i}", seg_of(f["Nones"], what)) for i, f in enumerate(fs)
                              if f["Opt"]),
                        kids=tuple(int(f["Values"]) for f in fs),
                        fields=tuple((str(f["Name"]), bool(f["Opt"])) for f in fs))
        if kind in ("array", "set"):
            return Node(kind, int(d["Length"]), (("lengths", seg_of(d["Lengths"], what)),),
                        kids=(int(d["Values"]),))
        if kind == "map":
            return Node(kind, int(d["Length"]), (("lengths", seg_of(d["Lengths"], what)),),
                        kids=(int(d["Keys"]), int(d["Values"])))
        if kind in ("union", "dynamic"):
            return Node(kind, int(d["Length"]), (("tags", seg_of(d["Tags"], what)),),
                        kids=ids(d["Values"]))
        if kind == "named":
            return Node(kind, kids=(int(d["Values"]),), name=str(d["Name"]))
        if kind == "error":
            return Node(kind, kids=(int(d["Values"]),))
        if kind == "fusion":
            return Node(kind, segs=(("subtypes", seg_of(d["Subtypes"], what)),),
                        kids=(int(d["Values"]),))
    except (KeyError, TypeError, ValueError, AttributeError):
        raise FormatError(f"{what}: {t.name} metadata lacks a field it needs") from None
    raise FormatError(f"{what}: unknown vector kind {t.name!r}")


def _checked(n: Node, i: int, count: int, data_size: int, what: str) -> Node:
    """``n`` (vector ``i`` of ``count``) if its children come before it and its segments
    lie inside the ``data_size``-byte data section, else a FormatError."""
    for k in n.kids:
        if (k >= i and n.kind != "dynamic") or k >= count:
            raise FormatError(f"{what}: vector {i} refers to vector {k} "
                              "(not an earlier one)")
    for _, s in n.segs:
        if s.offset + s.size > data_size:
            raise FormatError(f"{what}: segment at {s.offset}+{s.size} runs past the "
                              f"{data_size}-byte data section")
    return n


class LazyNodes(Sequence[Node]):
    """An object's vectors, each parsed (and checked) when first asked for.

    A file ``super`` v0.3.0 writes for ordinary JSON holds thousands of metadata values
    (7,585 for 200,000 log records of 191 super types), and a projection of two columns
    touches a fraction of them: the root, each super type's record and the vectors
    under the paths asked for.  Parsing every value at open was most of such a read; here
    the open splits the section into ``(type, body)`` pairs only, and a vector is made
    the first time it is indexed.  What a damaged vector raises is unchanged (the same
    :func:`node_of` and checks), only when: the first use of it, not the open.  Pickled,
    it is the plain tuple of every vector."""

    __slots__ = ("_data_size", "_dialect", "_made", "_vals", "_what", "path", "resolved")

    def __init__(self, vals: list[tuple[Type, Any]], what: str, dialect: Dialect,
                 data_size: int) -> None:
        self._vals, self._what, self._dialect, self._data_size = vals, what, dialect, data_size
        self._made: list[Node | None] = [None] * len(vals)
        #: where paths are under top-level vectors (scan.superdb.columns.resolve's answers)
        self.resolved: dict[Any, Any] = {}
        #: the file's path, named by the error of a damaged vector (whichever verb met it)
        self.path: str | None = None

    def __len__(self) -> int:
        return len(self._vals)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = self._made[i]
        if n is None:
            i = i + len(self._vals) if i < 0 else i
            t, body = self._vals[i]
            try:
                n = _checked(self._node(t, body), i, len(self._vals), self._data_size,
                             self._what)
            except CsupError as e:
                raise e.with_path(self.path) from None
            self._made[i] = n
        return n

    def _node(self, t: Type, body: Any) -> Node:
        """The vector of one metadata value: by its type's builder (:mod:`.fastnodes`)
        where it has one and takes the body, else (and for every error) :func:`node_of`."""
        build = builder(t, self._dialect)
        if build is not None and body is not None:
            try:
                return build(body)
            except Exception:  # any refusal: node_of gives the node, or the error
                pass
        return node_of(t, body, self._what, self._dialect)

    def __iter__(self) -> Iterator[Node]:
        for i in range(len(self._vals)):
            yield self[i]

    def __reduce__(self) -> Any:
        return (tuple, (tuple(self),))


def parse_metadata(buf: bytes | memoryview, offset: int, header: Header) -> ObjectMeta:
    """The metadata section of the object at ``offset`` (``buf`` is that section): its
    values split at once, each vector parsed on first use (:class:`LazyNodes`)."""
    what = f"CSUP object at byte {offset}"
    vals = read_values(buf, header.dialect)
    if header.root >= len(vals):
        raise FormatError(f"{what}: root ID {header.root} is past its {len(vals)} vectors")
    nodes = LazyNodes(vals, what, header.dialect, header.data_size)
    nodes[header.root]  # the root is needed by every use: checked now
    return ObjectMeta(offset, header, nodes)  # type: ignore[arg-type]


def node_len(nodes: tuple[Node, ...], i: int) -> int:
    n = nodes[i]
    while n.kind in ("named", "error", "fusion", "enum", "any"):
        n = nodes[n.kids[0]]
    return n.count


def node_type(nodes: tuple[Node, ...], i: int, depth: int = 0,
              names: tuple[str, ...] | None = ()) -> Type:
    """The super type of the values of vector ``i`` (not for the root Dynamic).

    ``names``: the named types this vector is inside, where a name met again is a
    recursive type's reference to itself (v23); ``None`` where types are never
    recursive (v14, v16), so a name redefined inside its own definition stays the new
    definition."""
    if depth > 200:
        raise FormatError("CSUP vectors nested too deeply")
    n = nodes[i]
    d = depth + 1
    if names is not None and ((n.kind == "named" and n.name in names) or (
            n.kind == "empty" and isinstance(n.type, NamedType) and n.type.name in names)):
        from .bsup5 import RecRef  # v23: a recursive type's own name inside it

        return RecRef(n.name or n.type.name)  # type: ignore[union-attr]
    if n.type is not None:
        return n.type
    if n.kind == "any":
        from .bsup5 import ALL_T

        return ALL_T
    if n.kind == "fusion":  # values of the supertype (absent optional fields left out)
        return node_type(nodes, n.kids[0], d, names)
    if n.kind == "dict":
        return node_type(nodes, n.kids[0], d, names)
    if n.kind == "record":
        out = []
        for (name, opt), k in zip(n.fields, n.kids, strict=True):
            ft = node_type(nodes, k, d, names)
            if not opt and isinstance(ft, UnionType) and any(
                    str(m) == "none" for m in ft.types):  # v23: x?:T is x:T|none
                from .bsup5 import option_parts

                ft, opt = option_parts(ft)
            out.append((OptField if opt else Field)(name, ft))
        return RecordType(tuple(out))
    if n.kind in ("array", "set"):
        e = node_type(nodes, n.kids[0], d, names)
        return ArrayType(e) if n.kind == "array" else SetType(e)
    if n.kind == "map":
        return MapType(node_type(nodes, n.kids[0], d, names), node_type(nodes, n.kids[1], d, names))
    if n.kind == "union":
        return UnionType(tuple(node_type(nodes, k, d, names) for k in n.kids))
    if n.kind == "named":
        return NamedType(n.name, node_type(nodes, n.kids[0], d,
                                           None if names is None else (*names, n.name)))
    if n.kind == "error":
        return ErrorType(node_type(nodes, n.kids[0], d, names))
    raise UnsupportedTypeError(f"vectors of kind {n.kind} are not supported")


def root_types(obj: ObjectMeta) -> list[tuple[Type, int]]:
    """``(super type, vector ID)`` of each of the object's top-level vectors (kept in a
    v23 object's ``memo``: every open of a file asks, see v23.ObjectMeta5)."""
    memo = getattr(obj, "memo", None)
    if memo is not None:
        got = memo.get("root_types")
        if got is None:
            got = memo["root_types"] = _root_types(obj)
        return list(got)
    return _root_types(obj)


def _root_types(obj: ObjectMeta) -> list[tuple[Type, int]]:
    root = obj.root
    ids = root.kids if root.kind == "dynamic" else (obj.header.root,)
    names: tuple[str, ...] | None = () if obj.header.version >= 23 else None
    return [(node_type(obj.nodes, k, names=names), k) for k in ids]


def file_types(objects: Iterable[ObjectMeta]) -> tuple[Type, ...]:
    """The distinct types of a file's top-level vectors, in order of first use (what a
    header-layout file of any version shows as its types)."""
    seen: dict[Type, None] = {}  # by hash: a list's ``in`` compared hundreds of types
    rest: list[Type] = []  # a type that cannot be hashed (none known): compared
    for o in objects:
        for t, _ in root_types(o):
            try:
                seen.setdefault(t, None)
            except TypeError:
                if t not in rest:
                    rest.append(t)
    return tuple(seen) if not rest else _first_use(objects)  # first-use order kept


def _first_use(objects: Iterable[ObjectMeta]) -> tuple[Type, ...]:
    types: list[Type] = []
    for o in objects:
        for t, _ in root_types(o):
            if t not in types:
                types.append(t)
    return tuple(types)


def check_row_count(objects: Sequence[ObjectMeta], limit: int, path: str) -> None:
    """A LimitError when the objects claim more than ``limit`` rows (before any is read)."""
    rows = sum(o.length for o in objects)
    if rows > limit:
        raise LimitError(f"the file claims {rows:,} rows, over max_rows={limit:,}", path=path)
