"""One attempt of a task waiting in the node's heap, and the two paths it can come by."""
from __future__ import annotations

from taskring.wire import pb

KAFKA, MYSQL = "kafka", "mysql"
"""Where a Due came from: a Kafka message of an owned partition, or a row the poller claimed."""


class Due:
    """One attempt of a task waiting in the heap.

    A task can wait in the heap for as long as the route threshold (ten minutes by
    default), and a node may hold a million of them: so a Due keeps its task's
    envelope as the bytes it came in (a stored row's, a Kafka message's) and decodes
    it when first asked for `task`, at dispatch. A decoded pb.Task held a task in
    about 1,700 bytes (loadtest/heap_memory.py); what the heap itself needs, the id
    and the priority, is kept beside the bytes.
    """

    __slots__ = ("_task", "_envelope", "task_id", "priority", "slot", "attempt", "due_ms", "source", "epoch",
                 "topic", "offset", "dispatched_ms", "limit_held", "limit_key", "fair_flow", "fair_turn",
                 "wait_noted")

    def __init__(self, *, slot: int, attempt: int, due_ms: int, source: str, epoch: int,
                 task: pb.Task | None = None, envelope: bytes | None = None, task_id: str | None = None,
                 priority: int | None = None, topic: str | None = None, offset: int = -1, dispatched_ms: int = 0):
        """Either `task`, or its `envelope` (serialized pb.Task) with its `task_id` and `priority`."""
        if task is not None:
            self._task: pb.Task | None = task
            self._envelope: bytes | None = None
            self.task_id: str = task.task_id
            self.priority: int = task.priority
        elif envelope is not None and task_id is not None and priority is not None:
            self._task, self._envelope = None, envelope
            self.task_id, self.priority = task_id, priority
        else:
            raise ValueError("Due needs its task, or its envelope with its task_id and priority")
        self.slot = slot
        self.attempt = attempt
        self.due_ms = due_ms
        self.source = source
        self.epoch = epoch
        self.topic = topic
        self.offset = offset
        self.dispatched_ms = dispatched_ms
        self.limit_held = 0   # the places it holds under its type's limits: bits of engine/limits.py
        self.limit_key: str | None = None   # its key under a per-key limit, once worked out
        self.fair_flow: str | None = None   # its flow under its type's fair shares, once worked out
        self.wait_noted: str | None = None   # the limit it was last noted waiting at (dispatch.py)
        self.fair_turn = 0.0   # once its flow's turn came (fair_share.py): the ms its start paid (>= 1),
        # negative once it went on past its flow's queue (dispatch.py _wait_turn)

    @property
    def task(self) -> pb.Task:
        """The task, decoded from its envelope on first use (and kept: it is leaving the heap)."""
        if self._task is None:
            assert self._envelope is not None
            self._task, self._envelope = pb.Task.FromString(self._envelope), None
        return self._task

    def __repr__(self) -> str:
        return (f"Due(task_id={self.task_id!r}, slot={self.slot}, attempt={self.attempt}, due_ms={self.due_ms},"
                f" source={self.source!r}, epoch={self.epoch}, topic={self.topic!r}, offset={self.offset})")


KEEP_DECODED_MS = 1_000
"""A task due within this of its arrival keeps its decoded envelope even in a compact heap."""


def due_of_message(value: bytes, *, slot: int, epoch: int, topic: str, offset: int, now_ms: int,
                   compact: bool) -> Due:
    """The Due of a Kafka message (a QueuedTask) taken from an owned partition. Its task is
    decoded for its id and priority and kept, unless `compact` (the heap is large) and the
    task waits: then only its bytes are kept, decoded again at dispatch. Holding bytes
    cost a third of the memory (loadtest/heap_memory.py) but, measured twice, added about
    6 ms at p50 to the lateness of Kafka-path tasks, which is why it waits for a large heap.
    One QueuedTask.FromString (1.0 µs) rather than reading the wrapper in Python and
    decoding the task inside (3.5 µs): the decoding is protobuf's, in C."""
    queued = pb.QueuedTask.FromString(value)
    task, attempt, due_ms = queued.task, queued.attempt, queued.due_at_ms
    if not compact or due_ms - now_ms <= KEEP_DECODED_MS:
        return Due(task=task, slot=slot, attempt=attempt, due_ms=due_ms, source=KAFKA, epoch=epoch, topic=topic,
                   offset=offset)
    return Due(envelope=task.SerializeToString(), task_id=task.task_id, priority=task.priority, slot=slot,
               attempt=attempt, due_ms=due_ms, source=KAFKA, epoch=epoch, topic=topic, offset=offset)
