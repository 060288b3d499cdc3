"""Plain records that cross the store's boundary, and the vocabulary of a task's state.

Two vocabularies, each said once:
- `TaskState` (the SDK's, taskring.task): the lifecycle callers see, and the state of
  every event in a task's history. Its table of which state may follow which is
  taskring.task.LIFECYCLE.
- `Status` (here): the task row's status, finer than the API state because it says
  which path holds the task's next attempt. STATUS_TRANSITIONS is the table of the
  changes the store makes; `api_state` maps a row to the state callers see.
tests/unit/test_lifecycle.py checks both tables, and that every history the engine and
both stores write follows LIFECYCLE.

The records made once or more per task (NewTask, Event, DispatchClaim, OutcomeWrite)
are slotted dataclasses, not frozen ones: a frozen dataclass pays an object.__setattr__
per field on construction, which profiles of the node showed as 8% of its CPU. Treat
them as values all the same: nothing changes one after it is made.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum

from taskring.task import LIFECYCLE, TaskState


class Status(enum.StrEnum):
    """A task row's status (see migrations/001_init.sql for what each means)."""

    PENDING = "pending"
    ENQUEUED = "enqueued"
    CLAIMED = "claimed"
    DISPATCHED = "dispatched"
    SUCCEEDED = "succeeded"
    DEAD_LETTERED = "dead_lettered"
    CANCELLED = "cancelled"
    WAITING = "waiting"
    SKIPPED = "skipped"


PENDING, ENQUEUED, CLAIMED, DISPATCHED = Status.PENDING, Status.ENQUEUED, Status.CLAIMED, Status.DISPATCHED
SUCCEEDED, DEAD_LETTERED, CANCELLED = Status.SUCCEEDED, Status.DEAD_LETTERED, Status.CANCELLED
WAITING, SKIPPED = Status.WAITING, Status.SKIPPED

STATUS_TRANSITIONS: dict[Status, frozenset[Status]] = {
    # waits for the poller: polled into the heap, or cancelled
    PENDING: frozenset({CLAIMED, CANCELLED}),
    # travels through Kafka: dispatched from the heap; to the MySQL path when Kafka
    # refused it, its message is overdue, or its owner crashed; or cancelled
    ENQUEUED: frozenset({DISPATCHED, PENDING, CANCELLED}),
    # in an owner's heap: dispatched; given back (handoff, recovery); or cancelled
    CLAIMED: frozenset({DISPATCHED, PENDING, CANCELLED}),
    # with an executor: its outcome; a retry on either path; back to pending (the
    # owner crashed, or the attempt was never sent and is not spent); or cancelled while
    # it runs, for a task whose type heartbeats (its handler learns it at its next heartbeat)
    DISPATCHED: frozenset({SUCCEEDED, DEAD_LETTERED, PENDING, ENQUEUED, CANCELLED}),
    SUCCEEDED: frozenset(),
    # an operator's replay (dispatcher/ops/): the task runs again, same id, same history; or,
    # a task of a graph, an operator's skip: its dependents go on as if it had succeeded
    DEAD_LETTERED: frozenset({PENDING, SKIPPED}),
    CANCELLED: frozenset(),
    # a task of a graph waiting for its parents (dispatcher/store/graphs.py): no owner acts on
    # it (lane 0). Released to either path when its join rule is met; skipped when the rule
    # can no longer be met; or cancelled.
    WAITING: frozenset({PENDING, ENQUEUED, SKIPPED, CANCELLED}),
    # skipped by its rule, re-opened when a task it depends on is skipped by an operator or
    # replayed (store/graph_settle.py reopen)
    SKIPPED: frozenset({WAITING}),
}
TERMINAL = frozenset({SUCCEEDED, DEAD_LETTERED, CANCELLED, SKIPPED})
"""Where the engine leaves a task for good; only a person brings a dead letter back."""
CANCELLABLE_RUNNING = frozenset(s for s, after in STATUS_TRANSITIONS.items() if CANCELLED in after)
CANCELLABLE = CANCELLABLE_RUNNING - {DISPATCHED}
"""What a cancel takes: a running attempt (dispatched) only when its type heartbeats, since a
handler that never heartbeats could not learn of the cancel and would run on to an outcome
that the cancelled row then ignores."""

