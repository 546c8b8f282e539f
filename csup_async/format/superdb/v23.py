"""CSUP version 23 (``super`` main, 2026): sections, trailers and metadata, as plain data.

A v23 file is one or more *parts* (``cat`` of two files is a file of two parts).
A part is a run of sections, each ``"CSUP"``, version (u32 LE, 23), a section
type byte: ``O`` (an object: a 36-byte data header of metadata, types and data
sizes and the root vector's ID, then those three sections; at most 120,000
values) or, last, ``F`` (the footer: u32 size, then a type value, the fused type
of every value in the part), and the part ends in a 16-byte trailer: the part's
size (u64 LE), the footer's type size (u32 LE), ``"CSUP"``.  So the end of a
file gives where each part starts and what it holds (its type), and the head
of each part gives its first object's metadata.

The metadata section is a BSUP version-5 stream (:mod:`.bsup5`) of one value
per vector, as for v16, with the vector kinds of super main: optional fields
are unions with ``none`` (two-member unions store run lengths, not tags),
``bool``, ``ip`` and ``net`` have their own vectors, type values are IDs into
the object's types section (a typedefs table), fusion and ``any`` vectors hold
their values' subtypes, ``null``/``none``/``empty`` vectors hold no data, and
arrays, sets, maps and type values leave their length out (it follows from the
uncompressed size of their offsets).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import Any

from ...model.errors import FormatError, TruncatedError
from ...model.types import BOOL, IP, NET, NULL, TYPE, EnumType, NamedType, RecordType, Type
from ..bsup import iter_tagged
from . import bsup5
from .compiled5 import decoder
from .meta import Header, Node, ObjectMeta, seg_of
from .tail import is_v23_tail  # noqa: F401 - importable from here, as before

VERSION = 23
WRITER = "super main (2026)"
SECTION_HEADER = 9
DATA_HEADER = 36
OBJECT_HEADER = SECTION_HEADER + DATA_HEADER
FOOTER_HEADER = SECTION_HEADER + 4
TRAILER = 16
MAGIC = b"CSUP"
MAX_META = 100 << 20
MAX_DATA = 2 << 30


@dataclass(frozen=True, slots=True)
class Trailer:
    part_size: int
    type_size: int


def parse_trailer(b: bytes | memoryview, end: int) -> Trailer:
    if len(b) != TRAILER or bytes(b[12:16]) != MAGIC:
        raise FormatError(f"no CSUP trailer before byte {end} (a v23 part ends in one)")
    size, tsize = struct.unpack_from("<QI", b, 0)
    if size > end or size < FOOTER_HEADER + tsize + TRAILER:
        raise FormatError(f"the CSUP trailer before byte {end} claims a part of {size} bytes "
                          f"with a {tsize}-byte footer type (does not fit)")
    return Trailer(size, tsize)


def parse_section(b: bytes | memoryview, at: int) -> str:
    """The section type (``"O"`` or ``"F"``) of the 9-byte section header ``b``."""
    if len(b) < SECTION_HEADER:
        raise TruncatedError(f"CSUP section header at byte {at} is cut short")
    if bytes(b[:4]) != MAGIC:
        raise FormatError(f"no CSUP section header at byte {at} (wrong format, or the "
                          "previous section's sizes are wrong)")
    (version,) = struct.unpack_from("<I", b, 4)
    if version != VERSION:
        raise FormatError(f"CSUP section at byte {at} has version {version} in a version-23 "
                          "file")
    kind = chr(b[8])
    if kind not in "OF":
        raise FormatError(f"CSUP section at byte {at} has unknown type {kind!r}")
    return kind


def parse_object_header(b: bytes | memoryview, at: int) -> Header:
    if parse_section(b, at) != "O":
        raise FormatError(f"CSUP section at byte {at} is a footer where an object belongs")
    if len(b) < OBJECT_HEADER:
        raise TruncatedError(f"CSUP object header at byte {at} is cut short")
    meta, types, data, root = struct.unpack_from("<QQQI", b, SECTION_HEADER)
    if meta > MAX_META or types > MAX_META or data > MAX_DATA:
        raise FormatError(f"CSUP object at byte {at} claims sections of {meta}, {types} "
                          f"and {data} bytes (over super's own limits)")
    return Header(VERSION, meta, types, data, root)


def parse_footer(b: bytes | memoryview, at: int, type_size: int) -> Type:
    """The fused type of the footer section at ``at`` (``b`` from there to the trailer)."""
    if parse_section(b, at) != "F":
        raise FormatError(f"CSUP section at byte {at} should be the part's footer")
    if len(b) < FOOTER_HEADER + type_size:
        raise TruncatedError(f"CSUP footer at byte {at} is cut short")
    (n,) = struct.unpack_from("<I", b, SECTION_HEADER)
    if n != type_size:
        raise FormatError(f"CSUP footer at byte {at} holds a {n}-byte type, its trailer "
                          f"says {type_size}")
    try:
        return _footer_type(bytes(b[FOOTER_HEADER:FOOTER_HEADER + n]))
    except FormatError as e:
        raise FormatError(f"CSUP footer at byte {at}: {e}") from None


@functools.lru_cache(maxsize=256)
def _footer_type(b: bytes) -> Type:
    """A footer's fused type, by its bytes: every open of a file parses its footer, and
    a wide fused type is hundreds of type values (types are immutable: shared)."""
    return bsup5.decode_type_value(b)


@dataclass(frozen=True, slots=True)
class ObjectMeta5(ObjectMeta):
    """A v23 object: also its types section (the typedefs its type-value, fusion and
    ``any`` vectors refer to), parsed on first use."""

    types_bytes: bytes = b""
    _table: list[Any] = field(default_factory=list, compare=False, repr=False)
    #: what reads learn of the object and keep with it (its top-level types, which
    #: fusion subtypes hold unions): the parse memo (readers.parsememo) hands the same
    #: object to every open of the same bytes, so a warm open learns nothing twice
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def typedefs(self) -> bsup5.TypeTable:
        if not self._table:
            t = bsup5.TypeTable()
            if self.types_bytes:
                vals = bsup5.read_values(self.types_bytes)
                if len(vals) != 1 or vals[0][0].kind != "primitive" or str(vals[0][0]) != (
                        "bytes"):
                    raise FormatError(f"CSUP object at byte {self.offset}: its types section "
                                      "is not one bytes value")
                if vals[0][1] is not None:
                    t.append_bytes(vals[0][1])
            self._table.append(t)
        return self._table[0]


@dataclass(frozen=True, slots=True)
class Part:
    start: int
    footer: int  # offset of the F section
    end: int
    fused: Type


def _count_of(seg: Any, what: str, width: int = 4) -> int:
    """Values an offsets/IDs segment holds, from its uncompressed size (``Length``)."""
    try:
        n = int(seg["Length"])
    except (KeyError, TypeError, ValueError):
        raise FormatError(f"{what}: a segment lacks its Length") from None
    if n % width:
        raise FormatError(f"{what}: a uint32 segment of {n} bytes")
    return n // width


def _node(t: Type, body: Any, what: str) -> Node:
    if not isinstance(t, NamedType):
        raise FormatError(f"{what}: metadata value of type {t} is not a named vector kind")
    kind = t.name.lower()
    d = decoder(t)(body)  # bsup5.decode_value(t, body), by a closure made once per type
    if not isinstance(d, dict):
        raise FormatError(f"{what}: metadata value of {t.name} is not a record")

    def ids(v: Any) -> tuple[int, ...]:
        return tuple(int(x) for x in (v or ()))

    def typ(v: Any) -> Type:
        if not isinstance(v, Type):
            raise FormatError(f"{what}: {t.name} metadata's Type is not a type")
        return v

    try:
        if kind in ("int", "uint", "float"):
            return Node(kind, int(d["Count"]), (("values", seg_of(d["Location"], what)),),
                        type=typ(d.get("Type")), min=d.get("Min"), max=d.get("Max"))
        if kind == "bytes":
            return Node(kind, int(d["Count"]), (("bytes", seg_of(d["Bytes"], what)),
                                                ("offsets", seg_of(d["Offsets"], what))),
                        type=typ(d.get("Type")), min=d.get("Min"), max=d.get("Max"))
        if kind in ("ip", "net"):
            return Node(kind, int(d["Count"]), (("bytes", seg_of(d["Bytes"], what)),
                                                ("offsets", seg_of(d["Offsets"], what))),
                        type=IP if kind == "ip" else NET, min=d.get("Min"), max=d.get("Max"))
        if kind == "bool":
            return Node(kind, int(d["Count"]), (("values", seg_of(d["Location"], what)),),
                        type=BOOL)
        if kind == "typevalue":
            return Node(kind, _count_of(d["Location"], what),
                        (("values", seg_of(d["Location"], what)),), type=TYPE)
        if kind in ("null", "none"):
            return Node(kind, int(d["Count"]), type=NULL if kind == "null" else bsup5.NONE_T)
        if kind == "empty":
            return Node(kind, 0, type=typ(d.get("Type")))
        if kind == "const":  # Value is a super.Value: marshalled as any (body, type)
            vt, value = const_value(t, body, what)
            return Node(kind, int(d["Count"]), type=vt, value=value)
        if kind == "dict":
            return Node(kind, int(d["Length"]), (("counts", seg_of(d["Counts"], what)),
                                                 ("index", seg_of(d["Index"], what))),
                        kids=(int(d["Values"]),))
        if kind == "record":
            fs = d.get("Fields") or []
            return Node(kind, int(d["Length"]), kids=tuple(int(f["Values"]) for f in fs),
                        fields=tuple((str(f["Name"]), False) for f in fs))
        if kind in ("array", "set"):
            n = max(_count_of(d["Lengths"], what) - 1, 0)
            return Node(kind, n, (("lengths", seg_of(d["Lengths"], what)),),
                        kids=(int(d["Values"]),))
        if kind == "map":
            n = max(_count_of(d["Lengths"], what) - 1, 0)
            return Node(kind, n, (("lengths", seg_of(d["Lengths"], what)),),
                        kids=(int(d["Keys"]), int(d["Values"])))
        if kind in ("union", "dynamic"):
            return Node(kind, int(d["Length"]), (("tags", seg_of(d["Tags"], what)),),
                        kids=ids(d.get("Values")))
        if kind == "named":
            return Node(kind, kids=(int(d["Values"]),), name=str(d["Name"]))
        if kind == "error":
            return Node(kind, kids=(int(d["Values"]),))
        if kind == "enum":
            syms = tuple(str(s) for s in (d.get("Symbols") or ()))
            return Node(kind, kids=(int(d["Values"]),), type=EnumType(syms))
        if kind == "fusion":  # the subtypes' vector is kept aside: values need not read it
            return Node(kind, kids=(int(d["Values"]),), value=int(d["Subtypes"]))
        if kind == "any":
            return Node(kind, kids=(int(d["Values"]), int(d["Subtypes"])))
    except (KeyError, TypeError, ValueError, AttributeError):
        raise FormatError(f"{what}: {t.name} metadata lacks a field it needs") from None
    raise FormatError(f"{what}: unknown vector kind {t.name!r}")


def const_value(t: NamedType, body: Any, what: str) -> tuple[Type, Any]:
    """The type and value a Const vector's metadata holds (its ``Value`` field is an
    ``any``: the value's body and its type value)."""
    rt = t.inner
    if not isinstance(rt, RecordType) or body is None:
        raise FormatError(f"{what}: Const metadata is not a record")
    names = [f.name for f in rt.fields]
    if "Value" not in names:
        raise FormatError(f"{what}: Const metadata lacks its value")
    parts = list(iter_tagged(body, 0, len(body)))
    if len(parts) != len(names):
        raise FormatError(f"{what}: Const metadata does not match its type")
    raw = parts[names.index("Value")]
    ft = rt.fields[names.index("Value")].type
    if isinstance(ft, bsup5.FusionType):
        if raw is None:
            raise FormatError(f"{what}: Const metadata's value is null")
        inner = list(iter_tagged(raw, 0, len(raw)))
        if len(inner) != 2 or inner[1] is None:
            raise FormatError(f"{what}: Const value is not a value and its type")
        vt = bsup5.decode_type_value(inner[1])
        return vt, bsup5.decode_value(vt, inner[0], typed=True, empty=True)
    return ft, bsup5.decode_value(ft, raw, typed=True, empty=True)


