"""SubmitGraph's validation (dispatcher/api/graph_validation.py), without a server: every
refusal names its field; what passes comes out with derived ids, parents, join rules and
which tasks have dependents."""
from __future__ import annotations

import datetime as dt

import pytest

from dispatcher.api.graph_validation import MAX_TASKS, graph_task_id, validate_added, validate_graph
from dispatcher.api.validation import Limits
from dispatcher.base.errors import InvalidArgument
from dispatcher.store import records as r
from dispatcher.store.graph_rules import JoinRule, OnFailure
from dispatcher.store.interface_graphs import EdgeView, GraphView, NodeView
from taskring.wire import pb

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def _task(**fields) -> pb.Task:
    return pb.Task(namespace="shop", task_type=fields.pop("task_type", "ok"), **fields)


def _request(*tasks: pb.GraphTask, graph_id: str = "order-1") -> pb.SubmitGraphRequest:
    return pb.SubmitGraphRequest(namespace="shop", graph_id=graph_id, tasks=list(tasks))


def _gt(key: str, *after: str, task: pb.Task | None = None, join: pb.Join | None = None,
        ignore: tuple[str, ...] = ()) -> pb.GraphTask:
    return pb.GraphTask(key=key, task=task or _task(), join=join, depends_on=[
        pb.Dependency(key=a, on_failure=pb.ON_FAILURE_IGNORE if a in ignore else pb.ON_FAILURE_UNSPECIFIED)
        for a in after])


def _refused(request: pb.SubmitGraphRequest) -> str:
    with pytest.raises(InvalidArgument) as refused:
        validate_graph(request, now=NOW, limits=Limits())
    return str(refused.value)


def test_the_order_example_passes_with_derived_ids_and_its_shape():
    valid = validate_graph(_request(_gt("charge"), _gt("ship", "charge"), _gt("email", "charge"),
                                    _gt("close", "ship", "email", ignore=("email",),
                                        join=pb.Join(rule=pb.JOIN_RULE_NONE_FAILED))), now=NOW, limits=Limits())
    by_key = {n.key: n for n in valid.nodes}
    assert by_key["charge"].task.task_id == graph_task_id("shop", "order-1", "charge")
    assert by_key["close"].parents == (("ship", OnFailure.SKIP), ("email", OnFailure.IGNORE))
    assert (by_key["close"].join_rule, by_key["ship"].join_rule) == (JoinRule.NONE_FAILED, JoinRule.ALL_SUCCEEDED)
    assert {k for k, n in by_key.items() if n.has_dependents} == {"charge", "ship", "email"}
    again = validate_graph(_request(_gt("charge"), _gt("ship", "charge"), _gt("email", "charge"),
                                    _gt("close", "ship", "email", ignore=("email",),
                                        join=pb.Join(rule=pb.JOIN_RULE_NONE_FAILED))), now=NOW, limits=Limits())
    assert again.digest == valid.digest, "the same request, the same digest"
    other = validate_graph(_request(_gt("charge"), _gt("ship", "charge")), now=NOW, limits=Limits())
    assert other.digest != valid.digest


