"""SubmitGraph's request, checked whole before anything is written: each task as Submit checks
it (validation.validate_task, its fields named `tasks[i].task.<field>`), then the graph's own
rules, the first problem raised as InvalidArgument naming its field:

- `graph_id` and every `tasks[i].key` are names; keys are unique in the graph;
- every task is of the request's namespace and sets none of the fields a graph owns (its id is
  derived from the graph id and its key; a unique key and a schedule time are not allowed:
  the graph id is the idempotency key, and a task's delay counts from its release);
- every `depends_on[j]` names another task of the graph, once, with a known failure policy;
- a join rule is known; `at_least` is within 1..the number of parents; a task without parents
  may not use `any_succeeded` or `at_least` (no parent could ever meet them);
- there is no cycle (Kahn's algorithm; the cycle is named from a task left over);
- at most MAX_TASKS tasks and MAX_EDGES edges.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
import uuid
from collections.abc import Sequence

from dispatcher.api.validation import Limits, ValidTask, task_validator, to_unix_ms
from dispatcher.base.errors import InvalidArgument, quote
from dispatcher.store.graph_rules import JoinRule, OnFailure
from dispatcher.store.interface_graphs import GraphView, NodeView
from taskring.wire import pb

MAX_TASKS = 10_000
MAX_EDGES = 100_000
GRAPH_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_NS_GRAPHS = uuid.UUID("5a1c0f3e-7d6b-4c2a-9e8f-3b1d2c4e5f60")
"""The namespace of the ids derived for the tasks of graphs (uuid5)."""

_RULES = {pb.JOIN_RULE_UNSPECIFIED: JoinRule.ALL_SUCCEEDED, pb.JOIN_RULE_ALL_SUCCEEDED: JoinRule.ALL_SUCCEEDED,
          pb.JOIN_RULE_ALL_DONE: JoinRule.ALL_DONE, pb.JOIN_RULE_NONE_FAILED: JoinRule.NONE_FAILED,
          pb.JOIN_RULE_ANY_SUCCEEDED: JoinRule.ANY_SUCCEEDED, pb.JOIN_RULE_AT_LEAST: JoinRule.AT_LEAST}
_ON_FAILURE = {pb.ON_FAILURE_UNSPECIFIED: OnFailure.SKIP, pb.ON_FAILURE_SKIP: OnFailure.SKIP,
               pb.ON_FAILURE_IGNORE: OnFailure.IGNORE, pb.ON_FAILURE_CONTINUE: OnFailure.CONTINUE}
RULE_TO_PB = {rule: value for value, rule in _RULES.items() if value != pb.JOIN_RULE_UNSPECIFIED}
ON_FAILURE_TO_PB = {policy: value for value, policy in _ON_FAILURE.items() if value != pb.ON_FAILURE_UNSPECIFIED}


@dataclasses.dataclass(frozen=True, slots=True)
class ValidNode:
    key: str
    task: ValidTask
    """Its task id is the derived one."""
    delay_ms: int
    parents: tuple[tuple[str, OnFailure], ...]
    """(parent key, policy), in the request's order."""
    join_rule: JoinRule
    join_k: int
    has_dependents: bool
    continue_dependents: bool = False
    """Some task depends on it with on_failure continue: its failed attempts leave notes too."""


@dataclasses.dataclass(frozen=True, slots=True)
class ValidGraph:
    namespace: str
    graph_id: str
    digest: str
    nodes: tuple[ValidNode, ...]


def graph_task_id(namespace: str, graph_id: str, key: str) -> str:
    """The task id of a graph's task: derived, so a retried SubmitGraph names the same rows."""
    return str(uuid.uuid5(_NS_GRAPHS, f"{namespace}/{graph_id}/{key}"))


