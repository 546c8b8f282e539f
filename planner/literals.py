"""Filter literals made exact: which Python values a filter may compare with, and
times and durations as exact nanosecond counts.

A time or duration column holds int64 nanoseconds (CSUP), so a literal is
compared as the exact number of nanoseconds it denotes, a Python int (or a
:class:`fractions.Fraction` below a nanosecond), never squeezed into numpy's
``datetime64[ns]``, whose conversion wraps outside 1678-2262 without a word.
``bind`` then rewrites a comparison whose literal lies outside int64 (every
value is below year 9999) or between two nanoseconds into the equivalent one
on an int64 literal.

**NaT.** ``datetime64("NaT")`` is int64's minimum, which in CSUP is an
ordinary time (1677-09-21T00:12:43.145224192Z) and an ordinary duration: it
is not null, and it compares as that value, the smallest of all (a NaT literal
too).  Segment statistics that give it as a ``min`` are then exact.
"""

from __future__ import annotations

import datetime as _dt
from fractions import Fraction
from typing import Any

from csup_async.model.errors import CsupError

__all__ = ["INT64_MAX", "INT64_MIN", "FilterError", "check_literal", "duration_ns", "nanos",
           "time_ns"]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

_NS = {"W": 7 * 86400 * 10**9, "D": 86400 * 10**9, "h": 3600 * 10**9, "m": 60 * 10**9,
       "s": 10**9, "ms": 10**6, "us": 10**3, "μs": 10**3, "ns": 1, "ps": Fraction(1, 10**3),
       "fs": Fraction(1, 10**6), "as": Fraction(1, 10**9)}
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class FilterError(CsupError, ValueError):
    """A filter that is not well formed, or that cannot apply to a file's column types."""


def check_literal(v: Any) -> Any:
    """``v`` as a filter literal: numpy scalars as the Python values they hold; anything
    that is not a number, string, bytes, bool, time or duration is refused."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        np = None  # type: ignore[assignment]
    if np is not None and isinstance(v, np.generic):
        if isinstance(v, (np.datetime64, np.timedelta64)):
            return v
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
        if isinstance(v, (np.str_, np.bytes_)):
            return v.item()
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, (bool, int, float, str, bytes, _dt.datetime, _dt.timedelta)):
        return v
    raise FilterError(f"a filter compares a column with a number, string, bytes, bool, "
                       f"time or duration, not {type(v).__name__} {_short(v)}")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def time_ns(v: Any) -> int | Fraction:
    """The exact nanoseconds since 1970-01-01T00:00:00Z of a time literal (a naive
    ``datetime`` is UTC); NaT is int64's minimum.  TypeError for another kind."""
    import numpy as np

    if isinstance(v, np.datetime64):
        if np.isnat(v):
            return INT64_MIN
        unit, step = np.datetime_data(v.dtype)
        if unit in ("Y", "M"):  # calendar positions: their first day, exactly
            try:
                v = v.astype("datetime64[D]")
            except (OverflowError, ValueError):  # pragma: no cover - beyond every day
                raise FilterError(f"time {v} is out of range") from None
            unit, step = "D", 1
        if unit == "generic":
            raise FilterError(f"time {v!r} has no unit")
        return int(v.astype(np.int64)) * step * _NS[unit]
    if isinstance(v, _dt.datetime):
        d = v - (_EPOCH_UTC if v.tzinfo is not None else _EPOCH)
        return nanos(d)
    raise TypeError(type(v).__name__)


def duration_ns(v: Any) -> int | Fraction:
    """The exact nanoseconds of a duration literal (an int is nanoseconds); NaT is
    int64's minimum.  Years and months have no fixed length: FilterError.  TypeError
    for another kind."""
    import numpy as np

    if isinstance(v, np.timedelta64):
        if np.isnat(v):
            return INT64_MIN
        unit, step = np.datetime_data(v.dtype)
        if unit in ("Y", "M"):
            raise FilterError(f"duration {v} is in {'years' if unit == 'Y' else 'months'}, "
                               f"which have no fixed length: give it in days or smaller units")
        if unit == "generic":
            if int(v.astype(np.int64)) == 0:
                return 0
            raise FilterError(f"duration {v!r} has no unit")
        return int(v.astype(np.int64)) * step * _NS[unit]
    if isinstance(v, _dt.timedelta):
        return nanos(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise TypeError(type(v).__name__)


def nanos(d: _dt.timedelta) -> int:
    """A ``timedelta``'s exact nanoseconds."""
    return (d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000
