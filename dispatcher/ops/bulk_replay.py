"""Bulk replay: a filtered set of dead letters replayed at a chosen rate, with progress,
pause, resume and cancel, resumable after any node's restart.

The job is a row (dispatcher/store/bulk_replays.py). Every node runs a BulkReplayRunner;
the one holding a job's lease walks the job's dead letters oldest first from the stored
cursor, `rate_per_s` a second, replaying each through DeadLetterOps (one audited
transaction per task; the task's history names the job). A job covers the dead letters
that existed when it was made: its filter ends at its creation time, so a task that fails
again after its replay is not replayed twice by the same job. A crash between a replay and
the cursor's advance replays nothing twice: the task is no longer a dead letter, and is
counted skipped.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import time

from dispatcher.auth.identity import Identity, Role
from dispatcher.base.clock import Clock
from dispatcher.base.errors import InvalidArgument, TaskNotFound, Unavailable
from dispatcher.base.loop_task import LoopWatch, PeriodicJob
from dispatcher.ops.dead_letters import Actor, DeadLetterOps
from dispatcher.store.errors import NotDeadLettered, UniqueKeyHeld
from dispatcher.store.interface_audit import AuditRecord
from dispatcher.store.interface_dead_letters import DeadLetterFilter, DeadLetterStoreProtocol
from dispatcher.store.interface_replays import Job, ReplayStoreProtocol

log = logging.getLogger(__name__)

MAX_RATE_PER_S = 1000
LEASE_MS = 15_000


class BulkReplays:
    """What a person does with bulk replays: start one, watch it, pause, resume, cancel."""

    def __init__(self, *, jobs: ReplayStoreProtocol, dead_letters: DeadLetterStoreProtocol, clock: Clock,
                 max_retries: int):
        self._jobs = jobs
        self._dead_letters = dead_letters
        self._clock = clock
        self._max_retries = max_retries

    def start(self, where: DeadLetterFilter, actor: Actor, *, rate_per_s: int, retries: int = 0) -> Job:
        if not 1 <= rate_per_s <= MAX_RATE_PER_S:
            raise InvalidArgument("rate_per_s", f"must be in [1, {MAX_RATE_PER_S}], got {rate_per_s}")
        if not 0 <= retries <= self._max_retries:
            raise InvalidArgument("retries", f"must be in [0, {self._max_retries}], got {retries}")
        now = self._clock.now()
        # The dead letters of now, not those of failures yet to come (see the module's note).
        bounded = dataclasses.replace(where, until=min(where.until, now) if where.until else now)
        total = self._dead_letters.count(bounded)
        if total == 0:
            raise InvalidArgument("filter", f"matches no dead letter ({bounded.as_dict()})")
        record = AuditRecord(at=now, actor=actor.identity.name, address=actor.address,
                                   action="bulk_replay.start", target="bulk_replay:?", namespace=where.namespace,
                                   reason=actor.reason,
                                   after={"filter": bounded.as_dict(), "rate_per_s": rate_per_s, "retries": retries,
                                          "total": total})
        return self._jobs.create(bounded, rate_per_s=rate_per_s, retries=retries, total=total, record=record)

    def change(self, job_id: int, action: str, actor: Actor) -> Job:
        if action not in ("pause", "resume", "cancel"):
            raise InvalidArgument("action", f"must be pause, resume or cancel, got {action!r}")
        record = AuditRecord(at=self._clock.now(), actor=actor.identity.name, address=actor.address,
                                   action=f"bulk_replay.{action}", target=f"bulk_replay:{job_id}",
                                   reason=actor.reason)
        return self._jobs.change_state(job_id, action, record)

    def get(self, job_id: int) -> Job:
        return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        return self._jobs.jobs()


class BulkReplayRunner:
    """Runs the bulk replay whose lease this node holds, one step a second."""

    def __init__(self, *, jobs: ReplayStoreProtocol, dead_letters: DeadLetterStoreProtocol, ops: DeadLetterOps,
                 node: str, clock: Clock, idle_s: float = 1.0, loops: LoopWatch | None = None):
        self._jobs = jobs
        self._dead_letters = dead_letters
        self._ops = ops
        self._node = node
        self._clock = clock
        self._idle_s = idle_s
        self._loop = PeriodicJob("bulk-replay", interval_s=idle_s, step=self._step_in_thread, watch=loops)

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def _step_in_thread(self) -> float:
        started = time.monotonic()
        try:
            worked = await asyncio.to_thread(self.step)
        except Unavailable as exc:
            log.warning("bulk replay: the store refused (%s); trying again", exc)
            worked = False
        # A step is one second's worth of the job's rate; idle, look again after idle_s.
        return (1.0 if worked else self._idle_s) - (time.monotonic() - started)

    def step(self) -> bool:
        """One second's worth of the job this node holds; False when it holds none."""
        now = self._clock.now()
        job = self._jobs.take_lease(self._node, now, _later(now, LEASE_MS))
        if job is None:
            return False
        entries = self._dead_letters.page(job.where, cursor=job.cursor, limit=job.rate_per_s, oldest_first=True)
        actor = Actor(Identity(job.created_by, Role.OPERATOR), f"bulk_replay:{job.id}", job.reason)
        replayed = skipped = 0
        for entry in entries:
            try:
                self._ops.replay(entry.task_id, actor, retries=job.retries, bulk_id=job.id)
                replayed += 1
            except (NotDeadLettered, TaskNotFound):
                skipped += 1  # replayed by hand, deleted, or replayed just before a crash
            except UniqueKeyHeld as exc:
                skipped += 1  # another live task holds its key: left a dead letter, said why
                log.warning("bulk replay %s: %s", job.id, exc)
        now = self._clock.now()
        held = self._jobs.advance(job.id, self._node, cursor=entries[-1].cursor if entries else None,
                                  replayed=replayed, skipped=skipped, finished=len(entries) < job.rate_per_s,
                                  now=now, lease_until=_later(now, LEASE_MS))
        log.info("bulk replay %s: %d replayed, %d skipped this step (cursor %s)", job.id, replayed, skipped,
                 entries[-1].cursor if entries else job.cursor)
        if not held:
            log.warning("bulk replay %s: lease lost to another node; it goes on from the stored cursor", job.id)
        return True


def _later(now: dt.datetime, ms: int) -> dt.datetime:
    return now + dt.timedelta(milliseconds=ms)
