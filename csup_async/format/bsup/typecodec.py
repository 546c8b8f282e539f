"""BSUP types: type values (the body of a ``type`` value), typedef frames, and the
checks that keep a type a reader can hold (depth, size, names).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ...model.errors import EncodeError, FormatError, LimitError
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
from .limits import MAX_DEPTH, MAX_TYPE_NODES, MAX_TYPE_SIZE, MAX_TYPES
from .tags import check_count, counted, read_counted, read_uvarint, uvarint

ID_RECORD, ID_ARRAY, ID_SET, ID_MAP, ID_UNION, ID_ENUM, ID_ERROR, ID_NAMED = range(8)
TV_RECORD, TV_ARRAY, TV_SET, TV_MAP, TV_UNION, TV_ENUM, TV_ERROR, TV_NAMED_DEF, TV_NAMED_REF = (
    range(30, 39)
)
FIRST_TYPEDEF_ID = 30


def encode_type_value(t: Type) -> bytes:
    """The context-free encoding of a type (the body of a value of type ``type``)."""
    out = bytearray()
    _encode_tv(t, out, {})
    return bytes(out)


def _encode_tv(t: Type, out: bytearray, names: dict[str, Type]) -> None:
    if isinstance(t, PrimitiveType):
        out.append(t.id)
    elif isinstance(t, RecordType):
        out.append(TV_RECORD)
        out += uvarint(len(t.fields))
        for f in t.fields:
            out += counted(f.name)
            _encode_tv(f.type, out, names)
    elif isinstance(t, ArrayType):
        out.append(TV_ARRAY)
        _encode_tv(t.elem, out, names)
    elif isinstance(t, SetType):
        out.append(TV_SET)
        _encode_tv(t.elem, out, names)
    elif isinstance(t, MapType):
        out.append(TV_MAP)
        _encode_tv(t.key, out, names)
        _encode_tv(t.value, out, names)
    elif isinstance(t, UnionType):
        out.append(TV_UNION)
        out += uvarint(len(t.types))
        for m in t.types:
            _encode_tv(m, out, names)
    elif isinstance(t, EnumType):
        out.append(TV_ENUM)
        out += uvarint(len(t.symbols))
        for s in t.symbols:
            out += counted(s)
    elif isinstance(t, ErrorType):
        out.append(TV_ERROR)
        _encode_tv(t.inner, out, names)
    elif isinstance(t, NamedType):
        if names.get(t.name) == t.inner:
            out.append(TV_NAMED_REF)
            out += counted(t.name)
        else:
            out.append(TV_NAMED_DEF)
            out += counted(t.name)
            _encode_tv(t.inner, out, names)
            names[t.name] = t.inner
    else:
        raise EncodeError(f"not a type: {t!r}")


def decode_type_value(b: bytes | memoryview) -> Type:
    mv = memoryview(b) if not isinstance(b, memoryview) else b
    t, pos = _decode_tv(mv, 0, {}, 0, [MAX_TYPE_SIZE])
    if pos != len(mv):
        raise FormatError("type value has trailing bytes")
    return t


def _spend(budget: list[int], n: int) -> None:
    """Count ``n`` nodes of a type value against what is left of MAX_TYPE_SIZE."""
    budget[0] -= n
    if budget[0] < 0:
        raise LimitError(f"type value has more than {MAX_TYPE_SIZE} nodes")


def _decode_tv(mv: memoryview, pos: int, names: dict[str, tuple[Type, int]], depth: int,
               budget: list[int]) -> tuple[Type, int]:
    if depth > MAX_DEPTH:
        raise LimitError(f"type value nested deeper than {MAX_DEPTH}")
    code, pos = read_uvarint(mv, pos)
    _spend(budget, 1)
    if code < FIRST_TYPEDEF_ID:
        if code >= len(PRIMITIVES):
            raise FormatError(f"unknown type value code {code}")
        return PRIMITIVES[code], pos
    d = depth + 1
    if code == TV_RECORD:
        n, pos = read_uvarint(mv, pos)
        check_count(n, len(mv) - pos)
        fields = []
        for _ in range(n):
            name, pos = read_counted(mv, pos)
            ft, pos = _decode_tv(mv, pos, names, d, budget)
            fields.append(Field(name, ft))
        return RecordType(tuple(fields)), pos
    if code in (TV_ARRAY, TV_SET, TV_ERROR):
        inner, pos = _decode_tv(mv, pos, names, d, budget)
        cls = {TV_ARRAY: ArrayType, TV_SET: SetType, TV_ERROR: ErrorType}[code]
        return cls(inner), pos
    if code == TV_MAP:
        k, pos = _decode_tv(mv, pos, names, d, budget)
        v, pos = _decode_tv(mv, pos, names, d, budget)
        return MapType(k, v), pos
    if code == TV_UNION:
        n, pos = read_uvarint(mv, pos)
        check_count(n, len(mv) - pos)
        members = []
        for _ in range(n):
            m, pos = _decode_tv(mv, pos, names, d, budget)
            members.append(m)
        return UnionType(tuple(members)), pos
    if code == TV_ENUM:
        n, pos = read_uvarint(mv, pos)
        check_count(n, len(mv) - pos)
        syms = []
        for _ in range(n):
            s, pos = read_counted(mv, pos)
            syms.append(s)
        return EnumType(tuple(syms)), pos
    if code == TV_NAMED_DEF:
        name, pos = read_counted(mv, pos)
        before = budget[0]
        inner, pos = _decode_tv(mv, pos, names, d, budget)
        names[name] = (inner, before - budget[0])
        return NamedType(name, inner), pos
    if code == TV_NAMED_REF:
        name, pos = read_counted(mv, pos)
        if name not in names:
            raise FormatError(f"type value refers to undefined named type {name!r}")
        inner, size = names[name]
        _spend(budget, size)  # a reference repeats the whole named type
        return NamedType(name, inner), pos
    raise FormatError(f"unknown type value code {code}")


def type_limits(t: Type) -> tuple[int, int]:
    """(depth, tree size) of a type, in time linear in its distinct subtypes; stops
    counting once past the limits (MAX_DEPTH, MAX_TYPE_SIZE)."""
    memo: dict[int, tuple[int, int]] = {}
    keep: list[Type] = []  # keeps ids valid while the memo lives

    def walk(u: Type, level: int) -> tuple[int, int]:
        got = memo.get(id(u))
        if got is not None:
            return got
        if level > MAX_DEPTH + 1:
            return MAX_DEPTH + 2, 1
        if isinstance(u, RecordType):
            kids: list[Type] = [f.type for f in u.fields]
        elif isinstance(u, (ArrayType, SetType)):
            kids = [u.elem]
        elif isinstance(u, (ErrorType, NamedType)):
            kids = [u.inner]
        elif isinstance(u, MapType):
            kids = [u.key, u.value]
        elif isinstance(u, UnionType):
            kids = list(u.types)
        else:
            kids = []
        depth, size = 1, 1
        for k in kids:
            kd, ks = walk(k, level + 1)
            depth = max(depth, kd + 1)
            size = min(size + ks, MAX_TYPE_SIZE + 1)
        memo[id(u)] = (depth, size)
        keep.append(u)
        return depth, size

    return walk(t, 1)


def _check_names(names: list[str], what: str) -> None:
    """EncodeError for a name UTF-8 cannot hold (a lone surrogate from a bad decode)."""
    for name in names:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EncodeError(f"{what} {name!r} is not valid Unicode: {e.reason}") from None


def check_type(t: Type, what: str = "type") -> None:
    """EncodeError unless a reader of this library can read ``t`` back: depth, size,
    field names unique in each record, every name and symbol valid UTF-8."""
    depth, size = type_limits(t)
    if depth > MAX_DEPTH:
        raise EncodeError(f"{what} is nested deeper than {MAX_DEPTH} levels, more than a "
                          "reader accepts")
    if size > MAX_TYPE_SIZE:
        raise EncodeError(f"{what} has more than {MAX_TYPE_SIZE} nodes, more than a reader "
                          "accepts")
    _check_names_in(t, set())


def _check_names_in(t: Type, seen: set[int]) -> None:
    if id(t) in seen:
        return
    seen.add(id(t))
    if isinstance(t, RecordType):
        names = [f.name for f in t.fields]
        _check_names(names, "field name")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise EncodeError(f"record type has the field name {dup!r} twice")
        kids: list[Type] = [f.type for f in t.fields]
    elif isinstance(t, (ArrayType, SetType)):
        kids = [t.elem]
    elif isinstance(t, (ErrorType, NamedType)):
        if isinstance(t, NamedType):
            _check_names([t.name], "type name")
        kids = [t.inner]
    elif isinstance(t, MapType):
        kids = [t.key, t.value]
    elif isinstance(t, UnionType):
        kids = list(t.types)
    else:
        if isinstance(t, EnumType):
            _check_names(list(t.symbols), "enum symbol")
        kids = []
    for k in kids:
        _check_names_in(k, seen)





# Types frames seen before, by (context state, payload bytes) -> (new state, the types,
# depths and sizes they define, nodes they add).  A context's state is the sequence of
# frames parsed since it was fresh, so a hit defines exactly what parsing would, limits
# included (a frame that fails a limit raises and is never stored).  Files from one
# writer repeat the same metadata types frames, so a driver opening 1,000 of them
# parses each distinct frame once and shares the (immutable) types.  Small frames
# only, and a bounded number: a big data stream's types are not worth keeping.
_TYPEDEF_MEMO: dict[tuple[int, bytes], tuple[int, tuple[Type, ...], tuple[int, ...],
                                             tuple[int, ...], int]] = {}
_MEMO_MAX_ENTRIES = 512
_MEMO_MAX_PAYLOAD = 8 << 10  # so at most 4 MiB of keys
_memo_ids = itertools.count(1)


class TypeContext:
    """The type IDs of one BSUP stream: primitives, then typedefs in order.

    Each typedef's depth and tree size are computed from its children's (kept
    per type ID), so checking them costs O(1) per reference however much the
    typedefs share, and a stream cannot describe types deeper than MAX_DEPTH,
    larger than MAX_TYPE_SIZE nodes, or more than MAX_TYPE_NODES in total.
    """

    def __init__(self, *, memo: bool = True) -> None:
        """``memo=False``: parse every types frame, sharing nothing with other contexts
        (the reference the memo is held to; a stream of one-off frames)."""
        self.types: list[Type] = list(PRIMITIVES)
        self._depth: list[int] = [1] * len(PRIMITIVES)
        self._size: list[int] = [1] * len(PRIMITIVES)
        self._nodes = 0
        # Which sequence of types frames built this context: 0 = none yet, else
        # the id of the memo entry that produced it, -1 = not memoisable.
        self._state = 0 if memo else -1

    @property
    def depths(self) -> tuple[int, ...]:
        """Each type ID's nesting depth, which MAX_DEPTH bounds."""
        return tuple(self._depth)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each type ID's tree size in nodes, which MAX_TYPE_SIZE bounds."""
        return tuple(self._size)

    @property
    def node_count(self) -> int:
        """The nodes of every typedef so far, which MAX_TYPE_NODES bounds."""
        return self._nodes

    def lookup(self, tid: int) -> Type:
        if tid >= len(self.types):
            raise FormatError(f"type ID {tid} is not defined")
        return self.types[tid]

    def _referrer(self, kids: list[int]) -> Callable[[int], Type]:
        """``lookup`` that also records the type IDs a typedef refers to."""
        def ref(tid: int) -> Type:
            t = self.lookup(tid)
            kids.append(tid)
            return t

        return ref

    def parse_typedefs(self, mv: memoryview) -> None:
        """Define the types of one types frame, memoised (see ``_TYPEDEF_MEMO``)."""
        state = self._state
        if state < 0 or len(mv) > _MEMO_MAX_PAYLOAD:
            self._state = -1
            self._parse_typedefs(mv)
            return
        key = (state, bytes(mv))
        hit = _TYPEDEF_MEMO.get(key)
        if hit is not None:
            self._state, types, depths, sizes, nodes = hit
            self.types.extend(types)
            self._depth.extend(depths)
            self._size.extend(sizes)
            self._nodes += nodes
            return
        n0, nodes0 = len(self.types), self._nodes
        self._state = -1  # until parsed: a failed parse leaves a half-built context
        self._parse_typedefs(mv)
        if len(_TYPEDEF_MEMO) >= _MEMO_MAX_ENTRIES:
            _TYPEDEF_MEMO.clear()
        self._state = next(_memo_ids)
        _TYPEDEF_MEMO[key] = (self._state, tuple(self.types[n0:]), tuple(self._depth[n0:]),
                              tuple(self._size[n0:]), self._nodes - nodes0)

    def _parse_typedefs(self, mv: memoryview) -> None:
        pos, end = 0, len(mv)
        while pos < end:
            if len(self.types) > MAX_TYPES:
                raise LimitError(f"stream defines more than {MAX_TYPES} types")
            code, pos = read_uvarint(mv, pos, end)
            kids: list[int] = []
            ref = self._referrer(kids)
            if code == ID_RECORD:
                n, pos = read_uvarint(mv, pos, end)
                check_count(n, end - pos)
                fields = []
                for _ in range(n):
                    name, pos = read_counted(mv, pos, end)
                    tid, pos = read_uvarint(mv, pos, end)
                    fields.append(Field(name, ref(tid)))
                t: Type = RecordType(tuple(fields))
            elif code in (ID_ARRAY, ID_SET, ID_ERROR):
                tid, pos = read_uvarint(mv, pos, end)
                inner = ref(tid)
                t = {ID_ARRAY: ArrayType, ID_SET: SetType, ID_ERROR: ErrorType}[code](inner)
            elif code == ID_MAP:
                k, pos = read_uvarint(mv, pos, end)
                v, pos = read_uvarint(mv, pos, end)
                t = MapType(ref(k), ref(v))
            elif code == ID_UNION:
                n, pos = read_uvarint(mv, pos, end)
                check_count(n, end - pos)
                members = []
                for _ in range(n):
                    tid, pos = read_uvarint(mv, pos, end)
                    members.append(ref(tid))
                t = UnionType(tuple(members))
            elif code == ID_ENUM:
                n, pos = read_uvarint(mv, pos, end)
                check_count(n, end - pos)
                syms = []
                for _ in range(n):
                    s, pos = read_counted(mv, pos, end)
                    syms.append(s)
                t = EnumType(tuple(syms))
            elif code == ID_NAMED:
                name, pos = read_counted(mv, pos, end)
                tid, pos = read_uvarint(mv, pos, end)
                t = NamedType(name, ref(tid))
            else:
                raise FormatError(f"unknown typedef code {code}")
            depth = 1 + max((self._depth[k] for k in kids), default=0)
            size = 1 + sum(self._size[k] for k in kids)
            if depth > MAX_DEPTH:
                raise LimitError(f"type nested deeper than {MAX_DEPTH}")
            if size > MAX_TYPE_SIZE:
                raise LimitError(f"type of more than {MAX_TYPE_SIZE} nodes")
            self._nodes += size
            if self._nodes > MAX_TYPE_NODES:
                raise LimitError(f"stream's types have more than {MAX_TYPE_NODES} nodes")
            self.types.append(t)
            self._depth.append(depth)
            self._size.append(size)


