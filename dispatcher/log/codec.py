"""A task attempt as a Kafka message, and back.

The key is the task id (Kafka's ordering and compaction key); the partition is the
task's slot, so the slot's owner is the only reader of its messages; the value is
a QueuedTask: the task's envelope, which attempt this is and when it falls due.
"""
from __future__ import annotations

from google.protobuf.message import DecodeError

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


def _varint(value: int) -> bytes:
    """A protobuf base-128 varint; negative int64 values take their 10-byte two's complement."""
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


def split_queued(value: bytes) -> tuple[bytes, int, int]:
    """(the task's envelope, still serialized; attempt; due_at_ms) of a QueuedTask.

    The intake keeps a waiting task's envelope as bytes (dispatcher/due.py), so it
    reads the three fields of the wrapper without decoding the task inside. Any valid
    encoding is read (unknown fields skipped); bytes that are no QueuedTask raise
    DecodeError, as QueuedTask.FromString would.
    """
    envelope, attempt, due_ms = b"", 0, 0
    i, n = 0, len(value)
    while i < n:
        key, i = _read_varint(value, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            number, i = _read_varint(value, i)
            if field == 2:
                attempt = number & 0xFFFFFFFF
            elif field == 3:
                due_ms = number - (1 << 64) if number >= 1 << 63 else number
        elif wire == 2:
            length, i = _read_varint(value, i)
            if i + length > n:
                raise DecodeError("QueuedTask: a field runs past the end of the message")
            if field == 1:
                envelope = value[i:i + length]
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise DecodeError(f"QueuedTask: unexpected wire type {wire}")
    if i != n:
        raise DecodeError("QueuedTask: truncated")
    return envelope, attempt, due_ms


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise DecodeError("QueuedTask: truncated or oversized varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
