"""The owner of a slot turns its cron rules' fire times into tasks, ahead of time.

Every `cron_tick_ms` the node reads the unpaused rules of the slots it owns whose plan
ends before now + lead, plans each (rules.plan: the catch-up and overlap policies) and
writes the plan under the slot's epoch (store/cron.py materialize). Fire tasks take the
MySQL path (`pending`, due at their fire time): the poller claims them `poll_lookahead_ms`
ahead and they dispatch on time like any delayed task. A plan that loses to a handoff
(stale epoch) or to a change of the rule (new version) writes nothing and is made again
by whoever owns the slot next tick.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging

from dispatcher.api.validation import Limits, validate_task
from dispatcher.base.clock import Clock, ms_to_datetime, rfc3339
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopWatch, PeriodicJob
from dispatcher.cron import rules
from dispatcher.engine.slot_table import OwnedSlots
from dispatcher.engine.task_stats import TaskStats
from dispatcher.store import records as r
from dispatcher.store.interface_cron import CronStoreProtocol, StoredRule
from taskring.wire import pb

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class PlanParams:
    node_id: str
    """Who wrote a fire's task, in its history."""
    tick_ms: int
    """How often the owned slots' rules are planned."""
    lead_ms: int
    """A fire is written this far ahead of its time, so it is in the heap when it is due."""
    missed_after_ms: int
    """A fire later than this (the node was down) is handled by the rule's missed-fire policy."""

    def __post_init__(self) -> None:
        positive(self, "tick_ms", "lead_ms", "missed_after_ms")


class Materializer:
    def __init__(self, *, params: PlanParams, store: CronStoreProtocol, clock: Clock, slots: OwnedSlots,
                 limits: Limits, stats: TaskStats | None = None, loops: LoopWatch | None = None):
        """stats: where a written fire counts as submitted (the console's overview), as a
        task the API accepts does; a fire is submitted when it is written, ahead of its time."""
        self._params = params
        self._stats = stats
        self._store = store
        self._clock = clock
        self._slots = slots
        self._limits = limits
        self._lead = dt.timedelta(milliseconds=params.lead_ms)
        self._missed_after = dt.timedelta(milliseconds=params.missed_after_ms)
        self._loop = PeriodicJob("cron", interval_s=params.tick_ms / 1000, step=self._plan_owned,
                                 may_run=lambda: not slots.held, watch=loops)
        self.materialized = 0
        """Fire tasks this node wrote (a second materialization of a fire does not count)."""


    def set_limits(self, limits: Limits) -> None:
        """New limits (the policies file changed): what comes next reads them."""
        self._limits = limits
    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def _plan_owned(self) -> None:
        owned = self._slots.owned()
        if owned:
            await asyncio.to_thread(self.tick, owned)

    def tick(self, owned: dict[int, int]) -> int:
        """Plan and write every due rule of the `owned` {slot: epoch}; returns the fires written."""
        now = ms_to_datetime(self._clock.now_ms())
        aware_now = now.replace(tzinfo=dt.UTC)
        written = 0
        for stored in self._store.to_plan(owned, now + self._lead):
            try:
                written += self._plan_one(stored, owned[stored.slot], aware_now)
            except Exception:
                log.exception("cron: rule %s could not be planned", stored.key)
        if written:
            self._slots.poll_soon()
        return written

    def _plan_one(self, stored: StoredRule, epoch: int, now: dt.datetime) -> int:
        rule = rules.parsed_rule(stored.message())
        previous_live = False
        if rule.overlap is not rules.Overlap.ALLOW and stored.last_task_id:
            status = self._store.statuses(stored.slot, [stored.last_task_id]).get(stored.last_task_id)
            previous_live = status is not None and status not in r.TERMINAL
        plan = rules.plan(rule, stored.planned_until.replace(tzinfo=dt.UTC), previous_live, now,
                          lead=self._lead, missed_after=self._missed_after)
        if plan is None:
            return 0
        fires = [self._fire_task(stored, rule, fire, now) for fire in plan.fires]
        done = self._store.materialize(stored, epoch, fires, plan.planned_until.replace(tzinfo=None), plan.skipped,
                                       now.replace(tzinfo=None), self._params.node_id)
        if done is None:
            log.info("cron: slot %d moved on from epoch %d; rule %s left to its new owner",
                     stored.slot, epoch, stored.key)
            return 0
        if done is False:
            return 0  # the rule changed since it was read: planned again next tick
        self.materialized += len(fires)
        if self._stats is not None and fires:
            self._stats.submitted([((rule.namespace, rule.task_type), len(fires))])
        return len(fires)

    def _fire_task(self, stored: StoredRule, rule: rules.ValidRule, fire: dt.datetime, now: dt.datetime) -> r.NewTask:
        """The task of one fire, validated as a Submit of it would be (the type's defaults)."""
        spec = rule.message
        task = pb.Task(task_id=rules.fire_task_id(stored.rule_uid, fire), namespace=rule.namespace,
                       task_type=rule.task_type, payload_json=rule.payload_json,
                       schedule_time=rfc3339(max(fire, now)))
        if spec.HasField("timeout_ms"):
            task.timeout_ms = spec.timeout_ms
        if spec.HasField("max_retries"):
            task.max_retries = spec.max_retries
        valid = validate_task(task, now=now, limits=self._limits)
        envelope = valid.to_pb()
        envelope.cron_rule = rule.key
        envelope.cron_fire_time = rfc3339(fire)
        created = now.replace(tzinfo=None)
        return r.NewTask(task_id=valid.task_id, slot=stored.slot, namespace=rule.namespace, task_type=rule.task_type,
                         priority=valid.priority, status=r.PENDING, trigger_at=valid.due_at.replace(tzinfo=None),
                         envelope=envelope.SerializeToString(), created_at=created)