#: Version 0's typedef code of each kind of complex type (:func:`typedef_entry`).
V0_TYPEDEF_CODES: dict[type, int] = {
    RecordType: ID_RECORD, ArrayType: ID_ARRAY, SetType: ID_SET, MapType: ID_MAP,
    UnionType: ID_UNION, EnumType: ID_ENUM, ErrorType: ID_ERROR, NamedType: ID_NAMED,
}


def typedef_entry(t: Type, type_id: Callable[[Type], int], codes: dict[type, int], *,
                  field_flag: Callable[[Field], int] | None = None,
                  named_id: Callable[[int], bytes] = uvarint,
                  name: Callable[[str], bytes] = counted) -> bytearray | None:
    """The typedef of the complex type ``t`` in one BSUP version, or None when ``codes``
    has no code for its kind.

    Every version lays a typedef out the same way; what differs is a parameter:
    ``codes`` (each kind's code; a kind not in it, e.g. fusion before version 2, has
    no typedef), ``field_flag`` (version 2's optional flag after each record field),
    ``named_id`` (how a named typedef holds its inner ID: a uvarint, or version 5's
    4 bytes) and ``name``.  The IDs of the types ``t`` holds come from ``type_id``,
    called before anything is written, so a writer that appends typedefs as it
    goes defines them first."""
    code = next((c for cls, c in codes.items() if isinstance(t, cls)), None)
    if code is None:
        return None
    e = bytearray()
    if isinstance(t, RecordType):
        ids = [type_id(f.type) for f in t.fields]
        e.append(code)
        e += uvarint(len(t.fields))
        for f, i in zip(t.fields, ids, strict=True):
            e += name(f.name) + uvarint(i)
            if field_flag is not None:
                e.append(field_flag(f))
    elif isinstance(t, MapType):
        k, v = type_id(t.key), type_id(t.value)
        e.append(code)
        e += uvarint(k) + uvarint(v)
    elif isinstance(t, UnionType):
        ids = [type_id(m) for m in t.types]
        e.append(code)
        e += uvarint(len(ids))
        for i in ids:
            e += uvarint(i)
    elif isinstance(t, EnumType):
        e.append(code)
        e += uvarint(len(t.symbols))
        for s in t.symbols:
            e += name(s)
    elif isinstance(t, NamedType):
        i = type_id(t.inner)
        e.append(code)
        e += name(t.name) + named_id(i)
    else:  # one inner type: array, set, error, fusion
        inner = t.elem if isinstance(t, ArrayType | SetType) else t.inner  # type: ignore[attr-defined]
        i = type_id(inner)
        e.append(code)
        e += uvarint(i)
    return e


