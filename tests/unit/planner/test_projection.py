"""The scan planner: projection -> streams -> segments -> requests, and explain()."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner as P
from csup_async.format.meta import (
    ArrayColumn,
    FieldColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segment,
    iter_segmaps,
)
from csup_async.model.errors import ColumnNotFoundError, CsupError
from csup_async.model.types import (
    INT64,
    STRING,
    ArrayType,
    ErrorType,
    Field,
    NamedType,
    RecordType,
)
from tests.support.planner_builders import (
    DrawnFile,
    check_requests,
    make_meta,
    metas,
    record,
    type_paths,
)

PROFILE_NAMES = sorted(P.PROFILES)


def seg(offset: int, length: int) -> Segment:
    return Segment(offset, length, length)


def hello_world():
    """The seed's example: columns a, b, then the super column, in that order."""
    a, b, sc = seg(0, 16), seg(16, 13), seg(29, 2)
    t, c = record(a=(STRING, PrimitiveColumn((a,)), ()), b=(STRING, PrimitiveColumn((b,)), ()))
    return make_meta((t,), (c,), (sc,)), a, b, sc


def segments_of(plan: P.ScanPlan) -> set[Segment]:
    return set(plan.segments)


def stream_labels(plan: P.ScanPlan, sid: int = 0) -> set[tuple[str, str]]:
    return {(r.path, r.role) for r in plan.streams[sid]}


# ------------------------------------------------------------- projection ---

def test_hello_world_projection_reads_only_that_column():
    meta, a, b, _ = hello_world()
    plan = P.plan_scan(meta, ["a"])
    assert plan.segments == (a,)
    assert [(r.offset, r.length) for r in plan.requests] == [(0, 16)]
    assert plan.bytes_needed == plan.bytes_to_read == 16
    assert P.plan_scan(meta, ["b"]).segments == (b,)
    # one super type: the row count is in the metadata, the super column is not read
    assert P.plan_scan(meta).segments == (a, b)
    assert P.plan_scan(meta).super_stream is None


def test_nested_path_needs_every_ancestor_presence_and_nothing_else():
    p_outer, p_inner, vals, other, p_other = (seg(0, 5), seg(10, 6), seg(100, 50),
                                              seg(200, 70), seg(300, 4))
    inner_t, inner_c = record(b=(INT64, PrimitiveColumn((vals,)), (p_inner,)),
                              z=(INT64, PrimitiveColumn((other,)), (p_other,)))
    t, c = record(a=(inner_t, inner_c, (p_outer,)), y=(INT64, PrimitiveColumn((seg(400, 9),)), ()))
    meta = make_meta((t,), (c,), (seg(500, 1),))
    plan = P.plan_scan(meta, ["a.b"])
    assert segments_of(plan) == {p_outer, p_inner, vals}
    assert stream_labels(plan) == {("a", "presence"), ("a.b", "presence"), ("a.b", "values")}
    # the whole subtree when the path ends at a record
    assert segments_of(P.plan_scan(meta, ["a"])) == {p_outer, p_inner, vals, other, p_other}


def test_nulls_wrapper_presence_is_needed_on_the_way_down():
    nulls_p, field_p, vals = seg(0, 3), seg(3, 3), seg(6, 30)
    t, rc = record(a=(INT64, PrimitiveColumn((vals,)), (field_p,)))
    meta = make_meta((t,), (NullsColumn(rc, (nulls_p,)),), (seg(40, 1),))
    plan = P.plan_scan(meta, ["a"])
    assert segments_of(plan) == {nulls_p, field_p, vals}
    assert ("", "presence") in stream_labels(plan)


def test_named_and_error_types_are_transparent():
    v = seg(0, 10)
    inner_t, inner_c = record(x=(INT64, PrimitiveColumn((v,)), ()))
    t = NamedType("wrapped", ErrorType(NamedType("inner", inner_t)))
    meta = make_meta((t,), (inner_c,), (seg(10, 1),))
    plan = P.plan_scan(meta, ["x"])
    assert plan.segments == (v,) and plan.missing_paths == ()


