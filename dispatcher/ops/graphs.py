"""Graphs as an operator sees them (the console and `taskring graph`): shown with each task's
state and what it waits for; a step skipped by hand so that what follows runs ("skip this
step and run what follows"); a graph cancelled. Every change needs a reason and is audited
(graph.skip in the transaction of the skip; graph.cancel with who and what it cancelled).
A failed branch is replayed as any dead letter is (`taskring dlq replay`): the tasks it
skipped wait for it again.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Container

from dispatcher.api.graphs import graph_states
from dispatcher.base.clock import Clock, rfc3339
from dispatcher.base.errors import InvalidArgument
from dispatcher.ops.dead_letters import Actor
from dispatcher.store import records as r
from dispatcher.store.interface_audit import AuditProtocol, AuditRecord
from dispatcher.store.interface_graphs import GraphStoreProtocol, GraphView, NodeView

Reopened = Callable[[list[tuple[int, str]]], None]
"""Hand a skipped task's note to the graph relay at once ((slot, task_id)); thread-safe."""


class GraphOps:
    def __init__(self, *, graphs: GraphStoreProtocol, audit: AuditProtocol, node: str, clock: Clock,
                 reopened: Reopened, heartbeat_types: Callable[[], Container[tuple[str, str]]]):
        self._graphs = graphs
        self._audit = audit
        self._node = node
        self._clock = clock
        self._reopened = reopened
        self._heartbeat_types = heartbeat_types

    def show(self, namespace: str, graph_id: str) -> dict:
        view = self._graphs.graph(namespace, graph_id)
        return graph_dict(view, self._graphs.results([n.task_id for n in view.nodes]), self._clock.now())

    def skip(self, namespace: str, graph_id: str, key: str, actor: Actor) -> dict:
        """Skip the step `key` (dead-lettered or waiting): what depends on it goes on as if it
        had succeeded."""
        node = _node(self._graphs.graph(namespace, graph_id), key)
        now = self._clock.now()

        def record(before: str) -> AuditRecord:
            return AuditRecord(at=now, actor=actor.identity.name, address=actor.address, action="graph.skip",
                               target=f"task:{node.task_id}", namespace=namespace, reason=actor.reason,
                               before={"graph": graph_id, "key": key, "status": before},
                               after={"graph": graph_id, "key": key, "status": str(r.SKIPPED)})
        slot, before = self._graphs.skip_task(node.task_id, actor.reason, record, self._node, now)
        self._reopened([(slot, node.task_id)])
        return {"graph_id": graph_id, "key": key, "task_id": node.task_id, "before": before, "state": "skipped"}

    def cancel(self, namespace: str, graph_id: str, mode: str, actor: Actor) -> dict:
        if mode not in ("graceful", "immediate"):
            raise InvalidArgument("mode", f"must be graceful or immediate, got {mode!r}")
        now = self._clock.now()
        cancelled, running = self._graphs.cancel_graph(namespace, graph_id, mode, self._heartbeat_types(),
                                                       actor.reason, self._node, now)
        self._audit.append(AuditRecord(at=now, actor=actor.identity.name, address=actor.address,
                                       action="graph.cancel", target=f"graph:{namespace}/{graph_id}",
                                       namespace=namespace, reason=actor.reason,
                                       after={"mode": mode, "cancelled": cancelled, "running": running}))
        return {"graph_id": graph_id, "cancelled": cancelled, "running": running, "mode": mode}


def _node(view: GraphView, key: str) -> NodeView:
    for n in view.nodes:
        if n.key == key:
            return n
    raise InvalidArgument("key", f"{key!r} is no task of graph {view.namespace}/{view.graph_id}")


def graph_dict(view: GraphView, results: dict[str, str], now: dt.datetime) -> dict:
    """The graph as JSON for people and scripts: each task's state, edges, what it waits for,
    why it was skipped or cancelled, and its kept result."""
    states, counts, state = graph_states(view, now)
    nodes = []
    for n in view.nodes:
        open_ = [e.parent_key for e in n.edges if e.outcome is None]
        nodes.append({"key": n.key, "task_id": n.task_id, "state": states[n.key].value, "attempts": n.attempts,
                      "slot": n.slot, "join": n.join_rule.value + (f"({n.join_k})" if n.join_k else ""),
                      "depends_on": [{"parent_key": e.parent_key, "on_failure": e.on_failure.value,
                                      "outcome": e.outcome} for e in n.edges],
                      "waiting_for": open_ if n.status == r.WAITING else [],
                      "reason": n.reason or n.last_error, "result_json": results.get(n.task_id)})
    return {"namespace": view.namespace, "graph_id": view.graph_id, "created_at": rfc3339(view.created_at),
            "state": state, "counts": counts, "nodes": nodes}
