"""SubmitGraph's validation (dispatcher/api/graph_validation.py), without a server: every
refusal names its field; what passes comes out with derived ids, parents, join rules and
which tasks have dependents."""
from __future__ import annotations

import datetime as dt

import pytest

from dispatcher.api.graph_validation import MAX_TASKS, graph_task_id, validate_graph
from dispatcher.api.validation import Limits
from dispatcher.base.errors import InvalidArgument
from dispatcher.store.graph_rules import JoinRule, OnFailure
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
