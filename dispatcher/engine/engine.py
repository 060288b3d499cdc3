"""What a node does with the slots it owns.

Intake (Kafka partitions of owned slots, and the MySQL poller's claims) feeds
one bounded ETA heap; the dispatch loop pops what is due (never earlier), makes
the conditional `-> dispatched` transition in MySQL, hands batches to executors,
records outcomes and schedules retries. Ownership tells the engine, through
`slot_assigned` / `slot_revoked`, which slots it may act on and under which
epoch; every store write carries that epoch, and a write refused as stale makes
the engine drop the slot at once.

Its parts, each in a module of its own, with one direction between them: the shared
state has two owners, the table of owned slots (slot_table.py: epochs, draining, in
flight) and the due queue (due_queue.py: heap, overflow, the dispatch loop's wake, and
the rule that a full heap pauses intake). The loops are handed what they use: the
dispatch loop (dispatch.py) pops from the queue and delivers; the completer
(completer.py: decide, record, retry, settle) finishes attempts for the dispatch loop
and for the recovery guard (recovery.py) alike; the MySQL poller (poller.py) and the
sweeper of Kafka-routed rows whose message never came (sweeper.py) see only the owned
slots. The engine itself wires them, follows ownership, and feeds the queue from the
Kafka intake.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Callable, Mapping

from dispatcher.base.clock import Clock, datetime_to_ms
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopTask, LoopWatch
from dispatcher.base.metrics import NodeMetrics
from dispatcher.base.tracing import NodeTracing
from dispatcher.engine.completer import Completer, CompleterParams
from dispatcher.engine.dispatch import Dispatch, DispatchParams
from dispatcher.engine.due import Due, due_of_message
from dispatcher.engine.due_queue import CLASSES, INTAKE_SHARES, DueQueue
from dispatcher.engine.executor_pool import ExecutorPool
from dispatcher.engine.fair_share import FairShare
from dispatcher.engine.graph_relay import GraphRelay, GraphRelayParams
from dispatcher.engine.graph_watch import GraphWatch, GraphWatchParams
from dispatcher.engine.limits import ConcurrencyGate, TypeKey
from dispatcher.engine.load import Backlog, Load
from dispatcher.engine.poller import Poller, PollParams
from dispatcher.engine.progress import KafkaProgress
from dispatcher.engine.rates import RateGate
from dispatcher.engine.ready import NORMAL, ReadyStage, priority_class
from dispatcher.engine.recovery import RecoveryGuard, RecoveryParams
from dispatcher.engine.slot_table import SlotTable
from dispatcher.engine.sweeper import Sweeper, SweepParams
from dispatcher.engine.task_stats import TaskStats
from dispatcher.log.interface import InMessage, LogIntake, LogProducer
from dispatcher.policy.fairness import FairPolicy
from dispatcher.policy.retry import RetryPolicies
from dispatcher.policy.scheduling import TypeLimits
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.interface_graphs import GraphStoreProtocol
from taskring.wire import pb

log = logging.getLogger(__name__)

@dataclasses.dataclass(frozen=True, slots=True)
class EngineParams:
    heap_capacity: int
    """Due tasks the heap holds before intake pauses (and admission refuses, at 90%)."""
    heap_decoded_capacity: int
    """Above this many, tasks in the heap keep their payload encoded (memory per task)."""
    topics: tuple[str, ...]
    """The Kafka topics of the short-delay path, read for every owned slot."""
    intake_command_timeout_ms: int
    """How long an assign or revoke may take on the intake thread before it counts as failed."""
    handoff_drain_timeout_ms: int
    """How long a revoked slot's attempts may take to finish before the slot is let go anyway."""
    offset_commit_interval_ms: int
    """How often Kafka progress (the low watermark per partition) is written."""
    dispatch: DispatchParams
    completer: CompleterParams
    poll: PollParams
    sweep: SweepParams
    recovery: RecoveryParams
    topic_priorities: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """The priority class of each topic's tasks (pb.Priority); a topic not named is normal."""
    floor_shares: Mapping[int, float] | None = None
    """The least share of dispatches of each lower class while it has tasks due (ready.py);
    None: ready.py's defaults."""
    graph_watch: GraphWatchParams = dataclasses.field(default_factory=GraphWatchParams)
    """How often the home owner looks at its graphs, and when one is stuck."""

    def __post_init__(self) -> None:
        positive(self, "heap_capacity", "heap_decoded_capacity", "intake_command_timeout_ms",
                 "handoff_drain_timeout_ms", "offset_commit_interval_ms")
        if not self.topics:
            raise ValueError("EngineParams.topics must name at least one topic")


