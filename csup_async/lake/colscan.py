"""The lake's side of column-wise ``.zng`` decoding: the key range as a row mask, and
objects merged in pool-key order.

Decoding BSUP frames into columns is :mod:`csup_async.bsup.columns`; a pool scan
hands it the key range (the pool key is decoded first and the range applied as
a mask, so only rows in range are decoded further).  Anything that path does
not take (a key path, a row that is not a record, a stream it cannot read)
returns None here and the caller decodes rows (``scan.decode_rows``, the
reference, which also owns every error message).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import arrays as A
from ..bsup.columns import (
    FAST_KINDS,
    Fields,
    NotColumnar,
    Part,
    Segment,
    decode_field,
    decode_records,
    fast_kind,
    tagged,
    unnamed,
)
from ..decode.kernels import decode_primitive
from ..errors import CsupError
from ..types import PrimitiveType, Type
from ..values import Value
from .keys import KeyRange, family

__all__ = ["Part", "Segment", "decode_part", "merge_parts", "FAST_KINDS"]

#: Key kinds compared as int64 against the key range's int bounds.
_INT_KEYS = frozenset({"int8", "int16", "int32", "int64", "time", "duration"})


def _key_mask(f: Fields, j: int | None, kt: Type | None, key_range: KeyRange
              ) -> np.ndarray:
    """Which rows of one record type have a key in range."""
    m = f.starts.shape[0]
    if key_range.unbounded:
        return np.ones(m, bool)
    if j is None or kt is None:
        return np.zeros(m, bool)  # a missing key matches no comparison
    ku = unnamed(kt)
    fast = key_range.int_bounds
    rows = np.arange(m)
    if (isinstance(ku, PrimitiveType) and ku.name in _INT_KEYS and fast is not None
            and family(ku) == fast[0]):
        d = decode_primitive(ku, tagged(f, j, rows), m)
        x = d.values.view(np.int64)
        keep = np.ones(m, bool) if d.validity is None else d.validity.copy()
        lo, hi = fast[1], fast[2]
        if lo is not None:
            keep &= (x >= lo) if key_range.lo_inclusive else (x > lo)
        if hi is not None:
            keep &= (x <= hi) if key_range.hi_inclusive else (x < hi)
        return keep
    seg = decode_field(f, j, rows, kt, fast_kind(kt))
    vals = seg.pyvalues(m)
    return np.array([x is not None and key_range.contains(Value(ku, x)) for x in vals], bool)


def decode_part(bufs: list[Any], key: tuple[str, ...], key_range: KeyRange,
                fields: frozenset[str] | None) -> Part | None:
    """The rows of whole ZNG streams whose key is in range, column-wise; None when the
    reference must decode them (see the module docstring)."""
    if len(key) != 1:
        return None
    key_name = key[0]

    def mask(f: Fields, j: int | None, kt: Type | None) -> np.ndarray:
        return _key_mask(f, j, kt, key_range)

    try:
        return decode_records(bufs, fields, key_name, mask)
    except (NotColumnar, CsupError):
        return None


def _keys(part: Part) -> tuple[np.ndarray, np.ndarray, set[str]] | None:
    """(int64 keys, null mask, key families) of a part's rows, or None unless every key
    is a signed int, time or duration in an array."""
    keys = np.zeros(part.n, np.int64)
    null = np.ones(part.n, bool)
    fams: set[str] = set()
    segs = part.columns.get(part.key_name)  # (absent: no row type has the key)
    for s, pos in enumerate(part.rows):
        if segs is None:
            break
        seg = segs[s]
        if seg.type is None or not pos.size:
            continue
        a = seg.array
        if (a is None or not isinstance(a, A.PrimitiveArray)
                or fast_kind(seg.type) not in _INT_KEYS):
            return None
        keys[pos] = a.values.view(np.int64)
        null[pos] = False if a.validity is None else ~a.validity
        if seg.nonnull:
            fams.add(family(unnamed(seg.type)))
    return keys, null, fams


def merge_parts(parts: list[Part], order: str) -> Part | None:
    """The rows of parts in pool-key order, as ``heapq.merge`` of their rows gives them
    (ties in part order, nulls last ascending and first descending); None when a key is
    not an int of one family or a part is not in key order (the caller merges rows)."""
    got = [_keys(p) for p in parts]
    if any(g is None for g in got) or not parts:
        return None
    fams = set().union(*(g[2] for g in got if g is not None))
    if len(fams) > 1:
        return None
    keys = np.concatenate([g[0] for g in got if g is not None])
    null = np.concatenate([g[1] for g in got if g is not None])
    uniq, rank = np.unique(keys[~null], return_inverse=True)
    ranks = np.full(keys.size, uniq.size, np.int64)  # null: above every value
    ranks[~null] = rank
    if order == "desc":
        ranks = -ranks
    off = 0
    for p in parts:
        r = ranks[off:off + p.n]
        if r.size > 1 and (np.diff(r) < 0).any():
            return None
        off += p.n
    perm = np.argsort(ranks, kind="stable")  # new position -> old
    new_of = np.empty_like(perm)
    new_of[perm] = np.arange(perm.size)
    names: dict[str, None] = {}
    for p in parts:
        names.update(dict.fromkeys(p.columns))
    out = Part(int(keys.size), parts[0].key_name, columns={c: [] for c in names})
    off = 0
    for p in parts:
        for s, t in enumerate(p.types):
            out.types.append(t)
            out.rows.append(new_of[p.rows[s] + off])
            out.nulls.append(p.nulls[s])
            for c in names:
                segs = p.columns.get(c)
                out.columns[c].append(segs[s] if segs is not None else Segment(None))
        off += p.n
    return out
