"""The owner's tasks waiting to fall due: the ETA heap, its overflow, the ready stage of what
is due (ready.py: by priority class), and the wake of the dispatch loop, in one owner.

Everything that makes a task wait goes through here: the Kafka intake and the MySQL
poller push what they take, the dispatch loop pops what is due and puts back what no
executor can take yet. The heap has a fixed capacity; what does not fit waits in the
overflow, in arrival order, and moves into the heap as soon as there is room. What is due
moves from the heap into the ready stage, which the dispatch loop takes from by priority; a
task there still counts against the heap's capacity. While anything waits in the overflow,
or the heap is nearly full, intake pauses (`intake_open`): that rule lives here and nowhere
else.
"""
from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterable

from prometheus_client import Gauge

from dispatcher.engine.due import Due
from dispatcher.engine.heap import EtaHeap
from dispatcher.engine.ready import ReadyStage


class DueQueue:
    def __init__(self, capacity: int, size_gauge: Gauge | None = None, ready: ReadyStage | None = None):
        self._capacity = capacity
        self._heap: EtaHeap[Due] = EtaHeap(capacity)
        self._ready = ready or ReadyStage()
        self._popped_at_ms = -1   # the `now` of the last pop: what is due by then is ready
        self._overflow: collections.deque[Due] = collections.deque()
        self._size_gauge = size_gauge
        # asyncio's primitives bind to the running loop on first use, not here.
        self._wake = asyncio.Event()

    # ---- what comes in ----

    def push(self, due: Due) -> None:
        """A task to wait until due (or due now). Wakes the dispatch loop when it is the
        earliest: the loop sleeps until the earliest it knew of."""
        self.push_many((due,))

    def push_many(self, dues: Iterable[Due]) -> None:
        """push for each, with one wake and one look at the size: intake takes messages
        in batches, and a gauge update per task showed in profiles."""
        nxt = self.next_eta_ms()
        earliest = None
        for due in dues:
            if self.put_back(due) and (earliest is None or due.due_ms < earliest):
                earliest = due.due_ms
        if earliest is not None and (nxt is None or earliest < nxt):
            self._wake.set()
        self.observe()

    def put_back(self, due: Due) -> bool:
        """Popped but not taken (no executor capacity yet): it waits again, without a wake;
        a release of executor capacity wakes the loop. False: it waits in the overflow.
        A task already due goes back into the ready stage, in its place by due time, not
        through the heap again."""
        if self._free() <= 0:
            self._overflow.append(due)
            return False
        if due.due_ms <= self._popped_at_ms:
            self._ready.add((due,))
            return True
        if self._heap.push(due.due_ms, due.priority, due.slot, due):
            return True
        self._overflow.append(due)
        return False

    # ---- what goes out ----

    def pop_due(self, now_ms: int, limit: int) -> list[Due]:
        """Up to `limit` tasks due at `now_ms`, by priority class (ready.py), earliest first
        within a class; the overflow moves into the heap first, as far as there is room, and
        everything due moves into the ready stage."""
        while self._overflow and self._free() > 0:
            d = self._overflow.popleft()
            self._heap.push(d.due_ms, d.priority, d.slot, d)
        self._popped_at_ms = now_ms
        nxt = self._heap.next_eta_ms()
        if nxt is not None and nxt <= now_ms:
            self._ready.add(e.item for e in self._heap.pop_due(now_ms, len(self._heap)))
        return self._ready.take(limit)

    def next_eta_ms(self) -> int | None:
        """When the dispatch loop has something to do next: now, if anything is ready."""
        ready = self._ready.earliest_due_ms()
        return ready if ready is not None else self._heap.next_eta_ms()

    def drop_slots(self, slots: set[int]) -> None:
        """A slot left this node: its waiting tasks are its next owner's."""
        self._heap.drop_slots(slots)
        self._ready.drop_slots(slots)
        kept = [d for d in self._overflow if d.slot not in slots]
        self._overflow.clear()
        self._overflow.extend(kept)
        self.observe()

    # ---- the dispatch loop's sleep ----

    def wake(self) -> None:
        """Something changed that may let the dispatch loop act (capacity released, a hold lifted)."""
        self._wake.set()

    async def wait(self, timeout_s: float) -> None:
        """Sleep until woken or `timeout_s` passes."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout_s)
        except TimeoutError:
            pass

    # ---- how full it is ----

    def intake_open(self, reserve: int) -> bool:
        """Whether intake may bring more: nothing waits in the overflow and the heap has
        room for `reserve` more (twice a poll's batch: a poll under way still fits)."""
        return self._free() > reserve and not self._overflow

    def room(self) -> int:
        """How many more fit in the heap, less what already waits for room."""
        return self._free() - len(self._overflow)

    def _free(self) -> int:
        """Room left under the heap's capacity, which the ready stage shares."""
        return self._capacity - len(self._heap) - len(self._ready)

    def heap_size(self) -> int:
        """Tasks in the heap and its ready stage (what the capacity bounds)."""
        return len(self._heap) + len(self._ready)

    def held(self) -> int:
        """Every task waiting here, in the heap, its ready stage or its overflow."""
        return len(self._heap) + len(self._ready) + len(self._overflow)

    def waiting_by_class(self) -> dict[int, int]:
        """Due tasks waiting for an executor, per priority class."""
        return self._ready.waiting_by_class()

    def task_ids(self) -> set[str]:
        ids = {d.task_id for d in self._heap.items()}
        ids.update(d.task_id for d in self._ready.items())
        ids.update(d.task_id for d in self._overflow)
        return ids

    def earliest_due_ms(self) -> int | None:
        """The earliest due time waiting, in the heap or the overflow."""
        times = [t for t in (self._heap.next_eta_ms(), self._ready.earliest_due_ms(),
                             self._overflow[0].due_ms if self._overflow else None) if t is not None]
        return min(times) if times else None

    def observe(self) -> None:
        """Publish the heap's size now (on every push, and once per batch popped)."""
        if self._size_gauge is not None:
            self._size_gauge.set(self.heap_size())
