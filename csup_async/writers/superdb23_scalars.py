"""The v23 writer's parts below the vector tree: the footer's metadata types, the writing
context (Ctx: the output, typedefs, where each vector lands), the Builder every vector
builder is, the union vector's tags and run lengths, and the builders of scalar values
(ints, floats, bools, bytes and strings, ip/net, type values, enums, nulls and none)."""

from __future__ import annotations

import ipaddress
from typing import Any

import lz4.block
import numpy as np

from ..format.bsup import encode_primitive
from ..format.bsup.valuecodec import as_int
from ..format.superdb import intcomp
from ..format.superdb.bsup2 import FusionType
from ..format.superdb.bsup5 import ALL_T, NONE, NONE_T
from ..format.superdb.bsup5w import Stream, TypeDefs, encode_value, main_type
from ..model.errors import EncodeError
from ..model.types import (
    NULL,
    ArrayType,
    EnumType,
    Field,
    NamedType,
    PrimitiveType,
    RecordType,
    Type,
)

# ------------------------------------------------- metadata record types ---
U8, U32, U64 = (PrimitiveType(n, i) for n, i in (("uint8", 0), ("uint32", 2), ("uint64", 3)))
I64, F64, STR, BYTES_T, TYPE_T, IP_T = (PrimitiveType(n, i) for n, i in (
    ("int64", 9), ("float64", 16), ("string", 25), ("bytes", 24), ("type", 28), ("ip", 26)))
SEGMENT = NamedType("Segment", RecordType((Field("Offset", U64), Field("Length", U64),
                                           Field("MemLength", U64),
                                           Field("CompressionFormat", U8))))
ID = NamedType("ID", U32)
ANY = FusionType(ALL_T)
PREFIX = NamedType("Prefix", RecordType(()))


def _meta(name: str, *fields: tuple[str, Type]) -> NamedType:
    return NamedType(name, RecordType(tuple(Field(n, t) for n, t in fields)))


M_FIELD = _meta("Field", ("Name", STR), ("Values", ID))
META = {
    "Record": _meta("Record", ("Length", U32), ("Fields", ArrayType(M_FIELD))),
    "Array": _meta("Array", ("Length", U32), ("Lengths", SEGMENT), ("Values", ID)),
    "Set": _meta("Set", ("Length", U32), ("Lengths", SEGMENT), ("Values", ID)),
    "Map": _meta("Map", ("Length", U32), ("Lengths", SEGMENT), ("Keys", ID), ("Values", ID)),
    "Union": _meta("Union", ("Length", U32), ("Tags", SEGMENT), ("Values", ArrayType(ID))),
    "Int": _meta("Int", ("Type", TYPE_T), ("Location", SEGMENT), ("Min", I64), ("Max", I64),
                 ("Count", U32)),
    "Uint": _meta("Uint", ("Type", TYPE_T), ("Location", SEGMENT), ("Min", U64), ("Max", U64),
                  ("Count", U32)),
    "Float": _meta("Float", ("Type", TYPE_T), ("Location", SEGMENT), ("Min", F64),
                   ("Max", F64), ("Count", U32)),
    "Bool": _meta("Bool", ("Location", SEGMENT), ("Count", U32)),
    "Bytes": _meta("Bytes", ("Type", TYPE_T), ("Bytes", SEGMENT), ("Offsets", SEGMENT),
                   ("Min", BYTES_T), ("Max", BYTES_T), ("Count", U32)),
    "TypeValue": _meta("TypeValue", ("Location", SEGMENT), ("Length", U32)),
    "IP": _meta("IP", ("Bytes", SEGMENT), ("Offsets", SEGMENT), ("Min", IP_T), ("Max", IP_T),
                ("Count", U32)),
    "Net": _meta("Net", ("Bytes", SEGMENT), ("Offsets", SEGMENT), ("Min", PREFIX),
                 ("Max", PREFIX), ("Count", U32)),
    "Null": _meta("Null", ("Count", U32)),
    "None": _meta("None", ("Count", U32)),
    "Named": _meta("Named", ("Name", STR), ("Values", ID)),
    "Error": _meta("Error", ("Values", ID)),
    "Enum": _meta("Enum", ("Symbols", ArrayType(STR)), ("Values", ID)),
    "Empty": _meta("Empty", ("Type", TYPE_T)),
    "Dynamic": _meta("Dynamic", ("Tags", SEGMENT), ("Values", ArrayType(ID)),
                     ("Length", U32)),
}


