"""Metadata reads: size the first (suffix) read, and decide whether a second is needed.

A CSUP object ends with ``[reassembly][trailer]``; the trailer (<= 4 KiB)
says how big the reassembly section is, but only once it has been read.  So
the first request is a suffix read big enough to hold both in the common case.

The rule for its size: extra bytes in a request that is made anyway cost only
their transfer time, which is negligible while it is small against a round
trip.  We allow a quarter of the latency (``TAIL_LATENCY_SHARE``):
``size = clamp(latency * bandwidth / 4, tail_min, tail_max)``.  On S3 (5 MB
break-even) that is capped at ``tail_max`` = 1 MiB, about 10 ms of transfer
against a 50 ms round trip (fsspec's parquet helper samples 1 MB footers for
the same reason); on a local disk the 64 KiB floor applies.  CSUP metadata
is usually far smaller (the benchmark's 210 MB, 24-column file has 2 KB), and
a 256 KiB cap saved ~8 ms per S3 open, but it was measured and rejected: the
1 MiB read takes small files (up to 2 MiB, with the gap rule below) whole in
one round trip, and 500 files of 424 KB scanned in 1.27 s instead of 1.89 s.
A caller that
knows the metadata size (a catalog, a previous open) passes it as ``hint``.
When the whole object is at most one mergeable gap (``profile.gap_limit``)
larger than that, the read takes the whole object: a small file then costs a
single round trip, and the data requests are served from these bytes (pass
them as ``available`` to :func:`planner.plan_scan`).
"""

from __future__ import annotations

from csup_async.model.errors import FormatError

from .errors import InvalidRangeError
from .profiles import Profile, get_profile

TAIL_LATENCY_SHARE = 0.25


def tail_prefetch_size(profile: str | Profile = "s3", object_size: int | None = None,
                       hint: int | None = None) -> int:
    """Bytes of the first suffix read of an object (see the module docstring for the rule)."""
    p = get_profile(profile)
    size = int(p.latency * p.bandwidth * TAIL_LATENCY_SHARE)
    size = min(max(size, p.tail_min), p.tail_max)
    if hint is not None:
        if hint < 0:
            raise InvalidRangeError(f"metadata size hint {hint} is negative")
        size = max(size, hint)
    if object_size is not None:
        if object_size < 0:
            raise InvalidRangeError(f"object size {object_size} is negative")
        if object_size <= size + p.gap_limit:
            return object_size
    return size


def metadata_followup(object_size: int, tail_len: int, data_size: int, reassembly_size: int,
                      trailer_size: int) -> tuple[int, int] | None:
    """The ``(offset, length)`` still to read for the metadata, or None if the tail has it.

    ``tail_len`` bytes were read from the end of the object.  The metadata is
    ``[data_size, object_size)``; the missing part is whatever of it lies
    before the tail, read in one request.
    """
    for name, v in (("object_size", object_size), ("tail_len", tail_len),
                    ("data_size", data_size), ("reassembly_size", reassembly_size),
                    ("trailer_size", trailer_size)):
        if v < 0:
            raise InvalidRangeError(f"{name}={v} is negative")
    if tail_len > object_size:
        raise InvalidRangeError(f"tail of {tail_len} bytes is longer than the "
                                f"{object_size}-byte object")
    if data_size + reassembly_size + trailer_size != object_size:
        raise FormatError(f"sections ({data_size} + {reassembly_size}) plus the trailer "
                          f"({trailer_size}) do not add up to the object size {object_size}")
    tail_start = object_size - tail_len
    if tail_start <= data_size:
        return None
    return data_size, tail_start - data_size
