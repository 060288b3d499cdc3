"""What the engine holds right now: the figures admission control (api/admission.py) reads."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class Backlog:
    """What a new task of one priority class would wait behind: the tasks of its own class
    and of the classes above it (the floors of lower classes aside, dispatch takes those first)."""

    held: int                 # tasks in the heaps, the ready stage and the overflow
    oldest_due_wait_ms: int   # how long the oldest due task has waited; 0 when none is due
    unread: int               # messages of owned partitions of these classes' topics not read yet


@dataclasses.dataclass(frozen=True)
class Load:
    """What the engine holds right now (Engine.load)."""

    capacity: int                   # the heap's capacity
    dispatched_total: int           # attempts dispatched since start (for the drain rate)
    ahead: Mapping[int, Backlog]    # per priority class (pb.Priority): what a new task of it waits behind
    shares: Mapping[int, float]     # per class: the share of the capacity its intake may fill
