"""The columnar result model against pure-Python references on random nested types."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import math
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csup_async import arrays as A
from csup_async.arrays.jsonout import value_lines
from csup_async.model.errors import (
    ColumnNotFoundError,
    CsupError,
    EncodeError,
    FormatError,
    UnsupportedTypeError,
)
from csup_async.model.types import (
    BOOL,
    BYTES,
    DECIMAL64,
    DURATION,
    FLOAT16,
    FLOAT64,
    FLOAT128,
    INT8,
    INT64,
    IP,
    NET,
    NULL,
    PRIMITIVE_BY_NAME,
    STRING,
    TIME,
    TYPE,
    UINT64,
    UINT128,
    ArrayType,
    EnumType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)

UnionValue = A.UnionValue
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ------------------------------------------------------------- strategies ---

PRIMS = ["uint8", "uint16", "uint32", "uint64", "uint128", "uint256", "int8", "int16", "int32",
         "int64", "int128", "int256", "duration", "time", "float16", "float32", "float64",
         "bool", "bytes", "string", "ip", "net", "type", "null"]
names = st.text(alphabet="abxy_", min_size=1, max_size=3)


def _complex(children: st.SearchStrategy[Type]) -> st.SearchStrategy[Type]:
    plain = children.filter(lambda t: not isinstance(t, UnionType))
    return st.one_of(
        st.lists(st.tuples(names, children), max_size=3, unique_by=lambda f: f[0]).map(
            lambda fs: RecordType(tuple(Field(n, t) for n, t in fs))),
        children.map(ArrayType),
        children.map(SetType),
        st.tuples(children, children).map(lambda kv: MapType(*kv)),
        st.lists(plain, min_size=2, max_size=3, unique=True).map(
            lambda ms: UnionType(tuple(ms))),
        st.lists(names, min_size=1, max_size=3, unique=True).map(
            lambda s: EnumType(tuple(s))),
        children.map(ErrorType),
        st.tuples(st.sampled_from(["n1", "port"]), children).map(lambda p: NamedType(*p)),
    )


types = st.recursive(st.sampled_from([PRIMITIVE_BY_NAME[n] for n in PRIMS]), _complex,
                     max_leaves=6)
TYPE_VALUES = [INT64, STRING, ArrayType(INT64), RecordType((Field("a", IP),)),
               UnionType((INT64, STRING)), NamedType("n", BOOL)]
FLOAT_WIDTH = {"float16": 16, "float32": 32, "float64": 64}


def hashable_key(t: Type) -> bool:
    """The documented rule: map keys are a dict unless the key type holds a container."""
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(t, (RecordType, ArrayType, SetType, MapType)):
        return False
    if isinstance(t, UnionType):
        return all(hashable_key(m) for m in t.types)
    return True


def _int(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi) | st.sampled_from([lo, hi, 0])


def prim_values(name: str, arrow: bool, narrow: bool) -> st.SearchStrategy[Any]:
    if name.startswith(("int", "uint")):
        bits = int(name.lstrip("uint"))
        if name[0] == "u":
            return _int(0, (1 << bits) - 1)
        return _int(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if name in ("time", "duration"):
        make = (lambda v: np.datetime64(v, "ns")) if name == "time" else (
            lambda v: np.timedelta64(v, "ns"))
        if arrow:  # Arrow converts to datetime/timedelta: microseconds only, no NaT
            return st.integers(-(1 << 52), 1 << 52).map(lambda us: make(us * 1000))
        return _int(-(1 << 63), (1 << 63) - 1).map(make)
    if name in FLOAT_WIDTH:
        # narrow: values every float width holds, so a plain value survives any float member
        return st.floats(width=16 if narrow else FLOAT_WIDTH[name])
    if name == "bool":
        return st.booleans()
    if name == "bytes":
        return st.binary(max_size=12)
    if name == "string":
        return st.text(max_size=8)
    if name == "ip":
        return st.ip_addresses()
    if name == "net":
        return st.tuples(st.ip_addresses(), st.integers(0, 32)).map(
            lambda p: ipaddress.ip_network((p[0], p[1]), strict=False))
    if name == "type":
        return st.sampled_from(TYPE_VALUES)
    assert name == "null"
    return st.none()


def values_of(t: Type, arrow: bool = False, narrow: bool = False,
              nullable: bool = True) -> st.SearchStrategy[Any]:
    """Typed-form values of ``t`` (unions as UnionValue; maps as to_pylist gives them)."""
    inner = _values_of(t, arrow, narrow)
    return st.none() | inner if nullable else inner


def _values_of(t: Type, arrow: bool, narrow: bool) -> st.SearchStrategy[Any]:
    if isinstance(t, (NamedType, ErrorType)):
        return _values_of(t.inner, arrow, narrow)
    if isinstance(t, RecordType):
        order = [f.name for f in t.fields]
        return st.fixed_dictionaries({f.name: values_of(f.type, arrow, narrow)
                                      for f in t.fields}).map(
            lambda d: {k: d[k] for k in order})  # field order, as to_pylist keeps it
    if isinstance(t, (ArrayType, SetType)):
        return st.lists(values_of(t.elem, arrow, narrow), max_size=3)
    if isinstance(t, MapType):
        # Arrow maps refuse null keys; elsewhere keys are as nullable as anything
        pairs = st.lists(st.tuples(values_of(t.key, arrow, narrow, nullable=not arrow),
                                   values_of(t.value, arrow, narrow)), max_size=3)
        return pairs.map(dict) if hashable_key(t.key) else pairs
    if isinstance(t, UnionType):
        return st.integers(0, len(t.types) - 1).flatmap(
            lambda i: values_of(t.types[i], arrow, narrow).map(
                lambda v: UnionValue(i, t.types[i], v)))
    if isinstance(t, EnumType):
        return st.sampled_from(t.symbols)
    return prim_values(t.name, arrow, narrow)


def typed_column(arrow: bool = False, narrow: bool = False, max_size: int = 8,
                 ) -> st.SearchStrategy[tuple[Type, list[Any]]]:
    return types.flatmap(lambda t: st.tuples(
        st.just(t), st.lists(values_of(t, arrow, narrow), max_size=max_size)))


# ---------------------------------------------------------------- helpers ---


def strip(v: Any) -> Any:
    """Typed form → plain form (UnionValue → its value)."""
    if isinstance(v, UnionValue):
        return strip(v.value)
    if isinstance(v, dict):
        d = {strip(k): strip(x) for k, x in v.items()}
        # keys that become equal once plain are kept as pairs, as the mapping does
        return d if len(d) == len(v) else [(strip(k), strip(x)) for k, x in v.items()]
    if isinstance(v, list):
        return [strip(x) for x in v]
    if isinstance(v, tuple):
        return tuple(strip(x) for x in v)
    return v


def same(a: Any, b: Any) -> bool:
    """Deep equality: NaN == NaN, NaT == NaT, exact Python types (an int is no np.int64)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (np.datetime64, np.timedelta64)):
        return a.dtype == b.dtype and ((np.isnat(a) and np.isnat(b)) or bool(a == b))
    if isinstance(a, UnionValue):
        return a.index == b.index and a.type == b.type and same(a.value, b.value)
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(k1, k2) and same(v1, v2)
            for (k1, v1), (k2, v2) in zip(a.items(), b.items(), strict=True))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def check(got: list[Any], want: list[Any]) -> None:
    assert same(got, want), f"\n got: {got!r}\nwant: {want!r}"