@pytest.mark.parametrize("request_, message", [
    (_request(_gt("a"), graph_id=""), "graph_id: must be 1 to 64 characters"),
    (_request(), "tasks: a graph needs at least one task"),
    (_request(_gt("a b")), "tasks[0].key: must be 1 to 128 characters"),
    (_request(_gt("a"), _gt("a")), "tasks[1].key: repeats tasks[0].key 'a'"),
    (_request(_gt("a", "a")), "tasks[0].depends_on[0]: a task may not depend on itself"),
    (_request(_gt("a", "nope")), "tasks[0].depends_on[0]: names 'nope', which is no task of this graph"),
    (_request(_gt("a"), _gt("b", "a", "a")), "tasks[1].depends_on[1]: repeats tasks[1].depends_on[0]"),
    (_request(_gt("a", "b"), _gt("b", "a")), "tasks[1].depends_on[0]: closes the cycle b -> a -> b"),
    (_request(_gt("a", join=pb.Join(rule=pb.JOIN_RULE_ANY_SUCCEEDED))),
     "tasks[0].join.rule: any_succeeded on a task without parents could never be met"),
    (_request(_gt("a"), _gt("b", "a", join=pb.Join(rule=pb.JOIN_RULE_AT_LEAST, at_least=2))),
     "tasks[1].join.at_least: 2, but the task has 1 parent(s)"),
    (_request(_gt("a"), _gt("b", "a", join=pb.Join(rule=pb.JOIN_RULE_ALL_DONE, at_least=1))),
     "tasks[1].join.at_least: only for the rule AT_LEAST"),
    (_request(_gt("a", task=_task(task_id="mine"))), "tasks[0].task.task_id: not allowed in a graph"),
    (_request(_gt("a", task=_task(unique_key="k"))), "tasks[0].task.unique_key: not allowed in a graph"),
    (_request(_gt("a", task=_task(schedule_time="2030-01-01T00:00:00Z"))),
     "tasks[0].task.schedule_time: not allowed in a graph"),
    (_request(_gt("a", task=pb.Task(namespace="billing", task_type="ok"))),
     "tasks[0].task.namespace: 'billing' is not the graph's 'shop'"),
    (_request(_gt("a", task=_task(payload_json="[1]"))), "tasks[0].task.payload_json"),
])
def test_every_refusal_names_its_field(request_, message):
    assert _refused(request_).startswith(message)


def test_the_size_limit_is_refused_before_anything_else_is_read():
    many = _request(*[_gt(f"t{i}") for i in range(MAX_TASKS + 1)])
    assert _refused(many) == "tasks: 10,001 tasks, at most 10,000"


def test_a_long_cycle_is_named_from_a_task_on_it():
    tasks = [_gt("start")] + [_gt(f"c{i}", f"c{(i + 1) % 5}") for i in range(5)]
    message = _refused(_request(*tasks))
    assert "closes the cycle" in message and message.startswith("tasks[")
    cycle = message.split("closes the cycle ")[1].split(" -> ")
    assert cycle[0] == cycle[-1] and sorted(set(cycle)) == [f"c{i}" for i in range(5)]


def test_a_delay_counts_from_the_release():
    valid = validate_graph(_request(_gt("a", task=_task(delay_ms=90_000))), now=NOW, limits=Limits())
    assert valid.nodes[0].delay_ms == 90_000


# ---- AddGraphTasks (validate_added): against a graph as it stands ----

def _view(*nodes: tuple[str, tuple[str, ...]]) -> GraphView:
    """A graph of (key, parent keys) as the store shows it; every task waiting."""
    ids = {key: graph_task_id("shop", "order-1", key) for key, _ in nodes}
    return GraphView("shop", "order-1", True, NOW.replace(tzinfo=None), tuple(
        NodeView(key=key, task_id=ids[key], seq=i, slot=0, status=r.WAITING, attempts=0,
                 trigger_at=NOW.replace(tzinfo=None), join_rule=JoinRule.ALL_SUCCEEDED, join_k=0,
                 edges=tuple(EdgeView(p, ids[p], OnFailure.SKIP, None) for p in parents), reason=None,
                 last_error=None)
        for i, (key, parents) in enumerate(nodes)))


ORDER = _view(("charge", ()), ("split", ("charge",)), ("close", ("split",)), ("audit", ()))


def _add(*tasks: pb.GraphTask, adder: str = "split", also_before: tuple[str, ...] = ()) -> pb.AddGraphTasksRequest:
    return pb.AddGraphTasksRequest(namespace="shop", graph_id="order-1",
                                   adder_task_id=graph_task_id("shop", "order-1", adder) if adder else "nobody",
                                   adder_attempt=1, tasks=list(tasks), also_before=list(also_before))


