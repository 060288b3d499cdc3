"""dispatcher/engine/outcomes.py: what one finished attempt does next, as a pure function."""
from __future__ import annotations

import random

import pytest

from dispatcher.base.clock import ms_to_datetime
from dispatcher.base.config import KafkaConfig, NodeConfig
from dispatcher.engine.due import KAFKA, MYSQL, Due
from dispatcher.engine.outcomes import decide
from dispatcher.log.codec import decode_queued
from dispatcher.params import decide_params
from dispatcher.store import records as r
from taskring.task import TaskState
from taskring.wire import pb

NOW_MS = 1_900_000_000_000
CONFIG = NodeConfig(node_id="n1", route_threshold_ms=10_000, kafka=KafkaConfig(topic_prefix="t"))
PARAMS = decide_params(CONFIG)


def _due(attempt: int = 1, max_retries: int = 3, schedule_ms: tuple[int, ...] = (5_000,)) -> Due:
    task = pb.Task(task_id="a", namespace="ns", task_type="send", priority=pb.PRIORITY_NORMAL, max_retries=max_retries,
                   retry_policy=pb.RetryPolicy(schedule_ms=list(schedule_ms)))
    return Due(task=task, slot=2, attempt=attempt, due_ms=NOW_MS - 100, source=KAFKA, epoch=7,
               dispatched_ms=NOW_MS - 50)


def _outcome(kind: int, started_ms: int = NOW_MS - 40, error: str = "") -> pb.Outcome:
    return pb.Outcome(task_id="a", attempt=1, kind=kind, error=error, started_at_ms=started_ms,  # type: ignore[arg-type]
                      finished_at_ms=NOW_MS)


def _states(write: r.OutcomeWrite) -> list[TaskState]:
    return [e.state for e in write.events]


def test_a_success_is_running_then_succeeded_and_nothing_to_send():
    d = decide(_due(), _outcome(pb.OUTCOME_KIND_SUCCEEDED), NOW_MS, PARAMS, random.Random(1))
    assert (d.write.result, d.message, d.kind, d.retry_path) == (r.SUCCEEDED, None, "succeeded", None)
    assert _states(d.write) == [TaskState.RUNNING, TaskState.SUCCEEDED]
    assert (d.write.task_id, d.write.slot, d.write.attempt) == ("a", 2, 1)


def test_a_short_retry_goes_back_through_kafka_as_the_next_attempt():
    d = decide(_due(), _outcome(pb.OUTCOME_KIND_RETRYABLE_FAILURE, error="boom"), NOW_MS, PARAMS, random.Random(1))
    assert (d.write.result, d.write.retry_status, d.retry_path) == (r.RETRY, r.ENQUEUED, KAFKA)
    assert d.write.retry_at == ms_to_datetime(NOW_MS + 5_000) and d.write.error == "boom"
    assert d.message is not None and (d.message.topic, d.message.partition) == ("t.normal", 2)
    queued = decode_queued(d.message.value)
    assert (queued.attempt, queued.due_at_ms) == (2, NOW_MS + 5_000)
    assert _states(d.write) == [TaskState.RUNNING, TaskState.RETRY_WAIT]


def test_a_retry_past_the_route_threshold_waits_in_mysql():
    d = decide(_due(schedule_ms=(60_000,)), _outcome(pb.OUTCOME_KIND_TIMED_OUT), NOW_MS, PARAMS, random.Random(1))
    assert (d.write.retry_status, d.retry_path, d.message) == (r.PENDING, MYSQL, None)
    assert d.write.error == "timed_out"  # no error text: the kind says what happened


@pytest.mark.parametrize("attempt, max_retries, kind, why", [
    (4, 3, pb.OUTCOME_KIND_RETRYABLE_FAILURE, "gave up after 4 attempts"),
    (1, 3, pb.OUTCOME_KIND_NON_RETRYABLE_FAILURE, "non-retryable failure"),
    (1, 0, pb.OUTCOME_KIND_RETRYABLE_FAILURE, "gave up after 1 attempts"),
])
def test_what_cannot_run_again_is_dead_lettered(attempt, max_retries, kind, why):
    d = decide(_due(attempt=attempt, max_retries=max_retries), _outcome(kind, error="bad"), NOW_MS, PARAMS,
               random.Random(1))
    assert (d.write.result, d.message, d.retry_path) == (r.DEAD_LETTERED, None, None)
    assert _states(d.write) == [TaskState.RUNNING, TaskState.FAILED, TaskState.DEAD_LETTERED]
    assert d.write.events[-1].detail == why


@pytest.mark.parametrize("started_ms, shown_ms", [
    (NOW_MS - 40, NOW_MS - 40),     # as the executor said
    (NOW_MS - 10_000, NOW_MS - 50),  # before the dispatch (its clock is behind): at the dispatch
    (NOW_MS + 10_000, NOW_MS),       # after now (its clock is ahead): now
])
def test_the_start_time_is_kept_between_the_dispatch_and_now(started_ms, shown_ms):
    d = decide(_due(), _outcome(pb.OUTCOME_KIND_SUCCEEDED, started_ms=started_ms), NOW_MS, PARAMS, random.Random(1))
    assert d.write.events[0].at == ms_to_datetime(shown_ms)


def test_an_outcome_without_a_start_time_has_no_running_event():
    d = decide(_due(), _outcome(pb.OUTCOME_KIND_SUCCEEDED, started_ms=0), NOW_MS, PARAMS, random.Random(1))
    assert _states(d.write) == [TaskState.SUCCEEDED]
