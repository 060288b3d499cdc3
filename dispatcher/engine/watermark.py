"""The low watermark of unfinished work in one Kafka partition.

Design note
-----------
A partition's committed offset must never pass a task that has not reached a
terminal or durably re-queued state: a new owner replays the partition from the
committed offset and must see every task that might still need to run
(DESIGN.md, "Kafka progress"). Tasks finish out of order (a task due in five
minutes sits in the heap while later messages due now are dispatched and done),
so the offset to commit is the smallest offset still unfinished, or, when
everything taken in is finished, one past the last offset taken in.

The owner calls `track(offset)` for each message it takes in (offsets strictly
increase; gaps are fine: compacted records, transaction markers, messages it
skipped), `finish(offset)` once that message's task is settled (any order,
idempotent; unknown offsets are ignored so a late finish from before a `reset`
is harmless), and commits `committable()` (a Kafka "next offset to read").

Cost: a min-heap of tracked offsets with lazy deletion plus a set of the
unfinished ones. track and finish are O(log n) amortised; committable is O(1)
(the heap top is kept unfinished). When finished offsets pile up behind one
slow task, the heap is rebuilt from the unfinished set, so memory stays
proportional to the unfinished count, not to everything taken in since.

Not thread-safe: the partition's owner wraps it.
"""
from __future__ import annotations

import heapq


class OffsetTracker:
    def __init__(self, start_offset: int = 0) -> None:
        self._heap: list[int] = []
        self._unfinished: set[int] = set()
        self._last: int | None = None
        self._floor = 0
        self.reset(start_offset)

    def reset(self, start_offset: int) -> None:
        """Forget everything; the next tracked offset must be >= start_offset.

        Call when (re)starting the partition at start_offset (assignment, seek).
        """
        if start_offset < 0:
            raise ValueError(f"start_offset must be >= 0, got {start_offset}")
        self._heap = []
        self._unfinished = set()
        self._last = None
        self._floor = start_offset

    def track(self, offset: int) -> None:
        """A message at `offset` was taken in; its task is not finished yet."""
        if offset < self._floor or (self._last is not None and offset <= self._last):
            last = "none" if self._last is None else str(self._last)
            raise ValueError(f"offset {offset} is not after the last tracked offset ({last}) "
                             f"and at least the start offset ({self._floor})")
        self._last = offset
        self._unfinished.add(offset)
        heapq.heappush(self._heap, offset)

    def finish(self, offset: int) -> bool:
        """The task of `offset` is settled. True if it was unfinished until now."""
        if offset not in self._unfinished:
            return False
        self._unfinished.remove(offset)
        heap = self._heap
        while heap and heap[0] not in self._unfinished:
            heapq.heappop(heap)
        if len(heap) > 64 and len(heap) > 2 * len(self._unfinished):
            self._heap = list(self._unfinished)
            heapq.heapify(self._heap)
        return True

    def committable(self) -> int | None:
        """The next offset to commit, or None when nothing was tracked since the start/reset."""
        if self._last is None:
            return None
        if self._heap:
            return self._heap[0]
        return self._last + 1

    def pending(self) -> int:
        """How many tracked offsets are unfinished."""
        return len(self._unfinished)

    @property
    def last_tracked(self) -> int | None:
        return self._last
