"""The graph watch: the home owner of each graph looks at it every `check_ms`.

Every task of a graph ends by construction (store/graphs.py); what the watch is for is
seeing it when that is not so, and finishing what a crash left:

- a graph whose tasks have all ended is marked finished (it is not looked at again);
- a waiting task whose parent has ended but was never counted is a release lost (a note
  gone with a defect): the watch applies those ends again (the apply is idempotent) and
  counts them in taskring_graph_reconciled;
- a graph with tasks waiting, none running, none due and no change for `stuck_after_ms` is
  stuck: logged, and counted in taskring_graphs_stuck{namespace}, which the alert
  TaskringGraphStuck reads (deploy/prometheus/README.md has its runbook).

Its gauges are this node's: the open and stuck graphs of the slots it owns, and the age of
the oldest unapplied note of those slots (TaskringGraphReleasesBehind).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging

from dispatcher.base.clock import Clock
from dispatcher.base.config import positive
from dispatcher.base.loop_task import LoopWatch, PeriodicJob
from dispatcher.base.metrics import NodeMetrics
from dispatcher.engine.graph_relay import GraphRelay
from dispatcher.engine.slot_table import OwnedSlots
from dispatcher.store.interface_graphs import GraphStoreProtocol

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class GraphWatchParams:
    check_ms: int = 30_000
    stuck_after_ms: int = 600_000
    batch: int = 200
    """Graphs looked at per pass at most (least recently looked at first)."""

    def __post_init__(self) -> None:
        positive(self, "check_ms", "stuck_after_ms", "batch")


class GraphWatch:
    def __init__(self, *, params: GraphWatchParams, graphs: GraphStoreProtocol, relay: GraphRelay, clock: Clock,
                 slots: OwnedSlots, metrics: NodeMetrics, loops: LoopWatch | None = None):
        self._params = params
        self._graphs = graphs
        self._relay = relay
        self._clock = clock
        self._slots = slots
        self._metrics = metrics
        self._shown: set[str] = set()   # the namespaces whose gauges this node has set
        self._job = PeriodicJob("graph watch", interval_s=params.check_ms / 1000, step=self.check,
                                may_run=lambda: not slots.held, watch=loops)

    def start(self) -> None:
        self._job.start()

    async def stop(self) -> None:
        await self._job.stop()

    async def check(self) -> float | None:
        owned = sorted(self._slots.owned())
        if owned:
            graphs = await asyncio.to_thread(self._graphs.open_graphs, owned, self._params.batch)
            for namespace, graph_id in graphs:
                found = await asyncio.to_thread(self._graphs.check_graph, namespace, graph_id,
                                                self._params.stuck_after_ms, self._clock.now())
                if found.lost:
                    log.warning("graph %s/%s: %d ended parents were never counted by the tasks waiting for them;"
                                " applying them now", namespace, graph_id, len(found.lost))
                    await self._relay.reconcile(list(found.lost))
                if found.stuck:
                    log.warning("graph %s/%s is stuck: tasks wait, none runs, none is due, nothing changed for %d s"
                                " (taskring graph show %s %s)", namespace, graph_id,
                                self._params.stuck_after_ms // 1000, namespace, graph_id)
        counts = await asyncio.to_thread(self._graphs.open_counts, owned, self._clock.now()) if owned else None
        self._show(counts.open if counts else {}, counts.stuck if counts else {},
                   counts.oldest_note_s if counts else 0.0)
        return None

    def _show(self, open_: dict[str, int], stuck: dict[str, int], oldest_note_s: float) -> None:
        for namespace in self._shown | set(open_):
            self._metrics.graphs_open.labels(namespace).set(open_.get(namespace, 0))
            self._metrics.graphs_stuck.labels(namespace).set(stuck.get(namespace, 0))
        self._shown |= set(open_)
        self._metrics.graph_notes_oldest.set(oldest_note_s)
