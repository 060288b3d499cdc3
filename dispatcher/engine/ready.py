"""Due tasks waiting for an executor, by priority class: the dispatch loop takes the highest
class first, and each lower class a guaranteed share.

The ETA heap orders by due time first, so on its own a high task due now would wait behind
every overdue low one: with executors saturated and a backlog of low tasks due, high pickup
would grow with the backlog. The due queue (due_queue.py) therefore moves whatever is due out of
the heap into this stage, one queue per class, each in due order, and a pop takes high first.

Strict priority alone would starve the lower classes while higher work keeps coming, so each
lower class earns a floor: on every take in which it has tasks waiting, its credit grows by its
share of the take, and whole credits are spent on it before the strict pass (deficit counting,
so a take of one task at a time still gives low one task in ten). A class with nothing waiting
banks nothing. The tasks stay counted against the heap's capacity while here (due_queue.py).
"""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Mapping

from dispatcher.engine.due import Due
from taskring.wire import pb

HIGH: int = pb.PRIORITY_HIGH
NORMAL: int = pb.PRIORITY_NORMAL
LOW: int = pb.PRIORITY_LOW
FLOOR_SHARES: dict[int, float] = {LOW: 0.1, NORMAL: 0.2}
"""The least share of each take that goes to a lower class while it has tasks waiting."""


def priority_class(priority: int) -> int:
    """The class of a task's priority: unspecified (and anything unknown) is normal."""
    return priority if priority in (HIGH, LOW) else NORMAL


class ReadyStage:
    def __init__(self, floor_shares: Mapping[int, float] | None = None):
        self._shares = dict(FLOOR_SHARES if floor_shares is None else floor_shares)
        for cls, share in self._shares.items():
            if cls not in (NORMAL, LOW) or not 0 <= share < 1:
                raise ValueError(f"floor_shares[{cls}] must be a share in [0, 1) of a lower class, got {share!r}")
        self._queues: dict[int, list[tuple[int, int, Due]]] = {HIGH: [], NORMAL: [], LOW: []}
        # Credit in thousandths of a task, so that ten takes of one at 10% make exactly one.
        self._per_mille = {cls: round(share * 1000) for cls, share in self._shares.items()}
        self._credit = {cls: 0 for cls in self._shares}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def add(self, dues: Iterable[Due]) -> None:
        for d in dues:
            heapq.heappush(self._queues[priority_class(d.priority)], (d.due_ms, next(self._seq), d))

    def take(self, limit: int, room: int | None = None) -> list[Due]:
        """Up to `limit` tasks: first each lower class's earned floor, then high, normal, low;
        within a class, earliest due first. The floors are earned on `room` (default
        `limit`): what can be dispatched now. The dispatch loop may take more than it has
        executor room for (a probe for types it has not looked up), and what comes first in
        the take is what gets the room: floors earned on the whole probe gave low nearly
        every place while executors were saturated, high waiting behind."""
        out: list[Due] = []
        earned_on = limit if room is None else min(room, limit)
        for cls, per_mille in self._per_mille.items():
            queue = self._queues[cls]
            if not queue:
                self._credit[cls] = 0
                continue
            self._credit[cls] += earned_on * per_mille
            n = min(self._credit[cls] // 1000, len(queue), limit - len(out))
            self._credit[cls] -= n * 1000
            out.extend(heapq.heappop(queue)[2] for _ in range(n))
        for cls in (HIGH, NORMAL, LOW):
            queue = self._queues[cls]
            while queue and len(out) < limit:
                out.append(heapq.heappop(queue)[2])
        return out

    def earliest_due_ms(self, priority: int | None = None) -> int | None:
        """The earliest due time waiting, of one class or (None) of any."""
        if priority is not None:
            queue = self._queues[priority_class(priority)]
            return queue[0][0] if queue else None
        heads = [q[0][0] for q in self._queues.values() if q]
        return min(heads) if heads else None

    def highest_waiting(self) -> int | None:
        """The highest class with a task waiting, or None."""
        for cls in (HIGH, NORMAL, LOW):
            if self._queues[cls]:
                return cls
        return None

    def waiting(self, priority: int) -> int:
        return len(self._queues[priority_class(priority)])

    def drop_slots(self, slots: set[int]) -> None:
        for cls, queue in self._queues.items():
            kept = [entry for entry in queue if entry[2].slot not in slots]
            if len(kept) != len(queue):
                heapq.heapify(kept)
                self._queues[cls] = kept

    def items(self) -> Iterable[Due]:
        return (entry[2] for queue in self._queues.values() for entry in queue)

    def waiting_by_class(self) -> dict[int, int]:
        return {cls: len(queue) for cls, queue in self._queues.items()}