# ------------------------------------------------------------- round trip ---


@SETTINGS
@given(typed_column())
def test_typed_round_trip(tv: tuple[Type, list[Any]]) -> None:
    t, vals = tv
    arr = A.from_pylist(t, vals)
    assert len(arr) == len(vals) and arr.type == t
    assert arr.null_count == sum(v is None for v in vals)
    check(arr.to_pylist(typed=True), vals)
    check(arr.to_pylist(), strip(vals))
    for i in range(len(vals)):
        check([arr[i]], [strip(vals[i])])
        assert arr.is_valid(i) == (vals[i] is not None)


@SETTINGS
@given(typed_column(narrow=True))
def test_plain_round_trip(tv: tuple[Type, list[Any]]) -> None:
    # plain union values pick a member by kind; with values every float width holds
    # exactly, whichever member is picked gives the value back
    t, vals = tv
    plain = strip(vals)
    check(A.from_pylist(t, plain).to_pylist(), plain)


@SETTINGS
@given(typed_column(), st.data())
def test_take_slice_match_lists(tv: tuple[Type, list[Any]], data: st.DataObject) -> None:
    t, vals = tv
    arr = A.from_pylist(t, vals)
    n = len(vals)
    idx = data.draw(st.lists(st.integers(-n, n - 1), max_size=12) if n else st.just([]))
    check(arr.take(np.array(idx, np.int64)).to_pylist(typed=True), [vals[i] for i in idx])
    start, stop = data.draw(st.integers(-n - 1, n + 1)), data.draw(st.integers(-n - 1, n + 1))
    sl = arr.slice(start, stop)
    check(sl.to_pylist(typed=True), vals[start:stop])
    check(arr[start:stop].to_pylist(typed=True), vals[start:stop])
    # operations on a slice see only its rows (offsets not starting at 0, shared children)
    sub = vals[start:stop]
    if sub:
        idx2 = data.draw(st.lists(st.integers(0, len(sub) - 1), max_size=6))
        check(sl.take(idx2).to_pylist(typed=True), [sub[i] for i in idx2])
    check(arr[::-1].to_pylist(typed=True), vals[::-1])


