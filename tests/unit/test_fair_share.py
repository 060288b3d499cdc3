"""Fair shares of executor time among a type's tenants (dispatcher/engine/fair_share.py): deficit
round robin with costs in executor ms, corrected at each outcome; declared per type (policy)."""
from __future__ import annotations

import collections

import pytest

from dispatcher.engine.due import KAFKA, Due
from dispatcher.engine.fair_share import FairShare
from dispatcher.policy.fairness import FairPolicy
from dispatcher.policy.retry import InvalidRetryPolicy, parse_retry_policies
from taskring.wire import pb

KEY = ("reports", "render")


def run_rounds(share: FairShare, durations: dict[str, float], rounds: int, room: int = 1,
               backlog: int = 10_000) -> dict[str, float]:
    """Executor ms each flow got over `rounds` picks, every flow always having work waiting;
    each pick is charged its real duration at once."""
    spent: dict[str, float] = collections.defaultdict(float)
    for _ in range(rounds):
        for flow, n in share.pick(KEY, dict.fromkeys(durations, backlog), room).items():
            for _ in range(n):
                share.charge(KEY, flow, share.estimate(KEY, flow), durations[flow])
                spent[flow] += durations[flow]
    return spent


def test_a_tenant_with_slow_tasks_gets_its_share_of_executor_time_not_of_starts():
    share = FairShare({KEY: FairPolicy("tenant:{t}")})
    spent = run_rounds(share, {"tenant:noisy": 100.0, "tenant:quiet": 10.0}, rounds=2_000)
    ratio = spent["tenant:noisy"] / spent["tenant:quiet"]
    assert 0.8 < ratio < 1.25, spent    # equal weights: equal executor time, so ten quiet starts per noisy one


def test_weights_divide_executor_time_in_proportion():
    share = FairShare({KEY: FairPolicy("tenant:{t}", {"tenant:big": 3})})
    spent = run_rounds(share, {"tenant:big": 20.0, "tenant:small": 20.0}, rounds=2_000)
    assert 2.6 < spent["tenant:big"] / spent["tenant:small"] < 3.4, spent


def test_a_flow_that_empties_leaves_the_round_and_keeps_no_credit():
    share = FairShare({KEY: FairPolicy("tenant:{t}")})
    assert share.pick(KEY, {"a": 1, "b": 5}, room=10) == {"a": 1, "b": 5}
    assert share.active_flows(KEY) == 0, "both emptied and left"
    assert share.pick(KEY, {"a": 1, "b": 5}, room=3) == {"a": 1, "b": 2}
    assert share.active_flows(KEY) == 1, "a emptied and left"
    assert share.pick(KEY, {"b": 3}, room=1) == {"b": 1}
    assert share.pick(KEY, {}, room=5) == {} and share.active_flows(KEY) == 0


def test_no_room_picks_nothing_and_instant_tasks_still_take_turns():
    share = FairShare({KEY: FairPolicy("tenant:{t}")})
    assert share.pick(KEY, {"a": 3}, room=0) == {}
    picked: collections.Counter[str] = collections.Counter()
    for _ in range(100):
        for flow, n in share.pick(KEY, {"a": 100, "b": 100}, room=1).items():
            picked[flow] += n
            share.charge(KEY, flow, share.estimate(KEY, flow), 0)   # 0 ms: estimates floor at 1 ms
    assert abs(picked["a"] - picked["b"]) <= 2, picked


def test_a_flow_comes_from_the_payload_once_and_a_payload_without_the_field_is_the_empty_flow():
    share = FairShare({KEY: FairPolicy("tenant:{t}")})
    d = Due(task=pb.Task(task_id="x", namespace=KEY[0], task_type=KEY[1], payload_json='{"t": "acme"}'), slot=0,
            attempt=1, due_ms=0, source=KAFKA, epoch=1)
    assert share.flow_of(KEY, d) == "tenant:acme" and d.fair_flow == "tenant:acme"
    bare = Due(task=pb.Task(task_id="y", namespace=KEY[0], task_type=KEY[1], payload_json="{}"), slot=0,
               attempt=1, due_ms=0, source=KAFKA, epoch=1)
    assert share.flow_of(KEY, bare) == ""


def test_fairness_is_declared_per_type_with_weights():
    policies = parse_retry_policies('{"reports/render": {"fairness": {"key": "tenant:{t}",'
                                    ' "weights": {"tenant:big": 2.5}}}}')
    assert policies.fairness_by_type == {KEY: FairPolicy("tenant:{t}", {"tenant:big": 2.5})}


@pytest.mark.parametrize("fairness, says", [
    ('{"weights": {}}', "a/b.fairness.key: is required"),
    ('{"key": "tenant"}', "a/b.fairness.key: names no payload field"),
    ('{"key": "t:{t}", "weights": {"t:x": 0}}', "a/b.fairness.weights.t:x: must be a number in (0, 1000], got 0"),
    ('{"key": "t:{t}", "weights": {"t:x": -1}}', "a/b.fairness.weights.t:x: must be a number"),
    ('{"key": "t:{t}", "weights": {"t:x": "2"}}', "a/b.fairness.weights.t:x: must be a number"),
    ('{"key": "t:{t}", "weights": [1]}', "a/b.fairness.weights: must be a JSON object"),
    ('{"key": "t:{t}", "share": 1}', "a/b.fairness.share: is not a fairness field"),
    ('"t:{t}"', "a/b.fairness: must be a JSON object"),
])
def test_bad_fairness_is_refused_naming_the_field(fairness, says):
    with pytest.raises(InvalidRetryPolicy) as refused:
        parse_retry_policies(f'{{"a/b": {{"fairness": {fairness}}}}}')
    assert says in str(refused.value)
