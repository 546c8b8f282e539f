"""The one packer of work into tasks (planner.packing): properties every caller relies on."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import ProfileError
from planner.packing import EVEN, FIT, NEAREST, RULES, Target, Unit, pack, spread

units_st = st.lists(st.builds(Unit, weight=st.integers(0, 1000), rows=st.integers(0, 50),
                              key=st.sampled_from([None, "a", "b"])), max_size=80)
target_st = st.builds(Target, bytes=st.integers(1, 3000),
                      rows=st.one_of(st.none(), st.integers(1, 200)),
                      rule=st.sampled_from(RULES), min_tasks=st.integers(1, 8),
                      floor=st.integers(1, 500))


@settings(max_examples=300, deadline=None)
@given(units=units_st, target=target_st)
def test_every_unit_in_exactly_one_task_with_its_key_and_in_order(
        units: list[Unit], target: Target) -> None:
    p = pack(units, target)
    flat = [i for t in p.tasks for i in t.units]
    assert sorted(flat) == list(range(len(units)))  # each exactly once
    assert all(t.units for t in p.tasks)  # never an empty task
    for t in p.tasks:
        assert {units[i].key for i in t.units} == {t.key}  # one key per task
        assert list(t.units) == sorted(t.units)  # the given order within a task
        assert t.weight == sum(units[i].weight for i in t.units)
        assert t.rows == sum(units[i].rows for i in t.units)
    # within a key, tasks follow one another in the given order
    for key in {u.key for u in units}:
        mine = [i for t in p.tasks if t.key == key for i in t.units]
        assert mine == [i for i, u in enumerate(units) if u.key == key]
    assert pack(units, target) == p  # deterministic


@settings(max_examples=300, deadline=None)
@given(units=units_st, target=target_st)
def test_task_sizes_stay_within_the_target_unless_one_unit_is_larger(
        units: list[Unit], target: Target) -> None:
    p = pack(units, target)
    size = p.target
    assert 1 <= size <= max(target.bytes, 1)
    total = sum(u.weight for u in units)
    assert size >= min(target.bytes, target.floor, max(1, total))  # not below the floor
    for t in p.tasks:
        heavy = [units[i].weight for i in t.units if units[i].weight > 0]
        if target.rule == FIT:
            assert t.weight <= size or len(heavy) <= 1
        elif target.rule == NEAREST:  # at most half of its last unit past the target
            assert len(heavy) <= 1 or 2 * (t.weight - heavy[-1]) + heavy[-1] <= 2 * size
        if target.rows is not None and target.rule != EVEN:
            assert t.rows <= target.rows or len(t.units) == 1


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 500), weight=st.integers(1, 10_000), target=st.integers(1, 1 << 22),
       min_tasks=st.integers(1, 16))
def test_even_splits_equal_units_into_equal_shares(n: int, weight: int, target: int,
                                                   min_tasks: int) -> None:
    p = pack([Unit(weight)] * n, Target(target, rule=EVEN, min_tasks=min_tasks, floor=weight))
    sizes = [len(t.units) for t in p.tasks]
    assert max(sizes) - min(sizes) <= 1
    assert len(p.tasks) == min(n, math.ceil(n * weight / p.target))
    assert all((s - 1) * weight <= p.target for s in sizes)  # no task a unit over


def test_rules_at_the_boundary() -> None:
    ten = [Unit(1)] * 10
    assert [len(t.units) for t in pack(ten, Target(3)).tasks] == [3, 3, 3, 1]
    assert [len(t.units) for t in pack(ten, Target(3, rule=EVEN)).tasks] == [3, 2, 3, 2]
    # nearest: a unit joins unless more than half of it lands past the target
    assert [t.units for t in pack([Unit(8), Unit(8), Unit(8)], Target(10, rule=NEAREST)
                                  ).tasks] == [(0,), (1,), (2,)]
    assert [t.units for t in pack([Unit(6), Unit(4), Unit(6)], Target(10, rule=NEAREST)
                                  ).tasks] == [(0, 1), (2,)]
    # a unit larger than the target is a task of its own; a weightless one rides along
    assert [t.units for t in pack([Unit(1), Unit(50), Unit(0), Unit(1)], Target(10)
                                  ).tasks] == [(0,), (1, 2), (3,)]
    # min_tasks lowers the target (never below the floor); rows cap a task
    assert pack(ten, Target(100, min_tasks=5)).target == 2
    assert pack(ten, Target(100, min_tasks=5, floor=4)).target == 4
    assert [len(t.units) for t in pack([Unit(1, rows=10)] * 4, Target(100, rows=25)
                                       ).tasks] == [2, 2]
    assert pack([], Target(5)).tasks == ()
    assert spread(0, 100) == 1 and spread(1000, 100, 2) == 100 and spread(100, 1000, 4) == 25


def test_keys_never_share_a_task_and_come_in_first_seen_order() -> None:
    units = [Unit(1, key="b"), Unit(1, key="a"), Unit(1, key="b"), Unit(1, key="a")]
    p = pack(units, Target(100))
    assert [(t.key, t.units) for t in p.tasks] == [("b", (0, 2)), ("a", (1, 3))]


def test_a_bad_target_is_a_clear_error() -> None:
    with pytest.raises(ProfileError, match="packing rule 'biggest'"):
        Target(10, rule="biggest")
    with pytest.raises(ProfileError, match="must be >= 1"):
        Target(0)
    with pytest.raises(ProfileError, match="must be >= 1"):
        Target(10, rows=0)