def parse_metadata(buf: bytes | memoryview, offset: int, header: Header,
                   types: bytes = b"") -> ObjectMeta5:
    """The metadata section of the v23 object at ``offset`` (``types``: its types section)."""
    what = f"CSUP object at byte {offset}"
    try:
        vals = bsup5.read_values(buf)
        nodes = tuple(_node(t, b, what) for t, b in vals)
    except FormatError as e:
        raise FormatError(f"{what}: {e}") if not str(e).startswith(what) else e from None
    if header.root >= len(nodes):
        raise FormatError(f"{what}: root ID {header.root} is past its {len(nodes)} vectors")
    for i, n in enumerate(nodes):
        refs = n.kids + ((n.value,) if n.kind == "fusion" else ())
        for k in refs:
            if k >= i or k < 0:
                raise FormatError(f"{what}: vector {i} refers to vector {k} "
                                  "(not an earlier one)")
        for _, s in n.segs:
            if s.offset + s.size > header.data_size:
                raise FormatError(f"{what}: segment at {s.offset}+{s.size} runs past the "
                                  f"{header.data_size}-byte data section")
    return ObjectMeta5(offset, header, nodes, bytes(types))


def node_type5(nodes: tuple[Node, ...], i: int, depth: int = 0) -> Type | None:
    """The v23 kinds :func:`.meta.node_type` does not know (None: ask it)."""
    n = nodes[i]
    if n.kind in ("bool", "ip", "net", "typevalue", "null", "none", "empty", "enum"):
        return n.type
    if n.kind == "any":
        return bsup5.ALL_T
    return None
