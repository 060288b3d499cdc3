"""The contract of the per-minute task counts the console's overview reads, kept by
TaskStatsStore (task_stats.py, on shard 0) and its twin MemoryTaskStats (memory_ops.py);
tests/conformance/stats.py checks both.

Each node keeps its counts of the current minute in memory and writes its own rows every
few seconds (engine/task_stats.py): a row is cumulative for its (minute, namespace, task type,
node), so a write replaces the row it names, and a write that failed is simply made again.
Every method may raise dispatcher.base.errors.Unavailable (nothing written). Minutes are
naive UTC datetimes at a whole minute.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Protocol

DURATION_BOUNDS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)
"""Upper bounds of the duration buckets; one more bucket holds everything longer."""
BUCKETS = len(DURATION_BOUNDS_MS) + 1


@dataclasses.dataclass(frozen=True)
class StatsRow:
    minute: dt.datetime
    namespace: str
    task_type: str
    node: str
    """The node that counted (each writes its own rows: no two nodes write one row)."""
    submitted: int = 0
    succeeded: int = 0
    failed: int = 0
    """Attempts that failed (retried or not)."""
    dead_lettered: int = 0
    buckets: tuple[int, ...] = (0,) * BUCKETS
    """Attempts per execution-duration bucket."""

    def __post_init__(self) -> None:
        if len(self.buckets) != BUCKETS:
            raise ValueError(f"StatsRow.buckets: {BUCKETS} counts, got {len(self.buckets)}")


class TaskStatsProtocol(Protocol):
    """What the node's counters and the console's overview need from the stored counts."""

    def write(self, rows: Sequence[StatsRow]) -> None:
        """Each row replaces the stored row of its (minute, namespace, task_type, node), or
        is added; all or nothing."""

    def read(self, *, since: dt.datetime, namespace: str = "", task_type: str = "") -> list[StatsRow]:
        """The rows of minutes at or after `since` equal to every condition given ("" matches
        all), every node's; in no particular order. A row stored without buckets reads with
        zeros."""
