"""SuperDB v14/v16 metadata values straight to :class:`~.meta.Node`, one builder per type.

:func:`.meta.node_of` decodes a metadata value into the Go marshaller's record (a dict
of dicts, through :mod:`.compiled`) and then picks the fields a Node keeps.  For the
kinds a projection walks (records, dynamics and unions, bytes, dicts, numbers, consts,
arrays) the builders here split the body once and read those fields where they are,
for metadata types of exactly the shape ``super`` writes (checked once per type).

A builder answers what :func:`.meta.node_of` answers for every body it accepts; for any
other body it raises, and the caller asks :func:`.meta.node_of`, which gives the node or
the one error message that body has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...model.types import ArrayType, NamedType, PrimitiveType, RecordType, Type
from ..bsup.tags import split_tagged
from .bsup2 import Dialect, OptField, decode_type_value
from .compiled import decoder
from .nodes import Node, Seg

Build = Callable[[Any], Node]
_SEGMENT = ("Offset", "uint64"), ("Length", "uint64"), ("MemLength", "uint64"), (
    "CompressionFormat", "uint8")
#: Builders by (id of the type, dialect version); the type is kept so its id stays its own.
_MADE: dict[tuple[int, int], tuple[Type, Build | None]] = {}
_TYPES: dict[tuple[bytes, int], Type] = {}


#: A segment of four zero integers (a required field's Nones) and what it is.
_ZERO_SEGMENT = b"\x01\x01\x01\x01"
_NO_NONES = Seg(0, 0, 0, False)


class _Slow(Exception):
    """A body the builders leave to :func:`.meta.node_of`."""


def builder(t: Type, dialect: Dialect) -> Build | None:
    """``body -> Node`` for metadata values of type ``t``, or None (a kind or a shape
    left to :func:`.meta.node_of`)."""
    key = (id(t), dialect.version)
    got = _MADE.get(key)
    if got is not None and got[0] is t:
        return got[1]
    made = _make(t, dialect)
    if len(_MADE) >= 4096:
        _MADE.clear()
    _MADE[key] = (t, made)
    return made


def _shape(t: Type) -> dict[str, Type] | None:
    """A metadata record's fields by name (None: not a plain record)."""
    if not isinstance(t, NamedType) or not isinstance(t.inner, RecordType):
        return None
    fields = t.inner.fields
    if any(isinstance(f, OptField) for f in fields):
        return None
    return {f.name: f.type for f in fields}


def _is_segment(t: Type | None) -> bool:
    while isinstance(t, NamedType):
        t = t.inner
    return isinstance(t, RecordType) and not any(isinstance(f, OptField) for f in t.fields) \
        and tuple((f.name, _prim(f.type)) for f in t.fields) == _SEGMENT


def _prim(t: Type | None) -> str | None:
    while isinstance(t, NamedType):
        t = t.inner
    return t.name if isinstance(t, PrimitiveType) else None


def _uint(b: Any, width: int = 8) -> int:
    """An unsigned int of at most ``width`` bytes (anything else: the slow path says)."""
    if b is None or len(b) > width:
        raise _Slow
    return int.from_bytes(b, "little")


def _u32(b: Any) -> int:
    return _uint(b, 4)


def _seg(b: Any) -> Seg:
    if b is None:
        raise _Slow
    p = split_tagged(b)
    if len(p) != 4:
        raise _Slow
    off, length, mem, fmt = _uint(p[0]), _uint(p[1]), _uint(p[2]), _uint(p[3], 1)
    if fmt > 1:
        raise _Slow
    return Seg(off, length if fmt else mem, mem, bool(fmt))


def _type_of(dialect: Dialect) -> Callable[[Any], Type]:
    v = dialect.version

    def type_of(b: Any) -> Type:
        if b is None:
            raise _Slow
        key = (bytes(b), v)
        got = _TYPES.get(key)
        if got is None:
            got = decode_type_value(b, dialect)
            if len(_TYPES) >= 4096:
                _TYPES.clear()
            _TYPES[key] = got
        return got
    return type_of


def _ids(b: Any) -> tuple[int, ...]:
    if b is None:
        raise _Slow
    return tuple(_u32(x) for x in split_tagged(b))


