"""The task as a caller sees it: what you submit, and what you get back.

Plain frozen dataclasses and enums with no gRPC in them; `_envelope.py` turns
them into the wire messages and back. A `TaskSpec` checks on construction only
what the wire cannot carry (a naive datetime, a negative delay, an unknown
priority, both a delay and a schedule time). Everything else, such as name
syntax, payload size, or retry ranges, is judged by the server, which answers
with `InvalidArgument` naming the field, so the rules live in one place.
"""
from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

Seconds = float | int
"""A duration given as a plain number of seconds."""

_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1


class TaskState(enum.StrEnum):
    """Where a task is in its lifecycle (DESIGN.md).

    ``accepted -> queued -> dispatched -> running -> succeeded``, with
    ``running -> retry_wait -> queued`` for retries and
    ``running -> failed -> dead_lettered`` when they run out, plus ``cancelled``.
    A task of a graph starts ``accepted -> waiting`` and is then ``queued`` when the
    tasks it depends on allow it, or ``skipped`` when they no longer can.
    """

    ACCEPTED = "accepted"
    QUEUED = "queued"
    DISPATCHED = "dispatched"
    RUNNING = "running"
    RETRY_WAIT = "retry_wait"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"
    CANCELLED = "cancelled"
    WAITING = "waiting"
    """A task of a graph waiting for the tasks it depends on (taskring.graph)."""
    SKIPPED = "skipped"
    """A task of a graph that will not run: its join rule can no longer be met."""

    @property
    def is_terminal(self) -> bool:
        """True when the task will not run again (short of a manual replay)."""
        return self in _TERMINAL

    @property
    def successors(self) -> frozenset[TaskState]:
        """The states that may come right after this one in a task's history."""
        return LIFECYCLE[self]


LIFECYCLE: dict[TaskState, frozenset[TaskState]] = {
    # The one table of the lifecycle: the server writes histories by it (a test holds
    # every history the engine and both stores write to it), and the SDKs read them.
    TaskState.ACCEPTED: frozenset({TaskState.QUEUED, TaskState.WAITING}),
    # A task of a graph waits for its parents: released (queued), skipped by its join rule,
    # or cancelled.
    TaskState.WAITING: frozenset({TaskState.QUEUED, TaskState.SKIPPED, TaskState.CANCELLED}),
    # Re-opened when a task it depends on is skipped by an operator or replayed.
    TaskState.SKIPPED: frozenset({TaskState.WAITING}),
    TaskState.QUEUED: frozenset({TaskState.DISPATCHED, TaskState.CANCELLED}),
    # Dispatched and then: started; an outcome with no start time (it never began, or
    # the executor did not say); handed back unspent (queued again, same attempt); or
    # cancelled while it ran (a type that heartbeats: its handler learns it at its next one).
    TaskState.DISPATCHED: frozenset({TaskState.RUNNING, TaskState.SUCCEEDED, TaskState.RETRY_WAIT,
                                     TaskState.FAILED, TaskState.QUEUED, TaskState.CANCELLED}),
    TaskState.RUNNING: frozenset({TaskState.SUCCEEDED, TaskState.RETRY_WAIT, TaskState.FAILED}),
    TaskState.RETRY_WAIT: frozenset({TaskState.QUEUED, TaskState.CANCELLED}),
    TaskState.FAILED: frozenset({TaskState.DEAD_LETTERED}),
    TaskState.SUCCEEDED: frozenset(),
    # A dead letter runs again only when an operator replays it: it waits for that retry
    # (retry_wait, due at once, same id), then is queued as any retry is. A task of a graph
    # may instead be skipped by an operator, and what depends on it goes on.
    TaskState.DEAD_LETTERED: frozenset({TaskState.RETRY_WAIT, TaskState.SKIPPED}),
    TaskState.CANCELLED: frozenset(),
}
_TERMINAL = frozenset({TaskState.SUCCEEDED, TaskState.DEAD_LETTERED, TaskState.CANCELLED, TaskState.SKIPPED})


