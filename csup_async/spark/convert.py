"""Scan results as Arrow arrays of exactly the types Spark expects.

Spark checks a Python data source's batches against
``to_arrow_schema(schema)`` field for field (string, not large_string;
microsecond UTC timestamps; nullability of struct fields), so every column is
rebuilt to that exact Arrow type here.  The conversion starts from our own
arrays rather than their ``to_arrow()`` form because unions need each row's
member and position (Arrow unions have no validity) and the JSON text of the
"conflicting types" rule comes from the library's own JSON mapping.

Rules (the schema module decides the types, this one obeys them):
integers widen and are range-checked when narrowed (an error, never a
wrapped value); integers meet floats as floats; ``time`` is floored to
microseconds (or days for a DateType); a union takes each member's value
converted to the column type; a string column holds strings as they are and
any other value as its JSON text (times in RFC 3339, bytes as 0x-hex).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from .. import arrays as A
from ..arrays.jsonout import json_value
from ..model.errors import CsupError, UnsupportedTypeError
from ..model.types import EnumType, PrimitiveType, Type
from .schema import bare

_NS_PER_US = 1000
_NS_PER_DAY = 86_400 * 10**9
_INT32_MAX = 2**31 - 1


def _name(t: Type) -> str:
    u = bare(t)
    if isinstance(u, EnumType):
        return "enum"
    return u.name if isinstance(u, PrimitiveType) else u.kind


def _mask(a: A.Array) -> pa.Array | None:
    return None if a.validity is None else pa.array(~a.validity)


def conform(a: A.Array, target: pa.DataType, where: str) -> pa.Array:
    """``a`` as an Arrow array of type ``target`` (``where`` names the column in errors)."""
    n = len(a)
    if pa.types.is_null(target):
        if a.null_count != n and not isinstance(a, A.NullArray):
            raise UnsupportedTypeError(f"column {where}: a NullType column cannot hold "
                                       f"{bare(a.type)} values")
        return pa.nulls(n)
    if isinstance(a, A.NullArray):
        return pa.nulls(n, target)
    if isinstance(a, A.UnionArray):
        return _union(a, target, where)
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return _text(a, target)
    if isinstance(a, A.StructArray) and pa.types.is_struct(target):
        return _struct(a, target, where)
    if isinstance(a, A.ListArray) and (pa.types.is_list(target) or
                                       pa.types.is_large_list(target)):
        return _list(a, target, where)
    if isinstance(a, A.MapArray) and pa.types.is_map(target):
        return _map(a, target, where)
    if isinstance(a, (A.PrimitiveArray, A.BinaryArray)):
        return _leaf(a, target, where)
    raise _mismatch(a, target, where)


def _mismatch(a: A.Array, target: pa.DataType, where: str) -> CsupError:
    return UnsupportedTypeError(f"column {where}: cannot read {bare(a.type)} values as "
                                f"Arrow {target} (give a schema with a compatible type, or "
                                "string)")


def _union(a: A.UnionArray, target: pa.DataType, where: str) -> pa.Array:
    kids = [conform(c, target, where) for c in a.children]
    sizes = np.array([len(k) for k in kids], np.int64)
    base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    total = int(sizes.sum())
    tags = a.tags.astype(np.int64)
    idx = np.where(tags >= 0, base[np.clip(tags, 0, None)] + a.positions(), total)
    whole = pa.concat_arrays([*kids, pa.nulls(1, target)])
    return whole.take(pa.array(idx))


def _struct(a: A.StructArray, target: pa.StructType, where: str) -> pa.Array:
    names = [f.name for f in bare(a.type).fields]  # type: ignore[attr-defined]
    by_name = dict(zip(names, a.fields, strict=True))
    n = len(a)
    fields = [target.field(i) for i in range(target.num_fields)]
    if not fields:
        return pa.array([None if a.validity is not None and not ok else {}
                         for ok in (a.validity if a.validity is not None else [True] * n)],
                        target)
    kids = []
    for f in fields:
        child = by_name.get(f.name)
        kids.append(pa.nulls(n, f.type) if child is None
                    else conform(child, f.type, f"{where}.{f.name}"))
    return pa.StructArray.from_arrays(kids, fields=fields, mask=_mask(a))


def _rebased(a: A.ListArray | A.MapArray, where: str) -> tuple[pa.Array, int, int]:
    off = a.offsets
    lo, hi = int(off[0]), int(off[-1])
    if hi - lo > _INT32_MAX:
        raise CsupError(f"column {where}: {hi - lo} nested values in one batch exceed Arrow's "
                        "int32 offsets; lower the batchRows option")
    return pa.array((off - lo).astype(np.int32)), lo, hi


def _list(a: A.ListArray, target: Any, where: str) -> pa.Array:
    offsets, lo, hi = _rebased(a, where)
    elems = conform(a.values.slice(lo, hi), target.value_type, f"{where}[]")
    return pa.ListArray.from_arrays(offsets, elems, type=target, mask=_mask(a))


def _map(a: A.MapArray, target: pa.MapType, where: str) -> pa.Array:
    offsets, lo, hi = _rebased(a, where)
    keys = conform(a.keys.slice(lo, hi), target.key_type, f"{where}{{key}}")
    if keys.null_count:
        raise UnsupportedTypeError(f"column {where}: a Spark map cannot hold a null key")
    items = conform(a.values.slice(lo, hi), target.item_type, f"{where}{{value}}")
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_mask(a))


def _floor_ns(a: A.PrimitiveArray, unit_ns: int) -> np.ndarray:
    ns = a.values.view(np.int64)
    return np.floor_divide(ns, unit_ns)


def _leaf(a: A.PrimitiveArray | A.BinaryArray, target: pa.DataType, where: str) -> pa.Array:
    name = _name(a.type)
    mask = None if a.validity is None else ~a.validity
    if name == "time" and isinstance(a, A.PrimitiveArray):
        if pa.types.is_timestamp(target):
            unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[target.unit]
            return pa.array(_floor_ns(a, unit), target, mask=mask)
        if pa.types.is_date32(target):
            return pa.array(_floor_ns(a, _NS_PER_DAY).astype(np.int32), target, mask=mask)
        if pa.types.is_int64(target):
            return pa.array(a.values.view(np.int64), target, mask=mask)
        raise _mismatch(a, target, where)
    if name == "duration" and isinstance(a, A.PrimitiveArray):
        if pa.types.is_duration(target):
            unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[target.unit]
            return pa.array(_floor_ns(a, unit), target, mask=mask)
        if pa.types.is_int64(target):
            return pa.array(a.values.view(np.int64), target, mask=mask)
        raise _mismatch(a, target, where)
    arr = a.to_arrow()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.type == target:
        return arr
    src_num = pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)
    ok = ((src_num and (pa.types.is_integer(target) or pa.types.is_floating(target)
                        or pa.types.is_decimal(target)))
          or (pa.types.is_boolean(arr.type) and pa.types.is_boolean(target))
          or ((pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type))
              and pa.types.is_binary(target))
          or (pa.types.is_large_string(arr.type) and pa.types.is_decimal(target)))
    if not ok:
        raise _mismatch(a, target, where)
    lossy = pa.types.is_floating(target) and pa.types.is_integer(arr.type)
    try:
        return arr.cast(target, safe=not lossy)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CsupError(f"column {where}: {bare(a.type)} value out of range of Arrow "
                        f"{target}: {e}") from None


def json_text(v: Any) -> str:
    """A value's JSON text; a value whose JSON form is a string is that string, unquoted."""
    j = json_value(v)
    if isinstance(j, str):
        return j
    return json.dumps(j, ensure_ascii=False, separators=(",", ":"))


def _text(a: A.Array, target: pa.DataType) -> pa.Array:
    name = _name(a.type)
    if name == "string" or name in ("int128", "int256", "uint128", "uint256", "ip", "net",
                                    "type", "enum", "bool") or (
            name.startswith(("int", "uint")) and isinstance(a, A.PrimitiveArray)):
        arr = a.to_arrow()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        return arr.cast(target)
    return pa.array([None if v is None else json_text(v) for v in a.to_pylist()], target)
