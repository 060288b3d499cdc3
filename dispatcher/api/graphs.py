"""The GraphService: a graph of tasks submitted in one call, and read back with each task's
state, edges and what it waits for (docs/graphs.md).

SubmitGraph validates the whole request (graph_validation.py) before anything is written,
writes every task `waiting` (store/graphs.py: the graph is complete only once every shard's
rows are), then releases the roots through the graph relay (engine/graph_relay.py), which
also releases the rest as their parents end. A retried SubmitGraph with the same graph id and
the same tasks answers the graph as it stands (`duplicate`), after completing it if an earlier
call stopped halfway; the same id with other tasks is refused (ALREADY_EXISTS).
"""
from __future__ import annotations

import asyncio
import collections
import datetime as dt
from collections.abc import Awaitable, Callable

from cluster.slots import slot_of
from dispatcher.api.admission import Admission
from dispatcher.api.graph_validation import (
    ON_FAILURE_TO_PB,
    RULE_TO_PB,
    ValidGraph,
    ValidNode,
    validate_added,
    validate_graph,
)
from dispatcher.api.service import ApiParams, _guarded, api_state, status_code
from dispatcher.api.validation import NAMESPACE_RE, Limits
from dispatcher.auth import tokens as calls
from dispatcher.auth.grpc_auth import Authorizer
from dispatcher.base.clock import Clock, ms_to_aware, ms_to_datetime
from dispatcher.base.errors import InvalidArgument, NotSupported, TaskringError, bounded, quote
from dispatcher.engine.ready import NORMAL, priority_class
from dispatcher.store import records as r
from dispatcher.store.interface_graphs import (
    GraphStoreProtocol,
    GraphView,
    NewEdge,
    NewGraph,
    NewNode,
    NodeView,
    Settled,
)
from taskring.task import TaskState
from taskring.wire import STATE_TO_PB, pb, pb_grpc

_CANCEL_MODES = {pb.CANCEL_MODE_UNSPECIFIED: "graceful", pb.CANCEL_MODE_GRACEFUL: "graceful",
                 pb.CANCEL_MODE_IMMEDIATE: "immediate"}

ReleaseGraph = Callable[[int, str, str], Awaitable[Settled]]
"""(home slot, namespace, graph id): release a complete graph's roots (GraphRelay.release_graph)."""


def home_slot(namespace: str, graph_id: str, slot_count: int) -> int:
    """The slot whose shard keeps the graph's row and whose owner finishes its start after a crash."""
    return slot_of(namespace, graph_id, slot_count)


