"""The dispatch loop: due tasks out of the due queue, to executors.

It pops what is due (never earlier), holds executor capacity for it, makes the
conditional `-> dispatched` transition in the store (begin_dispatch, fenced by each
slot's epoch), and hands each task type's batch to its executors. What an attempt
comes to goes to the completer (completer.py), which the recovery guard uses too. A
refused epoch means the slot moved on: `lose` tells the engine.

It takes what it uses: the due queue, the slot table, the executor pool, the
completer, and two calls into the engine (may it act now; a slot is lost).
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from prometheus_client import Gauge, Histogram

from dispatcher.base.clock import Clock, ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.base.metrics import NodeMetrics, observe_many, observe_values
from dispatcher.base.tracing import NodeTracing, is_traceparent
from dispatcher.engine.completer import Completer
from dispatcher.engine.due import KAFKA, MYSQL, Due
from dispatcher.engine.due_queue import DueQueue
from dispatcher.engine.executor_pool import ExecutorPool, Reservation
from dispatcher.engine.fair_share import FAIR_SHARE, FairShare
from dispatcher.engine.graph_delivery import ParentEnds, with_parents
from dispatcher.engine.limits import CONCURRENCY, PER_KEY, RETRY_CAP, ConcurrencyGate, TypeKey
from dispatcher.engine.rates import RATE, RATE_PER_KEY, RateGate
from dispatcher.engine.ready import HIGH
from dispatcher.engine.slot_table import SlotTable
from dispatcher.engine.wait_notes import FAIR_PREFIX, KEY_PREFIX, RATE_KEY_PREFIX, WaitNotes, metric_limit
from dispatcher.policy.fairness import FairPolicy
from dispatcher.policy.scheduling import TypeLimits
from dispatcher.store import records as r
from dispatcher.store.interface import TaskStoreProtocol
from taskring.wire import pb

log = logging.getLogger(__name__)


_NO_EXECUTOR_LOG_S = 60.0

_PROBE = 64
"""Due tasks popped even when the executors this node knows have no room: enough to find
a type whose executors it has not looked up yet, and to postpone types that have none."""


def _paid(cost_ms: float) -> Callable[[Due], None]:
    """Marks a task whose flow's turn came with what its start paid (fair_share.py)."""
    def turn_came(d: Due) -> None:
        d.fair_turn = cost_ms
    return turn_came


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("dispatch batch failed", exc_info=task.exception())


@dataclasses.dataclass(frozen=True, slots=True)
class DispatchParams:
    node_id: str
    batch: int
    """Due tasks popped per batch (fewer when the executors have less room)."""
    idle_wait_ms: int
    """The longest the loop sleeps when nothing is due and nothing woke it."""
    max_batches_in_flight: int
    """Batches being delivered at once; the next pop waits for one to end."""
    no_executor_retry_ms: int
    """How far a task is postponed when no executor of its type is known (no attempt spent)."""
    store_retry_ms: int
    """How far a batch is postponed when the store refused to record its dispatch."""
    high_reserve_share: float = 0.0
    """The share of each executor's capacity only high-priority tasks may take: with
    executors saturated by lower work, a high task still finds a place at once."""

    def __post_init__(self) -> None:
        positive(self, "batch", "idle_wait_ms", "max_batches_in_flight", "no_executor_retry_ms", "store_retry_ms")
        if not self.node_id:
            raise ValueError("DispatchParams.node_id must not be empty")
        if not 0 <= self.high_reserve_share < 1:
            raise ValueError("DispatchParams.high_reserve_share must be a share in [0, 1),"
                             f" got {self.high_reserve_share!r}")