class Priority(enum.StrEnum):
    """Priority class. Each class has its own Kafka topic, so LOW never queues ahead of HIGH."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


def to_timedelta(value: timedelta | Seconds, what: str) -> timedelta:
    """Accept a timedelta or a number of seconds; refuse negatives, naming the field."""
    if isinstance(value, bool) or not isinstance(value, (timedelta, int, float)):
        raise TypeError(f"{what}: expected a timedelta or seconds, got {type(value).__name__}")
    td = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if td < timedelta(0):
        raise ValueError(f"{what}: must not be negative, got {td}")
    return td


def to_millis(td: timedelta) -> int:
    """Whole milliseconds, rounded up: a delay must never make a task run early."""
    return math.ceil(td / timedelta(milliseconds=1))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a failed attempt is retried; overrides the task type's and the server's policy.

    Either exponential backoff with full jitter, or, when `schedule` is not empty,
    a tiered schedule where retry n (counting from 1) waits ``schedule[min(n - 1, len - 1)]``
    (``RetryPolicy.tiered(10, 60, 600)``: 10 s, then 1 min, then every 10 min).
    Durations are timedeltas or seconds and are stored as timedeltas.
    """

    initial_backoff: timedelta | Seconds = timedelta(seconds=1)
    """Backoff before the first retry, before jitter."""
    max_backoff: timedelta | Seconds = timedelta(minutes=5)
    """Cap on the backoff, before jitter."""
    multiplier: float = 2.0
    """Growth of the backoff per retry; 1.0 is a constant backoff."""
    schedule: Sequence[timedelta | Seconds] = ()
    """Tiered waits; when given, the three fields above are ignored."""

    def __post_init__(self) -> None:
        initial = to_timedelta(self.initial_backoff, "retry_policy.initial_backoff")
        cap = to_timedelta(self.max_backoff, "retry_policy.max_backoff")
        if cap < initial:
            raise ValueError("retry_policy.max_backoff: must be at least initial_backoff")
        if not math.isfinite(self.multiplier) or self.multiplier < 1.0:
            raise ValueError(f"retry_policy.multiplier: must be >= 1.0, got {self.multiplier}")
        schedule = tuple(
            to_timedelta(w, f"retry_policy.schedule[{i}]") for i, w in enumerate(self.schedule)
        )
        object.__setattr__(self, "initial_backoff", initial)
        object.__setattr__(self, "max_backoff", cap)
        object.__setattr__(self, "schedule", schedule)

    @classmethod
    def tiered(cls, *waits: timedelta | Seconds) -> RetryPolicy:
        """A tiered schedule: the n-th retry waits ``waits[min(n, len - 1)]``."""
        if not waits:
            raise ValueError("retry_policy.schedule: give at least one wait")
        return cls(schedule=waits)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One task to submit: the arguments of `Client.submit`, for `submit_batch`."""

    namespace: str
    """The owning service's namespace, ``[a-z0-9][a-z0-9._-]{0,63}``."""
    task_type: str
    """Selects the handler, ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``."""
    payload: Mapping[str, Any] | None = None
    """A JSON object; sent as compact JSON text. None sends ``{}``."""
    task_id: str | None = None
    """Your own id (makes resubmission idempotent); the server assigns a UUIDv7 when None."""
    delay: timedelta | Seconds | None = None
    """Run this long after acceptance. Exclusive with `schedule_time`. Stored as timedelta."""
    schedule_time: datetime | None = None
    """Run at this instant; must be timezone-aware. Exclusive with `delay`."""
    timeout: timedelta | Seconds | None = None
    """Per-attempt deadline of the handler; server default when None. Stored as timedelta."""
    max_retries: int | None = None
    """Retries after the first attempt; server default when None."""
    retry_policy: RetryPolicy | None = None
    """Backoff between attempts; the task type's or the server's when None."""
    priority: Priority | str = Priority.NORMAL
    """``"low"``, ``"normal"`` or ``"high"``. Stored as `Priority`."""
    unique_key: str | None = None
    """At most one task per key in the namespace (enforced by the server): while the
    task holding it is live, a submit with the same key creates nothing and returns
    the holder's task_id with ``duplicate=True``. A task type may declare its key as a
    template over the payload on the server; this one wins over it."""
    trace_id: str | None = None
    """Carried to the handler, for joining logs across services."""
    payload_version: int = 0
    """Schema version of the payload, for handlers that read several versions."""
    unique_ttl: timedelta | Seconds | None = None
    """Hold the unique key this long from acceptance, even after the task finished
    (None: release it when the task reaches a terminal state). Stored as timedelta."""

    def __post_init__(self) -> None:
        if self.payload is not None and not isinstance(self.payload, Mapping):
            raise TypeError(f"payload: must be a mapping (a JSON object), got {type(self.payload).__name__}")
        if self.delay is not None and self.schedule_time is not None:
            raise ValueError("delay: give either delay or schedule_time, not both")
        if self.delay is not None:
            delay = to_timedelta(self.delay, "delay")
            if to_millis(delay) > _UINT64_MAX:
                raise ValueError("delay: too large")
            object.__setattr__(self, "delay", delay)
        if self.schedule_time is not None:
            st = self.schedule_time
            if not isinstance(st, datetime):
                raise TypeError(f"schedule_time: expected a datetime, got {type(st).__name__}")
            if st.tzinfo is None or st.utcoffset() is None:
                raise ValueError("schedule_time: must be timezone-aware (a naive datetime has no offset)")
        if self.timeout is not None:
            timeout = to_timedelta(self.timeout, "timeout")
            if not 0 < to_millis(timeout) <= _UINT32_MAX:
                raise ValueError(f"timeout: must be between 1 ms and {_UINT32_MAX} ms")
            object.__setattr__(self, "timeout", timeout)
        if self.unique_ttl is not None:
            unique_ttl = to_timedelta(self.unique_ttl, "unique_ttl")
            if not 0 < to_millis(unique_ttl) <= _UINT64_MAX:
                raise ValueError("unique_ttl: must be at least 1 ms")
            object.__setattr__(self, "unique_ttl", unique_ttl)
        if self.max_retries is not None and not -(2**31) <= self.max_retries < 2**31:
            raise ValueError("max_retries: out of the int32 range")
        if not 0 <= self.payload_version <= _UINT32_MAX:
            raise ValueError("payload_version: must be a uint32")
        try:
            priority = self.priority.lower() if isinstance(self.priority, str) else self.priority
            object.__setattr__(self, "priority", Priority(priority))
        except ValueError:
            raise ValueError(f"priority: must be one of low, normal, high; got {self.priority!r}") from None


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """The server's receipt for one submitted task."""

    task_id: str
    duplicate: bool
    """True when nothing new was written: this task_id was already accepted, or the
    unique key is held by the task `task_id` names (then not the id you gave)."""
    state: TaskState
    due_at: datetime | None
    """When the first attempt is due (UTC)."""
    slot: int
    """The slot (Kafka partition, unit of ownership) the task lives in."""


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """One recorded transition of a task."""

    state: TaskState
    at: datetime
    """When it happened (UTC, millisecond precision)."""
    node: str
    """The dispatcher node that recorded it."""
    attempt: int
    detail: str
    """Error text for failures, reason for cancels; often empty."""


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task as stored, with its state and history (`Client.get`)."""

    task_id: str
    namespace: str
    task_type: str
    state: TaskState
    attempts: int
    """Attempts made so far."""
    due_at: datetime | None
    slot: int
    payload: dict[str, Any]
    payload_version: int
    priority: Priority
    last_error: str
    last_stack_trace: str
    history: list[TaskEvent] = field(default_factory=list)
    """Transitions, oldest first."""
    waiting: str = ""
    """Why a due task has not started, when its owner holds it at a limit of its type
    ("concurrency limit per_type (at most 20 running)", a retry cap, a rate); "" otherwise."""
    created_at: datetime | None = None
    schedule_time: datetime | None = None
    timeout: timedelta | None = None
    max_retries: int | None = None
    unique_key: str = ""
    trace_id: str = ""
    cron_rule: str = ""
    """"namespace/name" of the cron rule whose fire this task is ("" for a submitted task)."""
    cron_fire_time: datetime | None = None
    """The fire time this task is for (a cron rule's task)."""
