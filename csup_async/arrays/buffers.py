"""Vectorised operations on the buffers arrays are made of: validity masks, offsets,
row ranges and ranks, each without a Python loop over rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..model.errors import FormatError


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view: callers' arrays stay writable, ours cannot be changed through them."""
    v = a.view()
    v.flags.writeable = False
    return v


def norm_validity(validity: Any, n: int) -> np.ndarray | None:
    if validity is None:
        return None
    v = np.asarray(validity)
    if v.dtype != np.bool_:
        if v.dtype.kind not in "biu":
            raise FormatError(f"validity must be booleans, not {v.dtype}")
        v = v.astype(bool)
    if v.shape != (n,):
        raise FormatError(f"validity has shape {v.shape}, expected ({n},)")
    if v.all():
        return None
    return read_only(v)


def norm_offsets(offsets: Any, child_len: int, what: str) -> np.ndarray:
    o = np.asarray(offsets)
    if o.ndim != 1 or o.size == 0 or o.dtype.kind not in "iu":
        raise FormatError(f"{what} offsets must be a non-empty 1-D integer array")
    o = o.astype(np.int64, copy=False)
    if o[0] < 0 or o[-1] > child_len:
        raise FormatError(f"{what} offsets {int(o[0])}..{int(o[-1])} exceed {child_len} values")
    if o.size > 1 and bool((o[1:] < o[:-1]).any()):
        raise FormatError(f"{what} offsets are not monotonic")
    return read_only(o)


def scatter_validity(mask: np.ndarray, validity: np.ndarray | None) -> np.ndarray:
    out = mask.copy()
    if validity is not None:
        out[mask] = validity
    return out


def concat_validity(arrays: Sequence[Any]) -> np.ndarray | None:
    if all(a.validity is None for a in arrays):
        return None
    return np.concatenate([np.ones(len(a), bool) if a.validity is None else a.validity
                           for a in arrays])


def offsets_from_lengths(lengths: np.ndarray) -> np.ndarray:
    out = np.empty(lengths.size + 1, np.int64)
    out[0] = 0
    np.cumsum(lengths, out=out[1:])
    return out


def range_indices(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``range(s, s + n)`` for every (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    dest = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(starts - dest, lengths)


def gather_lengths(offsets: np.ndarray, idx: np.ndarray,
                    validity: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of rows ``idx``; null rows get length 0 so garbage is dropped."""
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    if validity is not None:
        lengths = np.where(validity[idx], lengths, 0)
    return starts, lengths


def scatter_offsets(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The offsets of the values ``offsets`` delimits placed at the rows ``mask`` marks
    (one pass in C: see decode.kernels.scatter_offsets)."""
    from ..decode.kernels import scatter_offsets as scatter

    return scatter(offsets, mask)


def rebased_offsets(arrays: Sequence[Any]) -> np.ndarray:
    """Offsets of the concatenation of ``arrays`` whose children are trimmed to their ranges."""
    if len(arrays) > 16:  # hundreds of small parts (a file of many super types)
        return _rebased_many([a.offsets for a in arrays])
    # one pass into the result (numpy drops the GIL for it): a slice, a subtraction and
    # an addition per part, then their concatenation, made four (a tenth of a 6-column
    # scan's assembly on the wide table)
    out = np.empty(1 + sum(len(a.offsets) - 1 for a in arrays), np.int64)
    out[0] = 0
    pos = 1
    base = 0
    for a in arrays:
        o = a.offsets
        n = len(o) - 1
        np.subtract(o[1:], int(o[0]) - base, out=out[pos:pos + n], casting="unsafe")
        pos += n
        base += int(o[-1] - o[0])
    return out


def _rebased_many(offs: list[np.ndarray]) -> np.ndarray:
    """:func:`rebased_offsets` in a few numpy calls whatever the number of parts (a numpy
    call per part costs more than the values of a part of a few hundred)."""
    k = len(offs)
    firsts = np.fromiter((o[0] for o in offs), np.int64, k)
    spans = np.fromiter((o[-1] for o in offs), np.int64, k) - firsts
    sizes = np.fromiter((o.size - 1 for o in offs), np.int64, k)
    body = np.concatenate([o[1:] for o in offs]).astype(np.int64)
    body += np.repeat(np.cumsum(spans) - spans - firsts, sizes)
    return np.concatenate((np.zeros(1, np.int64), body))


def group_ranks(keys: np.ndarray, nkeys: int) -> np.ndarray:
    """For each position, how many earlier positions have the same key (keys in -1..nkeys-1).

    This is the dense-union / per-part position of a row.  A mask per key is
    cheapest for the usual handful of keys; a stable sort scales to many.
    """
    n = keys.size
    ranks = np.zeros(n, np.int64)
    if n == 0:
        return ranks
    if nkeys <= 8:
        for k in range(-1, nkeys):
            m = keys == k
            c = int(np.count_nonzero(m))
            if c:
                ranks[m] = np.arange(c, dtype=np.int64)
        return ranks
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys.astype(np.int64) + 1, minlength=nkeys + 1)
    starts = np.cumsum(counts) - counts
    ranks[order] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    return ranks


def object_array(values: list[Any]) -> np.ndarray:
    # np.array(values) would turn nested lists into extra dimensions.
    return np.fromiter(values, dtype=object, count=len(values))


def null_out(out: list[Any], validity: np.ndarray | None) -> list[Any]:
    if validity is not None:
        for i in np.flatnonzero(~validity).tolist():
            out[i] = None
    return out


def take_binary(offsets: np.ndarray, data: np.ndarray, idx: np.ndarray,
                validity: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of strings or bytes ``idx`` (-1 and invalid values: empty): in C, a
    memcpy per value, where numpy needs an 8-byte index per byte (see decode.kernels)."""
    from ..decode.kernels import take_binary as take  # imported on first use: not at startup

    return take(offsets, data, idx, validity)


def route(ids: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For each row, its position in the parts laid end to end (-1 where its part's base
    is negative): see decode.kernels.route."""
    from ..decode.kernels import route as place

    return place(ids if ids.dtype == np.int32 else ids.astype(np.int32), base)