def test_paths_do_not_descend_into_arrays():
    lengths, vals = seg(0, 4), seg(4, 40)
    elem_t, elem_c = record(b=(INT64, PrimitiveColumn((vals,)), ()))
    t, c = record(a=(ArrayType(elem_t), ArrayColumn(elem_c, (lengths,)), ()))
    meta = make_meta((t,), (c,), (seg(50, 1),))
    assert P.plan_scan(meta, ["a.b"]).missing_paths == ("a.b",)
    plan = P.plan_scan(meta, ["a"])
    assert segments_of(plan) == {lengths, vals}
    assert stream_labels(plan) == {("a", "lengths"), ("a[].b", "values")}


def test_missing_path_is_reported_not_dropped():
    meta, *_ = hello_world()
    plan = P.plan_scan(meta, ["nope", "a"])
    assert plan.missing_paths == ("nope",)
    assert plan.found == (("a",),)
    only_missing = P.plan_scan(meta, ["nope"])
    assert only_missing.missing_paths == ("nope",)
    assert only_missing.segments == () and only_missing.requests == ()
    assert only_missing.bytes_to_read == 0 and only_missing.request_count == 0
    with pytest.raises(ColumnNotFoundError, match="nope"):
        P.plan_scan(meta, ["a", "nope"], strict=True)
    P.plan_scan(meta, ["a"], strict=True)  # strict is fine when all paths exist


def two_types():
    """Super type 0 is a record {a, b}; super type 1 is a top-level int64."""
    a, b, n, sc = seg(0, 10), seg(10, 10), seg(20, 10), seg(30, 3)
    t, c = record(a=(INT64, PrimitiveColumn((a,)), ()), b=(INT64, PrimitiveColumn((b,)), ()))
    return make_meta((t, INT64), (c, PrimitiveColumn((n,))), (sc,)), a, b, n, sc


def test_super_column_only_for_files_with_several_super_types():
    meta, a, _b, _n, sc = two_types()
    plan = P.plan_scan(meta, ["a"])
    assert segments_of(plan) == {a, sc}
    assert plan.super_stream is not None and plan.super_stream.role == "super"
    single, *_ = hello_world()
    assert all(r.role != "super" for refs in P.plan_scan(single).streams for r in refs)


def test_non_record_top_level_values():
    meta, a, b, n, sc = two_types()
    plan = P.plan_scan(meta, ["a"])
    assert plan.found == (("a",), ())  # the int64 super type cannot have a field
    assert plan.streams[1] == ()
    assert segments_of(P.plan_scan(meta)) == {a, b, n, sc}
    assert segments_of(P.plan_scan(meta, [""])) == {a, b, n, sc}
    only_int = make_meta((INT64,), (PrimitiveColumn((n,)),), (sc,))
    assert P.plan_scan(only_int, ["a"]).missing_paths == ("a",)
    assert P.plan_scan(only_int).segments == (n,)
    assert P.plan_scan(only_int, [""]).segments == (n,)


def test_all_null_field_exists_but_needs_no_bytes():
    pres = seg(0, 4)
    t, c = record(a=(INT64, None, ()), b=(INT64, PrimitiveColumn((seg(4, 8),)), (pres,)))
    meta = make_meta((t,), (c,), (seg(20, 1),))
    plan = P.plan_scan(meta, ["a"])
    assert plan.missing_paths == () and plan.null_paths == ("a",)
    assert plan.segments == ()
    absent_top = make_meta((t,), (None,), (seg(20, 1),))
    assert P.plan_scan(absent_top, ["b"]).null_paths == ("b",)


