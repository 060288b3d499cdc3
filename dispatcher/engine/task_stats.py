"""Counts per task type and minute, kept in memory by the API and the dispatch loop, written
in batches: the console's overview reads these, never the task table.

Recording is a dict update per batch (the API counts a SubmitBatch once, the dispatch loop
a delivery batch once), so the hot path pays nothing per task that it did not pay before.
Every `flush_interval_s` the node writes its rows of the minutes that changed (REPLACE of
cumulative counts: a write that fails is simply made again next time, never counted twice)
and forgets the minutes before the current one once they are written.
"""
from __future__ import annotations

import asyncio
import bisect
import dataclasses
import datetime as dt
import logging
import threading
from collections.abc import Iterable

from dispatcher.base.clock import Clock, ms_to_datetime
from dispatcher.base.loop_task import LoopWatch, PeriodicJob
from dispatcher.store.interface_stats import BUCKETS, DURATION_BOUNDS_MS, StatsRow, TaskStatsProtocol

log = logging.getLogger(__name__)

@dataclasses.dataclass
class Counts:
    submitted: int = 0
    succeeded: int = 0
    failed: int = 0
    """Attempts that failed (retried or not)."""
    dead_lettered: int = 0
    buckets: list[int] = dataclasses.field(default_factory=lambda: [0] * BUCKETS)

    def add(self, other: Counts) -> None:
        self.submitted += other.submitted
        self.succeeded += other.succeeded
        self.failed += other.failed
        self.dead_lettered += other.dead_lettered
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets)]


Key = tuple[int, str, str]
"""(minute as unix ms, namespace, task_type)."""


def percentile_ms(buckets: list[int], q: float) -> int | None:
    """The upper bound of the bucket holding quantile `q` (None with no observation; the
    last bucket, unbounded, answers its lower bound)."""
    total = sum(buckets)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for i, n in enumerate(buckets):
        seen += n
        if seen >= rank and n:
            return DURATION_BOUNDS_MS[min(i, len(DURATION_BOUNDS_MS) - 1)]
    return DURATION_BOUNDS_MS[-1]


class TaskStats:
    def __init__(self, *, store: TaskStatsProtocol, node: str, clock: Clock, flush_interval_s: float = 5.0,
                 loops: LoopWatch | None = None):
        self._store = store
        self._node = node
        self._clock = clock
        self._lock = threading.Lock()   # recorded on the event loop, flushed on a thread
        self._counts: dict[Key, Counts] = {}
        self._dirty: set[Key] = set()
        # A failed flush keeps its counts for the next one: one WARNING line, no traceback.
        self._loop = PeriodicJob("task-stats", interval_s=flush_interval_s,
                                 step=self._flush_in_thread, watch=loops,
                                 failure_level=logging.WARNING)

    # ---- recording (per batch) ----

    def _minute(self) -> int:
        return self._clock.now_ms() // 60_000 * 60_000

    def submitted(self, by_type: Iterable[tuple[tuple[str, str], int]]) -> None:
        minute = self._minute()
        with self._lock:
            for (namespace, task_type), n in by_type:
                key = (minute, namespace, task_type)
                self._counts.setdefault(key, Counts()).submitted += n
                self._dirty.add(key)

    def executed(self, namespace: str, task_type: str, *, succeeded: int, failed: int, dead_lettered: int,
                 duration_ms: float, runs: int) -> None:
        """One delivery batch's outcomes; its `runs` attempts took `duration_ms` each (one
        call carries the batch, so its outcomes share its time)."""
        key = (self._minute(), namespace, task_type)
        bucket = bisect.bisect_left(DURATION_BOUNDS_MS, duration_ms)
        with self._lock:
            c = self._counts.setdefault(key, Counts())
            c.succeeded += succeeded
            c.failed += failed
            c.dead_lettered += dead_lettered
            c.buckets[bucket] += runs
            self._dirty.add(key)

    # ---- writing ----

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        try:
            await asyncio.to_thread(self.flush)
        except Exception:
            log.warning("task stats: last flush failed; this node's counts of the current minute are lost")

    async def _flush_in_thread(self) -> None:
        await asyncio.to_thread(self.flush)

    def flush(self) -> int:
        """Write the rows that changed; returns how many."""
        current = self._minute()
        with self._lock:
            keys = list(self._dirty)
            rows = [StatsRow(ms_to_datetime(k[0]), k[1], k[2], self._node, c.submitted, c.succeeded, c.failed,
                             c.dead_lettered, tuple(c.buckets))
                    for k in keys for c in (self._counts[k],)]
            self._dirty.clear()
        if not rows:
            self._forget_before(current)
            return 0
        try:
            self._store.write(rows)
        except BaseException:
            with self._lock:
                self._dirty.update(keys)   # written again next time, cumulative
            raise
        self._forget_before(current)
        return len(rows)

    def _forget_before(self, minute: int) -> None:
        """Drop the finished minutes already written (their rows stand for them)."""
        with self._lock:
            for k in [k for k in self._counts if k[0] < minute and k not in self._dirty]:
                del self._counts[k]

    # ---- reading (the console) ----

    def overview(self, *, since: dt.datetime, series_since: dt.datetime, namespace: str = "",
                 task_type: str = "") -> dict:
        """Per type since `since` (today), and per minute since `series_since`, from the rows."""
        per_type: dict[tuple[str, str], Counts] = {}
        per_minute: dict[dt.datetime, Counts] = {}
        for row in self._store.read(since=min(since, series_since), namespace=namespace, task_type=task_type):
            c = Counts(row.submitted, row.succeeded, row.failed, row.dead_lettered, list(row.buckets))
            if row.minute >= since:
                per_type.setdefault((row.namespace, row.task_type), Counts()).add(c)
            if row.minute >= series_since:
                per_minute.setdefault(row.minute, Counts()).add(c)
        types = []
        for (ns, tt), c in sorted(per_type.items()):
            ended = c.succeeded + c.dead_lettered
            types.append({"namespace": ns, "task_type": tt, "submitted": c.submitted, "succeeded": c.succeeded,
                          "failed": c.failed, "dead_lettered": c.dead_lettered,
                          "success_rate": round(c.succeeded / ended, 4) if ended else None,
                          "duration_p50_ms": percentile_ms(c.buckets, 0.5),
                          "duration_p99_ms": percentile_ms(c.buckets, 0.99)})
        series = [{"minute": m, "submitted": c.submitted, "succeeded": c.succeeded, "failed": c.failed,
                   "dead_lettered": c.dead_lettered} for m, c in sorted(per_minute.items())]
        return {"day": {"since": since, "types": types}, "series": series}