class TypedefEncoder:
    """The type IDs of one BSUP stream being written (the inverse of :class:`TypeContext`).

    Each type met for the first time gets the next ID and its typedef, children
    first, is appended to ``pending`` until the writer emits it as a types frame
    (:meth:`take`); :meth:`reset` starts a new stream's IDs.
    """

    def __init__(self) -> None:
        self.pending = bytearray()
        self._ids: dict[Type, int] = {}
        self._by_typedef: dict[bytes, int] = {}  # a typedef's bytes -> its ID
        self._next_id = FIRST_TYPEDEF_ID

    def type_id(self, t: Type) -> int:
        """The ID of ``t`` in this stream; a new type's typedef (and its children's) is
        appended to ``pending``.

        Two types that encode to the same typedef share one ID: types this library
        tells apart that a version-0 stream cannot (a record with optional fields and
        the one without the marks) would otherwise be defined twice, and a reader that
        interns typedefs (zq) gives the second no ID of its own, so every later ID
        would be off by one."""
        if isinstance(t, PrimitiveType):
            return t.id
        tid = self._ids.get(t)
        if tid is not None:
            return tid
        td = typedef_entry(t, self.type_id, V0_TYPEDEF_CODES)
        if td is None:
            raise EncodeError(f"not a type: {t!r}")
        key = bytes(td)
        tid = self._by_typedef.get(key)
        if tid is None:
            tid = self._next_id
            self._next_id += 1
            self._by_typedef[key] = tid
            self.pending += td
        self._ids[t] = tid
        return tid

    def take(self) -> bytes:
        """The pending typedefs (one types frame's payload), now no longer pending."""
        out = bytes(self.pending)
        self.pending = bytearray()
        return out

    def reset(self) -> None:
        """Forget every ID: after an end-of-stream marker a stream starts afresh."""
        self._ids.clear()
        self._by_typedef.clear()
        self._next_id = FIRST_TYPEDEF_ID
