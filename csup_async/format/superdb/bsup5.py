"""Super Binary version 5 (``super`` main, 2026): the metadata, types section and
footer of a CSUP version-23 file, read and written.

What differs from version 2 (:mod:`.bsup2`): the frame version byte is ``0x85``;
primitive IDs run to 31 (``none`` 30, ``all`` 31, the values of ``any``) and
typedefs start at 32; a record typedef has no optional flags (an optional field
is a union with ``none``, ``x?:T`` being ``x:T|none``); a named typedef holds a
4-byte big-endian ID of its inner type that may point forward (recursive types
are declared before their inner type is defined); type values use the codes
32-41 (record, array, set, map, union, enum, error, name definition, name
reference, fusion) and a record type value has no optional bitmap.  The same
typedefs table is what a CSUP types section holds (as one ``bytes`` value).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...model.errors import FormatError, TruncatedError, UnsupportedTypeError
from ...model.kinds import map_value
from ...model.types import (
    PRIMITIVES,
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
from ...model.values import UnionValue, Value
from ..bsup import decode_primitive, iter_tagged, read_uvarint
from .bsup2 import Dialect, FusionType, OptField, frame_values, frames

V5 = Dialect(5, 32, 30)
FIRST_TYPEDEF = 32
#: ``none``: the absent value of an optional field; ``all``: the type ``any`` fuses to.
NONE_T = PrimitiveType("none", 30)
ALL_T = PrimitiveType("all", 31)
MAX_FIELDS = 1_000_000
TV_RECORD, TV_ARRAY, TV_SET, TV_MAP, TV_UNION, TV_ENUM, TV_ERROR = range(32, 39)
TV_NAMEDEF, TV_NAMEREF, TV_FUSION = 39, 40, 41
TD_RECORD, TD_ARRAY, TD_SET, TD_MAP, TD_UNION, TD_ENUM, TD_ERROR, TD_NAMED, TD_FUSION = range(9)


class _None:
    """The value of the ``none`` type (an absent optional field)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NONE"


NONE = _None()


@dataclass(frozen=True, slots=True)
class RecRef(Type):
    """A recursive reference to the named type ``name`` being defined around it."""

    name: str

    @property
    def kind(self) -> str:
        return "named"

    def __str__(self) -> str:
        return self.name


def primitive(tid: int) -> Type:
    if tid < 30:
        return PRIMITIVES[tid]
    if tid == 30:
        return NONE_T
    if tid == 31:
        return ALL_T
    raise FormatError(f"type ID {tid} is not a primitive")


def option_parts(t: Type) -> tuple[Type, bool]:
    """``(T, True)`` for an option union ``T|none`` (several others: their union)."""
    if isinstance(t, UnionType) and NONE_T in t.types:
        rest = tuple(m for m in t.types if m != NONE_T)
        if len(rest) == 1:
            return rest[0], True
        return UnionType(rest), True
    return t, False


_KINDS = {"primitive": 0, "record": 1, "array": 2, "set": 3, "map": 4, "union": 5,
          "enum": 6, "error": 7, "fusion": 8}


def _kind(t: Type) -> int:
    if isinstance(t, PrimitiveType):
        return 0
    return _KINDS.get(t.kind, 0)


def compare_types(a: Type, b: Type) -> int:
    """super's type order (``CompareTypes``): what sorts a union's members, so tags
    written here mean what super's reader takes them to mean."""
    if a == b:
        return 0
    an, bn = isinstance(a, NamedType | RecRef), isinstance(b, NamedType | RecRef)
    if an:
        if bn and a.name != b.name:  # type: ignore[union-attr]
            return -1 if a.name < b.name else 1  # type: ignore[union-attr]
        return -1
    if bn:
        return 1
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return -1 if ka < kb else 1
    if isinstance(a, PrimitiveType) and isinstance(b, PrimitiveType):
        return (a.id > b.id) - (a.id < b.id)
    if isinstance(a, RecordType) and isinstance(b, RecordType):
        if len(a.fields) != len(b.fields):
            return -1 if len(a.fields) < len(b.fields) else 1
        for fa, fb in zip(a.fields, b.fields, strict=True):
            if fa.name != fb.name:
                return -1 if fa.name < fb.name else 1
        for fa, fb in zip(a.fields, b.fields, strict=True):
            c = compare_types(field_type(fa), field_type(fb))
            if c:
                return c
        return 0
    if isinstance(a, ArrayType | SetType) and isinstance(b, ArrayType | SetType):
        return compare_types(a.elem, b.elem)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return compare_types(a.key, b.key) or compare_types(a.value, b.value)
    if isinstance(a, UnionType) and isinstance(b, UnionType):
        if len(a.types) != len(b.types):
            return -1 if len(a.types) < len(b.types) else 1
        for x, y in zip(a.types, b.types, strict=True):
            c = compare_types(x, y)
            if c:
                return c
        return 0
    if isinstance(a, EnumType) and isinstance(b, EnumType):
        if len(a.symbols) != len(b.symbols):
            return -1 if len(a.symbols) < len(b.symbols) else 1
        for x, y in zip(a.symbols, b.symbols, strict=True):
            if x != y:
                return -1 if x < y else 1
        return 0
    if isinstance(a, ErrorType) and isinstance(b, ErrorType):
        return compare_types(a.inner, b.inner)
    return 0


