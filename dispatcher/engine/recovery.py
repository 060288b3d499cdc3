"""The guard: nothing left non-terminal with nobody acting on it.

No bug or crash may leave a task non-terminal for good (DESIGN.md, "No task left
behind"). Every owned slot is checked, every `recovery_interval_ms`, for rows this
node is responsible for but not acting on:

- `dispatched` past its timeout + `recovery_grace_ms` with no call in flight here:
  recovered as a failed (timed out) attempt, which its retry policy then handles;
- `claimed` past due + grace and not held in this node's heap: given back to the
  poller.

Each such recovery is counted (taskring_tasks_recovered_total): it is a bug or a
crash to look at, and an alert says so. The guard acts only while the node may act
(not held, its session lease valid), and a refusal of the slot's epoch hands the
slot back to the engine as lost.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Protocol

from dispatcher.base.clock import Clock, datetime_to_ms, ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopWatch, PeriodicJob, each_owned_slot
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.completer import Completer
from dispatcher.engine.due import MYSQL, Due
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from taskring.wire import pb

log = logging.getLogger(__name__)


class SlotWork(Protocol):
    """What the guard needs from the engine that owns the slots."""

    def owned(self) -> dict[int, int]: ...

    def may_act(self) -> bool:
        """Not held, and the session lease holds."""

    def is_current(self, slot: int, epoch: int) -> bool:
        """The slot is owned and active under this epoch."""

    def held_task_ids(self) -> set[str]:
        """Every task this node holds: in its heap, its overflow, or in flight."""

    def in_flight_ids(self) -> set[str]: ...

    async def lose(self, slots: set[int]) -> None: ...

    def poll_soon(self) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class RecoveryParams:
    interval_ms: int
    grace_ms: int
    """A row past its deadline (or its due time, when claimed) by this much, with nobody acting on it, is recovered."""
    batch: int
    """Rows recovered per slot per pass."""

    def __post_init__(self) -> None:
        positive(self, "interval_ms", "grace_ms", "batch")


class RecoveryGuard:
    def __init__(self, *, params: RecoveryParams, store: TaskStoreProtocol, clock: Clock, metrics: NodeMetrics,
                 work: SlotWork, completer: Completer, loops: LoopWatch | None = None):
        self._params = params
        self._store = store
        self._clock = clock
        self._metrics = metrics
        self._work = work
        self._completer = completer   # the dispatch loop's: a recovered attempt ends as any other does
        self._loop = PeriodicJob("recover", interval_s=params.interval_ms / 1000,
                                 step=each_owned_slot("recovery check", work.owned, self.check_slot),
                                 may_run=work.may_act, watch=loops)

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def check_slot(self, slot: int, epoch: int) -> None:
        now_ms = self._clock.now_ms()
        grace_ms = self._params.grace_ms
        before = ms_to_datetime(now_ms - grace_ms)
        ok, rows = await asyncio.to_thread(self._store.stranded, slot, epoch, before, before,
                                           self._params.batch)
        if not ok:
            await self._work.lose({slot})
            return
        if not rows or not self._work.is_current(slot, epoch):
            return
        held = self._work.held_task_ids() if any(row.status == r.CLAIMED for row in rows) else set()
        in_flight = self._work.in_flight_ids()
        overdue, unclaim = [], []
        for row in rows:
            if row.task_id in in_flight:
                continue
            if row.status == r.DISPATCHED:
                task = pb.Task.FromString(row.envelope)
                if datetime_to_ms(row.updated_at) + task.timeout_ms + grace_ms <= now_ms:
                    overdue.append(Due(task=task, slot=slot, attempt=row.attempts,
                                       due_ms=datetime_to_ms(row.trigger_at), source=MYSQL, epoch=epoch))
            elif row.task_id not in held:
                unclaim.append(row.task_id)
        if unclaim:
            log.error("slot %d: %d claimed tasks not held by this owner; giving them back to the poller",
                      slot, len(unclaim))
            if await asyncio.to_thread(self._store.unclaim, unclaim, slot, epoch, self._clock.now()):
                self._metrics.recovered.labels(r.CLAIMED).inc(len(unclaim))
                self._work.poll_soon()
            else:
                await self._work.lose({slot})
        if overdue:
            log.error("slot %d: %d dispatched tasks without an outcome past timeout + %d ms; recovering them"
                      " as failed attempts", slot, len(overdue), grace_ms)
            self._metrics.recovered.labels(r.DISPATCHED).inc(len(overdue))
            await self._completer.finish(overdue, [pb.Outcome(
                task_id=d.task.task_id, attempt=d.attempt, kind=pb.OUTCOME_KIND_TIMED_OUT,
                error=f"recovered: no outcome within timeout + {grace_ms} ms grace", finished_at_ms=now_ms)
                for d in overdue])
