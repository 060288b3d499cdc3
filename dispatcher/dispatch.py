"""The dispatch loop: due tasks out of the heap, to executors, and their outcomes recorded.

It pops what is due (never earlier), holds executor capacity for it, makes the
conditional `-> dispatched` transition in the store (begin_dispatch, fenced by each
slot's epoch), hands each task type's batch to its executors, and records the outcomes
(outcomes.py decides, outcome_batcher.py groups the writes). A refused epoch means the
slot moved on: the engine drops it (DispatchHost.lose).

It shares with the engine the heap, its overflow and the slot table; what it needs
beyond them is the small DispatchHost surface.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from typing import Protocol

from prometheus_client import Gauge, Histogram

from dispatcher.clock import Clock, ms_to_datetime
from dispatcher.config import NodeConfig
from dispatcher.due import KAFKA, MYSQL, Due
from dispatcher.executor_pool import ExecutorPool, Reservation
from dispatcher.heap import EtaHeap
from dispatcher.log.interface import LogProducer, OutMessage
from dispatcher.metrics import NodeMetrics, observe_many
from dispatcher.outcome_batcher import OutcomeBatcher
from dispatcher.outcomes import decide
from dispatcher.slot_table import SlotState
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.task_stats import TaskStats
from taskring.wire import pb

log = logging.getLogger(__name__)


class DispatchHost(Protocol):
    """What the dispatch loop acts through: the engine that owns the slots."""

    def may_act(self) -> bool:
        """False while ownership is in doubt (held) or the session lease has run out."""

    def push(self, due: Due) -> None:
        """Back into the heap (or its overflow): postponed, or not yet run."""

    def settle(self, due: Due) -> None:
        """The task of a Kafka message needs nothing more from the message."""

    async def lose(self, slots: set[int]) -> None:
        """The store refused our epoch for these slots."""


_NO_EXECUTOR_LOG_S = 60.0


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("dispatch batch failed", exc_info=task.exception())


class Dispatch:
    def __init__(self, *, config: NodeConfig, store: TaskStoreProtocol, producer: LogProducer,
                 executors: ExecutorPool, metrics: NodeMetrics, clock: Clock, rng: random.Random,
                 heap: EtaHeap[Due], overflow: collections.deque[Due], slots: dict[int, SlotState],
                 wake: asyncio.Event, host: DispatchHost, stats: TaskStats | None = None):
        self._config = config
        self._stats = stats
        self._store = store
        self._producer = producer
        self._executors = executors
        self._metrics = metrics
        self._clock = clock
        self._rng = rng
        self._heap = heap
        self._overflow = overflow       # mutated in place only: the engine holds the same deque
        self._slots = slots
        self._wake = wake
        self._host = host
        # Labelled children resolved once: a labels() lookup per task showed in profiles.
        self._lateness = {source: metrics.lateness.labels(source) for source in (KAFKA, MYSQL)}
        self._outcomes = {name.removeprefix("OUTCOME_KIND_").lower(): metrics.outcomes.labels(
            name.removeprefix("OUTCOME_KIND_").lower()) for name in pb.OutcomeKind.keys()}
        # Per task type, resolved on a type's first batch: (in-flight gauge, execution histogram).
        self._by_type: dict[tuple[str, str], tuple[Gauge, Histogram]] = {}
        self._outcome_batcher = OutcomeBatcher(store.record_outcomes, max_writes=config.outcome_batch)
        # asyncio's primitives bind to the running loop on first use, not here.
        self._batch_gate = asyncio.Semaphore(config.max_batches_in_flight)
        self._batches: set[asyncio.Task] = set()
        self.in_flight_ids: set[str] = set()   # in a batch: popped, dispatching, or awaiting an outcome
        self.dispatched_total = 0
        self._paused_since: float | None = None   # monotonic, while the host may not act
        self._no_executor_logged: dict[tuple[str, str], float] = {}   # (namespace, type) -> monotonic

    async def stop(self) -> None:
        """After the loop is cancelled: wait for the batches in flight, flush the outcomes."""
        await asyncio.gather(*self._batches, return_exceptions=True)
        await self._outcome_batcher.stop()

    async def finish(self, items: list[Due], outcomes: list[pb.Outcome]) -> None:
        """Record outcomes known from elsewhere (the recovery guard's)."""
        await self._finish(items, outcomes)

    async def run(self) -> None:
        """Pop what is due, hold executor capacity for it, and start a batch.

        `_batch_gate` bounds concurrent begin_dispatch transactions only; a batch
        gives it back as soon as its rows are marked dispatched, so slow handlers
        never hold up dispatching. What does not fit executors' capacity goes back
        into the heap and waits for a release (which wakes this loop).
        """
        while True:
            await self._batch_gate.acquire()
            while self._overflow and self._heap.free() > 0:
                d = self._overflow.popleft()
                self._heap.push(d.due_ms, d.priority, d.slot, d)
            now = self._clock.now_ms()
            blocked = not self._host.may_act()
            self._note_paused(blocked)
            entries = [] if blocked else self._heap.pop_due(now, self._config.dispatch_batch)
            taken = self._reserve([e.item for e in entries], now) if entries else []
            if not taken:
                self._batch_gate.release()
                nxt = self._heap.next_eta_ms()
                # Always yield to the loop: while held, or while executors are full,
                # due entries stay in the heap, and a loop that never awaits would
                # starve ownership itself.
                idle_s = self._config.dispatch_idle_wait_ms / 1000
                if blocked or nxt is None or nxt <= now:
                    timeout = idle_s
                else:
                    timeout = min(idle_s, max(0.001, (nxt - now) / 1000))
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout)
                except TimeoutError:
                    pass
                continue
            self._metrics.heap_size.set(len(self._heap))
            batch = asyncio.create_task(self._run_batch(taken, now))
            self._batches.add(batch)
            batch.add_done_callback(self._batches.discard)
            batch.add_done_callback(_log_failure)

    def _note_paused(self, blocked: bool) -> None:
        """Say when dispatch stops and starts again: nothing due is dispatched meanwhile."""
        if blocked and self._paused_since is None:
            self._paused_since = time.monotonic()
            log.warning("dispatch paused: this node holds its slots in doubt, or their store leases were not"
                        " renewed in time; %d tasks held", len(self._heap) + len(self._overflow))
        elif not blocked and self._paused_since is not None:
            log.warning("dispatch resumed after %.1f s paused", time.monotonic() - self._paused_since)
            self._paused_since = None

    def _note_no_executor(self, namespace: str, task_type: str) -> None:
        """A due task whose type no live executor announces waits: say so, once a minute a type."""
        now = time.monotonic()
        if now - self._no_executor_logged.get((namespace, task_type), -_NO_EXECUTOR_LOG_S) >= _NO_EXECUTOR_LOG_S:
            self._no_executor_logged[(namespace, task_type)] = now
            log.warning("no live executor announces %s/%s; its due tasks wait (tried again every %d ms): %s",
                        namespace, task_type, self._config.no_executor_retry_ms,
                        self._executors.describe(namespace, task_type))

    def _reserve(self, items: list[Due], now_ms: int) -> list[tuple[Due, Reservation | None]]:
        """Keep the items executors can take now, each group with its reservation;
        postpone what has no executor, put back what does not fit."""
        by_type: dict[tuple[str, str], list[Due]] = collections.defaultdict(list)
        for d in items:
            state = self._slots.get(d.slot)
            if state is None or not state.active or state.epoch != d.epoch:
                continue  # the slot moved on; its new owner has this task
            if not self._executors.has_executor(d.task.namespace, d.task.task_type):
                self._metrics.no_executor.labels(d.task.namespace).inc()
                self._note_no_executor(d.task.namespace, d.task.task_type)
                d.due_ms = now_ms + self._config.no_executor_retry_ms  # postponed, no attempt spent
                self._host.push(d)
                continue
            by_type[(d.task.namespace, d.task.task_type)].append(d)
        taken: list[tuple[Due, Reservation | None]] = []
        for (namespace, task_type), group in by_type.items():
            reservation = self._executors.reserve(namespace, task_type, len(group))
            fits, rest = group[:reservation.total], group[reservation.total:]
            for d in rest:  # still due: back in the heap until capacity frees up
                self._heap.push(d.due_ms, d.priority, d.slot, d)
            if fits:
                taken.extend((d, None) for d in fits[:-1])
                taken.append((fits[-1], reservation))  # one reservation per group, carried by its last item
        return taken

    async def _run_batch(self, taken: list[tuple[Due, Reservation | None]], now_ms: int) -> None:
        ready = [d for d, _ in taken]
        reservations = {res.key: res for _, res in taken if res is not None}
        epochs = {d.slot: d.epoch for d in ready}
        # One task can be in a batch more than once: a swept row and its message (same
        # attempt), or, after a handoff replays a partition, an old attempt's message
        # next to its retry's. A Due exists for attempt n only once attempt n-1 has been
        # recorded, so only the highest attempt can still be wanted: the others are
        # superseded, never claimed and never delivered in its place.
        top: dict[str, int] = {}
        for d in ready:
            top[d.task_id] = max(d.attempt, top.get(d.task_id, 0))
        current = [d for d in ready if d.attempt == top[d.task_id]]
        claims = [r.DispatchClaim(d.task_id, d.slot, d.attempt, d.source, ms_to_datetime(d.due_ms))
                  for d in current]
        for d in ready:
            self._slots[d.slot].in_flight += 1
        ids = {d.task_id for d in ready}
        self.in_flight_ids.update(ids)
        try:
            try:
                dispatched, stale = await asyncio.to_thread(self._store.begin_dispatch, claims, epochs,
                                                   self._config.node_id, ms_to_datetime(now_ms))
            except Exception:
                log.exception("begin_dispatch failed; tasks go back to the heap")
                for d in ready:
                    d.due_ms = now_ms + self._config.store_retry_ms
                    self._host.push(d)  # not settled: they have not run
                dispatched, stale, requeued = set(), set(), True
            else:
                requeued = False
            finally:
                self._batch_gate.release()
            await self._host.lose(stale)
            for d in ready:
                d.dispatched_ms = now_ms
            go: dict[tuple[str, str], list[Due]] = collections.defaultdict(list)
            delivered: set[str] = set()
            for d in ready:
                # The store dispatched each task at most once, as its highest attempt
                # here, so that Due (the first of them) is the one delivered.
                if d.task_id in dispatched and d.attempt == top[d.task_id] \
                        and d.task_id not in delivered:
                    delivered.add(d.task_id)
                    go[(d.task.namespace, d.task.task_type)].append(d)
                    self._lateness[d.source].observe(max(0, now_ms - d.due_ms) / 1000)
                elif d.slot not in stale and not requeued:
                    self._metrics.skipped.inc()
                    self._host.settle(d)
            self._metrics.dispatched.inc(len(dispatched))
            self.dispatched_total += len(dispatched)
            # Every reservation is run, even with nothing to send: that releases it.
            await asyncio.gather(*(self._deliver(go.get(key, []), res) for key, res in reservations.items()))
        finally:
            self.in_flight_ids.difference_update(ids)
            for d in ready:
                state = self._slots.get(d.slot)
                if state is not None:
                    state.in_flight -= 1

    async def _deliver(self, items: list[Due], reservation: Reservation) -> None:
        deliveries = []
        for d in items:
            # The Due's task is its own (decoded from its message or row), and the
            # Delivery copies it: set the attempt's retry_count on it, with one copy.
            d.task.retry_count = d.attempt - 1
            deliveries.append(pb.Delivery(task=d.task, attempt=d.attempt, epoch=d.epoch, timeout_ms=d.task.timeout_ms))
        if not items:
            await self._executors.run(reservation, [])  # gives the capacity back
            return
        in_flight, duration = self._type_metrics(reservation.key)
        self._metrics.in_flight.inc(len(items))
        in_flight.inc(len(items))
        try:
            result = await self._executors.run(reservation, deliveries)
        finally:
            self._metrics.in_flight.dec(len(items))
            in_flight.dec(len(items))
        # One call carries the batch, dispatched at one instant (_run_batch): its outcomes
        # arrive together, so the batch is one observation, counted once per task run.
        observe_many(duration, (self._clock.now_ms() - items[0].dispatched_ms) / 1000,
                     len(items) - len(result.not_sent))
        if result.not_sent:
            unsent = {(d.task.task_id, d.attempt) for d in result.not_sent}
            await self._give_back([d for d in items if (d.task_id, d.attempt) in unsent])
            items = [d for d in items if (d.task_id, d.attempt) not in unsent]
        if items:
            await self._finish(items, result.outcomes)

    def _type_metrics(self, key: tuple[str, str]) -> tuple[Gauge, Histogram]:
        """A task type's children: one dict lookup per batch. The series stay bounded,
        since only types with a registered executor get this far (_reserve)."""
        found = self._by_type.get(key)
        if found is None:
            found = self._by_type[key] = (self._metrics.in_flight_by_type.labels(*key),
                                          self._metrics.execution_duration.labels(*key))
        return found

    async def _finish(self, items: list[Due], outcomes: list[pb.Outcome]) -> None:
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
        await self._host.lose(stale)
        live = [d for d in items if d.slot not in stale]
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
            self._host.settle(d)

    def _count(self, live: list[Due], writes: list[r.OutcomeWrite], stale: set[int], now_ms: int) -> None:
        """The batch's recorded outcomes, for the console's figures (one call per batch)."""
        assert self._stats is not None
        recorded = [w.result for w in writes if w.slot not in stale]
        succeeded = recorded.count(r.SUCCEEDED)
        task = live[0].task
        self._stats.executed(task.namespace, task.task_type, succeeded=succeeded, failed=len(recorded) - succeeded,
                             dead_lettered=recorded.count(r.DEAD_LETTERED),
                             duration_ms=now_ms - live[0].dispatched_ms, runs=len(recorded))

    async def _give_back(self, items: list[Due]) -> None:
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
            stale = await asyncio.to_thread(self._store.return_undelivered, claims, epochs, self._config.node_id,
                                   self._clock.now())
        except Exception:
            # Left dispatched: recovered as a failed attempt after their timeout and grace.
            log.exception("giving back %d undelivered tasks failed", len(items))
            return
        await self._host.lose(stale)
        for d in items:
            if d.slot not in stale:
                self._host.settle(d)  # durably re-queued as a row

    async def _record(self, writes: list[r.OutcomeWrite], epochs: dict[int, int], now) -> set[int] | None:
        """record_outcomes, retried while MySQL refuses, for as long as this node still
        owns any of the slots under the epochs the writes carry: the outcome is known,
        and giving up would leave the rows `dispatched`, to be run again once recovered.
        (The write is conditional on (dispatched, attempt), so repeating it is safe.)
        None if the slots moved on meanwhile: their new owner runs those attempts again."""
        max_delay_s = self._config.outcome_retry_max_delay_ms / 1000
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
            if not any(self._slots.get(slot) is not None and self._slots[slot].epoch == epoch
                       for slot, epoch in epochs.items()):
                log.warning("giving up recording %d outcomes: their slots moved on", len(writes))
                return None
            await asyncio.sleep(delay_s)
            delay_s = min(delay_s * 2, max_delay_s)

    def _decide(self, d: Due, o: pb.Outcome, now_ms: int,
                kinds: collections.Counter[str]) -> tuple[r.OutcomeWrite, OutMessage | None]:
        decision = decide(d, o, now_ms, self._config, self._rng)
        kinds[decision.kind] += 1
        if decision.retry_path is not None:
            self._metrics.retries.labels(decision.retry_path).inc()
        elif decision.write.result == r.DEAD_LETTERED:
            self._metrics.dead_lettered.inc()
        return decision.write, decision.message