class Lane(enum.IntEnum):
    """Which of a slot's queues a row is in: the `lane` column (migrations/011_lanes.sql),
    which the server derives from `status`. The owner's queries find a slot's rows by
    lane, the prefix of the index, then filter the status; a status change within a
    lane (enqueued -> dispatched) moves no index entry."""

    DONE = 0
    MYSQL = 1
    HEAP = 2
    LIVE = 3


LANE_OF: dict[Status, Lane] = {
    PENDING: Lane.MYSQL, CLAIMED: Lane.HEAP, ENQUEUED: Lane.LIVE, DISPATCHED: Lane.LIVE,
    SUCCEEDED: Lane.DONE, DEAD_LETTERED: Lane.DONE, CANCELLED: Lane.DONE,
    # Not in the owner's lanes: a waiting task is found through graph_nodes until released.
    WAITING: Lane.DONE, SKIPPED: Lane.DONE,
}

RETRY = "retry"
"""OutcomeWrite.result of an attempt that failed and will run again."""


def api_state(status: str, attempts: int, trigger_at: dt.datetime | None, now: dt.datetime) -> TaskState:
    """The lifecycle state callers see of a row: a waiting row that has made attempts
    and is not due yet waits for its retry; one held by an executor is dispatched
    (the history says whether it started running)."""
    status = Status(status)
    if status in (PENDING, ENQUEUED):
        waiting_retry = attempts > 0 and trigger_at is not None and trigger_at > now
        return TaskState.RETRY_WAIT if waiting_retry else TaskState.QUEUED
    if status == CLAIMED:
        return TaskState.QUEUED
    return TaskState(status.value)  # dispatched and the terminal ones share their names


def history_errors(states: list[str]) -> list[str]:
    """What is wrong with a history's sequence of states by LIFECYCLE ([] when nothing)."""
    errors = []
    if states and states[0] != TaskState.ACCEPTED:
        errors.append(f"starts with {states[0]!r}, not accepted")
    for i, (before, after) in enumerate(zip(states, states[1:]), start=1):
        if TaskState(after) not in LIFECYCLE[TaskState(before)]:
            errors.append(f"event {i}: {after!r} may not follow {before!r}")
    return errors


@dataclasses.dataclass(slots=True)
class NewTask:
    task_id: str
    slot: int
    namespace: str
    task_type: str
    priority: int
    status: Status         # PENDING (MySQL path) or ENQUEUED (Kafka path)
    trigger_at: dt.datetime
    envelope: bytes        # pb.Task, serialized
    created_at: dt.datetime
    unique_key: str = ""
    """"" or the key this task must hold to be inserted (dispatcher/policy/unique.py)."""
    unique_until: dt.datetime | None = None
    """None: the key is held while the task is live; else until this time."""
    trace_id: str = ""
    """The caller's trace id ("" when none), stored for search."""


@dataclasses.dataclass(frozen=True)
class TaskRow:
    task_id: str
    slot: int
    namespace: str
    task_type: str
    priority: int
    status: Status
    trigger_at: dt.datetime
    attempts: int
    epoch: int
    envelope: bytes
    last_error: str | None
    last_stack_trace: str | None
    created_at: dt.datetime
    updated_at: dt.datetime

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):  # read back from the database as text
            object.__setattr__(self, "status", Status(self.status))


@dataclasses.dataclass(slots=True)
class Event:
    task_id: str
    state: TaskState
    at: dt.datetime
    node: str
    attempt: int
    detail: str | None = None
    stack_trace: str | None = None
    """The attempt's stack trace, on the event that ends a failed attempt (retry_wait, failed)."""

    def __post_init__(self) -> None:
        if not isinstance(self.state, TaskState):  # read back from the database as text
            object.__setattr__(self, "state", TaskState(self.state))


@dataclasses.dataclass(slots=True)
class DispatchClaim:
    """A due task the owner wants to hand to an executor as `attempt`."""

    task_id: str
    slot: int
    attempt: int
    source: str            # "kafka" (row must be ENQUEUED) or "mysql" (row must be CLAIMED)
    due_at: dt.datetime


