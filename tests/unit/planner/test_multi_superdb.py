"""A multi-file plan over SuperDB files (CSUP v23: no column index for ``plan_files`` to
plan from): each file's own reader plans it (``planned=``), and those plans are packed
into tasks by the one packer as ours are, with the objects their min/max ruled out
counted.  Without a plan a file is still read whole by its reader (a BSUP stream)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

import planner as P
from csup_async.format.meta import Segment
from csup_async.model.types import INT64, STRING, Field, RecordType
from planner.superdb import OpenCost, plan_header_layout

MiB = 1 << 20
T = RecordType((Field("a", INT64), Field("b", STRING)))


@dataclass
class SuperDBFile:
    """What ``plan_files`` asks of a SuperDB file's metadata."""

    super_types: tuple = (T,)
    row_count: int = 100
    object_size: int = 10 * MiB


def own_plan(sizes: list[int], pruned: int = 0, paths=("a",), missing=()) -> object:
    segs, at = [], 1000
    for n in sizes:
        segs.append(Segment(at, n, n))
        at += n + 4096  # other columns between: separate requests
    plan = plan_header_layout(segs, list(paths), list(missing), OpenCost(1, 2, 9000, 1, True),
                              23, "s3")
    return type(plan)(**{**{f: getattr(plan, f) for f in plan.__dataclass_fields__},
                         "pruned": pruned})


def test_superdb_files_are_planned_packed_and_counted():
    files = {f"f{i}": SuperDBFile() for i in range(4)}
    planned = {"f0": own_plan([40 * MiB], pruned=2), "f1": own_plan([40 * MiB]),
               "f2": own_plan([40 * MiB], pruned=1), "f3": None}  # f3: nothing to read
    mp = P.plan_files([*files.items(), ("bsup", SuperDBFile())], ["a"], "s3",
                      target_task_bytes=64 * MiB, planned=planned)
    assert [f.name for f in mp.files] == ["f0", "f1", "f2"]
    assert [f.name for f in mp.whole] == ["bsup"]  # no plan: its reader's own scan
    assert [(p.name, p.reason) for p in mp.pruned] == [("f3", P.NO_REQUESTED_PATH)]
    assert len(mp.tasks) == 3  # 40 MiB each against a 64 MiB target: one per task
    assert mp.objects_pruned == 3 and mp.files[0].objects_pruned == 2
    assert all(tf.meta is None for t in mp.tasks for tf in t.files)
    assert mp.request_count == sum(p.request_count for p in list(planned.values())[:3])
    text = mp.explain()
    assert "objects ruled out by their min/max (SuperDB files): 3" in text
    assert "1 file read by their own readers" in text or "read whole" in text


def test_a_file_whose_plan_misses_every_path_is_pruned():
    plan = own_plan([], paths=("z",), missing=("z",))
    mp = P.plan_files([("f", SuperDBFile())], ["z"], "s3", planned={"f": plan})
    assert mp.files == () and mp.pruned[0].reason == P.NO_REQUESTED_PATH
    assert mp.missing_paths == ("z",)
    empty = P.plan_files([("e", SuperDBFile(row_count=0))], ["a"], "s3",
                         planned={"e": own_plan([8])})
    assert empty.pruned[0].reason == P.NO_ROWS


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.lists(st.integers(1, 20 * MiB), min_size=1, max_size=4),
                      min_size=1, max_size=12),
       target=st.integers(1 * MiB, 80 * MiB), split=st.booleans())
def test_every_request_lands_in_exactly_one_task(sizes: list[list[int]], target: int,
                                                 split: bool) -> None:
    planned = {f"f{i}": own_plan(s) for i, s in enumerate(sizes)}
    mp = P.plan_files([(n, SuperDBFile()) for n in planned], ["a"], "s3",
                      target_task_bytes=target, split_files=split, planned=planned)
    seen = [(tf.name, r.offset) for t in mp.tasks for tf in t.files for r in tf.requests]
    want = [(n, r.offset) for n, p in planned.items() for r in p.requests]
    assert sorted(seen) == sorted(want)
    assert sum(t.bytes_to_read for t in mp.tasks) == mp.bytes_to_read
