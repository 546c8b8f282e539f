"""The Arrow export of arrays (``Array.to_arrow``; the mapping is in the package docstring).

Buffers are handed to Arrow as they are wherever the layouts agree (int64 offsets
become ``large_*`` types, so strings, bytes and lists are zero-copy).  This module
reads arrays through their public attributes and dispatches on ``Array.kind``, so
it needs none of the model's classes, and pyarrow is imported only when called.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..model.errors import CsupError, FormatError, UnsupportedTypeError
from ..model.kinds import FLOAT_DTYPES, INT_DTYPES, OBJECT_KINDS, phys
from ..model.types import NULL, EnumType, NamedType, PrimitiveType
from .buffers import group_ranks


class MissingDependencyError(CsupError, ImportError):
    """An optional dependency (pyarrow) is needed for this call and is not installed."""


def require(module: str, message: str) -> Any:
    """The optional dependency ``module``, imported when a call first needs it (so
    ``import csup_async`` loads none of them), or a MissingDependencyError saying
    ``message``: what needs it, and the ``pip install`` that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(message) from e


def export(a: Any) -> Any:
    """``a`` as a pyarrow Array (already folded, if the caller wants it folded)."""
    return _export(a, _pyarrow())


def _export(a: Any, pa: Any) -> Any:
    return _BY_KIND[a.kind](a, pa)


def _pyarrow() -> Any:
    return require("pyarrow", "to_arrow needs pyarrow: pip install 'csup-async[arrow]'")


def _bitmap(pa: Any, validity: np.ndarray | None) -> Any:
    if validity is None:
        return None
    return pa.py_buffer(np.packbits(validity, bitorder="little"))


def _buf(pa: Any, a: np.ndarray) -> Any:
    return pa.py_buffer(np.ascontiguousarray(a))


def _primitive(a: Any, pa: Any) -> Any:
    n, bitmap, nulls = len(a), _bitmap(pa, a.validity), a.null_count
    p = phys(a.type)
    name = "enum" if isinstance(p, EnumType) else p.name
    if name == "enum":
        idx = a.values if a.validity is None else np.where(a.validity, a.values, 0)
        indices = pa.Array.from_buffers(pa.int32(), n, [bitmap, _buf(pa, idx.astype(np.int32))],
                                        null_count=nulls)
        syms = pa.array(list(p.symbols), pa.string())
        return pa.DictionaryArray.from_arrays(indices, syms)
    if name in OBJECT_KINDS:
        return pa.array([None if x is None else str(x) for x in a.to_pylist()],
                        pa.large_string())
    if name == "bool":
        return pa.Array.from_buffers(pa.bool_(), n, [bitmap, pa.py_buffer(
            np.packbits(a.values, bitorder="little"))], null_count=nulls)
    if name == "time":
        at, data = pa.timestamp("ns", tz="UTC"), a.values.view(np.int64)
    elif name == "duration":
        at, data = pa.duration("ns"), a.values.view(np.int64)
    else:
        dt = INT_DTYPES.get(name) or FLOAT_DTYPES[name]
        at, data = pa.from_numpy_dtype(np.dtype(dt)), a.values.astype(dt, copy=False)
    return pa.Array.from_buffers(at, n, [bitmap, _buf(pa, data)], null_count=nulls)


def _binary(a: Any, pa: Any) -> Any:
    is_str = phys(a.type).name == "string"
    out = pa.Array.from_buffers(
        pa.large_string() if is_str else pa.large_binary(), len(a),
        [_bitmap(pa, a.validity), _buf(pa, a.offsets), _buf(pa, a.data)],
        null_count=a.null_count)
    if is_str and not a.utf8_checked:
        try:
            out.validate(full=True)
        except pa.ArrowInvalid as e:
            raise FormatError(f"string value is not valid UTF-8: {e}") from e
    return out


def _null(a: Any, pa: Any) -> Any:
    if phys(a.type) == NULL:
        return pa.nulls(len(a))
    return _export(a.concrete(), pa)


def _list(a: Any, pa: Any) -> Any:
    child = _export(a.values, pa)
    return pa.Array.from_buffers(pa.large_list(child.type), len(a),
                                 [_bitmap(pa, a.validity), _buf(pa, a.offsets)],
                                 null_count=a.null_count, children=[child])


def _map(a: Any, pa: Any) -> Any:
    p = phys(a.type)
    keys, vals = _export(a.keys, pa), _export(a.values, pa)
    bitmap = _bitmap(pa, a.validity)
    kp = phys(p.key)
    if isinstance(kp, PrimitiveType) and kp != NULL:
        if keys.null_count:
            raise UnsupportedTypeError("an Arrow map cannot hold a null key")
        if int(a.offsets[-1]) > np.iinfo(np.int32).max:
            raise UnsupportedTypeError("map entries exceed Arrow's int32 map offsets")
        mt = pa.map_(keys.type, vals.type)
        entries = pa.StructArray.from_arrays([keys, vals],
                                             fields=[mt.key_field, mt.item_field])
        return pa.Array.from_buffers(mt, len(a),
                                     [bitmap, _buf(pa, a.offsets.astype(np.int32))],
                                     null_count=a.null_count, children=[entries])
    entries = pa.StructArray.from_arrays([keys, vals], names=["key", "value"])
    return pa.Array.from_buffers(pa.large_list(entries.type), len(a),
                                 [bitmap, _buf(pa, a.offsets)],
                                 null_count=a.null_count, children=[entries])


def _struct(a: Any, pa: Any) -> Any:
    children = [_export(c, pa) for c in a.fields]
    fields = []
    for f, c in zip(phys(a.type).fields, children, strict=True):
        md = {"csup.name": f.type.name} if isinstance(f.type, NamedType) else None
        fields.append(pa.field(f.name, c.type, metadata=md))
    return pa.Array.from_buffers(pa.struct(fields), len(a), [_bitmap(pa, a.validity)],
                                 null_count=a.null_count, children=children)


def _union(a: Any, pa: Any) -> Any:
    members = phys(a.type).types
    if not members or len(members) > 127:
        raise UnsupportedTypeError(f"Arrow unions need 1..127 members, {a.type} has "
                                   f"{len(members)}")
    kids = list(a.children)
    pos = a.positions()
    nulls = a.tags < 0
    type_ids = a.tags
    if nulls.any():
        # Arrow unions have no validity: null rows become nulls of the first member,
        # in row order among its rows (each child's offsets must increase)
        type_ids = np.where(nulls, 0, a.tags)
        kids[0] = kids[0].expand(~nulls[type_ids == 0])
        pos = group_ranks(type_ids, len(kids))
    children = [_export(c, pa) for c in kids]
    return pa.UnionArray.from_dense(pa.array(type_ids.astype(np.int8), pa.int8()),
                                    pa.array(pos.astype(np.int32), pa.int32()), children,
                                    [str(m) for m in members], list(range(len(members))))


_BY_KIND: dict[str, Callable[[Any, Any], Any]] = {
    "primitive": _primitive, "binary": _binary, "null": _null, "list": _list, "map": _map,
    "struct": _struct, "union": _union,
}