class Ctx:
    """One object being written: its data section, metadata values and typedefs."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.metas = Stream()
        self.typedefs = TypeDefs()
        self.n = 0

    def enter(self, kind: str, value: dict[str, Any]) -> int:
        t = META[kind]
        self.metas.add(t, encode_value(t, value))
        self.n += 1
        return self.n - 1

    def seg(self, raw: bytes, mem: int | None = None, compress: bool = False
            ) -> dict[str, int]:
        """Append ``raw`` to the data; its Segment (``mem``: the uncompressed size super
        records as Length for integer segments, whose MemLength is the stored size)."""
        off = len(self.data)
        fmt = 0
        stored = raw
        if compress and len(raw) > 1:
            z = lz4.block.compress(raw, store_size=False)
            if len(z) < len(raw):
                stored, fmt = z, 1
        self.data += stored
        if mem is not None:  # intcomp: Length the uncompressed bytes, MemLength stored
            return {"Offset": off, "Length": mem, "MemLength": len(stored),
                    "CompressionFormat": 0}
        return {"Offset": off, "Length": len(stored), "MemLength": len(raw),
                "CompressionFormat": fmt}

    def uint32s(self, vals: Any) -> dict[str, int]:
        arr = np.asarray(vals, dtype=np.uint64)
        return self.seg(intcomp.encode_uint32s(arr), 4 * arr.size if arr.size else 0)


# -------------------------------------------------------------- builders ---
class Builder:
    """Collects the values of one vector (one position in a type)."""

    def add(self, v: Any) -> None:
        raise NotImplementedError

    def count(self) -> int:
        raise NotImplementedError

    def mtype(self) -> Type:
        raise NotImplementedError

    def emit(self, c: Ctx) -> int:
        raise NotImplementedError


def _rle(tags: np.ndarray) -> list[int]:
    """super's run lengths of a two-member union's tags (``vector.RLE``): alternately
    runs of tag 1 and tag 0, starting with tag 1 (maybe 0 long); none when every tag
    is 0."""
    n = tags.size
    if n == 0 or not tags.any():
        return []
    change = np.flatnonzero(np.diff(tags)) + 1
    bounds = np.concatenate(([0], change, [n]))
    runs = np.diff(bounds).tolist()
    if tags[0] == 0:
        runs = [0, *runs]
    if tags[-1] == 0:  # super's RLE ends with the last run of values written out
        pass
    return runs


def emit_union(c: Ctx, tags: np.ndarray, members: list[tuple[Type, Any]]) -> int:
    """A union vector: ``members`` in super's order as (type, emit function or count)."""
    if len(members) == 2:
        seg = c.uint32s(_rle(tags))
    else:
        seg = c.uint32s(tags)
    ids = []
    for _, em in members:
        ids.append(em(c))
    return c.enter("Union", {"Length": int(tags.size), "Tags": seg, "Values": ids})


class NoneB(Builder):
    """Values of the none type (the elements of an empty array super typed ``[none]``)."""

    def __init__(self) -> None:
        self.n = 0

    def add(self, v: Any) -> None:
        if v is not NONE and v is not None:
            raise EncodeError(f"a value of type none can only be absent, not {v!r}")
        self.n += 1

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        return NONE_T

    def emit(self, c: Ctx) -> int:
        return c.enter("None", {"Count": self.n})


class NullB(Builder):
    def __init__(self) -> None:
        self.n = 0

    def add(self, v: Any) -> None:
        if v is not None:
            raise EncodeError(f"a value of type null can only be None, not {v!r}")
        self.n += 1

    def count(self) -> int:
        return self.n

    def mtype(self) -> Type:
        return NULL

    def emit(self, c: Ctx) -> int:
        return c.enter("Null", {"Count": self.n})


class IntB(Builder):
    def __init__(self, t: PrimitiveType, signed: bool) -> None:
        self.t, self.signed, self.vals = t, signed, []

    def add(self, v: Any) -> None:
        self.vals.append(as_int(self.t.name, v))

    def count(self) -> int:
        return len(self.vals)

    def mtype(self) -> Type:
        return self.t

    def emit(self, c: Ctx) -> int:
        try:
            arr = np.array(self.vals, dtype=np.int64 if self.signed else np.uint64)
        except OverflowError:
            raise EncodeError(f"a value does not fit in {self.t.name}") from None
        raw = intcomp.encode(arr, 64)
        seg = c.seg(raw, 8 * arr.size)
        lo = int(arr.min()) if arr.size else 0
        hi = int(arr.max()) if arr.size else 0
        return c.enter("Int" if self.signed else "Uint", {
            "Type": self.t, "Location": seg, "Min": lo, "Max": hi, "Count": arr.size})


class FloatB(Builder):
    def __init__(self, t: PrimitiveType) -> None:
        self.t, self.vals = t, []

    def add(self, v: Any) -> None:
        encode_primitive(self.t, v)  # the same checks as every writer: exact or refused
        self.vals.append(float(v))

    def count(self) -> int:
        return len(self.vals)

    def mtype(self) -> Type:
        return self.t

    def emit(self, c: Ctx) -> int:
        arr = np.array(self.vals, dtype="<f8")
        seg = c.seg(arr.tobytes(), compress=True)
        lo = float(np.min(arr)) if arr.size else 0.0
        hi = float(np.max(arr)) if arr.size else 0.0
        return c.enter("Float", {"Type": self.t, "Location": seg, "Min": lo, "Max": hi,
                                 "Count": arr.size})


