"""TaskSpec and RetryPolicy refuse, on construction, what the wire cannot carry."""
from datetime import UTC, datetime, timedelta

import pytest

from taskring import Priority, RetryPolicy, TaskSpec, TaskState


def test_naive_schedule_time_is_refused():
    with pytest.raises(ValueError, match="schedule_time"):
        TaskSpec("shop", "t", schedule_time=datetime(2030, 1, 1))


def test_delay_and_schedule_time_are_exclusive():
    with pytest.raises(ValueError, match="delay"):
        TaskSpec("shop", "t", delay=5, schedule_time=datetime(2030, 1, 1, tzinfo=UTC))


def test_durations_accept_seconds_or_timedelta_and_refuse_negatives():
    assert TaskSpec("shop", "t", delay=1.5).delay == timedelta(seconds=1.5)
    assert TaskSpec("shop", "t", timeout=timedelta(seconds=3)).timeout == timedelta(seconds=3)
    with pytest.raises(ValueError, match="delay"):
        TaskSpec("shop", "t", delay=-1)
    with pytest.raises(TypeError, match="timeout"):
        TaskSpec("shop", "t", timeout="3s")  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(ValueError, match="timeout"):
        TaskSpec("shop", "t", timeout=0)


def test_priority_is_normalised_and_checked():
    assert TaskSpec("shop", "t", priority="HIGH").priority is Priority.HIGH
    assert TaskSpec("shop", "t").priority is Priority.NORMAL
    with pytest.raises(ValueError, match="priority"):
        TaskSpec("shop", "t", priority="urgent")


def test_payload_must_be_a_mapping():
    with pytest.raises(TypeError, match="payload"):
        TaskSpec("shop", "t", payload=[1, 2])  # type: ignore[arg-type]  # the wrong type is the point


def test_retry_policy_validates_and_normalises():
    p = RetryPolicy(initial_backoff=0.5, max_backoff=60, multiplier=3)
    assert (p.initial_backoff, p.max_backoff) == (timedelta(seconds=0.5), timedelta(seconds=60))
    assert RetryPolicy.tiered(10, timedelta(minutes=1)).schedule == (timedelta(seconds=10), timedelta(minutes=1))
    with pytest.raises(ValueError, match="multiplier"):
        RetryPolicy(multiplier=0.5)
    with pytest.raises(ValueError, match="max_backoff"):
        RetryPolicy(initial_backoff=10, max_backoff=1)
    with pytest.raises(ValueError, match=r"schedule\[1\]"):
        RetryPolicy.tiered(1, -1)


def test_terminal_states():
    assert {s for s in TaskState if s.is_terminal} == {
        TaskState.SUCCEEDED, TaskState.DEAD_LETTERED, TaskState.CANCELLED, TaskState.SKIPPED,
    }
