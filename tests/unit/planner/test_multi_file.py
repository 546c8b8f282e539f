"""Multi-file plans: pruning, tasks of about a target size, and their explanation."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner as P
from csup_async.format.meta import PrimitiveColumn, Segment
from csup_async.model.errors import ColumnNotFoundError
from csup_async.model.types import INT64, STRING
from tests.support.planner_builders import make_meta, metas, record

MiB = 1 << 20


def seg(offset: int, length: int) -> Segment:
    return Segment(offset, length, length)


def file_with(a_len: int, b_len: int = 10, rows: int = 5, *, a_null: bool = False):
    """{a:int64, b:string}, one segment each, ``rows`` rows (single super type)."""
    a = None if a_null else PrimitiveColumn((seg(0, a_len),))
    t, c = record(a=(INT64, a, ()), b=(STRING, PrimitiveColumn((seg(a_len, b_len),)), ()))
    return make_meta((t,), (c,), (Segment(a_len + b_len, 3, rows),))


def test_pruning_reasons():
    empty = make_meta((), (), ())
    zero_rows = file_with(100, rows=0)
    other_t, other_c = record(z=(INT64, PrimitiveColumn((seg(0, 8),)), ()))
    other = make_meta((other_t,), (other_c,), (Segment(8, 1, 4),))
    nulls = file_with(100, a_null=True)
    good = file_with(100)
    mp = P.plan_files([("empty", empty), ("zero", zero_rows), ("other", other),
                       ("nulls", nulls), ("good", good)], ["a"], "s3")
    assert [f.name for f in mp.files] == ["good"]
    assert {(f.name, f.reason, f.rows) for f in mp.pruned} == {
        ("empty", P.NO_ROWS, 0), ("zero", P.NO_ROWS, 0),
        ("other", P.NO_REQUESTED_PATH, 4), ("nulls", P.ALL_NULL, 5)}
    assert mp.missing_paths == ()
    # a path that is null here but present elsewhere keeps the file for the other path
    kept = P.plan_files([("nulls", nulls)], ["a", "b"], "s3")
    assert [f.name for f in kept.files] == ["nulls"] and kept.pruned == ()
    assert kept.files[0].plan.null_paths == ("a",)
    # with every column requested only empty files go
    everything = P.plan_files([("other", other), ("zero", zero_rows)], None, "s3")
    assert [f.name for f in everything.files] == ["other"]


def test_missing_everywhere_is_reported_and_strict_raises():
    files = {"f1": file_with(10), "f2": file_with(20)}
    mp = P.plan_files(files, ["a", "ghost"], "s3")
    assert mp.missing_paths == ("ghost",)
    assert len(mp.files) == 2
    with pytest.raises(ColumnNotFoundError, match="ghost"):
        P.plan_files(files, ["a", "ghost"], "s3", strict=True)


def test_tasks_pack_whole_files_to_the_target():
    files = [(f"f{i}", file_with(10 * MiB)) for i in range(10)]
    mp = P.plan_files(files, ["a"], "s3", target_task_bytes=35 * MiB, request_cost=0)
    # 10 MiB per file: three files per task, never a file split across tasks
    assert [len(t.files) for t in mp.tasks] == [3, 3, 3, 1]
    assert [t.index for t in mp.tasks] == [0, 1, 2, 3]
    assert all(tf.complete and tf.requests == tf.plan.requests for t in mp.tasks for tf in t.files)
    assert [tf.name for t in mp.tasks for tf in t.files] == [f"f{i}" for i in range(10)]
    assert sum(t.bytes_to_read for t in mp.tasks) == mp.bytes_to_read == 100 * MiB
    # each task keeps its files' metadata
    assert mp.tasks[0].files[0].meta is files[0][1]


def test_request_cost_keeps_small_files_from_piling_up():
    files = [(f"f{i}", file_with(1000)) for i in range(1000)]
    cheap = P.plan_files(files, ["a"], "s3", target_task_bytes=64 * MiB, request_cost=0)
    assert len(cheap.tasks) == 1
    costly = P.plan_files(files, ["a"], "s3", target_task_bytes=64 * MiB)
    per_task = 64 * MiB // (1000 + P.PROFILES["s3"].breakeven)
    assert len(costly.tasks) == -(-1000 // per_task)
    assert all(len(t.files) <= per_task for t in costly.tasks)


def test_a_file_bigger_than_the_target_gets_its_own_task_unless_split():
    big = file_with(300 * MiB)
    small = file_with(MiB)
    files = [("small1", small), ("big", big), ("small2", small)]
    whole = P.plan_files(files, ["a"], "s3", target_task_bytes=64 * MiB)
    assert [[tf.name for tf in t.files] for t in whole.tasks] == [["small1"], ["big"],
                                                                   ["small2"]]
    split = P.plan_files(files, ["a"], "s3", target_task_bytes=64 * MiB, split_files=True)
    big_parts = [tf for t in split.tasks for tf in t.files if tf.name == "big"]
    assert len(big_parts) > 1 and not any(tf.complete for tf in big_parts)
    # every request of the big file is in exactly one task, whole
    carried = [r for tf in big_parts for r in tf.requests]
    assert carried == list(big_parts[0].plan.requests)
    for t in split.tasks:
        weight = sum(r.length + split.request_cost for tf in t.files for r in tf.requests)
        assert weight <= 64 * MiB or sum(len(tf.requests) for tf in t.files) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(metas(max_types=2, max_depth=2), min_size=1, max_size=6),
       st.integers(1, 20 * MiB), st.booleans())
def test_tasks_hold_every_request_exactly_once(drawn: list, target: int, split: bool):
    files = [(f"f{i}", d.meta) for i, d in enumerate(drawn)]
    mp = P.plan_files(files, None, "s3", target_task_bytes=target, split_files=split)
    assert len(mp.files) + len(mp.pruned) == len(files)
    per_file: dict[str, list] = {}
    for t in mp.tasks:
        for tf in t.files:
            per_file.setdefault(tf.name, []).extend(tf.requests)
    for fs in mp.files:
        assert per_file[fs.name] == list(fs.plan.requests)
    assert sum(t.request_count for t in mp.tasks) == mp.request_count
    assert sum(t.bytes_to_read for t in mp.tasks) == mp.bytes_to_read
    if not split:
        assert sum(len(t.files) for t in mp.tasks) == len(mp.files)


def test_multi_explain_is_compact():
    files = [(f"f{i}", file_with(5 * MiB)) for i in range(500)]
    files.append(("gone", file_with(10, rows=0)))
    mp = P.plan_files(files, ["a"], "s3", target_task_bytes=64 * MiB)
    text = mp.explain(limit=5)
    assert len(text.splitlines()) < 25
    assert "500 files to read, 1 pruned" in text
    assert "gone: no rows" in text
    assert f"... and {len(mp.tasks) - 5:,} more tasks" in text


def test_multi_explain_names_missing_paths_and_bad_targets_are_refused():
    mp = P.plan_files([("f", file_with(10))], ["a", "ghost"], "s3")
    assert "missing in every file: ghost" in mp.explain()
    assert mp.files[0].meta is mp.files[0].plan.meta
    with pytest.raises(P.ProfileError):
        P.plan_files([("f", file_with(10))], ["a"], "s3", target_task_bytes=0)
