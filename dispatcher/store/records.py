"""Plain records that cross the store's boundary."""
from __future__ import annotations

import dataclasses
import datetime as dt

# Row statuses (see migrations/001_init.sql for what each means).
PENDING = "pending"
ENQUEUED = "enqueued"
CLAIMED = "claimed"
DISPATCHED = "dispatched"
SUCCEEDED = "succeeded"
DEAD_LETTERED = "dead_lettered"
CANCELLED = "cancelled"
TERMINAL = frozenset({SUCCEEDED, DEAD_LETTERED, CANCELLED})
CANCELLABLE = frozenset({PENDING, ENQUEUED, CLAIMED})


@dataclasses.dataclass(frozen=True)
class NewTask:
    task_id: str
    slot: int
    namespace: str
    task_type: str
    priority: int
    status: str            # PENDING (MySQL path) or ENQUEUED (Kafka path)
    trigger_at: dt.datetime
    envelope: bytes        # pb.Task, serialized
    created_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class TaskRow:
    task_id: str
    slot: int
    namespace: str
    task_type: str
    priority: int
    status: str
    trigger_at: dt.datetime
    attempts: int
    epoch: int
    envelope: bytes
    last_error: str | None
    last_stack_trace: str | None
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class Event:
    task_id: str
    state: str
    at: dt.datetime
    node: str
    attempt: int
    detail: str | None = None


@dataclasses.dataclass(frozen=True)
class DispatchClaim:
    """A due task the owner wants to hand to an executor as `attempt`."""

    task_id: str
    slot: int
    attempt: int
    source: str            # "kafka" (row must be ENQUEUED) or "mysql" (row must be CLAIMED)
    due_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class OutcomeWrite:
    """What one finished attempt does to its row."""

    task_id: str
    slot: int
    attempt: int
    result: str            # SUCCEEDED, DEAD_LETTERED, or "retry"
    events: tuple[Event, ...]
    retry_status: str | None = None        # PENDING or ENQUEUED when result == "retry"
    retry_at: dt.datetime | None = None
    error: str | None = None
    stack_trace: str | None = None
