"""A profile calibrated from measured requests: static until enough samples, bounded moves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from csup_async.stores.calibrate import Measurements
from planner.calibration import Sample, calibrated
from planner.profiles import PROFILES, MiB

S3 = PROFILES["s3"]


def _slow_store(n: int) -> list[Sample]:
    # A store at 150 ms / 30 MB/s: 4 MiB takes 4 MiB / 30e6 s after the first byte.
    return [Sample(0.150, 4 * MiB, 4 * MiB / 30e6) for _ in range(n)]


def test_static_profile_until_five_requests() -> None:
    assert calibrated(S3, _slow_store(4)) is S3


def test_five_requests_move_the_profile_to_the_measured_store() -> None:
    p = calibrated(S3, _slow_store(5))
    assert abs(p.latency - 0.150) / 0.150 < 0.25
    assert abs(p.bandwidth - 30e6) / 30e6 < 0.25
    # The coalescing gap follows: break-even 150 ms x 30 MB/s = 4.5 MB, not S3's 5 MB.
    assert p.breakeven == int(p.latency * p.bandwidth)
    # ... and so does every knob reasoned from the two figures: a gap and a part as the
    # same share of the (smaller) break-even, the smallest part as the same ~10 ms of
    # (slower) transfer, setup as the same round trips (3x longer), and enough
    # connections of 30 MB/s for S3's 16 x 100 MB/s (capped at 4x).
    assert p.max_gap < S3.max_gap and p.split_size < S3.split_size
    assert abs(p.max_gap / S3.max_gap - p.breakeven / S3.breakeven) < 0.01
    assert abs(p.min_part / p.bandwidth - S3.min_part / S3.bandwidth) < 1e-3
    assert abs(p.connect_latency - 3 * S3.connect_latency) < 1e-9
    assert p.concurrency * p.bandwidth >= S3.concurrency * S3.bandwidth
    assert p.concurrency <= 4 * S3.concurrency


def test_small_requests_leave_bandwidth_alone() -> None:
    samples = [Sample(0.150, 4096, 0.0001) for _ in range(10)]
    p = calibrated(S3, samples)
    assert p.bandwidth == S3.bandwidth and abs(p.latency - 0.150) < 1e-9


def test_opt_out_keeps_the_static_profile() -> None:
    m = Measurements()
    for s in _slow_store(8):
        m.record(s.first_byte, s.nbytes, s.transfer)
    assert m.profile(S3, calibrate=False) is S3
    assert m.profile(S3).latency == 0.150


@given(st.lists(st.tuples(st.floats(0, 100), st.integers(0, 1 << 30), st.floats(0, 100)),
                min_size=5, max_size=40))
def test_moves_are_bounded(raw: list[tuple[float, int, float]]) -> None:
    p = calibrated(S3, [Sample(*r) for r in raw])
    assert S3.latency / 10 <= p.latency <= S3.latency * 10
    assert S3.bandwidth / 10 <= p.bandwidth <= S3.bandwidth * 10


def test_the_same_store_measured_keeps_the_static_knobs() -> None:
    n = 8
    p = calibrated(S3, [Sample(S3.latency, 4 * MiB, 4 * MiB / S3.bandwidth)] * n)
    assert (p.concurrency, p.max_gap, p.split_size, p.min_part) == (
        S3.concurrency, S3.max_gap, S3.split_size, S3.min_part)
    assert abs(p.connect_latency - S3.connect_latency) < 1e-9


def test_requests_on_new_connections_measure_the_setup_not_the_latency() -> None:
    warm = [Sample(0.150, 4 * MiB, 4 * MiB / 30e6) for _ in range(6)]
    fresh = [Sample(0.150 + 0.450, 4 * MiB, 4 * MiB / 30e6, fresh=True) for _ in range(20)]
    p = calibrated(S3, warm + fresh)
    assert abs(p.latency - 0.150) < 1e-9  # the 20 slower first bytes paid a setup
    assert abs(p.connect_latency - 0.450) < 1e-9
    # until five requests on warm connections are known, the static profile stays
    assert calibrated(S3, warm[:4] + fresh) is S3


@given(st.lists(st.tuples(st.floats(0, 100), st.integers(0, 1 << 30), st.floats(0, 100),
                          st.booleans()), min_size=5, max_size=40))
def test_derived_knobs_are_a_valid_profile_within_bounds(
        raw: list[tuple[float, int, float, bool]]) -> None:
    p = calibrated(S3, [Sample(*r) for r in raw])  # the Profile validates itself
    assert S3.concurrency <= p.concurrency <= 4 * S3.concurrency
    assert p.split_size <= p.max_request and p.tail_min <= p.tail_max
    assert S3.connect_latency / 10 <= p.connect_latency <= S3.connect_latency * 10


def test_a_busy_client_s_delays_do_not_set_the_figures() -> None:
    """A client short of CPU adds its own delay to most of what it times; the requests it
    delayed least (a low quantile of first bytes, a high one of rates) still measure
    the endpoint, where medians would measure the client."""
    true = [Sample(0.150, 4 * MiB, 4 * MiB / 30e6) for _ in range(4)]
    busy = [Sample(0.150 + 0.1, 4 * MiB, 4 * MiB / 30e6 + 0.3) for _ in range(6)]
    p = calibrated(S3, true + busy)
    assert abs(p.latency - 0.150) / 0.150 < 0.25
    assert abs(p.bandwidth - 30e6) / 30e6 < 0.25


def test_transfers_that_shared_the_client_never_make_the_endpoint_slower() -> None:
    """A body received beside others of the same endpoint is paced by the client (its one
    loop, a busy machine) as much as by its connection: slow ones leave the static
    bandwidth (and the connections and part sizes that follow from it) alone, while a
    fast one still shows a faster endpoint."""
    slow = [Sample(S3.latency, 4 * MiB, 4 * MiB / 10e6, shared=True) for _ in range(20)]
    p = calibrated(S3, slow)
    assert p.bandwidth == S3.bandwidth
    assert (p.concurrency, p.min_part) == (S3.concurrency, S3.min_part)
    fast = [Sample(S3.latency, 4 * MiB, 4 * MiB / 400e6, shared=True) for _ in range(20)]
    assert calibrated(S3, fast).bandwidth > S3.bandwidth
    alone = [Sample(S3.latency, 4 * MiB, 4 * MiB / 10e6) for _ in range(20)]
    assert calibrated(S3, alone).bandwidth < S3.bandwidth  # a solo transfer still counts
