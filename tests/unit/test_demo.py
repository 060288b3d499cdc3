"""The demo's judgement of a run: when is the ring settled, when did a task end as expected."""
from __future__ import annotations

import datetime as dt

from harness.demo_tasks import Planned, attempt_starts, history_text, judge, path_of, ran_on
from harness.ringcheck import ring_problems
from taskring import Priority, TaskEvent, TaskInfo, TaskSpec, TaskState

T0 = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.UTC)
SPEC = TaskSpec("demo", "charge_card")  # what was submitted; judging never looks at it


def at(ms: int) -> dt.datetime:
    return T0 + dt.timedelta(milliseconds=ms)


def ev(state: str, ms: int, attempt: int, detail: str = "", node: str = "demo-node-2") -> TaskEvent:
    return TaskEvent(state=TaskState(state), at=at(ms), node=node, attempt=attempt, detail=detail)


def info(state: str, attempts: int, history: list[TaskEvent]) -> TaskInfo:
    return TaskInfo(task_id="t1", namespace="demo", task_type="charge_card", state=TaskState(state),
                    attempts=attempts, due_at=None, slot=13, payload={}, payload_version=0, priority=Priority.NORMAL,
                    last_error="", last_stack_trace="", history=history)


def ring(members, slots):
    return {"members": {m: {} for m in members},
            "slots": [{"slot": i, "desired_owner": d, "actual_owner": a, "epoch": 1 if a else None}
                      for i, (d, a) in enumerate(slots)]}


def test_ring_settled_only_when_every_member_is_seen_and_every_slot_owned_by_its_desired_owner():
    want = {"n1", "n2"}
    assert ring_problems(ring(["n1", "n2"], [("n1", "n1"), ("n2", "n2")]), want) == []
    # alone at first: it owns everything it desires, but the other member is missing
    assert ring_problems(ring(["n1"], [("n1", "n1"), ("n1", "n1")]), want)
    # a slot between owners, or not owned at all
    assert ring_problems(ring(["n1", "n2"], [("n1", "n1"), ("n2", "n1")]), want)
    assert ring_problems(ring(["n1", "n2"], [("n1", None), ("n2", "n2")]), want)


RETRIED = [
    ev("accepted", 0, 0), ev("queued", 0, 0, "kafka"),
    ev("dispatched", 10, 1), ev("running", 12, 1), ev("retry_wait", 20, 1, "retryable_failure: x; retry in 500 ms"),
    ev("queued", 520, 2, node="demo-node-3"), ev("dispatched", 521, 2, node="demo-node-3"),
    ev("running", 525, 2, node="demo-node-3"), ev("succeeded", 530, 2, node="demo-node-3"),
]


def test_attempt_lateness_uses_the_submit_due_time_then_each_retry_queued_time():
    p = Planned(spec=SPEC, via=1, expect_state="succeeded", expect_attempts=2, task_id="t1", due_at=at(5),
                info=info("succeeded", 2, RETRIED))
    assert attempt_starts(p) == [(1, T0.timestamp() * 1000 + 5, T0.timestamp() * 1000 + 12),
                                 (2, T0.timestamp() * 1000 + 520, T0.timestamp() * 1000 + 525)]
    assert path_of(p.info) == "kafka"
    assert ran_on(p.info) == "node-2,node-3"
    assert history_text(p.info).startswith("accepted > queued > dispatched#1 > running#1 > retry_wait#1")
    assert judge(p, calls=2) == ([], [])


def test_judge_flags_a_wrong_outcome_an_early_start_and_extra_handler_calls():
    p = Planned(spec=SPEC, via=1, expect_state="succeeded", expect_attempts=3, task_id="t1", due_at=at(50),
                info=info("succeeded", 2, RETRIED))
    problems, notes = judge(p, calls=3)
    assert any("expected succeeded after 3" in x for x in problems)
    assert any("before it was due" in x for x in problems)  # attempt 1 started at 12 ms, due at 50 ms
    assert notes == ["the handler ran 3 time(s) for 2 recorded attempt(s)"]


def test_the_demo_refuses_topics_with_fewer_partitions_than_its_nodes_have_slots():
    from harness.demo import topic_problems

    # topics an older `stack.sh up` made with 16 partitions, nodes of 64 slots (the default)
    assert topic_problems({"p.high": 16, "p.normal": 64, "p.low": None}, 64) == [
        "Kafka topic p.high has 16 partitions, fewer than the nodes' 64 slots",
        "Kafka topic p.low does not exist"]
    # more partitions than slots is fine: a node uses the first ones
    assert topic_problems({"p.high": 64, "p.normal": 128}, 64) == []
