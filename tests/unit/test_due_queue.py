"""The due queue: the heap, its overflow and the dispatch loop's wake in one owner."""
from __future__ import annotations

import asyncio

from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.due_queue import DueQueue
from taskring.wire import pb


def due(task_id: str, due_ms: int, slot: int = 0) -> Due:
    return Due(task=pb.Task(task_id=task_id, priority=pb.PRIORITY_NORMAL), slot=slot, attempt=1, due_ms=due_ms,
               source=KAFKA, epoch=1)


def test_what_does_not_fit_waits_in_arrival_order_and_moves_in_as_room_frees():
    q = DueQueue(capacity=2)
    for i, t in enumerate(("a", "b", "c", "d")):
        q.push(due(t, 100 + i))
    assert (q.heap_size(), q.held()) == (2, 4)
    assert q.room() == -2
    assert [d.task_id for d in q.pop_due(1_000, 1)] == ["a"]
    # The overflow refills the heap before each pop, oldest first.
    assert [d.task_id for d in q.pop_due(1_000, 10)] == ["b", "c"]
    assert [d.task_id for d in q.pop_due(1_000, 10)] == ["d"]
    assert q.held() == 0


def test_nothing_is_popped_before_it_is_due():
    q = DueQueue(capacity=10)
    q.push(due("later", 500))
    assert q.pop_due(499, 10) == []
    assert [d.task_id for d in q.pop_due(500, 10)] == ["later"]


def test_intake_pauses_while_anything_overflows_or_the_heap_lacks_the_reserve():
    q = DueQueue(capacity=10)
    assert q.intake_open(reserve=4)
    for i in range(6):
        q.push(due(f"t{i}", i))
    assert not q.intake_open(reserve=4)   # 4 free, not more than the reserve
    assert q.intake_open(reserve=3)
    for i in range(6, 11):
        q.push(due(f"t{i}", i))
    assert q.held() == 11 and not q.intake_open(reserve=0)   # one in the overflow


def test_dropping_a_slot_takes_its_tasks_from_the_heap_and_the_overflow():
    q = DueQueue(capacity=2)
    q.push(due("a0", 1, slot=0))
    q.push(due("b1", 2, slot=1))
    q.push(due("c0", 3, slot=0))   # overflow
    q.push(due("d1", 4, slot=1))   # overflow
    q.drop_slots({0})
    assert q.task_ids() == {"b1", "d1"}
    assert [d.task_id for d in q.pop_due(10, 10)] == ["b1", "d1"]


def test_the_earliest_due_counts_the_overflow_too():
    q = DueQueue(capacity=1)
    assert q.earliest_due_ms() is None
    q.push(due("late", 50))
    q.push(due("early", 10))   # no room: the overflow holds the earliest
    assert q.earliest_due_ms() == 10


def test_a_new_earliest_task_wakes_the_loop_and_a_put_back_does_not():
    async def main():
        q = DueQueue(capacity=10)
        q.push(due("a", 100))
        woke = asyncio.create_task(q.wait(5.0))
        await asyncio.sleep(0)
        q.put_back(due("b", 50))      # no capacity yet: waits for a release, not a wake
        await asyncio.sleep(0.01)
        assert not woke.done()
        q.push(due("c", 200))         # not the earliest
        await asyncio.sleep(0.01)
        assert not woke.done()
        q.push(due("d", 10))          # the earliest: the loop must look again
        await asyncio.wait_for(woke, 1.0)
    asyncio.run(main())


def test_a_wait_ends_by_itself_after_its_timeout():
    async def main():
        q = DueQueue(capacity=1)
        await asyncio.wait_for(q.wait(0.01), 1.0)
    asyncio.run(main())
