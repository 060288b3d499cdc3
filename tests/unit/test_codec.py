"""The Kafka message of a task: framed around a stored envelope, it is byte for byte
what protobuf serializes, and decodes back to the same attempt."""
from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError

from dispatcher.engine.due import KAFKA, Due, due_of_message
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


@pytest.mark.parametrize("attempt, due_ms", [(1, 1_900_000_000_123), (0, 0), (300, 1), (2, -5)])
@pytest.mark.parametrize("compact", [False, True])
def test_the_intake_reads_attempt_due_time_and_task_of_a_message(attempt, due_ms, compact):
    task = pb.Task(task_id="t-1", namespace="shop", task_type="order.cancel", payload_json='{"a":1}',
                   priority=pb.PRIORITY_LOW)
    value = queued_message("tasks.low", task, 3, attempt, due_ms).value
    due = due_of_message(value, slot=3, epoch=1, topic="tasks.low", offset=0, now_ms=due_ms - 60_000, compact=compact)
    assert (due.task, due.task_id, due.priority, due.attempt, due.due_ms) == (task, "t-1", pb.PRIORITY_LOW, attempt,
                                                                              due_ms)


def test_bytes_that_are_no_queued_task_are_refused():
    value = queued_message("tasks.normal", pb.Task(task_id="t-2"), 0, 2, 77).value
    for bad in (value[:-1], b"\x0a\x10abc", b"\x0b", b"\xff"):
        with pytest.raises(DecodeError):
            due_of_message(bad, slot=0, epoch=1, topic="tasks.normal", offset=0, now_ms=0, compact=False)


def test_in_a_large_heap_a_waiting_task_is_held_as_bytes_and_decoded_at_dispatch():
    task = pb.Task(task_id="t-3", namespace="shop", task_type="mail", priority=pb.PRIORITY_HIGH)
    value = queued_message("tasks.high", task, 5, 1, 1_000_000).value

    def make(now_ms: int, compact: bool) -> Due:
        return due_of_message(value, slot=5, epoch=2, topic="tasks.high", offset=9, now_ms=now_ms, compact=compact)
    small_heap, soon = make(1_000_000 - 60_000, False), make(1_000_000 - 500, True)
    later = make(1_000_000 - 60_000, True)
    assert small_heap._envelope is None and soon._envelope is None     # decoded
    assert later._task is None                                          # bytes only, in a large heap
    for due in (small_heap, soon, later):
        assert (due.task_id, due.priority, due.slot, due.attempt, due.due_ms, due.epoch, due.offset) == \
            ("t-3", pb.PRIORITY_HIGH, 5, 1, 1_000_000, 2, 9)
        assert due.task == task
    assert later._envelope is None                                 # decoded once, kept


def test_a_due_needs_its_task_or_its_bytes_with_id_and_priority():
    with pytest.raises(ValueError, match="Due needs its task"):
        Due(envelope=b"", slot=0, attempt=1, due_ms=0, source=KAFKA, epoch=1)
