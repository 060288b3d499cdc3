"""The sweeper: Kafka-routed tasks whose message never came, moved to the MySQL path.

A task due soon is written `enqueued` and then produced; a node that dies between
the two leaves a row with no message. Every `sweep_interval_ms` (at most every half
`enqueued_grace_ms`) the owner of each slot moves its `enqueued` rows older than the
grace to `pending`, where the poller finds them. The grace is short because sweeping
a row whose message does exist is harmless: the message is skipped at dispatch.

Harmless once, but not by the thousand: while the owner is behind on a slot (messages of
its partitions unread, or due tasks of it waiting in the due queue for an executor or a
limit), its enqueued rows are overdue because of the backlog, not for want of a message,
and sweeping them made the poller load each a second time into the heap (a benchmark with
100,000 low tasks due grew the heap to 160,000 entries). So a slot the engine says it is
behind on (`behind`) is not swept until it has caught up; a row whose message is truly
missing is swept then.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable

from dispatcher.base.clock import Clock, ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopWatch, PeriodicJob, each_owned_slot
from dispatcher.engine.slot_table import OwnedSlots
from dispatcher.store.interface import TaskStoreProtocol

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class SweepParams:
    interval_ms: int
    grace_ms: int
    """An `enqueued` row older than this whose message never came moves to the MySQL path."""
    batch: int
    """Rows moved per slot per pass."""

    def __post_init__(self) -> None:
        positive(self, "interval_ms", "grace_ms", "batch")


class Sweeper:
    def __init__(self, *, params: SweepParams, store: TaskStoreProtocol, clock: Clock, slots: OwnedSlots,
                 behind: Callable[[], set[int]] = set, loops: LoopWatch | None = None):
        self._params = params
        self._store = store
        self._clock = clock
        self._slots = slots
        self._behind = behind
        self._loop = PeriodicJob("sweep", interval_s=min(params.interval_ms, params.grace_ms / 2) / 1000,
                                 step=each_owned_slot("sweep", self._caught_up, self.sweep_slot),
                                 may_run=lambda: not slots.held, watch=loops)

    def _caught_up(self) -> dict[int, int]:
        """The owned slots the engine is not behind on (asked once per pass)."""
        behind = self._behind()
        return {slot: epoch for slot, epoch in self._slots.owned().items() if slot not in behind}

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def sweep_slot(self, slot: int, epoch: int) -> None:
        now = self._clock.now_ms()
        try:
            moved = await asyncio.to_thread(self._store.sweep_enqueued, slot, epoch,
                                            ms_to_datetime(now - self._params.grace_ms),
                                            self._params.batch, ms_to_datetime(now))
        except Exception:
            log.exception("slot %d: sweep failed", slot)
            return
        if moved:
            log.warning("slot %d: %d kafka-routed tasks overdue; moved to the MySQL path", slot, moved)
            self._slots.poll_soon()