def validate_graph(request: pb.SubmitGraphRequest, *, now: dt.datetime, limits: Limits) -> ValidGraph:
    graph_id = request.graph_id
    if not GRAPH_ID_RE.fullmatch(graph_id):
        raise InvalidArgument("graph_id", f"must be 1 to 64 characters of [A-Za-z0-9._:-] starting with a letter"
                                          f" or digit, got {quote(graph_id)}")
    tasks = request.tasks
    if not tasks:
        raise InvalidArgument("tasks", "a graph needs at least one task")
    if len(tasks) > MAX_TASKS:
        raise InvalidArgument("tasks", f"{len(tasks):,} tasks, at most {MAX_TASKS:,}")
    edges = sum(len(t.depends_on) for t in tasks)
    if edges > MAX_EDGES:
        raise InvalidArgument("tasks", f"{edges:,} dependencies in all, at most {MAX_EDGES:,}")
    index_of: dict[str, int] = {}
    for i, t in enumerate(tasks):
        if not KEY_RE.fullmatch(t.key):
            raise InvalidArgument(f"tasks[{i}].key", f"must be 1 to 128 characters of [A-Za-z0-9._:-] starting with"
                                                     f" a letter or digit, got {quote(t.key)}")
        if t.key in index_of:
            raise InvalidArgument(f"tasks[{i}].key", f"repeats tasks[{index_of[t.key]}].key {quote(t.key)}")
        index_of[t.key] = i
    namespace = request.namespace
    parents_of: list[tuple[tuple[str, OnFailure], ...]] = []
    for i, t in enumerate(tasks):
        _check_graph_fields(t.task, namespace, f"tasks[{i}].task")
        seen: dict[str, int] = {}
        parents = []
        for j, d in enumerate(t.depends_on):
            f = f"tasks[{i}].depends_on[{j}]"
            if d.key == t.key:
                raise InvalidArgument(f, "a task may not depend on itself")
            if d.key not in index_of:
                raise InvalidArgument(f, f"names {quote(d.key)}, which is no task of this graph")
            if d.key in seen:
                raise InvalidArgument(f, f"repeats tasks[{i}].depends_on[{seen[d.key]}]")
            seen[d.key] = j
            policy = _ON_FAILURE.get(d.on_failure)
            if policy is None:
                raise InvalidArgument(f"{f}.on_failure", f"unknown failure policy {d.on_failure}; use SKIP (1),"
                                                         " IGNORE (2) or CONTINUE (3)")
            parents.append((d.key, policy))
        parents_of.append(tuple(parents))
    _check_acyclic(tasks, index_of)
    has_dependents = {key for parents in parents_of for key, _ in parents}
    continued = {key for parents in parents_of for key, policy in parents if policy is OnFailure.CONTINUE}
    digest = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
    nodes = []
    now_ms = to_unix_ms(now)
    check = task_validator(now, limits)
    for i, t in enumerate(tasks):
        rule, k = _join(t.join, len(parents_of[i]), f"tasks[{i}].join")
        # The request's own task takes its derived id: the digest was taken before, and the
        # request is this call's (a copy of each task cost as much as its validation).
        task = t.task
        task.task_id = graph_task_id(namespace, graph_id, t.key)
        valid = check(task, f"tasks[{i}].task")
        # The type's unique key template does not apply inside a graph: the graph id is the
        # idempotency key, and its tasks run once per graph.
        if valid.unique_key or valid.unique_ttl_ms:
            valid = dataclasses.replace(valid, unique_key="", unique_ttl_ms=0)
        nodes.append(ValidNode(t.key, valid, max(0, valid.due_at_ms - now_ms), parents_of[i], rule, k,
                               t.key in has_dependents, t.key in continued))
    return ValidGraph(namespace, graph_id, digest, tuple(nodes))


def _check_graph_fields(task: pb.Task, namespace: str, p: str) -> None:
    if task.namespace != namespace:
        raise InvalidArgument(f"{p}.namespace", f"{quote(task.namespace)} is not the graph's {quote(namespace)}"
                                                " (a graph's tasks are of one namespace)")
    for name in ("task_id", "unique_key", "schedule_time", "cron_rule", "cron_fire_time"):
        if getattr(task, name):
            why = {"task_id": "ids of a graph's tasks are derived from the graph id and the key",
                   "unique_key": "the graph id is the idempotency key of its tasks",
                   "schedule_time": "use delay_ms, counted from the task's release"}.get(name, "server-owned")
            raise InvalidArgument(f"{p}.{name}", f"not allowed in a graph ({why})")
    if task.HasField("unique_ttl_ms"):
        raise InvalidArgument(f"{p}.unique_ttl_ms", "not allowed in a graph (the graph id is the idempotency key"
                                                    " of its tasks)")
    if task.HasField("graph"):
        raise InvalidArgument(f"{p}.graph", "server-owned")


