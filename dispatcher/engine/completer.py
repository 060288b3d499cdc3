"""The completer: what happens once an attempt is over, for the dispatch loop and the
recovery guard alike.

For each finished attempt it decides what comes next (outcomes.py: succeeded, a retry
through Kafka or MySQL, dead-lettered), records the batch's outcomes in the store
(grouped by outcome_batcher.py, fenced by each slot's epoch, retried while the slot is
still held), produces the short retries, and settles each task's Kafka message so the
slot's watermark can move past it. An attempt that never reached its executor is given
back instead, its attempt unspent. A refused epoch means the slot moved on: `lose`
tells the engine.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable

from dispatcher.base.clock import Clock, ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.outcome_batcher import OutcomeBatcher
from dispatcher.engine.outcomes import DecideParams, decide
from dispatcher.engine.progress import KafkaProgress
from dispatcher.engine.slot_table import SlotTable
from dispatcher.engine.task_stats import TaskStats
from dispatcher.log.interface import LogProducer, OutMessage
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from taskring.wire import pb

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class CompleterParams:
    decide: DecideParams
    """What the decision after an attempt needs (node id, the routing threshold, the topics)."""
    outcome_batch: int
    """Outcomes grouped into one store write at most."""
    outcome_retry_max_delay_ms: int
    """The longest wait between tries to record an outcome the store refused."""

    def __post_init__(self) -> None:
        positive(self, "outcome_batch", "outcome_retry_max_delay_ms")


class Completer:
    def __init__(self, *, params: CompleterParams, store: TaskStoreProtocol, producer: LogProducer,
                 metrics: NodeMetrics, clock: Clock, rng: random.Random, slots: SlotTable,
                 progress: KafkaProgress, lose: Callable[[set[int]], Awaitable[None]],
                 stats: TaskStats | None = None, on_ended: Callable[[list[tuple[int, str]]], None] | None = None):
        self._params = params
        self._decide_params = params.decide
        self._store = store
        self._producer = producer
        self._metrics = metrics
        self._clock = clock
        self._rng = rng
        self._slots = slots
        self._progress = progress
        self._lose = lose
        self._stats = stats
        # Ends of tasks of graphs with dependents, recorded: the graph relay applies them.
        self._on_ended = on_ended
        self._outcomes = {name.removeprefix("OUTCOME_KIND_").lower(): metrics.outcomes.labels(
            name.removeprefix("OUTCOME_KIND_").lower()) for name in pb.OutcomeKind.keys()}
        self._outcome_batcher = OutcomeBatcher(store.record_outcomes, max_writes=params.outcome_batch)

    async def stop(self) -> None:
        """Flush the outcomes still being grouped."""
        await self._outcome_batcher.stop()

    def settle(self, due: Due) -> None:
        """The task of a Kafka message needs nothing more from this message."""
        if due.source == KAFKA and due.topic is not None and self._slots.holds(due.slot, due.epoch):
            self._progress.settle(due.topic, due.slot, due.offset)

    async def finish(self, items: list[Due], outcomes: list[pb.Outcome]) -> None:
        """Record each item's outcome, produce the short retries, settle the offsets."""
        by_id = {(o.task_id, o.attempt): o for o in outcomes}
        now_ms = self._clock.now_ms()
        now = ms_to_datetime(now_ms)
        writes, retry_messages = [], {}
        kinds: collections.Counter[str] = collections.Counter()
        for d in items:
            o = by_id.get((d.task_id, d.attempt))
            if o is None:  # the pool answers every delivery; never let a gap strand a task
                o = pb.Outcome(task_id=d.task_id, attempt=d.attempt, kind=pb.OUTCOME_KIND_RETRYABLE_FAILURE,
                               error="no outcome came back for this attempt", finished_at_ms=now_ms)
            write, message = self._decide(d, o, now_ms, kinds)
            writes.append(write)
            if message is not None:
                retry_messages[d.task_id] = message
        for kind, count in kinds.items():   # a counter's lock once per kind, not once per task
            self._outcomes[kind].inc(count)
        epochs = {d.slot: d.epoch for d in items}
        stale = await self._record(writes, epochs, now)
        if stale is None:
            return
        await self._lose(stale)
        live = [d for d in items if d.slot not in stale]
        if self._on_ended is not None:
            ends = [(w.slot, w.task_id) for w in writes if w.notify and w.slot not in stale]
            if ends:
                self._on_ended(ends)
        if self._stats is not None and live:
            self._count(live, writes, stale, now_ms)
        to_send = [retry_messages[d.task_id] for d in live if d.task_id in retry_messages]
        if to_send:
            errors = await self._producer.send(to_send)
            failed = [m.key.decode() for m, e in zip(to_send, errors) if e is not None]
            if failed:
                log.warning("%d retries could not be produced; moving them to the MySQL path", len(failed))
                await asyncio.to_thread(self._store.reroute_to_mysql, failed, now)
        for d in live:
            self.settle(d)

    def _count(self, live: list[Due], writes: list[r.OutcomeWrite], stale: set[int], now_ms: int) -> None:
        """The batch's recorded outcomes, for the console's figures (one call per batch)."""
        assert self._stats is not None
        recorded = [w.result for w in writes if w.slot not in stale]
        succeeded = recorded.count(r.SUCCEEDED)
        task = live[0].task
        self._stats.executed(task.namespace, task.task_type, succeeded=succeeded, failed=len(recorded) - succeeded,
                             dead_lettered=recorded.count(r.DEAD_LETTERED),
                             duration_ms=now_ms - live[0].dispatched_ms, runs=len(recorded))

    async def give_back(self, items: list[Due]) -> None:
        """Dispatched but never run (the lease ran out before the send, or before the
        executor could start it): the rows go back to
        pending with their attempt unspent, if the slot is still ours; if it is not,
        the new owner's claim has already taken them back."""
        log.warning("%d dispatched tasks not run: the ZooKeeper session lease ran out; giving them back",
                    len(items))
        self._metrics.not_sent.inc(len(items))
        claims = [r.DispatchClaim(d.task_id, d.slot, d.attempt, d.source, ms_to_datetime(d.due_ms))
                  for d in items]
        epochs = {d.slot: d.epoch for d in items}
        try:
            stale = await asyncio.to_thread(self._store.return_undelivered, claims, epochs, self._decide_params.node_id,
                                   self._clock.now())
        except Exception:
            # Left dispatched: recovered as a failed attempt after their timeout and grace.
            log.exception("giving back %d undelivered tasks failed", len(items))
            return
        await self._lose(stale)
        for d in items:
            if d.slot not in stale:
                self.settle(d)  # durably re-queued as a row

    async def _record(self, writes: list[r.OutcomeWrite], epochs: dict[int, int], now) -> set[int] | None:
        """record_outcomes, retried while MySQL refuses, for as long as this node still
        owns any of the slots under the epochs the writes carry: the outcome is known,
        and giving up would leave the rows `dispatched`, to be run again once recovered.
        (The write is conditional on (dispatched, attempt), so repeating it is safe.)
        None if the slots moved on meanwhile: their new owner runs those attempts again."""
        max_delay_s = self._params.outcome_retry_max_delay_ms / 1000
        delay_s = min(0.2, max_delay_s)
        failures = 0
        while True:
            try:
                return await self._outcome_batcher.record(writes, epochs, now)
            except Exception:
                failures += 1
                if failures == 1 or failures % 20 == 0:
                    log.exception("record_outcomes failed for %d tasks (%d times so far); retrying",
                                  len(writes), failures)
            if not any(self._slots.holds(slot, epoch) for slot, epoch in epochs.items()):
                log.warning("giving up recording %d outcomes: their slots moved on", len(writes))
                return None
            await asyncio.sleep(delay_s)
            delay_s = min(delay_s * 2, max_delay_s)

    def _decide(self, d: Due, o: pb.Outcome, now_ms: int,
                kinds: collections.Counter[str]) -> tuple[r.OutcomeWrite, OutMessage | None]:
        decision = decide(d, o, now_ms, self._decide_params, self._rng)
        kinds[decision.kind] += 1
        if decision.retry_path is not None:
            self._metrics.retries.labels(decision.retry_path).inc()
        elif decision.write.result == r.DEAD_LETTERED:
            self._metrics.dead_lettered.inc()
        return decision.write, decision.message