class GraphApi(pb_grpc.GraphServiceServicer):
    def __init__(self, *, params: ApiParams, graphs: GraphStoreProtocol | None, release: ReleaseGraph, limits: Limits,
                 clock: Clock | None = None, admission: Admission | None = None, auth: Authorizer | None = None,
                 count_ends: Callable[[list[str]], Awaitable[None]] | None = None):
        self._params = params
        self._graphs = graphs
        self._release = release
        self._count_ends = count_ends   # GraphRelay.count_ends: of the parents of added tasks
        self._limits = limits
        self._clock = clock or Clock()
        self._admission = admission
        self._auth = auth or Authorizer(None)

    def set_limits(self, limits: Limits) -> None:
        self._limits = limits

    @property
    def _store(self) -> GraphStoreProtocol:
        if self._graphs is None:
            raise NotSupported("graphs need the MariaDB store; this node keeps its tasks in memory"
                               " (taskring dev): run graphs against the local stack")
        return self._graphs

    async def _abort(self, exc: TaskringError, context) -> None:
        await context.abort(status_code(exc), bounded(str(exc)))

    @_guarded
    async def SubmitGraph(self, request: pb.SubmitGraphRequest, context) -> pb.SubmitGraphResponse:
        token = self._auth.token(context, calls.SUBMIT)
        store = self._store   # before validating: a node without graphs refuses any graph
        if not NAMESPACE_RE.fullmatch(request.namespace):
            raise InvalidArgument("namespace", f"must be 1 to 64 characters of [a-z0-9._-], got"
                                               f" {quote(request.namespace)}")
        self._auth.check_namespaces(token, calls.SUBMIT, (request.namespace,))
        if self._admission is not None:   # judged by its lowest class, as a batch is
            self._admission.check(min((priority_class(t.task.priority) for t in request.tasks), default=NORMAL))
        now_ms = self._clock.now_ms()
        valid = validate_graph(request, now=ms_to_aware(now_ms), limits=self._limits)
        home = home_slot(valid.namespace, valid.graph_id, self._params.slot_count)
        graph = self._new_graph(valid, home, now_ms)
        written = await asyncio.to_thread(store.insert_graph, graph, self._params.node_id,
                                          ms_to_datetime(now_ms))
        if written:   # what it is now is known without reading it back: its roots queued, the rest waiting
            released = {t.task_id for t in (await self._release(home, valid.namespace, valid.graph_id)).released}
            return pb.SubmitGraphResponse(graph_id=valid.graph_id, tasks=[
                pb.GraphTaskRef(key=n.key, task_id=n.task.task_id, slot=n.task.slot,
                                state=pb.TASK_STATE_QUEUED if n.task.task_id in released else pb.TASK_STATE_WAITING)
                for n in graph.nodes])
        view = await asyncio.to_thread(store.graph, valid.namespace, valid.graph_id)
        now = self._clock.now()
        return pb.SubmitGraphResponse(graph_id=valid.graph_id, duplicate=not written, tasks=[
            pb.GraphTaskRef(key=n.key, task_id=n.task_id, state=api_state(n.status, n.attempts, n.trigger_at, now),
                            slot=n.slot) for n in view.nodes])

    def _new_graph(self, valid: ValidGraph, home: int, now_ms: int) -> NewGraph:
        created = ms_to_datetime(now_ms)
        ids = {n.key: n.task.task_id for n in valid.nodes}
        nodes = [self._new_node(valid.graph_id, n, seq, ids, created) for seq, n in enumerate(valid.nodes)]
        return NewGraph(valid.namespace, valid.graph_id, home, valid.digest, tuple(nodes), created)

    def _new_node(self, graph_id: str, n: ValidNode, seq: int, ids: dict[str, str], created: dt.datetime) -> NewNode:
        """A task of a graph as written: `waiting`, its envelope saying which graph and how many parents."""
        envelope = n.task.to_pb()
        envelope.schedule_time = ""   # due at its release plus delay_ms, which no envelope can say
        envelope.delay_ms = n.delay_ms
        envelope.graph.CopyFrom(pb.GraphRef(graph_id=graph_id, key=n.key, has_dependents=n.has_dependents,
                                              parents=len(n.parents), continue_dependents=n.continue_dependents))
        slot = slot_of(n.task.namespace, n.task.task_type, self._params.slot_count)
        row = r.NewTask(task_id=n.task.task_id, slot=slot, namespace=n.task.namespace,
                        task_type=n.task.task_type, priority=n.task.priority, status=r.WAITING,
                        trigger_at=created, envelope=envelope.SerializeToString(), created_at=created,
                        trace_id=n.task.trace_id)
        return NewNode(task=row, key=n.key, seq=seq, join_rule=n.join_rule, join_k=n.join_k,
                       delay_ms=n.delay_ms, has_dependents=n.has_dependents,
                       parents=tuple(NewEdge(ids[key], key, policy) for key, policy in n.parents))

    @_guarded
    async def AddGraphTasks(self, request: pb.AddGraphTasksRequest, context) -> pb.AddGraphTasksResponse:
        token = self._auth.token(context, calls.SUBMIT)
        store = self._store
        if not request.namespace or not request.graph_id:
            raise InvalidArgument("namespace" if not request.namespace else "graph_id", "is required")
        self._auth.check_namespaces(token, calls.SUBMIT, (request.namespace,))
        if self._admission is not None:
            self._admission.check(min((priority_class(t.task.priority) for t in request.tasks), default=NORMAL))
        view = await asyncio.to_thread(store.graph, request.namespace, request.graph_id)
        now_ms = self._clock.now_ms()
        valid = validate_added(request, view, now=ms_to_aware(now_ms), limits=self._limits)
        created = ms_to_datetime(now_ms)
        ids = {n.key: n.task_id for n in view.nodes} | {n.key: n.task.task_id for n in valid.nodes}
        first_seq = max((n.seq for n in view.nodes), default=-1) + 1
        nodes = [self._new_node(view.graph_id, n, first_seq + i, ids, created) for i, n in enumerate(valid.nodes)]
        adder = valid.adder
        added = await asyncio.to_thread(
            store.add_tasks, view.namespace, view.graph_id, (adder.task_id, adder.slot, request.adder_attempt),
            nodes, [(i, t.key, t.task_id, t.slot) for i, t in enumerate(valid.targets)], self._params.node_id)
        # The parents that may have ended already: counted now (their notes were applied before
        # these edges existed); an apply counts only what is not counted, so once is enough.
        if self._count_ends is not None:
            await self._count_ends([p.task_id for p in valid.parents])
        return pb.AddGraphTasksResponse(duplicate=added.added == 0, tasks=[
            pb.GraphTaskRef(key=n.key, task_id=n.task.task_id, slot=n.task.slot, state=pb.TASK_STATE_WAITING)
            for n in nodes])

    @_guarded
    async def CancelGraph(self, request: pb.CancelGraphRequest, context) -> pb.CancelGraphResponse:
        token = self._auth.token(context, calls.CANCEL)
        if not request.namespace or not request.graph_id:
            raise InvalidArgument("namespace" if not request.namespace else "graph_id", "is required")
        mode = _CANCEL_MODES.get(request.mode)
        if mode is None:
            raise InvalidArgument("mode", f"unknown cancel mode {request.mode}; use GRACEFUL (1) or IMMEDIATE (2)")
        if len(request.reason) > 1000:
            raise InvalidArgument("reason", f"is {len(request.reason)} characters, at most 1000")
        self._auth.check_namespaces(token, calls.CANCEL, (request.namespace,))
        cancelled, running = await asyncio.to_thread(
            self._store.cancel_graph, request.namespace, request.graph_id, mode,
            self._limits.retry_policies.heartbeat_by_type, request.reason or "cancelled by request",
            self._params.node_id, self._clock.now())
        return pb.CancelGraphResponse(cancelled=cancelled, running=running)

    @_guarded
    async def GetGraph(self, request: pb.GetGraphRequest, context) -> pb.GetGraphResponse:
        token = self._auth.token(context, calls.READ)
        if not request.namespace or not request.graph_id:
            raise InvalidArgument("namespace" if not request.namespace else "graph_id", "is required")
        self._auth.check_namespaces(token, calls.READ, (request.namespace,))
        view = await asyncio.to_thread(self._store.graph, request.namespace, request.graph_id)
        results = (await asyncio.to_thread(self._store.results, [n.task_id for n in view.nodes])
                   if request.with_results else {})
        return graph_response(view, self._clock.now(), results)


