"""Primitive columns straight from SuperDB vectors into numpy arrays.

Going through Python values (:mod:`.vectors`, then ``arrays.from_pylist``) costs
microseconds a value; a column whose vectors are all integers, floats or strings
(plain, dict or const, under named types) is built here with numpy instead:
intcomp-decoded words cast to the column's dtype, dict entries taken by their
byte index, string bytes and offsets used as they are.  Anything else (unions,
nested values, optional fields, a path some rows lack as a value) returns None
and takes the general path; rows of a super type without the path are null.
"""

from __future__ import annotations

import numpy as np

from ... import arrays as A
from ...arrays.buffers import route, scatter_offsets, take_binary
from ...format.superdb import intcomp
from ...format.superdb.meta import ObjectMeta
from ...model.errors import FormatError
from ...model.kinds import FLOAT_DTYPES, INT_DTYPES
from ...model.types import PrimitiveType, Type, underlying
from . import columns as C
from .vectors import Decoder

_NUMERIC = {**INT_DTYPES, **FLOAT_DTYPES, "bool": np.bool_}
_STRINGS = ("string", "bytes")


def _leaf(dec: Decoder, i: int, name: str, count: int) -> tuple | None:
    """The values of vector ``i``: a numpy array (numbers) or (offsets, data) (strings)."""
    nodes = dec.nodes
    n = nodes[i]
    while n.kind in ("named", "fusion"):
        n = nodes[n.kids[0]]
    if n.kind == "dict":
        entries = _leaf(dec, n.kids[0], name, C.node_len_of_nodes(nodes, n.kids[0]))
        if entries is None:
            return None
        index = np.frombuffer(dec.seg(n, "index"), dtype=np.uint8).astype(np.int64)
        size = len(entries[0]) - 1 if name in _STRINGS else len(entries[0])
        if index.size != count or (index.size and int(index.max()) >= size):
            raise FormatError("dict vector's index does not fit its entries")
        if name not in _STRINGS:
            return (entries[0][index],)
        offs, data = entries
        from ...arrays.buffers import take_binary  # a memcpy per value, in C

        return take_binary(np.asarray(offs, dtype=np.int64), np.asarray(data, np.uint8),
                           index, None)
    if n.count != count and not (n.kind == "bytes" and count == 0):
        raise FormatError(f"{n.kind} vector holds {n.count} values where {count} belong")
    if n.kind == "const":
        if n.value is None:
            return ()  # null in every row
        if name in _STRINGS and not isinstance(n.value, str | bytes):
            return None
        if name in _STRINGS:
            b = n.value.encode() if isinstance(n.value, str) else bytes(n.value)
            offs = np.arange(count + 1, dtype=np.int64) * len(b)
            return offs, np.frombuffer(b * count, dtype=np.uint8)
        return (np.full(count, n.value, dtype=_NUMERIC[name]),)
    if name in _STRINGS:
        if n.kind != "bytes":
            return None
        if count == 0:
            return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
        data = np.frombuffer(dec.view(n, "bytes"), dtype=np.uint8)  # kept as it is
        offs = intcomp.uint32s(dec.seg(n, "offsets"))
        if offs.size != count + 1 or offs[0] != 0 or int(offs[-1]) > data.size or (
                np.diff(offs) < 0).any():
            raise FormatError("bytes vector's offsets do not fit its bytes")
        return offs, data
    if n.kind in ("int", "uint"):
        raw = dec.seg(n, "values")
        v = intcomp.int64s(raw) if n.kind == "int" else intcomp.uint64s(raw)
        return (v.astype(_NUMERIC[name]),)
    if n.kind == "primitive" and name == "bool":  # tag-encoded: 0x02 then the byte
        raw = np.frombuffer(dec.seg(n, "values"), dtype=np.uint8)
        if raw.size != 2 * count or (raw[0::2] != 2).any() or (raw[1::2] > 1).any():
            return None  # let the general path say what is wrong
        return (raw[1::2].astype(bool),)
    if n.kind == "bool" and name == "bool":  # v23: bits in 64-bit words
        raw = np.frombuffer(dec.seg(n, "values"), dtype=np.uint8)
        if raw.size * 8 < count:
            return None
        return (np.unpackbits(raw, bitorder="little")[:count].astype(bool),)
    if n.kind == "float":
        raw = dec.seg(n, "values")
        return (np.frombuffer(raw, dtype="<f8").astype(_NUMERIC[name]),)
    return None


