"""The row-selection arguments of every verb (``limit=``, ``take(indices)``,
``batch_rows=``), checked once for readers, fragments and datasets alike: a clear error
naming what is wrong, before anything is planned or read."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ArgumentError, RowSelectionError

__all__ = ["check_count", "check_limit", "row_indices"]


def check_limit(limit: Any, path: str | None = None) -> None:
    """A RowSelectionError unless ``limit`` is None or an integer >= 0."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 0):
        raise RowSelectionError(f"limit must be an integer >= 0, not {limit!r}", path=path)


def check_count(name: str, value: Any, least: int, path: str | None = None) -> int:
    """``value`` as an int, or an ArgumentError naming ``name`` unless it is one >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentError(f"{name} must be an integer >= {least}, not "
                            f"{type(value).__name__} ({value!r})", path=path)
    if value < least:
        raise ArgumentError(f"{name} must be an integer >= {least}, not {value}", path=path)
    return int(value)


def row_indices(indices: Any, path: str | None = None) -> np.ndarray:
    """``indices`` as int64 row numbers, or a RowSelectionError saying what is wrong: a
    non-integer (an array's dtype too), a negative one, one past int64."""
    if isinstance(indices, np.ndarray):
        if indices.ndim != 1 or indices.dtype.kind not in "iu":
            raise RowSelectionError(f"row indices must be a 1-D integer array, not "
                                    f"{indices.ndim}-D {indices.dtype}", path=path)
        values = indices.tolist()
    elif isinstance(indices, (str, bytes, bytearray)) or not hasattr(indices, "__iter__"):
        raise RowSelectionError(f"take() needs a sequence of row indices, not "
                                f"{type(indices).__name__}", path=path)
    else:
        values = list(indices)
    bad = [v for v in values
           if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))]
    if bad:
        raise RowSelectionError(f"row indices must be integers, not "
                                f"{type(bad[0]).__name__} ({bad[0]!r})", path=path)
    lo = min(values, default=0)
    if lo < 0:
        raise RowSelectionError(f"row index {lo} is negative", path=path)
    hi = max(values, default=0)
    if hi > np.iinfo(np.int64).max:
        raise RowSelectionError(f"row index {hi} is out of range", path=path)
    return np.asarray(values, np.int64).reshape(-1)