def sort_union(types: Iterable[Type]) -> UnionType:
    """A union of ``types`` as super builds it: flattened, unique, in super's order."""
    flat: list[Type] = []
    for t in types:
        for m in (t.types if isinstance(t, UnionType) else (t,)):
            if m not in flat:
                flat.append(m)
    return UnionType(tuple(sorted(flat, key=functools.cmp_to_key(compare_types))))


def field_type(f: Field) -> Type:
    """The type a field's values have in the encoding (``x?:T`` is ``T|none``)."""
    if isinstance(f, OptField):
        return sort_union((f.type, NONE_T))
    return f.type


def columnar(t: Type) -> Type:
    """``t`` for a scan's columns: ``none`` (the elements of an empty array super typed
    ``[none]``, an always-absent field) becomes ``null``; unions that then repeat a
    member lose the repeat."""
    if t == NONE_T:
        return PRIMITIVES[29]
    if isinstance(t, RecordType):
        return RecordType(tuple(type(f)(f.name, columnar(f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(columnar(t.elem))
    if isinstance(t, SetType):
        return SetType(columnar(t.elem))
    if isinstance(t, MapType):
        return MapType(columnar(t.key), columnar(t.value))
    if isinstance(t, UnionType):
        ms: list[Type] = []
        for m in t.types:
            c = columnar(m)
            if c not in ms:
                ms.append(c)
        return ms[0] if len(ms) == 1 else UnionType(tuple(ms))
    if isinstance(t, ErrorType):
        return ErrorType(columnar(t.inner))
    if isinstance(t, NamedType):
        return NamedType(t.name, columnar(t.inner))
    return t


def defused(t: Type) -> Type:
    """``t`` with each fusion type (but ``any``) replaced by its supertype, as
    :func:`decode_value` decodes a fusion value (by its supertype): what a BSUP stream's
    values are as columns, and the super types CSUP v23 gives the same values."""
    if isinstance(t, FusionType):
        return t if t.inner == ALL_T else defused(t.inner)
    if isinstance(t, RecordType):
        return RecordType(tuple(type(f)(f.name, defused(f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(defused(t.elem))
    if isinstance(t, SetType):
        return SetType(defused(t.elem))
    if isinstance(t, MapType):
        return MapType(defused(t.key), defused(t.value))
    if isinstance(t, UnionType):
        return UnionType(tuple(dict.fromkeys(defused(m) for m in t.types)))
    if isinstance(t, ErrorType):
        return ErrorType(defused(t.inner))
    if isinstance(t, NamedType):
        return NamedType(t.name, defused(t.inner))
    return t


def record_of(fields: list[tuple[str, Type]]) -> RecordType:
    """A record type with option-union fields shown as optional fields (``x?:T``)."""
    out = []
    for name, t in fields:
        inner, opt = option_parts(t)
        out.append(OptField(name, inner) if opt else Field(name, t))
    return RecordType(tuple(out))


# ------------------------------------------------------------- typedefs ---
def record_fields(data: bytes, pos: int, n: int, top: int
                  ) -> tuple[tuple[tuple[str, int], ...], int] | None:
    """A record typedef's ``n`` fields from ``pos`` (type IDs below ``top``) and the
    position after them, where every name length and ID is one byte and fits (what
    super writes for all but the widest tables); None: :meth:`TypeTable.append_bytes`
    reads them one by one, with its errors."""
    end = len(data)
    out = []
    for _ in range(n):
        if pos >= end:
            return None
        ln = data[pos]
        at = pos + 1 + ln
        if ln >= 0x80 or at >= end:
            return None
        tid = data[at]
        if tid >= 0x80 or tid >= top:
            return None
        out.append((data[pos + 1:at].decode("utf-8", "replace"), tid))
        pos = at + 1
    return tuple(out), pos


class TypeTable:
    """A typedefs table (BSUP types frames, or a CSUP types section): IDs 32, 33, ...

    Entries are parsed eagerly (their bytes checked) and turned into types on
    demand; a named typedef's inner ID may point forward, so resolution follows
    IDs, stopping a recursion at a :class:`RecRef`."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, Any]] = []
        self._cache: dict[int, Type] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def append_bytes(self, b: bytes | memoryview) -> None:
        data = bytes(b)  # indexing bytes is cheaper than a memoryview (a table of 10 KB)
        pos, end = 0, len(data)

        def uv() -> int:
            nonlocal pos
            if pos < end and data[pos] < 0x80:  # one byte: nearly every length and ID
                pos += 1
                return data[pos - 1]
            v, pos = read_uvarint(data, pos, end)
            return v

        def name() -> str:
            nonlocal pos
            n = uv()
            if pos + n > end:
                raise TruncatedError("BSUP typedef name runs past its frame")
            s = data[pos:pos + n].decode("utf-8", "replace")
            pos += n
            return s

        def ref() -> int:
            tid = uv()
            if tid >= FIRST_TYPEDEF + len(self.entries):
                raise FormatError(f"BSUP typedef refers to type ID {tid}, not defined before it")
            return tid

        while pos < end:
            code = data[pos]
            pos += 1
            entry: Any
            if code == TD_RECORD:
                n = uv()
                if n > MAX_FIELDS or n > end - pos:
                    raise FormatError(f"BSUP record typedef of {n} fields")
                entry = record_fields(data, pos, n, FIRST_TYPEDEF + len(self.entries))
                if entry is None:  # a long name or ID, or bad bytes: field by field
                    entry = tuple((name(), ref()) for _ in range(n))
                else:
                    entry, pos = entry
            elif code in (TD_ARRAY, TD_SET, TD_ERROR, TD_FUSION):
                entry = ref()
            elif code == TD_MAP:
                entry = (ref(), ref())
            elif code == TD_UNION:
                n = uv()
                if n > end - pos:
                    raise FormatError(f"BSUP union typedef of {n} types")
                entry = tuple(ref() for _ in range(n))
            elif code == TD_ENUM:
                n = uv()
                if n > end - pos:
                    raise FormatError(f"BSUP enum typedef of {n} symbols")
                entry = tuple(name() for _ in range(n))
            elif code == TD_NAMED:
                nm = name()
                if pos + 4 > end:
                    raise TruncatedError("BSUP named typedef runs past its frame")
                (inner,) = struct.unpack_from(">I", data, pos)
                pos += 4
                entry = (nm, inner)
            else:
                raise FormatError(f"unknown BSUP typedef code {code}")
            self.entries.append((code, entry))
        # forward references of named typedefs must land inside the table
        top = FIRST_TYPEDEF + len(self.entries)
        for code, entry in self.entries:
            if code == TD_NAMED and entry[1] >= top:
                raise FormatError(f"named type {entry[0]!r} refers to type ID {entry[1]}, "
                                  "not in its table")

    def lookup(self, tid: int) -> Type:
        if tid < FIRST_TYPEDEF:
            return primitive(tid)
        t = self._cache.get(tid)
        if t is None:
            t = self._resolve(tid, ())
            self._cache[tid] = t
        return t

    def _resolve(self, tid: int, naming: tuple[str, ...]) -> Type:
        if tid < FIRST_TYPEDEF:
            return primitive(tid)
        i = tid - FIRST_TYPEDEF
        if i >= len(self.entries):
            raise FormatError(f"type ID {tid} is not defined (table of {len(self.entries)})")
        if len(naming) > 200:
            raise FormatError("types nested too deeply")
        code, e = self.entries[i]

        def r(k: int) -> Type:
            return self._resolve(k, naming)

        if code == TD_RECORD:
            return record_of([(n, r(k)) for n, k in e])
        if code == TD_ARRAY:
            return ArrayType(r(e))
        if code == TD_SET:
            return SetType(r(e))
        if code == TD_ERROR:
            return ErrorType(r(e))
        if code == TD_FUSION:
            return FusionType(r(e))
        if code == TD_MAP:
            return MapType(r(e[0]), r(e[1]))
        if code == TD_UNION:
            return UnionType(tuple(r(k) for k in e))
        if code == TD_ENUM:
            return EnumType(e)
        nm, inner = e
        if nm in naming:
            return RecRef(nm)
        return NamedType(nm, self._resolve(inner, (*naming, nm)))


# ---------------------------------------------------------- type values ---
def decode_type_value(b: bytes | memoryview) -> Type:
    """A type value in main's encoding (``type`` values, Const metadata, the footer)."""
    mv = memoryview(b)
    t, pos = _tv(mv, 0, {}, 0)
    if pos != len(mv):
        raise FormatError("type value has trailing bytes")
    return t


def _tv(mv: memoryview, pos: int, names: dict[str, Type | None], depth: int
        ) -> tuple[Type, int]:
    if depth > 200:
        raise FormatError("type value nested too deeply")
    if pos >= len(mv):
        raise TruncatedError("type value runs past its body")
    code = mv[pos]
    pos += 1

    def name(pos: int) -> tuple[str, int]:
        n, pos = read_uvarint(mv, pos)
        if pos + n > len(mv):
            raise TruncatedError("type value name runs past its body")
        return bytes(mv[pos:pos + n]).decode("utf-8", "replace"), pos + n

    d = depth + 1
    if code < FIRST_TYPEDEF:
        return primitive(code), pos
    if code == TV_RECORD:
        n, pos = read_uvarint(mv, pos)
        if n > len(mv) - pos:
            raise FormatError(f"record type value of {n} fields")
        fields = []
        for _ in range(n):
            fname, pos = name(pos)
            ft, pos = _tv(mv, pos, names, d)
            fields.append((fname, ft))
        return record_of(fields), pos
    if code in (TV_ARRAY, TV_SET, TV_ERROR, TV_FUSION):
        inner, pos = _tv(mv, pos, names, d)
        wrap = {TV_ARRAY: ArrayType, TV_SET: SetType, TV_ERROR: ErrorType,
                TV_FUSION: FusionType}[code]
        return wrap(inner), pos
    if code == TV_MAP:
        k, pos = _tv(mv, pos, names, d)
        v, pos = _tv(mv, pos, names, d)
        return MapType(k, v), pos
    if code == TV_UNION:
        n, pos = read_uvarint(mv, pos)
        if n > len(mv) - pos:
            raise FormatError(f"union type value of {n} types")
        members = []
        for _ in range(n):
            m, pos = _tv(mv, pos, names, d)
            members.append(m)
        return UnionType(tuple(members)), pos
    if code == TV_ENUM:
        n, pos = read_uvarint(mv, pos)
        if n > len(mv) - pos:
            raise FormatError(f"enum type value of {n} symbols")
        syms = []
        for _ in range(n):
            s, pos = name(pos)
            syms.append(s)
        return EnumType(tuple(syms)), pos
    if code == TV_NAMEDEF:
        nm, pos = name(pos)
        names.setdefault(nm, None)  # declared: a reference inside is recursive
        inner, pos = _tv(mv, pos, names, d)
        t = NamedType(nm, inner)
        names[nm] = t
        return t, pos
    if code == TV_NAMEREF:
        nm, pos = name(pos)
        if nm not in names:
            raise FormatError(f"type value refers to undefined name {nm!r}")
        got = names[nm]
        return (RecRef(nm) if got is None else got), pos
    raise FormatError(f"unknown type value code {code}")


# --------------------------------------------------------------- values ---
def read_values(buf: bytes | memoryview) -> list[tuple[Type, memoryview | None]]:
    """Every ``(type, body)`` of a BSUP version-5 section of one or more streams."""
    out: list[tuple[Type, memoryview | None]] = []
    table = TypeTable()
    for kind, payload in frames(buf, V5):
        if kind == -1:
            table = TypeTable()
            continue
        assert payload is not None
        if kind == 0:
            table.append_bytes(payload)
        elif kind == 1:
            out.extend(frame_values(payload, table.lookup))
    return out


def _empty_when_nil(t: Type) -> bool:
    """Whether a nil body (tag 0) of type ``t`` is its empty value: super main keys
    nullness on the type alone (``Value.IsNull`` is the null type), so its writers emit a
    zero-length string, bytes or container with tag 0 (its JSON reader's ``""``) and its
    readers take it as empty.  Other types keep a nil body as null, as before, and so
    does metadata (a nil min/max is "none", not an empty string): callers that decode
    data ask for it (``empty=True``)."""
    while isinstance(t, NamedType):
        t = t.inner
    if isinstance(t, PrimitiveType):
        return t.name in ("string", "bytes")
    return isinstance(t, ArrayType | SetType | MapType)


def decode_value(t: Type, body: bytes | memoryview | None, *, typed: bool = False,
                 depth: int = 0, names: dict[str, Type] | None = None,
                 fused: bool = False, empty: bool = False) -> Any:
    """A version-5 body to Python (the library's mapping; a ``none`` is :data:`NONE`,
    and record fields holding it are left out of their dict).  ``fused``: a fusion value
    with its subtype, ``Value(subtype, the supertype's value)`` (:mod:`.defuse` makes it
    the subtype's value, as super prints it); else its supertype's value, as a column of
    the supertype holds it.  ``empty``: data, where a nil body of a string, bytes or
    container is its empty value (:func:`_empty_when_nil`)."""
    if depth > 200:
        raise FormatError("value nested too deeply")
    if t == NONE_T:
        return NONE
    if body is None:
        if not (empty and _empty_when_nil(t)):
            return None
        body = b""  # super main: only the null type is null; a nil body is empty
    d = depth + 1
    if names is None:
        names = {}
    kw: dict[str, Any] = {"typed": typed, "fused": fused, "empty": empty, "depth": d,
                          "names": names}
    if isinstance(t, RecRef):
        if t.name not in names:
            raise UnsupportedTypeError(f"a value of the recursive type {t.name} without "
                                       "its definition")
        t = names[t.name]
    if isinstance(t, NamedType):
        names.setdefault(t.name, t)
    if isinstance(t, PrimitiveType):
        if t.name == "type":
            return decode_type_value(body)
        if t == ALL_T:
            raise FormatError("a value of type all outside an any vector")
        return decode_primitive(t, body)
    if isinstance(t, NamedType | ErrorType):
        return decode_value(t.inner, body, **kw)
    if isinstance(t, EnumType):
        i = int.from_bytes(bytes(body), "little")
        if i >= len(t.symbols):
            raise FormatError(f"enum value {i} has no symbol")
        return t.symbols[i]
    parts = list(iter_tagged(body, 0, len(body)))
    if isinstance(t, FusionType):
        if len(parts) != 2:
            raise FormatError("fusion value is not a value and a type")
        if t.inner == ALL_T:  # any: the value's own type is its second part
            if parts[1] is None:
                raise FormatError("any value without its type")
            own = decode_type_value(parts[1])
            v = decode_value(own, parts[0], **kw)
            return Value(own, v) if fused else v  # fused: super prints it as its own
        v = decode_value(t.inner, parts[0], **kw)
        if not fused or parts[1] is None:
            return v
        # the subtype kept: .defuse makes its value
        return Value(decode_type_value(parts[1]), v)
    if isinstance(t, RecordType):
        if len(parts) != len(t.fields):
            raise FormatError(f"record value of {len(parts)} fields for a type of "
                              f"{len(t.fields)}")
        out: dict[str, Any] = {}
        for f, p in zip(t.fields, parts, strict=True):
            v = decode_value(field_type(f), p, **kw)
            if isinstance(f, OptField) and isinstance(v, UnionValue) and v.value is NONE:
                continue
            if v is NONE:
                continue
            if isinstance(f, OptField) and isinstance(v, UnionValue):
                ft = f.type.inner if isinstance(f.type, NamedType) else f.type
                if typed and isinstance(ft, UnionType) and v.type in ft.types:
                    # x?:(T|U): the option's union flattened into T|U|none, its member
                    # a member of the field's own union still
                    v = UnionValue(ft.types.index(v.type), v.type, v.value)
                else:
                    v = v.value
            out[f.name] = v
        return out
    if isinstance(t, ArrayType | SetType):
        return [decode_value(t.elem, p, **kw)
                for p in parts]
    if isinstance(t, MapType):
        if len(parts) % 2:
            raise FormatError("map value has a key without a value")
        items = [(decode_value(t.key, parts[j], **kw),
                  decode_value(t.value, parts[j + 1], **kw))
                 for j in range(0, len(parts), 2)]
        return map_value(t.key, items)
    if isinstance(t, UnionType):
        if len(parts) != 2 or parts[0] is None:
            raise FormatError("union value is not a member index and a value")
        idx = int.from_bytes(bytes(parts[0]), "little")
        if idx >= len(t.types):
            raise FormatError(f"union member {idx} of a {len(t.types)}-member union")
        v = decode_value(t.types[idx], parts[1], **kw)
        if v is NONE:
            return NONE
        return UnionValue(idx, t.types[idx], v) if typed else v
    raise UnsupportedTypeError(f"values of {t} are not supported")