class BoolB(Builder):
    def __init__(self) -> None:
        self.vals: list[bool] = []

    def add(self, v: Any) -> None:
        if not isinstance(v, bool | np.bool_):
            raise EncodeError(f"bool needs a bool, not {type(v).__name__}")
        self.vals.append(bool(v))

    def count(self) -> int:
        return len(self.vals)

    def mtype(self) -> Type:
        return PrimitiveType("bool", 23)

    def emit(self, c: Ctx) -> int:
        n = len(self.vals)
        bits = np.zeros(((n + 63) // 64) * 64, dtype=np.uint8)
        bits[:n] = self.vals
        raw = np.packbits(bits, bitorder="little").tobytes()
        return c.enter("Bool", {"Location": c.seg(raw, compress=True), "Count": n})


def _table(c: Ctx, items: list[bytes]) -> tuple[dict[str, int], dict[str, int]]:
    data = b"".join(items)
    offs = np.zeros(len(items) + 1, dtype=np.uint64)
    if items:
        np.cumsum([len(b) for b in items], out=offs[1:])
    return c.seg(data, compress=True), c.uint32s(offs)


class BytesB(Builder):
    def __init__(self, t: PrimitiveType) -> None:
        self.t, self.vals = t, []

    def add(self, v: Any) -> None:
        self.vals.append(encode_primitive(self.t, v))

    def count(self) -> int:
        return len(self.vals)

    def mtype(self) -> Type:
        return self.t

    def emit(self, c: Ctx) -> int:
        b, o = _table(c, self.vals)
        return c.enter("Bytes", {"Type": self.t, "Bytes": b, "Offsets": o,
                                 "Min": min(self.vals) if self.vals else None,
                                 "Max": max(self.vals) if self.vals else None,
                                 "Count": len(self.vals)})


class IPB(Builder):
    """ip (address bytes) and net (address bytes and one byte of prefix length)."""

    def __init__(self, net: bool) -> None:
        self.net, self.vals = net, []

    def add(self, v: Any) -> None:
        try:
            if self.net:
                n = v if isinstance(v, ipaddress.IPv4Network | ipaddress.IPv6Network) else (
                    ipaddress.ip_network(v))
                self.vals.append(n)
            else:
                a = v if isinstance(v, ipaddress.IPv4Address | ipaddress.IPv6Address) else (
                    ipaddress.ip_address(v))
                self.vals.append(a)
        except (TypeError, ValueError) as e:
            raise EncodeError(f"{'net' if self.net else 'ip'} value {v!r}: {e}") from None

    def count(self) -> int:
        return len(self.vals)

    def mtype(self) -> Type:
        return PrimitiveType("net", 27) if self.net else IP_T

    def emit(self, c: Ctx) -> int:
        if self.net:
            items = [n.network_address.packed + bytes((n.prefixlen,)) for n in self.vals]
        else:
            items = [a.packed for a in self.vals]
        b, o = _table(c, items)
        if self.net:
            return c.enter("Net", {"Bytes": b, "Offsets": o, "Min": {}, "Max": {},
                                   "Count": len(items)})
        lo = min(self.vals, key=_addr_key) if self.vals else None
        hi = max(self.vals, key=_addr_key) if self.vals else None
        return c.enter("IP", {"Bytes": b, "Offsets": o, "Min": lo, "Max": hi,
                              "Count": len(items)})


def _addr_key(a: Any) -> tuple[int, int]:
    return (a.version, int(a))  # netip.Addr.Compare: IPv4 before IPv6, then by value


class TypeB(Builder):
    def __init__(self) -> None:
        self.vals: list[Type] = []

    def add(self, v: Any) -> None:
        if not isinstance(v, Type):
            raise EncodeError(f"type needs a csup_async Type, not {type(v).__name__}")
        self.vals.append(main_type(v))

    def count(self) -> int:
        return len(self.vals)

    def mtype(self) -> Type:
        return TYPE_T

    def emit(self, c: Ctx) -> int:
        ids = [c.typedefs.lookup(t) for t in self.vals]
        return c.enter("TypeValue", {"Location": c.uint32s(ids), "Length": 0})


class EnumB(Builder):
    def __init__(self, t: EnumType) -> None:
        self.t, self.idx = t, IntB(U64, False)

    def add(self, v: Any) -> None:
        if isinstance(v, str):
            if v not in self.t.symbols:
                raise EncodeError(f"{v!r} is not a symbol of {self.t}")
            v = self.t.symbols.index(v)
        self.idx.add(v)

    def count(self) -> int:
        return self.idx.count()

    def mtype(self) -> Type:
        return self.t

    def emit(self, c: Ctx) -> int:
        vid = self.idx.emit(c)
        return c.enter("Enum", {"Symbols": list(self.t.symbols), "Values": vid})
