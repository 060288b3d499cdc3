"""The console's per-minute counts: recorded per batch, written cumulative, percentiles by bucket."""
from __future__ import annotations

import datetime as dt
from typing import cast

import pytest

from dispatcher.base.clock import Clock
from dispatcher.engine.task_stats import TaskStats, percentile_ms
from dispatcher.store.interface_stats import DURATION_BOUNDS_MS, StatsRow
from dispatcher.store.memory import MemoryTaskStore
from dispatcher.store.memory_ops import MemoryTaskStats


class FakeClock:
    def __init__(self, ms: int):
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms

    def now(self) -> dt.datetime:
        return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=self.ms)


class FailingStats(MemoryTaskStats):
    """The twin of the stored counts, failing its writes on demand."""

    def __init__(self):
        tasks = MemoryTaskStore()
        tasks.start()
        super().__init__(tasks)
        self.fail = False

    def write(self, rows):
        if self.fail:
            raise RuntimeError("store down")
        super().write(rows)

    def row(self, minute: dt.datetime, namespace: str, task_type: str, node: str) -> StatsRow:
        [row] = [row for row in self.read(since=minute, namespace=namespace, task_type=task_type)
                 if (row.minute, row.node) == (minute, node)]
        return row


@pytest.fixture
def stats():
    store = FailingStats()
    clock = FakeClock(60_000 * 1000 + 5)
    return TaskStats(store=store, node="n1", clock=cast(Clock, clock)), store, clock


def test_a_flush_writes_cumulative_counts_and_forgets_finished_minutes(stats):
    s, store, clock = stats
    s.submitted([(("shop", "charge"), 5)])
    s.executed("shop", "charge", succeeded=3, failed=1, dead_lettered=1, duration_ms=30, runs=4)
    assert s.flush() == 1
    minute = dt.datetime(1970, 1, 1) + dt.timedelta(minutes=1000)
    row = store.row(minute, "shop", "charge", "n1")
    assert (row.submitted, row.succeeded, row.failed, row.dead_lettered) == (5, 3, 1, 1)
    assert sum(row.buckets) == 4 and row.buckets[DURATION_BOUNDS_MS.index(50)] == 4
    s.submitted([(("shop", "charge"), 2)])
    store.fail = True
    with pytest.raises(RuntimeError):
        s.flush()
    store.fail = False
    assert s.flush() == 1   # written again after the failure, cumulative: never counted twice
    assert store.row(minute, "shop", "charge", "n1").submitted == 7
    clock.ms += 60_000
    assert s.flush() == 0 and not s._counts   # the finished minute was written: forgotten


def test_percentiles_are_bucket_bounds():
    buckets = [0] * (len(DURATION_BOUNDS_MS) + 1)
    assert percentile_ms(buckets, 0.5) is None
    buckets[DURATION_BOUNDS_MS.index(10)] = 98
    buckets[DURATION_BOUNDS_MS.index(1000)] = 2
    assert percentile_ms(buckets, 0.5) == 10 and percentile_ms(buckets, 0.99) == 1000
    buckets[-1] = 100
    assert percentile_ms(buckets, 0.99) == DURATION_BOUNDS_MS[-1]