def _nullable(dec: Decoder, i: int, name: str, count: int, t: Type) -> A.Array | None:
    """A v23 union of a primitive and null (super main's nullable column): its member's
    values spread over the rows its tags say, null elsewhere (None: not such a union)."""
    nodes = dec.nodes
    n = nodes[i]
    while n.kind in ("named", "fusion"):
        n = nodes[n.kids[0]]
    if n.kind != "union" or len(n.kids) != 2 or n.count != count:
        return None
    kinds = [nodes[k].kind for k in n.kids]
    if "null" not in kinds:
        return None
    j = 1 - kinds.index("null")
    tags = dec.union_tag_array(n)
    if tags.size != count:
        return None
    mask = tags == j
    got = _leaf(dec, n.kids[j], name, int(mask.sum()))
    if got is None or got == ():
        return None
    if name not in _STRINGS:
        out = np.zeros(count, dtype=got[0].dtype)
        out[mask] = got[0]
        return A.PrimitiveArray(t, out, mask)
    src_offs, src = got
    offs = scatter_offsets(src_offs.astype(np.int64, copy=False), mask)
    return A.BinaryArray(t, offs, np.asarray(src[int(src_offs[0]):int(src_offs[-1])]), mask)


def column(dec: Decoder, obj: ObjectMeta, comps: tuple[str, ...], t: Type,
           tags: np.ndarray | None) -> A.Array | None:
    """The column at ``comps`` over ``obj``'s rows, or None (take the general path)."""
    p = underlying(t)
    if not isinstance(p, PrimitiveType) or p.name not in (*_NUMERIC, *_STRINGS):
        return None
    name = p.name
    tops = C.tops_of(obj)
    parts = []
    for top in tops:
        target = C.resolve(obj.nodes, top, comps)
        count = C.node_len_of(obj, top)
        if target is None:
            parts.append(None)
            continue
        if target.rest or target.opt is not None:
            return None
        if len(tops) == 1:
            nullable = _nullable(dec, target.node, name, count, t)
            if nullable is not None:
                return nullable
        got = _leaf(dec, target.node, name, count)
        if got is None:
            return None
        parts.append(got or None)  # () from a const null: null rows, as a missing path
    n = obj.length
    if len(tops) == 1 and parts[0] is not None:
        got = parts[0]
        return (A.BinaryArray(t, got[0], got[1]) if name in _STRINGS
                else A.PrimitiveArray(t, got[0]))
    if all(got is None for got in parts):
        return A.null_array(t, n)
    which = tags if tags is not None else np.zeros(n, dtype=np.int64)
    if name in _STRINGS:
        return _strings(t, parts, which)
    # the super types' values put in row order by one pass over the row tags (in C:
    # arrays.combine), not a mask of every row per super type (hundreds of types)
    arrays: list[A.Array | None] = [
        None if got is None else (A.BinaryArray(t, got[0], got[1]) if name in _STRINGS
                                  else A.PrimitiveArray(t, got[0]))
        for got in parts]
    return A.combine(arrays, which)


def _strings(t: Type, parts: list[tuple | None], which: np.ndarray) -> A.Array:
    """The strings of each top-level vector (``(offsets, data)`` from :func:`_leaf`,
    offsets from 0; None: null rows) in row order: the parts' offsets rebased and laid
    end to end in a few numpy calls, then one take in C by each row's place among them
    (what ``arrays.combine`` does, without an array made and checked per part: a file of
    hundreds of super types has hundreds of parts per column)."""
    present = [k for k, got in enumerate(parts) if got is not None]
    offs = [parts[k][0] for k in present]  # type: ignore[index]
    m = len(offs)
    sizes = np.fromiter((o.size - 1 for o in offs), np.int64, m)
    ends = np.fromiter((o[-1] for o in offs), np.int64, m)
    data = np.concatenate([parts[k][1][:e] for k, e in  # type: ignore[index]
                           zip(present, ends.tolist(), strict=True)])
    body = np.concatenate([o[1:] for o in offs]).astype(np.int64)
    body += np.repeat(np.cumsum(ends) - ends, sizes)
    offsets = np.concatenate((np.zeros(1, np.int64), body))
    base = np.full(len(parts), -1, np.int64)
    base[present] = np.cumsum(sizes) - sizes
    idx = route(which, base)  # -1: a row of a top-level vector without the path
    o, d = take_binary(offsets, data, idx, None)
    return A.BinaryArray(t, o, d, None if m == len(parts) else idx >= 0)


#: for :mod:`.columnar23` (v23 vectors a column at a time), which builds its leaves here
leaf = _leaf
NUMERIC = _NUMERIC
