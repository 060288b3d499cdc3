"""What a handler is told about the task it runs.

A `TaskContext` is built once per delivery from the wire message and handed to
the handler as its only argument. It carries ``(task_id, attempt, epoch)`` so a
handler can make its effects idempotent: at-least-once delivery means the same
attempt can arrive twice (e.g. after a dispatcher handoff), and the epoch tells
a stale dispatcher's delivery from the current owner's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class TaskContext:
    """One attempt of one task, as seen by its handler."""

    task_id: str
    namespace: str
    task_type: str
    payload: dict[str, Any]
    """The submitted JSON object, decoded. Mutating it changes nothing upstream."""
    attempt: int
    """1 for the first run, 2 for the first retry, ..."""
    epoch: int
    """Ownership epoch of the task's slot at dispatch (the fencing token)."""
    trace_id: str
    deadline: float
    """When this attempt times out, on the `time.monotonic()` clock.

    Counted from when the executor received the delivery, so time spent waiting
    for a free slot (max_in_flight) is part of the attempt's budget.
    """
    payload_version: int
    created_at: datetime | None
    """When the task was accepted (UTC), as recorded by the server."""

    def remaining_s(self) -> float:
        """Seconds left before the deadline (negative once passed).

        Pass it on as the timeout of the calls the handler makes, so they give up
        before the attempt is declared TIMED_OUT.
        """
        return self.deadline - time.monotonic()
