"""The graph relay: what ends of tasks of a graph do to the tasks that depend on them.

An end of a task with dependents leaves a note in the store, in the transaction of the end
(store/graph_notes.py). The relay applies notes (store/graphs.py `apply_ends`: count the end
on each dependent's edge, release, skip or cancel the dependents whose join rule decides) and
produces the Kafka messages of the tasks released to the Kafka path:

- at once, for the ends this node's completer has just recorded (`ended`), and for the
  dependents an apply skipped or cancelled in turn (a skip travels down the graph);
- every `sweep_interval_ms`, for the notes of the slots this node owns that are older than
  `note_grace_ms`: the notes of a node that died (or failed) between an end and its apply.
  An apply is idempotent, so a note applied twice (the grace is short) does nothing twice.

A graph's "graph" note (its rows all committed) is applied the same way: by the API node
that took SubmitGraph at once, by the home slot's owner after a crash.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable

from dispatcher.base.clock import Clock, datetime_to_ms, ms_to_datetime
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopTask, LoopWatch, PeriodicJob
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.slot_table import OwnedSlots
from dispatcher.log.codec import queued_message_of_envelope
from dispatcher.log.interface import LogProducer
from dispatcher.store import records as r
from dispatcher.store.graph_notes import GRAPH_NOTE, REOPEN_NOTE, TASK_NOTE
from dispatcher.store.interface import TaskStoreProtocol
from dispatcher.store.interface_graphs import GraphStoreProtocol, Settled

log = logging.getLogger(__name__)

_REOPENED = "a task it depends on was skipped by an operator or replayed"
COALESCE_S = 0.005
"""How long the relay waits for more ends before applying a few."""
COALESCE_ENDS = 200
"""Ends enough to apply at once."""


@dataclasses.dataclass(frozen=True, slots=True)
class GraphRelayParams:
    node_id: str
    topic_for: Callable[[int], str]
    sweep_interval_ms: int = 2000
    note_grace_ms: int = 3000
    """A note older than this was not applied by the node that wrote it."""
    sweep_batch: int = 500

    def __post_init__(self) -> None:
        positive(self, "sweep_interval_ms", "note_grace_ms", "sweep_batch")


class GraphRelay:
    def __init__(self, *, params: GraphRelayParams, graphs: GraphStoreProtocol, store: TaskStoreProtocol,
                 producer: LogProducer, clock: Clock, slots: OwnedSlots, metrics: NodeMetrics,
                 loops: LoopWatch | None = None):
        self._params = params
        self._graphs = graphs
        self._store = store
        self._producer = producer
        self._clock = clock
        self._slots = slots
        self._settled = {name: metrics.graph_settled.labels(name) for name in ("released", "skipped", "cancelled")}
        self._reconciled = metrics.graph_reconciled
        self._queue: list[tuple[int, str]] = []
        self._reopened: list[tuple[int, str]] = []
        self._wake = asyncio.Event()
        self._worker = LoopTask("graph relay", self._run, loops)
        self._sweep = PeriodicJob("graph sweep", interval_s=params.sweep_interval_ms / 1000, step=self.sweep,
                                  may_run=lambda: not slots.held, watch=loops)

    def start(self) -> None:
        self._worker.start()
        self._sweep.start()

    async def stop(self) -> None:
        """What is still queued is left to the notes: the slots' next owner applies them."""
        await self._sweep.stop()
        await self._worker.stop()

    def ended(self, ends: list[tuple[int, str]]) -> None:
        """Tasks with dependents whose ends this node has just recorded ((slot, task_id))."""
        if ends:
            self._queue += ends
            self._wake.set()

    def reopened(self, tasks: list[tuple[int, str]]) -> None:
        """Tasks with dependents whose end an operator has just changed ((slot, task_id)); on the
        event loop (call_soon_threadsafe from another thread)."""
        if tasks:
            self._reopened += tasks
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            # A fan-in's parents end a few at a time, each completer batch handing its ends over:
            # a few ms more make one apply (one transaction on the child's shard) of many.
            if len(self._queue) + len(self._reopened) < COALESCE_ENDS:
                await asyncio.sleep(COALESCE_S)
            self._wake.clear()
            (ends, self._queue), (reopened, self._reopened) = (self._queue, []), (self._reopened, [])
            try:
                await self._apply(ends, reopened)
            except Exception:
                # Their notes stay: the sweep applies them after the grace.
                log.exception("applying the ends of %d tasks of graphs failed; the sweep will retry",
                              len(ends) + len(reopened))

    async def _apply(self, ends: list[tuple[int, str]], reopened: list[tuple[int, str]] | None = None) -> None:
        """Apply these ends and re-opened ends, and those they cause in turn, then forget their notes."""
        reopened = list(reopened or [])
        while ends or reopened:
            caused_ends: list[tuple[int, str]] = []
            caused_reopened: list[tuple[int, str]] = []
            for kind, batch in ((TASK_NOTE, ends), (REOPEN_NOTE, reopened)):
                if not batch:
                    continue
                before = self._clock.now()
                ids = [tid for _, tid in batch]
                if kind == TASK_NOTE:
                    settled = await asyncio.to_thread(self._graphs.apply_ends, ids, self._params.node_id, before)
                else:
                    settled = await asyncio.to_thread(self._graphs.apply_reopened, ids, _REOPENED,
                                                      self._params.node_id, before)
                await self.publish(settled)
                await asyncio.to_thread(self._graphs.forget_ends, batch, before, kind)
                caused_ends += settled.ended
                caused_reopened += settled.reopened
            ends, reopened = caused_ends, caused_reopened

    async def reconcile(self, parent_ids: list[str]) -> None:
        """Apply again the ends of parents that the tasks waiting for them never counted (the
        graph watch found them); counted in taskring_graph_reconciled."""
        self._reconciled.inc(len(parent_ids))
        await self.count_ends(parent_ids)

    async def count_ends(self, parent_ids: list[str]) -> None:
        """Count the ends these parents may have had on edges that did not exist when their notes
        were applied (tasks added to a graph), and what follows; no note is forgotten here, as one
        may belong to an end that commits while this runs."""
        settled = await asyncio.to_thread(self._graphs.apply_ends, parent_ids, self._params.node_id,
                                          self._clock.now())
        await self.publish(settled)
        if settled.ended:
            await self._apply(list(settled.ended))

    async def release_graph(self, home_slot: int, namespace: str, graph_id: str) -> Settled:
        """Start a complete graph: release its roots, then forget its note."""
        settled = await asyncio.to_thread(self._graphs.release_roots, namespace, graph_id, self._params.node_id,
                                          self._clock.now())
        await self.publish(settled)
        await asyncio.to_thread(self._graphs.forget_graph, home_slot, namespace, graph_id)
        return settled

    async def publish(self, settled: Settled) -> None:
        """Count what an apply did and produce the messages of the tasks it released to the
        Kafka path (one Kafka refused moves to the MySQL path; one never produced is swept
        there by its owner, as for a submit)."""
        for name, n in (("released", len(settled.released)), ("skipped", settled.skipped),
                        ("cancelled", settled.cancelled)):
            if n:
                self._settled[name].inc(n)
        kafka = [t for t in settled.released if t.status == r.ENQUEUED]
        if not kafka:
            return
        messages = [queued_message_of_envelope(self._params.topic_for(t.priority), t.task_id, t.envelope, t.slot, 1,
                                               datetime_to_ms(t.trigger_at)) for t in kafka]
        errors = await self._producer.send(messages)
        failed = [m.key.decode() for m, e in zip(messages, errors) if e is not None]
        if failed:
            log.warning("kafka refused %d released tasks of graphs; they take the MySQL path", len(failed))
            await asyncio.to_thread(self._store.reroute_to_mysql, failed, self._clock.now())

    async def sweep(self) -> float | None:
        """Apply the notes of the owned slots that their writers did not (one batch a pass;
        back sooner while there are more)."""
        owned = sorted(self._slots.owned())
        if not owned:
            return None
        older_than = ms_to_datetime(self._clock.now_ms() - self._params.note_grace_ms)
        notes = await asyncio.to_thread(self._graphs.notes, owned, older_than, self._params.sweep_batch)
        if not notes:
            return None
        # A replay's note is the sweep's to apply (the dead letters' service has no relay); any
        # other note was left by a node that stopped or failed between an end and its apply.
        left = sum(1 for n in notes if n.kind != REOPEN_NOTE)
        if left:
            self._reconciled.inc(left)
            log.warning("applying %d graph notes left unapplied (a node stopped between an end and its apply)", left)
        tasks = [(n.slot, n.ref) for n in notes if n.kind == TASK_NOTE]
        reopened = [(n.slot, n.ref) for n in notes if n.kind == REOPEN_NOTE]
        if tasks or reopened:
            await self._apply(tasks, reopened)
        for n in notes:
            if n.kind == GRAPH_NOTE:
                namespace, _, graph_id = n.ref.partition("/")
                await self.release_graph(n.slot, namespace, graph_id)
        await asyncio.to_thread(self._graphs.delete_notes, notes)
        return 0.0 if len(notes) >= self._params.sweep_batch else None
