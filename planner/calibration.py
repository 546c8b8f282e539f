"""A profile calibrated from measured requests, so the cost model follows the store it meets.

The static profiles are guesses about a kind of store; a real endpoint may be
three times slower to its first byte or a third as fast per connection.  Every
choice the coalescer makes follows from those two numbers, so when they are
measured the knobs that encode them are derived again, keeping the static
profile's reasoning and moving only the figure it was reasoned from:

* ``connect_latency`` is a number of round trips (TCP, TLS): it scales with the
  latency, unless requests on new connections measured it directly;
* ``min_part`` is "about 10 ms of transfer": it scales with the bandwidth;
* ``max_gap`` and ``split_size`` are fractions and multiples of the break-even
  (latency x bandwidth): they scale with it (the coalescing gap and the
  request size);
* ``concurrency`` is chosen to reach an aggregate rate (``concurrency x
  bandwidth``): a slower connection needs more of them to reach it, up to
  ``MAX_CONCURRENCY_FACTOR`` times the static count (never fewer than it).
  With more connections, more of a scan's groups fit one wave of requests,
  which is how the one-wave-or-two decision follows the measurements.

This module stays pure: the measurements come in as plain data (one
:class:`Sample` per request) and a new :class:`Profile` comes out.  Until
``min_samples`` requests are known the static profile is returned unchanged,
and a measured figure never moves further than ``max_factor`` from the static
one, so a few odd requests cannot send the plan to an extreme.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .explain import human
from .profiles import Profile

MIN_SAMPLES = 5
MAX_FACTOR = 10.0
MAX_CONCURRENCY_FACTOR = 4
"""Connections a calibrated profile may ask for, as a multiple of the static count."""
LATENCY_QUANTILE = 0.25
BANDWIDTH_QUANTILE = 0.75
"""A client's own delays (a busy event loop, a short CPU) only ever add time to what it
measures, so the less delayed requests say more about the endpoint: a low quantile of
first bytes and a high quantile of rates, not their medians."""
MIN_BANDWIDTH_BYTES = 256 * 1024
"""Requests smaller than this say little about bandwidth (their time is mostly latency)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One request as measured: seconds to its first byte (the response's headers), the
    body's bytes and the seconds from the headers to its last byte.

    ``fresh``: the request opened a new connection, so its first byte also paid
    the connection's setup (it measures ``connect_latency``, not ``latency``).

    ``shared``: other bodies from the same endpoint were being received by this
    process while this one was.  A shared transfer's rate is bounded by what the
    client takes in all (one event loop's CPU, a busy machine, the access link),
    split among them, so it cannot tell a slow connection from a busy client: it
    may show the endpoint faster than assumed, never slower.  Counting it as a slow
    connection fed back (more connections, smaller parts, more client work, slower
    transfers): a 2-column scan on the simulated S3 went from 7 requests to 16
    (min parts of 110 KiB, 64 connections) after a few scans of a busy process.
    """

    first_byte: float
    nbytes: int
    transfer: float
    fresh: bool = False
    shared: bool = False


def _quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``, interpolated between neighbours (0.5: the median)."""
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    lo = int(at)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (at - lo)


def _bounded(measured: float, static: float, factor: float) -> float:
    return min(static * factor, max(static / factor, measured))


def calibrated(static: Profile, samples: Sequence[Sample], *, min_samples: int = MIN_SAMPLES,
               max_factor: float = MAX_FACTOR) -> Profile:
    """``static`` with latency and bandwidth taken from ``samples`` (quantiles, bounded),
    and the knobs that follow from them derived again (:func:`derived`).

    Latency comes from requests on warm connections; while fewer than
    ``min_samples`` of those are known the static profile stays.  Bandwidth uses
    only requests of at least ``MIN_BANDWIDTH_BYTES`` with a positive transfer
    time; without ``min_samples`` of those the static bandwidth stays.  A
    ``shared`` sample counts at no less than the static bandwidth (see
    :class:`Sample`).
    """
    warm = [s.first_byte for s in samples if not s.fresh]
    if len(warm) < min_samples:
        return static
    latency = _bounded(_quantile(warm, LATENCY_QUANTILE), static.latency, max_factor)
    rates = [max(s.nbytes / s.transfer, static.bandwidth) if s.shared
             else s.nbytes / s.transfer for s in samples
             if s.nbytes >= MIN_BANDWIDTH_BYTES and s.transfer > 0]
    bandwidth = static.bandwidth
    if len(rates) >= min_samples:
        bandwidth = _bounded(_quantile(rates, BANDWIDTH_QUANTILE), static.bandwidth,
                             max_factor)
    setups = [s.first_byte - latency for s in samples if s.fresh]
    connect = None
    if len(setups) >= min_samples and static.connect_latency:
        connect = _bounded(max(0.0, _quantile(setups, 0.5)), static.connect_latency,
                           max_factor)
    return derived(static, latency, bandwidth, connect)


def derived(static: Profile, latency: float, bandwidth: float,
            connect_latency: float | None = None) -> Profile:
    """``static`` re-derived for an endpoint of this ``latency`` and ``bandwidth``.

    See the module docstring for each knob; a profile equal to ``static`` in both
    figures comes back equal to it but for its name.
    """
    lat = latency / static.latency if static.latency > 0 else 1.0
    bw = bandwidth / static.bandwidth
    be = lat * bw
    if connect_latency is None:
        connect_latency = static.connect_latency * lat
    max_request = static.max_request
    split_size = min(max_request, max(1, round(static.split_size * be)))
    concurrency = static.concurrency
    if bw < 1:
        concurrency = min(static.concurrency * MAX_CONCURRENCY_FACTOR,
                          math.ceil(static.concurrency / bw - 1e-9))
    return replace(static, name=f"{static.name} (measured)", latency=latency,
                   bandwidth=bandwidth, connect_latency=connect_latency,
                   min_part=round(static.min_part * bw), max_gap=round(static.max_gap * be),
                   split_size=split_size, concurrency=concurrency)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What a plan knew about its endpoint: the static profile, the measured one and
    whether the plan assumed it (what ``explain()`` reports)."""

    static: Profile
    measured: Profile
    """``calibrated(static, samples)``: ``static`` itself while too few requests are known."""
    samples: int
    endpoint: str
    used: bool
    """The plan assumed ``measured`` (the reader calibrates)."""

    def describe(self) -> list[str]:
        s, m = self.static, self.measured
        where = f" to {self.endpoint}" if self.endpoint else ""
        assumed = m if self.used else s
        out = [f"profile assumed: {assumed.name} "
               + ("(calibrated from measured requests)" if self.used and m is not s
                  else "(static: calibration off)" if not self.used
                  else f"(static until {MIN_SAMPLES} requests are measured)")]
        if m is s:
            out.append(f"profile measured: not yet ({self.samples} request"
                       f"{'' if self.samples == 1 else 's'}{where}; {MIN_SAMPLES} needed)")
        else:
            out.append(f"profile measured: first byte {m.latency * 1e3:.0f} ms, "
                       f"{m.bandwidth / 1e6:.3g} MB/s per connection, setup "
                       f"{m.connect_latency * 1e3:.0f} ms, {m.concurrency} connections, "
                       f"gaps <= {human(m.gap_limit)}, parts >= {human(m.min_part)} "
                       f"(from {self.samples} requests{where}); static {s.name}: "
                       f"{s.latency * 1e3:.0f} ms, {s.bandwidth / 1e6:.3g} MB/s, "
                       f"{s.concurrency} connections")
        return out

