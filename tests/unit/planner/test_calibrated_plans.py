"""A calibrated profile changes the plan the way its measurements say it should."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from csup_async.format.meta import Segment
from planner.calibration import Sample, calibrated
from planner.coalescing import plan_ranges, wave_seconds
from planner.profiles import PROFILES, MiB

S3 = PROFILES["s3"]


def _columns(n: int, size: int, gap: int) -> list[Segment]:
    """``n`` wanted columns of ``size`` bytes with ``gap`` unwanted bytes between them."""
    return [Segment(i * (size + gap), size, size) for i in range(n)]


def _waves(plan: object, profile: object) -> int:
    count = plan.request_count  # type: ignore[attr-defined]
    return -(-count // profile.concurrency)  # type: ignore[attr-defined]


def _measured(latency: float, bandwidth: float, n: int = 12) -> object:
    return calibrated(S3, [Sample(latency, 4 * MiB, 4 * MiB / bandwidth)] * n)


def test_a_slow_first_byte_merges_gaps_into_fewer_larger_requests_in_one_wave() -> None:
    # 24 columns of 1 MiB, 3 MiB apart: more than 16 groups at S3's 1 MiB gap cap.
    segs = _columns(24, 1 * MiB, 3 * MiB)
    static = plan_ranges(list(segs), S3)
    slow = _measured(0.500, 100e6)  # 500 ms to the first byte, S3's bandwidth
    calib = plan_ranges(list(segs), slow)  # type: ignore[arg-type]
    assert static.request_count == 24 and _waves(static, S3) == 2
    assert calib.request_count < static.request_count
    assert max(r.length for r in calib.requests) > max(r.length for r in static.requests)
    assert _waves(calib, slow) == 1
    # and on that store the merged plan is the faster one, by the cost model
    t_static = wave_seconds([r.length for r in static.requests], slow)  # type: ignore[arg-type]
    assert calib.seconds < t_static


def test_slow_connections_spread_a_scan_over_more_of_them_in_one_wave() -> None:
    # 20 columns far apart (no gap worth merging): two waves of S3's 16 connections;
    # at 30 MB/s a connection moves a third as much, so more run at once.
    segs = _columns(20, 2 * MiB, 20 * MiB)
    static = plan_ranges(list(segs), S3)
    far = _measured(0.150, 30e6)
    calib = plan_ranges(list(segs), far)  # type: ignore[arg-type]
    assert _waves(static, S3) == 2 and _waves(calib, far) == 1
    # the cost model, on the true store: the static plan's two waves are slower
    t_static = wave_seconds([r.length for r in static.requests], far)  # type: ignore[arg-type]
    t_calib = wave_seconds([r.length for r in calib.requests], far)  # type: ignore[arg-type]
    assert t_calib < t_static


def test_slow_connections_cut_a_small_scan_into_smaller_parts() -> None:
    segs = _columns(1, 6 * MiB, 0)
    static = plan_ranges(list(segs), S3)
    calib = plan_ranges(list(segs), _measured(0.150, 30e6))  # type: ignore[arg-type]
    assert calib.request_count > static.request_count
    assert max(r.length for r in calib.requests) < max(r.length for r in static.requests)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 4 * MiB), st.integers(0, 16 * MiB),
       st.floats(0.01, 0.5), st.floats(5e6, 500e6))
def test_a_calibrated_plan_is_a_valid_plan(n: int, size: int, gap: int, latency: float,
                                           bandwidth: float) -> None:
    segs = _columns(n, size, gap)
    prof = _measured(latency, bandwidth)
    plan = plan_ranges(list(segs), prof)  # type: ignore[arg-type]
    reqs = plan.requests
    assert all(a.end <= b.offset for a, b in itertools.pairwise(reqs))
    assert sum(r.needed_bytes for r in reqs) == n * size
    assert all(r.length <= prof.max_request for r in reqs)  # type: ignore[attr-defined]
