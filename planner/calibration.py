"""A profile calibrated from measured requests, so the cost model follows the store it meets.

The static profiles are guesses about a kind of store; a real endpoint may be
three times slower to its first byte or a third as fast per connection, and the
coalescing gap, the request size and the connection count all follow from those
two numbers.  This module stays pure: the measurements come in as plain data
(one :class:`Sample` per request) and a new :class:`Profile` comes out.  Until
``min_samples`` requests are known the static profile is returned unchanged, and
a measured figure never moves further than ``max_factor`` from the static one,
so a few odd requests cannot send the plan to an extreme.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .profiles import Profile

MIN_SAMPLES = 5
MAX_FACTOR = 10.0
MIN_BANDWIDTH_BYTES = 256 * 1024
"""Requests smaller than this say little about bandwidth (their time is mostly latency)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One request as measured: seconds to its first byte, bytes received, seconds after."""

    first_byte: float
    nbytes: int
    transfer: float


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _bounded(measured: float, static: float, factor: float) -> float:
    return min(static * factor, max(static / factor, measured))


def calibrated(static: Profile, samples: Sequence[Sample], *, min_samples: int = MIN_SAMPLES,
               max_factor: float = MAX_FACTOR) -> Profile:
    """``static`` with latency and bandwidth taken from ``samples`` (medians, bounded).

    Bandwidth uses only requests of at least ``MIN_BANDWIDTH_BYTES`` with a positive
    transfer time; without ``min_samples`` of those the static bandwidth stays.
    """
    if len(samples) < min_samples:
        return static
    latency = _bounded(_median([s.first_byte for s in samples]), static.latency,
                       max_factor)
    rates = [s.nbytes / s.transfer for s in samples
             if s.nbytes >= MIN_BANDWIDTH_BYTES and s.transfer > 0]
    bandwidth = static.bandwidth
    if len(rates) >= min_samples:
        bandwidth = _bounded(_median(rates), static.bandwidth, max_factor)
    return replace(static, name=f"{static.name} (measured)", latency=latency,
                   bandwidth=bandwidth)