class Engine:
    def __init__(self, *, params: EngineParams, store: TaskStoreProtocol, producer: LogProducer,
                 intake_factory: Callable[[Callable, Callable], LogIntake], executors: ExecutorPool,
                 metrics: NodeMetrics, clock: Clock | None = None, rng: random.Random | None = None,
                 on_slot_lost: Callable[[int], None] | None = None, may_send: Callable[[], bool] | None = None,
                 stats: TaskStats | None = None, loops: LoopWatch | None = None,
                 type_limits: Mapping[TypeKey, TypeLimits] | None = None,
                 heartbeat_timeouts: Mapping[TypeKey, int] | None = None,
                 fairness: Mapping[TypeKey, FairPolicy] | None = None, tracing: NodeTracing | None = None,
                 graphs: GraphStoreProtocol | None = None):
        self._params = params
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
        self._due = DueQueue(params.heap_capacity, metrics.heap_size, ReadyStage(params.floor_shares))
        self._topic_class = {t: priority_class(params.topic_priorities.get(t, NORMAL)) for t in params.topics}
        self._slots = SlotTable()
        self._progress = KafkaProgress(store=store, clock=self._clock)
        self._intake = intake_factory(self._deliver_from_thread, self._closed_topics)
        # Messages the intake thread has handed to the event loop, and those the loop has
        # taken: the difference is on its way, not in the due queue yet, and counts against
        # the heap when intake decides whether to read more (each written by one thread).
        self._handed = 0
        self._taken = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._held = False
        self._moves = {move: metrics.ownership_moves.labels(move) for move in ("assigned", "revoked", "lost")}
        # Releases the tasks of graphs as the tasks they depend on end (None: no graph store).
        self.graph_relay = None if graphs is None else GraphRelay(
            params=GraphRelayParams(node_id=params.completer.decide.node_id,
                                    topic_for=params.completer.decide.topic_for),
            graphs=graphs, store=store, producer=producer, clock=self._clock, slots=self, metrics=metrics,
            loops=loops)
        self._graph_watch = None if self.graph_relay is None or graphs is None else GraphWatch(
            params=params.graph_watch, graphs=graphs, relay=self.graph_relay, clock=self._clock, slots=self,
            metrics=metrics, loops=loops)
        self._completer = Completer(params=params.completer, store=store, producer=producer, metrics=metrics,
                                    clock=self._clock, rng=self._rng, slots=self._slots, progress=self._progress,
                                    lose=self._lose, stats=stats,
                                    on_ended=self.graph_relay.ended if self.graph_relay is not None else None)
        self._gate = ConcurrencyGate(type_limits)
        self._dispatch = Dispatch(params=params.dispatch, store=store, executors=executors, metrics=metrics,
                                  clock=self._clock, due=self._due, slots=self._slots, completer=self._completer,
                                  may_act=self.may_act, lose=self._lose, gate=self._gate,
                                  rates=RateGate(type_limits), fair=FairShare(fairness),
                                  heartbeat_timeouts=heartbeat_timeouts, tracing=tracing,
                                  parent_ends=graphs.parent_ends if graphs is not None else None)
        self._loops = [LoopTask("dispatch", self._dispatch.run, loops), LoopTask("commit", self._commit_loop, loops)]
        self._sweeper = Sweeper(params=params.sweep, store=store, clock=self._clock, slots=self,
                                behind=self.slots_behind, loops=loops)
        self._poller = Poller(params=params.poll, store=store, clock=self._clock, slots=self,
                              metrics=metrics, loops=loops)
        self._guard = RecoveryGuard(params=params.recovery, store=store, clock=self._clock,
                                    metrics=metrics, work=self, completer=self._completer, loops=loops)
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
        self._executors.on_release = self._due.wake
        self._intake.start()
        for loop in self._loops:
            loop.start()
        self._poller.start()
        self._sweeper.start()
        self._guard.start()
        if self.graph_relay is not None:
            self.graph_relay.start()
        if self._graph_watch is not None:
            self._graph_watch.start()

    async def stop(self) -> None:
        """Stop intake, finish what is in flight, commit progress. Safe twice."""
        if self._loop is None or self._stopping:
            return
        self._stopping = True
        for slot in self._slots.slots():
            await self.slot_revoked(slot, clean=True)
        await self._guard.stop()
        if self._graph_watch is not None:
            await self._graph_watch.stop()
        if self.graph_relay is not None:
            await self.graph_relay.stop()
        await self._sweeper.stop()
        await self._poller.stop()
        for loop in self._loops:
            await loop.stop()
        await self._dispatch.stop()
        await self._completer.stop()
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
        if not held:
            self._due.wake()
            self._poller.poll_soon()

    @property
    def held(self) -> bool:
        return self._held

    def owned(self) -> dict[int, int]:
        return self._slots.owned()

    async def slot_assigned(self, slot: int, epoch: int) -> None:
        """Start acting on `slot` under `epoch` (already claimed in the store)."""
        if self._gate.limited_types():
            await self._count_attempts_in_doubt(slot, epoch)
        self._slots.assign(slot, epoch)
        starts = await self._progress.open(slot, list(self._params.topics))
        await asyncio.to_thread(self._intake.assign(starts).wait, self._params.intake_command_timeout_ms / 1000)
        self._metrics.owned_slots.set(len(self.owned()))
        self._moves["assigned"].inc()
        self._poller.poll_soon()

    async def _count_attempts_in_doubt(self, slot: int, epoch: int) -> None:
        """Before the slot's first dispatch: the attempts an earlier owner left running count
        against their types' limits until their timeout and the recovery grace have passed
        since their dispatch (by then the recovery guard would have failed them too)."""
        grace_ms = self._params.recovery.grace_ms
        for attempt in range(3):
            try:
                in_doubt = await asyncio.to_thread(self._store.attempts_in_doubt, slot, epoch, self._clock.now())
                break
            except Exception:
                log.exception("slot %d: reading the attempts in doubt failed (try %d of 3)", slot, attempt + 1)
                await asyncio.sleep(0.2 * (attempt + 1))
        else:
            log.error("slot %d: dispatching without the earlier owner's attempts counted against limits", slot)
            return
        ghosts = []
        for row in in_doubt:
            key = (row.namespace, row.task_type)
            if self._gate.limits_of(key) is not None:
                task = pb.Task.FromString(row.envelope)
                ghosts.append((key, datetime_to_ms(row.dispatched_at) + task.timeout_ms + grace_ms, row.attempt >= 2,
                               self._gate.key_of_task(key, task)))
        if ghosts:
            log.info("slot %d: %d attempts of an earlier owner count against limits until they time out",
                     slot, len(ghosts))
        self._gate.add_ghosts(slot, ghosts)

    async def slot_revoked(self, slot: int, *, clean: bool) -> None:
        """Stop acting on `slot`. Clean: finish in-flight work, commit the watermark and
        give the heap's rows back; not clean (ownership lost): drop everything now,
        writing nothing more for the slot."""
        state = self._slots.get(slot)
        if state is None:
            return
        if state.active:  # once per move, though a revocation may be asked for twice
            # Every ownership layer (static and cluster) tells the engine: moves are counted here.
            self._moves["revoked" if clean else "lost"].inc()
        state.active = False
        topics = list(self._params.topics)
        await asyncio.to_thread(self._intake.unassign([(t, slot) for t in topics]).wait,
                                self._params.intake_command_timeout_ms / 1000)
        if clean:
            deadline = self._running_loop().time() + self._params.handoff_drain_timeout_ms / 1000
            while state.in_flight > 0 and self._running_loop().time() < deadline:
                await asyncio.sleep(0.01)
        self._due.drop_slots({slot})
        self._gate.drop_slots({slot})
        if clean:
            await self._commit_offsets(only_slot=slot)
            try:
                await self._db(self._store.release_slot, slot, state.epoch, self._clock.now())
            except Exception:
                log.exception("slot %d: release failed; the next owner resets its rows", slot)
        if self._slots.remove(slot, state):  # not re-assigned while we were revoking
            self._progress.close(slot, topics)
        self._metrics.owned_slots.set(len(self.owned()))

    async def _lose(self, slots: set[int]) -> None:
        """The store refused our epoch for these slots: someone else owns them."""
        for slot in slots:
            state = self._slots.get(slot)
            # Only once per loss: while slot_revoked waits for the intake, the slot is
            # still in the table (inactive), and a second refusal must not drop it again.
            if state is not None and state.active:
                log.warning("slot %d: epoch %d superseded; dropping the slot", slot, state.epoch)
                self._metrics.fenced.inc()
                await self.slot_revoked(slot, clean=False)
                self._on_slot_lost(slot)

    # ---- intake ----

    def _closed_topics(self) -> frozenset[str]:
        """The topics intake must not read now: all while the node is held, else those of the
        classes whose share of the heap is full (due_queue.py)."""
        if self._held:
            return frozenset(self._topic_class)
        reserve = 2 * self._params.poll.batch + (self._handed - self._taken)
        return frozenset(t for t, cls in self._topic_class.items() if not self._due.intake_open(reserve, cls))

    def _deliver_from_thread(self, messages: list[InMessage]) -> None:
        self._handed += len(messages)
        self._running_loop().call_soon_threadsafe(self._take_kafka, messages)

    def _take_kafka(self, messages: list[InMessage]) -> None:
        try:
            self._push_kafka(messages)
        finally:
            self._taken += len(messages)   # after the push: never counted neither on the way nor held

    def _push_kafka(self, messages: list[InMessage]) -> None:
        now_ms = self._clock.now_ms()   # one reading for the batch the intake hands over
        compact = self._due.heap_size() >= self._params.heap_decoded_capacity
        dues = []
        for m in messages:
            state = self._slots.get(m.partition)
            if state is None or not state.active:
                continue  # arrived after the slot left; the next owner replays it
            if not self._progress.take(m.topic, m.partition, m.offset):
                continue  # not tracked (the slot is leaving), or taken before a replay
            self.last_consumed_at[m.partition] = now_ms / 1000
            dues.append(due_of_message(m.value, slot=m.partition, epoch=state.epoch, topic=m.topic,
                                       offset=m.offset, now_ms=now_ms, compact=compact))
        if dues:
            self._due.push_many(dues)

    # ---- what the MySQL poller (poller.py) acts through ----

    def room(self) -> int:
        return self._due.room()

    def take_polled(self, slot: int, dues: list[Due]) -> None:
        self.last_claimed_at[slot] = self._clock.now_ms() / 1000
        self._due.push_many(dues)

    # ---- what the recovery guard (recovery.py) and the sweeper (sweeper.py) act through ----

    def set_policies(self, policies: RetryPolicies) -> None:
        """The policies file changed: limits, rates, fair shares and heartbeat timeouts apply
        from the dispatch loop's next turn (on the event loop's thread)."""
        self._dispatch.set_policies(policies.limits_by_type, policies.fairness_by_type, policies.heartbeat_by_type)

    def may_act(self) -> bool:
        return not self._held and self._may_send()

    def is_current(self, slot: int, epoch: int) -> bool:
        return self._slots.is_current(slot, epoch)

    def slots_behind(self) -> set[int]:
        """Owned slots with messages unread, or due tasks waiting for an executor or a limit:
        their overdue rows are explained by the backlog (the sweeper leaves them be)."""
        behind = {partition for (_, partition), lag in self._intake.lag().items() if lag > 0}
        return behind | self._due.slots_with_due()

    def held_task_ids(self) -> set[str]:
        return self._due.task_ids() | self._slots.in_flight_ids()

    def in_flight_ids(self) -> set[str]:
        return self._slots.in_flight_ids()

    def in_flight_count(self) -> int:
        return self._slots.in_flight_count()

    async def lose(self, slots: set[int]) -> None:
        await self._lose(slots)

    def poll_soon(self) -> None:
        self._poller.poll_soon()

    def time_moved(self) -> None:
        """The clock was moved forward (`taskring dev`): what became due goes now, not at the
        end of a sleep measured before the move."""
        self._poller.poll_soon()
        self._due.wake()

    # ---- Kafka progress ----

    async def _commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self._params.offset_commit_interval_ms / 1000)
            try:
                await self._commit_offsets()
            except Exception:
                log.exception("offset commit failed")

    async def _commit_offsets(self, only_slot: int | None = None) -> None:
        # Every slot in the table, draining ones included: a clean handoff commits last.
        stale = await self._progress.commit(self._slots.epochs(), only_slot)
        if stale and only_slot is None:
            await self._lose(stale)

    # ---- observation ----

    def heap_size(self) -> int:
        return self._due.heap_size()

    def load(self) -> Load:
        """What this node holds and how far behind it is, per priority class, for admission control."""
        now = self._clock.now_ms()
        held, earliest = self._due.held_by_class(), self._due.earliest_due_by_class()
        unread: dict[int, int] = dict.fromkeys(CLASSES, 0)
        for (topic, _), lag in self._intake.lag().items():
            unread[self._topic_class.get(topic, NORMAL)] += lag
        ahead: dict[int, Backlog] = {}
        total_held = total_unread = 0
        first: int | None = None
        for cls in CLASSES:   # high first: each class waits behind its own and those above it
            total_held += held[cls]
            total_unread += unread[cls]
            e = earliest[cls]
            if e is not None and (first is None or e < first):
                first = e
            ahead[cls] = Backlog(held=total_held, unread=total_unread,
                                 oldest_due_wait_ms=now - first if first is not None and first <= now else 0)
        return Load(capacity=self._params.heap_capacity, dispatched_total=self._dispatch.dispatched_total,
                    ahead=ahead, shares=INTAKE_SHARES)

    def kafka_lag(self) -> dict[tuple[str, int], int]:
        return self._intake.lag()
