"""Kafka progress: how far each owned partition may be replayed from, kept in MySQL.

For every owned partition an OffsetTracker (watermark.py) holds the offsets taken in
whose task is not yet settled (terminal, skipped, or durably re-queued as a new
message or a MySQL row). Only the low watermark is committed, to MySQL under the
slot's epoch, never to Kafka, so a new owner replays from the oldest task that might
still need to run; a commit refused as stale names the slots someone else owns now.
"""
from __future__ import annotations

import asyncio

from dispatcher.base.clock import Clock
from dispatcher.engine.watermark import OffsetTracker
from dispatcher.log.interface import Partition
from dispatcher.store.interface import TaskStoreProtocol


class KafkaProgress:
    def __init__(self, *, store: TaskStoreProtocol, clock: Clock):
        self._store = store
        self._clock = clock
        self._trackers: dict[Partition, OffsetTracker] = {}
        self._committed: dict[Partition, int] = {}   # what the store holds (-1: nothing yet)

    async def open(self, slot: int, topics: list[str]) -> dict[Partition, int | None]:
        """Start tracking the slot's partitions from their committed watermarks; returns
        where to read each from (None: the beginning)."""
        pairs = [(t, slot) for t in topics]
        offsets = await asyncio.to_thread(self._store.load_offsets, pairs)
        starts: dict[Partition, int | None] = {}
        for pair in pairs:
            start = offsets.get(pair)
            self._trackers[pair] = OffsetTracker(start or 0)
            self._committed[pair] = start if start is not None else -1
            starts[pair] = start
        return starts

    def close(self, slot: int, topics: list[str]) -> None:
        for t in topics:
            self._trackers.pop((t, slot), None)
            self._committed.pop((t, slot), None)

    def take(self, topic: str, partition: int, offset: int) -> bool:
        """Track a message taken in; False for a partition not tracked, or an offset
        already taken (a replay after a seek)."""
        tracker = self._trackers.get((topic, partition))
        if tracker is None or (tracker.last_tracked is not None and offset <= tracker.last_tracked):
            return False
        tracker.track(offset)
        return True

    def settle(self, topic: str, partition: int, offset: int) -> None:
        """The task of this message needs nothing more from it."""
        tracker = self._trackers.get((topic, partition))
        if tracker is not None:
            tracker.finish(offset)

    async def commit(self, epochs: dict[int, int], only_slot: int | None = None) -> set[int]:
        """Commit every tracked partition's watermark that moved, under the slots' epochs
        (slots missing from `epochs` are left alone); returns the stale slots."""
        commits: list[tuple[str, int, int]] = []
        used: dict[int, int] = {}
        for (topic, slot), tracker in list(self._trackers.items()):
            if (only_slot is not None and slot != only_slot) or slot not in epochs:
                continue
            offset = tracker.committable()
            if offset is None or self._committed.get((topic, slot)) == offset:
                continue
            commits.append((topic, slot, offset))
            used[slot] = epochs[slot]
        if not commits:
            return set()
        stale = await asyncio.to_thread(self._store.commit_offsets, commits, used, self._clock.now())
        for topic, slot, offset in commits:
            if slot not in stale and (topic, slot) in self._trackers:
                self._committed[(topic, slot)] = offset
        return stale
