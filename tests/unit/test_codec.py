"""The Kafka message of a task: framed around a stored envelope, it is byte for byte
what protobuf serializes, and decodes back to the same attempt."""
from __future__ import annotations

import pytest

from dispatcher.log.codec import decode_queued, queued_message, queued_message_of_envelope
from taskring.wire import pb


@pytest.mark.parametrize("attempt, due_ms", [(1, 1_900_000_000_123), (0, 0), (300, 1), (2, -5), (1, 2**62)])
@pytest.mark.parametrize("payload", ["{}", '{"order_id":12345,"note":"' + "x" * 300 + '"}'])
def test_framing_around_the_envelope_matches_protobuf(attempt, due_ms, payload):
    task = pb.Task(task_id="t-1", namespace="shop", task_type="order.cancel", payload_json=payload,
                   max_retries=3, priority=pb.PRIORITY_HIGH, retry_policy=pb.RetryPolicy(schedule_ms=[10, 20]))
    envelope = task.SerializeToString()
    framed = queued_message_of_envelope("tasks.high", "t-1", envelope, 7, attempt, due_ms)
    reference = queued_message("tasks.high", task, 7, attempt, due_ms)
    assert framed == reference
    back = decode_queued(framed.value)
    assert (back.task, back.attempt, back.due_at_ms) == (task, attempt, due_ms)
