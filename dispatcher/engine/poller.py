"""The MySQL poller: claims the due rows of each owned slot into the heap.

A task due later than the route threshold waits in MySQL as `pending`. Every
`poll_interval_ms`, or at once when asked (a slot was assigned, the engine was
released, the sweeper moved rows), the poller claims, slot by slot under the
slot's epoch, the rows due within `poll_lookahead_ms` (so they sit in the heap
before they are due), never more than the heap has room for. A full batch means
there may be more: it polls again without waiting. A slot whose epoch the store
refuses is lost to another owner.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Protocol

from dispatcher.base.clock import Clock, datetime_to_ms, ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopTask, LoopWatch
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.due import MYSQL, Due
from dispatcher.store.interface import TaskStoreProtocol

log = logging.getLogger(__name__)


class PolledSlots(Protocol):
    """What the poller needs from the engine that owns the slots and the heap."""

    def owned(self) -> dict[int, int]: ...

    @property
    def held(self) -> bool: ...

    def room(self) -> int:
        """How many more tasks the heap can take now."""

    def is_current(self, slot: int, epoch: int) -> bool: ...

    def take_polled(self, slot: int, dues: list[Due]) -> None:
        """Push claimed rows into the heap."""

    async def lose(self, slots: set[int]) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class PollParams:
    interval_ms: int
    """The wait between passes when nothing woke the poller sooner."""
    lookahead_ms: int
    """Rows due within this are claimed ahead and wait in the heap."""
    batch: int
    """Rows claimed per slot per poll, and the heap room a poll needs."""

    def __post_init__(self) -> None:
        positive(self, "interval_ms", "batch")
        if self.lookahead_ms < 0:  # 0 is fine: poll only what is due now
            raise ValueError(f"PollParams.lookahead_ms must be >= 0, got {self.lookahead_ms!r}")


class Poller:
    def __init__(self, *, params: PollParams, store: TaskStoreProtocol, clock: Clock, slots: PolledSlots,
                 metrics: NodeMetrics, loops: LoopWatch | None = None):
        self._params = params
        self._poll_duration = metrics.poll_duration
        self._store = store
        self._clock = clock
        self._slots = slots
        self._now = asyncio.Event()   # binds to the running loop on first use
        self._loop = LoopTask("poll", self._run, loops)

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def poll_soon(self) -> None:
        self._now.set()

    async def _run(self) -> None:
        interval = self._params.interval_ms / 1000
        while True:
            more = False
            for slot, epoch in ([] if self._slots.held else list(self._slots.owned().items())):
                room = self._slots.room() - self._params.batch
                if room <= 0:
                    break
                limit = min(self._params.batch, room)
                full = await self.poll_slot(slot, epoch, limit)
                more = more or full
            if more:
                continue
            self._now.clear()
            try:
                await asyncio.wait_for(self._now.wait(), interval)
            except TimeoutError:
                pass

    async def poll_slot(self, slot: int, epoch: int, limit: int) -> bool:
        """Claim up to `limit` due rows of `slot`; True when the batch was full (there may be more)."""
        now = self._clock.now_ms()
        # Timed on this machine's monotonic clock, failed polls too: a poll that times out
        # is the slow store this histogram is for.
        started = time.perf_counter()
        try:
            ok, rows = await asyncio.to_thread(self._store.claim_due, slot, epoch,
                                               ms_to_datetime(now + self._params.lookahead_ms), limit,
                                               ms_to_datetime(now))
        except Exception:
            log.exception("slot %d: poll failed", slot)
            return False
        finally:
            self._poll_duration.observe(time.perf_counter() - started)
        if not ok:
            await self._slots.lose({slot})
            return False
        if not self._slots.is_current(slot, epoch):
            return False  # revoked meanwhile; release_slot/claim_slot resets these rows
        if rows:
            # Each row's envelope stays serialized until dispatch (due.py): the row says its id
            # and priority.
            self._slots.take_polled(slot, [
                Due(envelope=row.envelope, task_id=row.task_id, priority=row.priority, slot=slot,
                    attempt=row.attempts + 1, due_ms=datetime_to_ms(row.trigger_at), source=MYSQL, epoch=epoch)
                for row in rows])
        return len(rows) == limit
