"""One attempt of a task waiting in the node's heap, and the two paths it can come by."""
from __future__ import annotations

import dataclasses

from taskring.wire import pb

KAFKA, MYSQL = "kafka", "mysql"
"""Where a Due came from: a Kafka message of an owned partition, or a row the poller claimed."""


@dataclasses.dataclass(slots=True)
class Due:
    """One attempt of a task waiting in the heap."""

    task: pb.Task
    slot: int
    attempt: int
    due_ms: int
    source: str
    epoch: int
    topic: str | None = None
    offset: int = -1
    dispatched_ms: int = 0
