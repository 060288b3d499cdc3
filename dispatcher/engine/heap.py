"""The ETA heap: tasks an owner holds until they are due.

Ordered by (eta_ms, -priority, arrival seq): the earliest due first; among equal
ETAs the higher priority first; then first come, first served. `pop_due` never
returns an entry whose ETA is after `now_ms`.

The heap is bounded. A full heap refuses a push (returns False and changes
nothing) so the caller pauses intake (Kafka consumer, MySQL poller) instead of
growing without limit; DESIGN.md, "Two storage paths".

When a slot's ownership moves, `drop_slots` removes every entry of those slots
so the old owner cannot dispatch them; it is O(n), which is fine for an event
that happens on membership changes, not per task.

Not thread-safe: the owner wraps it in its own lock (or touches it from one
thread / one event loop only).
"""
from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import Counter
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class HeapEntry(Generic[T]):
    eta_ms: int
    """Unix epoch milliseconds at which the item is due."""
    priority: int
    """Higher runs first among equal ETAs (pb.Priority values)."""
    seq: int
    """Arrival order, assigned by the heap."""
    slot: int
    item: T


class EtaHeap(Generic[T]):
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = capacity
        self._heap: list[tuple[int, int, int, HeapEntry[T]]] = []
        self._seq = itertools.count()
        self._by_slot: Counter[int] = Counter()

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return len(self._heap)

    def free(self) -> int:
        """How many more entries fit."""
        return self._capacity - len(self._heap)

    def push(self, eta_ms: int, priority: int, slot: int, item: T) -> bool:
        """Add an entry; False (and nothing changed) when the heap is full."""
        if len(self._heap) >= self._capacity:
            return False
        entry = HeapEntry(eta_ms, priority, next(self._seq), slot, item)
        heapq.heappush(self._heap, (eta_ms, -priority, entry.seq, entry))
        self._by_slot[slot] += 1
        return True

    def pop_due(self, now_ms: int, limit: int) -> list[HeapEntry[T]]:
        """Remove and return, in order, up to `limit` entries with eta_ms <= now_ms."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        out: list[HeapEntry[T]] = []
        heap = self._heap
        while heap and len(out) < limit and heap[0][0] <= now_ms:
            entry = heapq.heappop(heap)[3]
            self._forget(entry.slot)
            out.append(entry)
        return out

    def next_eta_ms(self) -> int | None:
        """The earliest ETA held, or None when empty."""
        return self._heap[0][0] if self._heap else None

    def drop_slots(self, slots: set[int] | frozenset[int]) -> list[HeapEntry[T]]:
        """Remove and return (in heap order) every entry of `slots`."""
        if not slots or not any(s in self._by_slot for s in slots):
            return []
        kept: list[tuple[int, int, int, HeapEntry[T]]] = []
        dropped: list[tuple[int, int, int, HeapEntry[T]]] = []
        for key in self._heap:
            (dropped if key[3].slot in slots else kept).append(key)
        heapq.heapify(kept)
        self._heap = kept
        for s in slots:
            self._by_slot.pop(s, None)
        dropped.sort(key=lambda k: k[:3])
        return [k[3] for k in dropped]

    def items(self) -> list[T]:
        """Every item held, in no particular order (a scan: for rare checks, not the hot path)."""
        return [key[3].item for key in self._heap]

    def count_by_slot(self) -> dict[int, int]:
        """Entries held per slot (slots with none are absent)."""
        return dict(self._by_slot)

    def _forget(self, slot: int) -> None:
        n = self._by_slot[slot] - 1
        if n:
            self._by_slot[slot] = n
        else:
            del self._by_slot[slot]
