"""Graphs: tasks that depend on other tasks, submitted in one call (docs/graphs.md).

    from taskring import Client, TaskSpec
    from taskring.graph import Graph, Join

    g = Graph("order-1042")                                     # the graph id: yours, idempotent
    charge = g.task("charge", TaskSpec("shop", "charge_card", {"order": 1042}))
    ship = g.task("ship", TaskSpec("shop", "ship_order"), after=[charge])
    email = g.task("email", TaskSpec("shop", "send_email"), after=[charge.on_failure("ignore")])
    close = g.task("close", TaskSpec("shop", "close_order"), after=[ship, email], join=Join.none_failed())
    with Client("127.0.0.1:7070") as client:
        client.submit_graph(g)
        client.get_graph("shop", "order-1042").nodes["close"].state

A task runs when its join rule is met by the ends of the tasks it comes `after`, and is
`skipped` (with the reason) when the rule can no longer be met; a skip travels on to the
tasks after it. Every task of a graph ends: succeeded, dead-lettered, skipped or cancelled.
Tasks can only come after tasks added before them, so a graph built here has no cycle; the
server checks everything again and names the field of what it refuses (``tasks[3].task.delay_ms``).
"""
from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taskring import _envelope
from taskring.task import TaskSpec, TaskState
from taskring.wire import pb


class OnFailure(enum.StrEnum):
    """What the failure (dead letter) of a task means to one task after it."""

    SKIP = "skip"
    """Counts as failed; the join rule decides (the default rule then skips)."""
    IGNORE = "ignore"
    """Counts as done, as if it had succeeded; recorded on the edge."""
    CONTINUE = "continue"
    """Its first failed attempt lets the task after it go at once, as done ("continued"),
    without waiting for its retries (a success before any failure counts as a success)."""


_ON_FAILURE_PB = {OnFailure.SKIP: pb.ON_FAILURE_SKIP, OnFailure.IGNORE: pb.ON_FAILURE_IGNORE,
                  OnFailure.CONTINUE: pb.ON_FAILURE_CONTINUE}
_ON_FAILURE_FROM_PB = {v: k for k, v in _ON_FAILURE_PB.items()}


class JoinRule(enum.StrEnum):
    ALL_SUCCEEDED = "all_succeeded"
    ALL_DONE = "all_done"
    NONE_FAILED = "none_failed"
    ANY_SUCCEEDED = "any_succeeded"
    AT_LEAST = "at_least"


_RULE_PB = {JoinRule.ALL_SUCCEEDED: pb.JOIN_RULE_ALL_SUCCEEDED, JoinRule.ALL_DONE: pb.JOIN_RULE_ALL_DONE,
            JoinRule.NONE_FAILED: pb.JOIN_RULE_NONE_FAILED, JoinRule.ANY_SUCCEEDED: pb.JOIN_RULE_ANY_SUCCEEDED,
            JoinRule.AT_LEAST: pb.JOIN_RULE_AT_LEAST}
_RULE_FROM_PB = {v: k for k, v in _RULE_PB.items()} | {pb.JOIN_RULE_UNSPECIFIED: JoinRule.ALL_SUCCEEDED}


@dataclass(frozen=True, slots=True)
class Join:
    """When a task becomes due, from the ends of the tasks it comes after."""

    rule: JoinRule = JoinRule.ALL_SUCCEEDED
    at_least: int = 0

    @staticmethod
    def all_succeeded() -> Join:
        """Every parent succeeded (a failure under ``on_failure("ignore")`` counts as done). The default."""
        return Join(JoinRule.ALL_SUCCEEDED)

    @staticmethod
    def all_done() -> Join:
        """Every parent ended, whatever its end."""
        return Join(JoinRule.ALL_DONE)

    @staticmethod
    def none_failed() -> Join:
        """Every parent ended and none failed (a skipped parent is fine)."""
        return Join(JoinRule.NONE_FAILED)

    @staticmethod
    def any_succeeded() -> Join:
        """One parent succeeded."""
        return Join(JoinRule.ANY_SUCCEEDED)

    @staticmethod
    def at_least_succeeded(k: int) -> Join:
        """At least `k` parents succeeded."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"at_least: must be a whole number >= 1, got {k!r}")
        return Join(JoinRule.AT_LEAST, k)


@dataclass(frozen=True, slots=True)
class After:
    """One dependency: the task with `key`, and what its failure means here."""

    key: str
    on_failure: OnFailure = OnFailure.SKIP


@dataclass(frozen=True, slots=True)
class Node:
    """A task added to a `Graph`: name it in another task's ``after``."""

    key: str
    _graph: _Tasks = field(repr=False, compare=False)

    def on_failure(self, policy: OnFailure | str) -> After:
        """This dependency with another failure policy: ``charge.on_failure("ignore")``."""
        return After(self.key, OnFailure(policy))


