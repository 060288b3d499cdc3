"""What the engine holds right now: the figures admission control (api/admission.py) reads."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Load:
    """What the engine holds right now (Engine.load)."""

    held: int                 # tasks in the heap and its overflow
    capacity: int             # the heap's capacity
    oldest_due_wait_ms: int   # how long the oldest due task has waited; 0 when none is due
    unread: int               # messages of owned partitions not read yet
    dispatched_total: int     # attempts dispatched since start (for the drain rate)