def test_empty_duplicate_and_quoted_paths():
    meta, a, b, _ = hello_world()
    everything = P.plan_scan(meta)
    assert P.plan_scan(meta, []) == everything
    assert P.plan_scan(meta, [""]).segments == everything.segments
    dup = P.plan_scan(meta, ["a", "a", "`a`"])
    assert dup.columns == ("a",) and dup.segments == (a,)
    # a lone string is one path, not a list of one-letter paths
    assert P.plan_scan(meta, "b").segments == (b,)
    dotted_t, dotted_c = record(**{"x.y": (INT64, PrimitiveColumn((a,)), ())})
    dotted = make_meta((dotted_t,), (dotted_c,), (seg(40, 1),))
    assert P.plan_scan(dotted, ["`x.y`"]).segments == (a,)
    assert P.plan_scan(dotted, ["x.y"]).missing_paths == ("x.y",)
    for bad in ("a..b", ".a", "a.", "`a", "`a`b", "a`b`"):
        with pytest.raises(P.InvalidPathError):
            P.plan_scan(meta, [bad])


def test_parse_and_format_paths_round_trip():
    assert P.parse_path("") == ()
    assert P.parse_path("a.b") == ("a", "b")
    assert P.parse_path("`a.b`.c") == ("a.b", "c")
    assert P.parse_path("`x``y`") == ("x`y",)
    assert P.parse_path("``") == ("",)
    for comps in [("a",), ("a.b", "c"), ("x`y",), ("",), ("a[]", "{k}")]:
        assert P.parse_path(P.format_path(comps)) == comps


def _path_strategy(drawn: DrawnFile) -> st.SearchStrategy[list[str]]:
    existing = sorted(set().union(*(type_paths(t) for t in drawn.types)))
    spelled = [P.format_path(p) for p in existing] + ["zz", "a.zz", "`x.y`.q"]
    return st.lists(st.sampled_from(spelled), max_size=4)


def _expected(drawn: DrawnFile, columns: list[str] | None) -> tuple[set[Segment], set[str]]:
    """An independent oracle from the generator's records of where each stream lives."""
    streams = drawn.streams
    n_types = len(drawn.types)
    if not columns:
        want = {s for info in streams if info.super_id >= 0 for s in info.segments}
        if n_types > 1:
            want |= set(streams[-1].segments)
        return want, set()
    want: set[Segment] = set()
    missing = set()
    matched = False
    for spelled in columns:
        path = P.parse_path(spelled)
        hit = False
        for sid, t in enumerate(drawn.types):
            if path not in type_paths(t):
                continue
            hit = matched = True
            for info in streams:
                if info.super_id != sid:
                    continue
                on_the_way = info.level_presence and path[: len(info.rpath)] == info.rpath
                inside = info.rpath[: len(path)] == path
                if on_the_way or inside:
                    want |= set(info.segments)
        if not hit:
            missing.add(spelled)
    if n_types > 1 and matched:
        want |= set(streams[-1].segments)
    return want, missing


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(PROFILE_NAMES))
def test_random_files_plan_what_the_oracle_says(data: st.DataObject, profile: str):
    drawn = data.draw(metas())
    columns = data.draw(st.none() | _path_strategy(drawn))
    plan = P.plan_scan(drawn.meta, columns, profile)
    want, missing = _expected(drawn, columns)
    assert segments_of(plan) == want
    assert set(plan.missing_paths) == missing
    # every stream's segments are in the plan, and every planned segment has a stream
    labeled = {s for refs in plan.streams for r in refs for s in r.segmap}
    if plan.super_stream is not None:
        labeled |= set(plan.super_stream.segmap)
    assert labeled == want
    assert all(r.role in P.ROLES for refs in plan.streams for r in refs)
    counts = check_requests(plan.segments, plan.requests, plan.profile)
    assert plan.bytes_needed == counts["needed"]
    assert plan.bytes_to_read == counts["read"] == sum(r.length for r in plan.requests)
    assert plan.request_count == len(plan.requests)
    assert list(plan.segments) == sorted(want, key=lambda s: (s.offset, s.length,
                                                             s.mem_length, s.compression))
    # identical inputs, identical plans
    assert P.plan_scan(drawn.meta, columns, profile) == plan


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metas())
def test_all_columns_is_every_segmap(drawn: DrawnFile):
    meta = drawn.meta
    want = {s for c in meta.columns for sm in iter_segmaps(c) for s in sm}
    if len(meta.super_types) > 1:
        want |= set(meta.super_column)
    assert segments_of(P.plan_scan(meta)) == want
    assert segments_of(P.plan_scan(meta, [""])) == want


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_available_bytes_are_served_not_read(data: st.DataObject):
    drawn = data.draw(metas(max_types=2, max_depth=2))
    size = drawn.meta.object_size
    off = data.draw(st.integers(0, size))
    length = data.draw(st.integers(0, size - off))
    plan = P.plan_scan(drawn.meta, None, "s3", available=(off, length))
    counts = check_requests(plan.segments, plan.requests, plan.profile, (off, length))
    assert plan.bytes_to_read == counts["read"]
    assert plan.served_count <= 1
    assert plan.request_count == sum(not r.served for r in plan.requests)