class _Tasks:
    """Tasks with keys and dependencies, as a `Graph` and `Additions` build them."""

    def __init__(self) -> None:
        self._tasks: list[tuple[str, TaskSpec, tuple[After, ...], Join]] = []
        self._keys: set[str] = set()

    def task(self, key: str, spec: TaskSpec, *, after: Sequence[Node | After] = (), join: Join | None = None) -> Node:
        """Add a task that runs after `after` by `join`."""
        i = len(self._tasks)
        if key in self._keys:
            raise ValueError(f"tasks[{i}].key: repeats {key!r}")
        deps = [self._dependency(f"tasks[{i}].depends_on[{j}]", a) for j, a in enumerate(after)]
        self._keys.add(key)
        self._tasks.append((key, spec, tuple(deps), join or Join()))
        return Node(key, self)

    def _dependency(self, field: str, a: Node | After) -> After:
        raise NotImplementedError


class Graph(_Tasks):
    """A graph of tasks of one namespace, to submit with `Client.submit_graph`. A task comes
    after tasks added to it before."""

    def __init__(self, graph_id: str):
        if not graph_id:
            raise ValueError("graph_id: must not be empty")
        super().__init__()
        self.graph_id = graph_id

    def _dependency(self, field: str, a: Node | After) -> After:
        if isinstance(a, Node) and a._graph is not self:
            raise ValueError(f"{field}: {a.key!r} is a task of another graph")
        dep = After(a.key) if isinstance(a, Node) else a
        if not isinstance(dep, After) or dep.key not in self._keys:
            raise ValueError(f"{field}: must be a task added before this one")
        return dep

    @property
    def namespace(self) -> str:
        if not self._tasks:
            raise ValueError("tasks: a graph needs at least one task")
        return self._tasks[0][1].namespace

    def to_pb(self) -> pb.SubmitGraphRequest:
        return pb.SubmitGraphRequest(namespace=self.namespace, graph_id=self.graph_id, tasks=_tasks_pb(self._tasks))


def _tasks_pb(tasks: Sequence[tuple[str, TaskSpec, tuple[After, ...], Join]]) -> list[pb.GraphTask]:
    return [pb.GraphTask(key=key, task=_envelope.spec_to_pb(spec),
                         depends_on=[pb.Dependency(key=d.key, on_failure=_ON_FAILURE_PB[d.on_failure]) for d in deps],
                         join=pb.Join(rule=_RULE_PB[join.rule], at_least=join.at_least))
            for key, spec, deps, join in tasks]


class Additions(_Tasks):
    """Tasks a running task of a graph adds to it (``ctx.add_tasks``), built as a `Graph` is:

        lines = Additions()
        for line in ctx.payload["lines"]:
            lines.task(f"line-{line['id']}", TaskSpec("shop", "pack_line", line))
        ctx.add_tasks(lines, also_before=["close"])     # close waits for every line too

    ``after`` names tasks added here before (their `Node`) or tasks already in the graph by their
    key (``After("charge")``); each new task also waits for the task adding it."""

    def _dependency(self, field: str, a: Node | After) -> After:
        if isinstance(a, Node):
            if a._graph is not self or a.key not in self._keys:
                raise ValueError(f"{field}: {a.key!r} must be added here before, or named by its key in the"
                                 " graph: After(key)")
            return After(a.key)
        if isinstance(a, After):
            return a
        raise TypeError(f"{field}: a Node or an After, got {a!r}")

    def to_pb(self, namespace: str, graph_id: str, adder_task_id: str, adder_attempt: int,
              also_before: Sequence[str]) -> pb.AddGraphTasksRequest:
        if not self._tasks:
            raise ValueError("tasks: add at least one task")
        return pb.AddGraphTasksRequest(namespace=namespace, graph_id=graph_id, adder_task_id=adder_task_id,
                                       adder_attempt=adder_attempt, also_before=list(also_before),
                                       tasks=_tasks_pb(self._tasks))