class Dispatch:
    def __init__(self, *, params: DispatchParams, store: TaskStoreProtocol, executors: ExecutorPool,
                 metrics: NodeMetrics, clock: Clock, due: DueQueue, slots: SlotTable, completer: Completer,
                 may_act: Callable[[], bool], lose: Callable[[set[int]], Awaitable[None]],
                 gate: ConcurrencyGate | None = None, rates: RateGate | None = None, fair: FairShare | None = None,
                 heartbeat_timeouts: Mapping[TypeKey, int] | None = None, tracing: NodeTracing | None = None,
                 parent_ends: ParentEnds | None = None):
        self._params = params
        # How the parents of a task of a graph ended, with their results (None: no graphs).
        self._parent_ends = parent_ends
        self._tracing = tracing   # spans of traced attempts (base/tracing.py); None: off
        self._store = store
        self._executors = executors
        self._metrics = metrics
        self._clock = clock
        self._due = due
        self._slots = slots
        self._completer = completer
        self._may_act = may_act
        self._lose = lose
        self._gate = gate or ConcurrencyGate()
        self._rates = rates or RateGate()
        self._fair = fair or FairShare()
        # Per fair type: tasks whose turn came, on their way from their flow's queue to a
        # reservation; the room they will take is not given out again (_take_turns).
        self._turned: dict[tuple[str, str], int] = collections.Counter()
        # Why tasks wait at a limit, noted in the store a few times a second (GetTask shows it).
        self._wait_notes = WaitNotes(store)
        self._heartbeat_ms = dict(heartbeat_timeouts or {})   # (namespace, task_type) -> ms, of types that heartbeat
        self._limits_observed_at = 0.0   # monotonic: the limit gauges are set a few times a second
        # Labelled children resolved once: a labels() lookup per task showed in profiles.
        self._lateness = {source: metrics.lateness.labels(source) for source in (KAFKA, MYSQL)}
        # Per task type, resolved on a type's first batch: (in-flight gauge, execution histogram).
        self._by_type: dict[tuple[str, str], tuple[Gauge, Histogram]] = {}
        # asyncio's primitives bind to the running loop on first use, not here.
        self._batch_gate = asyncio.Semaphore(params.max_batches_in_flight)
        self._batches: set[asyncio.Task] = set()
        self.dispatched_total = 0
        self._paused_since: float | None = None   # monotonic, while the engine may not act
        self._no_executor_logged: dict[tuple[str, str], float] = {}   # (namespace, type) -> monotonic

    def set_policies(self, limits: Mapping[TypeKey, TypeLimits], fairness: Mapping[TypeKey, FairPolicy],
                     heartbeat_timeouts: Mapping[TypeKey, int]) -> None:
        """New policies (the policies file changed), from the next turn of the loop on: what
        waits at a limit that is gone, or raised, goes as _unpark finds room for it."""
        self._gate.set_limits(limits)
        self._rates.set_limits(limits)
        self._fair.set_policies(fairness)
        self._heartbeat_ms = dict(heartbeat_timeouts)
        self._due.wake()

    async def stop(self) -> None:
        """After the loop is cancelled: wait for the batches in flight."""
        await asyncio.gather(*self._batches, return_exceptions=True)

    async def run(self) -> None:
        """Pop what is due (no more than the executors have room for), hold executor
        capacity for it, and start a batch.

        `_batch_gate` bounds concurrent begin_dispatch transactions only; a batch
        gives it back as soon as its rows are marked dispatched, so slow handlers
        never hold up dispatching. What does not fit executors' capacity goes back
        into the heap and waits for a release (which wakes this loop).
        """
        while True:
            await self._batch_gate.acquire()
            now = self._clock.now_ms()
            blocked = not self._may_act()
            self._note_paused(blocked)
            # No more than the executors can take: under saturation, popping a full batch
            # only to put most of it back cost a fifth of the node's main thread.
            room = self._executors.free_room()
            limit = min(self._params.batch, max(room, _PROBE))
            if self._due.has_parked():
                self._unpark(now)
            popped = [] if blocked else self._due.pop_due(now, limit, room)
            taken = self._reserve(popped, now) if popped else []
            if not taken:
                self._batch_gate.release()
                nxt = self._due.next_eta_ms()
                # Always yield to the loop: while held, or while executors are full,
                # due entries stay in the heap, and a loop that never awaits would
                # starve ownership itself.
                idle_s = self._params.idle_wait_ms / 1000
                frees_at = self._next_limit_change_ms(now) if self._due.has_parked() else None
                if frees_at is not None and (nxt is None or nxt <= now or frees_at < nxt):
                    nxt = frees_at   # a place frees up, or a token comes, then for what waits at a limit
                if blocked or nxt is None or nxt <= now:
                    timeout = idle_s
                else:
                    timeout = min(idle_s, max(0.001, (nxt - now) / 1000))
                await self._due.wait(timeout)
                continue
            self._due.observe()
            batch = asyncio.create_task(self._run_batch(taken, now))
            self._batches.add(batch)
            batch.add_done_callback(self._batches.discard)
            batch.add_done_callback(_log_failure)

    def _note_paused(self, blocked: bool) -> None:
        """Say when dispatch stops and starts again: nothing due is dispatched meanwhile."""
        if blocked and self._paused_since is None:
            self._paused_since = time.monotonic()
            log.warning("dispatch paused: this node holds its slots in doubt, or their store leases were not"
                        " renewed in time; %d tasks held", self._due.held())
        elif not blocked and self._paused_since is not None:
            log.warning("dispatch resumed after %.1f s paused", time.monotonic() - self._paused_since)
            self._paused_since = None

    def _note_no_executor(self, namespace: str, task_type: str) -> None:
        """A due task whose type no live executor announces waits: say so, once a minute a type."""
        now = time.monotonic()
        if now - self._no_executor_logged.get((namespace, task_type), -_NO_EXECUTOR_LOG_S) >= _NO_EXECUTOR_LOG_S:
            self._no_executor_logged[(namespace, task_type)] = now
            log.warning("no live executor announces %s/%s; its due tasks wait (tried again every %d ms): %s",
                        namespace, task_type, self._params.no_executor_retry_ms,
                        self._executors.describe(namespace, task_type))

    def _next_limit_change_ms(self, now_ms: int) -> int | None:
        """When a parked task may go without an outcome freeing a place: the earliest ghost
        ends, or a rate's next token comes."""
        at = self._gate.next_ghost_expiry_ms()
        for (namespace, task_type, limit) in self._due.parked():
            if limit == RATE or limit.startswith(RATE_KEY_PREFIX):
                limit_key = limit[len(RATE_KEY_PREFIX):] if limit != RATE else None
                token_at = self._rates.next_token_ms((namespace, task_type), limit_key, now_ms)
                at = token_at if at is None else min(at, token_at)
        return at

    def _unpark(self, now_ms: int) -> None:
        """Back to the ready stage, for each limit tasks wait on, as many as it has places free
        now (released by outcomes, or ghosts that ran out). A task unparked for a place another
        takes first is parked again: places are checked when taken. The type's own room is
        shared by its keys and its retry cap: what one of them moves, the next cannot."""
        type_rooms: dict[tuple[str, str], int] = {}
        fair_waiting: dict[tuple[str, str], dict[str, int]] = {}
        for (namespace, task_type, limit), parked in self._due.parked().items():
            key = (namespace, task_type)
            if limit.startswith(FAIR_PREFIX):   # the flows of a fair type take turns, below
                fair_waiting.setdefault(key, {})[limit[len(FAIR_PREFIX):]] = parked
                continue
            if self._gate.limits_of(key) is None:   # the limit is gone: everything may go
                self._due.unpark((namespace, task_type, limit), parked)
                continue
            type_room = type_rooms.get(key)
            if type_room is None:
                type_room = self._gate.room(key, now_ms)
            room = type_room
            if limit == RETRY_CAP:
                room = min(room, self._gate.retry_room(key, now_ms))
            elif limit.startswith(KEY_PREFIX):
                room = min(room, self._gate.key_room(key, limit[len(KEY_PREFIX):], now_ms))
            elif limit == RATE:
                room = min(room, self._rates.room(key, None, now_ms))
            elif limit.startswith(RATE_KEY_PREFIX):
                limit_key = limit[len(RATE_KEY_PREFIX):]
                room = min(room, self._gate.key_room(key, limit_key, now_ms), self._rates.room(key, limit_key, now_ms))
            type_rooms[key] = type_room - self._due.unpark((namespace, task_type, limit), room)
        for key, waiting in fair_waiting.items():
            self._take_turns(key, waiting, type_rooms.get(key), now_ms)
        self._observe_limits()

    def _take_turns(self, key: tuple[str, str], waiting: dict[str, int], type_room: int | None, now_ms: int) -> None:
        """The flows of a fair type whose turn it is, as many as its executors (and its
        concurrency limit) have room for, back to the ready stage."""
        if not self._fair.fair(key):   # fairness is gone: everything may go
            for flow, n in waiting.items():
                self._due.unpark((*key, FAIR_PREFIX + flow), n, _paid(1.0))
            return
        room = self._executors.room_beyond(*key, self._params.high_reserve_share) - self._turned[key]
        room = min(room, type_room if type_room is not None else self._gate.room(key, now_ms))
        for flow, n in self._fair.pick(key, waiting, room).items():
            self._turned[key] += self._due.unpark((*key, FAIR_PREFIX + flow), n,
                                                  _paid(self._fair.estimate(key, flow)))

    def _observe_limits(self) -> None:
        """The limit gauges, a few times a second at most (per key: summed over the keys)."""
        now = time.monotonic()
        if now - self._limits_observed_at < 0.25:
            return
        self._limits_observed_at = now
        parked: dict[tuple[str, str, str], int] = collections.Counter()
        for (namespace, task_type, limit), n in self._due.parked().items():
            parked[(namespace, task_type, metric_limit(limit))] += n
        held = self._gate.held()
        for key in set(self._gate.limited_types()) | self._fair.types():
            for limit in (CONCURRENCY, RETRY_CAP, PER_KEY, RATE, RATE_PER_KEY, FAIR_SHARE):
                self._metrics.limit_waiting.labels(*key, limit).set(parked.get((*key, limit), 0))
                self._metrics.limit_held.labels(*key, limit).set(held.get((*key, limit), 0))

    def _admit(self, key: tuple[str, str], group: list[Due], now_ms: int) -> list[Due]:
        """What of a type's group may start under its limits; the rest is parked, on the limit
        it waits for: the type's, its retry cap (a retry behind no first attempt) or its key's
        (one tenant's tasks behind no other tenant's)."""
        limits = self._gate.limits_of(key)
        if limits is None:
            return group
        room = self._gate.room(key, now_ms)
        retry_room = self._gate.retry_room(key, now_ms)
        capped = limits.max_retrying is not None
        keyed = limits.max_running_per_key is not None
        rated = self._rates.rated(key)
        needs_key = keyed or limits.rate_per_key is not None
        key_rooms: dict[str, int] = {}
        admitted: list[Due] = []
        waiting: dict[str, list[Due]] = collections.defaultdict(list)
        for d in group:
            if room <= 0:
                waiting[CONCURRENCY].append(d)
                continue
            if capped and d.attempt >= 2 and retry_room <= 0:
                waiting[RETRY_CAP].append(d)
                continue
            limit_key = (self._gate.key_of(key, d) or "") if needs_key else None
            left = 0
            if keyed:
                assert limit_key is not None
                found = key_rooms.get(limit_key)
                left = found if found is not None else self._gate.key_room(key, limit_key, now_ms)
                if left <= 0:
                    waiting[KEY_PREFIX + limit_key].append(d)
                    continue
            if rated:
                refused = self._rates.try_start(key, limit_key, now_ms)
                if refused is not None:
                    waiting[RATE if refused == RATE else RATE_KEY_PREFIX + (limit_key or "")].append(d)
                    continue
            if keyed:
                key_rooms[limit_key] = left - 1   # type: ignore[index]  # set with keyed
            room -= 1
            if capped and d.attempt >= 2:
                retry_room -= 1
            admitted.append(d)
        for limit, over in waiting.items():
            self._due.park((*key, limit), over)
            self._metrics.limit_parked.labels(*key, metric_limit(limit)).inc(len(over))
            self._wait_notes.note(self._gate.limits_of(key), limit, over)
        self._gate.take(key, admitted)
        self._observe_limits()
        return admitted

    def _wait_turn(self, key: tuple[str, str], group: list[Due]) -> list[Due]:
        """Of a fair type's due tasks, those whose flow's turn came go on; the others wait in
        their flow's queue (the loop comes round at once to give out turns)."""
        by_flow: dict[str, list[Due]] = collections.defaultdict(list)
        going = []
        for d in group:
            if d.fair_turn:
                if d.fair_turn > 0:   # first time past: no longer on its way (see _turned)
                    d.fair_turn = -d.fair_turn
                    self._turned[key] -= 1
                going.append(d)
            else:
                by_flow[self._fair.flow_of(key, d)].append(d)
        for flow, dues in by_flow.items():
            self._due.park((*key, FAIR_PREFIX + flow), dues)
        if by_flow:
            self._metrics.limit_parked.labels(*key, FAIR_SHARE).inc(sum(len(dues) for dues in by_flow.values()))
            self._due.wake()
        return going

    def _keep_reserve(self, namespace: str, task_type: str, group: list[Due]) -> list[Due]:
        """High tasks first and all of them; of the others, no more than fit without taking
        the share of the executors' capacity kept for high ones. The rest go back, due."""
        highs = [d for d in group if d.priority == HIGH]
        others = [d for d in group if d.priority != HIGH]
        fits = self._executors.room_beyond(namespace, task_type, self._params.high_reserve_share)
        kept_out = others[fits:]
        self._gate.release(kept_out)   # they take their place again when popped again
        self._rates.give_back((namespace, task_type), kept_out)
        for d in kept_out:
            self._due.put_back(d)
        return highs + others[:fits]

    def _release(self, dues: list[Due]) -> None:
        """The limit places these attempts held (once each); the loop wakes to unpark."""
        if self._gate.release(dues):
            self._due.wake()

    def _reserve(self, items: list[Due], now_ms: int) -> list[tuple[Due, Reservation | None]]:
        """Keep the items executors can take now, each group with its reservation;
        postpone what has no executor, park what is over its type's concurrency limit,
        put back what does not fit."""
        by_type: dict[tuple[str, str], list[Due]] = collections.defaultdict(list)
        served: dict[tuple[str, str], bool] = {}   # has_executor, once per type and batch
        for d in items:
            if not self._slots.is_current(d.slot, d.epoch):
                continue  # the slot moved on; its new owner has this task
            task = d.task
            key = (task.namespace, task.task_type)
            has = served.get(key)
            if has is None:
                has = served[key] = self._executors.has_executor(*key)
            if not has:
                self._metrics.no_executor.labels(key[0]).inc()
                self._note_no_executor(*key)
                d.due_ms = now_ms + self._params.no_executor_retry_ms  # postponed, no attempt spent
                self._due.push(d)
                continue
            by_type[key].append(d)
        taken: list[tuple[Due, Reservation | None]] = []
        for (namespace, task_type), group in by_type.items():
            if self._fair.fair((namespace, task_type)):
                group = self._wait_turn((namespace, task_type), group)
            group = self._admit((namespace, task_type), group, now_ms)
            if self._params.high_reserve_share and group:
                group = self._keep_reserve(namespace, task_type, group)
            if not group:
                continue
            reservation = self._executors.reserve(namespace, task_type, len(group))
            fits, rest = group[:reservation.total], group[reservation.total:]
            self._gate.release(rest)   # they take their place again when popped again
            self._rates.give_back((namespace, task_type), rest)
            for d in rest:  # still due: back in the queue until capacity frees up
                self._due.put_back(d)
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
        self._slots.begin(ready)
        try:
            try:
                dispatched, stale = await asyncio.to_thread(self._store.begin_dispatch, claims, epochs,
                                                   self._params.node_id, ms_to_datetime(now_ms))
            except Exception:
                log.exception("begin_dispatch failed; tasks go back to the heap")
                self._release(ready)   # before they go back: popped again, they take a place again
                for d in ready:
                    d.due_ms = now_ms + self._params.store_retry_ms
                    self._due.push(d)  # not settled: they have not run
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
            lateness: dict[str, list[float]] = {KAFKA: [], MYSQL: []}
            for d in ready:
                # The store dispatched each task at most once, as its highest attempt
                # here, so that Due (the first of them) is the one delivered.
                if d.task_id in dispatched and d.attempt == top[d.task_id] \
                        and d.task_id not in delivered:
                    delivered.add(d.task_id)
                    go[(d.task.namespace, d.task.task_type)].append(d)
                    lateness[d.source].append(max(0, now_ms - d.due_ms) / 1000)
                elif d.slot not in stale and not requeued:
                    self._metrics.skipped.inc()
                    self._completer.settle(d)
            for source, values in lateness.items():
                observe_values(self._lateness[source], values)
            self._metrics.dispatched.inc(len(dispatched))
            self.dispatched_total += len(dispatched)
            # Every reservation is run, even with nothing to send: that releases it.
            await asyncio.gather(*(self._deliver(go.get(key, []), res) for key, res in reservations.items()))
        finally:
            # Every attempt of the batch is over here (outcome recorded, given back, or never
            # dispatched): its limit place, if it held one, is free.
            self._release(ready)
            self._slots.end(ready)

    async def _deliver(self, items: list[Due], reservation: Reservation) -> None:
        deliveries = []
        for d in items:
            # The Due's task is its own (decoded from its message or row), and the
            # Delivery copies it: set the attempt's retry_count on it, with one copy.
            d.task.retry_count = d.attempt - 1
            deliveries.append(pb.Delivery(task=d.task, attempt=d.attempt, epoch=d.epoch, timeout_ms=d.task.timeout_ms))
        if self._heartbeat_ms and items:
            await self._with_heartbeats(reservation.key, items, deliveries)
        if self._parent_ends is not None and any(d.task.HasField("graph") for d in items):
            await with_parents(deliveries, self._parent_ends)
        if not items:
            await self._executors.run(reservation, [])  # gives the capacity back
            return
        in_flight, duration = self._type_metrics(reservation.key)
        self._metrics.in_flight.inc(len(items))
        in_flight.inc(len(items))
        limited = items[0].limit_held
        try:
            result = await self._executors.run(reservation, deliveries, self._releaser(items) if limited else None)
        finally:
            self._metrics.in_flight.dec(len(items))
            in_flight.dec(len(items))
            if limited:   # every handler of the call has ended: free the places of this type now,
                self._release(items)   # not when the other types of the batch are done
        # One call carries the batch, dispatched at one instant (_run_batch): its outcomes
        # arrive together, so the batch is one observation, counted once per task run.
        observe_many(duration, (self._clock.now_ms() - items[0].dispatched_ms) / 1000,
                     len(items) - len(result.not_sent))
        if self._fair.fair(reservation.key):
            self._charge(reservation.key, items, result.outcomes)
        if self._tracing is not None:
            self._trace_dispatch(items, result.outcomes)
        if result.not_sent:
            unsent = {(d.task.task_id, d.attempt) for d in result.not_sent}
            await self._completer.give_back([d for d in items if (d.task_id, d.attempt) in unsent])
            items = [d for d in items if (d.task_id, d.attempt) not in unsent]
        if items:
            await self._completer.finish(items, result.outcomes)

    def _trace_dispatch(self, items: list[Due], outcomes: list[pb.Outcome]) -> None:
        """`taskring.dispatch` for each traced attempt: from its dispatch until its outcome came."""
        assert self._tracing is not None
        kinds = {(o.task_id, o.attempt): o.kind for o in outcomes}
        end_ms = self._clock.now_ms()
        for d in items:
            trace_id = d.task.trace_id
            if trace_id and is_traceparent(trace_id):
                kind = kinds.get((d.task_id, d.attempt))
                self._tracing.span("taskring.dispatch", trace_id, d.dispatched_ms, end_ms, {
                    "taskring.task_id": d.task_id, "taskring.attempt": d.attempt, "taskring.node": self._params.node_id,
                    "taskring.outcome": pb.OutcomeKind.Name(kind) if kind is not None else "not sent"})

    async def _with_heartbeats(self, key: TypeKey, items: list[Due], deliveries: list[pb.Delivery]) -> None:
        """A type that heartbeats: each delivery carries its heartbeat timeout, and a retry the
        last details its earlier attempts sent (to resume from), read from the store."""
        timeout_ms = self._heartbeat_ms.get(key)
        if timeout_ms is None:
            return
        retries = [d.task_id for d in items if d.attempt > 1]
        details: dict[str, str] = {}
        if retries:
            try:
                details = await asyncio.to_thread(self._store.heartbeat_details, retries)
            except Exception:   # the attempt runs without them rather than not at all
                log.exception("the last heartbeat details of %d retries could not be read", len(retries))
        for delivery in deliveries:
            delivery.heartbeat_timeout_ms = timeout_ms
            found = details.get(delivery.task.task_id)
            if found is not None:
                delivery.heartbeat_details_json = found

    def _charge(self, key: tuple[str, str], items: list[Due], outcomes: list[pb.Outcome]) -> None:
        """Each flow pays for the executor time its attempts took (fair_share.py)."""
        by_attempt = {(d.task_id, d.attempt): d for d in items}
        for o in outcomes:
            d = by_attempt.get((o.task_id, o.attempt))
            if d is not None and d.fair_flow is not None and d.fair_turn:
                ran_ms = max(0, o.finished_at_ms - o.started_at_ms) if o.started_at_ms else 0
                self._fair.charge(key, d.fair_flow, abs(d.fair_turn), ran_ms)

    def _releaser(self, items: list[Due]) -> Callable[[list[pb.Outcome]], None]:
        """For a limited type: free each attempt's place as its outcome comes over the Work
        stream (a frame's at once), not when the slowest of its call is over (the handler has
        ended either way; the call's end releases whatever is left, once)."""
        by_attempt = {(d.task_id, d.attempt): d for d in items}

        def release(outcomes: list[pb.Outcome]) -> None:
            get = by_attempt.get
            ended = [d for d in (get((o.task_id, o.attempt)) for o in outcomes) if d is not None]
            if ended:
                self._release(ended)
        return release

    def _type_metrics(self, key: tuple[str, str]) -> tuple[Gauge, Histogram]:
        """A task type's children: one dict lookup per batch. The series stay bounded,
        since only types with a registered executor get this far (_reserve)."""
        found = self._by_type.get(key)
        if found is None:
            found = self._by_type[key] = (self._metrics.in_flight_by_type.labels(*key),
                                          self._metrics.execution_duration.labels(*key))
        return found