# ------------------------------------------------------------------ small ---

def test_small_file_costs_one_round_trip():
    meta, *_ = hello_world()
    size = meta.object_size
    tail = P.tail_prefetch_size("s3", object_size=size)
    assert tail == size  # the whole object comes with the metadata
    plan = P.plan_scan(meta, ["a"], "s3", available=(size - tail, tail))
    assert plan.request_count == 0 and plan.bytes_to_read == 0
    assert [r.served for r in plan.requests] == [True]
    assert plan.requests[0].segments == plan.segments


def test_one_segment_file():
    only = seg(0, 123)
    t, c = record(a=(INT64, PrimitiveColumn((only,)), ()))
    meta = make_meta((t,), (c,), ())
    plan = P.plan_scan(meta)
    assert plan.segments == (only,)
    assert [(r.offset, r.length, r.segments) for r in plan.requests] == [(0, 123, (only,))]
    assert plan.amplification == 1.0


# ---------------------------------------------------------------- explain ---

def test_explain_names_columns_streams_and_amplification():
    meta, *_ = two_types()
    text = P.plan_scan(meta, ["a", "gone"]).explain()
    for needle in ("columns: a, gone", "missing", "gone", "super type 0", "values",
                   "super column", "read amplification", "2.538x", "requests: 1 to read",
                   "gap 20 B"):
        assert needle in text, needle


def wide_file(n_cols: int = 100, rounds: int = 100, size: int = 4096):
    """``n_cols`` int64 columns, written in ``rounds`` flushes of one segment each."""
    per_col: list[list[Segment]] = [[] for _ in range(n_cols)]
    off = 0
    for _ in range(rounds):
        for c in range(n_cols):
            per_col[c].append(seg(off, size))
            off += size
    fields = {f"c{i}": (INT64, PrimitiveColumn(tuple(s)), ()) for i, s in enumerate(per_col)}
    t, c = record(**fields)
    return make_meta((t,), (c,), (seg(off, 10),))


def test_explain_stays_short_for_ten_thousand_segments():
    meta = wide_file()
    plan = P.plan_scan(meta, None, "local")
    assert len(plan.segments) == 10_000
    text = plan.explain(limit=10)
    assert len(text.splitlines()) < 40
    assert "... and 90 more streams" in text
    assert "c0" in text and "values" in text
    # gaps between requests would show as amplification; here everything is contiguous
    assert "1.000x" in text
    few = P.plan_scan(meta, [f"c{i}" for i in range(0, 100, 2)], "local", max_amplification=0)
    more = few.explain(limit=10)
    assert f"... and {few.request_count - 10:,} more requests" in more


