"""What a node does with the slots it owns.

Intake (Kafka partitions of owned slots, and the MySQL poller's claims) feeds
one bounded ETA heap; the dispatch loop pops what is due (never earlier), makes
the conditional `-> dispatched` transition in MySQL, hands batches to executors,
records outcomes and schedules retries. Ownership tells the engine, through
`slot_assigned` / `slot_revoked`, which slots it may act on and under which
epoch; every store write carries that epoch, and a write refused as stale makes
the engine drop the slot at once.

Its parts with a module of their own: the heap's item (due.py), the decision after
an attempt (outcomes.py, pure), Kafka progress (progress.py), the sweeper of
Kafka-routed rows whose message never came (sweeper.py) and the guard against
stranded rows (recovery.py); the last two act through the small surface below.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import random
from collections.abc import Callable

from dispatcher.admission import Load
from dispatcher.clock import Clock, ms_to_datetime
from dispatcher.config import NodeConfig
from dispatcher.due import KAFKA, MYSQL, Due, due_of_message
from dispatcher.executor_pool import ExecutorPool, Reservation
from dispatcher.heap import EtaHeap
from dispatcher.log.interface import InMessage, LogIntake, LogProducer, OutMessage
from dispatcher.metrics import NodeMetrics
from dispatcher.outcome_batcher import OutcomeBatcher
from dispatcher.outcomes import decide
from dispatcher.poller import Poller
from dispatcher.progress import KafkaProgress
from dispatcher.recovery import RecoveryGuard
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.sweeper import Sweeper
from taskring.wire import pb

log = logging.getLogger(__name__)

@dataclasses.dataclass
class SlotState:
    epoch: int
    active: bool = True          # False while draining for a clean handoff
    in_flight: int = 0


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("dispatch batch failed", exc_info=task.exception())


class Engine:
    def __init__(self, *, config: NodeConfig, store: TaskStoreProtocol, producer: LogProducer,
                 intake_factory: Callable[[Callable, Callable], LogIntake], executors: ExecutorPool,
                 metrics: NodeMetrics, clock: Clock | None = None, rng: random.Random | None = None,
                 on_slot_lost: Callable[[int], None] | None = None, may_send: Callable[[], bool] | None = None):
        self._config = config
        self._store = store
        self._producer = producer
        self._executors = executors
        self._metrics = metrics
        self._clock = clock or Clock()
        self._rng = rng or random.Random()
        self._on_slot_lost = on_slot_lost or (lambda slot: None)
        # The session lease (membership/session.py): without it this node cannot prove
        # that nobody else owns its slots yet, so it starts nothing new.
        self._may_send = may_send or (lambda: True)
        self._heap: EtaHeap[Due] = EtaHeap(config.heap_capacity)
        # Labelled children resolved once: a labels() lookup per task showed in profiles.
        self._lateness = {source: metrics.lateness.labels(source) for source in (KAFKA, MYSQL)}
        self._outcomes = {name.removeprefix("OUTCOME_KIND_").lower(): metrics.outcomes.labels(
            name.removeprefix("OUTCOME_KIND_").lower()) for name in pb.OutcomeKind.keys()}
        self._overflow: collections.deque[Due] = collections.deque()
        self._slots: dict[int, SlotState] = {}
        self._progress = KafkaProgress(store=store, clock=self._clock)
        self._outcome_batcher = OutcomeBatcher(store.record_outcomes, max_writes=config.outcome_batch)
        self._intake = intake_factory(self._deliver_from_thread, self._may_read)
        self._loop: asyncio.AbstractEventLoop | None = None
        # asyncio's primitives bind to the running loop on first use, not here.
        self._wake = asyncio.Event()
        self._batch_gate = asyncio.Semaphore(config.max_batches_in_flight)
        self._tasks: list[asyncio.Task] = []
        self._batches: set[asyncio.Task] = set()
        self._stopping = False
        self._held = False
        self._in_flight_ids: set[str] = set()   # in a batch: popped, dispatching, or awaiting an outcome
        self._dispatched_total = 0
        self._sweeper = Sweeper(config=config, store=store, clock=self._clock, slots=self)
        self._poller = Poller(config=config, store=store, clock=self._clock, slots=self)
        self._guard = RecoveryGuard(config=config, store=store, clock=self._clock, metrics=metrics, work=self)
        # Observations for the admin view and for tests.
        # slot -> wall time of the last MySQL claim / Kafka message taken for it,
        # so a test or an SRE can check that a node touches only slots it owns.
        self.last_claimed_at: dict[int, float] = {}
        self.last_consumed_at: dict[int, float] = {}

    # ---- lifecycle ----

    async def start(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._executors.start()
        self._executors.on_release = self._wake.set
        self._intake.start()
        self._tasks = [asyncio.create_task(coro, name=name) for name, coro in (
            ("dispatch", self._dispatch_loop()),
            ("commit", self._commit_loop()))]
        self._poller.start()
        self._sweeper.start()
        self._guard.start()

    async def stop(self) -> None:
        """Stop intake, finish what is in flight, commit progress. Safe twice."""
        if self._loop is None or self._stopping:
            return
        self._stopping = True
        for slot in list(self._slots):
            await self.slot_revoked(slot, clean=True)
        await self._guard.stop()
        await self._sweeper.stop()
        await self._poller.stop()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*self._batches, return_exceptions=True)
        await self._outcome_batcher.stop()
        await asyncio.to_thread(self._intake.stop)
        await self._executors.stop()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("Engine.start() has not run")
        return self._loop

    async def _db(self, fn, *args):
        return await asyncio.to_thread(fn, *args)

    # ---- ownership ----

    def hold(self, held: bool) -> None:
        """Held: take no new work (no pops, no polls, no Kafka reads) while ownership
        is in doubt (ZooKeeper SUSPENDED); attempts already in flight finish."""
        self._held = held
        if not held and self._wake is not None:
            self._wake.set()
            self._poller.poll_soon()

    @property
    def held(self) -> bool:
        return self._held

    def owned(self) -> dict[int, int]:
        return {s: st.epoch for s, st in self._slots.items() if st.active}

    async def slot_assigned(self, slot: int, epoch: int) -> None:
        """Start acting on `slot` under `epoch` (already claimed in the store)."""
        self._slots[slot] = SlotState(epoch=epoch)
        starts = await self._progress.open(slot, self._config.kafka.topics())
        await asyncio.to_thread(self._intake.assign(starts).wait, self._config.intake_command_timeout_ms / 1000)
        self._metrics.owned_slots.set(len(self.owned()))
        self._poller.poll_soon()

    async def slot_revoked(self, slot: int, *, clean: bool) -> None:
        """Stop acting on `slot`. Clean: finish in-flight work, commit the watermark and
        give the heap's rows back; not clean (ownership lost): drop everything now,
        writing nothing more for the slot."""
        state = self._slots.get(slot)
        if state is None:
            return
        state.active = False
        topics = self._config.kafka.topics()
        await asyncio.to_thread(self._intake.unassign([(t, slot) for t in topics]).wait,
                                self._config.intake_command_timeout_ms / 1000)
        if clean:
            deadline = self._running_loop().time() + self._config.handoff_drain_timeout_ms / 1000
            while state.in_flight > 0 and self._running_loop().time() < deadline:
                await asyncio.sleep(0.01)
        self._heap.drop_slots({slot})
        self._overflow = collections.deque(d for d in self._overflow if d.slot != slot)
        if clean:
            await self._commit_offsets(only_slot=slot)
            try:
                await self._db(self._store.release_slot, slot, state.epoch, self._clock.now())
            except Exception:
                log.exception("slot %d: release failed; the next owner resets its rows", slot)
        if self._slots.get(slot) is state:  # not re-assigned while we were revoking
            self._progress.close(slot, topics)
            del self._slots[slot]
        self._metrics.owned_slots.set(len(self.owned()))

    async def _lose(self, slots: set[int]) -> None:
        """The store refused our epoch for these slots: someone else owns them."""
        for slot in slots:
            state = self._slots.get(slot)
            # Only once per loss: while slot_revoked waits for the intake, the slot is
            # still in the table (inactive), and a second refusal must not drop it again.
            if state is not None and state.active:
                log.warning("slot %d: epoch %d superseded; dropping the slot", slot, self._slots[slot].epoch)
                self._metrics.fenced.inc()
                await self.slot_revoked(slot, clean=False)
                self._on_slot_lost(slot)

    # ---- intake ----

    def _may_read(self) -> bool:
        return not self._held and self._heap.free() > 2 * self._config.poll_batch and not self._overflow

    def _deliver_from_thread(self, messages: list[InMessage]) -> None:
        self._running_loop().call_soon_threadsafe(self._take_kafka, messages)

    def _take_kafka(self, messages: list[InMessage]) -> None:
        for m in messages:
            state = self._slots.get(m.partition)
            if state is None or not state.active:
                continue  # arrived after the slot left; the next owner replays it
            if not self._progress.take(m.topic, m.partition, m.offset):
                continue  # not tracked (the slot is leaving), or taken before a replay
            now_ms = self._clock.now_ms()
            self.last_consumed_at[m.partition] = now_ms / 1000
            due = due_of_message(m.value, slot=m.partition, epoch=state.epoch, topic=m.topic, offset=m.offset,
                                 now_ms=now_ms, compact=len(self._heap) >= self._config.heap_decoded_capacity)
            self._push(due)

    def _push(self, due: Due) -> None:
        nxt = self._heap.next_eta_ms()
        if not self._heap.push(due.due_ms, due.priority, due.slot, due):
            self._overflow.append(due)
        elif nxt is None or due.due_ms < nxt:
            self._wake.set()
        self._metrics.heap_size.set(len(self._heap))

    def _settle(self, due: Due) -> None:
        """The task of a Kafka message needs nothing more from this message."""
        if due.source == KAFKA and due.topic is not None:
            state = self._slots.get(due.slot)
            if state is not None and state.epoch == due.epoch:
                self._progress.settle(due.topic, due.slot, due.offset)

    # ---- what the MySQL poller (poller.py) acts through ----

    def room(self) -> int:
        return self._heap.free() - len(self._overflow)

    def take_polled(self, slot: int, dues: list[Due]) -> None:
        self.last_claimed_at[slot] = self._clock.now_ms() / 1000
        for due in dues:
            self._push(due)

    # ---- what the recovery guard (recovery.py) and the sweeper (sweeper.py) act through ----

    def may_act(self) -> bool:
        return not self._held and self._may_send()

    def is_current(self, slot: int, epoch: int) -> bool:
        state = self._slots.get(slot)
        return state is not None and state.active and state.epoch == epoch

    def held_task_ids(self) -> set[str]:
        ids = {d.task_id for d in self._heap.items()}
        ids.update(d.task_id for d in self._overflow)
        ids.update(self._in_flight_ids)
        return ids

    def in_flight_ids(self) -> set[str]:
        return set(self._in_flight_ids)

    async def lose(self, slots: set[int]) -> None:
        await self._lose(slots)

    async def finish(self, items: list[Due], outcomes: list[pb.Outcome]) -> None:
        await self._finish(items, outcomes)

    def poll_soon(self) -> None:
        self._poller.poll_soon()

    # ---- Kafka progress ----

    async def _commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.offset_commit_interval_ms / 1000)
            try:
                await self._commit_offsets()
            except Exception:
                log.exception("offset commit failed")

    async def _commit_offsets(self, only_slot: int | None = None) -> None:
        # Every slot in the table, draining ones included: a clean handoff commits last.
        stale = await self._progress.commit({s: st.epoch for s, st in self._slots.items()}, only_slot)
        if stale and only_slot is None:
            await self._lose(stale)

    # ---- dispatch ----

    async def _dispatch_loop(self) -> None:
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
            blocked = self._held or not self._may_send()
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
                d.due_ms = now_ms + self._config.no_executor_retry_ms  # postponed, no attempt spent
                self._push(d)
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
        self._in_flight_ids.update(ids)
        try:
            try:
                dispatched, stale = await self._db(self._store.begin_dispatch, claims, epochs,
                                                   self._config.node_id, ms_to_datetime(now_ms))
            except Exception:
                log.exception("begin_dispatch failed; tasks go back to the heap")
                for d in ready:
                    d.due_ms = now_ms + self._config.store_retry_ms
                    self._push(d)  # not settled: they have not run
                dispatched, stale, requeued = set(), set(), True
            else:
                requeued = False
            finally:
                self._batch_gate.release()
            await self._lose(stale)
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
                    self._settle(d)
            self._metrics.dispatched.inc(len(dispatched))
            self._dispatched_total += len(dispatched)
            # Every reservation is run, even with nothing to send: that releases it.
            await asyncio.gather(*(self._deliver(go.get(key, []), res) for key, res in reservations.items()))
        finally:
            self._in_flight_ids.difference_update(ids)
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
        self._metrics.in_flight.inc(len(items))
        try:
            result = await self._executors.run(reservation, deliveries)
        finally:
            self._metrics.in_flight.dec(len(items))
        if result.not_sent:
            unsent = {(d.task.task_id, d.attempt) for d in result.not_sent}
            await self._give_back([d for d in items if (d.task_id, d.attempt) in unsent])
            items = [d for d in items if (d.task_id, d.attempt) not in unsent]
        if items:
            await self._finish(items, result.outcomes)

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
        await self._lose(stale)
        live = [d for d in items if d.slot not in stale]
        to_send = [retry_messages[d.task_id] for d in live if d.task_id in retry_messages]
        if to_send:
            errors = await self._producer.send(to_send)
            failed = [m.key.decode() for m, e in zip(to_send, errors) if e is not None]
            if failed:
                log.warning("%d retries could not be produced; moving them to the MySQL path", len(failed))
                await self._db(self._store.reroute_to_mysql, failed, now)
        for d in live:
            self._settle(d)

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
            stale = await self._db(self._store.return_undelivered, claims, epochs, self._config.node_id,
                                   self._clock.now())
        except Exception:
            # Left dispatched: recovered as a failed attempt after their timeout and grace.
            log.exception("giving back %d undelivered tasks failed", len(items))
            return
        await self._lose(stale)
        for d in items:
            if d.slot not in stale:
                self._settle(d)  # durably re-queued as a row

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

    # ---- observation ----

    def heap_size(self) -> int:
        return len(self._heap)

    def load(self) -> Load:
        """What this node holds and how far behind it is, for admission control."""
        now = self._clock.now_ms()
        due = [t for t in (self._heap.next_eta_ms(), self._overflow[0].due_ms if self._overflow else None)
               if t is not None and t <= now]
        return Load(held=len(self._heap) + len(self._overflow), capacity=self._config.heap_capacity,
                    oldest_due_wait_ms=now - min(due) if due else 0, unread=sum(self._intake.lag().values()),
                    dispatched_total=self._dispatched_total)

    def kafka_lag(self) -> dict[tuple[str, int], int]:
        return self._intake.lag()
