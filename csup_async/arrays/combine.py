"""Rows in file order from per-super-type parts (a column of a file with several super
types is decoded per type, then combined): one type's array, or a dense union."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import FormatError
from ..types import NULL, Type, UnionType
from .buffers import group_ranks
from .model import Array, NullArray, UnionArray, concat, null_array


def combine(parts: Sequence[Array | None], super_ids: Any, *,
            ranks: np.ndarray | None = None) -> Array:
    """Rows in file order from per-super-type parts: row r is the next value of part super_ids[r].

    Parts of one type give an array of that type; several types give a
    ``UnionArray`` over them in part order (a part's null values stay typed
    nulls of its member).  Rows of a None part, and of a part of type null when
    other types exist, are null.  ``ranks``: :func:`group_ranks` of the IDs, when the
    caller combines several columns of the same rows (computed here otherwise).
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
    sid = sid.astype(np.int64, copy=False)
    n, k = sid.size, len(parts)
    if n and (int(sid.min()) < 0 or int(sid.max()) >= k):
        raise FormatError(f"super id out of range 0..{k - 1}")
    counts = np.bincount(sid, minlength=k) if k else np.zeros(0, np.int64)
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
        if ranks is None:
            ranks = group_ranks(sid, k)
        return _gather(parts, sid, member == 0, ranks, distinct[0],
                       nulls=bool((member[sid] < 0).any()))
    if ranks is None:
        ranks = group_ranks(sid, k)
    tags = member[sid].astype(np.int32)
    children = []
    for j, t in enumerate(distinct):
        sel = member == j
        if int(np.count_nonzero(sel)) == 1:
            children.append(parts[int(np.flatnonzero(sel)[0])])
        else:
            rows = tags == j
            children.append(_gather(parts, sid[rows], sel, ranks[rows], t, nulls=False))
    return UnionArray(UnionType(tuple(distinct)), tags, tuple(children))


def _gather(parts: Sequence[Array | None], sid: np.ndarray, sel: np.ndarray, ranks: np.ndarray,
            t: Type, *, nulls: bool) -> Array:
    """Rows ``sid``/``ranks`` drawn from the selected parts (unselected parts' rows → null)."""
    base = np.full(len(parts), -1, np.int64)
    blocks: list[Array] = []
    off = 0
    for i in np.flatnonzero(sel).tolist():
        p = parts[i]
        assert p is not None
        base[i] = off
        blocks.append(p)
        off += len(p)
    if nulls:
        blocks.append(null_array(t, 1))
    b = base[sid]
    idx = np.where(b >= 0, b + ranks, off)
    whole = concat(blocks, type=t)
    if idx.size == len(whole) and bool((idx == np.arange(idx.size)).all()):
        return whole
    return whole.take(idx)
