"""Store profiles: the few numbers the read cost model needs, with defaults per store.

The model: a request costs one first-byte ``latency``; a byte costs
``1 / bandwidth`` seconds on one connection; ``concurrency`` connections run
at once.  From these follow the three decisions the coalescer makes:

* **merge across a gap** when reading the gap is cheaper than another request:
  ``gap / bandwidth < latency``, i.e. ``gap < latency * bandwidth`` (the
  *break-even* size).  This is exactly how Arrow derives ``hole_size_limit``
  from network metrics (``CacheOptions::MakeFromNetworkMetrics``: TTFB x
  bandwidth).  The merged gap is further capped by ``max_gap``: with
  ``concurrency`` requests in flight an extra request overlaps with the others
  and costs much less than a full latency of wall time, while gap bytes always
  cost transfer, memory and (for Spark) executor RAM; so the cap keeps read
  amplification bounded where the pure serial model would merge megabytes.
* **cap a request** at ``max_request`` so one slow connection cannot hold the
  whole scan (Arrow: ``range_size_limit`` 32 MiB by default, 64 MiB ideal-size
  cap in the network-metrics variant; fsspec's parquet helper: ``max_block``
  256 MB).
* **spread a small scan** over idle connections: while a scan has fewer
  requests than ``concurrency``, all of them run at once and the wall time is
  one latency plus the *largest* request's transfer, so the largest are split
  further, down to ``min_part`` (about 20 ms of transfer on S3, against ~1 ms
  of per-request client overhead).  Measured on the simulated S3 (2 of 24
  columns, 19 MB): 8 requests of up to 4.3 MB -> 14 of up to 1.6 MB, scan
  ~120 -> ~100 ms on a quiet machine; on a busy one, against polars in
  alternating pairs, parts of 2 MiB ran the 6-column scan 0.78-0.88x polars
  where 1 MiB parts ran it 0.91-1.01x (2 columns: the same time in 9 requests
  rather than 16).  Off for local files (``min_part`` 0): there the limit is
  CPU, not round trips.
* **count a new connection's setup**: a request on a connection the pool does
  not have open first pays ``connect_latency`` (TCP's handshake, plus TLS's one
  or two round trips on ``https``) before it can be sent.  When the planner
  chooses how many parts to cut a small scan into, parts beyond the pool's
  warm connections pay it (see :func:`planner.coalescing.wave_seconds`): a
  cold process whose tail read left one connection open reads a few MB on it
  rather than spread them over new connections that cost two round trips
  before their first byte.  With no warm connection every part pays it alike
  and the choice is the one without setup.
* **split big reads** so all ``concurrency`` connections work: the request
  size cap for a scan is ``min(max_request, max(split_size, total/concurrency))``.
  ``split_size`` is the smallest part worth its own request.  A part of
  ``k`` break-even sizes keeps a connection busy ``k/(k+1)`` of the time (the
  utilization formula Arrow uses to size ranges), so ``split_size`` is at least
  about 1.5 break-even (60 % utilization per connection; the parallelism makes
  up the rest).  For S3 that lands on AWS's own advice of 8-16 MB range GETs.
  Local files use much bigger parts: there the limit is a few CPU cores, not
  round trips.

Reference points (read for facts, not copied): Arrow ``ReadRangeCache`` /
``CoalesceReadRanges`` (hole 8 KiB, range 32 MiB: tuned for local-ish files),
object_store's ``coalesce_ranges`` (1 MiB gap, 10 parallel fetches), fsspec's
``merge_offset_ranges`` (``max_gap`` 0 and no ``max_block`` by default;
``open_parquet_file`` uses 64 kB / 256 MB and a 1 MB footer sample).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .errors import ProfileError

KiB = 1 << 10
MiB = 1 << 20


@dataclass(frozen=True, slots=True)
class Profile:
    """How one kind of store answers ranged reads; see the module docstring for the model.

    Every field is a named knob of the cost model.  Derive variants with
    ``dataclasses.replace(PROFILES["s3"], max_gap=...)`` (validation reruns).
    """

    name: str
    latency: float
    """Seconds from sending a request to its first byte (one round trip plus service time)."""
    bandwidth: float
    """Bytes per second one connection delivers once data flows."""
    concurrency: int
    """Requests a reader should keep in flight; the planner splits big reads to use them."""
    max_gap: int
    """Largest hole (bytes) merged into a request, whatever the break-even says."""
    split_size: int
    """Smallest part a big read is split into: below it a request mostly waits on latency."""
    max_request: int
    """Largest request (bytes): bounds per-request memory and the damage of one slow connection."""
    max_amplification: float | None = None
    """If set, gap bytes read may not exceed this fraction of the needed bytes (plan-wide)."""
    tail_min: int = 64 * KiB
    """Smallest first (suffix) read: the trailer (<= 4 KiB) plus a typical reassembly section."""
    tail_max: int = 1 * MiB
    """Largest first read when nothing hints the metadata size (fsspec parquet samples 1 MB)."""
    min_part: int = 0
    """With fewer requests than ``concurrency``, the largest are split (all run at once, so
    the largest one's transfer is the scan's) down to parts of this size; 0: never."""
    connect_latency: float = 0.0
    """Seconds a new connection costs before its first request can be sent (TCP's round
    trip, plus TLS's: one for TLS 1.3, two for 1.2); a warm connection costs none."""

    def __post_init__(self) -> None:
        problems = []
        for name in ("latency", "connect_latency"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                problems.append(f"{name}={v!r} must be a finite number >= 0")
        if not (self.bandwidth > 0 and math.isfinite(self.bandwidth)):
            problems.append(f"bandwidth={self.bandwidth!r} must be a finite number > 0")
        for name in ("concurrency", "split_size", "max_request"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                problems.append(f"{name}={v!r} must be an integer >= 1")
        for name in ("max_gap", "tail_min", "tail_max", "min_part"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                problems.append(f"{name}={v!r} must be an integer >= 0")
        if not problems and self.split_size > self.max_request:
            problems.append(f"split_size={self.split_size} exceeds max_request={self.max_request}")
        if not problems and self.tail_min > self.tail_max:
            problems.append(f"tail_min={self.tail_min} exceeds tail_max={self.tail_max}")
        x = self.max_amplification
        if x is not None and not (x >= 0 and math.isfinite(x)):
            problems.append(f"max_amplification={x!r} must be None or a finite number >= 0")
        if problems:
            raise ProfileError(f"profile {self.name!r}: " + "; ".join(problems))

    @property
    def breakeven(self) -> int:
        """Bytes one connection moves in one latency: a gap this big costs a request's worth."""
        return int(self.latency * self.bandwidth)

    @property
    def gap_limit(self) -> int:
        """The largest gap the coalescer merges: the break-even, capped by ``max_gap``."""
        return min(self.max_gap, self.breakeven)

    def request_cap(self, total: int) -> int:
        """Largest request for a scan of ``total`` bytes: spread over the connections, within
        ``[split_size, max_request]``."""
        share = -(-total // self.concurrency)
        return min(self.max_request, max(self.split_size, share))


PROFILES: dict[str, Profile] = {
    # 50 ms first byte, 100 MB/s per connection: the S3 medians AnyBlob (VLDB 2023) and
    # AWS's guidance report, and what the project's simulated S3 uses. Break-even 5 MB;
    # gaps capped at object_store's 1 MiB; 8 MiB parts (AWS: 8-16 MB ranges); 64 MiB cap
    # (Arrow's ideal request size cap); 16 connections. A new connection: TCP and TLS 1.3,
    # two round trips. Parts of at least 2 MiB (~20 ms of transfer): with 1 MiB the wide
    # table's 6-column scan was 0.91-1.01x polars in three paired runs, with 2 MiB
    # 0.78-0.88x (17 -> 14 requests; 2 columns 16 -> 9 requests, the same time), on
    # the simulator at load 10-12 (bench/bench_s3_pairs.py): a request costs the client
    # CPU that a busy machine does not give back as transfer time.
    "s3": Profile("s3", latency=0.050, bandwidth=100e6, concurrency=16, max_gap=1 * MiB,
                  split_size=8 * MiB, max_request=64 * MiB, min_part=2 * MiB,
                  connect_latency=0.100),
    # GCS: a somewhat slower first byte (~80 ms) and ~80 MB/s per stream: break-even 6.4 MB,
    # otherwise as S3.
    "gcs": Profile("gcs", latency=0.080, bandwidth=80e6, concurrency=16, max_gap=1 * MiB,
                   split_size=8 * MiB, max_request=64 * MiB, min_part=1 * MiB,
                   connect_latency=0.160),
    # A plain HTTP server or CDN: ~30 ms, ~50 MB/s per connection (break-even 1.5 MB), and
    # the HTTP/1.1 habit of ~6 connections per host; Arrow's 32 MiB range limit. A new
    # connection: one TCP round trip (TLS, if any, is not counted).
    "http": Profile("http", latency=0.030, bandwidth=50e6, concurrency=6, max_gap=512 * KiB,
                    split_size=4 * MiB, max_request=32 * MiB, min_part=512 * KiB,
                    connect_latency=0.030),
    # Local disk / page cache: ~100 us per read call, ~2 GB/s (break-even 200 kB). Small
    # gaps (fsspec's parquet max_gap is 64 kB; Arrow's 8 KiB default is more cautious),
    # large requests (fsspec's 256 MB max_block), a few threads on small machines.
    "local": Profile("local", latency=0.0001, bandwidth=2e9, concurrency=4, max_gap=64 * KiB,
                     split_size=32 * MiB, max_request=256 * MiB),
}


def get_profile(profile: str | Profile) -> Profile:
    """Accept a profile or a profile's name (case-insensitive), so APIs can take either."""
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, str):
        found = PROFILES.get(profile) or PROFILES.get(profile.strip().lower())
        if found is not None:
            return found
        raise ProfileError(f"unknown profile {profile!r}; known: {', '.join(sorted(PROFILES))}")
    raise ProfileError(f"a profile is a Profile or one of {', '.join(sorted(PROFILES))}, "
                       f"not {type(profile).__name__}")


def with_amplification(profile: Profile, max_amplification: float | None) -> Profile:
    """The profile with a plan-level amplification bound (validated like any field)."""
    if max_amplification == profile.max_amplification:
        return profile
    return replace(profile, max_amplification=max_amplification)