def _add_refused(request: pb.AddGraphTasksRequest, view: GraphView = ORDER) -> str:
    with pytest.raises(InvalidArgument) as refused:
        validate_added(request, view, now=NOW, limits=Limits())
    return str(refused.value)


def test_added_tasks_wait_for_their_adder_and_take_keys_under_it():
    valid = validate_added(_add(_gt("line-1"), _gt("line-2", "line-1", "charge", ignore=("charge",)),
                                also_before=("close",)), ORDER, now=NOW, limits=Limits())
    by_key = {n.key: n for n in valid.nodes}
    assert list(by_key) == ["split:line-1", "split:line-2"]
    assert by_key["split:line-1"].parents == (("split", OnFailure.SKIP),)
    assert by_key["split:line-2"].parents == (("split", OnFailure.SKIP), ("split:line-1", OnFailure.SKIP),
                                             ("charge", OnFailure.IGNORE))
    assert by_key["split:line-1"].task.task_id == graph_task_id("shop", "order-1", "split:line-1")
    assert all(n.has_dependents for n in valid.nodes), "close waits for each"
    assert [t.key for t in valid.targets] == ["close"]
    assert {p.key for p in valid.parents} == {"split", "charge"}


def test_at_least_counts_the_adder_among_the_parents():
    join = pb.Join(rule=pb.JOIN_RULE_AT_LEAST, at_least=2)
    assert validate_added(_add(_gt("a", "charge", join=join)), ORDER, now=NOW, limits=Limits()).nodes[0].join_k == 2
    assert "tasks[0].join.at_least" in _add_refused(_add(_gt("a", join=pb.Join(rule=pb.JOIN_RULE_AT_LEAST,
                                                                                   at_least=2))))


def test_a_retried_add_is_valid_and_a_key_the_graph_has_otherwise_is_refused():
    added_before = _view(("charge", ()), ("split", ("charge",)), ("split:line-1", ("split",)),
                         ("split:x", ("charge",)))
    assert validate_added(_add(_gt("line-1")), added_before, now=NOW, limits=Limits()).nodes[0].key == "split:line-1"
    assert "tasks[0].key: 'split:x' is already a task of the graph" in _add_refused(_add(_gt("x")), added_before)


@pytest.mark.parametrize("request_, message", [
    (_add(_gt("a"), adder=""), "adder_task_id: 'nobody' is no task of graph"),
    (_add(), "tasks: add at least one task"),
    (_add(_gt("a b")), "tasks[0].key: must be"),
    (_add(_gt("k" * 123)), "at most 128 characters"),
    (_add(_gt("a"), _gt("a")), "tasks[1].key: repeats tasks[0].key"),
    (_add(_gt("a", "nowhere")), "tasks[0].depends_on[0]: names 'nowhere', which is no task of this call or of"),
    (_add(_gt("a", "split")), "tasks[0].depends_on[0]: names the adding task"),
    (_add(_gt("a", "a")), "tasks[0].depends_on[0]: a task may not depend on itself"),
    (_add(_gt("a", "charge", "charge")), "tasks[0].depends_on[1]: repeats tasks[0].depends_on[0]"),
    (_add(_gt("a", "b"), _gt("b", "a")), "closes the cycle"),
    (_add(_gt("a"), also_before=("nowhere",)), "also_before[0]: names 'nowhere', which is no task of the graph"),
    (_add(_gt("a"), also_before=("close", "close")), "also_before[1]: repeats also_before[0]"),
    (_add(_gt("a"), also_before=("split",)), "also_before[0]: 'split' is the adding task"),
    (_add(_gt("a"), also_before=("charge",)), "also_before[0]: 'charge' is the adding task, a task the new ones"),
    (_add(_gt("a", "audit"), also_before=("audit",)), "would close a cycle"),
    (_add(_gt("a", task=_task(task_id="mine"))), "tasks[0].task.task_id: not allowed in a graph"),
])
def test_an_add_is_refused_naming_the_field(request_, message):
    assert message in _add_refused(request_)
