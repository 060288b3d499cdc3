"""The owner's tasks waiting to fall due: an ETA heap per priority class, their overflow, the
ready stage of what is due (ready.py: by priority class), and the wake of the dispatch loop,
in one owner.

Everything that makes a task wait goes through here: the Kafka intake and the MySQL
poller push what they take, the dispatch loop pops what is due and puts back what no
executor can take yet. The heap has a fixed capacity; what does not fit waits in the
overflow, in arrival order, and moves into the heap as soon as there is room. What is due
moves from the heap into the ready stage, which the dispatch loop takes from by priority; a
task there still counts against the heap's capacity. While anything waits in the overflow,
or the heap is nearly full, intake pauses (`intake_open`): that rule lives here and nowhere
else.

The capacity is shared, but not evenly: intake of a class pauses once that class holds its
share of it (INTAKE_SHARES: low 60%, normal 80%, high all), so a backlog of low tasks larger
than the heap leaves room for high ones to come in and be picked first, instead of pausing
every topic behind it. The classes' heaps are separate so that each class's count and
earliest due time are known without a scan (admission asks for both on every submit).
"""
from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable

from prometheus_client import Gauge

from dispatcher.engine.due import Due
from dispatcher.engine.heap import EtaHeap
from dispatcher.engine.ready import HIGH, LOW, NORMAL, ReadyStage, priority_class

CLASSES = (HIGH, NORMAL, LOW)
INTAKE_SHARES: dict[int, float] = {HIGH: 1.0, NORMAL: 0.8, LOW: 0.6}
"""The share of the capacity a class may fill before its intake pauses."""