@SETTINGS
@given(st.data())
def test_expand_matches_reference(data: st.DataObject) -> None:
    t = data.draw(types)
    mask = data.draw(st.lists(st.booleans(), max_size=10))
    vals = data.draw(st.lists(values_of(t), min_size=sum(mask), max_size=sum(mask)))
    arr = A.from_pylist(t, vals)
    start = data.draw(st.integers(0, 2))
    # through a slice too: the offsets of a sliced array do not start at 0
    padded = A.concat([A.null_array(t, start), arr])
    arr = padded.slice(start)
    it = iter(vals)
    want = [next(it) if m else None for m in mask]
    out = arr.expand(np.array(mask, bool))
    assert len(out) == len(mask) and out.type == t
    check(out.to_pylist(typed=True), want)
    check(out.take(np.arange(len(mask))[::-1].copy()).to_pylist(typed=True), want[::-1])


@SETTINGS
@given(st.lists(typed_column(max_size=4), min_size=1, max_size=3), st.data())
def test_concat_matches_lists(cols: list[tuple[Type, list[Any]]], data: st.DataObject) -> None:
    t = cols[0][0]
    chunks = [cols[0][1]] + [data.draw(st.lists(values_of(t), max_size=4)) for _ in cols[1:]]
    arrays = [A.from_pylist(t, c) for c in chunks]
    arrays.append(A.null_array(t, 2))
    arrays.append(A.NullArray(1, t))
    want = [v for c in chunks for v in c] + [None] * 3
    check(A.concat(arrays).to_pylist(typed=True), want)
    whole = A.from_pylist(t, want)
    k1 = data.draw(st.integers(0, len(want)))
    k2 = data.draw(st.integers(k1, len(want)))
    pieces = [whole.slice(0, k1), whole.slice(k1, k2), whole.slice(k2)]  # offsets not at 0
    check(A.concat(pieces).to_pylist(typed=True), want)


@st.composite
def combine_case(draw: st.DrawFn) -> tuple[list[A.Array | None], list[int], list[Any], Type]:
    pool = draw(st.lists(types, min_size=1, max_size=3, unique=True))
    k = draw(st.integers(1, 12))
    parts: list[A.Array | None] = []
    part_vals: list[list[Any] | None] = []
    ids: list[int] = []
    for i in range(k):
        if draw(st.booleans()) and i:
            parts.append(None)
            part_vals.append(None)
            ids += [i] * draw(st.integers(0, 3))
            continue
        t = draw(st.sampled_from([*pool, NULL]))
        vals = draw(st.lists(values_of(t), max_size=4))
        parts.append(A.from_pylist(t, vals))
        part_vals.append(vals)
        ids += [i] * len(vals)
    ids = draw(st.permutations(ids))
    distinct: list[Type] = []
    for p in parts:
        if p is not None and p.type != NULL and p.type not in distinct:
            distinct.append(p.type)
    its = [iter(v) if v is not None else None for v in part_vals]
    want: list[Any] = []
    for sid in ids:
        it = its[sid]
        v = next(it) if it is not None else None
        p = parts[sid]
        if p is None or p.type == NULL:
            want.append(None)
        elif len(distinct) == 1:
            want.append(v)
        else:
            want.append(UnionValue(distinct.index(p.type), p.type, v))
    rtype = NULL if not distinct else distinct[0] if len(distinct) == 1 else UnionType(
        tuple(distinct))
    return parts, ids, want, rtype


