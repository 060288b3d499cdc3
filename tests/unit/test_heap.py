"""The ETA heap: order, never early, bounded, dropping slots."""
from __future__ import annotations

import random

import pytest

from dispatcher.engine.heap import EtaHeap, HeapEntry

LOW, NORMAL, HIGH = 1, 2, 3


def items(entries: list[HeapEntry]) -> list:
    return [e.item for e in entries]


def test_earliest_eta_comes_first():
    # Given
    heap: EtaHeap[str] = EtaHeap(10)
    for eta, name in [(300, "c"), (100, "a"), (200, "b")]:
        heap.push(eta, NORMAL, 0, name)

    # When
    popped = heap.pop_due(now_ms=1000, limit=10)

    # Then
    assert items(popped) == ["a", "b", "c"]
    assert [e.eta_ms for e in popped] == [100, 200, 300]


def test_equal_etas_go_higher_priority_first_then_first_in_first_out():
    # Given
    heap: EtaHeap[str] = EtaHeap(10)
    heap.push(100, LOW, 0, "low-1")
    heap.push(100, NORMAL, 0, "normal-1")
    heap.push(100, HIGH, 0, "high-1")
    heap.push(100, NORMAL, 0, "normal-2")
    heap.push(100, HIGH, 0, "high-2")
    heap.push(99, LOW, 0, "earlier-low")

    # When
    popped = heap.pop_due(100, 10)

    # Then: an earlier ETA beats any priority
    assert items(popped) == ["earlier-low", "high-1", "high-2", "normal-1", "normal-2", "low-1"]


def test_nothing_is_ever_returned_early():
    # Given
    heap: EtaHeap[str] = EtaHeap(10)
    heap.push(1000, HIGH, 0, "due")
    heap.push(1001, HIGH, 0, "one ms later")

    # When / Then
    assert heap.pop_due(999, 10) == []
    assert items(heap.pop_due(1000, 10)) == ["due"]
    assert heap.next_eta_ms() == 1001 and len(heap) == 1
    assert items(heap.pop_due(1001, 10)) == ["one ms later"]


def test_pop_due_respects_the_limit_and_leaves_the_rest_in_order():
    # Given
    heap: EtaHeap[int] = EtaHeap(100)
    for i in range(10):
        heap.push(i, NORMAL, 0, i)

    # When
    first = heap.pop_due(100, 3)
    rest = heap.pop_due(100, 100)

    # Then
    assert items(first) == [0, 1, 2]
    assert items(rest) == list(range(3, 10))
    assert heap.pop_due(100, 0) == []
    with pytest.raises(ValueError):
        heap.pop_due(100, -1)


def test_next_eta_of_an_empty_heap_is_none():
    heap: EtaHeap[int] = EtaHeap(1)
    assert heap.next_eta_ms() is None and len(heap) == 0


def test_a_full_heap_refuses_a_push_and_changes_nothing():
    # Given
    heap: EtaHeap[str] = EtaHeap(2)
    assert heap.push(200, NORMAL, 1, "a") and heap.push(300, NORMAL, 1, "b")

    # When
    accepted = heap.push(100, HIGH, 2, "c")

    # Then
    assert not accepted
    assert len(heap) == 2 and heap.free() == 0
    assert heap.next_eta_ms() == 200 and heap.count_by_slot() == {1: 2}

    # And after one leaves, there is room again
    heap.pop_due(200, 1)
    assert heap.free() == 1 and heap.push(100, HIGH, 2, "c")
    assert items(heap.pop_due(1000, 10)) == ["c", "b"]


def test_capacity_must_be_positive():
    with pytest.raises(ValueError):
        EtaHeap(0)


def test_drop_slots_removes_and_returns_every_entry_of_those_slots():
    # Given: slots 1, 2, 3 interleaved
    heap: EtaHeap[str] = EtaHeap(100)
    for i in range(9):
        heap.push(1000 - i, NORMAL, i % 3 + 1, f"s{i % 3 + 1}-{i}")

    # When
    dropped = heap.drop_slots({1, 3})

    # Then: returned in heap order; only slot 2 remains, still ordered
    assert items(dropped) == ["s3-8", "s1-6", "s3-5", "s1-3", "s3-2", "s1-0"]
    assert {e.slot for e in dropped} == {1, 3}
    assert heap.count_by_slot() == {2: 3} and len(heap) == 3 and heap.free() == 97
    assert items(heap.pop_due(10_000, 10)) == ["s2-7", "s2-4", "s2-1"]


def test_drop_slots_that_hold_nothing_is_a_no_op():
    heap: EtaHeap[str] = EtaHeap(10)
    heap.push(1, NORMAL, 1, "a")
    assert heap.drop_slots({7}) == [] and heap.drop_slots(set()) == []
    assert len(heap) == 1


def test_count_by_slot_follows_pushes_and_pops():
    # Given
    heap: EtaHeap[str] = EtaHeap(10)
    heap.push(1, NORMAL, 5, "a")
    heap.push(2, NORMAL, 5, "b")
    heap.push(3, NORMAL, 6, "c")

    # When
    heap.pop_due(1, 10)

    # Then
    assert heap.count_by_slot() == {5: 1, 6: 1}
    heap.pop_due(10, 10)
    assert heap.count_by_slot() == {}


def test_random_operations_match_a_sorted_list_model():
    # Given
    rng = random.Random(11)
    heap: EtaHeap[int] = EtaHeap(500)
    model: list[tuple[int, int, int, int, int]] = []  # (eta, -priority, seq, slot, id)
    seq = 0

    # When: a random mix of pushes, pops, and slot drops
    for step in range(5000):
        op = rng.random()
        if op < 0.6:
            eta, prio, slot = rng.randrange(100), rng.choice((LOW, NORMAL, HIGH)), rng.randrange(8)
            ok = heap.push(eta, prio, slot, step)
            assert ok == (len(model) < 500)
            if ok:
                model.append((eta, -prio, seq, slot, step))
                seq += 1
        elif op < 0.95:
            now, limit = rng.randrange(100), rng.randrange(1, 20)
            model.sort()
            expected = [m for m in model if m[0] <= now][:limit]
            got = heap.pop_due(now, limit)
            assert [e.item for e in got] == [m[4] for m in expected]
            for m in expected:
                model.remove(m)
        else:
            slots = set(rng.sample(range(8), 2))
            model.sort()
            expected = [m for m in model if m[3] in slots]
            assert [e.item for e in heap.drop_slots(slots)] == [m[4] for m in expected]
            model = [m for m in model if m[3] not in slots]

        # Then: size, next ETA and per-slot counts agree at every step
        assert len(heap) == len(model)
        assert heap.next_eta_ms() == (min(m[0] for m in model) if model else None)
        counts: dict[int, int] = {}
        for m in model:
            counts[m[3]] = counts.get(m[3], 0) + 1
        assert heap.count_by_slot() == counts
