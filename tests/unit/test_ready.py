"""The ready stage: what is due is taken by priority class, each lower class with its floor,
earliest first within a class; and it shares the heap's capacity in the due queue."""
from __future__ import annotations

import collections
from typing import Any, cast

import pytest

from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.due_queue import DueQueue
from dispatcher.engine.ready import HIGH, LOW, NORMAL, ReadyStage
from taskring.wire import pb


def due(task_id: str, due_ms: int, priority: int = NORMAL, slot: int = 0) -> Due:
    return Due(task=pb.Task(task_id=task_id, priority=cast(Any, priority)), slot=slot, attempt=1,
               due_ms=due_ms,
               source=KAFKA, epoch=1)


def classes(dues: list[Due]) -> collections.Counter:
    return collections.Counter(d.priority for d in dues)


def test_a_high_task_due_now_goes_before_every_overdue_low_one():
    q = DueQueue(capacity=1_000)
    q.push_many(due(f"low-{i}", i, LOW) for i in range(500))
    q.push(due("high", 900, HIGH))
    assert [d.task_id for d in q.pop_due(1_000, 1)] == ["high"]
    # Within a class, earliest due first.
    assert [d.task_id for d in q.pop_due(1_000, 3)] == ["low-0", "low-1", "low-2"]


def test_unspecified_priority_is_normal_and_normal_goes_before_low():
    q = DueQueue(capacity=10)
    q.push(due("low", 1, LOW))
    q.push(due("unspecified", 5, pb.PRIORITY_UNSPECIFIED))
    assert [d.task_id for d in q.pop_due(10, 1)] == ["unspecified"]


