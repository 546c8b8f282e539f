"""Coalescing byte ranges into requests, the store profiles, and the metadata reads."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner as P
from csup_async.format.meta import PrimitiveColumn, Segment
from csup_async.model.errors import CsupError, FormatError
from csup_async.model.types import INT64
from tests.support.planner_builders import check_requests, expected_cap, make_meta, record

KiB, MiB = 1 << 10, 1 << 20
# the s3 profile at the 1 MiB min_part these tests' figures were worked out for (the
# profile's own is 2 MiB since #38 item 4; the mechanisms are the same)
S3 = dataclasses.replace(P.PROFILES["s3"], min_part=1 << 20)


def seg(offset: int, length: int) -> Segment:
    return Segment(offset, length, length)


def spans(requests: tuple[P.Request, ...]) -> list[tuple[int, int]]:
    return [(r.offset, r.length) for r in requests]


# -------------------------------------------------------------- profiles ---

def tiny_profile(**kw: object) -> P.Profile:
    """Small numbers so hypothesis can reach every branch: gap limit 100, cap 1000-4000."""
    base = {"name": "tiny", "latency": 0.001, "bandwidth": 150_000.0, "concurrency": 4,
            "max_gap": 100, "split_size": 1000, "max_request": 4000}
    base.update(kw)
    return P.Profile(**base)  # type: ignore[arg-type]


def test_profiles_follow_the_cost_model():
    s3 = P.PROFILES["s3"]
    assert s3.breakeven == 5_000_000  # 50 ms x 100 MB/s
    assert s3.gap_limit == 1 * MiB  # capped well below the break-even
    local = P.PROFILES["local"]
    assert local.gap_limit < s3.gap_limit and local.max_request > s3.max_request
    for p in P.PROFILES.values():
        assert p.split_size <= p.max_request
        assert p.gap_limit <= p.breakeven
        # a split part is worth its request: at least about one break-even of transfer
        assert p.split_size >= min(p.breakeven, p.max_request)
    assert set(P.PROFILES) == {"s3", "gcs", "http", "local"}


@pytest.mark.parametrize("bad", [
    {"latency": -1.0}, {"bandwidth": 0.0}, {"concurrency": 0}, {"max_gap": -1},
    {"split_size": 0}, {"split_size": 5000, "max_request": 4000},
    {"max_amplification": -0.5}, {"max_amplification": float("nan")},
    {"tail_min": 10, "tail_max": 5},
])
def test_invalid_profile_parameters_are_refused(bad: dict):
    with pytest.raises(P.ProfileError) as info:
        tiny_profile(**bad)
    assert isinstance(info.value, CsupError) and isinstance(info.value, ValueError)


def test_request_cap_spreads_over_connections():
    p = tiny_profile()
    assert p.request_cap(0) == 1000  # never below split_size
    assert p.request_cap(8000) == 2000  # 8000 bytes over 4 connections
    assert p.request_cap(10**9) == 4000  # never above max_request


# ---------------------------------------------------------------- merging ---

def test_gap_merging_follows_the_gap_limit():
    p = tiny_profile()
    assert spans(P.coalesce([(0, 10), (110, 10)], p)) == [(0, 120)]  # gap 100: merged
    assert spans(P.coalesce([(0, 10), (111, 10)], p)) == [(0, 10), (111, 10)]
    # the break-even caps max_gap too: 1 ms x 50 kB/s = 50 bytes
    slow = tiny_profile(bandwidth=50_000.0)
    assert spans(P.coalesce([(0, 10), (60, 10)], slow)) == [(0, 70)]
    assert spans(P.coalesce([(0, 10), (61, 10)], slow)) == [(0, 10), (61, 10)]
    assert spans(P.coalesce([(0, 10), (61, 10)], p)) == [(0, 71)]


def test_plain_ranges_and_segments_mix_and_dedupe():
    a = seg(100, 50)
    reqs = P.coalesce([a, (100, 50), a, (0, 10)], tiny_profile(max_gap=0))
    assert spans(reqs) == [(0, 10), (100, 50)]
    assert len(reqs[1].segments) == 1  # the same range twice is read and carried once
    with pytest.raises(P.InvalidRangeError):
        P.coalesce([(-1, 5)], S3)


def test_overlapping_and_empty_segments():
    big, inside, tail, empty = seg(0, 100), seg(10, 20), seg(90, 30), seg(500, 0)
    reqs = P.coalesce([inside, empty, tail, big], tiny_profile())
    assert spans(reqs) == [(0, 120)]
    assert set(reqs[0].segments) == {big, inside, tail}  # the empty one needs no bytes
    check_requests([big, inside, tail, empty], reqs, tiny_profile())


def test_negative_segment_is_a_format_error():
    t, c = record(a=(INT64, PrimitiveColumn((Segment(0, -5, 1),)), ()))
    with pytest.raises(FormatError):
        P.plan_scan(make_meta((t,), (c,), (), data_size=10), None)


def test_a_big_segment_is_spread_over_the_connections():
    big = seg(1000, 200 * MiB)
    reqs = P.coalesce([big], S3)
    assert len(reqs) == S3.concurrency  # 16 parts of 12.5 MiB, read in parallel
    assert {r.length for r in reqs} == {200 * MiB // 16}
    check_requests([big], reqs, S3)


def test_a_huge_segment_is_split_and_reassembles_exactly():
    huge = seg(1000, 3000 * MiB)
    reqs = P.coalesce([huge], S3)
    cap = expected_cap(S3, huge.length)
    assert cap == S3.max_request  # bigger than max_request x concurrency
    assert len(reqs) == -(-huge.length // cap) == 47
    assert all(r.length <= cap for r in reqs)
    pieces = [pc for r in reqs for pc in r.pieces]
    assert all(pc.segment == huge for pc in pieces)
    assert [pc.segment_start for pc in pieces] == [r.offset - huge.offset for r in reqs]
    assert sum(pc.length for pc in pieces) == huge.length
    check_requests([huge], reqs, S3)


def test_a_mid_sized_read_is_split_to_use_the_connections():
    run = [seg(i * MiB, MiB) for i in range(64)]  # 64 MiB contiguous, 16 connections
    reqs = P.coalesce(run, S3)
    # split_size parts (8 x 8 MiB), then spread over the idle connections: 16 x 4 MiB
    assert len(reqs) == 16 and {r.length for r in reqs} == {4 * MiB}
    assert all(len(r.segments) == 4 for r in reqs)
    no_spread = dataclasses.replace(S3, min_part=0)
    reqs = P.coalesce(run, no_spread)
    assert len(reqs) == 8 and {r.length for r in reqs} == {8 * MiB}  # split_size parts
    assert all(len(r.segments) == 8 for r in reqs)


def test_spread_splits_the_largest_down_to_min_part():
    """Fewer requests than connections: the largest are cut (all run at once, so the
    largest one's transfer is the scan's), never below min_part, never through a gap."""
    # the benchmark's 2-of-24-column shape: three flushes, each a 1.6 MB and a 4.3 MB run
    segs = []
    for k in range(3):
        base = k * 70 * MiB
        segs += [seg(base, 1_635_000), seg(base + 10 * MiB, 2_000_000),
                 seg(base + 10 * MiB + 2_000_000 + 1000, 2_259_000)]  # a 1 kB hole
    reqs = P.coalesce(segs, S3)
    check_requests(segs, reqs, S3)
    assert len(reqs) <= S3.concurrency
    assert max(r.length for r in reqs) < 1.7e6  # was 4.26 MB without spreading
    assert min(r.length for r in reqs) >= S3.min_part - 1000
    assert sum(r.length for r in reqs) <= sum(r.length for r in P.coalesce(
        segs, dataclasses.replace(S3, min_part=0)))
    # nothing to gain below min_part: a 1.5 MiB read stays whole
    assert len(P.coalesce([seg(0, 3 * MiB // 2)], S3)) == 1
    # a cut that falls in a hole drops the hole instead of starting a request there
    half = 1_200_000
    holed = [seg(0, half), seg(half + 10, half)]
    reqs = P.coalesce(holed, S3)
    assert [(r.offset, r.length) for r in reqs] == [(0, half), (half + 10, half)]


def mice_and_elephants(n_mice: int = 1000, rounds: int = 10):
    """Each flush writes ``n_mice/rounds`` small mouse segments, then one elephant segment."""
    mice, elephants = [], []
    off = 0
    per = n_mice // rounds
    for _ in range(rounds):
        for _ in range(per):
            mice.append(seg(off, 300))
            off += 300
        elephants.append(seg(off, 48 * MiB))
        off += 48 * MiB
    t, c = record(mouse=(INT64, PrimitiveColumn(tuple(mice)), ()),
                  elephant=(INT64, PrimitiveColumn(tuple(elephants)), ()))
    return make_meta((t,), (c,), (seg(off, 1),)), mice, elephants


def test_mice_read_their_bytes_in_few_requests():
    meta, _, _ = mice_and_elephants()
    plan = P.plan_scan(meta, ["mouse"], "s3")
    assert len(plan.segments) == 1000
    assert plan.request_count == 10  # one per flush: the elephants in between are not read
    assert plan.bytes_to_read == plan.bytes_needed == 300 * 1000
    check_requests(plan.segments, plan.requests, plan.profile)


def test_elephants_alone_and_both_together():
    meta, _, _ = mice_and_elephants()
    plan = P.plan_scan(meta, ["elephant"], "s3")
    assert plan.bytes_needed == 480 * MiB
    # mice between elephants are small gaps (30 kB): merged, so a few bytes more than needed
    assert plan.bytes_to_read - plan.bytes_needed <= 9 * 100 * 300
    assert all(r.length <= S3.max_request for r in plan.requests)
    check_requests(plan.segments, plan.requests, plan.profile)
    both = P.plan_scan(meta, None, "s3")
    assert both.amplification == 1.0
    cap = expected_cap(S3, both.bytes_needed)
    assert cap < S3.max_request  # 480 MiB over 16 connections: 30 MiB parts
    assert both.request_count == -(-both.bytes_needed // cap)


def test_interleaved_tiny_segments_local_vs_s3():
    # 2,000 segments alternating between two columns of 2 kB each
    a = [seg(i * 4096, 2048) for i in range(2000)]
    b = [seg(i * 4096 + 2048, 2048) for i in range(2000)]
    t, c = record(a=(INT64, PrimitiveColumn(tuple(a)), ()),
                  b=(INT64, PrimitiveColumn(tuple(b)), ()))
    meta = make_meta((t,), (c,), (seg(8192000, 1),))
    s3 = P.plan_scan(meta, ["a"], S3)
    # a 2 kB gap costs far less than a 50 ms request: read through them (in parts of
    # at least min_part, spread over the connections)
    assert s3.request_count == 7 and s3.amplification == pytest.approx(2.0, abs=0.01)
    one = P.plan_scan(meta, ["a"], dataclasses.replace(S3, min_part=0))
    assert one.request_count == 1
    bounded = P.plan_scan(meta, ["a"], S3, max_amplification=0.25)
    assert bounded.bytes_to_read <= 1.25 * bounded.bytes_needed
    assert 1 < bounded.request_count < 2000
    check_requests(bounded.segments, bounded.requests, bounded.profile)
    strict = P.plan_scan(meta, ["a"], S3, max_amplification=0)
    assert strict.request_count == 2000 and strict.amplification == 1.0


# ----------------------------------------------------------- properties ---

ranges = st.lists(st.tuples(st.integers(0, 20_000), st.integers(0, 3000)), max_size=60)


@settings(max_examples=400, deadline=None)
@given(ranges, st.sampled_from([None, 0.0, 0.1, 1.0]), st.integers(0, 150),
       st.integers(1, 6))
def test_coalesce_guarantees(rs: list[tuple[int, int]], amp: float | None, gap: int, conc: int):
    p = tiny_profile(max_amplification=amp, max_gap=gap, concurrency=conc)
    segs = [seg(o, n) for o, n in rs]
    reqs = P.coalesce(segs, p)
    counts = check_requests(segs, reqs, p)
    runs = max(1, len({s for s in segs if s.length}))
    assert counts["read"] - counts["to_read"] <= (runs - 1) * p.gap_limit
    assert P.coalesce(list(reversed(segs)), p) == reqs  # order of the input does not matter


@settings(max_examples=300, deadline=None)
@given(ranges, st.integers(0, 25_000), st.integers(0, 8000))
def test_coalesce_with_available_bytes(rs: list[tuple[int, int]], a_off: int, a_len: int):
    p = tiny_profile()
    segs = [seg(o, n) for o, n in rs]
    reqs = P.coalesce(segs, p, available=(a_off, a_len))
    check_requests(segs, reqs, p, (a_off, a_len))
    assert sum(r.served for r in reqs) <= 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**10), st.integers(1, 300 * MiB)), max_size=12),
       st.sampled_from(sorted(P.PROFILES)))
def test_real_profiles_with_big_ranges(rs: list[tuple[int, int]], name: str):
    p = P.PROFILES[name]
    segs = [seg(o, n) for o, n in rs]
    check_requests(segs, P.coalesce(segs, p), p)


def test_available_must_be_a_range():
    with pytest.raises(P.InvalidRangeError):
        P.coalesce([(0, 5)], S3, available=(-1, 4))
    with pytest.raises(P.InvalidRangeError):
        P.coalesce([(0, 5)], S3, available=5)  # type: ignore[arg-type]


def test_requests_never_read_across_available_bytes():
    reqs = P.coalesce([(0, 10), (30, 10)], tiny_profile(), available=(12, 10))
    assert spans(reqs) == [(0, 10), (30, 10)]
    reqs = P.coalesce([(0, 10), (30, 10)], tiny_profile(), available=(5, 30))
    assert [(r.offset, r.length, r.served) for r in reqs] == [
        (0, 5, False), (5, 30, True), (35, 5, False)]


# --------------------------------------------------------- metadata reads ---

def test_tail_prefetch_rule():
    assert P.tail_prefetch_size("s3") == 1 * MiB  # a quarter of 5 MB, capped at tail_max
    assert P.tail_prefetch_size("local") == 64 * KiB  # the floor
    http = P.PROFILES["http"]
    assert P.tail_prefetch_size(http) == int(0.25 * http.latency * http.bandwidth)
    assert P.tail_prefetch_size("s3", hint=5 * MiB) == 5 * MiB  # a known metadata size wins
    assert P.tail_prefetch_size("s3", object_size=100) == 100
    # small objects are read whole: the rest is less than a mergeable gap away
    assert P.tail_prefetch_size("s3", object_size=2 * MiB) == 2 * MiB
    assert P.tail_prefetch_size("s3", object_size=2 * MiB + 1) == 1 * MiB
    big = dataclasses.replace(S3, tail_max=4 * MiB)
    assert P.tail_prefetch_size(big) == 1_250_000
    with pytest.raises(P.InvalidRangeError):
        P.tail_prefetch_size("s3", hint=-1)


def test_metadata_followup():
    # object: 1,000,000 data + 300,000 reassembly + 200 trailer
    size = 1_300_200
    assert P.metadata_followup(size, 300_200, 1_000_000, 300_000, 200) is None
    assert P.metadata_followup(size, 400_000, 1_000_000, 300_000, 200) is None
    assert P.metadata_followup(size, 65_536, 1_000_000, 300_000, 200) == (
        1_000_000, size - 65_536 - 1_000_000)
    assert P.metadata_followup(size, size, 1_000_000, 300_000, 200) is None
    with pytest.raises(FormatError):
        P.metadata_followup(size, 1000, 1_000_000, 300_001, 200)
    with pytest.raises(P.InvalidRangeError):
        P.metadata_followup(size, size + 1, 1_000_000, 300_000, 200)


@given(st.integers(0, 10**7), st.integers(0, 10**6), st.integers(1, 4096), st.data())
def test_metadata_followup_completes_the_tail(data_size: int, reassembly: int, trailer: int,
                                              data: st.DataObject):
    size = data_size + reassembly + trailer
    tail = data.draw(st.integers(trailer, size))
    got = P.metadata_followup(size, tail, data_size, reassembly, trailer)
    have_from = size - tail
    if got is None:
        assert have_from <= data_size
    else:
        off, n = got
        assert off == data_size and off + n == have_from and n > 0


# ------------------------------------------------------ connection setup ---

def test_wave_seconds_charges_setup_to_new_connections_only():
    p = dataclasses.replace(S3, concurrency=2)  # 50 ms, 100 MB/s, 100 ms setup
    assert P.wave_seconds([10_000_000], p, warm=1) == pytest.approx(0.05 + 0.1)
    assert P.wave_seconds([10_000_000], p, warm=0) == pytest.approx(0.1 + 0.05 + 0.1)
    # the largest goes first, on the warm connection; the other waits for its setup
    assert P.wave_seconds([1_000_000, 10_000_000], p, warm=1) == pytest.approx(0.1 + 0.06)
    # a third request waits for the first connection to free
    assert P.wave_seconds([5_000_000] * 3, p, warm=2) == pytest.approx(2 * (0.05 + 0.05))
    assert P.wave_seconds([], p) == 0.0


def test_a_cold_process_reads_a_small_projection_on_its_warm_connection():
    """After the tail read one connection is open: 6.5 MiB on it (50 + 68 ms) beats
    six parts on new connections (100 ms of TCP and TLS first, then 50 + 11 ms)."""
    segs = [seg(i * MiB // 2, MiB // 2) for i in range(13)]
    cold = P.coalescing.plan_ranges(list(segs), S3, None, warm=0)
    one = P.coalescing.plan_ranges(list(segs), S3, None, warm=1)
    service = P.coalescing.plan_ranges(list(segs), S3, None, warm=16)
    assert cold.request_count == service.request_count == 6  # spread, as without setup
    assert (one.request_count, one.new_connections, one.warm) == (1, 0, 1)
    assert one.seconds == pytest.approx(0.05 + 13 * MiB / 2 / 100e6)
    assert cold.new_connections == 6 and service.new_connections == 0
    assert P.wave_seconds([r.length for r in cold.requests], S3, 1) > one.seconds
    # 19 MiB: the transfer outweighs the setup, so it is spread even with one warm
    big = [seg(i * MiB, MiB) for i in range(19)]
    assert P.coalescing.plan_ranges(list(big), S3, None, warm=1).request_count == 16


def test_explain_shows_connections_and_the_estimate():
    t, c = record(a=(INT64, PrimitiveColumn(tuple(seg(i * MiB // 2, MiB // 2)
                                                  for i in range(13))), ()))
    meta = make_meta((t,), (c,), (seg(7 * MiB, 1),))
    text = P.plan_scan(meta, ["a"], S3, warm=1).explain()
    assert "connections: 1 warm, 0 new; estimated 118 ms" in text
    text = P.plan_scan(meta, ["a"], S3).explain()
    assert "connections: 0 warm, 6 new (100 ms setup each)" in text


def test_warm_connections_must_not_be_negative():
    with pytest.raises(P.InvalidRangeError):
        P.coalesce([(0, 10)], S3, warm=-1)


@settings(max_examples=300, deadline=None)
@given(ranges, st.integers(0, 10), st.integers(1, 6), st.sampled_from([0.0, 0.002, 0.05]))
def test_setup_only_changes_plans_of_partly_warm_pools(rs: list[tuple[int, int]], warm: int,
                                                       conc: int, setup: float):
    p = tiny_profile(concurrency=conc, min_part=300, connect_latency=setup)
    free = dataclasses.replace(p, connect_latency=0.0)
    segs = [seg(o, n) for o, n in rs]
    got = P.coalescing.plan_ranges(list(segs), p, None, warm)
    check_requests(segs, got.requests, p)
    base = P.coalescing.plan_ranges(list(segs), free, None, 0)
    if warm == 0 or warm >= conc or setup == 0:
        # every part pays setup alike (or none does): the cut without setup
        assert got.requests == base.requests
    else:
        # fewer or as many requests, never slower by the model than the cut without setup
        assert got.request_count <= base.request_count
        assert got.seconds <= P.wave_seconds([r.length for r in base.requests], p, warm) + 1e-9
    assert got.new_connections == max(0, min(got.request_count, conc) - warm)
    assert got.seconds == pytest.approx(P.wave_seconds([r.length for r in got.requests],
                                                       p, warm))


def test_fewer_parts_never_exceed_max_request():
    """One warm connection would take the whole read, but it is over max_request: the
    plan stays the one-wave cut rather than falling back to cap-sized pieces."""
    p = tiny_profile(concurrency=2, min_part=300, connect_latency=0.05)
    segs = [seg(0, 901), seg(1001, 3000)]
    got = P.coalescing.plan_ranges(list(segs), p, None, 1)
    check_requests(segs, got.requests, p)
    assert got.request_count == 2 and max(r.length for r in got.requests) <= p.max_request


# ------------------------------------------------------- one wave (step 5) ---

def test_a_few_requests_over_the_connections_merge_into_one_wave():
    """4 columns of a file written in 5 frames: 18 runs, on 16 connections two of them
    wait for a second wave.  Merging the two smallest gaps (1.7 MB each, under the 5 MB
    break-even) reads 3.4 MB more in 16 requests that all start at once: faster by the
    model, so that is the plan; with gaps over the break-even it stays 18."""
    def frames(gap: int) -> list[Segment]:
        out, at = [], 0
        for _ in range(5):
            for size, after in ((1_200_000, gap), (1_500_000, 6 * MiB), (2_700_000, 6 * MiB),
                                (4_700_000, 30 * MiB)):
                out.append(seg(at, size))
                at += size + after
        return out[:18]

    segs = frames(1_700_000)
    merged = P.coalescing.plan_ranges(list(segs), S3, None, 16)
    check_requests(segs, merged.requests, S3)
    two_waves = P.coalescing.plan_ranges(
        list(segs), dataclasses.replace(S3, max_amplification=1e9), None, 16)
    assert (two_waves.request_count, merged.request_count) == (18, 16)
    assert merged.bytes_to_read == two_waves.bytes_to_read + 2 * 1_700_000
    assert merged.seconds < two_waves.seconds
    far = frames(6 * MiB)
    assert P.coalescing.plan_ranges(list(far), S3, None, 16).request_count == 18


@settings(max_examples=300, deadline=None)
@given(ranges, st.integers(0, 10), st.integers(1, 6), st.sampled_from([0.0, 0.05]))
def test_one_wave_merges_are_never_slower(rs: list[tuple[int, int]], warm: int, conc: int,
                                          setup: float):
    p = tiny_profile(concurrency=conc, min_part=300, connect_latency=setup)
    segs = [seg(o, n) for o, n in rs]
    got = P.coalescing.plan_ranges(list(segs), p, None, warm)
    check_requests(segs, got.requests, p)
    # a huge amplification budget merges what no budget does, without step 5
    base = P.coalescing.plan_ranges(list(segs), dataclasses.replace(p, max_amplification=1e9),
                                    None, warm)
    assert got.seconds <= base.seconds + 1e-9
    if got.request_count != base.request_count:
        assert got.request_count == conc < base.request_count
        assert got.bytes_to_read > base.bytes_to_read
    else:
        assert got.requests == base.requests
