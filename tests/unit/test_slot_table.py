"""The table of owned slots: epochs, draining, and what is in flight."""
from __future__ import annotations

from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.slot_table import SlotTable
from taskring.wire import pb


def due(task_id: str, slot: int) -> Due:
    return Due(task=pb.Task(task_id=task_id), slot=slot, attempt=1, due_ms=0, source=KAFKA, epoch=1)


def test_a_draining_slot_is_held_but_not_current():
    t = SlotTable()
    state = t.assign(3, epoch=7)
    assert t.is_current(3, 7) and t.holds(3, 7)
    assert not t.is_current(3, 6) and not t.holds(3, 6)
    state.active = False
    assert not t.is_current(3, 7) and t.holds(3, 7)
    assert t.owned() == {} and t.epochs() == {3: 7}


def test_remove_forgets_only_the_entry_it_was_given():
    t = SlotTable()
    old = t.assign(1, epoch=1)
    t.assign(1, epoch=2)             # re-assigned while the old one was revoking
    assert not t.remove(1, old)
    assert t.owned() == {1: 2}
    current = t.get(1)
    assert current is not None and t.remove(1, current)
    assert t.slots() == []


def test_in_flight_is_counted_per_slot_and_by_task_id():
    t = SlotTable()
    t.assign(0, epoch=1)
    t.assign(1, epoch=1)
    batch = [due("a", 0), due("b", 0), due("c", 1)]
    t.begin(batch)
    assert t.in_flight_ids() == {"a", "b", "c"} and t.in_flight_count() == 3
    s0, s1 = t.get(0), t.get(1)
    assert s0 is not None and s1 is not None
    assert (s0.in_flight, s1.in_flight) == (2, 1)
    t.end(batch)
    assert t.in_flight_ids() == set()
    assert (s0.in_flight, s1.in_flight) == (0, 0)