@pytest.mark.parametrize("take", [1, 10, 64])
def test_each_lower_class_gets_its_floor_while_higher_work_keeps_coming(take):
    stage = ReadyStage({LOW: 0.1, NORMAL: 0.2})
    stage.add(due(f"h{i}", i, HIGH) for i in range(10_000))
    stage.add(due(f"n{i}", i, NORMAL) for i in range(10_000))
    stage.add(due(f"l{i}", i, LOW) for i in range(10_000))
    taken = [d for _ in range(6_400 // take) for d in stage.take(take)]
    assert len(taken) == 6_400
    got = classes(taken)
    # Each lower class gets its floor, less at most one task still owed (when both were owed one
    # in a take of one, low went first and normal's credit waits for the next take).
    assert got[LOW] == 640 and 1_279 <= got[NORMAL] <= 1_280 and got[HIGH] == 6_400 - got[LOW] - got[NORMAL]


def test_a_class_with_nothing_waiting_banks_no_credit():
    stage = ReadyStage({LOW: 0.1, NORMAL: 0.2})
    stage.add(due(f"h{i}", i, HIGH) for i in range(1_000))
    for _ in range(50):
        stage.take(10)        # no low task waits: low earns nothing
    stage.add(due(f"l{i}", i, LOW) for i in range(100))
    assert classes(stage.take(10)) == {HIGH: 9, LOW: 1}


def test_without_higher_work_a_lower_class_takes_everything():
    stage = ReadyStage()
    stage.add(due(f"l{i}", i, LOW) for i in range(30))
    assert [d.task_id for d in stage.take(25)] == [f"l{i}" for i in range(25)]
    assert len(stage) == 5


@pytest.mark.parametrize("shares", [{LOW: 1.0}, {LOW: -0.1}, {HIGH: 0.1}])
def test_a_floor_must_be_a_share_of_a_lower_class(shares):
    with pytest.raises(ValueError, match="floor_shares"):
        ReadyStage(shares)


def test_ready_tasks_count_against_the_capacity_and_are_held_listed_and_dropped():
    q = DueQueue(capacity=4)
    q.push_many([due("a", 1, slot=1), due("b", 2, slot=2), due("c", 3, slot=1), due("later", 5_000, slot=2)])
    assert [d.task_id for d in q.pop_due(100, 1)] == ["a"]          # b and c wait in the ready stage
    assert (q.heap_size(), q.held(), q.room()) == (3, 3, 1)
    assert not q.intake_open(1) and q.intake_open(0)
    assert q.task_ids() == {"b", "c", "later"}
    assert q.next_eta_ms() == 2 and q.earliest_due_ms() == 2        # something is ready: act now
    q.push_many([due("d", 4), due("e", 5)])                         # one fits, one waits in the overflow
    assert (q.heap_size(), q.held()) == (4, 5)
    q.drop_slots({1})                                               # c leaves with its slot
    assert q.task_ids() == {"b", "later", "d", "e"}
    assert [d.task_id for d in q.pop_due(100, 10)] == ["b", "d", "e"]
    assert q.waiting_by_class() == {HIGH: 0, NORMAL: 0, LOW: 0}


def test_a_task_put_back_keeps_its_place_by_due_time():
    q = DueQueue(capacity=10)
    q.push_many([due("a", 1), due("b", 2), due("c", 3)])
    [a] = q.pop_due(100, 1)
    q.put_back(a)                                                   # no executor room yet
    assert [d.task_id for d in q.pop_due(100, 3)] == ["a", "b", "c"]


def test_intake_of_a_class_closes_at_its_share_of_the_heap_and_the_others_stay_open():
    q = DueQueue(capacity=100)                                       # low may fill 60, normal 80
    q.push_many(due(f"l{i}", 1_000 + i, LOW) for i in range(55))
    assert not q.intake_open(5, LOW)                                 # 55 held + a reserve of 5 reach 60
    assert q.intake_open(4, LOW) and q.intake_open(5, NORMAL) and q.intake_open(5, HIGH)
    q.push_many(due(f"n{i}", 2_000 + i, NORMAL) for i in range(30))
    assert q.intake_open(5, NORMAL)                                  # a class's own count, not those above
    assert not q.intake_open(15, HIGH) and not q.intake_open(15, NORMAL)   # the heap's room: 15 left
    assert q.held_by_class() == {HIGH: 0, NORMAL: 30, LOW: 55}
    assert q.earliest_due_by_class() == {HIGH: None, NORMAL: 2_000, LOW: 1_000}
    normal = DueQueue(capacity=100)
    normal.push_many(due(f"n{i}", 1, NORMAL) for i in range(76))
    assert not normal.intake_open(5, NORMAL) and normal.intake_open(5, HIGH)


def test_the_overflow_is_counted_by_class_and_recounted_when_a_slot_leaves():
    q = DueQueue(capacity=2)
    q.push_many([due("a", 1, LOW, slot=1), due("b", 2, LOW, slot=1), due("c", 3, HIGH, slot=2),
                 due("d", 4, LOW, slot=2)])
    assert q.held_by_class() == {HIGH: 1, NORMAL: 0, LOW: 3} and q.held() == 4
    q.drop_slots({2})
    assert q.held_by_class() == {HIGH: 0, NORMAL: 0, LOW: 2} and q.task_ids() == {"a", "b"}
    assert [d.task_id for d in q.pop_due(10, 10)] == ["a", "b"]
    assert q.held_by_class() == {HIGH: 0, NORMAL: 0, LOW: 0}


def test_a_higher_task_wakes_the_loop_though_an_older_backlog_waits():
    import asyncio

    async def scenario() -> tuple[bool, bool]:
        q = DueQueue(capacity=100)
        q.push_many(due(f"l{i}", i, LOW) for i in range(10))
        q.pop_due(50, 0)                      # the backlog is due: it waits in the ready stage
        woken = []
        for d in (due("later-low", 60, LOW), due("high", 60, HIGH)):
            q._wake.clear()
            q.push(d)
            woken.append(q._wake.is_set())
        return woken[0], woken[1]
    assert asyncio.run(scenario()) == (False, True)


def test_floors_are_earned_on_what_executors_can_take_not_on_a_larger_probe():
    # Saturated executors free one place at a time, and the loop takes 64 to probe: the
    # first of each take gets the place. Low must get about its 10% of those places, not all.
    stage = ReadyStage({LOW: 0.1, NORMAL: 0.2})
    stage.add(due(f"h{i}", i, HIGH) for i in range(2_000))
    stage.add(due(f"l{i}", i, LOW) for i in range(2_000))
    firsts = []
    for _ in range(1_000):
        taken = stage.take(64, room=1)
        firsts.append(taken[0])
        stage.add(taken[1:])                 # no room for the rest: back they go
    assert classes(firsts) == {HIGH: 900, LOW: 100}