class DueQueue:
    def __init__(self, capacity: int, size_gauge: Gauge | None = None, ready: ReadyStage | None = None):
        self._capacity = capacity
        self._heaps: dict[int, EtaHeap[Due]] = {cls: EtaHeap(capacity) for cls in CLASSES}
        self._bounds = {cls: int(share * capacity) for cls, share in INTAKE_SHARES.items()}
        self._ready = ready or ReadyStage()
        self._popped_at_ms = -1   # the `now` of the last pop: what is due by then is ready
        self._overflow: collections.deque[Due] = collections.deque()
        self._overflow_by_class: dict[int, int] = dict.fromkeys(CLASSES, 0)
        # Due tasks waiting for a place under a limit of their type (limits.py), per
        # (namespace, task_type, limit), in the order they were due: counted against the
        # capacity, left out of the oldest due time admission reads (they wait on purpose).
        self._parked: dict[tuple[str, str, str], collections.deque[Due]] = {}
        self._parked_count = 0
        self._parked_by_class: dict[int, int] = dict.fromkeys(CLASSES, 0)
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
        in batches, and a gauge update per task showed in profiles.

        The loop wakes for a task earlier than any it knew of, and for a task of a class
        above every class waiting in the ready stage: behind an overdue low backlog, a high
        task due now is not earlier than the backlog's oldest, yet it goes first."""
        nxt = self.next_eta_ms()
        top = self._ready.highest_waiting()
        earliest = None
        above = False
        free = self._free()
        for due in dues:
            if self._place(due, free > 0):
                free -= 1
                if earliest is None or due.due_ms < earliest:
                    earliest = due.due_ms
                if top is not None and not above and priority_class(due.priority) > top:
                    above = True
        if above or (earliest is not None and (nxt is None or earliest < nxt)):
            self._wake.set()
        self.observe()

    def put_back(self, due: Due) -> bool:
        """Popped but not taken (no executor capacity yet): it waits again, without a wake;
        a release of executor capacity wakes the loop. False: it waits in the overflow.
        A task already due goes back into the ready stage, in its place by due time, not
        through the heap again."""
        return self._place(due, self._free() > 0)

    def _place(self, due: Due, fits: bool) -> bool:
        if fits:
            if due.due_ms <= self._popped_at_ms:
                self._ready.add((due,))
                return True
            if self._heaps[priority_class(due.priority)].push(due.due_ms, due.priority, due.slot, due):
                return True
        self._overflow.append(due)
        self._overflow_by_class[priority_class(due.priority)] += 1
        return False

    # ---- what goes out ----

    def pop_due(self, now_ms: int, limit: int, room: int | None = None) -> list[Due]:
        """Up to `limit` tasks due at `now_ms`, by priority class (ready.py; the lower classes'
        floors earned on `room`, what executors can take now), earliest first within a class;
        the overflow moves into the heap first, as far as there is room, and everything due
        moves into the ready stage."""
        while self._overflow and self._free() > 0:
            d = self._overflow.popleft()
            cls = priority_class(d.priority)
            self._overflow_by_class[cls] -= 1
            self._heaps[cls].push(d.due_ms, d.priority, d.slot, d)
        self._popped_at_ms = now_ms
        for heap in self._heaps.values():
            nxt = heap.next_eta_ms()
            if nxt is not None and nxt <= now_ms:
                self._ready.add(e.item for e in heap.pop_due(now_ms, len(heap)))
        return self._ready.take(limit, room)

    # ---- what waits for a place under a concurrency limit ----

    def park(self, key: tuple[str, str, str], dues: list[Due]) -> None:
        """Due tasks of a type at one of its limits (namespace, task_type, limit): they wait
        here, off the ready stage, until unpark."""
        self._parked.setdefault(key, collections.deque()).extend(dues)
        self._parked_count += len(dues)
        for d in dues:
            self._parked_by_class[priority_class(d.priority)] += 1

    def unpark(self, key: tuple[str, str, str], n: int, on_move: Callable[[Due], None] | None = None) -> int:
        """Up to `n` of a type's parked tasks, first parked first, back to the ready stage
        (places under its limit were freed; `on_move` hears of each); wakes the dispatch loop
        when any moved."""
        parked = self._parked.get(key)
        if not parked or n <= 0:
            return 0
        moved = [parked.popleft() for _ in range(min(n, len(parked)))]
        if on_move is not None:
            for d in moved:
                on_move(d)
        if not parked:
            del self._parked[key]
        self._parked_count -= len(moved)
        for d in moved:
            self._parked_by_class[priority_class(d.priority)] -= 1
        self._ready.add(moved)
        self._wake.set()
        return len(moved)

    def has_parked(self) -> bool:
        return self._parked_count > 0

    def parked(self) -> dict[tuple[str, str, str], int]:
        """Tasks waiting for a place under a limit, per (namespace, task_type, limit)."""
        return {key: len(q) for key, q in self._parked.items()}

    def next_eta_ms(self) -> int | None:
        """When the dispatch loop has something to do next: now, if anything is ready."""
        ready = self._ready.earliest_due_ms()
        if ready is not None:
            return ready
        etas = [eta for eta in (heap.next_eta_ms() for heap in self._heaps.values()) if eta is not None]
        return min(etas) if etas else None

    def drop_slots(self, slots: set[int]) -> None:
        """A slot left this node: its waiting tasks are its next owner's."""
        for heap in self._heaps.values():
            heap.drop_slots(slots)
        self._ready.drop_slots(slots)
        for key, parked in list(self._parked.items()):
            kept_parked = [d for d in parked if d.slot not in slots]
            if len(kept_parked) != len(parked):
                for d in parked:
                    if d.slot in slots:
                        self._parked_by_class[priority_class(d.priority)] -= 1
                self._parked_count -= len(parked) - len(kept_parked)
                if kept_parked:
                    self._parked[key] = collections.deque(kept_parked)
                else:
                    del self._parked[key]
        kept = [d for d in self._overflow if d.slot not in slots]
        self._overflow.clear()
        self._overflow.extend(kept)
        self._overflow_by_class = dict.fromkeys(CLASSES, 0)
        for d in kept:
            self._overflow_by_class[priority_class(d.priority)] += 1
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

    def intake_open(self, reserve: int, priority: int = HIGH) -> bool:
        """Whether intake may bring more of a class: nothing waits in the overflow, the heap
        has room for `reserve` more (twice a poll's batch: a poll under way still fits), and
        the class holds less than its share of the capacity (INTAKE_SHARES) less `reserve`."""
        cls = priority_class(priority)
        return (self._free() > reserve and not self._overflow
                and self._held_in_heap(cls) + reserve < self._bounds[cls])

    def room(self) -> int:
        """How many more fit in the heap, less what already waits for room."""
        return self._free() - len(self._overflow)

    def _free(self) -> int:
        """Room left under the heap's capacity, which the ready stage shares."""
        return self._capacity - self.heap_size()

    def _held_in_heap(self, cls: int) -> int:
        return len(self._heaps[cls]) + self._ready.waiting(cls) + self._parked_by_class[cls]

    def heap_size(self) -> int:
        """Tasks in the heaps, the ready stage and parked at a limit (what the capacity bounds)."""
        return sum(len(heap) for heap in self._heaps.values()) + len(self._ready) + self._parked_count

    def held(self) -> int:
        """Every task waiting here, in the heaps, the ready stage or the overflow."""
        return self.heap_size() + len(self._overflow)

    def held_by_class(self) -> dict[int, int]:
        """held(), per priority class."""
        return {cls: self._held_in_heap(cls) + self._overflow_by_class[cls] for cls in CLASSES}

    def waiting_by_class(self) -> dict[int, int]:
        """Due tasks waiting for an executor, per priority class."""
        return self._ready.waiting_by_class()

    def slots_with_due(self) -> set[int]:
        """Slots with a task due and waiting: ready, parked at a limit, or in the overflow
        (a scan, for the sweeper's pass every few seconds)."""
        slots = {d.slot for d in self._ready.items()}
        slots.update(d.slot for parked in self._parked.values() for d in parked)
        slots.update(d.slot for d in self._overflow)
        return slots

    def task_ids(self) -> set[str]:
        ids = {d.task_id for heap in self._heaps.values() for d in heap.items()}
        ids.update(d.task_id for d in self._ready.items())
        ids.update(d.task_id for d in self._overflow)
        ids.update(d.task_id for parked in self._parked.values() for d in parked)
        return ids

    def earliest_due_ms(self) -> int | None:
        """The earliest due time waiting, in the heaps, the ready stage or the overflow."""
        times = [t for t in self.earliest_due_by_class().values() if t is not None]
        if self._overflow:
            times.append(self._overflow[0].due_ms)
        return min(times) if times else None

    def earliest_due_by_class(self) -> dict[int, int | None]:
        """The earliest due time waiting in each class's heap and ready queue (the overflow,
        in arrival order, is left out: it is only ever there while the heap is full)."""
        out: dict[int, int | None] = {}
        for cls, heap in self._heaps.items():
            times = [t for t in (heap.next_eta_ms(), self._ready.earliest_due_ms(cls)) if t is not None]
            out[cls] = min(times) if times else None
        return out

    def observe(self) -> None:
        """Publish the heap's size now (on every push, and once per batch popped)."""
        if self._size_gauge is not None:
            self._size_gauge.set(self.heap_size())