def _make(t: Type, dialect: Dialect) -> Build | None:
    shape = _shape(t)
    if shape is None:
        return None
    kind = t.name.lower()  # type: ignore[attr-defined]
    names = list(shape)
    at = {n: i for i, n in enumerate(names)}
    count = len(names)
    segs = [n for n, ft in shape.items() if _is_segment(ft)]
    uints = {n for n, ft in shape.items() if _prim(ft) == "uint32"}  # counts and IDs

    def parts(b: Any) -> list[Any]:
        if b is None:
            raise _Slow
        p = split_tagged(b)
        if len(p) != count:
            raise _Slow
        return p

    if kind in ("int", "uint", "float", "primitive", "bytes"):
        roles = (("values", "Location"),) if kind != "bytes" else (
            ("bytes", "Bytes"), ("offsets", "Offsets"))
        if not (set(at) == {"Type", "Count", "Min", "Max", *(f for _, f in roles)}
                and "Count" in uints
                and _prim(shape["Type"]) == "type" and all(f in segs for _, f in roles)):
            return None
        type_of = _type_of(dialect)
        lo, hi = decoder(shape["Min"], dialect), decoder(shape["Max"], dialect)
        it, ic, imin, imax = at["Type"], at["Count"], at["Min"], at["Max"]
        iroles = [(r, at[f]) for r, f in roles]

        def number(b: Any) -> Node:
            p = parts(b)
            return Node(kind, _u32(p[ic]), tuple((r, _seg(p[i])) for r, i in iroles),
                        type=type_of(p[it]), min=lo(p[imin]), max=hi(p[imax]))
        return number
    if kind == "const":
        if set(at) != {"Value", "Count"} or "Count" not in uints:
            return None
        vt, value = shape["Value"], decoder(shape["Value"], dialect)
        iv, ic = at["Value"], at["Count"]
        return lambda b: (lambda p: Node(kind, _u32(p[ic]), type=vt, value=value(p[iv])))(
            parts(b))
    if kind == "dict":
        if not (set(at) == {"Values", "Counts", "Index", "Length"} and
                {"Counts", "Index"} <= set(segs) and {"Length", "Values"} <= uints):
            return None
        iv, icn, ix, il = at["Values"], at["Counts"], at["Index"], at["Length"]
        return lambda b: (lambda p: Node(kind, _u32(p[il]), (
            ("counts", _seg(p[icn])), ("index", _seg(p[ix]))), kids=(_u32(p[iv]),)))(parts(b))
    if kind in ("array", "set"):
        if not (set(at) == {"Length", "Lengths", "Values"} and "Lengths" in segs
                and {"Length", "Values"} <= uints):
            return None
        il, ils, iv = at["Length"], at["Lengths"], at["Values"]
        return lambda b: (lambda p: Node(kind, _u32(p[il]), (("lengths", _seg(p[ils])),),
                                         kids=(_u32(p[iv]),)))(parts(b))
    if kind in ("union", "dynamic"):
        vals = shape.get("Values")
        while isinstance(vals, NamedType):
            vals = vals.inner
        if not (set(at) == {"Tags", "Values", "Length"} and "Tags" in segs
                and "Length" in uints and isinstance(vals, ArrayType)
                and _prim(vals.elem) == "uint32"):
            return None
        it, iv, il = at["Tags"], at["Values"], at["Length"]
        return lambda b: (lambda p: Node(kind, _u32(p[il]), (("tags", _seg(p[it])),),
                                         kids=_ids(p[iv])))(parts(b))
    if kind == "record":
        return _record(shape, at, parts)
    return None


def _record(shape: dict[str, Type], at: dict[str, int], parts: Callable[[Any], list[Any]]
            ) -> Build | None:
    fields_t = shape.get("Fields")
    while isinstance(fields_t, NamedType):
        fields_t = fields_t.inner
    if not isinstance(fields_t, ArrayType) or set(at) != {"Length", "Fields"} or (
            _prim(shape["Length"]) != "uint32"):
        return None
    f = _shape(fields_t.elem) if isinstance(fields_t.elem, NamedType) else None
    if f is None or list(f) != ["Name", "Values", "Opt", "Nones"] or _prim(f["Name"]) != (
            "string") or _prim(f["Opt"]) != "bool" or not _is_segment(f["Nones"]) or (
            _prim(f["Values"]) != "uint32"):
        return None
    il, ifs = at["Length"], at["Fields"]

    def record(b: Any) -> Node:
        p = parts(b)
        if p[ifs] is None:
            raise _Slow
        names, kids, segs = [], [], []
        data = bytes(p[ifs])
        n, pos, i = len(data), 0, 0
        while pos < n:  # each field's record read in place (one-byte tags: else refused)
            end = pos + data[pos]
            q = pos + 1
            if end == pos or end > n or data[pos] >= 0x80:
                raise _Slow
            t = data[q]  # Name
            if t == 0 or t >= 0x80:
                raise _Slow
            name = data[q + 1:q + t].decode("utf-8")
            q += t
            t = data[q]  # Values: a uint32
            if t == 0 or t > 5:
                raise _Slow
            kid = int.from_bytes(data[q + 1:q + t], "little")
            q += t
            if data[q] != 2 or data[q + 1] > 1:  # Opt: one byte, 0 or 1
                raise _Slow
            opt = data[q + 1] == 1
            q += 2
            t = data[q]  # Nones
            if t == 0 or t >= 0x80 or q + t != end:
                raise _Slow
            nones = data[q + 1:end]  # every field's is judged, as node_of's decoding does
            seg = _NO_NONES if nones == _ZERO_SEGMENT else _seg(nones)
            names.append((name, opt))
            kids.append(kid)
            if opt:
                segs.append((f"nones:{i}", seg))
            pos, i = end, i + 1
        return Node("record", _u32(p[il]), tuple(segs), kids=tuple(kids), fields=tuple(names))
    return record