def _join(join: pb.Join, parents: int, p: str) -> tuple[JoinRule, int]:
    rule = _RULES.get(join.rule)
    if rule is None:
        raise InvalidArgument(f"{p}.rule", f"unknown join rule {join.rule}")
    if rule is JoinRule.AT_LEAST:
        if not 1 <= join.at_least <= max(parents, 1) or parents == 0:
            raise InvalidArgument(f"{p}.at_least", f"{join.at_least}, but the task has {parents} parent(s):"
                                                   " must be 1 to the number of parents")
        return rule, join.at_least
    if join.at_least:
        raise InvalidArgument(f"{p}.at_least", f"only for the rule AT_LEAST, not {rule.value}")
    if rule is JoinRule.ANY_SUCCEEDED and parents == 0:
        raise InvalidArgument(f"{p}.rule", "any_succeeded on a task without parents could never be met")
    return rule, 0


def _check_acyclic(tasks: Sequence[pb.GraphTask], index_of: dict[str, int]) -> None:
    """Kahn's algorithm, O(tasks + edges), over the edges between these tasks (an added task's
    parents already in the graph cannot lie on a cycle through it); a task left over lies on a
    cycle or below one, and walking parents from it must come back to a task already walked:
    that is the cycle."""
    n = len(tasks)
    inside = [[index_of[d.key] for d in t.depends_on if d.key in index_of] for t in tasks]
    indegree = [len(parents) for parents in inside]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, parents in enumerate(inside):
        for p in parents:
            children[p].append(i)
    ready = [i for i in range(n) if indegree[i] == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for c in children[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if done == n:
        return
    # Walk from a left-over task through left-over parents until one repeats.
    at = next(i for i in range(n) if indegree[i] > 0)
    path: list[int] = []
    where: dict[int, int] = {}
    while at not in where:
        where[at] = len(path)
        path.append(at)
        at = next(p for p in inside[at] if indegree[p] > 0)
    cycle = path[where[at]:]
    # Named as dependencies run: parent -> child; the edge named is the one that closes it.
    keys = [tasks[i].key for i in reversed(cycle)]
    child, parent = cycle[-1], cycle[0]
    j = next(j for j, d in enumerate(tasks[child].depends_on) if index_of.get(d.key) == parent)
    raise InvalidArgument(f"tasks[{child}].depends_on[{j}]",
                          f"closes the cycle {' -> '.join([*keys, keys[0]])}")


@dataclasses.dataclass(frozen=True, slots=True)
class ValidAdd:
    """AddGraphTasks' request, checked against the graph as it is."""

    adder: NodeView
    nodes: tuple[ValidNode, ...]
    """Keys in the graph ("<adder key>:<key>"); parents by those keys, the adder's included."""
    targets: tuple[NodeView, ...]
    """also_before's tasks, in the request's order."""
    parents: tuple[NodeView, ...]
    """The tasks of the graph the new ones depend on (the adder and those named)."""


def validate_added(request: pb.AddGraphTasksRequest, view: GraphView, *, now: dt.datetime,
                   limits: Limits) -> ValidAdd:
    """Each new task as SubmitGraph checks one, then: the adder is a task of the graph; a key is
    new in the graph ("<adder key>:<key>", at most 128 characters) or was added by this adder
    before (a retry); depends_on names a task of the call or of the graph; also_before names
    tasks of the graph, once each, that the new ones may precede without a cycle (none of them
    is the adder, a task a new one depends on, or an ancestor of either). Whether the adder runs
    and the targets still wait is checked by the store, under their locks."""
    by_key = {n.key: n for n in view.nodes}
    by_id = {n.task_id: n for n in view.nodes}
    adder = by_id.get(request.adder_task_id)
    if adder is None:
        raise InvalidArgument("adder_task_id", f"{quote(request.adder_task_id)} is no task of graph"
                                               f" {quote(view.graph_id)}")
    tasks = request.tasks
    if not tasks:
        raise InvalidArgument("tasks", "add at least one task")
    if len(view.nodes) + len(tasks) > MAX_TASKS:
        raise InvalidArgument("tasks", f"the graph has {len(view.nodes):,} tasks; {len(tasks):,} more would pass"
                                       f" {MAX_TASKS:,}")
    index_of: dict[str, int] = {}
    full: list[str] = []
    for i, t in enumerate(tasks):
        key = f"{adder.key}:{t.key}"
        if not KEY_RE.fullmatch(t.key) or len(key) > 128:
            raise InvalidArgument(f"tasks[{i}].key", f"must be [A-Za-z0-9._:-] starting with a letter or digit, and"
                                                     f" {quote(key)} (its key in the graph) at most 128 characters")
        if t.key in index_of:
            raise InvalidArgument(f"tasks[{i}].key", f"repeats tasks[{index_of[t.key]}].key {quote(t.key)}")
        there = by_key.get(key)
        if there is not None and not any(e.parent_id == adder.task_id for e in there.edges):
            raise InvalidArgument(f"tasks[{i}].key", f"{quote(key)} is already a task of the graph, not one this"
                                                     " task added")
        index_of[t.key] = i
        full.append(key)
    parents_of: list[tuple[tuple[str, OnFailure], ...]] = []
    named: dict[str, NodeView] = {adder.key: adder}
    for i, t in enumerate(tasks):
        _check_graph_fields(t.task, view.namespace, f"tasks[{i}].task")
        parents: list[tuple[str, OnFailure]] = [(adder.key, OnFailure.SKIP)]
        seen: dict[str, int] = {}
        for j, d in enumerate(t.depends_on):
            f = f"tasks[{i}].depends_on[{j}]"
            if d.key == t.key:
                raise InvalidArgument(f, "a task may not depend on itself")
            if d.key in index_of:
                parent_key = full[index_of[d.key]]
            elif d.key in by_key:
                parent_key = d.key
                named[d.key] = by_key[d.key]
            else:
                raise InvalidArgument(f, f"names {quote(d.key)}, which is no task of this call or of the graph")
            if parent_key == adder.key:
                raise InvalidArgument(f, f"names the adding task {quote(adder.key)}: every added task waits for it")
            if parent_key in seen:
                raise InvalidArgument(f, f"repeats tasks[{i}].depends_on[{seen[parent_key]}]")
            seen[parent_key] = j
            policy = _ON_FAILURE.get(d.on_failure)
            if policy is None:
                raise InvalidArgument(f"{f}.on_failure", f"unknown failure policy {d.on_failure}; use SKIP (1),"
                                                         " IGNORE (2) or CONTINUE (3)")
            if policy is OnFailure.CONTINUE and d.key not in index_of:
                # Its failed attempts leave no notes: it was dispatched without dependents that say continue.
                raise InvalidArgument(f"{f}.on_failure", f"continue only after a task added in this call;"
                                                         f" {quote(d.key)} is already in the graph (use skip or"
                                                         " ignore)")
            parents.append((parent_key, policy))
        parents_of.append(tuple(parents))
    _check_acyclic(tasks, index_of)
    targets = _targets(request.also_before, by_key, named)
    dependents = {key for parents in parents_of for key, _ in parents}
    continued = {key for parents in parents_of for key, policy in parents if policy is OnFailure.CONTINUE}
    check = task_validator(now, limits)
    now_ms = to_unix_ms(now)
    nodes = []
    for i, t in enumerate(tasks):
        rule, k = _join(t.join, len(parents_of[i]), f"tasks[{i}].join")
        task = t.task
        task.task_id = graph_task_id(view.namespace, view.graph_id, full[i])
        valid = check(task, f"tasks[{i}].task")
        if valid.unique_key or valid.unique_ttl_ms:
            valid = dataclasses.replace(valid, unique_key="", unique_ttl_ms=0)
        nodes.append(ValidNode(full[i], valid, max(0, valid.due_at_ms - now_ms), parents_of[i], rule, k,
                               full[i] in dependents or bool(targets), full[i] in continued))
    return ValidAdd(adder, tuple(nodes), targets, tuple(named.values()))


def _targets(also_before: Sequence[str], by_key: dict[str, NodeView],
             named: dict[str, NodeView]) -> tuple[NodeView, ...]:
    """also_before's tasks; none may be an ancestor of (or be) a task the new ones depend on."""
    parents_of = {n.key: [e.parent_key for e in n.edges] for n in by_key.values()}
    ancestors: set[str] = set()
    stack = list(named)
    while stack:
        key = stack.pop()
        if key not in ancestors:
            ancestors.add(key)
            stack += parents_of.get(key, [])
    out: list[NodeView] = []
    seen: dict[str, int] = {}
    for i, key in enumerate(also_before):
        f = f"also_before[{i}]"
        target = by_key.get(key)
        if target is None:
            raise InvalidArgument(f, f"names {quote(key)}, which is no task of the graph")
        if key in seen:
            raise InvalidArgument(f, f"repeats also_before[{seen[key]}]")
        if key in ancestors:
            raise InvalidArgument(f, f"{quote(key)} is the adding task, a task the new ones depend on, or an"
                                     " ancestor of one: it waiting for them would close a cycle")
        seen[key] = i
        out.append(target)
    return tuple(out)
