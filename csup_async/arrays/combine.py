"""Rows in file order from per-super-type parts (a column of a file with several super
types is decoded per type, then combined): one type's array, or a dense union."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..model.errors import FormatError
from ..model.types import NULL, Type, UnionType
from .buffers import concat_validity, rebased_offsets, route, take_binary
from .model import Array, BinaryArray, PrimitiveArray
from .nested import NullArray, UnionArray, concat, null_array


def combine(parts: Sequence[Array | None], super_ids: Any) -> Array:
    """Rows in file order from per-super-type parts: row r is the next value of part super_ids[r].

    Parts of one type give an array of that type; several types give a
    ``UnionArray`` over them in part order (a part's null values stay typed
    nulls of its member).  Rows of a None part, and of a part of type null when
    other types exist, are null.  Each row's place in its part comes from one pass
    over the IDs.
    """
    sid = np.asarray(super_ids)
    if sid.ndim != 1 or (sid.dtype.kind not in "iu" and sid.size):
        raise FormatError("super ids must be a 1-D integer array")
    if len(parts) == 1 and parts[0] is not None and len(parts[0]) == sid.size:
        # one super type (most files): every ID must be 0, and then the part is
        # the answer; one any() instead of a cast, min, max and bincount of 1M IDs
        if sid.any():
            raise FormatError("super id out of range 0..0")
        p = parts[0]
        return NullArray(sid.size) if p.type == NULL else p
    n, k = sid.size, len(parts)
    counts = _id_counts(sid, k)
    for i, p in enumerate(parts):
        if p is not None and len(p) != int(counts[i]):
            raise FormatError(f"super type {i} has {len(p)} values for {int(counts[i])} rows")
    # which distinct type each part contributes to (a dict: files with thousands of
    # super types must not cost a comparison per pair)
    index: dict[Type, int] = {}
    member = np.full(k, -1, np.int64)
    for i, p in enumerate(parts):
        if p is not None and p.type != NULL:
            member[i] = index.setdefault(p.type, len(index))
    distinct = list(index)
    if not distinct:
        return NullArray(n)
    if len(distinct) == 1:
        for i in range(k):
            if member[i] == 0 and int(counts[i]) == n:
                return parts[i]
        nulls = bool(counts[member < 0].any())  # rows of parts that are absent or null
        return _gather(parts, sid, member == 0, distinct[0], nulls=nulls)
    tags = member.astype(np.int32)[sid]
    children = []
    for j, t in enumerate(distinct):
        sel = member == j
        if int(np.count_nonzero(sel)) == 1:
            children.append(parts[int(np.flatnonzero(sel)[0])])
        else:
            children.append(_gather(parts, sid[tags == j], sel, t, nulls=False))
    return UnionArray(UnionType(tuple(distinct)), tags, tuple(children))


def _id_counts(sid: np.ndarray, k: int) -> np.ndarray:
    """Rows per super ID (one bincount, which also finds an ID outside 0..k-1)."""
    if not sid.size:
        return np.zeros(k, np.int64)
    try:
        counts = np.bincount(sid, minlength=k)
    except (ValueError, TypeError):  # a negative ID (or one numpy cannot count)
        counts = None
    if counts is None or counts.size > k:
        raise FormatError(f"super id out of range 0..{k - 1}")
    return counts


def _gather(parts: Sequence[Array | None], sid: np.ndarray, sel: np.ndarray, t: Type, *,
            nulls: bool) -> Array:
    """The rows ``sid`` drawn from the selected parts (unselected parts' rows are null);
    every row of a selected part is among ``sid``, in order.

    Each row's place in the selected parts laid end to end comes from one pass over
    the IDs (:func:`_route`); then fixed-width values are one numpy take and strings
    or bytes one take in C (a memcpy a value), without first concatenating the parts'
    bytes into a whole array; other kinds concatenate and take.
    """
    chosen = [int(i) for i in np.flatnonzero(sel)]
    ps = [parts[i] for i in chosen]
    sizes = np.array([len(p) for p in ps], np.int64)  # type: ignore[arg-type]
    base = np.full(len(parts), -1, np.int64)
    base[chosen] = np.cumsum(sizes) - sizes
    idx = route(sid, base)  # -1: a row of an unselected part
    return _take_rows(ps, idx, t, nulls, int(sizes.sum()))


def _take_rows(ps: Sequence[Array], idx: np.ndarray, t: Type, nulls: bool,
               size: int | None = None) -> Array:
    """Row ``r`` is value ``idx[r]`` of the parts laid end to end (null where -1)."""
    if size is None:
        size = sum(len(p) for p in ps)
    if all(isinstance(p, BinaryArray) for p in ps):
        bs: list[BinaryArray] = ps  # type: ignore[assignment]
        valid_in = concat_validity(bs)
        if len(bs) == 1:
            offsets, data = bs[0].offsets, bs[0].data
        else:
            offsets = rebased_offsets(bs)
            data = np.concatenate([p.data[p.offsets[0]:p.offsets[-1]] for p in bs])
        o, d = take_binary(offsets, data, idx, valid_in)
        return BinaryArray(t, o, d, _taken_validity(idx, valid_in, nulls),
                           utf8_checked=all(p.utf8_checked for p in bs))
    if all(isinstance(p, PrimitiveArray) and p.values.dtype != object for p in ps):
        prims: list[PrimitiveArray] = ps  # type: ignore[assignment]
        values = (prims[0].values if len(prims) == 1
                  else np.concatenate([p.values for p in prims]))
        out = values[np.maximum(idx, 0)] if values.size else np.zeros(idx.size, values.dtype)
        if nulls:
            out[idx < 0] = 0
        return PrimitiveArray(t, out, _taken_validity(idx, concat_validity(prims), nulls))
    blocks = [p for p in ps if p is not None]
    if nulls:
        blocks.append(null_array(t, 1))
        idx = np.where(idx >= 0, idx, size)
    whole = concat(blocks, type=t)
    if idx.size == len(whole) and bool((idx == np.arange(idx.size)).all()):
        return whole
    return whole.take(idx)


def gather(values: Array, super_ids: Any, base: np.ndarray, t: Type) -> Array:
    """Rows in file order from every super type's values laid end to end in ``values``
    (type ``s``'s from ``base[s]``; -1 for a type whose rows are null): one pass over
    the IDs in C (:func:`route`), then one take.  A file of many super types combines
    a column so, whatever the number of types."""
    sid = np.asarray(super_ids)
    idx = route(sid, base)
    nulls = bool(idx.size) and int(idx.min()) < 0
    if not nulls and idx.size == len(values) and (
            not idx.size or (int(idx[0]) == 0 and bool((np.diff(idx) == 1).all()))):
        return values  # one type, every row: the values as they are
    return _take_rows([values], idx, t, nulls)


def _taken_validity(idx: np.ndarray, valid_in: np.ndarray | None,
                    nulls: bool) -> np.ndarray | None:
    if not nulls and valid_in is None:
        return None
    validity = idx >= 0
    if valid_in is not None:
        validity &= valid_in[np.maximum(idx, 0)]
    return validity
