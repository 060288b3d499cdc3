"""The Python SDK's graphs without a server: the builder's own checks, the request it
builds, a handler's result as JSON within its bound, and parents' results decoded lazily."""
from __future__ import annotations

import pytest

from taskring import TaskSpec
from taskring.context import GraphPart, result_json_of
from taskring.graph import Graph, Join, cancel_graph_request
from taskring.wire import pb


def test_the_builder_refuses_what_it_can_see_and_builds_the_request():
    g = Graph("order-1")
    charge = g.task("charge", TaskSpec("shop", "charge_card", {"order": 1}))
    ship = g.task("ship", TaskSpec("shop", "ship_order"), after=[charge])
    g.task("close", TaskSpec("shop", "close_order"), after=[ship, charge.on_failure("ignore")],
           join=Join.at_least_succeeded(1))
    with pytest.raises(ValueError, match=r"tasks\[3\].key: repeats 'ship'"):
        g.task("ship", TaskSpec("shop", "x"))
    elsewhere = Graph("other").task("charge", TaskSpec("shop", "y"))
    with pytest.raises(ValueError, match=r"tasks\[3\].depends_on\[0\]: 'charge' is a task of another graph"):
        g.task("x", TaskSpec("shop", "x"), after=[elsewhere])
    request = g.to_pb()
    assert (request.namespace, request.graph_id, [t.key for t in request.tasks]) == ("shop", "order-1",
                                                                                     ["charge", "ship", "close"])
    close = request.tasks[2]
    assert [(d.key, d.on_failure) for d in close.depends_on] == [("ship", pb.ON_FAILURE_SKIP),
                                                                 ("charge", pb.ON_FAILURE_IGNORE)]
    assert (close.join.rule, close.join.at_least) == (pb.JOIN_RULE_AT_LEAST, 1)
    assert request.tasks[0].task.payload_json == '{"order":1}'


def test_join_and_cancel_arguments_are_checked():
    with pytest.raises(ValueError, match="at_least: must be a whole number >= 1"):
        Join.at_least_succeeded(0)
    with pytest.raises(ValueError, match="mode: must be 'graceful' or 'immediate'"):
        cancel_graph_request("shop", "g", "now", "")
    assert cancel_graph_request("shop", "g", "immediate", "r").mode == pb.CANCEL_MODE_IMMEDIATE
    with pytest.raises(ValueError, match="graph_id"):
        Graph("")


@pytest.mark.parametrize("value, json_text, error", [
    (None, "", ""),
    ({"charge_id": "ch_81"}, '{"charge_id":"ch_81"}', ""),
    ("süß", '"süß"', ""),
    ({1, 2}, "", "result: the handler's return value is not JSON"),
    (float("nan"), "", "result: the handler's return value is not JSON"),
    ("x" * 70_000, "", "result: 70002 bytes as JSON, more than 65536"),
])
def test_a_result_is_json_within_its_bound(value, json_text, error):
    text, why = result_json_of(value)
    assert text == json_text and why.startswith(error)


def test_parents_results_are_decoded_on_first_use_and_a_left_out_one_says_so():
    raw = [pb.ParentResult(key="charge", task_id="t1", outcome="succeeded", result_json='{"id": 7}'),
           pb.ParentResult(key="email", task_id="t2", outcome="ignored", error="smtp down"),
           pb.ParentResult(key="big", task_id="t3", outcome="succeeded")]
    part = GraphPart(True, raw, truncated=True)
    parents = part.parents()
    assert parents["charge"].result == {"id": 7}
    assert (parents["email"].outcome, parents["email"].result, parents["email"].error) == ("ignored", None,
                                                                                          "smtp down")
    with pytest.raises(LookupError, match="was not delivered"):
        _ = parents["big"].result
    assert part.parents() is parents