def test_explain_reports_real_amplification():
    a, b, c = seg(0, 100), seg(100, 800), seg(900, 100)
    t, col = record(x=(INT64, PrimitiveColumn((a, c)), ()), y=(INT64, PrimitiveColumn((b,)), ()))
    meta = make_meta((t,), (col,), (seg(1000, 1),))
    plan = P.plan_scan(meta, ["x"], "s3")
    assert (plan.bytes_needed, plan.bytes_to_read, plan.request_count) == (200, 1000, 1)
    assert "5.000x" in plan.explain()
    assert "gap 800 B" in plan.explain()


# ----------------------------------------------------------------- errors ---

def test_unknown_profile_is_a_csup_error():
    meta, *_ = hello_world()
    with pytest.raises(CsupError, match="unknown profile"):
        P.plan_scan(meta, None, "ftp")
    with pytest.raises(P.ProfileError):
        P.get_profile(42)  # type: ignore[arg-type]
    assert P.get_profile("S3") is P.PROFILES["s3"]


def test_unsorted_fields_and_record_column_mismatch_do_not_crash():
    # metadata whose column does not match its type: the planner plans nothing below
    # the mismatch and leaves the error to the reader
    t = RecordType(tuple(record(a=(INT64, None, ()))[0].fields))
    meta = make_meta((t,), (PrimitiveColumn((seg(0, 5),)),), (seg(5, 1),))
    plan = P.plan_scan(meta, ["a"])
    assert plan.null_paths == ("a",) and plan.segments == ()
    col = RecordColumn((FieldColumn("zz", PrimitiveColumn((seg(0, 5),)), ()),))
    meta2 = make_meta((t,), (col,), (seg(5, 1),))
    assert P.plan_scan(meta2, ["a"]).segments == ()


def test_resolve_paths_alone():
    meta, _a, _b, _n, sc = two_types()
    res = P.resolve_paths(meta, ["b", "zz"])
    assert [(r.super_id, r.path, r.role) for r in res.streams[0]] == [(0, "b", "values")]
    assert res.streams[1] == ()
    assert res.missing_paths == ("zz",) and res.super_stream is not None
    assert res.super_stream.segmap == (sc,)
    assert P.resolve_paths(meta).columns is None


def test_paths_through_an_all_null_field():
    inner_t, _ = record(b=(INT64, None, ()))
    pres = seg(0, 4)
    t, c = record(a=(inner_t, None, (pres,)), n=(INT64, None, ()))
    meta = make_meta((t,), (c,), (seg(4, 1),))
    plan = P.plan_scan(meta, ["a.b", "a.zz", "n.deeper"])
    assert plan.null_paths == ("a.b",)
    assert plan.missing_paths == ("a.zz", "n.deeper")
    assert plan.segments == ()  # all null whatever a's presence says: nothing to read


def test_invalid_path_values():
    meta, *_ = hello_world()
    with pytest.raises(P.InvalidPathError):
        P.plan_scan(meta, [3])  # type: ignore[list-item]
    with pytest.raises(P.InvalidPathError):
        P.parse_path("`a`.")
    with pytest.raises(P.InvalidPathError):
        P.parse_path("`a`..b")


def test_explain_shows_splits_served_bytes_nulls_and_many_types():
    huge = seg(0, 100 << 20)
    t, c = record(big=(INT64, PrimitiveColumn((huge,)), ()), gone=(INT64, None, ()))
    others = [RecordType((Field(f"f{i}", INT64),)) for i in range(30)]
    cols = [RecordColumn((FieldColumn(f"f{i}", PrimitiveColumn((seg((101 << 20) + i, 1),)),
                                      ()),)) for i in range(30)]
    meta = make_meta((t, *others), (c, *cols), (seg(200 << 20, 5),))
    plan = P.plan_scan(meta, ["big", "gone"], "s3", available=(99 << 20, 101 << 20))
    text = plan.explain(limit=5)
    assert "all null (nothing to read): gone" in text
    assert "partial segment" in text and "served from available bytes" in text
    assert "... and 26 more super types" in text
    assert len(text.splitlines()) < 40
