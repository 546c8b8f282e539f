"""Arrays as Arrow C data (the PyCapsule interface), built without pyarrow.

polars, DuckDB, pyarrow and any other Arrow consumer read a result through
``__arrow_c_stream__`` with no conversion library in between, so a result goes
to them in its own buffers: nanoarrow assembles the C structs around our numpy
buffers (it keeps a reference to each one, and copies none of them).  What is
copied is what Arrow lays out differently: validity and bool bits (we hold a
byte per row), map offsets (int32 in Arrow), union type ids (int8) and offsets
(int32), and the string forms of the kinds numpy has no dtype for.

The types and values are those of :mod:`.arrow` (``to_arrow``) exactly, field
for field, down to the ``csup.name`` field metadata, so a consumer sees the same
table whichever way it asks; the one difference is an enum without pyarrow
installed: nanoarrow cannot assemble a dictionary array, so it arrives as the
``large_string`` of its symbols (with pyarrow, the same dictionary ``to_arrow``
gives).  nanoarrow is imported only when a capsule is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..model.errors import CsupError, UnsupportedTypeError
from ..model.kinds import FLOAT_DTYPES, INT_DTYPES, OBJECT_KINDS, phys
from ..model.types import NULL, EnumType, NamedType, PrimitiveType
from .arrow import export, require
from .buffers import group_ranks
from .nested import fold_nulls

__all__ = ["batch_schema", "export_batch", "export_column", "nanoarrow", "stream_of"]


def nanoarrow() -> Any:
    """The nanoarrow module, or a MissingDependencyError saying how to install it."""
    return require("nanoarrow", "Arrow capsules need nanoarrow: pip install nanoarrow")


class _Out:
    """One exported array: its nanoarrow schema (named, with metadata) and C array."""

    __slots__ = ("array", "schema")

    def __init__(self, schema: Any, array: Any) -> None:
        self.schema, self.array = schema, array


def export_column(a: Any, name: str = "") -> tuple[Any, Any]:
    """``(schema, CArray)`` of one array (already folded, if the caller wants it)."""
    out = _export(a, nanoarrow(), name, None)
    return out.schema, out.array


def _export(a: Any, na: Any, name: str, metadata: dict[str, str] | None) -> _Out:
    return _BY_KIND[a.kind](a, na, name, metadata)


def _make(na: Any, t: Any, name: str, metadata: dict[str, str] | None, n: int,
          buffers: Sequence[Any], null_count: int, children: Sequence[_Out] = ()) -> _Out:
    schema = na.c_schema(na.Schema(t, name=name, metadata=metadata))
    arr = na.c_array_from_buffers(schema, n, buffers, null_count=null_count,
                                  children=[c.array for c in children],
                                  validation_level="none")
    return _Out(schema, arr)


def _bits(flags: np.ndarray | None) -> np.ndarray | None:
    """A byte-per-row flag array as Arrow's little-endian bitmap (None: all valid)."""
    if flags is None:
        return None
    return np.packbits(flags, bitorder="little")


def _contig(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a)


