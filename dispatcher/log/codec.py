"""A task attempt as a Kafka message, and back.

The key is the task id (Kafka's ordering and compaction key); the partition is the
task's slot, so the slot's owner is the only reader of its messages; the value is
a QueuedTask: the task's envelope, which attempt this is and when it falls due.
"""
from __future__ import annotations

from dispatcher.log.interface import OutMessage
from taskring.wire import pb


def queued_message(topic: str, task: pb.Task, slot: int, attempt: int, due_ms: int) -> OutMessage:
    value = pb.QueuedTask(task=task, attempt=attempt, due_at_ms=due_ms).SerializeToString()
    return OutMessage(topic=topic, partition=slot, key=task.task_id.encode(), value=value)


def decode_queued(value: bytes) -> pb.QueuedTask:
    return pb.QueuedTask.FromString(value)
