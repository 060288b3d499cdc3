"""A task attempt as a Kafka message, and back.

The key is the task id (Kafka's ordering and compaction key); the partition is the
task's slot, so the slot's owner is the only reader of its messages; the value is
a QueuedTask: the task's envelope, which attempt this is and when it falls due.
"""
from __future__ import annotations

import functools

from dispatcher.log.interface import OutMessage
from taskring.wire import pb


def queued_message(topic: str, task: pb.Task, slot: int, attempt: int, due_ms: int) -> OutMessage:
    value = pb.QueuedTask(task=task, attempt=attempt, due_at_ms=due_ms).SerializeToString()
    return OutMessage(topic=topic, partition=slot, key=task.task_id.encode(), value=value)


def queued_message_of_envelope(topic: str, task_id: str, envelope: bytes, slot: int, attempt: int,
                               due_ms: int) -> OutMessage:
    """queued_message for a task whose envelope is serialized already (the API has just
    written it to MySQL): the QueuedTask is framed around those bytes instead of parsing
    and serializing the task again. Byte for byte what queued_message makes."""
    value = b"".join((b"\x0a", _varint(len(envelope)), envelope,
                      b"\x10" + _varint(attempt) if attempt else b"",
                      b"\x18" + _varint(due_ms) if due_ms else b""))
    return OutMessage(topic=topic, partition=slot, key=task_id.encode(), value=value)


@functools.lru_cache(maxsize=8192)
def _varint(value: int) -> bytes:
    """A protobuf base-128 varint; negative int64 values take their 10-byte two's complement.
    Cached: a batch's messages share their lengths, attempt and a few due times, and the
    loop cost more than the rest of the framing (0.2 s of 1.4 in a profile of SubmitBatch)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_queued(value: bytes) -> pb.QueuedTask:
    return pb.QueuedTask.FromString(value)