@dataclasses.dataclass(slots=True)
class OutcomeWrite:
    """What one finished attempt does to its row."""

    task_id: str
    slot: int
    attempt: int
    result: str            # SUCCEEDED, DEAD_LETTERED, or RETRY
    events: tuple[Event, ...]
    retry_status: Status | None = None     # PENDING or ENQUEUED when result == RETRY
    retry_at: dt.datetime | None = None
    error: str | None = None
    stack_trace: str | None = None
    notify: bool = False
    """A task of a graph with dependents: this write leaves a note for them (store/graph_notes.py)
    in the same transaction. Set on an end; on a retry only for a task that some task depends on
    with on_failure continue (a failed attempt releases those)."""
    result_json: str | None = None
    """A success's result for its dependents (JSON, checked by outcomes.decide), kept with it."""
    in_graph: bool = False
    """A task of a graph: a retry is not made once its graph was cancelled (store/graphs.py)."""


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatWrite:
    """A running attempt's heartbeat, to record under its slot's epoch."""

    task_id: str
    slot: int
    attempt: int
    epoch: int
    details: str | None
    """JSON text to keep for the next attempt; None keeps the last details."""


@dataclasses.dataclass(frozen=True, slots=True)
class WaitNote:
    """Why a due attempt of a task has not started: the limit it waits at (shown by GetTask)."""

    task_id: str
    slot: int
    attempt: int
    reason: str


NOT_HANDED_OUT = frozenset({PENDING, ENQUEUED, CLAIMED})
"""The statuses of a task not handed out: what a wait note may be about."""


class HeartbeatResult(enum.Enum):
    RECORDED = "recorded"
    """The attempt is the task's running one: its heartbeat and details are stored."""
    CANCELLED = "cancelled"
    """The task was cancelled while the attempt ran: the handler should stop."""
    LOST = "lost"
    """Not the task's running attempt (finished, recovered, another epoch, unknown task)."""


@dataclasses.dataclass(frozen=True)
class InDoubt:
    """An attempt a previous owner handed to an executor and never saw end: the claim of the
    slot put its row back to pending, but its handler may still be running."""

    task_id: str
    namespace: str
    task_type: str
    attempt: int
    dispatched_at: dt.datetime
    envelope: bytes
    """The task as stored (its timeout bounds how long the handler may still run)."""


@dataclasses.dataclass(frozen=True)
class Held:
    """insert_tasks' answer for a task not inserted because another task holds its unique key."""

    holder: str
    """The task id that holds the key (the one the caller gets back)."""
    status: Status
    """The holder's status (for a holder inserted in the same call: its first one)."""
    slot: int
    """The holder's slot."""


def key_holds(held_until: dt.datetime | None, holder_status: Status | None, now: dt.datetime) -> bool:
    """Whether a unique key's holder still holds it at `now`: until held_until when the
    holder declared a TTL, else while the holder exists and is not terminal."""
    if holder_status is None:
        return False  # the holder was never committed (a withdrawn insert): the key is free
    if held_until is not None:
        return held_until > now
    return holder_status not in TERMINAL


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    """An entry of the dead letters (migrations/001, 008): a task that kept failing, grouped
    by its failure (dispatcher/base/failures.py), to inspect and replay. Its envelope and last
    stack trace are read apart (interface_dead_letters.DeadLetterStoreProtocol.get)."""

    task_id: str
    slot: int
    namespace: str
    task_type: str
    attempts: int
    last_error: str | None
    error_class: str | None
    error_shape: str | None
    error_group: str | None
    first_attempt_at: dt.datetime | None
    """When its first attempt was dispatched."""
    dead_lettered_at: dt.datetime

    @property
    def cursor(self) -> tuple[dt.datetime, str]:
        """Where a page of dead letters ends: (dead_lettered_at, task_id)."""
        return self.dead_lettered_at, self.task_id


@dataclasses.dataclass(frozen=True)
class ShardIdentity:
    """Which shard of the task store a database is, in which slot -> shard map
    (dispatcher/store/sharded.py): recorded by the first node that starts on it, and
    checked by every later one."""

    index: int
    count: int
    slot_map: str
    """config.format_slot_shards of the map, e.g. `0-7:0,8-15:1`."""


class ShardMapMismatch(RuntimeError):
    """A node started with another slot -> shard map than the store's shards record."""