def _utf8(values: Iterable[str | None], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64) and UTF-8 bytes of Python strings (None: an empty value)."""
    encoded = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(n + 1, np.int64)
    if n:
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(encoded), np.uint8)


def _primitive(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    n, bitmap, nulls = len(a), _bits(a.validity), a.null_count
    p = phys(a.type)
    if isinstance(p, EnumType):
        return _enum(a, p, na, name, md)
    if p.name in OBJECT_KINDS:
        offsets, data = _utf8((None if x is None else str(x) for x in a.to_pylist()), n)
        return _make(na, na.large_string(), name, md, n, [bitmap, offsets, data], nulls)
    if p.name == "bool":
        return _make(na, na.bool_(), name, md, n,
                     [bitmap, np.packbits(a.values, bitorder="little")], nulls)
    if p.name == "time":
        t, data = na.timestamp("ns", "UTC"), a.values.view(np.int64)
    elif p.name == "duration":
        t, data = na.duration("ns"), a.values.view(np.int64)
    else:
        dt = INT_DTYPES.get(p.name) or FLOAT_DTYPES[p.name]
        t, data = _NA_NUMBER[np.dtype(dt).name](na), a.values.astype(dt, copy=False)
    return _make(na, t, name, md, n, [bitmap, _contig(data)], nulls)


_NA_NUMBER: dict[str, Callable[[Any], Any]] = {
    "int8": lambda na: na.int8(), "int16": lambda na: na.int16(),
    "int32": lambda na: na.int32(), "int64": lambda na: na.int64(),
    "uint8": lambda na: na.uint8(), "uint16": lambda na: na.uint16(),
    "uint32": lambda na: na.uint32(), "uint64": lambda na: na.uint64(),
    "float16": lambda na: na.float16(), "float32": lambda na: na.float32(),
    "float64": lambda na: na.float64(),
}


def _enum(a: Any, p: EnumType, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    """The dictionary ``to_arrow`` gives when pyarrow is there (nanoarrow cannot build
    one), else the symbols as strings."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        syms = list(p.symbols)
        idx = a.values if a.validity is None else np.where(a.validity, a.values, 0)
        got = [syms[int(i)] for i in idx.tolist()]
        offsets, data = _utf8(got, len(a))
        return _make(na, na.large_string(), name, md, len(a),
                     [_bits(a.validity), offsets, data], a.null_count)

    pa_arr = export(a)
    schema = na.c_schema(na.Schema(na.c_schema(pa_arr.type), name=name, metadata=md))
    return _Out(schema, na.c_array(pa_arr))