def graph_response(view: GraphView, now: dt.datetime, results: dict[str, str] | None = None) -> pb.GetGraphResponse:
    """The graph as callers see it: each task's lifecycle state, its edges and, for one that
    waits, what for; with `results`, each kept result."""
    states, counts, state = graph_states(view, now)
    return pb.GetGraphResponse(graph_id=view.graph_id, namespace=view.namespace, state=state, counts=counts,
                               nodes=[_node(n, states, (results or {}).get(n.task_id, "")) for n in view.nodes])


def graph_states(view: GraphView, now: dt.datetime) -> tuple[dict[str, TaskState], dict[str, int], str]:
    """Each task's lifecycle state by key, the tasks by state, and the graph's own state:
    finished once every task has ended, else running (incomplete while its rows are written)."""
    states = {n.key: r.api_state(n.status, n.attempts, n.trigger_at, now) for n in view.nodes}
    counts = dict(collections.Counter(state.value for state in states.values()))
    finished = all(s.is_terminal for s in states.values())
    return states, counts, "finished" if finished else ("running" if view.complete else "incomplete")


def _node(n: NodeView, states: dict, result_json: str) -> pb.GraphNode:
    edges = [pb.GraphEdge(parent_key=e.parent_key, on_failure=ON_FAILURE_TO_PB[e.on_failure], outcome=e.outcome or "")
             for e in n.edges]
    waiting = ""
    if n.status == r.WAITING:
        open_ = [e for e in n.edges if e.outcome is None]
        waiting = (f"for {len(open_)} of {len(n.edges)} parent(s): "
                   + ", ".join(f"{e.parent_key} ({states[e.parent_key].value})" for e in open_)
                   if open_ else "for its graph to be complete")
    return pb.GraphNode(key=n.key, task_id=n.task_id, state=STATE_TO_PB[states[n.key]], attempts=n.attempts,
                        join=pb.Join(rule=RULE_TO_PB[n.join_rule], at_least=n.join_k), depends_on=edges,
                        reason=n.reason or n.last_error or "", waiting=waiting, result_json=result_json)