@dataclass(frozen=True, slots=True)
class AddedTasks:
    duplicate: bool
    """Every task had been added by an earlier call (an earlier attempt): nothing was written."""
    tasks: Mapping[str, GraphTaskRef]
    """By their keys in the graph ("<adder key>:<key>"), in the order they were added."""


@dataclass(frozen=True, slots=True)
class GraphTaskRef:
    key: str
    task_id: str
    state: TaskState
    slot: int


@dataclass(frozen=True, slots=True)
class SubmittedGraph:
    graph_id: str
    duplicate: bool
    """The graph existed with the same tasks: nothing was written."""
    tasks: Mapping[str, GraphTaskRef]
    """By key, in the order they were added."""


@dataclass(frozen=True, slots=True)
class Edge:
    parent_key: str
    on_failure: OnFailure
    outcome: str
    """How the parent ended for this edge (succeeded, failed, ignored, continued, skipped, cancelled);
    "" while it has not."""


@dataclass(frozen=True, slots=True)
class GraphNode:
    key: str
    task_id: str
    state: TaskState
    attempts: int
    join: Join
    depends_on: tuple[Edge, ...]
    reason: str
    """Why it was skipped or cancelled, or its last error."""
    waiting: str
    """What a waiting task waits for, in words."""
    result_json: str = ""
    """Its handler's kept result as JSON (with ``get_graph(..., with_results=True)``; "" when none)."""

    @property
    def result(self) -> Any:
        """Its handler's kept result, decoded (None when none was kept or asked for)."""
        return json.loads(self.result_json) if self.result_json else None


@dataclass(frozen=True, slots=True)
class GraphInfo:
    graph_id: str
    namespace: str
    state: str
    """"running" while any task has not ended, "finished" once all have ("incomplete" while
    the graph's tasks are being written)."""
    counts: Mapping[str, int]
    """Tasks by state."""
    nodes: Mapping[str, GraphNode]
    """By key, in the order they were added."""


def submitted_from_pb(msg: pb.SubmitGraphResponse) -> SubmittedGraph:
    return SubmittedGraph(msg.graph_id, msg.duplicate, {
        t.key: GraphTaskRef(t.key, t.task_id, _envelope.state_from_pb(t.state), t.slot) for t in msg.tasks})


def added_from_pb(msg: pb.AddGraphTasksResponse) -> AddedTasks:
    return AddedTasks(msg.duplicate, {
        t.key: GraphTaskRef(t.key, t.task_id, _envelope.state_from_pb(t.state), t.slot) for t in msg.tasks})


def graph_from_pb(msg: pb.GetGraphResponse) -> GraphInfo:
    return GraphInfo(msg.graph_id, msg.namespace, msg.state, dict(msg.counts), {
        n.key: GraphNode(n.key, n.task_id, _envelope.state_from_pb(n.state), n.attempts,
                         Join(_RULE_FROM_PB.get(n.join.rule, JoinRule.ALL_SUCCEEDED), n.join.at_least),
                         tuple(Edge(e.parent_key, _ON_FAILURE_FROM_PB.get(e.on_failure, OnFailure.SKIP), e.outcome)
                               for e in n.depends_on), n.reason, n.waiting, n.result_json)
        for n in msg.nodes})


class CancelMode(enum.StrEnum):
    GRACEFUL = "graceful"
    """Running tasks finish (a failed one is not retried); nothing new starts."""
    IMMEDIATE = "immediate"
    """Running tasks of types that heartbeat are told to stop at their next heartbeat too."""


_CANCEL_MODE_PB = {CancelMode.GRACEFUL: pb.CANCEL_MODE_GRACEFUL, CancelMode.IMMEDIATE: pb.CANCEL_MODE_IMMEDIATE}


@dataclass(frozen=True, slots=True)
class CancelledGraph:
    cancelled: int
    """Tasks cancelled now."""
    running: tuple[str, ...]
    """Keys of the tasks left to finish (graceful, or types without heartbeats)."""


def cancel_graph_request(namespace: str, graph_id: str, mode: CancelMode | str, reason: str) -> pb.CancelGraphRequest:
    try:
        wire = _CANCEL_MODE_PB[CancelMode(mode)]
    except ValueError:
        raise ValueError(f"mode: must be 'graceful' or 'immediate', got {mode!r}") from None
    return pb.CancelGraphRequest(namespace=namespace, graph_id=graph_id, mode=wire, reason=reason)