def _binary(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    is_str = phys(a.type).name == "string"
    if is_str and not a.utf8_checked:
        from ..decode.kernels import validate_utf8

        validate_utf8(_contig(a.offsets), _contig(a.data))
    return _make(na, na.large_string() if is_str else na.large_binary(), name, md, len(a),
                 [_bits(a.validity), _contig(a.offsets), _contig(a.data)], a.null_count)


def _null(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    if phys(a.type) == NULL:
        return _make(na, na.null(), name, md, len(a), [], len(a))
    return _export(a.concrete(), na, name, md)


def _list(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    child = _export(a.values, na, "item", None)
    return _make(na, na.large_list(child.schema), name, md, len(a),
                 [_bits(a.validity), _contig(a.offsets)], a.null_count, [child])


def _map(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    p = phys(a.type)
    kp = phys(p.key)
    n, bitmap = len(a), _bits(a.validity)
    if isinstance(kp, PrimitiveType) and kp != NULL:
        keys = _export(a.keys, na, "key", None)
        if keys.array.null_count:
            raise UnsupportedTypeError("an Arrow map cannot hold a null key")
        if int(a.offsets[-1]) > np.iinfo(np.int32).max:
            raise UnsupportedTypeError("map entries exceed Arrow's int32 map offsets")
        vals = _export(a.values, na, "value", None)
        mt = na.c_schema(na.map_(keys.schema, vals.schema))
        entries_t = mt.child(0)
        n_entries = keys.array.length
        entries = _Out(entries_t, na.c_array_from_buffers(
            entries_t, n_entries, [None], null_count=0, children=[keys.array, vals.array],
            validation_level="none"))
        return _make(na, mt, name, md, n, [bitmap, a.offsets.astype(np.int32)],
                     a.null_count, [entries])
    keys = _export(a.keys, na, "key", None)
    vals = _export(a.values, na, "value", None)
    entries = _make(na, na.struct([keys.schema, vals.schema]), "item", None,
                    keys.array.length, [None], 0, [keys, vals])
    return _make(na, na.large_list(entries.schema), name, md, n,
                 [bitmap, _contig(a.offsets)], a.null_count, [entries])


def _struct(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    children = [_export(c, na, f.name,
                        {"csup.name": f.type.name} if isinstance(f.type, NamedType) else None)
                for c, f in zip(a.fields, phys(a.type).fields, strict=True)]
    return _make(na, na.struct([c.schema for c in children]), name, md, len(a),
                 [_bits(a.validity)], a.null_count, children)


def _union(a: Any, na: Any, name: str, md: dict[str, str] | None) -> _Out:
    members = phys(a.type).types
    if not members or len(members) > 127:
        raise UnsupportedTypeError(f"Arrow unions need 1..127 members, {a.type} has "
                                   f"{len(members)}")
    kids = list(a.children)
    pos = a.positions()
    type_ids = a.tags
    nulls = type_ids < 0
    if nulls.any():  # as .arrow: a null row is a null of the first member, in row order
        type_ids = np.where(nulls, 0, type_ids)
        kids[0] = kids[0].expand(~nulls[type_ids == 0])
        pos = group_ranks(type_ids, len(kids))
    children = [_export(c, na, str(m), None) for c, m in zip(kids, members, strict=True)]
    t = na.dense_union([c.schema for c in children])
    return _make(na, t, name, md, len(a),
                 [type_ids.astype(np.int8), pos.astype(np.int32)], 0, children)


_BY_KIND: dict[str, Callable[[Any, Any, str, dict[str, str] | None], _Out]] = {
    "primitive": _primitive, "binary": _binary, "null": _null, "list": _list, "map": _map,
    "struct": _struct, "union": _union,
}


# ------------------------------------------------------------------ batches ---
def _folded(columns: dict[str, Any]) -> dict[str, Any]:
    return {p: fold_nulls(a) for p, a in columns.items()}


def export_batch(columns: dict[str, Any], num_rows: int) -> tuple[Any, Any]:
    """``(schema, CArray)``: the columns (folded as ``to_arrow`` folds them) as one
    record batch, a struct array of ``num_rows`` rows named by the column paths."""
    na = nanoarrow()
    outs = [_export(a, na, p, None) for p, a in _folded(columns).items()]
    return _batch(na, outs, num_rows)


def _batch(na: Any, outs: list[_Out], num_rows: int) -> tuple[Any, Any]:
    schema = na.c_schema(na.struct([o.schema for o in outs], nullable=False))
    arr = na.c_array_from_buffers(schema, num_rows, [None], null_count=0,
                                  children=[o.array for o in outs], validation_level="none")
    return schema, arr


def batch_schema(columns: dict[str, Any]) -> Any:
    """The record-batch schema of these columns (nanoarrow CSchema)."""
    return export_batch(columns, 0 if not columns else len(next(iter(columns.values()))))[0]


def stream_of(schema: Any, batches: Iterable[Any]) -> Any:
    """An ``arrow_array_stream`` capsule over ``batches`` (CArrays of ``schema``).

    A list is exported at once (nanoarrow); any other iterable is read lazily, one
    batch per ``get_next`` of the consumer, through arro3-core's reader, so a stream
    of batches holds one batch at a time.
    """
    if isinstance(batches, (list, tuple)):
        from nanoarrow.c_array_stream import CArrayStream

        stream = CArrayStream.from_c_arrays(list(batches), schema, validate=False)
        return stream.__arrow_c_stream__()
    arro3 = require("arro3.core", "a lazy Arrow stream needs arro3-core: pip install arro3-core")
    return arro3.RecordBatchReader.from_batches(schema, batches).__arrow_c_stream__()


def check_requested(requested_schema: Any) -> None:
    """The PyCapsule protocol lets a producer keep its own schema when asked for
    another: only a non-capsule is refused (a caller's mistake)."""
    if requested_schema is not None and type(requested_schema).__name__ != "PyCapsule":
        raise CsupError(f"requested_schema must be an arrow_schema PyCapsule, not "
                        f"{type(requested_schema).__name__}")