@SETTINGS
@given(combine_case())
def test_combine_matches_reference(case: tuple[list[A.Array | None], list[int], list[Any],
                                               Type]) -> None:
    parts, ids, want, rtype = case
    out = A.combine(parts, np.array(ids, np.int32))
    assert out.type == rtype and len(out) == len(ids)
    check(out.to_pylist(typed=True), want)
    check(out.to_pylist(), strip(want))


# ------------------------------------------------------------------ arrow ---

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def arrow_py(t: Type, v: Any) -> Any:
    """What pyarrow's to_pylist gives for the Arrow form of typed value ``v`` of ``t``."""
    if v is None:
        return None
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(t, UnionType):
        return arrow_py(v.type, v.value)
    if isinstance(t, RecordType):
        return {f.name: arrow_py(f.type, v[f.name]) for f in t.fields}
    if isinstance(t, (ArrayType, SetType)):
        return [arrow_py(t.elem, x) for x in v]
    if isinstance(t, MapType):
        items = v.items() if isinstance(v, dict) else v
        k = t.key
        while isinstance(k, (NamedType, ErrorType)):
            k = k.inner
        if k.kind == "primitive" and k != NULL:
            return [(arrow_py(t.key, a), arrow_py(t.value, b)) for a, b in items]
        return [{"key": arrow_py(t.key, a), "value": arrow_py(t.value, b)} for a, b in items]
    if isinstance(t, EnumType):
        return v
    if t.name == "time":
        return _EPOCH + dt.timedelta(microseconds=int(v.astype(np.int64)) // 1000)
    if t.name == "duration":
        return dt.timedelta(microseconds=int(v.astype(np.int64)) // 1000)
    if t.name in ("ip", "net", "type", "int128", "int256", "uint128", "uint256"):
        return str(v)
    return v


def loose(a: Any, b: Any) -> bool:
    """Equality for Arrow output: NaN == NaN, numeric scalars by value."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, float) and isinstance(b, float | np.floating) and math.isnan(a):
            return math.isnan(b)
        return a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(loose(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(
            loose(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dt.datetime, dt.timedelta)):  # with pandas installed, pyarrow gives
        return isinstance(b, type(a)) and a == b   # its subclasses (Timestamp, Timedelta)
    return type(a) is type(b) and a == b


@SETTINGS
@given(typed_column(arrow=True), st.data())
def test_to_arrow_matches(tv: tuple[Type, list[Any]], data: st.DataObject) -> None:
    pa = pytest.importorskip("pyarrow")
    t, vals = tv
    arr = A.from_pylist(t, vals)
    start = data.draw(st.integers(0, len(vals)))
    for a, vs in ((arr, vals), (arr.slice(start), vals[start:])):
        out = a.to_arrow()
        out.validate(full=True)
        assert len(out) == len(vs)
        if out.type.id != pa.dense_union([]).id:  # Arrow unions have no validity
            assert out.null_count == sum(v is None for v in vs)
        got, want = out.to_pylist(), [arrow_py(t, v) for v in vs]
        assert loose(want, got), f"\n got: {got!r}\nwant: {want!r}"


def test_to_arrow_types_and_zero_copy() -> None:
    pa = pytest.importorskip("pyarrow")
    ints = A.PrimitiveArray(INT64, np.arange(4, dtype=np.int64), np.array([1, 0, 1, 1], bool))
    out = ints.to_arrow()
    assert out.type == pa.int64() and out.to_pylist() == [0, None, 2, 3]
    assert out.buffers()[1].address == ints.values.ctypes.data  # shares the numpy buffer
    s = A.from_pylist(STRING, ["ab", None, "c"])
    assert s.to_arrow().type == pa.large_string()
    assert A.from_pylist(BYTES, [b"x"]).to_arrow().type == pa.large_binary()
    assert A.from_pylist(TIME, [np.datetime64(5, "ns")]).to_arrow().type == pa.timestamp(
        "ns", tz="UTC")
    assert A.from_pylist(DURATION, [None]).to_arrow().type == pa.duration("ns")
    e = A.from_pylist(EnumType(("a", "b")), ["b", None, "a"]).to_arrow()
    assert pa.types.is_dictionary(e.type) and e.to_pylist() == ["b", None, "a"]
    m = A.from_pylist(MapType(STRING, INT64), [{"a": 1}, None]).to_arrow()
    assert pa.types.is_map(m.type) and m.to_pylist() == [[("a", 1)], None]
    rt = RecordType((Field("p", NamedType("port", UINT64)),))
    st_ = A.from_pylist(rt, [{"p": 80}]).to_arrow()
    assert st_.type.field("p").metadata == {b"csup.name": b"port"}
    u = A.from_pylist(UnionType((INT64, STRING)), [1, None, "x"]).to_arrow()
    assert pa.types.is_union(u.type) and u.to_pylist() == [1, None, "x"]
    assert A.from_pylist(NULL, [None, None]).to_arrow().to_pylist() == [None, None]
    assert A.from_pylist(UINT128, [1 << 100]).to_arrow().to_pylist() == [str(1 << 100)]
    assert A.from_pylist(TYPE, [ArrayType(INT64)]).to_arrow().to_pylist() == ["[int64]"]


def test_to_arrow_refuses_null_map_key_and_bad_utf8() -> None:
    pytest.importorskip("pyarrow")
    with pytest.raises(UnsupportedTypeError):
        A.from_pylist(MapType(STRING, INT64), [{None: 1}]).to_arrow()
    bad = A.BinaryArray(STRING, np.array([0, 2]), np.frombuffer(b"\xff\xfe", np.uint8))
    with pytest.raises(FormatError):
        bad.to_arrow()
    with pytest.raises(FormatError):
        bad.to_pylist()


def test_to_arrow_without_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(A.MissingDependencyError) as ei:
        A.from_pylist(INT64, [1]).to_arrow()
    assert isinstance(ei.value, CsupError)


# --------------------------------------------------------------- specifics ---


def test_typed_and_untyped_unions() -> None:
    u = UnionType((INT64, STRING, ArrayType(INT64)))
    arr = A.from_pylist(u, [1, "a", None, [2], UnionValue(0, INT64, None)])
    assert arr.to_pylist() == [1, "a", None, [2], None]
    assert arr.to_pylist(typed=True) == [
        UnionValue(0, INT64, 1), UnionValue(1, STRING, "a"), None,
        UnionValue(2, ArrayType(INT64), [2]), UnionValue(0, INT64, None)]
    assert arr.tags.tolist() == [0, 1, -1, 2, 0]
    # the member of the value's own kind wins over a widening; ints never go to bool
    f = A.from_pylist(UnionType((FLOAT64, INT64, BOOL)), [1, 1.0, True])
    assert f.to_pylist(typed=True) == [UnionValue(1, INT64, 1), UnionValue(0, FLOAT64, 1.0),
                                       UnionValue(2, BOOL, True)]
    assert A.from_pylist(UnionType((FLOAT64, STRING)), [3]).to_pylist(typed=True) == [
        UnionValue(0, FLOAT64, 3.0)]
    with pytest.raises(EncodeError):
        A.from_pylist(u, [UnionValue(1, INT64, 1)])
    with pytest.raises(EncodeError):
        A.from_pylist(u, [b"bytes"])


def test_python_types_are_plain() -> None:
    vals = A.from_pylist(RecordType((Field("i", INT8), Field("u", UINT64), Field("f", FLOAT16),
                                     Field("b", BOOL), Field("t", TIME))),
                         [{"i": -3, "u": (1 << 64) - 1, "f": 0.5, "b": True,
                           "t": np.datetime64(7, "ns")}]).to_pylist()[0]
    assert [type(v) for v in vals.values()] == [int, int, float, bool, np.datetime64]
    assert vals["u"] == (1 << 64) - 1 and vals["t"].dtype == np.dtype("datetime64[ns]")


def test_map_with_unhashable_keys_is_pairs() -> None:
    t = MapType(RecordType((Field("a", INT64),)), STRING)
    arr = A.from_pylist(t, [[({"a": 1}, "x"), ({"a": 2}, "y")], None, []])
    assert arr.to_pylist() == [[({"a": 1}, "x"), ({"a": 2}, "y")], None, []]
    h = A.from_pylist(MapType(INT64, STRING), [{1: "a"}, [(2, "b")]])
    assert h.to_pylist() == [{1: "a"}, {2: "b"}]


def test_nan_and_nat_survive() -> None:
    arr = A.from_pylist(FLOAT64, [math.nan, None, math.inf])
    got = arr.to_pylist()
    assert math.isnan(got[0]) and got[1] is None and got[2] == math.inf
    assert not same([1.0], [math.nan]) and same([math.nan], [math.nan])
    nat = A.from_pylist(TIME, [np.datetime64("NaT", "ns")]).to_pylist()
    assert np.isnat(nat[0])


def test_to_numpy() -> None:
    ints = A.from_pylist(INT64, [1, None, 3])
    out = ints.to_numpy()
    assert isinstance(out, np.ma.MaskedArray) and out.mask.tolist() == [False, True, False]
    assert out.dtype == np.int64 and out.filled(0).tolist() == [1, 0, 3]
    plain = A.from_pylist(TIME, [np.datetime64(1, "ns")]).to_numpy()
    assert not isinstance(plain, np.ma.MaskedArray) and plain.dtype == np.dtype("M8[ns]")
    strs = A.from_pylist(STRING, ["a", None]).to_numpy()
    assert strs.dtype == object and strs.tolist() == ["a", None]
    lists = A.from_pylist(ArrayType(INT64), [[1, 2], [3, 4]]).to_numpy()
    assert lists.shape == (2,) and lists[1] == [3, 4]
    assert A.from_pylist(EnumType(("x",)), ["x"]).to_numpy().tolist() == ["x"]


def test_inputs_are_not_mutated_and_arrays_are_read_only() -> None:
    values = np.array([1, 2, 3], np.int64)
    validity = np.array([True, False, True])
    arr = A.PrimitiveArray(INT64, values, validity)
    assert values.flags.writeable and validity.flags.writeable
    with pytest.raises(ValueError):
        arr.values[0] = 9
    arr.expand(np.array([True, False, True, True]))
    arr.take(np.array([2, 0]))
    assert values.tolist() == [1, 2, 3] and validity.tolist() == [True, False, True]
    tags = np.array([0, -1, 1], np.int32)
    A.UnionArray(UnionType((INT64, STRING)), tags,
                 (A.from_pylist(INT64, [1]), A.from_pylist(STRING, ["a"]))).take([2, 1])
    assert tags.tolist() == [0, -1, 1]


def test_struct_field_and_named_error_types() -> None:
    rt = NamedType("pt", RecordType((Field("x", INT64), Field("y", ErrorType(STRING)))))
    arr = A.from_pylist(rt, [{"x": 1, "y": "oops"}, None])
    assert isinstance(arr, A.StructArray) and arr.type == rt
    assert arr.field("y").type == ErrorType(STRING)
    assert arr.field("y").to_pylist() == ["oops", None]
    with pytest.raises(ColumnNotFoundError):
        arr.field("z")
    plain = A.from_pylist(INT64, [1]).with_type(NamedType("n", INT64))
    assert plain.type == NamedType("n", INT64) and plain.to_pylist() == [1]
    with pytest.raises(FormatError):
        A.from_pylist(INT64, [1]).with_type(STRING)


def test_expand_places_values_and_checks_counts() -> None:
    arr = A.from_pylist(ArrayType(STRING), [["a", "bc"], None, ["d"]])
    out = arr.expand(np.array([False, True, True, False, True]))
    assert out.to_pylist() == [None, ["a", "bc"], None, None, ["d"]]
    assert out.offsets.tolist() == [0, 0, 2, 2, 2, 3]
    with pytest.raises(FormatError):
        arr.expand(np.array([True, False]))
    with pytest.raises(FormatError):
        arr.expand(np.array([1, 1, 1]))


def test_take_drops_bytes_of_null_rows() -> None:
    # a null row may still claim bytes/elements (garbage); gathered arrays do not copy them
    s = A.BinaryArray(STRING, np.array([0, 2, 5, 6]), b"abcdef", np.array([True, False, True]))
    out = s.take(np.array([1, 2, 0]))
    assert out.offsets.tolist() == [0, 0, 1, 3] and out.data.tobytes() == b"fab"
    assert out.to_pylist() == [None, "f", "ab"]
    lst = A.ListArray(ArrayType(INT64), np.array([0, 2, 3]), A.from_pylist(INT64, [1, 2, 3]),
                      np.array([False, True]))
    got = lst.take(np.array([0, 1]))
    assert got.offsets.tolist() == [0, 0, 1] and got.to_pylist() == [None, [3]]


def test_combine_same_type_and_absent_parts() -> None:
    a = A.from_pylist(STRING, ["a0", "a1"])
    b = A.from_pylist(STRING, ["b0"])
    out = A.combine([a, None, b], np.array([1, 0, 2, 1, 0], np.int32))
    assert out.type == STRING and out.to_pylist() == [None, "a0", "b0", None, "a1"]
    assert A.combine([a], np.array([0, 0], np.int32)) is a
    assert A.combine([None], np.array([0, 0], np.int32)).to_pylist() == [None, None]
    with pytest.raises(FormatError):
        A.combine([a], np.array([0], np.int32))
    with pytest.raises(FormatError):
        A.combine([a], np.array([0, 1], np.int32))


@given(st.lists(st.integers(-1, 20), max_size=60), st.integers(0, 20))
def test_group_ranks_both_paths(keys: list[int], extra: int) -> None:
    k = np.array(keys, np.int32)
    want, seen = [], {}
    for x in keys:
        want.append(seen.get(x, 0))
        seen[x] = seen.get(x, 0) + 1
    assert A.group_ranks(k, 21 + extra).tolist() == want  # sorting path
    small = np.where(k > 7, -1, k).astype(np.int32)
    want2, seen = [], {}
    for x in small.tolist():
        want2.append(seen.get(x, 0))
        seen[x] = seen.get(x, 0) + 1
    assert A.group_ranks(small, 8).tolist() == want2  # mask path


@SETTINGS
@given(types, st.integers(0, 4))
def test_null_array_every_type(t: Type, n: int) -> None:
    arr = A.null_array(t, n)
    assert arr.type == t and len(arr) == n and arr.to_pylist() == [None] * n
    assert arr.null_count == n
    assert A.concat([arr, A.NullArray(2, t)]).to_pylist() == [None] * (n + 2)


def test_inconsistent_data_is_refused() -> None:
    with pytest.raises(FormatError):  # offsets going backwards
        A.ListArray(ArrayType(INT64), np.array([0, 2, 1]), A.from_pylist(INT64, [1, 2]))
    with pytest.raises(FormatError):  # offsets past the child
        A.BinaryArray(STRING, np.array([0, 5]), b"abc")
    with pytest.raises(FormatError):  # child of the wrong length
        A.StructArray(RecordType((Field("a", INT64),)), 2, (A.from_pylist(INT64, [1]),))
    with pytest.raises(FormatError):  # child of the wrong type
        A.ListArray(ArrayType(INT64), np.array([0, 1]), A.from_pylist(STRING, ["a"]))
    u = UnionType((INT64, STRING))
    kids = (A.from_pylist(INT64, [1]), A.from_pylist(STRING, []))
    with pytest.raises(FormatError):  # tag out of range
        A.UnionArray(u, np.array([2], np.int32), kids)
    with pytest.raises(FormatError):  # member counts disagree with tags
        A.UnionArray(u, np.array([1], np.int32), kids)
    with pytest.raises(FormatError):
        A.MapArray(MapType(INT64, INT64), np.array([0, 1]), A.from_pylist(INT64, [1]),
                   A.from_pylist(INT64, []))
    with pytest.raises(FormatError):  # enum position past the symbols
        A.PrimitiveArray(EnumType(("a",)), np.array([1], np.uint64))
    with pytest.raises(FormatError):
        A.PrimitiveArray(INT64, np.array([1.5]))
    with pytest.raises(FormatError):
        A.concat([A.from_pylist(INT64, [1]), A.from_pylist(STRING, ["a"])])
    with pytest.raises(A.ArrayIndexError):
        A.from_pylist(INT64, [1]).take(np.array([1]))
    with pytest.raises(IndexError):
        A.from_pylist(INT64, [1])[5]


@pytest.mark.parametrize("t", [FLOAT128, DECIMAL64, ArrayType(FLOAT128)])
def test_unsupported_types(t: Type) -> None:
    with pytest.raises(UnsupportedTypeError):
        A.null_array(t, 1)
    with pytest.raises(UnsupportedTypeError):
        A.from_pylist(t, [None])


def test_from_pylist_refuses_wrong_values() -> None:
    for t, v in [(INT8, 300), (INT64, 1.5), (INT64, True), (BOOL, 1), (STRING, b"x"),
                 (IP, "1.2.3.4"), (NET, ipaddress.ip_address("1.2.3.4")),
                 (EnumType(("a",)), "b"), (RecordType((Field("a", INT64),)), {"b": 1}),
                 (ArrayType(INT64), {1}), (NULL, 0), (INT64, UnionValue(0, INT64, 1))]:
        with pytest.raises(EncodeError):
            A.from_pylist(t, [v])
    d = A.from_pylist(TIME, [dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)]).to_pylist()
    assert d == [np.datetime64(10**9, "ns")]
    assert A.from_pylist(SetType(INT64), [{3}]).to_pylist() == [[3]]


def test_combine_single_type_fast_path() -> None:
    """One super type: the part itself comes back, after one check that every ID is 0."""
    part = A.PrimitiveArray(INT64, np.arange(5, dtype=np.int64))
    assert A.combine([part], np.zeros(5, np.int32)) is part
    with pytest.raises(FormatError, match="super id out of range"):
        A.combine([part], np.array([0, 0, 1, 0, 0], np.int32))
    assert isinstance(A.combine([A.NullArray(3)], np.zeros(3, np.int32)), A.NullArray)


def test_utf8_checked_skips_arrow_validation_only_when_set() -> None:
    pa = pytest.importorskip("pyarrow")
    bad = A.BinaryArray(STRING, np.array([0, 2]), np.frombuffer(b"\xff\xfe", np.uint8))
    with pytest.raises(FormatError, match="UTF-8"):
        bad.to_arrow()
    good = A.BinaryArray(STRING, np.array([0, 2, 5]), np.frombuffer(b"hi\xc3\xa9!", np.uint8),
                         utf8_checked=True)
    for arr in (good, good.take([1, 0]), good.slice(1, 2),
                good.expand(np.array([True, False, True]))):
        assert arr.utf8_checked
        assert arr.to_arrow().to_pylist() == arr.to_pylist()
    assert isinstance(good.to_arrow(), pa.Array)


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=4)), max_size=12),
       st.integers(0, 12), st.integers(0, 12))
def test_elements_of_a_list_slice_are_its_rows_elements(rows: list[list[int] | None],
                                                        start: int, stop: int) -> None:
    """A slice of a list array shares the whole child; ``elements()`` is only its rows' own,
    which is what JSON output of a sliced column is built from."""
    sl = A.from_pylist(ArrayType(INT64), rows).slice(start, stop)
    assert isinstance(sl, A.ListArray)
    want = [x for r in rows[start:stop] if r is not None for x in r]
    assert sl.elements().to_pylist() == want
    assert [json.loads(t) for t in value_lines(sl).decode().splitlines()] == \
        rows[start:stop]
